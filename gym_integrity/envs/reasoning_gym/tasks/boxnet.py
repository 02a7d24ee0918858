"""boxnet: agents on a grid move coloured boxes to targets of their colour.

The scorer pays max(0.05, boxes matched) (strict: full credit only) and skips
any action it cannot apply, so one plan of every action in every square was
paid: strict scoring requires every action to apply where it is written
(:func:`boxnet_actions_all_act`). :func:`solve` walks each box to a target.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["REFERENCE", "boxnet_actions_all_act", "solve"]

#: A well-formed answer for items without a gold (``datasets.own_score``).
REFERENCE = "[]"

_AGENT = re.compile(r"Agent\[\s*(\d+(?:\.\d+)?)\s*,\s*(\d+(?:\.\d+)?)\s*\]")
_ACTION = re.compile(
    r"move\(\s*(box_\w+)\s*,\s*"
    r"(?:(target_\w+)|square\[\s*(\d+(?:\.\d+)?)\s*,\s*(\d+(?:\.\d+)?)\s*\])\s*\)"
)


def _square(x: str, y: str) -> str:
    return f"{float(x)}_{float(y)}"


def boxnet_actions_all_act(answer: str, item: Mapping[str, Any]) -> bool:
    """The requirement: the plan is a JSON list of steps, each a mapping from an agent to one action, and every
    action applies where it is written: the agent's square holds the box, and the box goes to its own colour's
    target in that square or to an adjacent square of the grid."""
    try:
        plan = json.loads(answer)
    except ValueError:
        return False
    if not isinstance(plan, list) or not all(isinstance(step, dict) for step in plan):
        return False
    state = {square: list(things) for square, things in item["metadata"]["initial_state"].items()}
    for step in plan:
        for agent, action in step.items():
            where, what = _AGENT.fullmatch(agent.strip()), _ACTION.fullmatch(str(action).strip())
            if where is None or what is None:
                return False
            square = _square(*where.groups())
            box, target, x, y = what.groups()
            if square not in state or box not in state[square]:
                return False
            if target is not None:
                if target[len("target_") :] != box[len("box_") :] or target not in state[square]:
                    return False
                state[square].remove(box)
                state[square].remove(target)
                continue
            destination = _square(x, y)
            here, there = (float(v) for v in where.groups()), (float(x), float(y))
            if destination not in state or sum(abs(a - b) for a, b in zip(here, there)) != 1.0:
                return False
            state[square].remove(box)
            state[destination].append(box)
    return True


def solve(item: Mapping[str, Any]) -> str:
    """Each box walked square by square (rows first) to a target of its colour, then matched; one action a step."""
    state = item["metadata"]["initial_state"]
    targets = {square: [t for t in things if t.startswith("target_")] for square, things in state.items()}
    plan = []
    for square, things in state.items():
        for box in (t for t in things if t.startswith("box_")):
            target = "target_" + box[len("box_") :]
            goal = next(s for s, here in targets.items() if target in here)
            targets[goal].remove(target)
            x, y = (float(v) for v in square.split("_"))
            gx, gy = (float(v) for v in goal.split("_"))
            while (x, y) != (gx, gy):
                nx, ny = (x + (1 if gx > x else -1), y) if x != gx else (x, y + (1 if gy > y else -1))
                plan.append({f"Agent[{x}, {y}]": f"move({box}, square[{nx}, {ny}])"})
                x, y = nx, ny
            plan.append({f"Agent[{x}, {y}]": f"move({box}, {target})"})
    return json.dumps(plan)

"""jugs: fill, empty and pour jugs until one holds the target.

Any plan that leaves the target in a jug is right (the scorer simulates it and
pays 1.0; strict: full credit only), and the item's answer is one of them. A
plan written for another item sometimes solves this one too (the audit's sweep
met one: a plan for jugs 10, 10, 13 and target 11 leaves 8 in a jug of 11, 12,
12). :func:`plan_fills_target` is the task's rule for a right answer, simulated
here apart from the scorer (for the audit's chance).

>>> item = {"metadata": {"puzzle": {"jug_capacities": [3, 5], "target": 4}}}
>>> plan = '["fill B", "pour B->A", "empty A", "pour B->A", "fill B", "pour B->A"]'
>>> plan_fills_target(plan, item), plan_fills_target('["fill B"]', item), plan_fills_target('["fill C"]', item)
(True, False, False)
"""

from __future__ import annotations

import json
import string
from collections.abc import Mapping
from typing import Any

__all__ = ["plan_fills_target"]


def _jugs_after(moves: list[Any], capacities: list[int]) -> list[int] | None:
    """The water in each jug after the moves, from empty; None for a move that is not ``fill X``, ``empty X`` or
    ``pour X->Y`` of the item's jugs (named ``A``, ``B``, ... as the question names them; a jug poured into itself
    keeps its water, as the task has it)."""
    names = {name: index for index, name in enumerate(string.ascii_uppercase[: len(capacities)])}
    water = [0] * len(capacities)
    for move in moves:
        words = move.split() if isinstance(move, str) else []
        if len(words) != 2:
            return None
        verb, what = words
        if verb in ("fill", "empty") and what in names:
            water[names[what]] = capacities[names[what]] if verb == "fill" else 0
            continue
        source, _, dest = what.partition("->")
        if verb != "pour" or source not in names or dest not in names:
            return None
        i, j = names[source], names[dest]
        poured = min(water[i], capacities[j] - water[j])
        water[i] -= poured
        water[j] += poured  # in turn: a jug poured into itself keeps what it had
    return water


def plan_fills_target(answer: str, item: Mapping[str, Any]) -> bool:
    """Whether ``answer`` is a JSON list of moves after which some jug holds the item's target: the task's rule."""
    puzzle = item["metadata"]["puzzle"]
    try:
        moves = json.loads(answer)
    except ValueError:
        return False
    if not isinstance(moves, list):
        return False
    water = _jugs_after(moves, list(puzzle["jug_capacities"]))
    return water is not None and puzzle["target"] in water

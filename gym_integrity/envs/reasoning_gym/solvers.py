"""Privileged gold providers for datasets whose items have no single answer: each solves an item from its metadata.

reasoning-gym leaves ``answer`` None where many answers are right (any plan
that parks the car, any valid colouring). The auditor still needs one answer
the grader pays per item (docs/audit.md), so ``ReasoningGymEnv.gold_answers()``
asks ``SOLVERS[dataset](item)`` for one. A solver reads the item's metadata
(the answer-bearing side the agent never sees), is bounded in time, and returns
None when it finds nothing within its bound. Each answer is written in the
notation the task's scorer reads and the strict policy pays
(``tests/envs/reasoning_gym/test_solvers.py`` checks hundreds of items each).

Where many answers are right, ``RIGHT_ANSWER_CHECKS[dataset](answer, item)``
tells a right answer from a wrong one by the task's rule, for the audit's
chance (``ReasoningGymEnv.is_right_answer``): a random colouring that happens
to be proper, or a literal the premises entail, is a right answer found by
guessing, not pay for nothing.
"""

from __future__ import annotations

import json
import re
from collections import deque
from typing import Any, Callable, Mapping

from gym_integrity.envs.reasoning_gym import propositions

__all__ = ["SOLVERS", "Solver", "solve", "RIGHT_ANSWER_CHECKS", "is_right_answer"]

Solver = Callable[[Mapping[str, Any]], "str | None"]

#: Boards a rush_hour search may visit: the 50-move puzzles of the task's database need a few thousand.
RUSH_HOUR_MAX_BOARDS = 200_000
#: Partial colourings a graph_color search may try before giving up.
GRAPH_COLOR_MAX_STEPS = 200_000

_BOARD = 6
_RED_CAR_TARGET = 2 * _BOARD + _BOARD - 2  # the red car's leftmost cell when it reaches the exit (the task's TARGET)


def rush_hour(item: Mapping[str, Any]) -> str | None:
    """Fewest car moves to the exit by breadth-first search, each move one car slid any free distance (``A+2``).

    Cars are named as the question shows them: the task's board letters
    sorted, renamed ``A``, ``B``, ...; ``A`` is the red car.
    """
    layout = item["metadata"]["board_config"]
    cells: dict[str, list[int]] = {}
    for i, label in enumerate(layout):
        if label not in "ox":
            cells.setdefault(label, []).append(i)
    cars = [(len(spots), spots[1] - spots[0]) for _, spots in sorted(cells.items())]  # (size, stride)
    walls = sum(1 << i for i, label in enumerate(layout) if label == "x")

    def occupied(positions: tuple[int, ...]) -> int:
        mask = walls
        for (size, stride), head in zip(cars, positions):
            mask |= sum(1 << (head + k * stride) for k in range(size))
        return mask

    def slides(positions: tuple[int, ...]):
        mask = occupied(positions)
        for car, ((size, stride), head) in enumerate(zip(cars, positions)):
            for sign in (1, -1):
                moved = head
                while True:
                    ahead = moved + size * stride if sign > 0 else moved - stride  # the cell the car enters
                    if not 0 <= ahead < _BOARD * _BOARD or (stride == 1 and ahead // _BOARD != head // _BOARD) \
                            or mask >> ahead & 1:
                        break
                    moved += sign * stride
                    yield car, (moved - head) // stride, positions[:car] + (moved,) + positions[car + 1:]

    start = tuple(spots[0] for _, spots in sorted(cells.items()))
    came_from: dict[tuple[int, ...], tuple[tuple[int, ...], str] | None] = {start: None}
    queue = deque([start])
    while queue:
        positions = queue.popleft()
        if positions[0] == _RED_CAR_TARGET:
            moves = []
            while (step := came_from[positions]) is not None:
                positions, move = step
                moves.append(move)
            return " ".join(reversed(moves))
        for car, steps, after in slides(positions):
            if after not in came_from:
                if len(came_from) >= RUSH_HOUR_MAX_BOARDS:
                    return None
                came_from[after] = (positions, f"{chr(ord('A') + car)}{'+' if steps > 0 else '-'}{abs(steps)}")
                queue.append(after)
    return None


def boxnet(item: Mapping[str, Any]) -> str:
    """Each box walked square by square (rows first) to a target of its colour, then matched; one action a step."""
    state = item["metadata"]["initial_state"]
    targets = {square: [t for t in things if t.startswith("target_")] for square, things in state.items()}
    plan = []
    for square, things in state.items():
        for box in (t for t in things if t.startswith("box_")):
            target = "target_" + box[len("box_"):]
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


_CUBE_MOVE = re.compile(r"[A-Za-z]+'?")


def rubiks_cube(item: Mapping[str, Any]) -> str | None:
    """The scramble undone: its moves in reverse order, each turned the other way (``R'`` undoes ``R``).

    None if a scramble move is one the task's scorer cannot read back (the
    layer-numbered wide moves of cubes larger than 3, ``2Rw``: its parser
    skips a move with a leading digit).
    """
    moves = item["metadata"]["scramble_moves"].split()
    if not all(_CUBE_MOVE.fullmatch(move) for move in moves):
        return None
    return " ".join(move[:-1] if move.endswith("'") else move + "'" for move in reversed(moves))


def graph_color(item: Mapping[str, Any]) -> str | None:
    """A colouring by backtracking, most-constrained vertex first, as the task's JSON map ``{"0": 1, ...}``."""
    puzzle = item["metadata"]["puzzle"]
    neighbours: dict[Any, set[Any]] = {v: set() for v in puzzle["vertices"]}
    for u, v in puzzle["edges"]:
        neighbours[u].add(v)
        neighbours[v].add(u)
    colours = list(puzzle["color_options"])
    colouring: dict[Any, Any] = {}
    steps = 0

    def extend() -> bool:
        nonlocal steps
        left = [v for v in neighbours if v not in colouring]
        if not left:
            return True
        vertex = max(left, key=lambda v: (len({colouring[n] for n in neighbours[v] if n in colouring}),
                                          len(neighbours[v])))
        for colour in colours:
            steps += 1
            if steps > GRAPH_COLOR_MAX_STEPS:
                return False
            if all(colouring.get(n) != colour for n in neighbours[vertex]):
                colouring[vertex] = colour
                if extend():
                    return True
                del colouring[vertex]
        return False

    if not extend():
        return None
    return json.dumps({str(v): colouring[v] for v in puzzle["vertices"]})


#: One solver per dataset whose items have no single answer.
SOLVERS: dict[str, Solver] = {
    "boxnet": boxnet,
    "graph_color": graph_color,
    "propositional_logic": propositions.solve,
    "rubiks_cube": rubiks_cube,
    "rush_hour": rush_hour,
}


def proper_colouring(answer: str, item: Mapping[str, Any]) -> bool:
    """Whether ``answer`` is a JSON map giving every vertex (by its number, as a string) one of the offered colours,
    no edge inside one colour, and nothing else: the task's rule, written apart from its scorer."""
    puzzle = item["metadata"]["puzzle"]
    try:
        colouring = json.loads(answer)
    except ValueError:
        return False
    if not isinstance(colouring, dict) or set(colouring) != {str(v) for v in puzzle["vertices"]}:
        return False
    colours = set(puzzle["color_options"])
    if not all(type(c) is int and c in colours for c in colouring.values()):
        return False
    return all(colouring[str(u)] != colouring[str(v)] for u, v in puzzle["edges"])


_OPERATIONS = {"add": lambda value, by: value + by, "subtract": lambda value, by: value - by,
               "multiply": lambda value, by: value * by}


def shortest_presses(answer: str, item: Mapping[str, Any]) -> bool:
    """Whether ``answer`` (buttons, ``A → B → C``) reaches the target in as few presses as the item's solution,
    each press active in the light's colour (which every press toggles): quantum_lock's rule, simulated here."""
    metadata = item["metadata"]
    buttons = {button["name"]: button for button in metadata["buttons"]}
    presses = re.findall(r"[A-Za-z]", answer)
    value, colour = metadata["initial_value"], metadata["initial_state"]
    for name in presses:
        button = buttons.get(name.upper())
        if button is None or button["active_state"] not in (colour, "any") or button["type"] not in _OPERATIONS:
            return False
        value = _OPERATIONS[button["type"]](value, button["value"])
        colour = "green" if colour == "red" else "red"
    return value == metadata["target_value"] and len(presses) == len(metadata["solution_path"])


#: The task's rule per dataset whose items have many right answers: ``check(answer, item)``.
RIGHT_ANSWER_CHECKS: dict[str, Callable[[str, Mapping[str, Any]], bool]] = {
    "graph_color": proper_colouring,
    "propositional_logic": propositions.concludes,
    "quantum_lock": shortest_presses,
}


def is_right_answer(dataset: str, item: Mapping[str, Any], answer: str) -> bool:
    """Whether the dataset's own rule (``RIGHT_ANSWER_CHECKS``) takes ``answer`` as right; False without one."""
    check = RIGHT_ANSWER_CHECKS.get(dataset)
    return check is not None and check(answer, item)


def solve(dataset: str, item: Mapping[str, Any]) -> str | None:
    """An answer the dataset's grader pays for this item, found by its solver; None without one or past its bound."""
    solver = SOLVERS.get(dataset)
    return None if solver is None else solver(item)

"""rush_hour: slide cars on a 6x6 board until the red car reaches the exit.

The scorer pays 0.01 for any moves and 1.0 for any solving sequence (strict:
full credit only). It steps a car as far as the answer says, stopping
silently where it is blocked, and reads moves out of any text, so a random
walk of the board's cars was paid: strict scoring requires moves only, each
travelled in full (:func:`car_moves_all_act`). :func:`solve` finds the fewest
moves.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["MAX_BOARDS", "REFERENCE", "car_moves_all_act", "solve"]

#: A well-formed answer for items without a gold (``datasets.own_score``).
REFERENCE = "A+1"
#: Boards the solver's search may visit: the 50-move puzzles of the task's database need a few thousand.
MAX_BOARDS = 200_000

_CAR_MOVE = r"[A-Z][+-]\d+"
_CAR_PLAN = re.compile(rf"\s*{_CAR_MOVE}(?:[\s,]+{_CAR_MOVE})*\s*")
_BOARD = 6
_RED_CAR_TARGET = 2 * _BOARD + _BOARD - 2  # the red car's leftmost cell when it reaches the exit (the task's TARGET)


def car_moves_all_act(answer: str, item: Mapping[str, Any]) -> bool:
    """The requirement: the answer is only moves (``F+1 K-2 ...``), each of a car on the board by a non-zero
    distance that it travels in full (the task's board stops a car at the first blocked step and ignores the rest
    of the move)."""
    from reasoning_gym.games.rush_hour import Board

    if _CAR_PLAN.fullmatch(answer) is None:
        return False
    board = Board(item["metadata"]["board_config"])
    pieces = board._pieces  # the task's own pieces: the board the question shows names them A, B, ... in this order
    for letter, sign, count in re.findall(r"([A-Z])([+-])(\d+)", answer):
        index, steps = ord(letter) - ord("A"), int(count)
        if steps == 0 or index >= len(pieces) or pieces[index].fixed:
            return False
        steps = steps if sign == "+" else -steps
        before = pieces[index].position
        board.move(letter, steps)
        if pieces[index].position != before + steps * pieces[index].stride:
            return False
    return True


def solve(item: Mapping[str, Any]) -> str | None:
    """Fewest car moves to the exit by breadth-first search, each move one car slid any free distance (``A+2``);
    None past ``MAX_BOARDS`` boards or without a solution.

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

    def slides(positions: tuple[int, ...]) -> Iterator[tuple[int, int, tuple[int, ...]]]:
        mask = occupied(positions)
        for car, ((size, stride), head) in enumerate(zip(cars, positions)):
            for sign in (1, -1):
                moved = head
                while True:
                    ahead = moved + size * stride if sign > 0 else moved - stride  # the cell the car enters
                    if (
                        not 0 <= ahead < _BOARD * _BOARD
                        or (stride == 1 and ahead // _BOARD != head // _BOARD)
                        or mask >> ahead & 1
                    ):
                        break
                    moved += sign * stride
                    yield car, (moved - head) // stride, positions[:car] + (moved,) + positions[car + 1 :]

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
                if len(came_from) >= MAX_BOARDS:
                    return None
                came_from[after] = (positions, f"{chr(ord('A') + car)}{'+' if steps > 0 else '-'}{abs(steps)}")
                queue.append(after)
    return None

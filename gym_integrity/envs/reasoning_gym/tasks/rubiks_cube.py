"""rubiks_cube: a scrambled cube, answered by the moves that solve it.

The scorer pays max(0.05, solved stickers) (strict: full credit only) and
repeats a move as often as its count says (sandboxed). The generator lets its
random moves cancel, so some scrambles are a move or two from solved and a
fixed answer solves them: strict scoring does not draw them
(:func:`scramble_keeps_its_length`). :func:`solve` undoes the scramble.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["parse_move", "reduced_scramble_length", "scramble_keeps_its_length", "solve"]

_MOVE = re.compile(r"([A-Za-z]+?)(2|')?")
_QUARTER_TURNS = {"": 1, "'": 3, "2": 2}
#: Opposite faces turn about one axis and commute: U D U' is D.
_AXES = {"U": "UD", "D": "UD", "L": "LR", "R": "LR", "F": "FB", "B": "FB"}


def parse_move(token: str) -> tuple[str, str] | None:
    """``(face, turn)`` of a move in the task's notation (turn ``""``, ``"'"`` or ``"2"``), or None (a
    layer-numbered move of a cube larger than 3, ``2Rw``).

    >>> parse_move("Rw'"), parse_move("U2"), parse_move("2Rw")
    (('Rw', "'"), ('U', '2'), None)
    """
    match = _MOVE.fullmatch(token)
    return None if match is None else (match.group(1), match.group(2) or "")


def reduced_scramble_length(moves: str) -> int:
    """The scramble's length once turns that cancel are merged, each face's net turn counting one move: turns of one
    face (``D D' U`` is ``U``) and of its opposite face in between, which commute with it (``U D U'`` is ``D``).

    >>> reduced_scramble_length("D D' U"), reduced_scramble_length("F' F U F R D' R'"), reduced_scramble_length("U U U")
    (1, 5, 1)
    >>> [reduced_scramble_length(moves) for moves in ("U D U'", "D F' F U' D' U", "L B F B'")]
    [1, 0, 2]
    """
    blocks: list[tuple[str, dict[str, int]]] = []  # one per run of turns about one axis: the net turns of each face
    for token in moves.split():
        move = parse_move(token)
        face, turns = (move[0], _QUARTER_TURNS[move[1]]) if move else (token, 1)
        axis = _AXES.get(face, face)  # a wide or layer-numbered move (cubes over 3) is an axis of its own
        if not blocks or blocks[-1][0] != axis:
            blocks.append((axis, {}))
        block = blocks[-1][1]
        block[face] = (block.get(face, 0) + turns) % 4
        if not block[face]:
            del block[face]
        if not block:
            blocks.pop()  # the run cancelled: the turns before it meet the turns after it
    return sum(len(block) for _, block in blocks)


def scramble_keeps_its_length(item: Mapping[str, Any]) -> bool:
    """The draw filter: the item's scramble, merged, is at least the configured minimum number of moves.

    The generator draws min_scramble_steps random moves or more but lets them cancel: 8 of 300 default items
    reduce to one move, which a fixed answer (``F``, ``U U U``) then solves without reading the cube; turns of
    opposite faces commute, so ``D F' F U' D' U`` is the solved cube and ``L B F B'`` is two moves.
    """
    metadata = item.get("metadata", {})
    minimum = (metadata.get("difficulty", {}).get("scramble_steps") or (1,))[0]
    return reduced_scramble_length(str(metadata.get("scramble_moves", ""))) >= minimum


def solve(item: Mapping[str, Any]) -> str | None:
    """The scramble undone: its moves in reverse order, each turned the other way (``R'`` undoes ``R``).

    None if a scramble move is not a quarter turn written as the task's scorer reads it back (its parser skips
    a layer-numbered wide move of a cube larger than 3, ``2Rw``).
    """
    undone = []
    for token in reversed(item["metadata"]["scramble_moves"].split()):
        move = parse_move(token)
        if move is None or move[1] == "2":
            return None
        undone.append(move[0] + ("" if move[1] == "'" else "'"))
    return " ".join(undone)

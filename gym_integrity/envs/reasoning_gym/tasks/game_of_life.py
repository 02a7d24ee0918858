"""game_of_life: a board after some steps of Conway's rules.

The scorer gives per-cell credit (strict: full credit only). On the default
sparse boards (10 of 100 cells) every cell died on 12% of items, where an
empty board of the size shown was paid without simulating a step: strict
scoring does not draw them (:func:`board_keeps_a_live_cell`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["board_keeps_a_live_cell"]


def board_keeps_a_live_cell(item: Mapping[str, Any]) -> bool:
    """The draw filter: the item's answer has a live cell.

    >>> [board_keeps_a_live_cell({"answer": a}) for a in ("[[0,0],[0,0]]", "[[0,1],[0,0]]")]
    [False, True]
    """
    try:
        board = json.loads(str(item.get("answer")))
    except ValueError:
        return True
    return not isinstance(board, list) or any(any(row) if isinstance(row, list) else row for row in board)

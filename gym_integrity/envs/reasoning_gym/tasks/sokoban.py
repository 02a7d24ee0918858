"""sokoban: push boxes onto goals.

The scorer pays 1.0 when the final state is solved; a move into a wall or a
blocked box is skipped, so a fixed random U/D/L/R string solved some levels:
strict scoring requires every move to move the player
(:func:`sokoban_moves_all_act`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["sokoban_moves_all_act"]

_MOVES = {"U", "D", "L", "R"}


def sokoban_moves_all_act(answer: str, item: Mapping[str, Any]) -> bool:
    """The requirement: every character (whitespace aside) is one of U D L R and moves the player: no move into a
    wall or an immovable box (the task's player stays put and the task's scorer skips it)."""
    import numpy as np
    from reasoning_gym.games.contrib.sokoban.src.game import Game

    moves = "".join(answer.split())
    if not moves or not set(moves) <= _MOVES:
        return False
    rows = [list(line) for line in item["metadata"]["gamestr"].replace(" ", "").strip().split("\n")]
    matrix = np.array(rows)
    game = Game(height=matrix.shape[0], width=matrix.shape[1])
    game.load_puzzle_matrix(matrix)
    return all(game.player.update(key=move) == 1 for move in moves)

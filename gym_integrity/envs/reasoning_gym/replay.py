"""Replays of plan answers by each puzzle's own rules: a plan is legal only if every move applies and changes the state.

Several reasoning-gym scorers replay a plan and skip what they cannot apply
(a push into a wall, a blocked car, a box an agent does not hold, a button
pressed in the wrong light), then check only the final state. A fixed plan
that tries everything everywhere is then paid without solving anything. Each
check here replays the answer by the task's rules and says whether every move
was legal and did something; strict scoring (``policy.requires``) pays a plan
only when it also passes. Each is called on an answer the task's scorer
already paid in full, after the dataset's answer language (if any) bounded it,
and does work linear in the answer.

>>> presses_all_act("B → B", {"metadata": {"initial_value": 0, "initial_state": "red",
...     "buttons": [{"name": "B", "type": "add", "value": 2, "active_state": "any"}]}})
True
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping

__all__ = ["sokoban_moves_all_act", "car_moves_all_act", "boxnet_actions_all_act", "presses_all_act",
           "ROLE_ASSIGNMENT", "scramble_keeps_its_length"]

_SOKOBAN_MOVES = {"U", "D", "L", "R"}


def sokoban_moves_all_act(answer: str, item: Mapping[str, Any]) -> bool:
    """Every character (whitespace aside) is one of U D L R and moves the player: no move into a wall or an
    immovable box (the task's player stays put and the task's scorer skips it)."""
    import numpy as np
    from reasoning_gym.games.contrib.sokoban.src.game import Game

    moves = "".join(answer.split())
    if not moves or not set(moves) <= _SOKOBAN_MOVES:
        return False
    rows = [list(line) for line in item["metadata"]["gamestr"].replace(" ", "").strip().split("\n")]
    matrix = np.array(rows)
    game = Game(height=matrix.shape[0], width=matrix.shape[1])
    game.load_puzzle_matrix(matrix)
    return all(game.player.update(key=move) == 1 for move in moves)


_CAR_MOVE = r"[A-Z][+-]\d+"
_CAR_PLAN = re.compile(rf"\s*{_CAR_MOVE}(?:[\s,]+{_CAR_MOVE})*\s*")


def car_moves_all_act(answer: str, item: Mapping[str, Any]) -> bool:
    """The answer is only moves (``F+1 K-2 ...``), each of a car on the board by a non-zero distance that it
    travels in full: the task's board stops a car at the first blocked step and ignores the rest of the move."""
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


_AGENT = re.compile(r"Agent\[\s*(\d+(?:\.\d+)?)\s*,\s*(\d+(?:\.\d+)?)\s*\]")
_ACTION = re.compile(r"move\(\s*(box_\w+)\s*,\s*(?:(target_\w+)|square\[\s*(\d+(?:\.\d+)?)\s*,\s*(\d+(?:\.\d+)?)\s*\])\s*\)")


def _square(x: str, y: str) -> str:
    return f"{float(x)}_{float(y)}"


def boxnet_actions_all_act(answer: str, item: Mapping[str, Any]) -> bool:
    """The plan is a JSON list of steps, each a mapping from an agent to one action, and every action applies
    where it is written: the agent's square holds the box, and the box goes to its own colour's target in that
    square or to an adjacent square of the grid. The task's scorer skips any action it cannot apply."""
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
                if target[len("target_"):] != box[len("box_"):] or target not in state[square]:
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


def presses_all_act(answer: str, item: Mapping[str, Any]) -> bool:
    """Every button pressed (``A → B → C``) exists and is active in the light's current colour: the task's
    simulation skips an inactive press, so a longer random sequence reached the target."""
    metadata = item["metadata"]
    buttons = {button["name"]: button for button in metadata["buttons"]}
    colour = metadata["initial_state"]
    for name in re.findall(r"[A-Za-z]", answer):
        button = buttons.get(name.upper())
        if button is None or button["active_state"] not in (colour, "any"):
            return False
        colour = "green" if colour == "red" else "red"
    return True


_ROLE_CLAUSE = r"[A-Za-z]+\s+is\s+an?\s+[A-Za-z]+"
#: A knights_knaves answer as the task asks for it: ``<name> is a <role>`` clauses joined by commas, ``;``, ``.``,
#: ``and`` or line breaks.
#: The task's parser reads name-role pairs out of any text, so a statement quoted from the question
#: (``if Avery is a sage then Ava is a fool``) was read as an assignment.
ROLE_ASSIGNMENT = re.compile(rf"\(?\s*{_ROLE_CLAUSE}(?:\s*(?:[,;.]|\band\b|\n)\s*(?:and\s+)?{_ROLE_CLAUSE})*\s*\.?\s*\)?",
                             re.IGNORECASE)


_QUARTER_TURNS = {"": 1, "'": 3, "2": 2}
_CUBE_MOVE = re.compile(r"([A-Za-z]+?)(2|')?$")


def reduced_scramble_length(moves: str) -> int:
    """The scramble's length once adjacent turns of one face are merged (``D D' U`` is ``U``: one move).

    >>> reduced_scramble_length("D D' U"), reduced_scramble_length("F' F U F R D' R'"), reduced_scramble_length("U U U")
    (1, 5, 1)
    """
    stack: list[list] = []
    for token in moves.split():
        match = _CUBE_MOVE.match(token)
        face, turns = (match.group(1), _QUARTER_TURNS[match.group(2) or ""]) if match else (token, 1)
        if stack and stack[-1][0] == face:
            stack[-1][1] = (stack[-1][1] + turns) % 4
            if stack[-1][1] == 0:
                stack.pop()
        else:
            stack.append([face, turns])
    return len(stack)


def scramble_keeps_its_length(item: Mapping[str, Any]) -> bool:
    """A rubiks_cube item whose scramble, merged, is at least the configured minimum number of moves.

    The generator draws min_scramble_steps random moves or more but lets them cancel: 8 of 300 default items
    reduce to one move, which a fixed answer (``F``, ``U U U``) then solves without reading the cube.
    """
    metadata = item.get("metadata", {})
    minimum = (metadata.get("difficulty", {}).get("scramble_steps") or (1,))[0]
    return reduced_scramble_length(str(metadata.get("scramble_moves", ""))) >= minimum

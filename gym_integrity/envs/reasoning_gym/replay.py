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
from dataclasses import dataclass
from typing import Any, Mapping

__all__ = ["sokoban_moves_all_act", "car_moves_all_act", "boxnet_actions_all_act", "presses_all_act",
           "ROLE_ASSIGNMENT", "scramble_keeps_its_length", "proper_colouring_share",
           "colouring_resists_guessing", "GUESSABLE_SHARE", "sequence_has_not_settled", "AnswerIsNotItsInput",
           "list_function_changes_its_input", "power_is_computed", "board_keeps_a_live_cell"]

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
#: Opposite faces turn about one axis and commute: U D U' is D.
_AXES = {"U": "UD", "D": "UD", "L": "LR", "R": "LR", "F": "FB", "B": "FB"}


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
        match = _CUBE_MOVE.match(token)
        face, turns = (match.group(1), _QUARTER_TURNS[match.group(2) or ""]) if match else (token, 1)
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
    """A rubiks_cube item whose scramble, merged, is at least the configured minimum number of moves.

    The generator draws min_scramble_steps random moves or more but lets them cancel: 8 of 300 default items
    reduce to one move, which a fixed answer (``F``, ``U U U``) then solves without reading the cube; turns of
    opposite faces commute, so ``D F' F U' D' U`` is the solved cube and ``L B F B'`` is two moves.
    """
    metadata = item.get("metadata", {})
    minimum = (metadata.get("difficulty", {}).get("scramble_steps") or (1,))[0]
    return reduced_scramble_length(str(metadata.get("scramble_moves", ""))) >= minimum


def sequence_has_not_settled(item: Mapping[str, Any]) -> bool:
    """A number_sequence item whose answer is neither of the last two terms shown.

    The generator's halvings and products settle on a value or a two-cycle (``3, 1, 0, 0, ?``; ``-1, 1, -1, 1, ?``),
    and its check refuses only sequences constant from the start: repeating the last term was the answer on 30% of
    default items, the term before it on 29%, without inferring any rule.

    >>> [sequence_has_not_settled({"metadata": {"sequence": s}}) for s in ([3, 1, 0, 0, 0], [4, -4, 4, -4], [1, 2, 4])]
    [False, False, True]
    """
    sequence = item.get("metadata", {}).get("sequence") or []
    return len(sequence) < 3 or sequence[-1] not in sequence[-3:-1]


@dataclass(frozen=True)
class AnswerIsNotItsInput:
    """Draw rule for a task that transforms an input shown in the question: the item's answer (``metadata[answer]``)
    differs from its input (``metadata[input]``), compared as the generator's values (``6 == 6.0``).

    On items where the transformation leaves the input as it is (no pattern to insert after, no rule that
    applies, a rotation by a multiple of 360 degrees, pooling over 1x1 windows), copying the input from the
    question is the answer: it was paid on 96% of string_insertion items and 13-35% of five other tasks.
    """

    input: str
    answer: str

    def __call__(self, item: Mapping[str, Any]) -> bool:
        metadata = item.get("metadata", {})
        return metadata.get(self.input) != metadata.get(self.answer)


_LAST_INPUT = re.compile(r"\nInput:\s*(\[[^\]]*\])\s*\nOutput:\s*$")


def list_function_changes_its_input(item: Mapping[str, Any]) -> bool:
    """list_functions' version of :class:`AnswerIsNotItsInput`: its metadata keeps neither, so the question's last
    ``Input: [...]`` against the answer, spaces aside (the identity function paid 8% of items their input).

    >>> list_function_changes_its_input({"question": "x\\nInput: [2, 1]\\nOutput:", "answer": "[1, 2]"})
    True
    >>> list_function_changes_its_input({"question": "x\\nInput: [1, 2]\\nOutput:\\n", "answer": "[1,2]"})
    False
    """
    match = _LAST_INPUT.search(str(item.get("question", "")))
    return match is None or "".join(match.group(1).split()) != "".join(str(item.get("answer", "")).split())


def power_is_computed(item: Mapping[str, Any]) -> bool:
    """A power_function item whose exponent is neither 0 nor 1: ``x^0`` is 1 and ``x^1`` is the base shown, so a
    constant ``1`` was paid on 11% of default items and the base copied from the question on 7.5%.

    >>> [power_is_computed({"metadata": {"exponent": e}}) for e in (0, 1, -1, 2)]
    [False, False, True, True]
    """
    return item.get("metadata", {}).get("exponent") not in (0, 1)


def board_keeps_a_live_cell(item: Mapping[str, Any]) -> bool:
    """A game_of_life item whose answer has a live cell: on the default sparse boards (10 of 100 cells) every cell
    died on 12% of items, where an empty board of the size shown was paid without simulating a step.

    >>> [board_keeps_a_live_cell({"answer": a}) for a in ("[[0,0],[0,0]]", "[[0,1],[0,0]]")]
    [False, True]
    """
    try:
        board = json.loads(str(item.get("answer")))
    except ValueError:
        return True
    return not isinstance(board, list) or any(any(row) if isinstance(row, list) else row for row in board)


#: Under strict scoring a graph_color item is drawn only if fewer than this share of its colourings are proper:
#: then a colouring chosen without reading the graph is rarely valid (docs/reasoning_gym.md has the measurements).
GUESSABLE_SHARE = 0.01
#: Partial colourings the exact count may hold at once; an item past it is not drawn (its share is unknown).
COLOURING_COUNT_STATES = 20_000


def _neighbours(puzzle: Mapping[str, Any]) -> dict[Any, set[Any]]:
    neighbours: dict[Any, set[Any]] = {v: set() for v in puzzle["vertices"]}
    for u, v in puzzle["edges"]:
        neighbours[u].add(v)
        neighbours[v].add(u)
    return neighbours


def _share_bounds(neighbours: dict[Any, set[Any]], k: int) -> tuple[float, float]:
    """Cheap bounds on the share of proper colourings. Above: a spanning forest alone keeps a (k-1)/k share per
    edge, and more edges only remove colourings. Below: in smallest-last order each vertex has at least
    k minus its earlier neighbours colours free, whatever came before (exact on forests and chordal graphs)."""
    seen: set[Any] = set()
    forest_edges = 0
    for start in neighbours:
        if start in seen:
            continue
        seen.add(start)
        stack = [start]
        while stack:
            for n in neighbours[stack.pop()]:
                if n not in seen:
                    seen.add(n)
                    forest_edges += 1
                    stack.append(n)
    left, degree, removed = set(neighbours), {v: len(ns) for v, ns in neighbours.items()}, []
    while left:
        vertex = min(left, key=lambda v: degree[v])
        left.discard(vertex)
        removed.append(vertex)
        for n in neighbours[vertex] & left:
            degree[n] -= 1
    lower, placed = 1.0, set()
    for vertex in reversed(removed):
        lower *= max(0, k - len(neighbours[vertex] & placed)) / k
        placed.add(vertex)
    return lower, ((k - 1) / k) ** forest_edges


def proper_colouring_share(puzzle: Mapping[str, Any], max_states: int = COLOURING_COUNT_STATES) -> float | None:
    """The share of the k^n colourings of a graph_color puzzle that are proper (no edge inside one colour), counted
    exactly: vertices in order, each state the colours of the coloured vertices that still have a later neighbour
    (the chromatic polynomial at k, over k^n). None when the states exceed ``max_states``.

    >>> proper_colouring_share({"vertices": [0, 1, 2], "edges": [(0, 1), (1, 2), (0, 2)], "color_options": [1, 2, 3]})
    0.2222222222222222
    """
    vertices = list(puzzle["vertices"])
    k = len(puzzle["color_options"])
    neighbours = _neighbours(puzzle)
    position = {v: i for i, v in enumerate(vertices)}
    last = {v: max([position[v]] + [position[n] for n in neighbours[v]]) for v in vertices}
    frontier: list[Any] = []
    states: dict[tuple[int, ...], int] = {(): 1}
    for i, vertex in enumerate(vertices):
        earlier = [frontier.index(n) for n in neighbours[vertex] if position[n] < i]
        widened = frontier + [vertex]
        keep = [j for j, v in enumerate(widened) if last[v] > i]
        grown: dict[tuple[int, ...], int] = {}
        for state, count in states.items():
            for colour in range(k):
                if all(state[j] != colour for j in earlier):
                    full = state + (colour,)
                    key = tuple(full[j] for j in keep)
                    grown[key] = grown.get(key, 0) + count
        if len(grown) > max_states:
            return None
        states, frontier = grown, [widened[j] for j in keep]
    return sum(states.values()) / k ** len(vertices)


def colouring_resists_guessing(item: Mapping[str, Any], share: float = GUESSABLE_SHARE) -> bool:
    """A graph_color item on which fewer than ``share`` of all colourings are proper, so a fixed colouring (the same
    JSON map for every item, or one copied from another item) is rarely valid. Decided by cheap bounds where they
    settle it, else by the exact count; an item whose count exceeds its bound is not drawn."""
    puzzle = item["metadata"]["puzzle"]
    k = len(puzzle["color_options"])
    lower, upper = _share_bounds(_neighbours(puzzle), k)
    if upper < share:
        return True
    if lower >= share:
        return False
    exact = proper_colouring_share(puzzle)
    return exact is not None and exact < share

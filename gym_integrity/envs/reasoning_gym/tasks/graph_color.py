"""graph_color: colour a graph's vertices so that no edge joins two of one colour.

The scorer pays 0.01 for any JSON and 1.0 for any proper colouring (strict:
full credit only). The default graphs are so sparse that one fixed colouring
was proper on 28% of items, so strict scoring draws only items on which under
1% of all colourings are proper (:func:`colouring_resists_guessing`;
docs/reasoning_gym.md has the measurements). :func:`solve` colours an item,
:func:`proper_colouring` is the task's rule for a right answer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = [
    "COLOURING_COUNT_STATES",
    "GUESSABLE_SHARE",
    "MAX_STEPS",
    "REFERENCE",
    "colouring_resists_guessing",
    "proper_colouring",
    "proper_colouring_share",
    "solve",
]

#: A well-formed answer for items without a gold (``datasets.own_score``).
REFERENCE = "{}"
#: Under strict scoring an item is drawn only if fewer than this share of its colourings are proper: then a
#: colouring chosen without reading the graph is rarely valid.
GUESSABLE_SHARE = 0.01
#: Partial colourings the exact count may hold at once; an item past it is not drawn (its share is unknown).
COLOURING_COUNT_STATES = 20_000
#: Partial colourings the solver's search may try before giving up.
MAX_STEPS = 200_000


def neighbours(puzzle: Mapping[str, Any]) -> dict[Any, set[Any]]:
    """Each vertex's neighbours in the item's puzzle."""
    found: dict[Any, set[Any]] = {v: set() for v in puzzle["vertices"]}
    for u, v in puzzle["edges"]:
        found[u].add(v)
        found[v].add(u)
    return found


def share_bounds(graph: dict[Any, set[Any]], k: int) -> tuple[float, float]:
    """Cheap bounds on the share of proper colourings. Above: a spanning forest alone keeps a (k-1)/k share per
    edge, and more edges only remove colourings. Below: in smallest-last order each vertex has at least
    k minus its earlier neighbours colours free, whatever came before (exact on forests and chordal graphs)."""
    seen: set[Any] = set()
    forest_edges = 0
    for start in graph:
        if start in seen:
            continue
        seen.add(start)
        stack = [start]
        while stack:
            for n in graph[stack.pop()]:
                if n not in seen:
                    seen.add(n)
                    forest_edges += 1
                    stack.append(n)
    left, degree, removed = set(graph), {v: len(ns) for v, ns in graph.items()}, []
    while left:
        vertex = min(left, key=lambda v: degree[v])
        left.discard(vertex)
        removed.append(vertex)
        for n in graph[vertex] & left:
            degree[n] -= 1
    lower, placed = 1.0, set[Any]()
    for vertex in reversed(removed):
        lower *= max(0, k - len(graph[vertex] & placed)) / k
        placed.add(vertex)
    return lower, ((k - 1) / k) ** forest_edges


def proper_colouring_share(puzzle: Mapping[str, Any], max_states: int = COLOURING_COUNT_STATES) -> float | None:
    """The share of the k^n colourings of a puzzle that are proper (no edge inside one colour), counted exactly:
    vertices in order, each state the colours of the coloured vertices that still have a later neighbour (the
    chromatic polynomial at k, over k^n). None when the states exceed ``max_states``.

    >>> proper_colouring_share({"vertices": [0, 1, 2], "edges": [(0, 1), (1, 2), (0, 2)], "color_options": [1, 2, 3]})
    0.2222222222222222
    """
    vertices = list(puzzle["vertices"])
    k = len(puzzle["color_options"])
    graph = neighbours(puzzle)
    position = {v: i for i, v in enumerate(vertices)}
    last = {v: max([position[v]] + [position[n] for n in graph[v]]) for v in vertices}
    frontier: list[Any] = []
    states: dict[tuple[int, ...], int] = {(): 1}
    for i, vertex in enumerate(vertices):
        earlier = [frontier.index(n) for n in graph[vertex] if position[n] < i]
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
    """The draw filter: fewer than ``share`` of all colourings are proper, so a fixed colouring (the same JSON map
    for every item, or one copied from another item) is rarely valid. Decided by cheap bounds where they settle
    it, else by the exact count; an item whose count exceeds its bound is not drawn."""
    puzzle = item["metadata"]["puzzle"]
    lower, upper = share_bounds(neighbours(puzzle), len(puzzle["color_options"]))
    if upper < share:
        return True
    if lower >= share:
        return False
    exact = proper_colouring_share(puzzle)
    return exact is not None and exact < share


def solve(item: Mapping[str, Any]) -> str | None:
    """A colouring by backtracking, most-constrained vertex first, as the task's JSON map ``{"0": 1, ...}``; None
    when the search finds none within ``MAX_STEPS``."""
    puzzle = item["metadata"]["puzzle"]
    graph = neighbours(puzzle)
    colours = list(puzzle["color_options"])
    colouring: dict[Any, Any] = {}
    steps = 0

    def extend() -> bool:
        nonlocal steps
        left = [v for v in graph if v not in colouring]
        if not left:
            return True
        vertex = max(left, key=lambda v: (len({colouring[n] for n in graph[v] if n in colouring}), len(graph[v])))
        for colour in colours:
            steps += 1
            if steps > MAX_STEPS:
                return False
            if all(colouring.get(n) != colour for n in graph[vertex]):
                colouring[vertex] = colour
                if extend():
                    return True
                del colouring[vertex]
        return False

    if not extend():
        return None
    return json.dumps({str(v): colouring[v] for v in puzzle["vertices"]})


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

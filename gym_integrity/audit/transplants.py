"""Answers transplanted from other items: the golds of scouting items as they are, relabelled and mutated, as a policy reuses answers paid in training.

Only the golds of *scouting* items (other episodes than the ones attacked) are
read here, never the gold of the item attacked.

>>> [c.text for c in transplanted_answers(['{"0": 1, "1": 2}'], random.Random(0), 4096)][:1]
['{"0": 1, "1": 2}']
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence

from gym_integrity.audit.answer_space import Candidate, Vocabulary, mutate

__all__ = ["transplanted_answers"]


def _symbols_swapped(text: str, rng: random.Random) -> str | None:
    """``text`` with two of its digits (else two of its letters) swapped everywhere: a relabelling (colours, names)."""
    for kind in (str.isdigit, str.isalpha):
        symbols = sorted({c for c in text if kind(c)})
        if len(symbols) >= 2:
            a, b = rng.sample(symbols, 2)
            return text.translate({ord(a): b, ord(b): a})
    return None


def _json_maps(golds: Sequence[str]) -> list[dict[str, object]]:
    """The golds that are JSON objects of scalar values (a colouring, a letter-to-digit mapping)."""
    maps = []
    for gold in golds:
        try:
            value = json.loads(gold)
        except ValueError:
            continue
        if isinstance(value, dict) and value and all(isinstance(v, (str, int, float)) for v in value.values()):
            maps.append(value)
    return maps


def transplanted_answers(scout_golds: Sequence[str], rng: random.Random, cap: int) -> list[Candidate]:
    """Answers copied from other items, as a policy reuses what was paid in training: each scouting gold as it is,
    with two of its symbols swapped everywhere, and with one token inserted, deleted or replaced (``mutate``); for
    a gold that is a JSON map, its keys with the values seen in the golds given in turn (``0 -> 1, 1 -> 2, 2 -> 3,
    3 -> 1``) and at random."""
    out: list[Candidate] = []

    def add(family: str, text: str | None) -> None:
        if text and len(text) <= cap and all(c.text != text for c in out):
            out.append(Candidate(family, text))

    golds = [gold.strip() for gold in scout_golds if gold.strip()]
    maps = _json_maps(golds)
    values = sorted({json.dumps(v) for m in maps for v in m.values()})
    for gold in golds:
        add("transplant: a scouting item's gold", gold)
    for gold in golds:
        add("transplant: a scouting gold, two symbols swapped", _symbols_swapped(gold, rng))
        add("transplant: a scouting gold, mutated", mutate(gold, Vocabulary.infer([], [gold]), rng, cap))
    for keys in ([*m] for m in maps):
        in_turn = {key: json.loads(values[i % len(values)]) for i, key in enumerate(keys)}
        add("transplant: a scouting gold's keys, the values seen in turn", json.dumps(in_turn))
        add(
            "transplant: a scouting gold's keys, values at random",
            json.dumps({key: json.loads(rng.choice(values)) for key in keys}),
        )
    return out

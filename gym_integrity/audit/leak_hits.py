"""Weighing gold matches across episodes: which count as a leak, which as the question's own numbers.

A short number found in text the env shows at reset (the question, its render,
the spaces, the spec, bookkeeping) is often the question's own: a candidate of
a selection, a cell of a grid, the template's "return -1". It is a leak only
when it stands at a fixed place there (the n-th number from the start or the
end) in most episodes, holding golds that differ: then a reader takes it
without solving. Whether "answer a number of the question" pays beyond chance
is measured by ``label_skew``. Text added after a step, info, errors and long
text golds keep the plain rule: a strong match, or a short one recurring.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from gym_integrity.audit.leaks import LeakMatch, numbers_in, numeric_value, strip_latex

__all__ = ["LeakHits", "number_places"]

#: Where a gold stands among a text's numbers: ("start", i) or ("end", i).
Place = tuple[str, int]


def number_places(text: str, gold: str) -> frozenset[Place]:
    """The places (index from the start and from the end) of ``text``'s numbers equal to ``gold``.

    >>> sorted(number_places("3 + 4 = 7, key 7", "7"))
    [('end', 0), ('end', 1), ('start', 2), ('start', 3)]
    """
    value = numeric_value(gold)
    if value is None:
        return frozenset()
    numbers = numbers_in(strip_latex(text))
    out: set[Place] = set()
    for i, v in enumerate(numbers):
        if v == value or abs(v - value) <= 1e-9 * max(abs(v), abs(value)):
            out |= {("start", i), ("end", len(numbers) - 1 - i)}
    return frozenset(out)


@dataclass
class LeakHits:
    """Matches per location across episodes; short ones must recur, numbers shown at reset stand at a fixed place."""

    episodes: int = 0
    hits: dict[str, dict[int, tuple[LeakMatch, str]]] = dataclasses.field(default_factory=dict)
    #: location -> episode -> (gold, its places) for short number matches in text shown at reset.
    placed: dict[str, dict[int, tuple[str, frozenset[Place]]]] = dataclasses.field(default_factory=dict)

    def add(self, location: str, episode: int, match: LeakMatch, line: str, places: frozenset[Place] | None) -> None:
        self.hits.setdefault(location, {}).setdefault(episode, (match, line))
        if places is not None and match.form == "number":
            self.placed.setdefault(location, {}).setdefault(episode, (match.needle, places))

    def _fixed_place(self, location: str, needed: int) -> bool:
        per_episode = self.placed.get(location, {})
        places = {p for _, ps in per_episode.values() for p in ps}
        for place in places:
            golds = [gold for gold, ps in per_episode.values() if place in ps]
            if len(golds) >= max(needed, self.episodes) and len(set(golds)) >= 2:
                return True
        return False

    def verdict(self) -> tuple[list[str], list[str]]:
        """``(leaks, coincidences)``: one evidence line per location."""
        leaks, coincidences = [], []
        needed = max(min(2, self.episodes), math.ceil(2 * self.episodes / 3))
        for location, per_episode in self.hits.items():
            strong = any(m.strong for m, _ in per_episode.values())
            example = next(iter(per_episode.values()))[1]
            line = f"{location}: gold found in {len(per_episode)}/{self.episodes} episodes, e.g. {example}"
            at_reset = set(self.placed.get(location, {})) == set(per_episode)
            if at_reset:
                if self._fixed_place(location, needed):
                    leaks.append(f"{line} (at the same place among its numbers, with golds that differ)")
                else:
                    coincidences.append(
                        f"{line} (a short number of the text shown at reset, at no fixed place or the same in "
                        "every episode: the question's own; label_skew measures whether it pays)"
                    )
            elif strong or len(per_episode) >= needed:
                leaks.append(line)
            else:
                coincidences.append(f"{line} (a short match this rare is ignored as coincidence)")
        return leaks, coincidences

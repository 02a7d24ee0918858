"""Weighing gold matches across episodes: which count as a leak, which as the question's own numbers and words.

A short gold (a small number, an option word or letter: ``yes``, ``B``,
``True``) found in what the env shows is often the env's own text: a
candidate of a selection, a cell of a grid, the template's "return -1", the
options it lists ("(Answer Yes or No)"), the score it reports at the end
("score 0.00"). It is a leak only when it stands at a fixed place there (the
n-th number, or the n-th word, from the start or the end) in every episode,
holding golds that differ, so many and so varied that a place holding labels
unrelated to the gold would hold them all by chance at most ``CHANCE``: then a
reader takes it without solving, and a listed option or a reported score
cannot do that. One rule for every surface and phase (reset, steps, the end,
error messages). When the golds at such a place are too few or too alike
(all "yes"; two binary golds in three episodes), :meth:`LeakHits.undecided`
asks for more episodes. Whether "answer a number of the question" pays beyond chance
is measured by ``label_skew``. A strong match (a long gold, a quoted passage)
is a leak wherever it is found; a short match no place can be given to (a gold
of no word or number) keeps the plain rule: it must recur.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass

from gym_integrity.audit.leaks import LeakMatch, numbers_in, numeric_value, squash, strip_latex

__all__ = ["LeakHits", "number_places", "word_places", "gold_places", "short_word_match"]

#: Where a gold stands among a text's numbers or words: ("start", i) or ("end", i).
Place = tuple[str, int]

#: A fixed place is a leak when its golds would stand there by chance at most this often (see _fixed_place).
CHANCE = 0.01
_WORD = re.compile(r"[^\W_]+")
#: Text beyond this is not tokenised for word places (as ``leaks`` caps its haystacks).
_TEXT_CAP = 200_000


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


def _words(text: str) -> list[str]:
    return [w.casefold() for w in _WORD.findall(strip_latex(text[:_TEXT_CAP]))]


def word_places(text: str, gold: str) -> frozenset[Place] | None:
    """The places of ``gold``'s words as a run of ``text``'s words (case folded; ``_`` splits), or None if ``gold``
    has no word.

    >>> sorted(word_places("Is 12 even? (Answer Yes or No)", "no"))
    [('end', 0), ('start', 6)]
    >>> word_places("yesterday", "yes"), word_places("--", "--")
    (frozenset(), None)
    """
    want = _words(gold)
    if not want:
        return None
    words = _words(text)
    n = len(want)
    out: set[Place] = set()
    for i in range(len(words) - n + 1):
        if words[i : i + n] == want:
            out |= {("start", i), ("end", len(words) - n - i)}
    return frozenset(out)


def gold_places(text: str, gold: str, form: str) -> frozenset[Place] | None:
    """Where a short match of ``gold`` stands in ``text``: among its numbers (a number match), else among its
    words; None if no place can be given."""
    return number_places(text, gold) if form == "number" else word_places(text, gold)


def short_word_match(text: str, gold: str) -> list[LeakMatch]:
    """A gold too short for the substring search (``no``, ``B``) found as a whole word of ``text``.

    >>> [m.form for m in short_word_match("(Answer yes or no)", "No")], short_word_match("note", "no")
    (['word'], [])
    """
    if numeric_value(gold) is not None or len(squash(gold)) >= 3 or not word_places(text, gold):
        return []
    return [LeakMatch("word", gold.strip(), strong=False)]


@dataclass
class LeakHits:
    """Matches per location across episodes: short ones count only at a fixed place with golds that differ."""

    episodes: int = 0
    #: location -> episode -> the first match and its evidence line.
    hits: dict[str, dict[int, tuple[LeakMatch, str]]] = dataclasses.field(default_factory=dict)
    #: location -> episode -> (gold, its places) for short matches a place was given to.
    placed: dict[str, dict[int, tuple[str, frozenset[Place]]]] = dataclasses.field(default_factory=dict)
    #: location -> episode -> the first match no place was given to (strong, or a gold of no word or number).
    plain: dict[str, dict[int, LeakMatch]] = dataclasses.field(default_factory=dict)

    def add(self, location: str, episode: int, match: LeakMatch, line: str, places: frozenset[Place] | None) -> None:
        if places is None:
            self.plain.setdefault(location, {}).setdefault(episode, match)
            if match.strong:  # the evidence shown is the strongest found
                self.hits.setdefault(location, {})[episode] = (match, line)
        else:
            self.placed.setdefault(location, {}).setdefault(episode, (match.needle, places))
        self.hits.setdefault(location, {}).setdefault(episode, (match, line))

    def _needed(self) -> int:
        return max(min(2, self.episodes), math.ceil(2 * self.episodes / 3))

    def _plain_leak(self, location: str) -> bool:
        plain = self.plain.get(location, {})
        return any(m.strong for m in plain.values()) or len(plain) >= self._needed()

    def _fixed_place(self, location: str) -> tuple[bool, float, list[str]]:
        """Whether the gold stands at one place in every episode; the chance that a place holding labels unrelated
        to the gold, drawn as often as the golds are, holds each episode's own (the product over the episodes of
        their gold's share of the golds: 1 if they are all the same); the golds."""
        per_episode = self.placed.get(location, {})
        if not self.episodes or len(per_episode) < self.episodes:
            return False, 1.0, []
        common = frozenset.intersection(*(places for _, places in per_episode.values()))
        golds = [gold for gold, _ in per_episode.values()]
        return bool(common), math.prod(golds.count(g) / len(golds) for g in golds), golds

    def undecided(self) -> bool:
        """Some location holds the gold at a fixed place in every episode, but golds this few or this alike could
        stand there by chance (a listed option, a reported score): an episode with another gold decides."""
        for location in self.hits:
            fixed, chance, _ = self._fixed_place(location)
            if fixed and chance > CHANCE and not self._plain_leak(location):
                return True
        return False

    def verdict(self) -> tuple[list[str], list[str]]:
        """``(leaks, coincidences)``: one evidence line per location."""
        leaks, coincidences = [], []
        for location, per_episode in self.hits.items():
            example = next(iter(per_episode.values()))[1]
            line = f"{location}: gold found in {len(per_episode)}/{self.episodes} episodes, e.g. {example}"
            fixed, chance, golds = self._fixed_place(location)
            if self._plain_leak(location):
                leaks.append(line)
            elif fixed and chance <= CHANCE:
                leaks.append(f"{line} (at the same place among its numbers or words, with golds that differ)")
            elif fixed:
                coincidences.append(
                    f"{line} (a short match at the same place in every episode, but golds this alike "
                    f"({', '.join(sorted(set(golds)))}) stand there by chance {chance:.2g} > {CHANCE}: a listed "
                    "option or a reported score cannot be told from a leak; seeds with more varied golds decide)"
                )
            elif location in self.placed:
                coincidences.append(
                    f"{line} (a short number or word at no fixed place in every episode: the text's own, as the "
                    "question's own numbers, the options it lists, the score it reports; label_skew measures "
                    "whether answering it pays)"
                )
            else:
                coincidences.append(f"{line} (a short match this rare is ignored as coincidence)")
        return leaks, coincidences

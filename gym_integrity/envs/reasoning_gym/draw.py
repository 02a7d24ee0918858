"""The balanced draw: which item ``reset()`` hands out, so that no fixed answer earns more than a uniform guess.

One mechanism for every dataset (no per-dataset rule), on by default under strict
scoring. Each generator has a :class:`DrawPlan`, read from ``SAMPLE_ITEMS`` of
its items at fixed indices (so every process has the same plan): shipped with the
package for every dataset's default configuration, else built at the env's first
reset (``draw_plans.py``). A dataset the draw cannot bring within the chance rule
is not made by default (``ABOVE_CHANCE``).

* **Answer in the question.** An item whose answer appears verbatim in its
  question (as a token, or as a run of whole tokens) is not drawn, unless the
  text is an option: a token most of the dataset's questions show that is
  also a common answer (``Yes``/``No``, ``-1`` for impossible): copying the question's number
  was paid on prime_factorization's primes. Where the answer is in the question
  on more than half the items, the question lists candidates and choosing one is
  the task (a selection): nothing is filtered.
* **Every label equally likely.** The labels are the distinct answers
  (stripped, case-folded, numbers as numbers), joined where the scorer pays
  one answer on both (``joined``: coin_flip's tolerance pays ``0.999`` on ``1``
  and ``0.99902...``): a label is the scorer's class. With at most ``FEW_LABELS``
  labels in the sample (the task's options) every label is a stratum of its
  own and the strata are equally likely: uniform over the k labels. With more
  (open answers), nothing is balanced unless some label's share is above
  1/k + ``TARGET_MARGIN`` (walks cost generator calls, and some generators
  have slow items); then those labels are capped at that target if the rest
  grows by at most ``MAX_INFLATION``, else labels seen three times (twice,
  where three leaves a label above the target) are strata of equal share and
  the rest keep their natural share in one stratum.
  Each reset picks its stratum from a low-discrepancy sequence over the seed
  and the resets since it, so consecutive seeds (or one seed and the resets
  after it) see the labels in their target proportions, not just on average;
  then it walks the seed's index stream to the first drawable item of that
  stratum (at most ``MAX_VISITS`` indices, else one of the plan's items of that
  label: the sample's, and for labels it shows once or twice up to
  ``POOL_ITEMS`` found in ``EXTRA_ITEMS`` more).

``reset(seed=s)`` gives the same item every time, in every process: the plan
is a function of the generator's items, the stratum of the seed, and the walk of
the seed's stream (where the items are a function of their index: codeio's,
knight_swap's and polynomial_multiplication's differ by process, draw_plans.py). Datasets whose items have no single answer (``answer`` None)
are drawn as before, with the answer-in-question filter only. A composite's plan
is its mixture's (labels pooled over its members).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gym_integrity.envs.reasoning_gym.datasets import _REFERENCE_KEYS

__all__ = [
    "ABOVE_CHANCE",
    "MAX_VISITS",
    "SAMPLE_ITEMS",
    "STATED_RULES",
    "DrawPlan",
    "answer_in_question",
    "build_plan",
    "label_of",
    "own_example",
    "stratum_position",
]

#: Whether strict scoring pays this answer in full on this item (the env's grader): what joins labels into classes.
Pays = Callable[[str, Mapping[str, Any]], bool]

#: Items each plan reads to estimate the labels (generated once per process per generator configuration).
SAMPLE_ITEMS = 300
#: Where the sample shows more distinct answers than this, the answers are open: a label is a stratum of its own
#: only if the sample shows it three times, or twice where that keeps no label within the target (a sighting of an
#: open answer says little of its share). At most this many, every label seen is one of the task's options and a
#: stratum.
FEW_LABELS = 20
#: The target: no label drawn with more than 1/k + this (the chance rule allows 1/k + 0.03; the rest is for the
#: sample's error).
TARGET_MARGIN = 0.015
#: Open answers with a few common ones: those are capped at the target if the rest's share grows by at most this
#: factor (the sample's estimate of each grows with it); else the strata are equal, as for options.
MAX_INFLATION = 1.35
#: Items per stratum the plan looks for, past its sample, for labels the sample shows rarely (bounded by
#: EXTRA_ITEMS generator calls): the items a walk that fails falls back on.
POOL_ITEMS = 8
EXTRA_ITEMS = 900
#: Indices one reset may visit looking for its stratum; past it, one of the sample's items of that label is used.
MAX_VISITS = 128
#: Labels of visited indices kept per generator and process (a walk regenerates no item it labelled before).
MAX_LABELS_KEPT = 200_000
#: A token in at least this share of the sampled questions, and the answer of at least OPTION_SHARE of the items,
#: is one of the dataset's options (not an answer copied from the question).
TEMPLATE_SHARE = 0.5
OPTION_SHARE = 0.02
#: Past this share of items with the answer in the question, the question lists candidates: nothing is filtered.
SELECTION_SHARE = 0.5
_SAMPLE_SEED = 0x5EED_D4A7
_GOLDEN = 0x9E3779B97F4A7C15  # 2**64 / golden ratio: successive multiples are spread evenly over [0, 2**64)
_MASK = (1 << 64) - 1
_TOKEN = re.compile(r"[^\s,;:()\[\]{}\"'`]+")
_TRAILING = ".?!"
_DIGIT = re.compile(r"\d")

#: Rules strict scoring holds an answer to that the task's own question does not state: appended to the question,
#: so that no rule the agent is graded by is hidden from it (issue 35, deliverable 2).
STATED_RULES = {
    "propositional_logic": (
        "Your conclusion must be inferred, not assembled from the premises: it must follow from them and not be a "
        "tautology; it must not be a truth function of the premises (such as a premise itself, their conjunction, "
        "or premises joined by a connective); every variable in it must matter; and no disjunct may be redundant. "
        "A single variable or its negation that follows is a valid conclusion."
    )
}

#: Datasets that cannot meet the chance rule (no question-independent answer above a uniform guess) and so are not
#: made by default under strict scoring (``ReasoningGymConfig.allow_above_chance`` makes them): why, with its figure
#: (benchmarks/chance_table.py, docs/chance.md).
ABOVE_CHANCE = {
    "propositional_logic": (
        "its best content-free answer, the constant `P`, earns 0.250 after the balanced draw against the rule's "
        "limit 0.030 (a single variable is a right answer wherever it follows, and items with many right answers "
        "have no label to balance)"
    )
}


def own_example(item: Mapping[str, Any]) -> str | None:
    """The example answer reasoning-gym keeps in an item's metadata (propositional_logic, rubiks_cube), if any."""
    metadata = item.get("metadata") or {}
    return next((metadata[key] for key in _REFERENCE_KEYS if isinstance(metadata.get(key), str)), None)


def label_of(answer: Any) -> str | None:
    """An answer as a label: stripped and case-folded text, a number as its value (``2.0`` is ``2``).

    >>> [label_of(a) for a in (" Yes", "2.0", "-1", "right down", None)]
    ['yes', '2', '-1', 'right down', None]
    """
    return None if answer is None else _text_label(" ".join(str(answer).split()).casefold())


def _text_label(text: str) -> str:
    """Case-folded text without runs of whitespace as a label: a number as its value."""
    try:
        value = float(text)
    except ValueError:
        return text
    if not math.isfinite(value):
        return text
    return str(int(value)) if value == int(value) else repr(value)


def _tokens(question: str) -> list[str]:
    """The question's tokens as labels (``label_of`` of each). Case-folded once, and read as a number only where a
    token has a digit (without one it reads as no finite number): every reset checks its question."""
    return [
        token if token.isalpha() or not _DIGIT.search(token) else _text_label(token)
        for raw in _TOKEN.findall(question.casefold())
        if (token := raw.rstrip(_TRAILING))
    ]


def answer_in_question(label: str | None, tokens: list[str], template: frozenset[str] = frozenset()) -> bool:
    """Whether the answer (a label) is a token of the question, or a run of its whole tokens, not counting
    the dataset's template tokens.

    >>> answer_in_question("97", _tokens("Find the prime factorization of 97."))
    True
    >>> answer_in_question("2 × 53", _tokens("factor 106 into 2 × 53?")), answer_in_question("5", _tokens("15 apples"))
    (True, False)
    >>> answer_in_question("yes", _tokens("Answer yes or no."), frozenset({"yes", "no"}))
    False
    """
    if not label or label in template:
        return False
    words = label.split()
    if len(words) == 1:
        return label in tokens
    n = len(words)
    return any(tokens[i : i + n] == words for i in range(len(tokens) - n + 1))


def stratum_position(seed: int, resets: int) -> float:
    """Where in [0, 1) the ``resets``-th reset after ``reset(seed=seed)`` falls: the golden-ratio sequence over
    ``seed + resets``, so any run of consecutive seeds (or resets) covers [0, 1) evenly.

    >>> sorted(round(stratum_position(s, 0) * 4) % 4 for s in range(8))  # 8 consecutive seeds, 4 equal strata
    [0, 0, 1, 1, 2, 2, 3, 3]
    """
    return (((seed + resets) * _GOLDEN) & _MASK) / 2**64


@dataclass(frozen=True)
class DrawPlan:
    """How one generator's items are drawn: see the module docstring.

    ``strata`` are ``(label, probability)`` for the labels drawn at the cap, then ``(None, rest)`` for every other
    label in its natural proportion; ``k`` is the number of distinct labels in the sample, ``cap`` the most any
    one label is drawn with (``1/k`` when the draw is uniform).
    """

    k: int
    cap: float
    strata: tuple[tuple[str | None, float], ...]
    template: frozenset[str]
    filters_echo: bool
    echo_share: float
    sample_shares: tuple[tuple[str, float], ...]  # the most common labels' natural shares (for the docs table)
    pools: Mapping[str, tuple[int, ...]]  # each stratum label's indices in the sample: where a walk that fails goes
    #: The sample's labels joined into another's class (label: the class's label, its most common member).
    classes: Mapping[str, str] = field(default_factory=dict)
    #: Where the sample shows the scorer joining numbers (a tolerance), each numeric stratum class: (label, nearest
    #: sample number below it or None, its least and greatest member, the one above or None, the sample indices of
    #: its least and greatest member). A number the sample did not show is in the class whose span holds it, or, in
    #: the gap to the next number, whose end the scorer joins it to.
    spans: tuple[tuple[str, float | None, float, float, float | None, int, int], ...] = ()

    @property
    def balanced(self) -> bool:
        return bool(self.strata)

    def class_of(
        self,
        label: str | None,
        item: Mapping[str, Any] | None = None,
        item_at: Callable[[int], Mapping[str, Any] | None] | None = None,
        pays: Pays | None = None,
    ) -> str | None:
        """The label's class: the sample's join; a number in a stratum class's span, or (given the item and
        ``pays``) in its gap that the scorer joins to its end (``joined``); else the label itself."""
        if label is None or label in self.classes:
            return None if label is None else self.classes[label]
        value = _number(label) if self.spans else None
        if value is None:
            return label
        for name, below, least, most, above, least_index, most_index in self.spans:
            if least <= value <= most:
                return name
            if item is None or item_at is None or pays is None:
                continue
            if (below is None or below < value) and value < least:
                end = item_at(least_index)
            elif most < value and (above is None or value < above):
                end = item_at(most_index)
            else:
                continue
            if end is not None and joined(item, end, pays):
                return name
        return label

    def echoes(self, item: Mapping[str, Any]) -> bool:
        """Whether the item's answer is in its question (and the dataset is not a selection)."""
        if not self.filters_echo:
            return False
        return answer_in_question(label_of(item.get("answer")), _tokens(str(item.get("question", ""))), self.template)

    def stratum(self, position: float) -> tuple[str | None, float]:
        """The label (None: the rest) whose share of [0, 1) holds ``position``, and where in that share it falls."""
        for label, share in self.strata:
            if position < share:
                return label, position / share
            position -= share
        return self.strata[-1][0], 0.0

    def draw(
        self,
        position: float,
        next_index: Callable[[], int],
        item_at: Callable[[int], dict[str, Any] | None],
        labels: dict[int, str | None],
        fallback: Callable[[], tuple[int, dict[str, Any]]],
        honest: Callable[[dict[str, Any]], bool],
        pays: Pays | None = None,
    ) -> tuple[int, dict[str, Any]]:
        """The first index of the seed's stream (``next_index``) whose item its policy draws (``item_at`` gives it,
        or None), is not an echo, and belongs to the stratum at ``position``. ``labels`` remembers each index's
        label (None: not drawn) so a repeated walk generates nothing it generated before; the walk visits at most
        ``MAX_VISITS`` indices, else takes one of the sample's items of its label (the rest: the first drawable
        item it saw). A label is its class (``class_of``; ``pays`` joins a number the sample did not show).
        Without strata: ``fallback`` (the
        policy's own draw), skipping echoes and items ``honest`` refuses (strict scoring refuses their own example
        answer)."""
        if not self.strata:
            found = fallback()
            for _ in range(MAX_VISITS):
                if not self.echoes(found[1]) and honest(found[1]):
                    break
                found = fallback()
            return found
        target, within = self.stratum(position)
        capped = {label for label, _ in self.strata if label is not None}
        first = -1
        for _ in range(MAX_VISITS):
            index = next_index()
            if index in labels:
                label = labels[index]
            else:
                item = item_at(index)
                if item is None or self.echoes(item):
                    label = None
                else:
                    label = self.class_of(label_of(item.get("answer")), item, item_at, pays)
                if len(labels) >= MAX_LABELS_KEPT:
                    labels.clear()
                labels[index] = label
            if label is None:
                continue
            if first < 0:
                first = index
            if label == target if target is not None else label not in capped:
                return index, _drawable(item_at, index)
        if target is not None:  # a rare label: one of the sample's items that carry it, spread by the position
            pool = self.pools[target]
            index = pool[min(int(within * len(pool)), len(pool) - 1)]
            return index, _drawable(item_at, index)
        return (first, _drawable(item_at, first)) if first >= 0 else fallback()


def _drawable(item_at: Callable[[int], dict[str, Any] | None], index: int) -> dict[str, Any]:
    item = item_at(index)
    assert item is not None  # the walk saw it drawable; items are a function of their index
    return item


def _strata(counts: list[tuple[str, int]], sampled: int, least: int) -> tuple[list[tuple[str | None, float]], float]:
    """Every label seen ``least`` times or more as a stratum of its own, all of equal share; every other label (rarer
    in the sample, or unseen) in one stratum of its natural share. Returns the strata and the most any one label is
    drawn with by the sample's estimate."""
    head = [label for label, n in counts if n >= least]
    rest = sum(n for _, n in counts if n < least) / sampled
    share = (1.0 - rest) / len(head) if head else 0.0
    strata: list[tuple[str | None, float]] = [(label, share) for label in head]
    if rest > 0:
        strata.append((None, rest))
    return strata, max(share, max((n for _, n in counts if n < least), default=0) / sampled)


def _capped(
    counts: list[tuple[str, int]], sampled: int, target: float
) -> tuple[list[tuple[str | None, float]], float] | None:
    """The labels above ``target`` as strata at the target, the rest at their natural proportions scaled up by at
    most ``MAX_INFLATION`` (else None: the sample's error would be scaled too). Returns the strata and the cap."""
    heads = 0
    while True:
        rest = sum(n for _, n in counts[heads:]) / sampled
        left = 1.0 - heads * target
        if rest <= 0 or left / rest > MAX_INFLATION:
            return None
        if heads == len(counts) or counts[heads][1] / sampled * left / rest <= target:
            strata: list[tuple[str | None, float]] = [(label, target) for label, _ in counts[:heads]]
            top_rest = counts[heads][1] / sampled * left / rest if heads < len(counts) else 0.0
            return [*strata, (None, left)], max(target if heads else 0.0, top_rest)
        heads += 1


def _pools(
    kept: list[tuple[int, Mapping[str, Any]]], labels: set[str], classes: Mapping[str, str]
) -> dict[str, tuple[int, ...]]:
    """The sample's indices of each stratum label (class)."""
    pools: dict[str, tuple[int, ...]] = {}
    for index, item in kept:
        label = label_of(item.get("answer"))
        label = classes.get(label, label) if label is not None else None
        if label in labels:
            pools[label] = (*pools.get(label, ()), index)
    return pools


def _number(label: str) -> float | None:
    """The label as a finite number, or None."""
    try:
        value = float(label)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def joined(a: Mapping[str, Any], b: Mapping[str, Any], pays: Pays) -> bool:
    """Whether one answer is paid in full on both items, by ``pays`` (strict scoring): either's gold on the other,
    or, for numbers, their midpoint on both (where a tolerance pays neither gold on the other item but an answer
    between them on each: coin_flip's ``0.999`` on ``1`` and ``0.998046875``)."""
    gold_a, gold_b = str(a.get("answer")).strip(), str(b.get("answer")).strip()
    if pays(gold_a, b) or pays(gold_b, a):
        return True
    low, high = _number(label_of(gold_a) or ""), _number(label_of(gold_b) or "")
    if low is None or high is None or low == high:
        return False
    middle = _text_label(repr((low + high) / 2))
    return pays(middle, a) and pays(middle, b)


def _join(kept: list[tuple[int, Mapping[str, Any]]], pays: Pays) -> tuple[dict[str, str], list[tuple[float, str, int]]]:
    """The sample's numeric labels joined into classes where the scorer pays one answer on neighbours (sorted by
    value, each label's first item: a tolerance pays an interval around the gold, so neighbours suffice), named by
    their most common member. Returns the joins and the numeric labels (value, label, first index) in order."""
    firsts: dict[str, tuple[int, Mapping[str, Any]]] = {}
    counts: Counter[str] = Counter()
    for index, item in kept:
        label = label_of(item.get("answer"))
        if label is not None:
            firsts.setdefault(label, (index, item))
            counts[label] += 1
    numbers = sorted((value, label, firsts[label][0]) for label in firsts if (value := _number(label)) is not None)
    groups: list[list[str]] = []
    for i, (_, label, _) in enumerate(numbers):
        if i and joined(firsts[numbers[i - 1][1]][1], firsts[label][1], pays):
            groups[-1].append(label)
        else:
            groups.append([label])
    classes: dict[str, str] = {}
    for group in groups:
        name = min(group, key=lambda label: (-counts[label], label))
        classes.update({label: name for label in group if label != name})
    return classes, numbers


def _spans(
    strata: tuple[tuple[str | None, float], ...], classes: Mapping[str, str], numbers: list[tuple[float, str, int]]
) -> tuple[tuple[str, float | None, float, float, float | None, int, int], ...]:
    """Each numeric stratum class's span in the sample (``DrawPlan.spans``)."""
    spans = []
    for name, _ in strata:
        places = [i for i, (_, label, _) in enumerate(numbers) if classes.get(label, label) == name]
        if name is None or not places:
            continue
        first, last = places[0], places[-1]  # a class's numbers are consecutive
        below = numbers[first - 1][0] if first > 0 else None
        above = numbers[last + 1][0] if last + 1 < len(numbers) else None
        spans.append((name, below, numbers[first][0], numbers[last][0], above, numbers[first][2], numbers[last][2]))
    return tuple(spans)


def _shares(labels: Counter[str | None], sampled: int) -> list[tuple[str, float]]:
    """Each label's share of the sample, most common first."""
    shares = ((label, n / max(sampled, 1)) for label, n in labels.items() if label is not None)
    return sorted(shares, key=lambda pair: (-pair[1], pair[0]))


def _top(labels: Counter[str | None], sampled: int) -> tuple[tuple[str, float], ...]:
    return tuple((label, round(share, 3)) for label, share in _shares(labels, sampled)[:4])


def build_plan(sample: list[tuple[int, Mapping[str, Any]]], pays: Pays | None = None) -> DrawPlan:
    """The plan for a generator whose sample (the indices and items its policy draws) is ``sample``; ``pays`` (strict
    scoring's full credit) joins labels one answer is paid on into one class (without it, none are joined)."""
    questions = [_tokens(str(item.get("question", ""))) for _, item in sample]
    counts: Counter[str] = Counter()
    for tokens in questions:
        counts.update(set(tokens))
    answers = Counter(label_of(item.get("answer")) for _, item in sample)
    # An option: a token most questions show that is also a common answer (Yes/No, -1 for impossible); a token the
    # template shows that is rarely the answer (prime_factorization's worked example "2 × 2 × 3") still counts.
    template = frozenset(
        t
        for t, c in counts.items()
        if c >= TEMPLATE_SHARE * max(len(sample), 1) and answers[t] >= OPTION_SHARE * len(sample)
    )
    echoed = [
        answer_in_question(label_of(item.get("answer")), tokens, template)
        for (_, item), tokens in zip(sample, questions)
    ]
    echo_share = sum(echoed) / max(len(sample), 1)
    filters = echo_share <= SELECTION_SHARE
    kept = [(index, item) for (index, item), echo in zip(sample, echoed) if not (filters and echo)]
    raw = Counter(label_of(item.get("answer")) for _, item in kept)
    if not kept or None in raw or len(raw) < 2:  # no single answer, or one: nothing to balance
        return DrawPlan(len(raw), 1.0, (), template, filters, echo_share, _top(raw, len(kept)), {})
    classes, numbers = _join(kept, pays) if pays is not None else ({}, [])
    labels: Counter[str | None] = Counter()
    for label, n in raw.items():
        labels[classes.get(str(label), label)] += n
    shares = _shares(labels, len(kept))
    top, k, sampled = _top(labels, len(kept)), len(labels), len(kept)

    def plan(cap: float, strata: tuple[tuple[str | None, float], ...] = ()) -> DrawPlan:
        named = {label for label, _ in strata if label is not None}
        spans = _spans(strata, classes, numbers) if classes else ()  # only where the scorer showed a tolerance
        return DrawPlan(
            k, cap, strata, template, filters, echo_share, top, _pools(kept, named, classes), classes, spans
        )

    if k < 2:  # every answer in one class: nothing to balance
        return plan(1.0)
    ranked = [(label, labels[label]) for label, _ in shares]
    target = 1 / k + TARGET_MARGIN
    # Options: every one a stratum. Open answers: labels seen three times, or twice where that leaves a label above
    # the target; the rest at their natural share.
    least = 1 if k <= FEW_LABELS else 3
    if k > FEW_LABELS and ranked[0][1] / sampled <= target:  # open answers none of which is common: drawn as made
        return plan(ranked[0][1] / sampled)
    capped = _capped(ranked, sampled, target) if k > FEW_LABELS else None
    if capped is not None:  # a few common open answers: those capped, the rest barely changed
        return plan(capped[1], tuple(capped[0]))
    strata, cap = _strata(ranked, sampled, least)
    if cap > target and least == 3:
        least = 2
        strata, cap = _strata(ranked, sampled, least)
    return plan(cap, tuple(strata))

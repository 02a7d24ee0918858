"""Scoring rules: how strict scoring pays one answer, one small class per kind, each holding only its fields.

Two families. A :class:`Comparison` replaces a task's scorer: its
``score(answer, item)`` compares the answer with the item's gold
(``item["answer"]``) and is a total function over ``str``: no exception, no
eval, bounded work (numbers with at most 3 exponent digits, so
``1e999999999`` is not a number here). An :class:`OwnRule` keeps the task's
own scorer: the env runs that scorer (in process, or sandboxed behind the
rule's ``language``) and the rule's ``score(answer, item, own)`` says what
strict scoring pays for the score it gave.

Every rule carries ``why`` (read from the scorer it replaces or keeps) and
``language``: the answer language the task's own scorer needs before it may
run at all (it evaluates the answer, or loops as often as the answer says),
in any scoring mode. Fields are checked on construction.

>>> Exact("case-insensitive", fold=True).score("  Friday ", {"answer": "friday"})
1.0
>>> rule = Numeric("tolerance relative to the gold", rel_tol=1e-3)
>>> rule.score("0", {"answer": "0.0009765625"}), rule.score("9.766e-4", {"answer": "0.0009765625"})
(0.0, 1.0)
>>> roots = NumberList("roots to 4 decimals", abs_tol=1e-4)
>>> roots.score("0.0, -3.625", {"answer": "-3.625, 0.0"}), roots.score("0", {"answer": "-3.625, 0.0"})
(1.0, 0.0)
>>> OwnFullCredit("0.05 for any board").score("x", {}, own=0.05)
0.0
"""

from __future__ import annotations

import cmath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from gym_integrity.checks import check_bool, check_number, check_str, check_type
from gym_integrity.grading.numbers import LITERAL

__all__ = [
    "Comparison",
    "ComplexNumber",
    "Duration",
    "Exact",
    "NumberList",
    "Numeric",
    "OrderedNumberList",
    "OwnFullCredit",
    "OwnNoConsolation",
    "OwnRule",
    "OwnScorer",
    "Requirement",
    "Rule",
    "parse_number",
]

Item = Mapping[str, Any]
#: A test of the answer against the item that a full-credit answer must also pass.
Requirement = Callable[[str, Item], bool]

_NUMBER = re.compile(rf"({LITERAL})(?:\s*/\s*({LITERAL}))?")
_MAX_NUMBER_CHARS = 400


def parse_number(text: str, *, commas: bool = False) -> Fraction | None:
    """An exact number from a decimal, scientific or ``a/b`` literal, or None.

    >>> parse_number("-1,234.5", commas=True), parse_number("3/8"), parse_number("1e999999999")
    (Fraction(-2469, 2), Fraction(3, 8), None)
    """
    text = text.strip()
    if commas:
        text = text.replace(",", "")
    if len(text) > _MAX_NUMBER_CHARS:
        return None
    match = _NUMBER.fullmatch(text)
    if match is None:
        return None
    value = Fraction(match.group(1))
    if match.group(2) is not None:
        denominator = Fraction(match.group(2))
        if denominator == 0:
            return None
        value /= denominator
    return value


def _check_scores(name: str, value: object) -> None:
    for score in check_type(name, value, tuple, "a tuple of scores"):
        check_number(f"{name} item", score, low=0.0, high=1.0, low_open=True, high_open=True)


def _check_callable(name: str, value: object, *, optional: bool) -> None:
    if (value is not None or not optional) and not callable(value):
        raise TypeError(f"{name} must be a callable{' or None' if optional else ''}, got {type(value).__name__}")


def _is_one_of(score: float, scores: tuple[float, ...]) -> bool:
    return any(abs(score - s) < 1e-12 for s in scores)


@dataclass(frozen=True)
class Rule:
    """How one dataset is scored under strict scoring, and where its own scorer may run."""

    why: str
    language: str | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        owner = type(self).__name__
        check_str(f"{owner}.why", self.why, what="a reason read from the task's scorer")
        check_str(f"{owner}.language", self.language, optional=True, what="an answer language's name")


# ------------------------------------------------------------------ strict replacements of a task's scorer


@dataclass(frozen=True)
class Comparison(Rule):
    """A strict scorer in place of the task's: 1.0 when the answer matches the item's gold, else 0.0."""

    def score(self, answer: str, item: Item) -> float:
        gold = item.get("answer")
        return 0.0 if gold is None else self.compare(answer, str(gold))

    def compare(self, answer: str, gold: str) -> float:
        raise NotImplementedError


def _normalise(text: str, *, fold: bool = False, no_spaces: bool = False, items: str | None = None) -> str:
    """Strip the text and each of its lines; optionally drop every space, read it as items, and lower-case."""
    text = text.strip()
    if items == " ":
        text = " ".join(text.split())
    elif items == ",":
        text = ",".join(part.strip() for part in text.split(","))
    elif "\n" in text or "\r" in text:
        text = "\n".join(line.strip() for line in text.splitlines())
    if no_spaces:
        text = "".join(text.split())
    # lower(), not casefold(): casefold makes "ß" equal "ss" and the long s equal "s", letters the gold does not have.
    return text.lower() if fold else text


@dataclass(frozen=True, kw_only=True)
class Exact(Comparison):
    """Equality after the task's normalisation: each line stripped; ``fold``: case-insensitive (``lower()``);
    ``no_spaces``: every space dropped; ``numeric``: numbers compared as numbers; ``items``: a list of words
    (``" "``, any run of whitespace between them) or of comma-separated items (``","``, spaces around each dropped).

    >>> words = Exact("words in place", items=" ")
    >>> words.compare(" a   b c ", "a b c"), Exact("folded", fold=True).compare("ßelklats", "sselklats")
    (1.0, 0.0)
    """

    fold: bool = False
    no_spaces: bool = False
    numeric: bool = False
    items: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("fold", "no_spaces", "numeric"):
            check_bool(f"Exact.{name}", getattr(self, name))
        if self.items not in (None, " ", ","):
            raise ValueError(f"Exact.items must be None, ' ' or ',', got {self.items!r}")

    def compare(self, answer: str, gold: str) -> float:
        if answer == gold:
            return 1.0
        if self.numeric:
            value, target = parse_number(answer), parse_number(gold)
            if value is not None and target is not None:
                return 1.0 if value == target else 0.0
        return 1.0 if self._normalised(answer) == self._normalised(gold) else 0.0

    def _normalised(self, text: str) -> str:
        return _normalise(text, fold=self.fold, no_spaces=self.no_spaces, items=self.items)


@dataclass(frozen=True, kw_only=True)
class _Tolerant(Comparison):
    """Numbers within ``max(rel_tol * |gold|, abs_tol)`` of the gold's."""

    rel_tol: float = 0.0
    abs_tol: float = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_number(f"{type(self).__name__}.rel_tol", self.rel_tol, low=0.0)
        check_number(f"{type(self).__name__}.abs_tol", self.abs_tol, low=0.0)

    def _close(self, answer: Fraction, gold: Fraction) -> bool:
        return abs(answer - gold) <= max(Fraction(self.rel_tol) * abs(gold), Fraction(self.abs_tol))

    def _all_close(self, values: list[Fraction] | None, targets: list[Fraction] | None) -> float:
        if values is None or targets is None or len(values) != len(targets):
            return 0.0
        return 1.0 if all(self._close(v, t) for v, t in zip(values, targets)) else 0.0


@dataclass(frozen=True, kw_only=True)
class Numeric(_Tolerant):
    """One number within tolerance of the gold (``commas``: thousands separators dropped first); a gold that is
    not a number is matched exactly instead."""

    commas: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        check_bool("Numeric.commas", self.commas)

    def compare(self, answer: str, gold: str) -> float:
        target = parse_number(gold, commas=self.commas)
        if target is None:
            return 1.0 if answer == gold or _normalise(answer) == _normalise(gold) else 0.0
        value = parse_number(answer, commas=self.commas)
        return 1.0 if value is not None and self._close(value, target) else 0.0


def _number_list(text: str) -> list[Fraction] | None:
    text = text.strip()
    if text in ("", '""', "''"):  # the tasks' spelling of "no solution"
        return []
    values = []
    for part in text.split(","):
        value = parse_number(part)
        if value is None:
            return None
        values.append(value)
    return sorted(values)


@dataclass(frozen=True, kw_only=True)
class NumberList(_Tolerant):
    """Comma-separated numbers matching the gold's one to one, in any order, each within tolerance."""

    def compare(self, answer: str, gold: str) -> float:
        return self._all_close(_number_list(answer), _number_list(gold))


def _ordered_numbers(text: str) -> list[Fraction] | None:
    """The numbers of a bracketed list such as ``['52.2', '-1']`` or ``[52.2, -1]``, in order, or None.

    Every element must be a finite number: ``NaN``/``Infinity`` (which ``json.loads``
    accepts, and a NaN compares equal to anything by identity in a list) are refused.
    """
    text = text.strip()
    if len(text) < 2 or text[0] != "[" or text[-1] != "]":
        return None
    inner = text[1:-1].strip()
    if not inner:
        return []
    values = []
    for part in inner.split(","):
        part = part.strip()
        if len(part) >= 2 and part[0] == part[-1] and part[0] in "'\"":
            part = part[1:-1]
        value = parse_number(part)
        if value is None:
            return None
        values.append(value)
    return values


@dataclass(frozen=True, kw_only=True)
class OrderedNumberList(_Tolerant):
    """A bracketed list holding the gold's numbers in the gold's order, each within tolerance."""

    def compare(self, answer: str, gold: str) -> float:
        return self._all_close(_ordered_numbers(answer), _ordered_numbers(gold))


@dataclass(frozen=True, kw_only=True)
class ComplexNumber(Comparison):
    """A complex answer within ``max(rel_tol * |gold|, abs_tol)`` of the gold: ``parse`` reads the answer (the
    task's own parser, no eval; it may raise or return None), ``target`` reads the gold out of the item."""

    parse: Callable[[str], complex | None]
    target: Callable[[Item], complex]
    rel_tol: float = 1e-6
    abs_tol: float = 1e-9

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_callable("ComplexNumber.parse", self.parse, optional=False)
        _check_callable("ComplexNumber.target", self.target, optional=False)
        check_number("ComplexNumber.rel_tol", self.rel_tol, low=0.0)
        check_number("ComplexNumber.abs_tol", self.abs_tol, low=0.0)

    def score(self, answer: str, item: Item) -> float:
        try:
            value, target = self.parse(answer), self.target(item)
        except Exception:  # noqa: BLE001  (the task's parser refuses a malformed answer by raising anything)
            return 0.0
        if value is None or cmath.isnan(value):
            return 0.0
        return 1.0 if abs(value - target) <= max(self.rel_tol * abs(target), self.abs_tol) else 0.0


# A duration as the time_intervals task writes it: "N days", "N days, HH:MM[:SS]", "HH:MM[:SS[.mmm]]". ASCII digits,
# minutes and seconds below 60, hours below 24 (the task's times of day), milliseconds as three digits.
_CLOCK = r"(?P<h>[01]?[0-9]|2[0-3]):(?P<m>[0-5][0-9])(?::(?P<s>[0-5][0-9])(?:\.(?P<ms>[0-9]{3}))?)?"
_DURATION = re.compile(
    rf"(?:(?P<days>[0-9]{{1,9}})(?:\s*days?)?(?:,\s*{_CLOCK})?|{_CLOCK.replace('?P<', '?P<t_')})",
    re.IGNORECASE | re.ASCII,
)


def _duration_parts(text: str) -> tuple[str, int] | None:
    """``(form, milliseconds)`` of a duration written as the task writes one, or None; form is days/clock/both."""
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        return None
    parts = match.groupdict()
    if parts["days"] is not None:
        days = int(parts["days"])
        if parts["h"] is None:
            return "days", days * 86_400_000
        clock = (parts["h"], parts["m"], parts["s"], parts["ms"])
        form = "both"
    else:
        days, clock, form = 0, (parts["t_h"], parts["t_m"], parts["t_s"], parts["t_ms"]), "clock"
    hours, minutes, seconds, millis = (int(value or 0) for value in clock)
    return form, ((days * 24 + hours) * 60 + minutes) * 60_000 + seconds * 1000 + millis


@dataclass(frozen=True)
class Duration(Comparison):
    """The gold's length of time, written in the gold's form (days, a clock, or both), with real minutes, seconds
    and hours of a day.

    >>> rule = Duration("linear credit by distance")
    >>> rule.compare("100 Days", "100 days"), rule.compare("6:09", "06:09"), rule.compare("06:09:00", "06:09")
    (1.0, 1.0, 1.0)
    >>> rule.compare("100 days, 05:00", "100 days"), rule.compare("14:34:59.1000", "14:35")
    (0.0, 0.0)
    """

    def compare(self, answer: str, gold: str) -> float:
        value, target = _duration_parts(answer), _duration_parts(gold)
        return 1.0 if value is not None and value == target else 0.0


# ------------------------------------------------------------------ the task's own scorer, kept


@dataclass(frozen=True)
class OwnRule(Rule):
    """The task's own scorer decides; the rule says what strict scoring pays for the score it gave."""

    def admits(self, answer: str) -> bool:
        """Whether the answer may be scored at all (else it earns 0.0 unscored)."""
        return True

    def score(self, answer: str, item: Item, own: float) -> float:
        raise NotImplementedError


@dataclass(frozen=True, kw_only=True)
class _Checked(OwnRule):
    """``shape``: a regular expression the stripped answer must match in full before the task's scorer is asked,
    for scorers whose parser reads the start of the text and ignores the rest. ``requires``: a test of the answer
    against the item that a full-credit answer must also pass, for scorers that pay answers the task does not
    ask for (it may raise: the env grades that a no-verdict)."""

    shape: re.Pattern[str] | None = None
    requires: Requirement | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.shape is not None:
            check_type(f"{type(self).__name__}.shape", self.shape, re.Pattern, "a compiled regular expression or None")
        _check_callable(f"{type(self).__name__}.requires", self.requires, optional=True)

    def admits(self, answer: str) -> bool:
        return self.shape is None or self.shape.fullmatch(answer.strip()) is not None


@dataclass(frozen=True, kw_only=True)
class OwnScorer(_Checked):
    """The task's scorer, unchanged: it pays only for content."""

    def score(self, answer: str, item: Item, own: float) -> float:
        if self.requires is not None and own >= 1.0 and not self.requires(answer, item):
            return 0.0
        return own


@dataclass(frozen=True, kw_only=True)
class OwnFullCredit(_Checked):
    """The task's scorer, full credit only: it accepts many valid answers (so it is needed) but pays consolation
    for wrong ones. ``also_full``: scores the task gives some valid answers by mislabel, paid in full when
    ``requires`` holds."""

    also_full: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_scores("OwnFullCredit.also_full", self.also_full)
        if self.also_full and self.requires is None:
            raise ValueError(
                "OwnFullCredit.also_full needs requires: a mislabelled score is paid only when the requirement holds"
            )

    def score(self, answer: str, item: Item, own: float) -> float:
        if self.requires is not None and (own >= 1.0 or _is_one_of(own, self.also_full)):
            return 1.0 if self.requires(answer, item) else 0.0
        return 1.0 if own >= 1.0 else 0.0


@dataclass(frozen=True, kw_only=True)
class OwnNoConsolation(OwnRule):
    """The task's scorer with its format-only ``consolation`` values zeroed; its other partial credit is earned
    by content."""

    consolation: tuple[float, ...]

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_scores("OwnNoConsolation.consolation", self.consolation)
        if not self.consolation:
            raise ValueError("OwnNoConsolation.consolation must name at least one score (else use OwnScorer)")

    def score(self, answer: str, item: Item, own: float) -> float:
        return 0.0 if _is_one_of(own, self.consolation) else own

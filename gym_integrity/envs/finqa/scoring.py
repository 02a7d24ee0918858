r"""FinQA answer scoring: numbers matched to their gold's precision (default) and the original FinQA 5-decimal rule.

Tolerant mode (``"tolerance"``), what a submitted answer may look like:

* read from the ``\boxed{}`` groups of the submission if it has any, else the plain string;
* ``$``, ``\$``, ``\text{...}``, thousands commas, unit words (``million``, ``bn``,
  ``percent``...) and surrounding text such as ``"about"`` are ignored;
* one reading of percent, on both sides: ``X%`` (or ``X percent``) is the value
  X/100 and a bare number is itself. ``"12.5%"`` and ``"0.125"`` match a gold
  ``"12.5%"`` or ``"0.125"``; ``"12.5"`` matches neither, and ``"12480%"`` is not
  $12,480 million. Reading ``%`` a second way (dropping it) made one answer
  correct for two different gold values (``"0.5"`` for ``"50%"`` and ``"0.5%"``);
* ``(1,204)`` is negative, ``745/1251`` is a fraction, the unicode minus works;
* a number matches to the precision its gold is written in (:func:`amounts_match`): at the gold's decimals
  or finer it must round to the gold (``57.24%`` for 57.2%, never ``57.3%``); coarser, it must be the gold
  rounded to its decimals and within 1% and 1.0 of it (``0.47`` for 0.47278, never ``0``);
* a gold that is a year (``2023``, ``FY2023``) is matched exactly, in a year's form or any amount's
  (``2023.0``, ``2,023``, ``$2,023``): never ``2023.4`` or the years beside it;
* several values (gold with several ``\boxed{}``, or split on ``,``/``;``)
  must all match, in order; ``2023: 5.1%, 2024: 6%`` style values match by year;
* non-numeric gold answers compare as normalised text.

Examples:
    >>> score_answer(r"\boxed{12,480}", r"\boxed{12,480}").verdict.value
    'correct'
    >>> [score_answer(p, "38.2%").score for p in ("38.2%", "0.382", "38.2", "38.3%", "38.24%", "38%", "39%")]
    [1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0]
    >>> [score_answer(p, "12,480").score for p in ("12480%", "12,480")], score_answer("12.5%", "0.125").score
    ([0.0, 1.0], 1.0)
    >>> score_answer("(1,204)", r"\boxed{-1,204}").score, score_answer("1,204", "-1,204").score
    (1.0, 0.0)
    >>> score_answer("2024: 640, 2022: 120, 2023: 315", r"\boxed{2022: 120, 2023: 315, 2024: 640}").score
    1.0
    >>> score_answer(r"\boxed{5120} and \boxed{3240}", r"\boxed{5,120}, \boxed{3,240}").score
    1.0
    >>> score_answer("0.5955", "745/1251").score, score_answer("Beverages.", "beverages").score
    (1.0, 1.0)
    >>> score_answer("", "5").verdict.value
    'no_answer'

The original FinQA rule (``"finqa_exact"``): both sides rounded to 5 decimals, then equal:
    >>> score_answer("0.14136", "0.141359", mode="finqa_exact").score
    1.0
    >>> score_answer("14.1%", "0.14136", mode="finqa_exact").score
    0.0
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from fractions import Fraction
from typing import NamedTuple

from gym_integrity.grading.numbers import GROUPED_DECIMAL
from gym_integrity.grading.reader import all_boxed
from gym_integrity.protocol import Grade, Verdict

__all__ = [
    "SCORING_MODES",
    "score_answer",
    "extract_submission",
    "read_submission",
    "Submission",
    "parse_number",
    "values_match",
    "amounts_match",
    "Amount",
]

SCORING_MODES = ("tolerance", "finqa_exact")

#: Longest submission scored; longer text is graded ``too_long`` (bounds the work).
MAX_ANSWER_CHARS = 2000
#: Most values one answer may list.
MAX_VALUES = 50

_TEXT_CMD = re.compile(r"\\(?:text|textbf|mathrm|mbox)\s*\{([^{}]*)\}")
_UNIT_WORDS = (
    "million",
    "millions",
    "billion",
    "billions",
    "thousand",
    "thousands",
    "mn",
    "bn",
    "m",
    "b",
    "k",
    "usd",
    "dollars",
    "dollar",
    "shares",
    "units",
    "gwh",
    "years",
    "year",
    "percentage",
    "percentage points",
    "percentage point",
    "pp",
    "points",
    "point",
    "bps",
)
_NUMBER = re.compile(
    rf"""(?P<sign>[-+\u2212]?)\s*(?P<open>\()?\s*(?P<sign2>[-+\u2212]?)\s*\$?\s*
        (?P<num>{GROUPED_DECIMAL})
        (?:\s*/\s*(?P<den>\d+(?:\.\d+)?))?
        \s*(?P<close>\))?\s*(?P<pct>%|percent(?!age))?""",
    re.VERBOSE | re.IGNORECASE,
)
_YEAR_KEY = re.compile(
    r"^\s*(?:fy\s*|fiscal\s+(?:year\s+)?|in\s+)?((?:19|20)\d{2})\s*(?::|=|-|\u2013)\s*(.+)$", re.IGNORECASE | re.DOTALL
)
#: A gold that is a year (which year had the highest margin?): matched exactly, never within the tolerance.
_YEAR = re.compile(r"(?:fy\s*|fiscal\s+(?:year\s+)?|in\s+)?((?:19|20)\d{2})", re.IGNORECASE)
# Split several values on ';' or on ',' unless the comma is a thousands separator
# (followed by exactly three digits and then a non-digit or the end).
_SPLIT = re.compile(r";|,(?!\d{3}(?:[^\d]|$))")


def extract_submission(text: str) -> list[str]:
    r"""The value strings of an answer: its ``\boxed{}`` groups (the grading layer's one reader,
    :func:`~gym_integrity.grading.all_boxed`), else the split plain string.

    >>> extract_submission(r"The answer is \boxed{12.5\%}")
    ['12.5\\%']
    >>> extract_submission("2022: 0.933, 2023: 0.930; 1,234")
    ['2022: 0.933', '2023: 0.930', '1,234']
    """
    boxes = all_boxed(text, limit=MAX_VALUES)
    if len(boxes) > 1:
        return boxes
    body = boxes[0] if boxes else text
    body = body.strip()
    if not body:
        return []
    if _amount(body) is not None:
        return [body]
    parts = [p.strip() for p in _SPLIT.split(body)]
    # "\;" and "\," are LaTeX spacing: drop the stray backslash a split leaves behind.
    parts = [p.rstrip("\\").strip() for p in parts]
    return [p for p in parts if p][:MAX_VALUES]


def _clean(text: str) -> str:
    text = _TEXT_CMD.sub(lambda m: " " + m.group(1) + " ", text)
    text = text.replace("\\%", "%").replace("\\$", "$").replace("\\,", "").replace("\\!", "").replace("\\ ", " ")
    text = text.replace("\\left", "").replace("\\right", "").replace("\u2212", "-").replace("\u2013", "-")
    frac = re.fullmatch(r"\s*(-?)\s*\\d?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}\s*(%?)\s*", text)
    if frac:
        text = f"{frac.group(1)}{frac.group(2)}/{frac.group(3)}{frac.group(4)}"
    return text.strip()


class Amount(NamedTuple):
    """One number as written: its exact value per unit (``%`` read as /100), and its decimals in that unit
    (``57.2%`` is 0.572, 3 decimals; ``1,648`` has 0; a ratio ``745/1251`` is exact: None)."""

    value: Fraction
    decimals: int | None
    percent: bool


def _amount(text: str) -> Amount | None:
    """The :class:`Amount` ``text`` is if it is one number (with optional unit words), else None."""
    text = _clean(text)
    if not text or len(text) > 200:
        return None
    match = None
    for m in _NUMBER.finditer(text):
        if match is not None:
            return None  # two numbers: not a single value
        match = m
    if match is None:
        return None
    rest = (text[: match.start()] + " " + text[match.end() :]).lower()
    words = re.sub(r"[^a-z ]", " ", rest).split()
    if any(
        word not in _UNIT_WORDS
        and word
        not in (
            "about",
            "approximately",
            "approx",
            "is",
            "the",
            "answer",
            "of",
            "a",
            "an",
            "in",
            "to",
            "up",
            "down",
            "by",
            "or",
            "usd",
        )
        for word in words
    ):
        return None
    num = match.group("num").replace(",", "")
    value = Fraction(num)
    decimals: int | None = len(num.partition(".")[2])
    if match.group("den") is not None:
        den = Fraction(match.group("den"))
        if den == 0:
            return None
        value, decimals = value / den, None
    negative = "-" in (match.group("sign") + match.group("sign2")) or "\u2212" in match.group("sign")
    if bool(match.group("open")) and bool(match.group("close")):
        negative = True
    elif bool(match.group("open")) != bool(match.group("close")):
        return None
    percent = match.group("pct") is not None
    if percent:
        value, decimals = value / 100, None if decimals is None else decimals + 2
    return Amount(-value if negative else value, decimals, percent)


def parse_number(text: str, percent_as_fraction: bool = True) -> float | None:
    """A number from ``text``: ``$``, commas, ``%`` (as /100 unless told not to), ``(x)``, ``a/b``.

    >>> parse_number("$1,234.5 million"), parse_number("(386)"), parse_number("12.5%"), parse_number("3/4")
    (1234.5, -386.0, 0.125, 0.75)
    >>> parse_number("24.1%", percent_as_fraction=False), parse_number("n/a")
    (24.1, None)
    """
    amount = _amount(text)
    if amount is None:
        return None
    as_written = amount.percent and not percent_as_fraction
    return float(amount.value * 100 if as_written else amount.value)


def _normalise_text(text: str) -> str:
    text = _clean(text).lower()
    text = re.sub(r"[\s_\-]+", " ", text)
    text = re.sub(r"[^\w ]", "", text)
    return " ".join(text.split())


def _within_tolerance(pred: Fraction, gold: Fraction, rel_tol: float, abs_tol: float) -> bool:
    if gold == 0:
        return abs(pred) < Fraction(1, 1000)
    diff = abs(pred - gold)
    return diff <= Fraction(rel_tol) * abs(gold) and diff <= Fraction(abs_tol)


def amounts_match(pred: Amount, gold: Amount, rel_tol: float = 0.01, abs_tol: float = 1.0) -> bool:
    """The precision rule: two numbers agree to the coarser of the precisions they are written in.

    At the gold's precision or finer, the answer must round to the gold: lie within half a unit of the gold's
    last decimal (``57.24%`` and ``57.2%`` for 57.2%, not ``57.3%``; ties pass either way, as a gold may have
    been rounded half up or half even). Coarser than the gold, it must be the gold rounded to the answer's
    decimals (``0.47`` for 0.47278, not ``0.48``) and within ``rel_tol`` and ``abs_tol`` of it, so that
    ``0`` is no answer to 0.382. Decimals count in the same unit on both sides (``57.2%`` is 0.572: 3).

    >>> [amounts_match(_amount(p), _amount("57.2%")) for p in ("0.572", "57.24%", "57.3%", "57%", "0.6")]
    [True, True, False, True, False]
    """
    if pred.decimals is None and gold.decimals is None:
        return pred.value == gold.value
    diff = abs(pred.value - gold.value)
    if pred.decimals is None or (gold.decimals is not None and pred.decimals >= gold.decimals):
        return 2 * diff * 10**gold.decimals <= 1  # type: ignore[operator]
    return 2 * diff * 10**pred.decimals <= 1 and _within_tolerance(pred.value, gold.value, rel_tol, abs_tol)


def _is_year(pred: str, year: str) -> bool:
    """A year gold is matched exactly, in a year's form (``FY2023``, ``fiscal 2023``) or any amount's
    (``2023.0``, ``2,023``, ``$2,023``): the precision rule would pay ``2023.4``, a tolerance the years beside it."""
    said = _YEAR.fullmatch(_clean(pred).rstrip(". "))
    if said is not None:
        return said.group(1) == year
    amount = _amount(pred)
    return amount is not None and not amount.percent and amount.value == int(year)


def values_match(pred: str, gold: str, rel_tol: float = 0.01, abs_tol: float = 1.0) -> bool:
    """One submitted value against one gold value (tolerant mode).

    >>> values_match("12.6%", "12.5%"), values_match("12.5", "12.5%"), values_match("0.125", "12.5")
    (False, False, False)
    >>> values_match("12.5%", "12.5"), values_match("0.125", "12.5%"), values_match("12.5%", "0.125")
    (False, True, True)
    >>> [values_match(p, "2023") for p in ("2024", "FY2023", "2,023", "$2,023", "2023.0", "2023.4", "2,022")]
    [False, True, True, True, True, False, False]
    """
    year = _YEAR.fullmatch(_clean(gold))
    if year:
        return _is_year(pred, year.group(1))
    gold_num, pred_num = _amount(gold), _amount(pred)
    if gold_num is None:
        return pred_num is None and _normalise_text(pred) == _normalise_text(gold) != ""
    if pred_num is None:
        return False
    # '%' means per hundred on either side, and only that: a second reading (dropping it) paid "12480%" for
    # 12,480 and made "0.5" correct for both "50%" and "0.5%".
    return amounts_match(pred_num, gold_num, rel_tol, abs_tol)


def _year_keyed(values: list[str]) -> dict[str, str] | None:
    keyed: dict[str, str] = {}
    for value in values:
        m = _YEAR_KEY.match(_clean(value))
        if m is None or m.group(1) in keyed:
            return None
        keyed[m.group(1)] = m.group(2).strip()
    return keyed


class Submission(NamedTuple):
    """An answer read once: its values, and the same values by year when every one is keyed by a year."""

    values: list[str]
    by_year: dict[str, str] | None


def read_submission(text: str) -> Submission:
    r"""The one reading of an answer (or a gold): every rule after it matches these strings and reads no other.

    >>> read_submission(r"\boxed{2023: 12.7\%, 2024: 17.6\%}")
    Submission(values=['2023: 12.7\\%', '2024: 17.6\\%'], by_year={'2023': '12.7%', '2024': '17.6%'})
    """
    values = extract_submission(text)
    return Submission(values, _year_keyed(values) if values else None)


def _lists_match(pred: Submission, gold: Submission, rel_tol: float, abs_tol: float) -> bool:
    if gold.by_year is not None and pred.by_year is not None:
        return set(gold.by_year) == set(pred.by_year) and all(
            values_match(pred.by_year[y], gold.by_year[y], rel_tol, abs_tol) for y in gold.by_year
        )
    gold_values = gold.values if gold.by_year is None else list(gold.by_year.values())  # in the gold order
    if len(pred.values) != len(gold_values):
        return False
    return all(values_match(p, g, rel_tol, abs_tol) for p, g in zip(pred.values, gold_values))


def _exact_match(pred: list[str], gold: list[str]) -> bool:
    if len(pred) != len(gold):
        return False
    for p, g in zip(pred, gold):
        g_num, p_num = parse_number(g), parse_number(p)
        if g_num is None:
            if p_num is not None or _normalise_text(p) != _normalise_text(g):
                return False
        elif p_num is None or round(p_num, 5) != round(g_num, 5):
            return False
    return True


def score_answer(
    submitted: str, gold: str | Iterable[str], mode: str = "tolerance", rel_tol: float = 0.01, abs_tol: float = 1.0
) -> Grade:
    """Grade ``submitted`` against one gold answer or several accepted forms of it (any may match).

    Returns a :class:`~gym_integrity.protocol.Grade`: ``correct`` (1.0),
    ``incorrect`` (0.0), ``no_answer`` (empty) or ``too_long``. Total over
    ``str``: never raises on what a model writes.
    """
    if mode not in SCORING_MODES:
        raise ValueError(f"scoring mode must be one of {SCORING_MODES}, got {mode!r}")
    golds = [gold] if isinstance(gold, str) else [str(g) for g in gold]
    if not isinstance(submitted, str):
        submitted = str(submitted)
    if len(submitted) > MAX_ANSWER_CHARS:
        return Grade(Verdict.TOO_LONG, 0.0)
    pred = read_submission(submitted)
    if not pred.values:
        return Grade(Verdict.NO_ANSWER, 0.0)
    for g in golds:
        gold_reading = read_submission(g)
        if not gold_reading.values:
            continue
        if mode == "finqa_exact":
            ok = _exact_match(pred.values, gold_reading.values)
        else:
            ok = _lists_match(pred, gold_reading, rel_tol, abs_tol)
        if ok:
            return Grade(Verdict.CORRECT, 1.0)
    return Grade(Verdict.INCORRECT, 0.0)

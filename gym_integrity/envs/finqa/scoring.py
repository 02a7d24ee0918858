r"""FinQA answer scoring: numbers matched to their gold's precision (default) and the original FinQA 5-decimal rule.

Tolerant mode (``"tolerance"``), what a submitted answer may look like (one number is read by
:func:`~gym_integrity.envs.finqa.amounts.read_amount`):

* read from the ``\boxed{}`` groups of the submission if it has any, else the plain string;
* around the number, only a whitelist: spaces, ``$``/``US$``, ``. , : ; ! ?``, quotes, and words of
  :data:`~gym_integrity.envs.finqa.amounts.VOCABULARY` (``about``, ``the answer is``, ``shares``, scale,
  point and direction words); any other character (``±``, ``≠``, ``~``, ``[ ]``, ``➖``) or word makes the
  value unreadable, graded incorrect. Text is NFKC-normalised first (``（787）``, ``１２，４８０``);
* one sign marker at most: ``-787``, ``(787)``, ``$-787``, ``down 787`` are -787, ``--787``, ``-(787)``,
  ``(-787)``, ``down -787`` are no number; a direction word is a sign (``down by 24`` is -24, ``up 24`` is 24);
* a scale word (``thousand``/``k``, ``million``/``mn``/``mm``/``m``, ``billion``/``bn``/``b``) never scales the
  value (``1.5 billion`` is not 1500); it must be the gold's scale, or on a gold that states none the one the
  question's text asks in (``question``: ``in millions``), else it is refused (``12,480 billion`` is not a
  bare 12,480 of a question in millions; ``$12,480 million`` is);
* ``percentage points``/``points``/``pp`` and ``basis points``/``bps`` (a hundredth of a point) are units:
  paid only for a gold in points (written so, or bare in a question asking in percentage or basis points),
  converted (``-160 bps`` is -1.6 points; ``-1.6 bps`` is not); a percent gold takes no point amount;
* one reading of percent, on both sides: ``X%`` (or ``X percent``) is the value
  X/100 and a bare number is itself. ``"12.5%"`` and ``"0.125"`` match a gold
  ``"12.5%"`` or ``"0.125"``; ``"12.5"`` matches neither, and ``"12480%"`` is not
  $12,480 million. Reading ``%`` a second way (dropping it) made one answer
  correct for two different gold values (``"0.5"`` for ``"50%"`` and ``"0.5%"``);
* ``(1,204)`` is negative, ``745/1251`` is a fraction, the unicode minus works;
* a number matches to the precision its gold is written in (:func:`amounts_match`), the gold being the true
  value rounded half away from zero: at the gold's decimals or finer it must round to the gold (``57.24%``
  for 57.2%, never ``57.3%``; the tie ``43.5`` pays 44, never 43); coarser, it must be the gold rounded to its
  decimals and within 1% and 1.0 of it (``0.47`` for 0.47278, never ``0``);
* a gold that is a year (``2023``, ``FY2023``) is matched exactly, in a year's form only (``FY2023``, ``In
  fiscal 2023``, ``The year 2023``, ``2023.0``, ``2,023``): never ``2023.4``, the years beside it, a year with
  a unit (``2023 million``, ``$2,023``) or an amount equal to it (``4046/2``, ``+2023``, ``2023/1``);
* several values (gold with several ``\boxed{}``, or split on ``,``, ``;``, a line break, `` and ``, ``&`` or
  a spaced `` / ``: ``745/1251`` is a ratio, ``745 / 1251`` two values) must all match, in order;
  ``2023: 5.1%, 2024: 6%`` style values (key and value joined by ``:`` or ``=`` only) match by year;
* non-numeric gold answers compare as normalised text.

The accepted forms of one gold (``score_answer``'s list; FinQAEnv passes ``Question.answers``):

* benchmark CSV and hub questions: one form, the ``answer`` cell;
* original FinQA records (``sources.load_finqa_records``): ``exe_ans``, the program's result as FinQA stores
  it (``-0.0626``, up to 10 decimals), then ``qa.answer``, the annotator's rounding (``-6.3%``); forms the
  scorer cannot read are dropped at load.

None of them widens the match. A form that is another, finer form rounded half away from zero to its decimals
(same value, same scale) is folded into it (:func:`accepted_forms`): the answer is held to the finest digits,
so a rounding of that value passes and another last digit does not (``-0.0631`` is not -0.0626, though it
rounds to -6.3%), and the coarse form only spares the tolerance for answers at its decimals or finer. Forms
that disagree (a ``qa.answer`` that is not the ``exe_ans`` rounded, a multi-value gold) stay separate golds,
each matched by the same rule: the data accept both.

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
    >>> asked = "What was net revenue, in millions of dollars?"
    >>> [score_answer(p, "12,480", question=asked).score for p in ("$12,480 million", "12,480 bn", "±12,480")]
    [1.0, 0.0, 0.0]
    >>> [score_answer(p, "-1.6", question="By how many percentage points?").score for p in ("-160 bps", "-1.6 bps")]
    [1.0, 0.0]
    >>> score_answer("down by 24", "-24").score, score_answer("2024 -55", "2024: 55").score
    (1.0, 0.0)
    >>> [score_answer(p, ["-0.0626", "-6.3%"]).score for p in ("-6.3%", "-0.063", "-6.26%", "-0.0631", "-0.0635")]
    [1.0, 1.0, 1.0, 0.0, 0.0]
    >>> [score_answer(p, "-787").score for p in ("(787)", "$-787", "-(787)", "--787")]
    [1.0, 1.0, 0.0, 0.0]
    >>> score_answer("", "5").verdict.value
    'no_answer'

The original FinQA rule (``"finqa_exact"``): both sides rounded to 5 decimals, then equal:
    >>> score_answer("0.14136", "0.141359", mode="finqa_exact").score
    1.0
    >>> score_answer("14.1%", "0.14136", mode="finqa_exact").score
    0.0
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import NamedTuple

from gym_integrity.envs.finqa.amounts import (
    UNSTATED,
    Amount,
    Asked,
    amounts_match,
    asked_in,
    clean,
    comparable,
    parse_number,
    read_amount,
    round_half_away,
    unemphasised,
)
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
    "accepted_forms",
]

SCORING_MODES = ("tolerance", "finqa_exact")

#: Longest submission scored; longer text is graded ``too_long`` (bounds the work).
MAX_ANSWER_CHARS = 2000
#: Most values one answer may list.
MAX_VALUES = 50

# A year key is a year, ':' or '=' and the value (a list's bullet before it is dropped). A dash was a separator
# too, and took the value's own sign: "2024 -55" was 2024: 55.
_YEAR_KEY = re.compile(
    r"^\s*(?:[-*\u2022]\s+)?(?:fy\s*|fiscal\s+(?:year\s+)?|in\s+)?((?:19|20)\d{2})\s*[:=]\s*(.+)$",
    re.IGNORECASE | re.DOTALL,
)
#: A gold that is a year (which year had the highest margin?): matched exactly, never within the tolerance.
_YEAR = re.compile(r"(?:fy\s*|fiscal\s+(?:year\s+)?|in\s+)?((?:19|20)\d{2})", re.IGNORECASE)
#: The forms an answer to a year gold may take: the year's digits (``2,023``, ``2023.0`` too) after ``FY``,
#: ``fiscal (year)``, ``(in) (the) year`` or ``in``; never a ratio, a sign or a unit.
_YEAR_FORM = re.compile(
    r"(?:in\s+)?(?:the\s+)?(?:fy\s*|fiscal\s+(?:year\s+)?|year\s+)?((?:19|20)\d{2}|(?:1,9|2,0)\d{2})(?:\.0+)?",
    re.IGNORECASE,
)
# Split several values on ';', a line break, ' and ', '&', ' / ' (spaced: '745/1251' is a ratio), or ',' unless
# the comma is a thousands separator (followed by exactly three digits and then a non-digit or the end).
# The spaces around 'and' and '/' are lookarounds (a run of spaces is not rescanned from each of its positions).
_SPLIT = re.compile(r";|\n|&|(?<=\s)(?:and|/)(?=\s)|,(?!\d{3}(?:[^\d]|$))", re.IGNORECASE)


def extract_submission(text: str) -> list[str]:
    r"""The value strings of an answer: its ``\boxed{}`` groups (the grading layer's one reader,
    :func:`~gym_integrity.grading.all_boxed`), else the split plain string.

    >>> extract_submission(r"The answer is \boxed{12.5\%}")
    ['12.5\\%']
    >>> extract_submission("2022: 0.933, 2023: 0.930; 1,234")
    ['2022: 0.933', '2023: 0.930', '1,234']
    >>> extract_submission("5,120 and $3,240 million"), extract_submission("2023: 5%\n2024: 6% / 7 & 8")
    (['5,120', '$3,240 million'], ['2023: 5%', '2024: 6%', '7', '8'])
    """
    boxes = all_boxed(text, limit=MAX_VALUES)
    if len(boxes) > 1:
        return boxes
    body = unemphasised(boxes[0] if boxes else text)  # "**2023: 5%, 2024: 6%**": the bold is the whole answer's
    if not body:
        return []
    if read_amount(body) is not None:
        return [body]
    parts = [p.strip() for p in _SPLIT.split(body)]
    # "\;" and "\," are LaTeX spacing: drop the stray backslash a split leaves before a separator (only there: a
    # backslash that ends the answer is no separator's, and "0.01\" is no amount).
    parts = [p.rstrip("\\").strip() for p in parts[:-1]] + parts[-1:]
    return [p for p in parts if p][:MAX_VALUES]


def _normalise_text(text: str) -> str:
    text = clean(text).lower()
    text = re.sub(r"[\s_\-]+", " ", text)
    text = re.sub(r"[^\w ]", "", text)
    return " ".join(text.split())


def _is_year(pred: str, year: str) -> bool:
    """A year gold is matched exactly, in a year's form only (:data:`_YEAR_FORM`: ``2023``, ``FY2023``, ``In fiscal
    2023``, ``The year 2023``, ``2023.0``, ``2,023``). The precision rule would pay ``2023.4``, a tolerance the
    years beside it; an amount equal to the year is not the year either (``4046/2``, ``+2023``, ``$2,023``)."""
    said = _YEAR_FORM.fullmatch(clean(pred).rstrip(". "))
    return said is not None and said.group(1).replace(",", "") == year


def values_match(
    pred: str,
    gold: str,
    rel_tol: float = 0.01,
    abs_tol: float = 1.0,
    stated: int | None = None,
    asked: Asked = UNSTATED,
) -> bool:
    """One submitted value against one gold value (tolerant mode); ``stated`` and ``asked`` as in
    :func:`amounts_match`.

    >>> values_match("12.6%", "12.5%"), values_match("12.5", "12.5%"), values_match("0.125", "12.5")
    (False, False, False)
    >>> values_match("12.5%", "12.5"), values_match("0.125", "12.5%"), values_match("12.5%", "0.125")
    (False, True, True)
    >>> [values_match(p, "2023") for p in ("2024", "FY2023", "2,023", "2023.0", "$2,023", "2023 million", "2023.4")]
    [False, True, True, True, False, False, False]
    >>> [values_match(p, "2023") for p in ("In fiscal 2023", "The year 2023.", "4046/2", "+2023", "2023/1")]
    [True, True, False, False, False]
    """
    year = _YEAR.fullmatch(clean(gold))
    if year:
        return _is_year(pred, year.group(1))
    gold_num, pred_num = read_amount(gold), read_amount(pred)
    if gold_num is None:
        return pred_num is None and _normalise_text(pred) == _normalise_text(gold) != ""
    if pred_num is None:
        return False
    # '%' means per hundred on either side, and only that: a second reading (dropping it) paid "12480%" for
    # 12,480 and made "0.5" correct for both "50%" and "0.5%".
    return amounts_match(pred_num, gold_num, rel_tol, abs_tol, stated, asked)


def _year_keyed(values: list[str]) -> dict[str, str] | None:
    keyed: dict[str, str] = {}
    for value in values:
        m = _YEAR_KEY.match(clean(value))
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


def _lists_match(
    pred: Submission, gold: Submission, rel_tol: float, abs_tol: float, stated: int | None, asked: Asked
) -> bool:
    if gold.by_year is not None and pred.by_year is not None:
        return set(gold.by_year) == set(pred.by_year) and all(
            values_match(pred.by_year[y], gold.by_year[y], rel_tol, abs_tol, None, asked) for y in gold.by_year
        )
    gold_values = gold.values if gold.by_year is None else list(gold.by_year.values())  # in the gold order
    pred_values = pred.values
    if gold.by_year is None and pred.by_year is not None and set(pred.by_year) == set(asked.years):
        # an unkeyed gold of a question that names one year per value, in the gold's order ("in 2022 and in 2024,
        # 2022 first"): a keyed answer is read in the question's order of its years
        pred_values = [pred.by_year[year] for year in asked.years]
    if len(pred_values) != len(gold_values):
        return False
    # ``stated`` is a single gold value's (accepted_forms folds no list)
    return all(values_match(p, g, rel_tol, abs_tol, stated, asked) for p, g in zip(pred_values, gold_values))


def _one_amount(gold: Submission) -> Amount | None:
    """The amount a gold is, if it is one number (not a year, not several values)."""
    if gold.by_year is not None or len(gold.values) != 1 or _YEAR.fullmatch(clean(gold.values[0])):
        return None
    return read_amount(gold.values[0])


def _rounds_to(fine: Amount, coarse: Amount) -> bool:
    """``coarse`` is ``fine`` written to fewer (or as many) decimals, rounded half away from zero, same scale."""
    if fine.scale != coarse.scale or fine.points != coarse.points:
        return False
    if coarse.decimals is None:
        return fine.decimals is None and fine.value == coarse.value
    finer = fine.decimals is None or fine.decimals >= coarse.decimals
    return finer and round_half_away(fine.value, coarse.decimals) == coarse.value


def accepted_forms(golds: list[Submission]) -> list[tuple[Submission, int | None]]:
    """The accepted forms of one gold, each with the fewest decimals the data write its value in (``stated``).

    A form that is a finer form rounded half away from zero is folded into the finer one, and only lends it its
    decimals: an answer is held to the finest digits the data give (a rounding of that value passes, another
    last digit does not), and the tolerance is spared at the coarse form's decimals and finer. Matched on its own,
    FinQA's ``-6.3%`` beside the ``exe_ans`` -0.0626 paid every answer that rounds to it, ``-0.0631`` too.

    >>> [(g.values, stated) for g, stated in accepted_forms([read_submission(f) for f in ("-0.0626", "-6.3%")])]
    [(['-0.0626'], 3)]
    """
    amounts = [_one_amount(g) for g in golds]
    finest_first = sorted(
        range(len(golds)), key=lambda i: -math.inf if (a := amounts[i]) is None or a.decimals is None else -a.decimals
    )
    stated: dict[int, int | None] = {}
    for i in finest_first:
        amount = amounts[i]
        if amount is None:  # text, a year, several values: a gold of its own
            stated[i] = None
            continue
        home = next((k for k in stated if (fine := amounts[k]) is not None and _rounds_to(fine, amount)), None)
        if home is None:
            stated[i] = amount.decimals
        elif amount.decimals is not None:  # an exact form equal to a kept one lends nothing
            held = stated[home]
            stated[home] = amount.decimals if held is None else min(held, amount.decimals)
    return [(golds[i], stated[i]) for i in sorted(stated)]


def _exact_match(pred: list[str], gold: list[str], asked: Asked) -> bool:
    if len(pred) != len(gold):
        return False
    for p, g in zip(pred, gold):
        g_num, p_num = read_amount(g), read_amount(p)
        if g_num is None:
            if p_num is not None or _normalise_text(p) != _normalise_text(g):
                return False
            continue
        units = None if p_num is None else comparable(p_num, g_num, asked)  # the same unit rule as tolerant mode
        if units is None or round(float(units[0].value), 5) != round(float(units[1].value), 5):
            return False
    return True


def score_answer(
    submitted: str,
    gold: str | Iterable[str],
    mode: str = "tolerance",
    rel_tol: float = 0.01,
    abs_tol: float = 1.0,
    question: str = "",
) -> Grade:
    """Grade ``submitted`` against one gold answer or several accepted forms of it (any may match).

    ``question`` is the question's text as the agent saw it: the scale and the point unit it asks in
    (:func:`~gym_integrity.envs.finqa.amounts.asked_in`) are the only scale and point words a gold that states
    none accepts.

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
    readings = [r for r in (read_submission(g) for g in golds) if r.values]
    asked = asked_in(question)
    if mode == "finqa_exact":
        ok = any(_exact_match(pred.values, r.values, asked) for r in readings)
    else:
        ok = any(_lists_match(pred, r, rel_tol, abs_tol, stated, asked) for r, stated in accepted_forms(readings))
    return Grade(Verdict.CORRECT, 1.0) if ok else Grade(Verdict.INCORRECT, 0.0)

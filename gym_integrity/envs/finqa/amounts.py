r"""One FinQA amount: how a number is read from an answer or a gold, and when two numbers agree.

Reading (:func:`read_amount`): one number, optionally with ``$``, thousands commas, a ``%`` (or ``percent``,
``pct``, ``per cent``: read as /100), a ratio ``745/1251``, and words of a fixed vocabulary around it.

* **A whitelist, not a blacklist.** Around the number an amount may hold spaces, ``$`` (``US$``), the
  punctuation ``. , : ; ! ?``, quotes, markdown ``*``, and the words of :data:`VOCABULARY` (scale, unit,
  direction and filler words; a hyphen between words and parentheses around words are spaces). Any other
  character or word makes the text no amount (graded incorrect): ``±12,480``, ``≠ 12,480``, ``~12,480``,
  ``[12,480]`` and ``➖12,480`` are not 12,480. Every character outside the whitelist used to be dropped, so a
  mark that means "minus", "not" or "less than" was paid as the number beside it. Text is NFKC-normalised
  first (``１２，４８０`` and ``（787）`` are ``12,480`` and ``(787)``, ``⁻5`` is ``-5``) but for other-number
  characters (``²``, ``①``, ``½``): they are refused, where NFKC would make ``1²`` the number 12.
* **One sign at most.** ``-787``, ``+787``, ``(787)`` (accounting), ``$-787``, ``-$787``, ``$(787)`` and a
  direction word (``down 787``, ``a decrease of 787``: -787; ``up 787``: 787) are numbers; ``--787``,
  ``-(787)``, ``(-787)``, ``-$-5``, ``down -787``, two direction words, or a sign left anywhere else
  (``787-``) are not.
* **Scale words are read, never applied.** ``thousand``/``k``, ``million``/``mn``/``mm``/``m`` and
  ``billion``/``bn``/``b`` set :attr:`Amount.scale` and leave the value as written (``1.5 billion`` is 1.5):
  FinQA's tables are in millions and their golds written bare or as ``$1,648 million``. One at most.
* **Points.** ``percentage points``, ``points`` and ``pp`` (:attr:`Amount.points` ``"pp"``), ``basis points``
  and ``bps`` (``"bps"``: a hundredth of a point) are units: compared in points, never ignored.
* A percent or a point amount takes no scale, currency or other unit (``5% million``, ``$5 pp``: no amount).
  :attr:`Amount.bare` says whether the number came alone (no ``$``, ``%``, unit or scale word).

Matching (:func:`amounts_match`): the units must agree first (:func:`comparable`). A scale word must be the
gold's, or, on a gold that states none, the one its question asks in (:class:`Asked`, from the question's
text: ``in millions``); with neither, no scale word is paid (``12,480 billion`` is not a bare 12,480). A unit word
(``shares``, ``GWh``, ``years``) must be the gold's or one the question names, and currency is free only where
the question names no other unit (``12,480 years`` is not 12,480 in millions of dollars). A percent
gold takes a percent or a bare fraction; a point answer needs a gold in points (written so, or a bare gold of a
question asked in percentage or basis points). Then the number is matched to the precision its gold is written
in. A gold is the true value rounded half away from zero (:func:`round_half_away`) to its decimals, so an
answer at the gold's decimals or finer is paid when it rounds, the same way, to the gold: ``43.5`` pays 44 and
not 43. No answer at least as fine as two golds written at one precision is paid for both.

>>> read_amount("-$1,648 million")
Amount(value=Fraction(-1648, 1), decimals=0, percent=False, scale=6, bare=False, points=None, unit='$')
>>> [read_amount(t) is None for t in ("(787)", "-(787)", "--132", "(-787)", "-$-5", "787-", "5 apples", "±5")]
[False, True, True, True, True, True, True, True]
>>> read_amount("$1,648 (in billions)").scale, read_amount("-1.6 percentage-points").points
(9, 'pp')
>>> [read_amount(t).value for t in ("（787）", "down by 24", "１２，４８０")]
[Fraction(-787, 1), Fraction(-24, 1), Fraction(12480, 1)]
>>> [amounts_match(read_amount("43.5"), read_amount(g)) for g in ("43", "44")]
[False, True]
"""

from __future__ import annotations

import math
import re
import unicodedata
from fractions import Fraction
from functools import lru_cache
from typing import NamedTuple

from gym_integrity.grading.numbers import GROUPED_DECIMAL

__all__ = [
    "Amount",
    "Asked",
    "UNSTATED",
    "read_amount",
    "parse_number",
    "clean",
    "unemphasised",
    "round_half_away",
    "amounts_match",
    "comparable",
    "asked_in",
    "SCALES",
    "VOCABULARY",
]

_TEXT_CMD = re.compile(r"\\(?:text|textbf|textrm|textit|mathrm|mathbf|mathit|mbox)\s*\{([^{}]*)\}")
_MATH_DELIMITER = re.compile(r"\\[()\[\]]")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_MARKDOWN = re.compile(r"\s*(\*\*|\*|`)(.+)\1\s*", re.DOTALL)
#: The scale words, and the power of ten each states.
SCALES = {
    **dict.fromkeys(("thousand", "thousands", "k"), 3),
    **dict.fromkeys(("million", "millions", "mn", "mm", "m"), 6),
    **dict.fromkeys(("billion", "billions", "bn", "b"), 9),
}
# Unit words (they make the amount not bare; one must be the gold's or named by the question, :func:`comparable`),
# each with its one spelling ("$" for currency), and the point units.
_UNITS = {
    **dict.fromkeys(("usd", "dollars", "dollar"), "$"),
    **{"shares": "shares", "units": "units", "gwh": "gwh", "years": "years", "year": "years"},
}
_UNIT_WORDS = frozenset(_UNITS)
_POINT_UNITS = frozenset(("pp", "bps"))
# A direction word is a sign: -1 or +1.
_DIRECTIONS = {
    **dict.fromkeys("down decrease decreased decline declined lower fell minus negative loss".split(), -1),
    **dict.fromkeys("up increase increased rise rose higher grew growth gain plus positive".split(), 1),
}
_FILLER_WORDS = frozenset("about approximately approx is the answer final of a an in by net".split())
#: Every word an amount may hold besides its number.
VOCABULARY = frozenset(SCALES) | _UNIT_WORDS | _POINT_UNITS | frozenset(_DIRECTIONS) | _FILLER_WORDS
# A ratio's slash is unspaced (745/1251): a spaced one separates two values (scoring._SPLIT).
_NUMBER = re.compile(
    rf"""(?P<sign>[-+]?)\s*(?P<open>\()?\s*(?P<sign2>[-+]?)\s*\$?\s*
        (?P<num>{GROUPED_DECIMAL})
        (?:/(?P<den>\d+(?:\.\d+)?))?
        \s*(?:(?P<pct_in>%|percent(?!age))\s*(?=\)))?(?P<close>\))?\s*(?P<pct>%|percent(?!age))?""",
    re.VERBOSE | re.IGNORECASE,
)
_PERCENT_WORDS = re.compile(r"\b(?:per\s+cent|pct)\b", re.IGNORECASE)
# A unit spelled out as the question spells it: "gigawatt-hours" is GWh.
_GWH_WORDS = re.compile(r"\bgigawatt[\s-]*hours?\b", re.IGNORECASE)
# Neither a hyphen inside a phrase ("percentage-points") nor the parentheses around words ("(in millions)") is a
# sign: both become spaces, the words stay (a scale in parentheses is still a scale).
_WORD_HYPHEN = re.compile(r"(?<=[a-z])-(?=[a-z])")
_WORDS_IN_PARENS = re.compile(r"\(\s*([a-z][a-z\s]*)\)")
_PHRASES = re.compile(r"\b(?:(percentage\s+points?|points?|pp)|(basis\s+points?|bps?))\b")
_US_DOLLAR = re.compile(r"\bUS\s*\$", re.IGNORECASE)
# What may stand around the number once the phrases are read: letters (checked as words), spaces, $, . , : ; ! ?,
# quotes and markdown emphasis. Nothing else: a sign, a bracket, a relation or a dash left over is no amount.
_REST = re.compile(r"[a-z\s$.,:;!?*`'\"\u2018\u2019\u201c\u201d]*")


@lru_cache(maxsize=4096)
def _compatible(char: str) -> str:
    # NFKC reads a fullwidth or small form as its plain character; an other-number character (a superscript or
    # circled digit, a vulgar fraction, a Roman numeral) would become digits or letters that join the number
    # beside it or read as a scale (Ⅿ, 1000, as "M"): it stays, unread.
    return char if unicodedata.category(char) in ("No", "Nl") else unicodedata.normalize("NFKC", char)


def clean(text: str) -> str:
    r"""``text`` NFKC-normalised, with LaTeX's ``\text{}``, ``\%``, ``\$``, spacing, math delimiters, ``{,}`` and
    ``\frac{a}{b}`` written plainly, and a markdown emphasis around it dropped.

    >>> clean(r"\(\tfrac{745}{1251}\)"), clean("**１２{,}４８０**"), clean(r"\text{12\,480}\%")
    ('745/1251', '12,480', '12480 %')
    """
    if not text.isascii():
        text = _NON_ASCII.sub(lambda m: _compatible(m.group()), text)
    text = _TEXT_CMD.sub(lambda m: " " + m.group(1) + " ", text)
    text = text.replace("\\%", "%").replace("\\$", "$").replace("\\,", "").replace("\\!", "").replace("\\ ", " ")
    text = text.replace("\\left", "").replace("\\right", "").replace("\u2212", "-").replace("\u2013", "-")
    text = _MATH_DELIMITER.sub(" ", text).replace("{,}", ",")
    frac = re.fullmatch(r"\s*(-?)\s*\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}\s*(%?)\s*", text)
    if frac:
        text = f"{frac.group(1)}{frac.group(2)}/{frac.group(3)}{frac.group(4)}"
    return unemphasised(text)


def unemphasised(text: str) -> str:
    """``text`` stripped, without a markdown emphasis (``**``, ``*``, a backquote) around the whole of it."""
    emphasis = _MARKDOWN.fullmatch(text)
    return (emphasis.group(2) if emphasis else text).strip()


class Amount(NamedTuple):
    """One number as written: its exact value per unit (``%`` read as /100), its decimals in that unit
    (``57.2%`` is 0.572, 3 decimals; ``1,648`` has 0; a ratio ``745/1251`` is exact: None), the scale it
    states (3, 6 or 9; None: none), whether it came with no ``$``, ``%``, unit or scale word, and its point
    unit (``"pp"``, ``"bps"``; None: none), in which the value counts."""

    value: Fraction
    decimals: int | None
    percent: bool
    scale: int | None = None
    bare: bool = True
    points: str | None = None
    unit: str | None = None


def _point_unit(match: re.Match[str]) -> str:
    return " pp " if match.group(1) else " bps "


def read_amount(text: str) -> Amount | None:
    """The :class:`Amount` ``text`` is if it is one number with words of :data:`VOCABULARY`, else None."""
    text = _US_DOLLAR.sub("$", _GWH_WORDS.sub(" gwh ", _PERCENT_WORDS.sub("percent", clean(text))))
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
    rest = _PHRASES.sub(_point_unit, _WORDS_IN_PARENS.sub(r" \1 ", _WORD_HYPHEN.sub(" ", rest)))
    if not _REST.fullmatch(rest):
        return None  # a character outside the whitelist: a sign, bracket, relation or mark changes the number
    words = re.findall(r"[a-z]+", rest)
    if any(w not in VOCABULARY for w in words):
        return None
    scales = [SCALES[w] for w in words if w in SCALES]
    points = [w for w in words if w in _POINT_UNITS]
    directions = [_DIRECTIONS[w] for w in words if w in _DIRECTIONS]
    units = {_UNITS[w] for w in words if w in _UNITS} | ({"$"} if "$" in text else set())
    labelled = bool(units)
    percents = (match.group("pct_in") is not None) + (match.group("pct") is not None)
    percent = percents == 1
    parens = bool(match.group("open")), bool(match.group("close"))
    if (
        parens[0] != parens[1]
        or percents > 1
        or len(units) > 1
        or len(scales) > 1
        or len(points) > 1
        or len(directions) > 1
    ):
        return None
    if (percent or points) and (scales or labelled or (percent and points)):
        return None  # a ratio takes no scale, currency or second unit
    signs = match.group("sign") + match.group("sign2")
    if len(signs) + parens[0] + len(directions) > 1:
        return None  # --132, -(787), (-787), down -24: one sign marker at most
    num = match.group("num").replace(",", "")
    value = Fraction(num)
    decimals: int | None = len(num.partition(".")[2])
    if match.group("den") is not None:
        den = Fraction(match.group("den"))
        if den == 0:
            return None
        value, decimals = value / den, None
    if percent:
        value, decimals = value / 100, None if decimals is None else decimals + 2
    negative = parens[0] or signs == "-" or directions == [-1]
    bare = not (percent or scales or points or labelled)
    unit = points[0] if points else None
    scale = scales[0] if scales else None
    return Amount(-value if negative else value, decimals, percent, scale, bare, unit, min(units, default=None))


class Asked(NamedTuple):
    """What a question's text says of its answer: the scale it asks in (``in millions``: 6), the point unit
    (``"pp"`` for "percentage points", ``"bps"`` for "basis points"; None: it says nothing), the units it names
    (``"$"``, ``"gwh"``, ``"shares"``, ``"units"``, ``"years"``) and the years it names, in its order."""

    scale: int | None = None
    points: str | None = None
    units: frozenset[str] = frozenset()
    years: tuple[str, ...] = ()


#: A question that says nothing of its answer's unit.
UNSTATED = Asked()
_ASKED_SCALE = re.compile(r"\b(thousands|millions|billions)\b", re.IGNORECASE)
_ASKED_POINTS = re.compile(r"\b(percentage|basis)[\s-]+points?\b", re.IGNORECASE)
_NAMED_UNITS = {
    "$": re.compile(r"\$|\bdollars?\b|\busd\b", re.IGNORECASE),
    "gwh": re.compile(r"\bgigawatt|\bgwh\b", re.IGNORECASE),
    "shares": re.compile(r"\bshares?\b", re.IGNORECASE),
    "units": re.compile(r"\bunits?\b", re.IGNORECASE),
    "years": re.compile(r"\byears\b", re.IGNORECASE),
}
_NAMED_YEAR = re.compile(r"\b(?:19|20)\d{2}\b")


def asked_in(question: str) -> Asked:
    """The unit ``question`` asks its answer in: the last scale it names in the plural (``in millions``,
    ``(in thousands)``, ``millions of dollars``; the asked unit ends a question, an input's comes before it) and
    whether it asks in percentage or basis points.

    >>> asked_in("Using shipments (in thousands), estimate the revenue in millions of dollars.")[:3]
    (6, None, frozenset({'$'}))
    >>> asked_in("By how many basis points did the margin change?").points, asked_in("") == UNSTATED
    ('bps', True)
    >>> asked_in("How many gigawatt-hours were produced in 2023 and 2022 (2023 first)?")[2:]
    (frozenset({'gwh'}), ('2023', '2022'))
    """
    scales = _ASKED_SCALE.findall(question)
    points = _ASKED_POINTS.findall(question)
    unit = None if not points else "pp" if points[-1].lower() == "percentage" else "bps"
    units = frozenset(name for name, pattern in _NAMED_UNITS.items() if pattern.search(question))
    years = tuple(dict.fromkeys(_NAMED_YEAR.findall(question)))
    return Asked(SCALES[scales[-1].lower()] if scales else None, unit, units, years)


def _in_points(amount: Amount, unit: str | None) -> Amount:
    if unit != "bps":
        return amount
    decimals = None if amount.decimals is None else amount.decimals + 2
    return amount._replace(value=amount.value / 100, decimals=decimals)


def comparable(pred: Amount, gold: Amount, asked: Asked = UNSTATED) -> tuple[Amount, Amount] | None:
    """``pred`` and ``gold`` in one unit, or None when their units disagree.

    A scale word must be the gold's, or on a gold that states none, the question's (``asked``); a percent gold
    takes a percent or a bare number; a point unit needs a gold in points (its own word, or a bare gold of a
    question asked in points), and a bare answer to such a gold counts in the gold's unit. Basis points are
    converted to percentage points (``-160 bps`` is ``-1.6 pp``).

    >>> [comparable(read_amount("12,480 " + s), read_amount("12,480"), Asked(6)) is None for s in ("m", "bn", "")]
    [False, True, False]
    >>> pred, gold = comparable(read_amount("-160 bps"), read_amount("-1.6"), asked_in("percentage points"))
    >>> pred.value == gold.value, comparable(read_amount("-1.6 bps"), read_amount("-1.6%")) is None
    (True, True)
    """
    expected = gold.scale if gold.scale is not None else asked.scale
    if pred.scale is not None and pred.scale != expected:
        return None
    if pred.unit is not None and pred.unit != gold.unit and not _named(pred.unit, asked.units):
        return None
    if gold.percent and not (pred.percent or pred.bare):
        return None
    gold_unit = gold.points or (asked.points if gold.bare else None)
    pred_unit = pred.points or (gold_unit if pred.bare else None)
    if (pred.points and gold_unit is None) or (gold_unit and pred_unit is None):
        return None
    return _in_points(pred, pred_unit), _in_points(gold, gold_unit)


def _named(unit: str, named: frozenset[str]) -> bool:
    """A unit word the question allows: one it names; currency also where it names no other unit."""
    return unit in named or (unit == "$" and not named - {"$"})


def parse_number(text: str, percent_as_fraction: bool = True) -> float | None:
    """A number from ``text``: ``$``, commas, ``%`` (as /100 unless told not to), ``(x)``, ``a/b``.

    >>> parse_number("$1,234.5 million"), parse_number("(386)"), parse_number("12.5%"), parse_number("3/4")
    (1234.5, -386.0, 0.125, 0.75)
    >>> parse_number("24.1%", percent_as_fraction=False), parse_number("n/a"), parse_number("--5")
    (24.1, None, None)
    """
    amount = read_amount(text)
    if amount is None:
        return None
    as_written = amount.percent and not percent_as_fraction
    return float(amount.value * 100 if as_written else amount.value)


def round_half_away(value: Fraction, decimals: int) -> Fraction:
    """``value`` rounded to ``decimals`` decimals, a half away from zero: how a gold is taken to be written.

    >>> [str(round_half_away(Fraction(v), 0)) for v in ("43.5", "-43.5", "43.49", "0.5")]
    ['44', '-44', '43', '1']
    """
    unit = 10**decimals
    whole = math.floor(abs(value) * unit + Fraction(1, 2))
    return Fraction(whole if value >= 0 else -whole, unit)


def _within_tolerance(pred: Fraction, gold: Fraction, rel_tol: float, abs_tol: float) -> bool:
    if gold == 0:
        return abs(pred) < Fraction(1, 1000)
    diff = abs(pred - gold)
    return diff <= Fraction(rel_tol) * abs(gold) and diff <= Fraction(abs_tol)


def amounts_match(
    pred: Amount,
    gold: Amount,
    rel_tol: float = 0.01,
    abs_tol: float = 1.0,
    stated: int | None = None,
    asked: Asked = UNSTATED,
) -> bool:
    """The precision rule: two numbers agree to the coarser of the precisions they are written in.

    At the gold's precision or finer, the answer must round (half away from zero) to the gold: ``57.24%`` and
    ``57.2%`` for 57.2%, not ``57.3%`` nor the tie ``57.25%`` (that is 57.3%). Coarser than the gold, it must be
    the gold rounded to the answer's decimals (``0.47`` for 0.47278, not ``0.48``; ``144`` for 143.5, not
    ``143``) and within ``rel_tol`` and ``abs_tol`` of it, so that ``0`` is no answer to 0.382, unless the data
    write the same value at the answer's decimals or coarser (``stated``: the fewest decimals of the gold's
    accepted forms, :func:`~gym_integrity.envs.finqa.scoring.score_answer`). Decimals count in the same unit on
    both sides (``57.2%`` is 0.572: 3; points after :func:`comparable`), whose units must agree first (``asked``:
    what the question's text says of the unit).

    >>> [amounts_match(read_amount(p), read_amount("57.2%")) for p in ("0.572", "57.24%", "57.3%", "57%", "0.6")]
    [True, True, False, True, False]
    >>> [amounts_match(read_amount(p), read_amount("$1,648 million")) for p in ("1,648 bn", "1,648 m", "1,648")]
    [False, True, True]
    >>> [amounts_match(read_amount(p), read_amount("1,648"), asked=Asked(6)) for p in ("$1,648 bn", "$1,648 mn")]
    [False, True]
    """
    units = comparable(pred, gold, asked)
    if units is None:
        return False
    if stated is not None and gold.decimals is not None and units[1].decimals is not None:
        stated += units[1].decimals - gold.decimals  # a gold counted in basis points, compared in points
    pred, gold = units
    if pred.decimals is None and gold.decimals is None:
        return pred.value == gold.value
    if gold.decimals is not None and (pred.decimals is None or pred.decimals >= gold.decimals):
        return round_half_away(pred.value, gold.decimals) == gold.value
    assert pred.decimals is not None  # coarser than the gold (or the gold is an exact ratio)
    if round_half_away(gold.value, pred.decimals) != pred.value:
        return False
    coarsest = gold.decimals if stated is None else stated
    return (coarsest is not None and pred.decimals >= coarsest) or _within_tolerance(
        pred.value, gold.value, rel_tol, abs_tol
    )

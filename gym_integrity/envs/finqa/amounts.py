r"""One FinQA amount: how a number is read from an answer or a gold, and when two numbers agree.

Reading (:func:`read_amount`): one number, optionally with ``$``, thousands commas, a ``%`` or ``percent``
(read as /100), a ratio ``745/1251``, unit words and filler words (``about``, ``the answer is``).

* **One sign marker at most.** ``-787``, ``+787``, ``(787)`` (accounting), ``$-787``, ``-$787`` and ``$(787)``
  are numbers; ``--787``, ``-(787)``, ``+(787)``, ``(-787)``, ``-$-5`` or a stray ``-``/``+``/dash anywhere
  else in the value is not (graded as no number). A second marker used to be read too, or dropped, so ``--132``
  was -132 and ``-(787)`` was -787: a grader guess at what the text means, paid.
* **Scale words are read, never applied.** ``thousand``/``k``, ``million``/``mn``/``m`` and ``billion``/``bn``/
  ``b`` set :attr:`Amount.scale` but leave the value as written (``1.5 billion`` is 1.5, not 1500): FinQA's
  tables are in millions and their golds written bare or as ``$1,648 million``. One scale word at most, and
  none with a percent (``5% million`` is no amount).
* :attr:`Amount.bare` says whether the number came alone (no ``$``, ``%``, unit or scale word): the only form
  a year gold takes.

Matching (:func:`amounts_match`): a number is matched to the precision its gold is written in. A gold is the
true value rounded half away from zero (:func:`round_half_away`) to its decimals, so an answer at the gold's
decimals or finer is paid when it rounds, the same way, to the gold: ``43.5`` pays 44 and not 43, ``-43.5``
pays -44. No answer at least as fine as two golds written at one precision is paid for both. When both sides
state a scale they must state the same one (``1,648 billion`` is not ``$1,648 million``); a scale added to a
gold that states none changes nothing (the value is read as written either way).

>>> read_amount("-$1,648 million")
Amount(value=Fraction(-1648, 1), decimals=0, percent=False, scale=6, bare=False)
>>> [read_amount(t) is None for t in ("(787)", "-(787)", "--132", "(-787)", "-$-5", "787-", "5 apples")]
[False, True, True, True, True, True, True]
>>> read_amount("$1,648 (in billions)").scale, read_amount("-1.6 percentage-points").value
(9, Fraction(-8, 5))
>>> [amounts_match(read_amount("43.5"), read_amount(g)) for g in ("43", "44")]
[False, True]
"""

from __future__ import annotations

import math
import re
import unicodedata
from fractions import Fraction
from typing import NamedTuple

from gym_integrity.grading.numbers import GROUPED_DECIMAL

__all__ = ["Amount", "read_amount", "parse_number", "clean", "round_half_away", "amounts_match", "SCALES"]

_TEXT_CMD = re.compile(r"\\(?:text|textbf|mathrm|mbox)\s*\{([^{}]*)\}")
#: The scale words, and the power of ten each states.
SCALES = {
    **dict.fromkeys(("thousand", "thousands", "k"), 3),
    **dict.fromkeys(("million", "millions", "mn", "m"), 6),
    **dict.fromkeys(("billion", "billions", "bn", "b"), 9),
}
# Words an amount may carry that are not a scale: ignored (and they make the amount not bare).
_UNIT_WORDS = frozenset("usd dollars dollar shares units gwh years year percentage pp points point bps".split())
_FILLER_WORDS = frozenset("about approximately approx is the answer of a an in to up down by or".split())
_NUMBER = re.compile(
    rf"""(?P<sign>[-+\u2212]?)\s*(?P<open>\()?\s*(?P<sign2>[-+\u2212]?)\s*\$?\s*
        (?P<num>{GROUPED_DECIMAL})
        (?:\s*/\s*(?P<den>\d+(?:\.\d+)?))?
        \s*(?P<close>\))?\s*(?P<pct>%|percent(?!age))?""",
    re.VERBOSE | re.IGNORECASE,
)
# Neither a hyphen inside a phrase ("percentage-points") nor the parentheses around words ("(in millions)") is a
# sign: both become spaces, the words stay (a scale in parentheses is still a scale).
_WORD_HYPHEN = re.compile(r"(?<=[a-z])-(?=[a-z])")
_WORDS_IN_PARENS = re.compile(r"\(\s*([a-z][a-z\s]*)\)")


def clean(text: str) -> str:
    r"""``text`` with LaTeX's ``\text{}``, ``\%``, ``\$``, spacing and ``\frac{a}{b}`` written plainly."""
    text = _TEXT_CMD.sub(lambda m: " " + m.group(1) + " ", text)
    text = text.replace("\\%", "%").replace("\\$", "$").replace("\\,", "").replace("\\!", "").replace("\\ ", " ")
    text = text.replace("\\left", "").replace("\\right", "").replace("\u2212", "-").replace("\u2013", "-")
    frac = re.fullmatch(r"\s*(-?)\s*\\d?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}\s*(%?)\s*", text)
    if frac:
        text = f"{frac.group(1)}{frac.group(2)}/{frac.group(3)}{frac.group(4)}"
    return text.strip()


class Amount(NamedTuple):
    """One number as written: its exact value per unit (``%`` read as /100), its decimals in that unit
    (``57.2%`` is 0.572, 3 decimals; ``1,648`` has 0; a ratio ``745/1251`` is exact: None), the scale it
    states (3, 6 or 9; None: none) and whether it came with no ``$``, ``%``, unit or scale word."""

    value: Fraction
    decimals: int | None
    percent: bool
    scale: int | None = None
    bare: bool = True


def _is_sign_mark(char: str) -> bool:
    return char in "+-()\u2212" or unicodedata.category(char) == "Pd"


def read_amount(text: str) -> Amount | None:
    """The :class:`Amount` ``text`` is if it is one number (with optional unit and filler words), else None."""
    text = clean(text)
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
    rest = _WORDS_IN_PARENS.sub(r" \1 ", _WORD_HYPHEN.sub(" ", rest))
    if any(_is_sign_mark(char) for char in rest):
        return None  # a sign or dash outside the number (-$-5, 787-): a second sign marker
    words = re.sub(r"[^a-z ]", " ", rest).split()
    if any(w not in SCALES and w not in _UNIT_WORDS and w not in _FILLER_WORDS for w in words):
        return None
    scales = [SCALES[w] for w in words if w in SCALES]
    percent = match.group("pct") is not None
    parens = bool(match.group("open")), bool(match.group("close"))
    if parens[0] != parens[1] or len(scales) > 1 or (scales and percent):
        return None
    signs = match.group("sign") + match.group("sign2")
    if len(signs) + parens[0] > 1:
        return None  # --132, -(787), (-787): one sign marker at most
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
    negative = parens[0] or signs in ("-", "\u2212")
    bare = not (percent or scales or "$" in text or any(w in _UNIT_WORDS for w in words))
    return Amount(-value if negative else value, decimals, percent, scales[0] if scales else None, bare)


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
    pred: Amount, gold: Amount, rel_tol: float = 0.01, abs_tol: float = 1.0, stated: int | None = None
) -> bool:
    """The precision rule: two numbers agree to the coarser of the precisions they are written in.

    At the gold's precision or finer, the answer must round (half away from zero) to the gold: ``57.24%`` and
    ``57.2%`` for 57.2%, not ``57.3%`` nor the tie ``57.25%`` (that is 57.3%). Coarser than the gold, it must be
    the gold rounded to the answer's decimals (``0.47`` for 0.47278, not ``0.48``; ``144`` for 143.5, not
    ``143``) and within ``rel_tol`` and ``abs_tol`` of it, so that ``0`` is no answer to 0.382, unless the data
    write the same value at the answer's decimals or coarser (``stated``: the fewest decimals of the gold's
    accepted forms, :func:`~gym_integrity.envs.finqa.scoring.score_answer`). Decimals count in the same unit on
    both sides (``57.2%`` is 0.572: 3). Scales stated on both sides must be equal.

    >>> [amounts_match(read_amount(p), read_amount("57.2%")) for p in ("0.572", "57.24%", "57.3%", "57%", "0.6")]
    [True, True, False, True, False]
    >>> [amounts_match(read_amount(p), read_amount("$1,648 million")) for p in ("1,648 bn", "1,648 m", "1,648")]
    [False, True, True]
    """
    if pred.scale is not None and gold.scale is not None and pred.scale != gold.scale:
        return False
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

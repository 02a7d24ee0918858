"""How FinQA's scorer reads an answer: six ways a wrong reading paid, each searched (hypothesis, seeded) on both sides.

1. A character around the number was dropped (``⁻12,480``, ``≠ 12,480``, ``±12,480``, ``（12,480）``): now a
   whitelist, after NFKC (``（787）`` is accounting parentheses, ``１２，４８０`` is 12,480).
2. A dash after a year key took the value's sign (``2024 -55`` was ``2024: 55``): a key is ``:`` or ``=`` only.
3. A scale word on a gold that states none was free (``12,480 billion`` for 12,480 in millions): it must be the
   question's.
4. Point units were ignored (``0.3820 bps`` for 38.2%, ``-1.6 bps`` for -1.6 points): they are units.
5. Direction words were ignored (``down 12,480`` for +12,480): they are signs.
6. A year gold was paid by an amount equal to the year (``4046/2``, ``+2023``): a year's form only.

And honest forms that were refused: values joined by ``and``, ``&``, a line break or `` / ``; ``12{,}480``,
``\\tfrac``, ``pct``, ``per cent``, ``In fiscal 2023``, ``The year 2023``.
"""

from __future__ import annotations

import sys
import unicodedata
from decimal import Decimal

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from gym_integrity.envs.finqa.amounts import VOCABULARY, read_amount
from gym_integrity.envs.finqa.scoring import score_answer

IN_MILLIONS = "What was the net revenue in fiscal 2024, in millions of dollars?"
IN_POINTS = "By how many percentage points did the operating ratio change from 2023 to 2024?"


def search(examples: int) -> settings:
    """A seeded search: the same examples on every run (derandomized from the test's name)."""
    return settings(max_examples=examples, deadline=None, derandomize=True, database=None)


def paid(answer: str, gold: str | list[str], question: str = "") -> bool:
    return score_answer(answer, gold, question=question).score == 1.0


def _digits(value: Decimal, decimals: int) -> str:
    return f"{abs(value):,.{decimals}f}"


AMOUNTS = st.decimals(min_value=Decimal("0.01"), max_value=99999, places=2, allow_nan=False, allow_infinity=False)

# ------------------------------------------------------------------------------------- 1. what stands around a number

# The characters whose names say they mean something to a number: searched beside every other character.
_MEANING = ("MINUS", "DASH", "HYPHEN", "NOT ", "LESS", "GREATER", "TILDE", "ALMOST", "EQUAL", "PLUS", "NEGAT")
_MEANING += ("PARENTHESIS", "BRACKET", "APPROX")
MEANINGFUL = sorted(
    char
    for char in map(chr, range(0x20, sys.maxunicode + 1))
    if any(word in unicodedata.name(char, "") for word in _MEANING)
)
CHARACTERS = st.one_of(st.sampled_from(MEANINGFUL), st.characters(blacklist_categories=("Cs", "Co", "Cn")))
# What a character may read as, after NFKC, in an amount: a space, punctuation, a sign, a digit of the number, or
# a word of the vocabulary (alone or in parentheses).
_PUNCTUATION = set("$%.,:;!?*`'\"\u2018\u2019\u201c\u201d")
_SIGNS = ("+", "-", "\u2212", "\u2013")


def _may_stand_beside_a_number(char: str) -> bool:
    plain = unicodedata.normalize("NFKC", char)
    if not plain.strip() or all(c in _PUNCTUATION for c in plain) or plain in _SIGNS:
        return True
    if plain.isdecimal():
        return True
    return plain.strip("()").lower() in VOCABULARY


@search(600)
@given(char=CHARACTERS, number=AMOUNTS, place=st.sampled_from(["{c}{n}", "{n}{c}", "{c} {n}", "{n} {c}", "{c}{n}{c}"]))
def test_a_character_outside_the_whitelist_makes_no_amount(char, number, place):
    """Every character beside a number is read or refused, never dropped: ``⁻12,480`` is -12,480 (NFKC reads the
    superscript minus as a minus), ``±12,480``, ``≠ 12,480``, ``~12,480``, ``➖12,480`` and ``[12,480]`` are no
    amount. A character is never read as a sign unless NFKC makes it ``-`` or ``(``...``)``."""
    assume(char not in "&\n")  # a list separator: test_several_values_are_split_...
    digits = _digits(number, 2)
    answer = place.format(c=char, n=digits)
    amount = read_amount(answer)
    plain = unicodedata.normalize("NFKC", char)
    if unicodedata.category(char) in ("No", "Nl"):
        assert amount is None, answer  # an other-number character is never read, as a digit or a letter
    if amount is None:
        assert not paid(answer, digits) and not paid(answer, f"-{digits}"), answer
        return
    assert _may_stand_beside_a_number(char), (answer, unicodedata.name(char, "?"))
    if plain.isdecimal():
        return  # a digit is part of another number
    negative = plain in _SIGNS[1:] and place in ("{c}{n}", "{c} {n}")
    assert (amount.value < 0) == negative, answer
    if amount.scale is None and amount.points is None and not amount.percent:
        assert paid(answer, f"-{digits}" if negative else digits), answer
        assert not paid(answer, digits if negative else f"-{digits}"), answer


@search(200)
@given(number=AMOUNTS, decimals=st.integers(0, 2), negative=st.booleans(), parens=st.booleans())
def test_fullwidth_forms_read_as_ascii(number, decimals, negative, parens):
    """NFKC: ``１２，４８０`` is 12,480 and ``（787）`` is accounting parentheses, so paid exactly as the ASCII form."""
    digits = _digits(number, decimals)
    ascii_form = (f"({digits})" if parens else f"-{digits}") if negative else digits
    wide = ascii_form.translate({i: i + 0xFEE0 for i in range(0x21, 0x7F)})
    for gold in (digits, f"-{digits}"):
        assert paid(wide, gold) == paid(ascii_form, gold), (wide, gold)
    assert paid(wide, f"-{digits}" if negative else digits), wide


# ---------------------------------------------------------------------------------------------------- 2. year keys

SEPARATORS = st.sampled_from([": ", " = ", ":", "=", " -", " - ", " \u2013 ", " ", "-"])


@search(300)
@given(
    values=st.lists(st.integers(-999, 999), min_size=2, max_size=4),
    separators=st.lists(SEPARATORS, min_size=4, max_size=4),
    flip=st.integers(0, 3),
)
def test_a_year_key_is_a_colon_or_an_equals_sign(values, separators, flip):
    """``2024 -55`` is not ``2024: 55``: a key takes ``:`` or ``=``; a dash is the value's sign, never a key's."""
    years = range(2020, 2020 + len(values))
    gold = ", ".join(f"{y}: {v}" for y, v in zip(years, values))
    answer = ", ".join(f"{y}{s}{v}" for y, s, v in zip(years, separators, values))
    keyed = all(s.strip() in (":", "=") for s in separators[: len(values)])
    assert paid(answer, gold, IN_MILLIONS) == keyed, (answer, gold)
    flip %= len(values)
    if values[flip] != 0:  # the value's own sign, flipped behind a dash separator: never paid
        wrong = [(-v if i == flip else v) for i, v in enumerate(values)]
        answer = ", ".join(f"{y}{s}{v}" for y, s, v in zip(years, separators, wrong))
        assert not paid(answer, gold, IN_MILLIONS), (answer, gold)


# ------------------------------------------------------------------------------------------------ 4. point units


@search(300)
@given(
    points=st.decimals(min_value=-20, max_value=20, places=1, allow_nan=False, allow_infinity=False),
    unit=st.sampled_from(["pp", "percentage points", "points", "bps", "basis points", "bp"]),
    scale=st.sampled_from([Decimal(1), Decimal(100), Decimal("0.01")]),
    percent_gold=st.booleans(),
)
def test_a_point_unit_counts(points, unit, scale, percent_gold):
    """A basis point is a hundredth of a percentage point: ``-160 bps`` and ``-1.6 pp`` pay -1.6 points, ``-1.6
    bps`` does not; a percent gold (38.2%) is paid by no point amount at all (``0.3820 bps``)."""
    assume(points != 0)
    written = points * scale
    answer = f"{written:f} {unit}"
    in_points = written / 100 if unit in ("bps", "basis points", "bp") else written
    if percent_gold:
        assert not paid(answer, f"{points}%", IN_POINTS) and not paid(answer, f"{points / 100}"), answer
    else:
        assert paid(answer, f"{points}", IN_POINTS) == (in_points == points), answer
        assert not paid(answer, f"{points}"), answer  # a question that does not ask in points: a bare gold is not


# ------------------------------------------------------------------------------------------- 5. direction words

DOWN = ["down", "decrease", "decreased", "decline", "declined", "lower", "fell", "minus", "negative", "loss"]
UP = ["up", "increase", "increased", "rise", "rose", "higher", "grew", "growth", "gain", "plus", "positive"]
DIRECTION_FORMS = st.sampled_from(["{w} {n}", "{w} by {n}", "a {w} of {n}", "{w} of ${n} million", "a net {w} of {n}"])


@search(300)
@given(number=AMOUNTS, word=st.sampled_from(DOWN + UP), form=DIRECTION_FORMS, sign=st.sampled_from(["", "-", "+"]))
def test_a_direction_word_is_a_sign(number, word, form, sign):
    """``down by 24`` is -24 and is paid for -24 only; ``up 24`` is 24; a direction word with a sign of its own
    (``down -24``) is no amount, nor are two direction words."""
    digits = _digits(number, 2)
    answer = form.format(w=word, n=sign + digits)
    negative = word in DOWN
    if sign:
        assert read_amount(answer) is None, answer
    else:
        assert paid(answer, f"-{digits}" if negative else digits, IN_MILLIONS), answer
        assert not paid(answer, digits if negative else f"-{digits}", IN_MILLIONS), answer
    assert read_amount(f"{word} {DOWN[0]} {digits}") is None


# ------------------------------------------------------------------------------------------------------ 6. years

NOT_YEARS = ["{d}/2", "\\frac{{{d}}}{{2}}", "{y}/1", "+{y}", "-{y}", "{y}.5", "({y})", "${y}", "{y} million", "{h}%"]
YEARS = ["{y}", "FY{y}", "FY {y}", "fiscal {y}", "fiscal year {y}", "in {y}", "In fiscal {y}", "The year {y}", "{g}"]
YEARS += ["{y}.0", "Year {y}.", "\\boxed{{{y}}}", "**{y}**", "in the year {y}"]


@search(200)
@given(year=st.integers(1900, 2099), other=st.integers(-2, 2), form=st.sampled_from(YEARS + NOT_YEARS))
def test_a_year_gold_takes_a_year_form_only(year, other, form):
    """A year gold is paid by the year in a year's form, never by an amount equal to it (``4046/2``, ``+2023``,
    ``\\frac{4046}{2}``, ``2023/1``) nor by another year."""
    said = year + other
    answer = form.format(y=said, d=2 * said, g=f"{said:,}", h=said * 100)
    assert paid(answer, str(year)) == (form in YEARS and said == year), answer


# -------------------------------------------------------------------------------------------- honest: several values

JOINERS = st.sampled_from([" and ", " & ", "&", "\n", " / ", "; ", ", ", " AND "])
VALUE_FORMS = st.sampled_from(["{n}", "${n} million", "{n} mn", "\\boxed{{{n}}}"])


@search(300)
@given(
    values=st.lists(AMOUNTS, min_size=2, max_size=4),
    joiner=JOINERS,
    form=VALUE_FORMS,
    keyed=st.booleans(),
    swap=st.booleans(),
)
def test_several_values_are_split_on_and_ampersand_line_breaks_and_spaced_slashes(values, joiner, form, keyed, swap):
    """``5,120 and 3,240``, ``2022: 25.4%\\n2023: 24.3%``, ``$2,250 million & $162 million`` are lists, in order (or
    by year; a ratio's slash is unspaced, ``745/1251``), and an unkeyed list in another order is not paid."""
    texts = [_digits(v, 2) for v in values]
    assume(len(set(texts)) == len(texts))
    years = [str(2020 + i) for i in range(len(texts))]
    gold = ", ".join(f"{y}: {t}" for y, t in zip(years, texts)) if keyed else "; ".join(texts)
    parts = [form.format(n=t) for t in texts]
    if keyed:
        parts = [f"{y}: {p}" for y, p in zip(years, parts)]
    order = parts[::-1] if swap else parts
    answer = joiner.join(order)
    if form == "\\boxed{{{n}}}":  # the boxes are the values: a key outside them is not read
        assert paid(answer, gold, IN_MILLIONS) == (not swap), answer
    else:
        assert paid(answer, gold, IN_MILLIONS) == (keyed or not swap), answer


def test_latex_and_word_spellings_that_were_refused():
    assert paid("12{,}480", r"\boxed{12,480}") and paid(r"\tfrac{745}{1251}", "745/1251")
    assert paid("38.2 pct", "38.2%") and paid("38.2 per cent", "38.2%") and paid(r"\(12,480\)", "12,480")
    assert [paid(a, "2023") for a in ("In fiscal 2023", "The year 2023", "FY23", "2023 (fiscal)")] == [1, 1, 0, 0]
    assert paid("745 / 1251", "745; 1251") and not paid("745 / 1251", "745/1251")  # a spaced slash separates


def test_accounting_parentheses_around_a_percent_and_bold_around_a_keyed_list():
    """``(6.3%)`` is -6.3% as ``(6.3)%`` is; a bold around a whole keyed list is the list's (both were refused)."""
    assert paid("(6.3%)", "-6.3%") and paid("(6.3 percent)", "-0.063") and not paid("(6.3%)", "6.3%")
    assert not any(paid(a, "-6.3%") for a in ("(6.3%)%", "-(6.3%)", "6.3%)", "(-6.3%)"))
    assert paid("**2023: 12.7%, 2024: 17.6%**", "2023: 12.7%, 2024: 17.6%")
    assert not paid("**2023: 12.7%, 2024: 17.7%**", "2023: 12.7%, 2024: 17.6%")


IN_GWH = "How many gigawatt-hours of solar generation did Helios Energy produce in 2024?"
IN_UNITS = "How many restricted stock units (in thousands) did Quantarix grant in 2024?"
UNIT_WORDS = ("years", "year", "GWh", "gwh", "gigawatt-hours", "gigawatt hours", "shares", "units", "dollars", "USD",
              "$")


@search(300)
@given(number=AMOUNTS, unit=st.sampled_from(UNIT_WORDS), question=st.sampled_from([IN_MILLIONS, IN_GWH, IN_UNITS, ""]))
def test_a_unit_word_must_be_one_the_question_names(number, unit, question):
    """``12,480 years`` was paid for 12,480 in millions of dollars (72 of 78 such forms): a unit word is read, and
    paid only where the question names it; currency only where the question names no other unit."""
    digits = _digits(number, 2)
    answer = f"${digits}" if unit == "$" else f"{digits} {unit}"
    named = {IN_MILLIONS: {"$"}, IN_GWH: {"gwh"}, IN_UNITS: {"units"}, "": set()}[question]  # "in 2024": no years
    canonical = {"year": "years", "dollars": "$", "usd": "$"}.get(unit.lower(), unit.lower())
    canonical = "gwh" if canonical.startswith("gigawatt") else canonical
    expected = canonical in named or (canonical == "$" and not named - {"$"})
    assert paid(answer, digits, question) == expected, (answer, question)


def test_a_keyed_answer_to_an_unkeyed_gold_follows_the_question_s_years():
    """fq010 asks "in 2022 and in 2024 ... (2022 first)" and its gold is unkeyed: ``2022: 0.1457, 2024: 0.1693`` (in
    any order) is paid, the years swapped or another year is not."""
    question = "What was the operating margin in 2022 and in 2024, as decimals (2022 first)?"
    gold = "0.1457; 0.1693"
    assert paid("2022: 0.1457, 2024: 0.1693", gold, question) and paid("2024 = 0.1693; 2022 = 0.1457", gold, question)
    assert not any(paid(a, gold, question) for a in ("2022: 0.1693, 2024: 0.1457", "2023: 0.1457, 2024: 0.1693",
                                                     "2022: 0.1457", "2022: 0.1457, 2024: 0.1693, 2025: 1"))
    assert not paid("2022: 0.1457, 2024: 0.1693", gold, "What were the two margins (first the larger)?")

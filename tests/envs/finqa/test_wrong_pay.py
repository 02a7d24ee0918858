"""Four ways FinQA's scorer paid a wrong answer, each searched (hypothesis) on both sides: no hostile form is paid,
and every honest form of the same gold still is.

1. A half-unit tie paid both neighbouring golds (``43.5`` for 43 and 44).
2. Two sign markers were read as one sign (``--132``, ``-(787)``, ``(-787)``, ``-$-5``).
3. A coarser accepted form of a gold widened the match (``-0.0635`` and ``-0.0631`` through ``-6.3%`` beside the
   ``exe_ans`` -0.0626).
4. Unit and scale words were ignored (``2023 million`` for the year 2023, ``1,648 billion`` for $1,648 million).
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from gym_integrity.envs.finqa.amounts import read_amount
from gym_integrity.envs.finqa.scoring import parse_number, score_answer
from gym_integrity.envs.finqa.sources import load_finqa_records


def _text(value: Decimal, decimals: int, form: str = "plain") -> str:
    """``value`` written with ``decimals`` decimals in one of the honest forms of an amount."""
    digits = f"{abs(value):,.{decimals}f}" if form in ("grouped", "money", "parens") else f"{abs(value):.{decimals}f}"
    if value < 0:
        return {"parens": f"({digits})", "money": f"-${digits}"}.get(form, f"-{digits}")
    return f"${digits} million" if form == "money" else digits


def _percent(value: Decimal, decimals: int, as_percent: bool) -> str:
    """A fraction ``value`` written with ``decimals`` decimals either as a percent or as the fraction itself."""
    if as_percent:
        return f"{value * 100:.{decimals - 2}f}%"
    return f"{value:.{decimals}f}"


def _half_up(value: Decimal, decimals: int) -> Decimal:
    return value.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)  # half away from zero


def _is_year(value: Decimal) -> bool:
    return value == value.to_integral_value() and 1900 <= value <= 2099 and value.as_tuple().exponent >= 0


def search(examples: int) -> settings:
    """A seeded search: the same examples on every run (derandomized from the test's name)."""
    return settings(max_examples=examples, deadline=None, derandomize=True, database=None)


#: The question an amount answers here unless a test says otherwise: the ``$x million`` form is honest in it.
IN_MILLIONS = "What was it, in millions of dollars?"


def paid(answer: str, gold: str | list[str], question: str = IN_MILLIONS) -> bool:
    return score_answer(answer, gold, question=question).score == 1.0


FORMS = st.sampled_from(["plain", "grouped", "money", "parens"])

# ----------------------------------------------------------------------------------------------------------- 1. ties


@search(300)
@given(
    whole=st.integers(0, 10**7),
    decimals=st.integers(0, 4),
    zeros=st.integers(0, 3),
    negative=st.booleans(),
    form=FORMS,
    percent=st.sampled_from([None, "percent", "fraction"]),
)
def test_a_half_unit_answer_pays_one_of_its_two_golds(whole, decimals, zeros, negative, form, percent):
    """``43.5`` lies half-way between the golds 43 and 44: it is paid for 44 only (half away from zero), ``-43.5``
    for -44 only, in every amount form, with any trailing zeros, and the same for percent golds (``57.25%`` and
    its fraction ``0.5725`` pay 57.3% only)."""
    sign = -1 if negative else 1
    unit = Decimal(1).scaleb(-decimals)
    near, away = sign * whole * unit, sign * (whole + 1) * unit
    tie = (near + away) / 2
    if percent is None:
        golds = [_text(near, decimals, "grouped"), _text(away, decimals, "grouped")]
        answer = _text(tie, decimals + 1 + zeros, form)
    else:
        golds = [f"{near:.{decimals}f}%", f"{away:.{decimals}f}%"]
        answer = _percent(tie / 100, decimals + 3 + zeros, percent == "percent")
    assert [paid(answer, g) for g in golds] == [False, True], (answer, golds)


@search(200)
@given(whole=st.integers(50, 10**7), decimals=st.integers(0, 3), negative=st.booleans(), form=FORMS)
def test_a_gold_on_a_half_unit_pays_one_coarser_answer(whole, decimals, negative, form):
    """The other side of a tie: a gold ``143.5`` is paid by ``144`` (its rounding half away from zero), not
    ``143``: one coarse answer is never the rounding of two golds written at one precision either way."""
    sign = -1 if negative else 1
    unit = Decimal(1).scaleb(-decimals)
    near, away = sign * whole * unit, sign * (whole + 1) * unit
    gold = _text((near + away) / 2, decimals + 1, "grouped")
    assert [paid(_text(v, decimals, form), gold) for v in (near, away)] == [False, True], gold


@search(300)
@given(
    answer=st.decimals(min_value=-99999, max_value=99999, places=6, allow_nan=False, allow_infinity=False),
    places=st.integers(0, 6),
    decimals=st.integers(0, 6),
    make_tie=st.booleans(),
)
def test_an_answer_pays_at_most_one_gold_of_a_precision(answer, places, decimals, make_tie):
    """Against every gold written with as many decimals as the answer or fewer, the answer is paid for exactly one:
    its own rounding half away from zero."""
    assume(decimals <= places)
    value = _half_up(answer, places)
    if make_tie and places > decimals:  # half-way between two golds: the case a symmetric rule paid twice
        value = _half_up(value, decimals) + Decimal(1).scaleb(-decimals) / 2
        places = max(places, decimals + 1)
    unit = Decimal(1).scaleb(-decimals)
    centre = _half_up(value, decimals)
    assume(not _is_year(centre))  # a year gold is matched exactly (test_a_year_gold_takes_no_unit)
    golds = [g for g in (centre + k * unit for k in range(-3, 4)) if not _is_year(g)]
    said = _text(value, places)
    assert [g for g in golds if paid(said, _text(g, decimals))] == [centre], (said, decimals)


# ----------------------------------------------------------------------------------------------------------- 2. signs

SIGNS = st.sampled_from(["-", "+", "\u2212", "\u2013", "\u2014", "\u2012"])
TWO_MARKERS = st.sampled_from(
    [
        "{a}{b}{n}",
        "{a} {b}{n}",
        "{a}({n})",
        "{a} ({n})",
        "({a}{n})",
        "( {a} {n} )",
        "{a}$({n})",
        "({a}${n})",
        "{a}${b}{n}",
        "${a}{b}{n}",
        "{a}{n}{b}",
        "{n}{a}",
        "{a}{n}{a}",
        "(({n}))",
        "{a}(({n}))",
        "({n}){a}",
        "{a}{n}%{b}",
        "{a}{b}{n} million",
        "{a}({n}) million",
    ]
)


@search(400)
@given(
    number=st.decimals(min_value=Decimal("0.01"), max_value=99999, places=2, allow_nan=False),
    decimals=st.integers(0, 2),
    grouped=st.booleans(),
    a=SIGNS,
    b=SIGNS,
    template=TWO_MARKERS,
    boxed=st.booleans(),
)
def test_two_sign_markers_are_no_number(number, decimals, grouped, a, b, template, boxed):
    """Two signs, or a sign with accounting parentheses, or a sign or dash left over beside the number: no
    number at all (graded incorrect, never raised), whatever sign the gold has."""
    digits = f"{number:,.{decimals}f}" if grouped else f"{number:.{decimals}f}"
    answer = template.format(a=a, b=b, n=digits)
    if boxed:
        answer = f"\\boxed{{{answer}}}"
    assert read_amount(answer) is None and parse_number(answer) is None, answer
    for gold in (digits, f"-{digits}", f"({digits})", f"${digits} million", f"-${digits} million", f"{digits}%"):
        assert score_answer(answer, gold).verdict.value == "incorrect", (answer, gold)


ONE_MARKER = ["{n}", "${n}", "-{n}", "- {n}", "\u2212{n}", "\u2013{n}", "({n})", "( {n} )", "$-{n}", "-${n}", "$({n})"]
ONE_MARKER += ["(${n})", "+{n}", "+${n}", "\\boxed{{-{n}}}", "\\boxed{{({n})}}", "-{n} million", "({n}) million"]


@search(300)
@given(
    number=st.decimals(min_value=Decimal("0.01"), max_value=99999, places=2, allow_nan=False),
    decimals=st.integers(0, 2),
    grouped=st.booleans(),
    template=st.sampled_from(ONE_MARKER),
    gold_form=FORMS,
)
def test_one_sign_marker_keeps_its_sign(number, decimals, grouped, template, gold_form):
    """``-787``, ``(787)``, ``+787``, ``$-787``, ``-$787`` and the rest with one marker: paid for the gold of that
    sign, in any of the gold's forms, and refused for the other sign."""
    value = _half_up(number, decimals)
    assume(value != 0)
    digits = f"{value:,.{decimals}f}" if grouped else f"{value:.{decimals}f}"
    answer = template.format(n=digits)
    negative = any(mark in template for mark in ("-", "(", "\u2212", "\u2013"))
    signed = -value if negative else value
    assert paid(answer, _text(signed, decimals, gold_form)), answer
    assert not paid(answer, _text(-signed, decimals, gold_form)), answer


# ------------------------------------------------------------------------------------------- 3. forms of one gold


def _finqa_forms(exe_ans: float, answer: str) -> tuple[str, ...]:
    """The accepted forms FinQAEnv scores against, built by the real loader from one original FinQA record."""
    record = {
        "id": "ACME/2019/page_1.pdf-1",
        "pre_text": ["The table shows the results."],
        "post_text": [],
        "table": [["", "2019"], ["revenue", "1,842"]],
        "qa": {"question": "What was the change?", "exe_ans": exe_ans, "answer": answer, "program": "n/a"},
    }
    return load_finqa_records([record]).questions[0].answers


@search(300)
@given(
    truth=st.decimals(min_value=-5, max_value=5, places=5, allow_nan=False, allow_infinity=False),
    coarse=st.integers(0, 3),
    as_percent=st.booleans(),
    places=st.integers(0, 5),
    step=st.integers(-3, 3),
    answer_percent=st.booleans(),
)
def test_a_coarser_form_of_a_gold_does_not_widen_it(truth, coarse, as_percent, places, step, answer_percent):
    """An original FinQA record gives two forms: ``exe_ans`` (the program's value, 5 decimals as FinQA stores it)
    and ``answer``, the annotator's rounding of it (``-6.3%`` beside -0.0626). At any precision up to the finest
    form's, an answer is paid only if it is the true value rounded there: ``-0.0631`` and ``-0.0635`` are not
    -0.0626, though both round to -6.3%. Every such rounding at the coarse form's precision or finer is paid."""
    written = (coarse + 2) if as_percent else coarse  # the annotator's decimals, counted in the fraction
    annotated = _half_up(truth, written)
    forms = _finqa_forms(float(truth), _percent(annotated, written, as_percent))
    finest = Decimal(forms[0])  # exe_ans as the loader writes it
    finest_places = max(0, -finest.as_tuple().exponent)
    assume(places <= finest_places and (places >= 2 or not answer_percent))
    value = _half_up(finest, places) + step * Decimal(1).scaleb(-places)
    answer = _percent(value, places, answer_percent)
    if step != 0 and value != _half_up(finest, places):
        assert not paid(answer, list(forms)), (answer, forms)
    elif places >= written:
        assert paid(answer, list(forms)), (answer, forms)


def test_the_reported_near_misses_of_a_finqa_record():
    forms = _finqa_forms(-0.0626, "-6.3%")
    assert forms == ("-0.0626", "-6.3%")
    assert [paid(a, list(forms)) for a in ("-0.0635", "-0.0631", "-0.0625", "-6.4%", "-6.2%")] == [False] * 5
    assert [paid(a, list(forms)) for a in ("-6.3%", "-0.063", "-0.0626", "-6.26%", "-0.06260")] == [True] * 5


# ------------------------------------------------------------------------------------------- 4. units and scales

UNITS = ["million", "millions", "m", "mn", "billion", "bn", "b", "thousand", "k", "shares", "usd", "dollars"]
YEAR_WITH_UNIT = st.sampled_from(
    ["{y} {u}", "{y}{u}", "${y}", "$ {y}", "${g}", "${g} {u}", "{g} {u}", "{y}%", "{y} percent", "\\${y}", "{y}\\%"]
)


@search(300)
@given(year=st.integers(1900, 2099), template=YEAR_WITH_UNIT, unit=st.sampled_from(UNITS))
def test_a_year_gold_takes_no_unit(year, template, unit):
    """A year is not an amount: ``2023 million``, ``$2,023``, ``2023%`` are refused for the gold 2023."""
    answer = template.format(y=year, g=f"{year:,}", u=unit)
    assert not paid(answer, str(year)), answer
    assert not paid(f"\\boxed{{{answer}}}", f"FY{year}"), answer


@search(100)
@given(year=st.integers(1900, 2099), template=st.sampled_from(["{y}", "{g}", "{y}.0", "FY{y}", "fiscal {y}", "in {y}"]))
def test_a_year_gold_takes_its_bare_forms(year, template):
    assert paid(template.format(y=year, g=f"{year:,}"), str(year))


SCALE_CLASSES = {"": 0, "thousand": 3, "k": 3, "million": 6, "millions": 6, "m": 6, "mn": 6, "billion": 9, "bn": 9}
SCALE_CLASSES |= {"b": 9, "billions": 9, "thousands": 3, "mm": 6}
SCALE = st.sampled_from(sorted(SCALE_CLASSES))


def _scaled(value: Decimal, decimals: int, scale: str, dollars: bool) -> str:
    digits = _text(value, decimals, "grouped")
    if dollars:
        digits = f"-${digits[1:]}" if digits.startswith("-") else f"${digits}"
    return f"{digits} {scale}".strip() if scale else digits


@search(400)
@given(
    value=st.decimals(min_value=-99999, max_value=99999, places=2, allow_nan=False, allow_infinity=False),
    decimals=st.integers(0, 2),
    gold_scale=SCALE,
    answer_scale=SCALE,
    gold_dollars=st.booleans(),
    answer_dollars=st.booleans(),
    asked=st.sampled_from(["", "thousands", "millions", "billions"]),
)
def test_scale_words_agree_when_both_sides_state_one(
    value, decimals, gold_scale, answer_scale, gold_dollars, answer_dollars, asked
):
    """Stated on both sides, the scale must be the same (``1,648 billion`` is not $1,648 million; ``1,648m`` is);
    on a gold that states none it must be the one the question asks in (``$12,480 million`` for a bare 12,480 in
    millions, never ``12,480 billion``), and with neither, none is paid. A scale word never scales the number
    (``1.648 billion`` is not 1,648 million)."""
    value = _half_up(value, decimals)
    gold = _scaled(value, decimals, gold_scale, gold_dollars)
    answer = _scaled(value, decimals, answer_scale, answer_dollars)
    question = f"What was it, in {asked}?" if asked else "What was it?"
    expected = SCALE_CLASSES[gold_scale] or SCALE_CLASSES.get(asked, 0)
    agree = not answer_scale or SCALE_CLASSES[answer_scale] == expected
    assert paid(answer, gold, question) == agree, (answer, gold, question)
    if abs(value) >= 1:  # the same amount in the next scale up is another number: scales are not converted
        for scale in ("thousand", "million", "billion"):
            assert not paid(_scaled(value / 1000, decimals + 3, scale, False), gold), (value, scale, gold)


@search(300)
@given(
    answer=st.decimals(min_value=-99999, max_value=99999, places=3, allow_nan=False, allow_infinity=False),
    places=st.integers(0, 3),
    gold=st.decimals(min_value=-99999, max_value=99999, places=2, allow_nan=False, allow_infinity=False),
    decimals=st.integers(0, 2),
    near=st.booleans(),
    scale=SCALE,
    gold_scale=SCALE,
)
def test_a_scale_word_is_never_a_free_pass(answer, places, gold, decimals, near, scale, gold_scale):
    """Writing a scale word after a number never turns a refused answer into a paid one, against any gold."""
    gold_text = _scaled(_half_up(gold, decimals), decimals, gold_scale, False)
    said = _text(_half_up(gold if near else answer, places), places)
    if not paid(said, gold_text):
        assert not paid(f"{said} {scale}".strip(), gold_text), (said, scale, gold_text)


def test_a_percent_or_two_scales_is_no_amount():
    assert [read_amount(t) for t in ("5% million", "1,648 million billion", "1,648 k thousand")] == [None] * 3

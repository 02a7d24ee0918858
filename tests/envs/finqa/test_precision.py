"""FinQA's precision rule and year golds: a search over gold values and precisions, not a list of instances.

A true value ``v`` and a precision ``d`` make a gold (``v`` rounded half away from zero to ``d`` decimals, written
with them). Every rounding of ``v`` at ``d`` decimals or finer is paid (but a double rounding's tie: see below); at
the gold's precision every other last digit is refused; so is any year but the gold's, whatever bare form writes it.
test_wrong_pay.py searches the hostile forms (ties, signs, several forms of one gold, scale words).
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gym_integrity.envs.finqa.scoring import score_answer

#: The question the "money" form (``$x million``) answers: a bare gold takes the scale its question asks in.
IN_MILLIONS = "What was it, in millions of dollars?"
ROUNDINGS = (ROUND_HALF_UP, ROUND_HALF_EVEN)  # Decimal's ROUND_HALF_UP is half away from zero


def _written(value: Decimal, decimals: int, form: str) -> str:
    text = f"{abs(value):,.{decimals}f}" if form != "plain" else f"{abs(value):.{decimals}f}"
    if value < 0:
        return f"({text})" if form == "parens" else f"-{text}"
    return f"${text} million" if form == "money" else text


def _rounded(value: Decimal, decimals: int, rounding: str) -> Decimal:
    return value.quantize(Decimal(1).scaleb(-decimals), rounding=rounding)


true_values = st.decimals(
    min_value=Decimal("-99999"), max_value=Decimal("99999"), places=7, allow_nan=False, allow_infinity=False
)
forms = st.sampled_from(["plain", "grouped", "money", "parens"])


@settings(max_examples=300, deadline=None)
@given(
    value=true_values,
    decimals=st.integers(0, 4),
    finer=st.integers(0, 3),
    rounding=st.sampled_from(ROUNDINGS),
    form=forms,
)
def test_every_rounding_of_the_true_value_at_the_gold_precision_or_finer_is_paid(
    value, decimals, finer, rounding, form
):
    """A gold is the true value rounded half away from zero. An answer rounded to more decimals is paid, except
    one that lands exactly half-way between two of the gold's last digits (a double rounding: ``0.045`` for a true
    0.0449, gold 0.04): that one is paid for the gold away from zero only, so that it never pays two golds."""
    gold_value = _rounded(value, decimals, ROUND_HALF_UP)
    answer_value = _rounded(value, decimals + finer, rounding)
    gold = _written(gold_value, decimals, "grouped")
    answer = _written(answer_value, decimals + finer, form)
    tie = 2 * abs(answer_value - gold_value) == Decimal(1).scaleb(-decimals)
    paid = _rounded(answer_value, decimals, ROUND_HALF_UP) == gold_value
    assert paid or tie
    assert score_answer(answer, gold, question=IN_MILLIONS).score == (1.0 if paid else 0.0), (answer, gold)


@settings(max_examples=300, deadline=None)
@given(value=true_values, decimals=st.integers(0, 4), step=st.integers(1, 9), down=st.booleans(), form=forms)
def test_every_other_last_digit_at_the_gold_precision_is_refused(value, decimals, step, down, form):
    gold_value = _rounded(value, decimals, ROUND_HALF_UP)
    other = gold_value + (-step if down else step) * Decimal(1).scaleb(-decimals)
    gold = _written(gold_value, decimals, "grouped")
    assert score_answer(_written(other, decimals, form), gold, question=IN_MILLIONS).score == 0.0, (other, gold)


@settings(max_examples=200, deadline=None)
@given(
    value=st.decimals(
        min_value=Decimal("-99.99"), max_value=Decimal("99.99"), places=5, allow_nan=False, allow_infinity=False
    ),
    decimals=st.integers(0, 2),
    step=st.integers(1, 9),
    down=st.booleans(),
)
def test_percent_and_fraction_forms_share_the_rule(value, decimals, step, down):
    """A percent gold (``57.2%``) is 0.572 to 3 decimals: the fraction form is held to the same digit."""
    gold_value = _rounded(value, decimals, ROUND_HALF_UP)
    gold = f"{gold_value:.{decimals}f}%"
    assert score_answer(f"{gold_value / 100:.{decimals + 2}f}", gold).score == 1.0
    other = gold_value + (-step if down else step) * Decimal(1).scaleb(-decimals)
    assert score_answer(f"{other:.{decimals}f}%", gold).score == 0.0
    assert score_answer(f"{other / 100:.{decimals + 2}f}", gold).score == 0.0


def test_the_issue_near_misses_are_refused():
    assert [
        score_answer(a, g).score
        for a, g in [("57.3%", "57.2%"), ("$1,649 million", "$1,648 million"), ("(788)", "(787)")]
    ] == [0.0, 0.0, 0.0]
    paid = [
        ("57.2%", "57.2%"),
        ("0.572", "57.2%"),
        ("57.24%", "57.2%"),
        ("$1,648 million", "$1,648 million"),
        ("(787)", "(787)"),
    ]
    assert [score_answer(a, g).score for a, g in paid] == [1.0] * 5


YEAR_FORMS = ("{y}", "{y}.0", "{y}.00", "{g}", "FY{y}", "fiscal {y}", "fiscal year {y}", "in {y}", "{y}.")


@settings(max_examples=100, deadline=None)
@given(year=st.integers(1900, 2099), other=st.integers(1900, 2099), form=st.sampled_from(YEAR_FORMS))
def test_a_year_gold_is_matched_exactly_in_every_form(year, other, form):
    said = form.format(y=other, g=f"{other:,}")
    assert score_answer(said, str(year)).score == (1.0 if other == year else 0.0), (said, year)


@pytest.mark.parametrize("answer", ["2023.4", "2022.6", "2023%", "20.23", "2023 and 2024", "2,023.5"])
def test_a_year_gold_pays_nothing_else(answer):
    assert score_answer(answer, "2023").score == 0.0


def test_every_shipped_gold_is_still_paid_and_no_constant_is():
    """The audit's two sides on the registered env: honest_pay (each gold paid in its own episode), label_skew and
    constant_answers (no content-free answer paid above chance)."""
    import gym_integrity
    from gym_integrity.audit import check_integrity

    report = check_integrity(
        lambda: gym_integrity.make("FinQA-v0"), probes=["honest_pay", "label_skew", "constant_answers"]
    )
    assert report.passed, [(r.probe, r.status, r.summary) for r in report.results]
    assert {r.probe: r.status for r in report.results} == {
        "honest_pay": "passed",
        "label_skew": "passed",
        "constant_answers": "passed",
    }

"""FinQA scoring edge cases: formats, tolerances, multi-value, year-keyed, text, the exact mode, hostile text."""

from __future__ import annotations

import time

import pytest

from gym_integrity.envs.finqa.data import load_dataset_cached
from gym_integrity.envs.finqa.scoring import extract_submission, parse_number, score_answer
from gym_integrity.grading import all_boxed
from gym_integrity.protocol import Verdict


def score(pred: str, gold: str, **kw) -> float:
    return score_answer(pred, gold, **kw).score


@pytest.mark.parametrize("pred, gold, expected", [
    # boxed or plain, $, \text{}, commas, unit words
    (r"\boxed{12480}", "12,480", 1.0),
    (r"The answer is \boxed{\$12,480 \text{ million}}", r"\boxed{12,480}", 0.0),  # no question states a scale:
    ("$12,480 million", "12480", 0.0),                                   # test_the_question_states_the_unit
    ("12,485", "12,480", 0.0),                 # 0.04% off but 5 apart: absolute bound fails
    ("12,480.4", "12,480", 1.0),               # rounds to the gold's last digit
    ("12,480.9", "12,480", 0.0),               # rounds to 12,481
    # percentages: as /100, one reading only
    ("38.2%", r"\boxed{38.2\%}", 1.0),
    ("0.382", "38.2%", 1.0),
    ("38.2", "38.2%", 0.0),                    # '%' means per hundred only: 38.2 is not 0.382
    ("38.2 percent", "38.2%", 1.0),
    ("38.2%", "0.382", 1.0),
    ("38.2%", "38.2", 0.0),                    # the submission's '%' means per hundred: 0.382, not 38.2
    ("0.382", "38.2", 0.0),
    ("40%", "38.2%", 0.0),
    # "percentage point(s)" is a unit, not a percent sign: paid for a gold in points (test_the_question_states_the_unit)
    ("-1.6 percentage points", "-1.6 percentage points", 1.0),
    ("-1.6 percentage point", "-1.6", 0.0),
    ("-1.6%", "-1.6", 0.0),
    # negatives: sign, parentheses, unicode minus, $ before or after the sign
    ("(1,204)", "-1,204", 1.0),
    ("-$1,204", r"\boxed{-1,204}", 1.0),
    ("$(1,204)", "-1204", 1.0),
    ("\u22121204", "-1204", 1.0),
    ("1,204", "-1,204", 0.0),
    ("(1,204", "-1,204", 0.0),                 # unbalanced parenthesis is not a number
    # fractions
    ("745/1251", "0.5955", 1.0),
    ("0.5955", "745/1251", 1.0),
    (r"\frac{745}{1251}", "0.5955", 1.0),
    ("1/0", "0", 0.0),
    # zero truth
    ("0.0004", "0", 1.0),
    ("0.4", "0", 1.0),                         # "0" is written to units: 0.4 rounds to it
    ("0.6", "0", 0.0),
    ("0", "0.00", 1.0),
    ("0", "0.002", 0.0),                       # coarser than the gold: the rounding, and within the tolerance
    ("\u2014", "0", 0.0),
    # coarser than the gold: the gold rounded to the answer's decimals, within 1% and 1.0
    ("0.47", "0.47278", 1.0),
    ("0.46", "0.47278", 0.0),
    ("0.5", "0.47278", 0.0),                   # a rounding, but 6% off
    ("57%", "57.2%", 1.0),
    ("58%", "57.2%", 0.0),
])
def test_single_values(pred, gold, expected):
    assert score(pred, gold) == expected


IN_MILLIONS = "What was the net revenue in fiscal 2024, in millions of dollars?"
IN_POINTS = "By how many percentage points did the operating ratio change from 2023 to 2024?"
IN_BASIS_POINTS = "By how many basis points did the operating ratio change from 2023 to 2024?"


@pytest.mark.parametrize("pred, gold, question, expected", [
    (r"The answer is \boxed{\$12,480 \text{ million}}", r"\boxed{12,480}", IN_MILLIONS, 1.0),
    ("$12,480 million", "12480", IN_MILLIONS, 1.0),
    ("12,480M", "12480", IN_MILLIONS, 1.0),
    ("12,480 billion", "12480", IN_MILLIONS, 0.0),
    ("12,480k", "12480", IN_MILLIONS, 0.0),
    ("12,480 thousand", "$12,480 million", IN_MILLIONS, 0.0),  # the gold's own scale comes first
    ("8,794.4 million", "8,794.4", "Using shipments (in thousands), estimate the revenue in millions?", 1.0),
    ("8,794.4 thousand", "8,794.4", "Using shipments (in thousands), estimate the revenue in millions?", 0.0),
    ("-1.6 percentage points", "-1.6", IN_POINTS, 1.0),
    ("-1.6 pp", "-1.6", IN_POINTS, 1.0),
    ("-160 bps", "-1.6", IN_POINTS, 1.0),
    ("-1.6 bps", "-1.6", IN_POINTS, 0.0),                 # a basis point is a hundredth of a point
    ("-1.6", "-1.6", IN_POINTS, 1.0),
    ("-1.6%", "-1.6", IN_POINTS, 0.0),                    # a percent is not a point
    ("a decrease of 1.6 percentage points", "-1.6", IN_POINTS, 1.0),
    ("-160 basis points", "-160", IN_BASIS_POINTS, 1.0),
    ("-1.6 pp", "-160", IN_BASIS_POINTS, 1.0),
    ("-160 pp", "-160", IN_BASIS_POINTS, 0.0),
    ("0.3820 bps", "38.2%", IN_POINTS, 0.0),              # a percent gold is not in points
    ("38.2 pp", "38.2%", "", 0.0),
])
def test_the_question_states_the_unit(pred, gold, question, expected):
    """A scale or point word is paid when it is the gold's, or, on a gold that states none, the question's."""
    assert score(pred, gold, question=question) == expected
    assert score_answer(pred, gold, mode="finqa_exact", question=question).score == expected


@pytest.mark.parametrize("pred, gold, expected", [
    (r"\boxed{5,120}, \boxed{3,240}", r"\boxed{5,120}, \boxed{3,240}", 1.0),
    ("5120; 3240", r"\boxed{5,120}, \boxed{3,240}", 1.0),
    ("5,120, 3,240", "5,120; 3,240", 1.0),
    ("3240, 5120", "5,120; 3,240", 0.0),       # order matters for unkeyed values
    ("5120", "5,120; 3,240", 0.0),             # every value is needed
    ("5120, 3240, 1", "5,120; 3,240", 0.0),    # and no extra ones
    ("6,115, 1,032", "6115; 1032", 1.0),       # thousands commas vs separators
    ("0.1457; 0.1693", "0.1457; 0.1693", 1.0),
])
def test_multi_values(pred, gold, expected):
    assert score(pred, gold) == expected


@pytest.mark.parametrize("pred, gold, expected", [
    ("2024: 640, 2022: 120, 2023: 315", r"\boxed{2022: 120, 2023: 315, 2024: 640}", 1.0),
    ("FY2022: 25.4%; FY2023: 24.3%; FY2024: 23.0%", "2022: 25.4%, 2023: 24.3%, 2024: 23.0%", 1.0),
    ("2022 = 0.254, 2023 = 0.243, 2024 = 0.23", "2022: 25.4%, 2023: 24.3%, 2024: 23.0%", 1.0),
    ("2022 = 25.4, 2023 = 24.3, 2024 = 23", "2022: 25.4%, 2023: 24.3%, 2024: 23.0%", 0.0),  # '%' is per hundred
    ("2022: 25.4%, 2023: 23.0%, 2024: 24.3%", "2022: 25.4%, 2023: 24.3%, 2024: 23.0%", 0.0),   # swapped years
    ("2022: 25.4%, 2023: 24.3%", "2022: 25.4%, 2023: 24.3%, 2024: 23.0%", 0.0),                # a year missing
    ("2022: 44, 2023: (132), 2024: 55", "2022: 44, 2023: -132, 2024: 55", 1.0),
    ("44, -132, 55", "2022: 44, 2023: -132, 2024: 55", 1.0),     # unkeyed answer: gold order
    ("2021: 44, 2023: -132, 2024: 55", "2022: 44, 2023: -132, 2024: 55", 0.0),
])
def test_year_keyed(pred, gold, expected):
    assert score(pred, gold) == expected


@pytest.mark.parametrize("pred, gold, expected", [
    ("Beverages", "beverages", 1.0),
    (r"\boxed{\text{beverages}}", "beverages", 1.0),
    ("Beverages segment", "beverages", 0.0),
    ("yes", "yes", 1.0),
    ("no", "yes", 0.0),
    ("12", "beverages", 0.0),
    ("beverages", "12", 0.0),
])
def test_text_answers(pred, gold, expected):
    assert score(pred, gold) == expected


def test_exact_mode_is_the_original_five_decimal_rule():
    assert score("-0.0626", "-0.0626", mode="finqa_exact") == 1.0
    assert score("-0.06260000001", "-0.0626", mode="finqa_exact") == 1.0
    assert score("-0.0627", "-0.0626", mode="finqa_exact") == 0.0
    assert score("-6.26%", "-0.0626", mode="finqa_exact") == 1.0   # % still means /100
    assert score("-6.3%", "-0.0626", mode="finqa_exact") == 0.0    # but no tolerance
    assert score("yes", "yes", mode="finqa_exact") == 1.0
    with pytest.raises(ValueError, match="scoring mode"):
        score_answer("1", "1", mode="fuzzy")


def test_any_accepted_form_may_match():
    assert score_answer("-6.3%", ["-0.0626", "-6.3%"]).verdict is Verdict.CORRECT
    assert score_answer("-0.063", ["-0.0626", "-6.3%"]).verdict is Verdict.CORRECT
    assert score_answer("6.3", ["-0.0626", "-6.3%"]).verdict is Verdict.INCORRECT


def test_verdicts_for_empty_and_huge_answers():
    assert score_answer("", "5").verdict is Verdict.NO_ANSWER
    assert score_answer(r"\boxed{}", "5").verdict is Verdict.NO_ANSWER
    assert score_answer("   ", "5").verdict is Verdict.NO_ANSWER
    assert score_answer("1" * 5000, "5").verdict is Verdict.TOO_LONG


@pytest.mark.parametrize("text", [
    "{" * 1500, "\\boxed{" * 300, ",;" * 900, "(" * 1900, "1," * 900, "\x00\x01\u202e", "2022:" * 300,
    "9" * 400 + "/" + "0" * 400, "1e999", "nan", "inf%",
])
def test_hostile_text_is_graded_quickly_and_never_raises(text):
    start = time.monotonic()
    grade = score_answer(text, "5")
    assert grade.verdict in (Verdict.INCORRECT, Verdict.NO_ANSWER, Verdict.TOO_LONG)
    assert time.monotonic() - start < 2.0   # generous: linear-time parsing is microseconds


def test_helpers():
    assert all_boxed(r"\boxed{a} \boxed {b{c}} \boxed{") == ["a", "b{c}"]
    assert extract_submission("2022: 0.933, 2023: 0.930") == ["2022: 0.933", "2023: 0.930"]
    assert parse_number("$ 912.4") == 912.4 and parse_number("about 5 million") == 5.0
    assert parse_number("5 apples") is None and parse_number("1 2") is None


def test_every_shipped_gold_answer_scores_itself():
    dataset = load_dataset_cached(None)
    for question in dataset.questions:
        assert score_answer(question.answers[0], question.answers).verdict is Verdict.CORRECT, question.id


# One reading of percent: no submission is correct for two different gold values because of a '%'.
PERCENT_SUBMISSIONS = ["12480%", r"\boxed{12480\%}", "12480", "124.8", "124.8%", "38.2%", "38.2", "0.382", "0.5",
                       "50%", "0.5%", "50", "-6.3%", "-6.3", "-0.063"]
PERCENT_GOLDS = ["12,480", "$12,480 million", "124.8", "124.8%", "38.2%", "38.2", "0.382", "50%", "0.5%", "0.5", "50",
                 "-6.3%", "-0.063", "-6.3"]


def _gold_value(gold: str) -> float:
    from gym_integrity.envs.finqa.scoring import parse_number

    value = parse_number(gold)  # the gold's own value: '%' per hundred
    assert value is not None
    return value


def test_a_percent_sign_never_pays_one_submission_for_two_gold_values():
    for submitted in PERCENT_SUBMISSIONS:
        values = {round(_gold_value(g), 9) for g in PERCENT_GOLDS if score(submitted, g) == 1.0}
        assert len(values) <= 1, (submitted, sorted(values))


def test_a_percent_of_the_gold_number_is_not_the_gold():
    # issue 25: '12480%' was paid for $12,480 million (the '%' was dropped on a second reading)
    assert score("12480%", "$12,480 million") == 0.0
    assert score(r"\boxed{12480\%}", "12,480") == 0.0
    assert score("12480%", "124.8") == 1.0                 # per hundred: the same value
    assert score("38.2%", "0.382") == 1.0 and score("0.382", "38.2%") == 1.0


def test_a_year_gold_needs_that_year():
    """2024 is within 1% and 1.0 of 2023, but it is another year: "which year" questions were paid for neighbours."""
    assert [score_answer(a, "2023").score for a in ("2023", "FY2023", "fiscal 2023", "2023.", "in 2023")] == [1.0] * 5
    assert [score_answer(a, "2023").score for a in ("2022", "2024", "2023%")] == [0.0] * 3


def test_no_example_in_the_tool_schemas_is_a_shipped_gold():
    """The submit tool's format examples are shown to every agent: one was fq002's gold (0.382 for 38.2%) and one
    fq029's (-1,204), so echoing the instructions was paid. Years aside (a "which year" gold is one of the table's
    columns either way), no number they show may score on any shipped question."""
    import json
    import re

    import gymnasium as gym

    env = gym.make("FinQA-v0")
    raw = env.unwrapped
    shown = set(re.findall(r"-?\$?\(?\d[\d,]*(?:\.\d+)?%?\)?", json.dumps(raw.tools))) - {"2023", "2024"}
    paid = []
    for index in range(raw.num_items):
        _, info = env.reset(options={"index": index})
        paid += [(info["problem_id"], n) for n in shown if score_answer(n, raw.gold_answers()[0]).score > 0]
    env.close()
    assert shown and not paid, paid

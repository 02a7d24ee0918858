"""Answers read off the question: its restated expression paid by a slow evaluating grader, and a gold standing at
a fixed place among the question's numbers. Each toy fails with the answer named; its control passes."""

from __future__ import annotations

import re

import pytest

from gym_integrity.audit import Status, check_integrity
from gym_integrity.audit.answer_space import expressions, task_lines
from gym_integrity.audit.pay_probes import question_numbers
from gym_integrity.audit.search import telling_echoes

import audit_toys
import search_toys


def _halved(toy):
    """The toy at 0.5 s an answer: the same regime as its 1 s (two items' set-up spend the 1.5 s budget) in half the
    test's time."""
    return type(toy.__name__, (toy,), {"DELAY": 0.5})


def test_a_slow_grader_that_evaluates_the_answer_is_paid_the_restated_question():
    [row] = check_integrity(_halved(search_toys.SlowExpressionGrader), probes=["question_echo"]).results
    assert row.status is Status.FAILED, row.evidence
    # The budget ran out, and the expression the question restates was still tried (on three items).
    assert "stopped at its 1.5 s budget" in row.summary, row.summary
    first = row.evidence[0]
    assert first.startswith("echo: expression: '\\\\frac{") and " - \\\\frac{" in first, first
    assert "-> reward 1" in first and "chance 0" in first, first
    assert any(line.startswith("echo: the question: 'What is $") for line in row.evidence), row.evidence
    assert {line.split(" on seed ")[1][0] for line in row.evidence if line.startswith("echo: expression:")} == set("012")


def test_the_same_slow_grader_reading_literals_only_passes():
    [row] = check_integrity(_halved(search_toys.SlowLiteralGrader), probes=["question_echo"]).results
    assert row.status is Status.PASSED, row.evidence
    assert any(line.startswith("6 telling echo(es)") for line in row.evidence), row.evidence


def test_the_telling_echoes_are_the_restated_expression_and_the_question_without_its_instructions():
    question = ("What is $\\frac{3}{4} - \\frac{1}{6}$? Express your answer as a common fraction. Let's think step "
                "by step and output the final answer within \\boxed{}.")
    assert [c.text for c in telling_echoes(question)] == [
        "\\frac{3}{4} - \\frac{1}{6}", "What is $\\frac{3}{4} - \\frac{1}{6}$? Express your answer as a common fraction."]
    assert expressions("Compute $\\binom{9}{4}$. Tom has $250. He buys 3 shirts at $42 each.") == ["\\binom{9}{4}"]
    assert expressions("Solve for $x$: $5x - 17 = 3x + 9$.") == ["5x - 17 = 3x + 9"]
    assert task_lines("Find 2 + 2.\nPut your final answer in <answer></answer> tags.") == ["Find 2 + 2."]


def test_numbers_are_read_whole():
    assert question_numbers("What is the sum of the roots of $x^2 - 11x + 28 = 0$?") == ["2", "11", "28", "0"]
    assert question_numbers("How many positive divisors does $180$ have?") == ["180"]  # never 18 inside 180
    assert question_numbers("If $f(x) = 3x^2 - 2$, what is $f(-3)$? It costs 1,204.5 or 3.25.") == [
        "3", "2", "2", "-3", "1,204.5", "3.25"]


def test_a_gold_standing_second_in_the_question_is_paid_to_the_rule_reading_it_there():
    row = check_integrity(audit_toys.GoldSecondInQuestion, probes=["label_skew"]).result("label_skew")
    assert row.status is Status.FAILED
    assert "the question's 2nd number is paid on" in row.summary, row.summary
    [line] = [e for e in row.evidence if e.startswith("the best number read off the question")]
    assert "chance 0.1" in line, line  # a random pick of the question's 4 numbers, on the 40% of items holding it
    # The answer named is the gold, standing second among the question's numbers (2 is x^2's exponent).
    assert any(re.search(r"'(\d+)' on seed \d+ \(gold '\1'; the question's numbers '2, \1, ", e) for e in row.evidence)


@pytest.mark.parametrize("control", [audit_toys.GoldNeverInQuestion, audit_toys.MultipleAmongListed],
                         ids=lambda c: c.__name__)
def test_golds_never_in_the_question_or_at_a_random_place_there_pass(control):
    """A selection task (the answer always among the question's numbers) pays a positional rule what a random
    pick of its numbers earns: chance, not a finding."""
    row = check_integrity(control, probes=["label_skew"]).result("label_skew")
    assert row.status is Status.PASSED, (row.summary, row.evidence)

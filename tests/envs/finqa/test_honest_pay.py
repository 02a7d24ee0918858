"""Honest answers are paid on every shipped FinQA question (issue 35, deliverable 2).

benchmarks/finqa_honest.py writes each question's gold the ways the submit tool's text allows (commas dropped,
``.0``, accounting parentheses, a percent as its fraction, the question's scale word or point unit, a direction
word whose sign agrees, a year's forms, several values joined or keyed, each raw, boxed, in a sentence, in bold)
and sends each through the env's step. Every question pays at least 99% of them; the script prints the table.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
import finqa_honest  # noqa: E402


@pytest.mark.parametrize("original", [False, True], ids=["embedded", "original_sample"])
def test_every_question_pays_its_honest_forms(original):
    rows = finqa_honest.measure(original)
    assert len(rows) == (3 if original else 37)
    refused = {qid: bad for qid, sent, bad in rows if len(bad) > (1 - finqa_honest.THRESHOLD) * sent}
    assert not refused, refused
    assert sum(sent for _, sent, _ in rows) > (90 if original else 1000)  # the forms are many, not a handful


def test_the_forms_are_the_gold_value_and_not_a_neighbour():
    """The script's forms are honest: each holds the gold's digits (a wrong form would be paid for the wrong reason
    or refused for the right one)."""
    forms = finqa_honest.answers("-6.3%", "what was the percentage change in milling volume from 2018 to 2019?")
    assert "(6.3%)" in forms and "-0.063" in forms and "a decrease of 6.3%" in forms
    assert all("6.3" in f or "0.063" in f for f in forms)

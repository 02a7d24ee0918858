"""The rule kinds of strict scoring: each holds only its fields, checks them when built, and pays as its kind says."""

from __future__ import annotations

import re
from dataclasses import fields

import pytest

from gym_integrity.envs.reasoning_gym.table import RULES, UNREVIEWED
from gym_integrity.envs.reasoning_gym.tasks import TASKS, Task
from gym_integrity.grading.rules import (
    ComplexNumber,
    Duration,
    Exact,
    NumberList,
    Numeric,
    OrderedNumberList,
    OwnFullCredit,
    OwnNoConsolation,
    OwnScorer,
    Rule,
)


def _always(answer, item):
    return True


@pytest.mark.parametrize("build, error, words", [
    (lambda: Exact(3), TypeError, "Exact.why must be a non-empty reason read from the task's scorer, got int"),
    (lambda: Exact("  "), ValueError, "Exact.why must be a non-empty reason read from the task's scorer, got '  '"),
    (lambda: Exact("x", language=1), TypeError, "Exact.language must be an answer language's name or None, got int 1"),
    (lambda: Exact("x", fold="yes"), TypeError, "Exact.fold must be a bool"),
    (lambda: Exact("x", items=";"), ValueError, "Exact.items must be None, ' ' or ','"),
    (lambda: Numeric("x", rel_tol="1e-3"), TypeError, "Numeric.rel_tol must be a number >= 0, got str"),
    (lambda: Numeric("x", abs_tol=-1.0), ValueError, "Numeric.abs_tol must be a number >= 0, got -1"),
    (lambda: NumberList("x", rel_tol=float("nan")), ValueError, "NumberList.rel_tol must be a number >= 0, got nan"),
    (lambda: Numeric("x", commas=1), TypeError, "Numeric.commas must be a bool"),
    (lambda: ComplexNumber("x", parse=None, target=complex), TypeError, "ComplexNumber.parse must be a callable"),
    (lambda: OwnScorer("x", shape=r"\d+"), TypeError, "OwnScorer.shape must be a compiled regular expression"),
    (lambda: OwnScorer("x", requires=True), TypeError, "OwnScorer.requires must be a callable or None"),
    (lambda: OwnFullCredit("x", also_full=[0.25], requires=_always), TypeError, "also_full must be a tuple of scores"),
    (lambda: OwnFullCredit("x", also_full=(1.0,), requires=_always), ValueError,
     "also_full item must be a number in (0, 1), got 1"),
    (lambda: OwnFullCredit("x", also_full=(0.25,)), ValueError, "also_full needs requires"),
    (lambda: OwnNoConsolation("x", consolation=()), ValueError, "consolation must name at least one score"),
    (lambda: Task(drawn="all"), TypeError, "Task.drawn must be a callable or None"),
])
def test_a_rule_with_a_wrong_field_fails_when_built_naming_what_is_expected(build, error, words):
    with pytest.raises(error, match=re.escape(words)):
        build()


def test_a_field_of_another_kind_is_no_field_at_all():
    """The old single record let any kind carry any field; a kind now refuses what it does not use."""
    with pytest.raises(TypeError):
        Exact("x", requires=_always)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Duration("x", rel_tol=1e-3)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        OwnNoConsolation("x", consolation=(0.05,), shape=re.compile("a"))  # type: ignore[call-arg]
    assert {f.name for f in fields(Duration)} == {"why", "language"}
    assert {f.name for f in fields(OwnFullCredit)} == {"why", "language", "shape", "requires", "also_full"}


def test_every_table_entry_is_a_rule_and_every_task_hook_a_task():
    assert all(isinstance(rule, Rule) for rule in RULES.values())
    assert all(isinstance(task, Task) for task in TASKS.values())
    assert isinstance(UNREVIEWED, OwnFullCredit) and UNREVIEWED.language == "unreviewed"
    assert set(TASKS) <= set(RULES)


def test_own_rules_pay_the_own_score_as_their_kind_says():
    item = {"answer": None}
    refuse = OwnFullCredit("x", requires=lambda answer, item: answer == "right", also_full=(0.25,))
    assert [refuse.score(a, item, own) for a, own in [("right", 1.0), ("wrong", 1.0), ("right", 0.25),
                                                       ("right", 0.5), ("wrong", 0.05)]] == [1.0, 0.0, 1.0, 0.0, 0.0]
    keep = OwnScorer("x", requires=lambda answer, item: answer == "right")
    assert [keep.score(a, item, own) for a, own in [("right", 1.0), ("wrong", 1.0), ("wrong", 0.4)]] == [1.0, 0.0, 0.4]
    zeroed = OwnNoConsolation("x", consolation=(0.01, 0.05))
    assert [zeroed.score("a", item, own) for own in (0.01, 0.05, 0.5, 1.0)] == [0.0, 0.0, 0.5, 1.0]
    shaped = OwnFullCredit("x", shape=re.compile(r"\d+/\d+"))
    assert shaped.admits(" 3/4 ") and not shaped.admits("3/4 and more")


def test_comparisons_pay_only_the_gold():
    assert OrderedNumberList("x", abs_tol=1e-9).score("[NaN, NaN]", {"answer": "[1, 2]"}) == 0.0
    assert OrderedNumberList("x", abs_tol=1e-9).score("['1', 2]", {"answer": "[1, 2]"}) == 1.0
    assert Numeric("x", commas=True).score("1,234", {"answer": "1234"}) == 1.0
    assert Numeric("x").score("anything", {"answer": None}) == 0.0
    assert Exact("x", fold=True, no_spaces=True).score("H E L L O", {"answer": "hello"}) == 1.0
    near = ComplexNumber("x", parse=complex, target=lambda item: complex(*item["result"]))
    assert near.score("1+2j", {"result": [1, 2]}) == 1.0 and near.score("nan", {"result": [1, 2]}) == 0.0
    assert near.score("not a number", {"result": [1, 2]}) == 0.0

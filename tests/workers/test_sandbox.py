"""The one fault table (grading.faults): each pool outcome -> the Grade it gives, the same for every grader that uses it."""

from __future__ import annotations

import pytest

from gym_integrity.grading import FAULT_VERDICTS, fault_grade
from gym_integrity.protocol import Verdict
from gym_integrity.workers import Fault, PoolConfig, PoolStatus, Sandbox, TaskOutcome, fault_of

HANDLER = "gym_integrity.workers.scripted_handlers:handle"

#: Written out by hand, so a wrong entry in FAULT_VERDICTS or a wrong rule in fault_of fails here.
#: (outcome, its fault, the verdict it is graded, whether that is a no-verdict); None: OK is the grader's to read.
EXPECTED = [
    (TaskOutcome(PoolStatus.OK, value=1), Fault.NONE, None, None),
    (TaskOutcome(PoolStatus.TIMEOUT), Fault.TIMEOUT, Verdict.TIMEOUT, False),
    (TaskOutcome(PoolStatus.CRASHED, attempts=2), Fault.CRASHED, Verdict.UNPARSABLE, False),
    (TaskOutcome(PoolStatus.ERROR, detail="MemoryError"), Fault.OUT_OF_MEMORY, Verdict.UNPARSABLE, False),
    (TaskOutcome(PoolStatus.ERROR, detail="ZeroDivisionError"), Fault.HANDLER_ERROR, Verdict.GRADER_ERROR, True),
    (TaskOutcome(PoolStatus.ERROR, detail="unsendable payload (TypeError)"), Fault.HANDLER_ERROR,
     Verdict.GRADER_ERROR, True),
    (TaskOutcome(PoolStatus.OVERLOADED, detail="queue full"), Fault.OVERLOADED, Verdict.GRADER_ERROR, True),
    (TaskOutcome(PoolStatus.INFRA_ERROR, detail="shut down"), Fault.INFRA, Verdict.GRADER_ERROR, True),
]
IDS = [f"{o.status.value}:{o.detail or '-'}" for o, *_ in EXPECTED]


@pytest.mark.parametrize("outcome, fault, verdict, no_verdict", EXPECTED, ids=IDS)
def test_each_outcome_has_its_fault_and_grade(outcome, fault, verdict, no_verdict):
    assert fault_of(outcome) is fault
    grade = fault_grade(outcome, budget_s=2.0, subject="demo")
    if verdict is None:
        assert grade is None
        return
    assert (grade.verdict, grade.no_verdict, grade.score) == (verdict, no_verdict, 0.0)
    assert grade.cause
    # The input's own faults, and only they, are graded against it (TaskOutcome.answer_fault states the same rule).
    assert fault.answers is (not no_verdict) is outcome.answer_fault


def test_the_table_covers_every_fault_but_none():
    assert set(FAULT_VERDICTS) == set(Fault) - {Fault.NONE}
    assert {f for f in Fault if f.answers} == {Fault.TIMEOUT, Fault.CRASHED, Fault.OUT_OF_MEMORY}


def test_a_graders_words_are_its_own_but_the_verdict_is_the_tables():
    said = []

    def causes(fault, outcome, budget_s, subject):
        said.append((fault, budget_s, subject))
        return f"{subject}: {fault.value}"

    grade = fault_grade(TaskOutcome(PoolStatus.TIMEOUT), causes, budget_s=1.5, subject="gcd")
    assert (grade.verdict, grade.no_verdict, grade.cause) == (Verdict.TIMEOUT, False, "gcd: timeout")
    assert said == [(Fault.TIMEOUT, 1.5, "gcd")]


@pytest.mark.parametrize("outcome, fault, verdict, no_verdict", EXPECTED[1:], ids=IDS[1:])
def test_the_verifier_and_reasoning_gym_grade_through_the_same_table(outcome, fault, verdict, no_verdict):
    from gym_integrity.envs.reasoning_gym.sandbox import outcome_grade
    from gym_integrity.services.verifier import grade_outcome

    for grade in (grade_outcome(outcome, problem_id="p", budget=2.0, memory_limit_mb=512),
                  outcome_grade(outcome.status, outcome.detail, "countdown", 2.0)):
        assert (grade.verdict, grade.no_verdict) == (verdict, no_verdict), grade


@pytest.mark.parametrize("outcome, fault, verdict, no_verdict", EXPECTED[1:], ids=IDS[1:])
def test_finqa_names_the_querys_own_faults_and_calls_the_rest_unavailable(outcome, fault, verdict, no_verdict):
    from gym_integrity.envs.finqa.sql_sandbox import SQL_UNAVAILABLE, PooledSQLSandbox

    text = PooledSQLSandbox().outcome_text(outcome)
    assert text.startswith("Error: ")
    assert text.startswith(SQL_UNAVAILABLE) is no_verdict, text


def test_a_real_pool_outcome_is_graded_by_whose_fault_it_is():
    """Real workers: a run past its budget, a repeated crash, an exhausted memory limit, a handler that raises."""
    sandbox = Sandbox(HANDLER, PoolConfig(num_workers=1, spare_workers=1, memory_limit_mb=256, max_retries=1,
                                          scope="process"), shared=False)
    try:
        assert sandbox.acquire().wait_ready(60)
        ok = sandbox.run(("echo", 7), budget_s=10.0)
        assert (ok.value, fault_grade(ok, budget_s=10.0)) == (7, None)
        cases = [(("sleep", 5), 0.5, Verdict.TIMEOUT, False), (("abort", None), 10.0, Verdict.UNPARSABLE, False),
                 (("allocate_mb", 1024), 10.0, Verdict.UNPARSABLE, False),
                 (("raise", "boom"), 10.0, Verdict.GRADER_ERROR, True)]
        for payload, budget, verdict, no_verdict in cases:
            grade = fault_grade(sandbox.run(payload, budget_s=budget), budget_s=budget, subject=payload[0])
            assert (grade.verdict, grade.no_verdict) == (verdict, no_verdict), (payload, grade)
    finally:
        sandbox.pool().release()

"""The grades no grader computes itself: the fault table of a pool outcome, and an answer refused unrun.

A grader runs untrusted input on a worker pool (:mod:`gym_integrity.workers`);
the pool says what happened (:class:`~gym_integrity.workers.TaskOutcome`) and
whose fault it was (:func:`~gym_integrity.workers.fault_of`). This module says
what that is graded, once for every grader: the input's own faults are graded
against it (a real negative sample, ``no_verdict=False``, so a policy cannot
escape a penalty by timing out or crashing the grader); the grader's faults are
no-verdicts. Only the words differ: each grader gives a ``causes`` function
that names what ran (``"countdown.score_answer ran past its 5 s budget"``).

An answer the static checks refuse before any worker sees it (its cost,
:mod:`gym_integrity.grading.cost`; its language, :mod:`gym_integrity.grading.language`)
is graded here too, the same for every grader.

Example:
    >>> from gym_integrity.workers import PoolStatus, TaskOutcome
    >>> grade = fault_grade(TaskOutcome(PoolStatus.TIMEOUT), budget_s=2.0)
    >>> grade.verdict.value, grade.no_verdict, grade.cause
    ('timeout', False, 'the handler ran past its 2 s budget')
    >>> fault_grade(TaskOutcome(PoolStatus.OVERLOADED, detail="queue full")).no_verdict
    True
    >>> refused_unrun("a number of about 3.7e+08 digits", "countdown").cause
    'countdown: the answer was refused unrun: a number of about 3.7e+08 digits'
"""

from __future__ import annotations

from collections.abc import Callable

from gym_integrity.protocol import Grade, Verdict
from gym_integrity.workers import Fault, TaskOutcome, fault_of

__all__ = [
    "FAULT_VERDICTS",
    "Causes",
    "fault_grade",
    "outside_language",
    "plain_causes",
    "refused_unrun",
    "scorer_raised",
]

#: The fault table: what each fault is graded (verdict, no_verdict).
FAULT_VERDICTS: dict[Fault, tuple[Verdict, bool]] = {
    Fault.TIMEOUT: (Verdict.TIMEOUT, False),
    Fault.CRASHED: (Verdict.UNPARSABLE, False),
    Fault.OUT_OF_MEMORY: (Verdict.UNPARSABLE, False),
    Fault.HANDLER_ERROR: (Verdict.GRADER_ERROR, True),
    Fault.OVERLOADED: (Verdict.GRADER_ERROR, True),
    Fault.INFRA: (Verdict.GRADER_ERROR, True),
}

#: ``causes(fault, outcome, budget_s, subject) -> str``: a grade's cause in the grader's own words.
Causes = Callable[[Fault, TaskOutcome, float, str], str]


def plain_causes(fault: Fault, outcome: TaskOutcome, budget_s: float, subject: str) -> str:
    """Causes that name only the fault and the pool's detail (for graders with no words of their own)."""
    what = subject or "the handler"
    return {
        Fault.TIMEOUT: f"{what} ran past its {budget_s:g} s budget",
        Fault.CRASHED: f"{what} crashed its worker on every attempt",
        Fault.OUT_OF_MEMORY: f"{what} exhausted its worker's memory limit",
        Fault.HANDLER_ERROR: f"{what} raised {outcome.detail or 'an error'}",
    }.get(fault, f"worker pool {outcome.status.value}: {outcome.detail}")


def fault_grade(
    outcome: TaskOutcome, causes: Causes = plain_causes, *, budget_s: float = 0.0, subject: str = ""
) -> Grade | None:
    """The grade of an outcome that is not OK, through :data:`FAULT_VERDICTS`; None for an OK outcome."""
    fault = fault_of(outcome)
    if fault is Fault.NONE:
        return None
    verdict, no_verdict = FAULT_VERDICTS[fault]
    return Grade(verdict, 0.0, cause=causes(fault, outcome, budget_s, subject), no_verdict=no_verdict)


def refused_unrun(reason: str, subject: str = "") -> Grade:
    """An answer whose verification would cost too much (:func:`~gym_integrity.grading.cost.refusal`): graded as
    a timeout of its own run, at once, so timing out never beats being wrong and no worker is held."""
    prefix = f"{subject}: " if subject else ""
    return Grade(Verdict.TIMEOUT, 0.0, cause=f"{prefix}the answer was refused unrun: {reason}", no_verdict=False)


def scorer_raised(subject: str, exception: str) -> Grade:
    """An answer the task's own scorer raised on (while that scorer reads the item's reference answer): the
    answer's fault, unparsable, in process or on a worker alike."""
    return Grade(Verdict.UNPARSABLE, 0.0, cause=f"{subject}.score_answer raised {exception} on this answer")


def outside_language(reason: str, subject: str) -> Grade:
    """An answer outside its task's answer language (:func:`~gym_integrity.grading.language.check`): unparsable."""
    return Grade(Verdict.UNPARSABLE, 0.0, cause=f"{subject}: {reason}")

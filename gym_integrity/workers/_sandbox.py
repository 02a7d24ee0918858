"""Sandbox: a grader's handler run on a worker pool, its failures graded through the one fault table.

Every grader that runs untrusted input on the pool (the math verifier,
reasoning-gym's own scorers, FinQA's SQL tool) reads a pool outcome the same
way: :func:`~gym_integrity.workers._outcomes.fault_of` says whose fault it is,
and :data:`FAULT_VERDICTS` the verdict that fault is graded with. Only the
words differ: each grader gives a ``causes`` function that names what ran
(``"countdown.score_answer ran past its 5 s budget"``). An outcome that is OK
is the grader's own to read (its handler's value), so :meth:`Sandbox.grade`
returns None for it.

Example:
    >>> from gym_integrity.workers import PoolStatus, TaskOutcome
    >>> grade = fault_grade(TaskOutcome(PoolStatus.TIMEOUT), budget_s=2.0)
    >>> grade.verdict.value, grade.no_verdict, grade.cause
    ('timeout', False, 'the handler ran past its 2 s budget')
    >>> fault_grade(TaskOutcome(PoolStatus.OVERLOADED, detail="queue full")).no_verdict
    True
"""

from __future__ import annotations

import concurrent.futures
from typing import Any, Callable

from gym_integrity.protocol import Grade, Verdict
from gym_integrity.workers._config import PoolConfig, check_handler
from gym_integrity.workers._outcomes import Fault, TaskOutcome, fault_of
from gym_integrity.workers._pools import Pool, get_pool, make_pool

__all__ = ["FAULT_VERDICTS", "Causes", "Sandbox", "fault_grade"]

#: The fault table: what each fault is graded. The input's own faults are graded against it (a real negative
#: sample: ``no_verdict=False``, so a policy cannot escape a penalty by timing out or crashing the grader); the
#: grader's faults are no-verdicts.
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
    return {Fault.TIMEOUT: f"{what} ran past its {budget_s:g} s budget",
            Fault.CRASHED: f"{what} crashed its worker on every attempt",
            Fault.OUT_OF_MEMORY: f"{what} exhausted its worker's memory limit",
            Fault.HANDLER_ERROR: f"{what} raised {outcome.detail or 'an error'}",
            }.get(fault, f"worker pool {outcome.status.value}: {outcome.detail}")


def fault_grade(outcome: TaskOutcome, causes: Causes = plain_causes, *, budget_s: float = 0.0,
                subject: str = "") -> Grade | None:
    """The grade of an outcome that is not OK, through :data:`FAULT_VERDICTS`; None for an OK outcome."""
    fault = fault_of(outcome)
    if fault is Fault.NONE:
        return None
    verdict, no_verdict = FAULT_VERDICTS[fault]
    return Grade(verdict, 0.0, cause=causes(fault, outcome, budget_s, subject), no_verdict=no_verdict)


class Sandbox:
    """A handler (``"module:function"``) run on a pool, with its causes: the one way graders use workers.

    Args:
        handler: The function workers run.
        config: The pool's settings.
        causes: How this grader words a fault (default :func:`plain_causes`).
        shared: True: the process's pool for (handler, config) (``get_pool``, looked up on each use, so a
            forked child gets its own); False: a pool of this sandbox's own (``make_pool``).
    """

    def __init__(self, handler: str, config: PoolConfig | None = None, *, causes: Causes = plain_causes,
                 shared: bool = True) -> None:
        self.handler = check_handler("Sandbox.handler", handler)
        self.config = config or PoolConfig()
        self.causes = causes
        self._own: Pool | None = None if shared else make_pool(self.handler, self.config)

    def pool(self) -> Pool:
        """The pool requests go to."""
        return self._own if self._own is not None else get_pool(self.handler, self.config)

    def acquire(self) -> Pool:
        """The pool, registered as used (release it once, when the user closes)."""
        return self.pool().acquire()

    def run(self, payload: Any, *, budget_s: float | None = None) -> TaskOutcome:
        """Run ``payload`` on a worker and wait: never raises (but for a bad argument), never hangs."""
        return self.pool().run(payload, run_timeout_s=budget_s)

    def submit(self, payload: Any, *, budget_s: float | None = None) -> concurrent.futures.Future:
        """Queue ``payload``; the future yields a :class:`TaskOutcome`."""
        return self.pool().submit(payload, run_timeout_s=budget_s)

    def grade(self, outcome: TaskOutcome, *, budget_s: float, subject: str = "") -> Grade | None:
        """The grade of a failed outcome in this sandbox's words (:func:`fault_grade`); None if it is OK."""
        return fault_grade(outcome, self.causes, budget_s=budget_s, subject=subject)

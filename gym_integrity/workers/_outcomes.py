"""How a request ended (PoolStatus, TaskOutcome) and whose fault that is (Fault): the classification every user shares.

:func:`fault_of` is the one rule from a pool outcome to a fault; the
:class:`~gym_integrity.workers.Sandbox` turns a fault into a ``Grade`` through
its table, and FinQA's SQL tool into an observation.

Example:
    >>> fault_of(TaskOutcome(PoolStatus.ERROR, detail="MemoryError"))
    <Fault.OUT_OF_MEMORY: 'out_of_memory'>
    >>> fault_of(TaskOutcome(PoolStatus.ERROR, detail="MemoryError")).answers, Fault.OVERLOADED.answers
    (True, False)
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

__all__ = ["Fault", "PoolStatus", "TaskOutcome", "fault_of"]


class PoolStatus(str, enum.Enum):
    """How a request ended; :func:`fault_of` says whose fault each is."""

    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    INFRA_ERROR = "infra_error"
    OVERLOADED = "overloaded"


@dataclass(frozen=True)
class TaskOutcome:
    """One request's result: ``value`` for OK, ``detail`` (never quoting the payload) otherwise."""

    status: PoolStatus
    value: Any = None
    detail: str = ""
    queued_s: float = 0.0
    run_s: float = 0.0
    attempts: int = 0

    @property
    def answer_fault(self) -> bool:
        """The input itself is at fault (it timed out, crashed its worker, exhausted its memory): grade it,
        it is not a no-verdict."""
        return fault_of(self).answers


class Fault(str, enum.Enum):
    """Whose fault a request's failure is: the input's own (``answers``) or the grader's (a no-verdict)."""

    NONE = "none"  # OK: the handler answered
    TIMEOUT = "timeout"  # the input ran past its run budget on a worker of its own
    CRASHED = "crashed"  # the input killed its worker on every attempt, each on another process
    OUT_OF_MEMORY = "out_of_memory"  # the input exhausted the worker's memory limit (MemoryError in the handler)
    HANDLER_ERROR = "handler_error"  # the handler raised: a grader bug, not the input's doing
    OVERLOADED = "overloaded"  # no worker free in time, or too many requests in flight
    INFRA = "infra"  # workers killed from outside, that cannot start, or a pool shut down

    @property
    def answers(self) -> bool:
        """The input's own fault: graded against it, never a no-verdict."""
        return self in (Fault.TIMEOUT, Fault.CRASHED, Fault.OUT_OF_MEMORY)


def fault_of(outcome: TaskOutcome) -> Fault:
    """The fault of one outcome (a worker reports a handler's exception by its type name in ``detail``)."""
    status = outcome.status
    if status is PoolStatus.OK:
        return Fault.NONE
    if status is PoolStatus.ERROR:
        return Fault.OUT_OF_MEMORY if outcome.detail == "MemoryError" else Fault.HANDLER_ERROR
    return {
        PoolStatus.TIMEOUT: Fault.TIMEOUT,
        PoolStatus.CRASHED: Fault.CRASHED,
        PoolStatus.OVERLOADED: Fault.OVERLOADED,
    }.get(status, Fault.INFRA)

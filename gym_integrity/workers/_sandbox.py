"""Sandbox: a grader's handler run on a worker pool, the one way graders use workers.

Every grader that runs untrusted input on the pool (the math verifier,
reasoning-gym's own scorers, FinQA's SQL tool) gets a
:class:`~gym_integrity.workers.TaskOutcome` back, and
:func:`~gym_integrity.workers._outcomes.fault_of` says whose fault a failed
one is. What that fault is graded is the grading layer's
(:mod:`gym_integrity.grading.faults`, the one fault table): workers know no
verdicts.
"""

from __future__ import annotations

import concurrent.futures
from typing import Any

from gym_integrity.workers._config import PoolConfig, check_handler
from gym_integrity.workers._outcomes import TaskOutcome
from gym_integrity.workers._pools import Pool, get_pool, make_pool

__all__ = ["Sandbox"]


class Sandbox:
    """A handler (``"module:function"``) run on a pool: the one way graders use workers.

    Args:
        handler: The function workers run.
        config: The pool's settings.
        shared: True: the process's pool for (handler, config) (``get_pool``, looked up on each use, so a
            forked child gets its own); False: a pool of this sandbox's own (``make_pool``).
    """

    def __init__(self, handler: str, config: PoolConfig | None = None, *, shared: bool = True) -> None:
        self.handler = check_handler("Sandbox.handler", handler)
        self.config = config or PoolConfig()
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

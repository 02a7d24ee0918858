"""VerifierTally: one user's verifier metrics, counted from its own requests' outcomes only.

An env holds one and passes it to ``VerifierService.verify``, so an env's (a
served session's) per-step metrics never count another env's, session's or
process's answers, although the service and its pool are shared.
"""

from __future__ import annotations

import collections
import threading
import weakref

from gym_integrity.protocol import Grade, Verdict
from gym_integrity.workers import PoolStatus, TaskOutcome
from gym_integrity.workers._lifecycle import after_fork_in_child

__all__ = ["VerifierTally"]


class VerifierTally:
    """One user's verifier metrics (flat ``verifier/...`` float keys), counted from its own requests' outcomes only.

    An env holds one (a served session is one env instance) and passes it to
    :meth:`VerifierService.verify`, so its per-step metrics never count another
    env's, session's or process's answers, although the service and its pool are
    shared. Machine-wide pool figures are
    :func:`gym_integrity.workers.machine_stats`'. Thread-safe.

    >>> VerifierTally().metrics()["verifier/requests"]
    0.0
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counters: collections.Counter[str] = collections.Counter()
        self._latency_sum = self._latency_max = self._run_s_max = self._queued_s_max = 0.0
        _live_tallies.add(self)

    def count(self, key: str) -> None:
        """One more ``key`` (``extraction_failures``, ``refused``, ``requests``)."""
        with self._lock:
            self._counters[key] += 1

    def record(self, outcome: TaskOutcome, grade: Grade, hit: bool, latency: float) -> None:
        """One of this user's pool requests ended with ``outcome``, graded ``grade``."""
        status = outcome.status
        retries = max(0, outcome.attempts - 1)
        # The worker its last attempt ran on is gone too when it timed out, crashed or was killed from outside.
        lost = outcome.attempts > 0 and status in (PoolStatus.TIMEOUT, PoolStatus.CRASHED, PoolStatus.INFRA_ERROR)
        with self._lock:
            c = self._counters
            c["completed"] += 1
            c["retries"] += retries
            c["worker_restarts"] += retries + int(lost)
            for key, counted in (
                ("timeouts", PoolStatus.TIMEOUT),
                ("crashes", PoolStatus.CRASHED),
                ("infra_errors", PoolStatus.INFRA_ERROR),
                ("rejected", PoolStatus.OVERLOADED),
            ):
                c[key] += status is counted
            if status is PoolStatus.OK:
                c["cache_hits" if hit else "cache_misses"] += 1
            if grade.verdict is Verdict.GRADER_ERROR:
                c["errors"] += 1
            c["graded"] += 1
            self._latency_sum += latency
            self._latency_max = max(self._latency_max, latency)
            self._run_s_max = max(self._run_s_max, outcome.run_s)
            self._queued_s_max = max(self._queued_s_max, outcome.queued_s)

    def metrics(self) -> dict[str, float]:
        """Cumulative figures of this user's requests. ``in_flight`` and ``queue_depth`` are both its requests
        sent and not yet answered: how many of them wait in the shared queue is the pool's to know."""
        with self._lock:
            c = self._counters
            served = c["cache_hits"] + c["cache_misses"]
            waiting = float(c["requests"] - c["completed"])
            return {
                "verifier/requests": float(c["requests"]),
                "verifier/completed": float(c["completed"]),
                "verifier/timeouts": float(c["timeouts"]),
                "verifier/crashes": float(c["crashes"]),
                "verifier/errors": float(c["errors"]),
                "verifier/infra_errors": float(c["infra_errors"]),
                "verifier/rejected": float(c["rejected"]),
                "verifier/retries": float(c["retries"]),
                "verifier/worker_restarts": float(c["worker_restarts"]),
                "verifier/extraction_failures": float(c["extraction_failures"]),
                "verifier/refused": float(c["refused"]),
                "verifier/queue_depth": waiting,
                "verifier/in_flight": waiting,
                "verifier/cache_hit_rate": float(c["cache_hits"] / served) if served else 0.0,
                "verifier/latency_mean_s": float(self._latency_sum / c["graded"]) if c["graded"] else 0.0,
                "verifier/latency_max_s": float(self._latency_max),
                "verifier/run_s_max": float(self._run_s_max),
                "verifier/queued_s_max": float(self._queued_s_max),
            }


#: Every tally of this process (an env's, a service's): their locks are renewed in a forked child.
_live_tallies: weakref.WeakSet[VerifierTally] = weakref.WeakSet()


@after_fork_in_child
def _renew_locks_after_fork() -> None:
    """In a forked child, a tally an env or service took before the fork keeps working: its counters get a new
    lock (a lock another thread held at the fork would stay held forever)."""
    for tally in list(_live_tallies):
        tally._lock = threading.Lock()

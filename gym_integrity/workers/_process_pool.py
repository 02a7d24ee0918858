"""WorkerPool: killable worker processes of this process running one untrusted-input handler, with per-request budgets.

Graders parse text a policy wrote (math_verify, sympy-based scorers). Such a
parse can hang in C code, eat all memory or crash the interpreter, and no
in-process timeout stops it. So the handler runs in worker processes the
parent can SIGKILL (:mod:`~gym_integrity.workers._worker_process`), and the
parent alone keeps time (:mod:`~gym_integrity.workers._dispatcher`). The
guarantees (budgets, queueing, kills, retries, whose fault each outcome is)
are set out in the package docstring, :mod:`gym_integrity.workers`.

This module holds the pool's API and lifecycle: ``submit``/``run`` queue a
:class:`~gym_integrity.workers._dispatcher.Request` and wake the dispatcher;
``start`` starts a dispatcher thread (which alone spawns workers:
``PR_SET_PDEATHSIG`` fires when the spawning *thread* ends); ``close`` retires
it and kills the workers. A forked child resets the pools it inherited, so an
env made before the fork still works; pools stop at interpreter exit.
"""

from __future__ import annotations

import collections
import concurrent.futures
import itertools
import subprocess
import threading
import time
import weakref
from collections.abc import Hashable
from typing import Any

from gym_integrity.checks import check_number
from gym_integrity.workers._config import PoolConfig, check_handler
from gym_integrity.workers._dispatcher import Dispatcher, Pickled, Request
from gym_integrity.workers._lifecycle import RefCounted, after_fork_in_child, at_exit
from gym_integrity.workers._outcomes import PoolStatus, TaskOutcome
from gym_integrity.workers._wire import COUNTED_STATS, STARTUP_TIMEOUT_S, worst_wait_s
from gym_integrity.workers._worker_process import Waker, WorkerProcess

__all__ = ["WorkerPool", "live_pools", "shutdown_all"]


class WorkerPool(RefCounted):
    """One pool of killable worker processes running one handler (see the module docstring)."""

    def __init__(self, handler: str, config: PoolConfig | None = None) -> None:
        self.handler = check_handler("WorkerPool.handler", handler)
        self.config = config or PoolConfig()
        self._lock = threading.RLock()
        # start() and close() whole, one at a time: a restart by a request never lands inside a close().
        self._lifecycle = threading.RLock()
        self._queue: collections.deque[Request] = collections.deque()
        self._workers: list[WorkerProcess] = []
        self._dying: list[subprocess.Popen] = []  # workers killed at a deadline, not yet reaped
        self._in_flight = self._refs = 0
        self._ids = itertools.count()
        self._thread: threading.Thread | None = None  # the live dispatcher; an old one sees it is not and exits
        self._waker: Waker | None = None  # the live dispatcher's
        self._counters: collections.Counter[str] = collections.Counter()
        self._done: list[tuple[concurrent.futures.Future, TaskOutcome]] = []  # resolved outside the lock
        self._run_s_sum = self._run_s_max = self._queued_s_max = 0.0
        self._worker_start_s = 0.0  # the slowest recent start-up of a worker, spawn to ready
        self._startup_error = ""
        _live_pools.add(self)

    # ----------------------------------------------------------------- lifecycle

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Start the dispatcher, which spawns the workers (non-blocking)."""
        with self._lifecycle, self._lock:
            if self.running:
                return
            waker = self._waker = Waker()
            self._thread = threading.Thread(
                target=Dispatcher(self).run, args=(waker,), daemon=True, name=f"gym-integrity-pool:{self.handler}"
            )
            self._thread.start()

    def close(self) -> None:
        """Stop the dispatcher and every worker; pending requests end ``INFRA_ERROR``."""
        with self._lifecycle:
            with self._lock:
                thread, self._thread = self._thread, None
                waker, self._waker = self._waker, None
            if thread is None:
                return
            if waker is not None:
                waker.close_write()  # EOF: the dispatcher wakes, sees it is retired, ends
            thread.join(timeout=5)  # one still busy past this ends on its own; it touches nothing of the pool's
            with self._lock:
                workers, self._workers = self._workers, []
                pending = list(self._queue) + [w.request for w in workers if w.request is not None]
                self._queue.clear()
                for worker in workers:
                    worker.kill()
                dying, self._dying = self._dying, []
                for proc in dying:
                    try:
                        proc.wait(timeout=5)
                    except subprocess.TimeoutExpired:
                        pass
                for request in pending:
                    self._finish(request, PoolStatus.INFRA_ERROR, detail="the worker pool was shut down")
        self._flush()  # outside the lifecycle lock: a callback may submit, which restarts the pool

    def worker_pids(self) -> list[int]:
        with self._lock:
            return [w.proc.pid for w in self._workers]

    def busy_worker_pids(self) -> list[int]:
        with self._lock:
            return [w.proc.pid for w in self._workers if w.request is not None]

    def wait_ready(self, timeout: float = STARTUP_TIMEOUT_S) -> bool:
        """Block until every worker process has warmed up (True), or ``timeout`` passes (False)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self._lock:
                if len(self._workers) == self.config.workers + self.config.spare_workers and all(
                    w.ready for w in self._workers
                ):
                    return True
            time.sleep(0.01)
        return False

    # ----------------------------------------------------------------- requests

    def count_refused(self) -> None:
        """Count a request refused before it reached this pool (a machine pool's per-process share) as overloaded."""
        with self._lock:
            for key in ("requests", "completed", "overloaded"):
                self._counters[key] += 1

    def cancel(self, future: concurrent.futures.Future, why: str = "cancelled") -> bool:
        """End a request still queued (``INFRA_ERROR``, ``why``); True if it was. One on a worker runs on."""
        with self._lock:
            request = next((r for r in self._queue if r.future is future), None)
            if request is None:
                return False
            self._queue.remove(request)
            self._finish(request, PoolStatus.INFRA_ERROR, detail=why)
        self._flush()
        return True

    def submit_pickled(
        self, data: bytes, *, run_timeout_s: float | None = None, client: Hashable = None
    ) -> concurrent.futures.Future:
        """:meth:`submit` of a payload pickled elsewhere (a machine-pool client): the bytes go to a worker
        as they are, so the process holding the pool never unpickles a client's payload."""
        return self.submit(Pickled(bytes(data)), run_timeout_s=run_timeout_s, client=client)

    def submit(
        self, payload: Any, *, run_timeout_s: float | None = None, client: Hashable = None
    ) -> concurrent.futures.Future:
        """Queue ``payload``; the future yields a :class:`TaskOutcome` (never an exception).

        ``client`` says whose request it is: each client's requests run in order, and clients with requests
        queued take turns at free workers (the machine pool's server gives each connection its own).
        """
        budget = self._budget(run_timeout_s)
        request = Request(next(self._ids), payload, budget, concurrent.futures.Future(), client=client)
        while True:
            if not self.running:
                self.start()
            with self._lock:
                if not self.running:  # closed since the check above: queued now, it would wait for no one
                    continue
                self._counters["requests"] += 1
                self._in_flight += 1
                if self._in_flight > self.config.max_in_flight:
                    self._finish(
                        request,
                        PoolStatus.OVERLOADED,
                        detail=(
                            f"{self._in_flight - 1} requests in flight (max_in_flight={self.config.max_in_flight})"
                        ),
                    )
                else:
                    # Each request ahead may run to its budget and then wait for its killed worker's successor.
                    running = [w.request for w in self._workers if w.request is not None]
                    ahead = sum(r.budget for r in self._queue) + sum(r.budget for r in running)
                    ahead += (len(self._queue) + len(running)) * self._worker_start_s
                    request.queue_allowance = self.config.queue_timeout_s + ahead / self.config.workers
                    # Taking turns, it may go ahead of each queued request of another client: one run more each.
                    extra = (budget + self._worker_start_s) / self.config.workers
                    for other in self._queue:
                        if other.client != client:
                            other.queue_allowance += extra
                            other.future.queue_allowance = other.queue_allowance  # type: ignore[attr-defined]  # see below
                    self._queue.append(request)
                break
        # a plain attribute on the Future: run() reads it without a lookup table of its own
        request.future.queue_allowance = request.queue_allowance  # type: ignore[attr-defined]  # see the comment above
        self._flush()
        self._wake()
        return request.future

    def run(self, payload: Any, *, run_timeout_s: float | None = None) -> TaskOutcome:
        """Run ``payload`` on a worker and wait: never raises (but for a bad argument), never hangs."""
        future = self.submit(payload, run_timeout_s=run_timeout_s)
        allowance = getattr(future, "queue_allowance", 0.0) or self.config.queue_timeout_s
        worst = worst_wait_s(self.config.max_retries, allowance, self._budget(run_timeout_s))
        try:
            return future.result(timeout=worst)
        except concurrent.futures.TimeoutError:
            # A dispatcher bug or a frozen machine: answer now, rebuild the pool for the next request.
            self._counters["stalls"] += 1
            self.close()
            self.start()
            return (
                future.result()
                if future.done()
                else TaskOutcome(PoolStatus.INFRA_ERROR, detail=f"the worker pool did not answer within {worst:g} s")
            )

    def _budget(self, run_timeout_s: float | None) -> float:
        if run_timeout_s is None:
            return float(self.config.run_timeout_s)
        return check_number("WorkerPool.run_timeout_s", run_timeout_s, low=0, low_open=True, unit="seconds")

    def stats(self, fresh: bool = True) -> dict[str, float]:
        """Cumulative metrics, flat ``pool/...`` float keys (always fresh here: ``fresh`` is for the machine pool's
        client, whose figures come from its server)."""
        with self._lock:
            c = self._counters
            out = {f"pool/{k}": float(c[k]) for k in COUNTED_STATS}
            out["pool/queue_depth"] = float(len(self._queue))
            out["pool/in_flight"] = float(self._in_flight)
            ran = c["ran"]
            out["pool/run_s_mean"] = self._run_s_sum / ran if ran else 0.0
            out["pool/run_s_max"] = self._run_s_max
            out["pool/queued_s_max"] = self._queued_s_max
            return out

    # ----------------------------------------------------------------- dispatcher

    def _wake(self) -> None:
        waker = self._waker
        if waker is not None:
            waker.wake()

    def _finish(self, request: Request, status: PoolStatus, value: Any = None, detail: str = "") -> None:
        """Count ``request`` as done, once; :meth:`_flush` hands out its outcome (caller holds the lock)."""
        if request.finished:
            return
        request.finished = True
        self._in_flight = max(0, self._in_flight - 1)
        run_s = time.monotonic() - request.started if request.started else 0.0
        if status is PoolStatus.TIMEOUT:
            run_s = request.budget  # the kill's own latency is not the input's run time
        key = {
            PoolStatus.OK: "ok",
            PoolStatus.ERROR: "errors",
            PoolStatus.TIMEOUT: "timeouts",
            PoolStatus.CRASHED: "crashes",
            PoolStatus.INFRA_ERROR: "infra_errors",
            PoolStatus.OVERLOADED: "overloaded",
        }[status]
        self._counters[key] += 1
        self._counters["completed"] += 1
        if request.started:
            self._counters["ran"] += 1
            self._run_s_sum += run_s
            self._run_s_max = max(self._run_s_max, run_s)
        self._queued_s_max = max(self._queued_s_max, request.queued_s)
        self._done.append(
            (request.future, TaskOutcome(status, value, detail, request.queued_s, run_s, request.attempts))
        )

    def _flush(self) -> None:
        """Resolve finished futures outside the lock, so callbacks may call back into the pool."""
        with self._lock:
            done, self._done = self._done, []
        for future, outcome in done:
            if not future.done():
                future.set_result(outcome)


_live_pools: weakref.WeakSet[WorkerPool] = weakref.WeakSet()  # shared or not: for shutdown and fork


def live_pools() -> list[WorkerPool]:
    """Every WorkerPool of this process still in use or reachable, shared or not."""
    return list(_live_pools)


@at_exit
def shutdown_all() -> None:
    """Stop every in-process pool of this process (also runs at interpreter exit)."""
    for pool in list(_live_pools):
        pool.close()


@after_fork_in_child
def _forget_after_fork() -> None:
    """In a forked child, reset the parent's pools: their dispatcher thread did not survive the fork.

    Closing the child's copies of the parent's pipe ends keeps the parent's
    EOF-based death detection working. A pool an env took before the fork
    starts afresh on its next request; ``get_pool`` builds new ones.
    """
    for pool in list(_live_pools):
        for worker in pool._workers:
            for conn in (worker.send_conn, worker.recv_conn):
                try:
                    conn.close()
                except OSError:
                    pass
        if pool._waker is not None:
            pool._waker.forget()
        pool._lock, pool._lifecycle = threading.RLock(), threading.RLock()
        pool._thread, pool._workers, pool._in_flight, pool._refs = None, [], 0, 0
        pool._dying = []
        pool._queue.clear()
        pool._done = []
        pool._waker = None

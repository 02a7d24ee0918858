"""The in-process pool's dispatcher: one thread that hands queued requests to idle workers and keeps their time.

Each pass (:meth:`Dispatcher.once`) runs the phases in order, under the pool's
lock but for the wait: reap and start workers (:meth:`~Dispatcher.refill`),
end queued requests past their queue deadline (:meth:`~Dispatcher.expire_queued`),
hand requests to idle workers (:meth:`~Dispatcher.assign`), wait on every
worker's reply pipe and the wake-up pipe, read the replies
(:meth:`~Dispatcher.read_reply`, :meth:`~Dispatcher.worker_died`), and kill
workers past their request's run budget (:meth:`~Dispatcher.enforce_deadlines`).
Outcomes are handed out after the lock is let go (``WorkerPool._flush``).

The dispatcher owns the start-up bookkeeping (failures in a row, the back-off,
when the pool first served); the queue, the workers and the counters are the
pool's, shared with its callers under its lock. A new dispatcher starts with
every ``WorkerPool.start()``; one retired by ``close()`` sees it is no longer
the pool's thread (:meth:`~Dispatcher.serving`) and ends.
"""

from __future__ import annotations

import concurrent.futures
import pickle
import sys
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from typing import Any

from gym_integrity.workers._outcomes import PoolStatus
from gym_integrity.workers._wire import READY, STARTUP_ERROR, STARTUP_TIMEOUT_S, parse_reply
from gym_integrity.workers._worker_process import Waker, WorkerProcess

__all__ = ["Dispatcher", "Pickled", "Request"]

_MAX_STARTUP_FAILURES = 3  # in a row: the interpreter cannot run workers; stop spawning in a loop


@dataclass(eq=False)
class Request:
    """One request: its payload and budget, the caller's future, and the clocks and deaths of its attempts."""

    req_id: int
    payload: Any
    budget: float
    future: concurrent.futures.Future
    enqueued: float = field(default_factory=time.monotonic)
    started: float = 0.0
    queued_s: float = 0.0
    attempts: int = 0
    deaths: list[str] = field(default_factory=list)
    from_outside: bool = False
    queue_allowance: float = 0.0  # queue_timeout_s plus the budgets ahead of it, per worker
    finished: bool = False
    client: Any = None  # whose request: clients take turns at free workers (a machine pool's connections)


class Pickled:
    """A payload a machine-pool client pickled: the server hands its bytes to a worker unread."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


class Dispatcher:
    """The loop of one pool's dispatcher thread (see the module docstring); ``pool`` is a ``WorkerPool``."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool
        self.config, self.handler = pool.config, pool.handler
        self.startup_failures = 0
        self.respawn_at = 0.0
        self.ready_since: float | None = None  # queue clocks start once the pool first served
        self.turns = 0
        self.last_turn: dict[Any, int] = {}  # client -> the turn it last got a worker (clients with requests queued)

    def serving(self) -> bool:
        """True in the live dispatcher thread (False once close() or a restart replaced it)."""
        return self.pool._thread is threading.current_thread()

    def run(self, waker: Waker) -> None:
        try:
            while self.serving():
                try:
                    self.once(waker)
                except Exception as exc:  # noqa: BLE001  (a dispatcher bug must not hang callers)
                    self.recover(exc)
        finally:
            waker.close_read()

    def recover(self, exc: Exception) -> None:
        """After a dispatcher error: every request pending ends ``INFRA_ERROR``, every worker is replaced."""
        with self.pool._lock:
            if not self.serving():
                return  # retired by close(), whose clean-up this would race
            pending = list(self.pool._queue) + [w.request for w in self.pool._workers if w.request is not None]
            self.pool._queue.clear()
            for worker in list(self.pool._workers):
                worker.request = None
                self.replace(worker)
            for request in pending:
                self.pool._finish(
                    request, PoolStatus.INFRA_ERROR, detail=f"pool dispatcher error: {type(exc).__name__}"
                )
        self.pool._flush()
        time.sleep(0.05)

    def once(self, waker: Waker) -> None:
        with self.pool._lock:
            if not self.serving():
                return
            self.refill()
            self.expire_queued()
            self.assign()
            timeout = self.next_timeout()
            watched = [w.recv_conn for w in self.pool._workers]  # idle ones too: EOF the moment they die
        ready = wait(watched + [waker.read_fd], timeout=timeout)
        if waker.read_fd in ready:
            waker.drain()
        with self.pool._lock:
            if not self.serving():
                return  # retired while waiting: the workers and queue are close()'s now
            by_conn = {id(w.recv_conn): w for w in self.pool._workers}
            for conn in ready:
                worker = by_conn.get(id(conn))
                if worker is not None:
                    self.read_reply(worker)
            self.enforce_deadlines()
        self.pool._flush()

    def refill(self) -> None:
        if self.pool._dying:
            self.pool._dying = [proc for proc in self.pool._dying if proc.poll() is None]  # reap killed workers
        if self.broken and time.monotonic() < self.respawn_at:
            return
        while self.serving() and len(self.pool._workers) < self.config.workers + self.config.spare_workers:
            try:
                self.pool._workers.append(WorkerProcess(self.handler, self.config.memory_limit_mb))
            except OSError:  # no fds or pids right now: try again next loop
                break

    @property
    def broken(self) -> bool:
        return self.startup_failures >= _MAX_STARTUP_FAILURES

    def replace(self, worker: WorkerProcess, wait: bool = True) -> None:
        """Kill ``worker`` and drop it; :meth:`refill` starts its successor (caller holds the lock).

        ``wait=False``: do not wait for its exit (the timed-out request's outcome would wait with it);
        :meth:`refill` reaps it later, ``WorkerPool.close()`` waits for it.
        """
        worker.kill(wait=wait)
        if not wait:
            self.pool._dying.append(worker.proc)
        self.pool._counters["worker_restarts"] += 1
        if not worker.ready:
            self.startup_failures += 1
            if self.broken:
                self.respawn_at = time.monotonic() + min(30.0, 2.0 ** (self.startup_failures - _MAX_STARTUP_FAILURES))
        if worker in self.pool._workers:
            self.pool._workers.remove(worker)
        self.refill()

    def expire_queued(self) -> None:
        if self.broken and not any(w.ready for w in self.pool._workers):
            while self.pool._queue:
                self.pool._finish(
                    self.pool._queue.popleft(),
                    PoolStatus.INFRA_ERROR,
                    detail=(
                        f"pool workers exit while starting ({self.startup_failures} in a row): "
                        f"{self.pool._startup_error or 'no reason given'}; check `{sys.executable} -c "
                        f"'from {self.handler.split(':')[0]} import {self.handler.split(':')[1]}'`"
                    ),
                )
            return
        if self.ready_since is None:
            return  # cold start: interpreter start-up is nobody's queueing
        now = time.monotonic()
        for request in [r for r in self.pool._queue if self.queue_deadline(r) <= now]:
            self.pool._queue.remove(request)
            request.queued_s += now - max(request.enqueued, self.ready_since)
            self.pool._finish(
                request, PoolStatus.OVERLOADED, detail=f"no worker was free within {request.queue_allowance:g} s"
            )

    def queue_deadline(self, request: Request) -> float:
        return max(request.enqueued, self.ready_since or request.enqueued) + request.queue_allowance

    def assign(self) -> None:
        busy = sum(w.request is not None for w in self.pool._workers)
        for worker in list(self.pool._workers):
            if not self.pool._queue or busy >= self.config.workers:
                return
            if not worker.ready or worker.request is not None:
                continue
            if worker.proc.poll() is not None or worker.recv_conn.poll(0):
                self.replace(worker)  # died while idle: nobody's request, nobody's retry
                continue
            request = self.next_request()
            try:
                payload = request.payload
                data = payload.data if type(payload) is Pickled else pickle.dumps(payload)
            except Exception as exc:  # the caller's error, not the pool's
                self.pool._finish(request, PoolStatus.ERROR, detail=f"unsendable payload ({type(exc).__name__})")
                continue
            try:
                worker.send_conn.send((request.req_id, data))
            except (OSError, ValueError):
                self.pool._queue.appendleft(request)  # never reached a live worker: not an attempt (nor a turn)
                self.replace(worker)
                continue
            now = time.monotonic()
            request.queued_s += now - max(request.enqueued, self.ready_since or now)
            request.attempts += 1
            request.started = now
            worker.request = request
            busy += 1

    def next_request(self) -> Request:
        """Take the oldest queued request of the client that got a worker least recently (round-robin between
        clients with requests queued; a client new to the queue goes first): one client's backlog delays another's
        request by at most one run per worker, not by the whole backlog. With one client this is the queue's order."""
        queue = self.pool._queue
        oldest: dict[Any, Request] = {}
        for request in queue:
            oldest.setdefault(request.client, request)
        client = min(oldest, key=lambda c: self.last_turn.get(c, -1))  # ties: the one queued first
        request = oldest[client]
        queue.remove(request)
        self.turns += 1
        self.last_turn = {c: t for c, t in self.last_turn.items() if c in oldest}  # gone clients are forgotten
        self.last_turn[client] = self.turns
        return request

    def next_timeout(self) -> float:
        deadlines = [w.request.started + w.request.budget for w in self.pool._workers if w.request is not None]
        if self.ready_since is not None:
            deadlines += [self.queue_deadline(r) for r in self.pool._queue]
        if not deadlines:
            return 1.0
        return min(1.0, max(0.0, min(deadlines) - time.monotonic()))

    def read_reply(self, worker: WorkerProcess) -> None:
        try:
            raw = worker.read_message()
        except EOFError:
            self.worker_died(worker)
            return
        except OSError:  # longer than MAX_MESSAGE_BYTES: left unread, so the stream is out of step
            raw = b""
        if raw is None:
            return  # part of a reply: the rest on a later pass, while its run budget still counts
        try:
            message = parse_reply(raw)
        except Exception as exc:  # noqa: BLE001  (a reply the parent refuses to read: the worker is done)
            request, worker.request = worker.request, None
            self.replace(worker)
            if request is not None:
                self.pool._finish(request, PoolStatus.ERROR, detail=f"unreadable reply ({type(exc).__name__})")
            return
        if message[0] == READY:
            worker.ready = True
            self.startup_failures = 0
            # Decays so one start on a loaded machine does not stretch every later allowance.
            self.pool._worker_start_s = max(time.monotonic() - worker.started_at, 0.8 * self.pool._worker_start_s)
            if self.ready_since is None:
                self.ready_since = time.monotonic()
            return
        if message[0] == STARTUP_ERROR:
            self.pool._startup_error = message[1]
            return  # the EOF that follows replaces the worker
        req_id, status, value = message
        request, worker.request = worker.request, None
        if request is None or request.req_id != req_id:
            return
        if status == PoolStatus.OK.value:
            self.pool._finish(request, PoolStatus.OK, value=value)
        else:
            self.pool._finish(request, PoolStatus.ERROR, detail=str(value))

    def worker_died(self, worker: WorkerProcess) -> None:
        """A worker exited on its own: replace it; retry its request on another process or give up."""
        from_outside, how = worker.death()  # first: were it to raise, the request is still the worker's, and the
        request, worker.request = worker.request, None  # dispatcher's recovery ends it instead of losing it
        self.replace(worker)
        if request is None:
            return
        request.deaths.append(how)
        request.from_outside = request.from_outside or from_outside
        if request.attempts <= self.config.max_retries:
            self.pool._counters["retries"] += 1
            request.enqueued, request.started = time.monotonic(), 0.0
            self.pool._queue.appendleft(request)
            return
        deaths = ", ".join(request.deaths)
        if request.from_outside:
            self.pool._finish(
                request,
                PoolStatus.INFRA_ERROR,
                detail=(f"the worker was killed from outside ({deaths}) on {request.attempts} attempt(s)"),
            )
        else:
            self.pool._finish(
                request,
                PoolStatus.CRASHED,
                detail=(
                    f"the worker died running it ({deaths}) on each of {request.attempts} attempt(s), "
                    "each on another process"
                ),
            )

    def enforce_deadlines(self) -> None:
        now = time.monotonic()
        for worker in list(self.pool._workers):
            request = worker.request
            if request is not None and request.started + request.budget <= now:
                worker.request = None
                self.replace(worker, wait=False)  # the outcome is not held up by the kernel freeing its memory
                self.pool._finish(
                    request,
                    PoolStatus.TIMEOUT,
                    detail=f"ran past its {request.budget:g} s run budget; the worker was killed",
                )
            elif not worker.ready and now - worker.started_at > STARTUP_TIMEOUT_S:
                self.replace(worker)

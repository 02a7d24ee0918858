"""MachinePool: this process's client of the machine's pool server for one (handler, config), a WorkerPool's interface.

How the machine pool works (channel and access, plain data, lifetime, faults, fork) is set out in the package
docstring, :mod:`gym_integrity.workers`.
"""

from __future__ import annotations

import collections
import concurrent.futures
import itertools
import os
import threading
import time
import weakref
from typing import Any

from gym_integrity.checks import check_number
from gym_integrity.workers._config import PoolConfig, check_handler
from gym_integrity.workers._lifecycle import RefCounted, after_fork_in_child, at_exit
from gym_integrity.workers._machine_link import Link, shutdown_socket
from gym_integrity.workers._machine_start import SPAWN_TIMEOUT_S, open_link
from gym_integrity.workers._outcomes import PoolStatus, TaskOutcome
from gym_integrity.workers._wire import (
    MAX_MESSAGE_BYTES,
    STARTUP_TIMEOUT_S,
    STAT_KEYS,
    dumps,
    frame_size,
    plain_loads,
    read_outcome,
)

__all__ = ["MachinePool", "live_clients", "shutdown_all"]

_SILENCE_S = 30.0  # a client with requests in flight that hears nothing this long drops the connection
_CALL_TIMEOUT_S = 10.0  # stats, pids: a reply later than this is given up (the fallback is returned)
_CONNECT_SLACK_S = 5.0  # past the spawn bound (SPAWN_TIMEOUT_S): a connecting thread's last dial and its bookkeeping
_MAX_CONNECT_BACKOFF_S = 30.0  # failed connections are retried after 0.5 s, 1 s, 2 s, ... at most this


class MachinePool(RefCounted):
    """A client of the machine's pool server for one (handler, config): a :class:`WorkerPool`'s interface.

    Use :func:`gym_integrity.workers.get_pool` rather than building one:
    it returns the process's shared client. Thread-safe. ``run()`` and the
    futures of ``submit()`` always end in a :class:`TaskOutcome`; a server that
    dies, cannot start or stops answering gives ``INFRA_ERROR`` outcomes.
    """

    def __init__(self, handler: str, config: PoolConfig | None = None) -> None:
        self.handler = check_handler("MachinePool.handler", handler)
        self.config = config or PoolConfig()
        self._lock = threading.RLock()
        self._link: Link | None = None
        self._connector: threading.Thread | None = None
        self._started = False
        self._refs = 0
        self._ids = itertools.count()
        self._error = ""  # why the last connection attempt failed
        self._failures = 0  # failed connection attempts in a row
        self._retry_at = 0.0  # no new attempt before (a server that cannot start is not a spawn loop)
        self._counters: collections.Counter[str] = collections.Counter()  # outcomes given without a server
        self._last_stats: dict[str, float] = {}
        _live_clients.add(self)

    def __repr__(self) -> str:
        return f"MachinePool({self.handler!r}, server pid {self.server_pid()})"

    # ----------------------------------------------------------------- lifecycle

    @property
    def running(self) -> bool:
        """Started and not closed: connected, or connecting on the next request."""
        return self._started

    def start(self) -> None:
        """Connect to the server, starting it if none answers (in the background: non-blocking)."""
        with self._lock:
            self._started = True
            if self._link is None:
                self._connect_in_background()

    def close(self) -> None:
        """Close this process's connection; its pending requests end ``INFRA_ERROR`` (shut down)."""
        with self._lock:
            self._started = False
            link, self._link = self._link, None
        if link is not None:
            link.closing = True
            self._lost(link, "closed")

    def server_pid(self) -> int | None:
        """The process id of the server this client is connected to (None if not connected)."""
        link = self._link
        return None if link is None or link.dead else int(link.hello["pid"])

    def worker_pids(self) -> list[int]:
        return self._int_list(self._call("worker_pids", None, _CALL_TIMEOUT_S, []))

    def busy_worker_pids(self) -> list[int]:
        return self._int_list(self._call("busy_worker_pids", None, _CALL_TIMEOUT_S, []))

    def wait_ready(self, timeout: float = STARTUP_TIMEOUT_S) -> bool:
        """Block until the server's every worker has warmed up (True), or ``timeout`` passes (False)."""
        end = time.monotonic() + timeout
        if self._connected(timeout) is None:
            return False
        remaining = max(0.0, end - time.monotonic())
        return self._call("wait_ready", remaining, remaining + _CALL_TIMEOUT_S, False) is True

    # ----------------------------------------------------------------- requests

    def submit(self, payload: Any, *, run_timeout_s: float | None = None) -> concurrent.futures.Future:
        """Send ``payload`` to the server's pool; the future yields a :class:`TaskOutcome` (never an exception)."""
        budget = self._budget(run_timeout_s)
        future: concurrent.futures.Future = concurrent.futures.Future()
        try:
            data = dumps(payload)
        except Exception as exc:  # the caller's error, not the pool's
            return self._given(future, PoolStatus.ERROR, f"unsendable payload ({type(exc).__name__})")
        if len(data) > MAX_MESSAGE_BYTES - 4096:
            return self._given(
                future, PoolStatus.ERROR, f"unsendable payload (larger than {MAX_MESSAGE_BYTES >> 20} MB)"
            )
        # A request that could not be sent never reached a server: it is sent again once, on a new connection
        # (a server that died since this client last heard from it is noticed here, at the send, as often as by
        # the reader). A request that was sent is never resent: its fate on a dead server is unknown.
        why = ""
        for _ in range(2):
            link = self._connected(SPAWN_TIMEOUT_S + _CONNECT_SLACK_S)
            if link is None:
                return self._given(
                    future,
                    PoolStatus.INFRA_ERROR,
                    f"the machine grading pool could not be reached: {self._error or 'no answer'}",
                )
            req_id = next(self._ids)
            attempt: concurrent.futures.Future = concurrent.futures.Future()
            with link.lock:
                dead = link.dead
                if not dead:
                    link.pending[req_id] = attempt
            if dead:
                why = "died before the request was sent"
                continue
            try:
                link.send(("submit", req_id, data, budget))
            except (OSError, ValueError) as exc:
                why = f"died before the request was sent ({type(exc).__name__})"
                self._unsent(link, req_id)
                self._lost(link, f"sending failed: {type(exc).__name__}")
                continue
            attempt.add_done_callback(lambda done: future.set_result(done.result()))
            return future
        return self._given(
            future, PoolStatus.INFRA_ERROR, f"the machine grading pool {why}, twice; the request was not graded"
        )

    def run(self, payload: Any, *, run_timeout_s: float | None = None) -> TaskOutcome:
        """Run ``payload`` on a worker of the machine's pool and wait: never raises (but for a bad argument),
        never hangs (the connection's reader answers every request: with its outcome, or ``INFRA_ERROR`` when
        the connection breaks or the server falls silent)."""
        return self.submit(payload, run_timeout_s=run_timeout_s).result()

    def stats(self, fresh: bool = True) -> dict[str, float]:
        """The server's ``pool/...`` metrics (every client's requests), plus the outcomes this client gave
        itself (a server it could not reach, or that died under its requests) and its server starts.

        ``fresh=False``: the figures the server sent with this client's latest
        outcome (as of that request's end), without asking it again (what
        :func:`~gym_integrity.workers.machine_stats` gives for a pool not running).
        Operators' figures: an env's per-step metrics never carry them.
        """
        served = self._call("stats", None, _CALL_TIMEOUT_S, None) if fresh else None
        with self._lock:
            if served is not None:
                self._keep_stats(served)
            out = {f"pool/{k}": 0.0 for k in STAT_KEYS}
            out.update(self._last_stats)
            for key in ("requests", "completed", "errors", "infra_errors"):
                out[f"pool/{key}"] += float(self._counters[key])
            out["pool/server_starts"] = float(self._counters["server_starts"])
            out["pool/connection_losses"] = float(self._counters["connection_losses"])
        return out

    # ----------------------------------------------------------------- internals

    def _budget(self, run_timeout_s: float | None) -> float:
        if run_timeout_s is None:
            return float(self.config.run_timeout_s)
        return check_number("MachinePool.run_timeout_s", run_timeout_s, low=0, low_open=True, unit="seconds")

    def _keep_stats(self, served: Any) -> None:
        """Remember the server's figures (caller holds the lock)."""
        if isinstance(served, dict):
            self._last_stats = {
                str(k): float(v) for k, v in served.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
            }

    @staticmethod
    def _int_list(value: Any) -> list[int]:
        return [v for v in value if isinstance(v, int)] if isinstance(value, list) else []

    def _given(self, future: concurrent.futures.Future, status: PoolStatus, detail: str) -> concurrent.futures.Future:
        """Resolve ``future`` here, without a server (counted in this client's share of the stats)."""
        with self._lock:
            self._counters["requests"] += 1
            self._counters["completed"] += 1
            self._counters["errors" if status is PoolStatus.ERROR else "infra_errors"] += 1
        future.set_result(TaskOutcome(status, detail=detail))
        return future

    def _unsent(self, link: Link, req_id: int) -> None:
        """Take back request ``req_id``, whose send failed, from ``link`` (uncounting the no-verdict the reader
        may already have given it: the caller sends it again)."""
        with link.lock:
            taken = link.pending.pop(req_id, None) is None
        if taken:
            with self._lock:
                self._counters["infra_errors"] -= 1
                self._counters["completed"] -= 1

    def _lost(self, link: Link, cause: str) -> None:
        """``link`` is down: its requests end INFRA_ERROR, its calls get no reply; the next request reconnects."""
        with link.lock:
            if link.dead:
                return
            link.dead = True
            pending, link.pending = list(link.pending.values()), {}
            calls, link.calls = list(link.calls.values()), {}
        with self._lock:
            if self._link is link:
                self._link = None
            if not link.closing:
                self._counters["connection_losses"] += 1
            self._counters["infra_errors"] += len(pending)
            self._counters["completed"] += len(pending)
        shutdown_socket(link.sock)  # wakes the reader, which closes the fds
        if link.closing:
            detail = "the worker pool was shut down"
        elif cause.startswith("the machine grading pool"):
            detail = f"{cause}; the request was not graded"
        else:
            detail = f"the machine grading pool died ({cause}); the request was not graded"
        for request in pending:
            if not request.done():
                request.set_result(TaskOutcome(PoolStatus.INFRA_ERROR, detail=detail))
        for call in calls:
            if not call.done():
                call.set_result(_NO_REPLY)

    def _call(self, name: str, argument: Any, timeout: float, fallback: Any) -> Any:
        """Ask the server (never starts one): its reply, or ``fallback`` if not connected or no timely reply."""
        link = self._link
        if link is None or link.dead or threading.current_thread() is link.reader:
            return fallback  # a callback on the reader thread cannot wait for the reader
        req_id = next(self._ids)
        call: concurrent.futures.Future = concurrent.futures.Future()
        with link.lock:
            if link.dead:
                return fallback
            link.calls[req_id] = call
        try:
            link.send(("call", req_id, name, argument))
            value = call.result(timeout=timeout)
        except (OSError, ValueError) as exc:
            self._lost(link, f"sending failed: {type(exc).__name__}")
            return fallback
        except concurrent.futures.TimeoutError:
            with link.lock:
                link.calls.pop(req_id, None)
            return fallback
        return fallback if value is _NO_REPLY else value

    def _connected(self, timeout: float) -> Link | None:
        """The live link, connecting (and starting the server) first if needed, within ``timeout``."""
        with self._lock:
            link = self._link
            if link is not None and not link.dead:
                return link
            self._started = True
            connector = self._connect_in_background()
            if connector is None:
                return None  # backing off after a failed attempt: self._error says why
        connector.join(timeout)
        with self._lock:
            link = self._link
            if link is None and connector.is_alive():
                self._error = f"no connection within {timeout:g} s"
            return link if link is not None and not link.dead else None

    def _connect_in_background(self) -> threading.Thread | None:
        """The connecting thread, started if none is (caller holds the lock); None while backing off."""
        if self._connector is None or not self._connector.is_alive():
            if time.monotonic() < self._retry_at:
                return None
            self._connector = threading.Thread(
                target=self._connect, daemon=True, name=f"gym-integrity-machine-pool-connect:{self.handler}"
            )
            self._connector.start()
        return self._connector

    def _connect(self) -> None:
        try:
            link = open_link(self.handler, self.config, self._counted_start)
        except Exception as exc:  # noqa: BLE001  (reported in the outcomes of the requests that wanted it)
            with self._lock:
                self._error = str(exc) or type(exc).__name__
                self._failures += 1
                self._retry_at = time.monotonic() + min(_MAX_CONNECT_BACKOFF_S, 0.5 * 2 ** (self._failures - 1))
            return
        with self._lock:
            self._failures, self._retry_at = 0, 0.0
            if not self._started or (self._link is not None and not self._link.dead):
                keep = False  # closed while connecting, or another connection won: this one is not needed
            else:
                self._link, self._error, keep = link, "", True
        if not keep:
            shutdown_socket(link.sock)
            link.close_fds()
            return
        link.reader = threading.Thread(
            target=self._read, args=(link,), daemon=True, name=f"gym-integrity-machine-pool-reader:{self.handler}"
        )
        link.reader.start()

    def _counted_start(self) -> None:
        """A server was spawned for this client (counted whether or not it then answers)."""
        with self._lock:
            self._counters["server_starts"] += 1

    def _read(self, link: Link) -> None:
        """The link's reader: resolves requests and calls by id until the connection ends."""
        cause = "the connection closed"
        try:
            while True:
                data = _receive(link)
                if data is None:
                    cause = f"the machine grading pool did not answer for {_SILENCE_S:g} s"
                    break
                self._on_message(link, plain_loads(data))
        except EOFError:
            cause = "its server closed the connection"
        except OSError as exc:
            cause = f"{type(exc).__name__} on its connection"
        except Exception as exc:  # noqa: BLE001  (a message this client refuses to read ends the link)
            cause = f"an unreadable message ({type(exc).__name__})"
        finally:
            self._lost(link, cause)
            link.close_fds()

    def _on_message(self, link: Link, message: Any) -> None:
        kind = message[0] if isinstance(message, tuple) and message else None
        if kind == "alive":
            pass
        elif kind == "outcome":
            req_id, outcome, served = read_outcome(message)
            with self._lock:
                self._keep_stats(served)
            with link.lock:
                request = link.pending.pop(req_id, None)
            if request is not None and not request.done():
                request.set_result(outcome)
        elif kind == "reply":
            _, req_id, value = message
            with link.lock:
                call = link.calls.pop(req_id, None)
            if call is not None and not call.done():
                call.set_result(value)
        else:
            raise ValueError("not a pool server's message")


def _receive(link: Link) -> bytes | None:
    """The next message on ``link`` (``multiprocessing.connection``'s framing), or None once the server has sent
    nothing for ``_SILENCE_S`` while requests wait on it.

    Read piece by piece, the silence rule checked at every wait, so it holds in the middle of a message as
    between messages: a server stopped or wedged after the first bytes of a message (a message over 16 KB is
    sent as its header, then its body) would leave ``recv_bytes`` waiting for the rest forever. Raises
    EOFError when the connection closes, OSError on a length over ``MAX_MESSAGE_BYTES``.
    """
    head = bytearray()
    while (frame := frame_size(head)) is None:
        piece = _receive_exactly(link, 4 if len(head) < 4 else 12 - len(head))
        if piece is None:
            return None
        head += piece
    return _receive_exactly(link, frame[1])


def _receive_exactly(link: Link, size: int) -> bytes | None:
    """``size`` bytes from ``link``, or None once it is silent for ``_SILENCE_S`` with requests waiting on it."""
    received = bytearray()
    while len(received) < size:
        if not link.conn.poll(1.0):
            if link.pending and time.monotonic() - link.last_heard > _SILENCE_S:
                return None
            continue
        chunk = os.read(link.conn.fileno(), min(size - len(received), 1 << 20))
        if not chunk:
            raise EOFError
        received += chunk
        link.last_heard = time.monotonic()  # bytes arriving are the server's sign of life, a message's or part of one
    return bytes(received)


_NO_REPLY = object()
_live_clients: weakref.WeakSet[MachinePool] = weakref.WeakSet()


def live_clients() -> list[MachinePool]:
    """Every MachinePool of this process still in use or reachable, shared or not."""
    return list(_live_clients)


@at_exit
def shutdown_all() -> None:
    """Close every client of this process (also at interpreter exit; the process's exit would close the sockets)."""
    for client in list(_live_clients):
        client.close()


@after_fork_in_child
def _forget_after_fork() -> None:
    """In a forked child: drop the parent's connections (its copies of the fds only) and locks; reconnect on use."""
    for client in list(_live_clients):
        link = client._link
        client._lock = threading.RLock()
        client._link, client._connector, client._started, client._refs = None, None, False, 0
        client._failures, client._retry_at = 0, 0.0
        client._counters = collections.Counter()
        if link is not None:
            link.forget()

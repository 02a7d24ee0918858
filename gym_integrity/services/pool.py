"""A pool of killable worker processes that run one untrusted-input handler, with per-request run budgets.

(About 1,000 lines, above the ~450 aimed for: the module holds both ends of one
pipe protocol, the worker's entry point and the parent's dispatcher, plus the
fault attribution; split, a change to the protocol would span two files.)

Graders parse text a policy wrote (math_verify, sympy-based scorers). Such a
parse can hang in C code, eat all memory or crash the interpreter, and no
in-process timeout stops it. So the handler runs in worker processes the
parent can SIGKILL, and the parent alone keeps time:

* workers are plain ``python -c`` subprocesses (not ``multiprocessing``
  children, which re-import the user's ``__main__``; not forks, which would
  copy the dispatcher's locks), one pair of pipes each, in their own session,
  stderr to ``/dev/null``; a handler's prints go to stderr, never into the
  reply pipe. A worker imports the handler module (``gym_integrity``'s package
  ``__init__`` files stubbed, so gymnasium is not imported), calls its
  ``warm()`` if any, and only then says ready: imports are never charged to a
  request. Replies are read as plain data only (no class is ever looked up
  while unpickling them), so a worker that untrusted input took over cannot
  make the parent run code. ``RLIMIT_AS`` bounds its memory (an oversized
  allocation raises ``MemoryError`` in the handler), and ``PR_SET_PDEATHSIG``
  kills it with its parent; it fires when the spawning *thread* ends, so only
  the dispatcher thread, which lives as long as the pool, spawns workers;
* one dispatcher thread hands queued requests to idle workers (at most
  ``num_workers`` busy) and waits on their pipes. A request's run budget
  starts when a worker takes it: time spent queued is never charged to it.
  Queueing is bounded on its own: a request may wait for the run budgets of
  the requests ahead of it and a worker start-up each (shared by the workers)
  plus ``queue_timeout_s``; past that, or beyond
  ``max_in_flight`` requests at once, a request is ``OVERLOADED``;
* what is killed when: a worker still busy at its request's run deadline is
  SIGKILLed and replaced (``TIMEOUT``, the input's fault); a worker that never
  says ready within 60 s is killed and replaced; ``close()`` stops them all.
  ``spare_workers`` idle processes stay started, so a killed worker's
  successor is already warm. Workers that die while starting 3 times in a row
  (a broken interpreter) give ``INFRA_ERROR`` and a growing pause, not a spawn loop;
* a worker that dies under a request is told apart by how it died: SIGKILL or
  SIGTERM the pool did not send is the infrastructure (OOM killer, an
  operator): the request is retried on another worker, up to ``max_retries``,
  then ``INFRA_ERROR``. Any other death (segfault, abort, exit) is retried the
  same way; if it repeats on every attempt, each on a different process, it is
  ``CRASHED``: the input's fault. A crash that does not repeat yields the
  retry's normal outcome.

:func:`get_pool` returns, per (handler, config), by default (``PoolConfig.scope``,
``$GYM_INTEGRITY_POOL_SCOPE``) the process's client of the *machine's* pool:
one pool server per machine and user hosts a :class:`WorkerPool` that every
process reaches over a private Unix socket
(:mod:`gym_integrity.services.machine_pool`). With ``scope="process"`` it
returns one :class:`WorkerPool` per process; a forked child starts its own on
first use (:mod:`gym_integrity.services.cache`), and the parent's pools it
inherited are reset there, so an env made before the fork still works; pools
stop at interpreter exit.

Example:
    >>> from gym_integrity.services.pool import PoolConfig
    >>> PoolConfig(run_timeout_s=0)
    Traceback (most recent call last):
    ...
    ValueError: PoolConfig.run_timeout_s must be a number (seconds) > 0, got 0.0
"""

from __future__ import annotations

import atexit
import collections
import concurrent.futures
import enum
import io
import itertools
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
import weakref
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any, Protocol

from gym_integrity.checks import check_choice, check_int, check_number, check_str, config_from
from gym_integrity.services.cache import ProcessCache

__all__ = ["POOL_SCOPES", "Pool", "PoolConfig", "PoolStatus", "TaskOutcome", "WorkerPool", "WORKER_START_ALLOWANCE_S",
           "check_handler", "check_pool_settings", "get_pool", "make_pool", "pool_scope", "shutdown_all"]

#: What a step may wait, on a quiet machine, for a killed worker's successor to start (interpreter and
#: handler imports): envs add it to a worker's run budget when they declare ``grading_time_bound_s``.
WORKER_START_ALLOWANCE_S = 3.0

_STUBBED_MAIN_CODE = """
import sys, types
for name, path in {stubs!r}:
    module = types.ModuleType(name)
    module.__path__ = [path]
    sys.modules[name] = module
from {module} import {main}
{main}({argument!r})
"""


def stubbed_main_code(module: str, main: str, argument: str, stubs_for: str) -> str:
    """``python -c`` code that runs ``module.main(argument)`` with ``gym_integrity``'s package ``__init__`` files
    stubbed on the way to ``stubs_for`` (no gymnasium, no numpy): a worker's, or a machine pool server's."""
    return _STUBBED_MAIN_CODE.format(stubs=_stubs(stubs_for), module=module, main=main, argument=argument)
_STARTUP_TIMEOUT_S = 60.0  # a worker not ready by then is killed and counts as a startup failure
_MAX_STARTUP_FAILURES = 3  # in a row: the interpreter cannot run workers; stop spawning in a loop
_CALLER_GRACE_S = 5.0  # run() waits this much past the worst case before calling the dispatcher stuck
_OUTSIDE_KILLS = (signal.SIGKILL, signal.SIGTERM)  # deaths that are not the input's doing
_MAX_REPLY_BYTES = 64 << 20  # a bigger reply is refused unread (a worker must not exhaust the parent)


@dataclass(frozen=True)
class PoolConfig:
    """Settings of one pool (one pool per distinct handler and config).

    Attributes:
        num_workers: Requests run at once. ``None``: ``max(1, min(2, os.cpu_count()))``.
        spare_workers: Idle processes kept started so a killed worker is replaced at once.
        run_timeout_s: A request's budget, counted from the moment a worker starts it (queue time excluded).
        queue_timeout_s: How long a request may wait for a free worker beyond the run budgets
            of the requests queued or running ahead of it (divided among the workers); past
            it the request is ``OVERLOADED``. The budgets ahead are allowed for, so a burst of
            answers that each run to their budget (the policy's own doing) delays the others
            but never turns them into no-verdicts; a pool whose workers stop serving does.
        max_in_flight: Requests queued or running; one more is ``OVERLOADED`` at once.
        max_retries: Re-runs on another worker after the worker died under the request.
        memory_limit_mb: ``RLIMIT_AS`` of each worker, or ``None`` for none.
        scope: Where the pool lives (:func:`get_pool`): ``"machine"``, one pool per machine shared by every
            process of the user (:mod:`gym_integrity.services.machine_pool`), or ``"process"``, a pool of
            this process's own. ``None``: ``$GYM_INTEGRITY_POOL_SCOPE`` if set, else ``"machine"``.
    """

    num_workers: int | None = None
    spare_workers: int = 1
    run_timeout_s: float = 5.0
    queue_timeout_s: float = 30.0
    max_in_flight: int = 256
    max_retries: int = 1
    memory_limit_mb: int | None = 4096
    scope: str | None = None

    def __post_init__(self) -> None:
        check_pool_settings("PoolConfig", self)

    @classmethod
    def from_value(cls, value: "PoolConfig | dict[str, Any] | None") -> "PoolConfig":
        """A config from a PoolConfig, a dict of its fields (unknown keys: ``TypeError``) or None (defaults)."""
        return config_from(cls, value)

    @property
    def workers(self) -> int:
        return self.num_workers if self.num_workers is not None else max(1, min(2, os.cpu_count() or 1))

    @property
    def resolved_scope(self) -> str:
        """``scope``, or the environment's choice when it is None (see :func:`pool_scope`)."""
        return pool_scope(self.scope)


#: Where a pool lives: one per machine (a server every process of the user shares) or one per process.
POOL_SCOPES = ("machine", "process")
#: The environment variable that picks the scope of pools whose config leaves it None.
SCOPE_ENV = "GYM_INTEGRITY_POOL_SCOPE"


def pool_scope(scope: str | None = None) -> str:
    """``scope`` if given, else ``$GYM_INTEGRITY_POOL_SCOPE`` (checked like a config field), else ``"machine"``."""
    if scope is not None:
        return check_choice("PoolConfig.scope", scope, POOL_SCOPES)
    value = os.environ.get(SCOPE_ENV, "").strip()
    return check_choice(SCOPE_ENV, value, POOL_SCOPES) if value else "machine"


def check_pool_settings(owner: str, config: Any, *, run_timeout_field: str = "run_timeout_s",
                        min_memory_mb: int = 64) -> None:
    """PoolConfig's checks, run on ``config``'s fields of the same names and named ``owner.field``.

    Shared with configs that carry a pool's settings (VerifierConfig, whose run
    budget is ``deadline_s`` and whose math workers need more memory), so the
    two cannot drift apart.
    """
    check_int(f"{owner}.num_workers", config.num_workers, low=1, optional=True)
    check_int(f"{owner}.spare_workers", config.spare_workers, low=0)
    check_number(f"{owner}.{run_timeout_field}", getattr(config, run_timeout_field), low=0, low_open=True,
                 unit="seconds")
    check_number(f"{owner}.queue_timeout_s", config.queue_timeout_s, low=0, low_open=True, unit="seconds")
    check_int(f"{owner}.max_in_flight", config.max_in_flight, low=1)
    check_int(f"{owner}.max_retries", config.max_retries, low=0)
    check_int(f"{owner}.memory_limit_mb", config.memory_limit_mb, low=min_memory_mb, optional=True)
    if getattr(config, "scope", None) is not None:
        check_choice(f"{owner}.scope", config.scope, POOL_SCOPES)


class PoolStatus(str, enum.Enum):
    """How a request ended; see the module docstring for whose fault each is."""

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
        """The input itself timed out or crashed its worker: grade it, it is not a no-verdict."""
        return self.status in (PoolStatus.TIMEOUT, PoolStatus.CRASHED)


# --------------------------------------------------------------------------- worker side


def _worker_main(handler: str) -> None:
    """Entry point of a worker process: requests on fd 0, replies on fd 1."""
    reply_fd = os.dup(1)
    os.dup2(2, 1)  # prints go to stderr (/dev/null) and cannot corrupt the reply stream
    requests, replies = Connection(0, writable=False), Connection(reply_fd, readable=False)
    try:  # die with the parent even if it is SIGKILLed (Linux)
        import ctypes

        ctypes.CDLL(None).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
        if os.getppid() == 1:
            return
    except Exception:
        pass
    limit_mb = int(os.environ.get("GYM_INTEGRITY_POOL_MEM_MB", "0"))
    if limit_mb > 0:
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (limit_mb << 20, limit_mb << 20))
        except (ImportError, ValueError, OSError):
            pass
    try:
        import importlib

        module_name, function_name = handler.split(":")
        module = importlib.import_module(module_name)
        function = getattr(module, function_name)
        if callable(getattr(module, "warm", None)):
            module.warm()
    except BaseException as exc:  # noqa: BLE001  (tell the parent why, then exit)
        replies.send(("startup_error", f"{type(exc).__name__}: {str(exc)[:200]}"))
        sys.exit(1)
    replies.send(("ready", os.getpid()))
    while True:
        try:
            message = requests.recv()
        except (EOFError, OSError):
            return
        req_id, data = message
        try:  # pickled here, so an unpicklable value is the handler's error, not the worker's death
            reply = (req_id, PoolStatus.OK.value, pickle.dumps(function(pickle.loads(data))))
        except BaseException as exc:  # noqa: BLE001  (report, keep serving)
            reply = (req_id, PoolStatus.ERROR.value, type(exc).__name__)
        replies.send(reply)


# --------------------------------------------------------------------------- parent side


class _PlainUnpickler(pickle.Unpickler):
    """Reads plain data only: a worker that untrusted input took over cannot make the parent run code."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"a worker reply may hold plain data only, not {module}.{name}")


def _plain_loads(data: bytes) -> Any:
    return _PlainUnpickler(io.BytesIO(data)).load()


def _parse_reply(raw: bytes) -> tuple[Any, ...]:
    """A worker's message: ``("ready", pid)``, ``("startup_error", text)`` or ``(req_id, status, value)``."""
    message = _plain_loads(raw)
    if isinstance(message, tuple) and len(message) == 2 and message[0] in ("ready", "startup_error"):
        return message
    if not (isinstance(message, tuple) and len(message) == 3 and message[1] in ("ok", "error")):
        raise ValueError("malformed worker reply")
    if message[1] == "ok":
        return message[0], "ok", _plain_loads(message[2])
    return message


def _stubs(handler_module: str) -> list[tuple[str, str]]:
    """Empty package modules for ``gym_integrity`` and the handler's parents inside it."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    names = ["gym_integrity", "gym_integrity.services"]
    parts = handler_module.split(".")
    if parts[0] == "gym_integrity":
        names += [".".join(parts[:i]) for i in range(2, len(parts))]
    return [(n, os.path.join(root, *n.split(".")[1:])) for n in dict.fromkeys(names)]


class _Worker:
    """One worker subprocess and the two ends of its pipes."""

    def __init__(self, handler: str, memory_limit_mb: int | None) -> None:
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        env = dict(os.environ)
        package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        env["GYM_INTEGRITY_POOL_MEM_MB"] = str(memory_limit_mb or 0)
        code = stubbed_main_code("gym_integrity.services.pool", "_worker_main", handler, handler.split(":")[0])
        try:
            self.proc = subprocess.Popen([sys.executable, "-c", code], stdin=req_r, stdout=rep_w,
                                         stderr=subprocess.DEVNULL, close_fds=True, env=env, start_new_session=True)
        finally:
            os.close(req_r)
            os.close(rep_w)
        self.send_conn = Connection(req_w, readable=False)
        self.recv_conn = Connection(rep_r, writable=False)
        self.ready = False
        self.request: _Request | None = None
        self.started_at = time.monotonic()

    def kill(self, wait: bool = True) -> None:
        """SIGKILL; ``wait=False`` leaves the reaping to the caller (a process freeing GBs exits in tens of ms)."""
        for conn in (self.send_conn, self.recv_conn):
            try:
                conn.close()
            except OSError:
                pass
        try:
            self.proc.kill()
            if wait:
                self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass

    def death(self) -> tuple[bool, str]:
        """``(from_outside, description)`` of how this (exited) worker died."""
        try:
            code = self.proc.wait(timeout=2)  # the pipe's EOF can precede the exit status by a moment
        except subprocess.TimeoutExpired:
            self.kill()  # closed its pipe yet lives on: the handler's doing
            return False, "closed its reply pipe"
        if code < 0:
            try:
                sig = signal.Signals(-code)
            except ValueError:  # a real-time signal (SIGRTMIN+n) has no name
                return False, f"signal {-code}"
            return sig in _OUTSIDE_KILLS, sig.name
        return False, f"exit status {code}"


@dataclass(eq=False)
class _Request:
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


def check_handler(name: str, handler: Any) -> str:
    """``handler`` if it is a str ``"module:function"`` (else TypeError / ValueError naming ``name``)."""
    check_str(name, handler, what="a str 'module:function'")
    if handler.count(":") != 1 or not all(handler.split(":")):
        raise ValueError(f"{name} must look like 'package.module:function', got {handler!r}")
    return handler


class _Pickled:
    """A payload a machine-pool client pickled: the server hands its bytes to a worker unread."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


class _Waker:
    """The dispatcher's wake-up pipe, one per dispatcher.

    Why not two raw fds on the pool: a number the kernel has taken back at a
    close is soon handed to the next pipe, often a worker's. With raw fds a
    request racing ``close()`` could write its wake-up byte into a worker's
    request stream, and a dispatcher outliving its ``close()`` could read another
    pipe's bytes and then block holding the pool's lock (our best account of a
    CI run that hung in the pool's close-racing test). So the write end is
    written and closed under one lock (a late writer finds it closed, never a
    stranger's pipe), and the read end is closed by the one thread that reads
    it, the dispatcher, when it ends. Closing the write end is the last wake-up:
    the reader sees EOF.
    """

    def __init__(self) -> None:
        self.read_fd, self._write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        os.set_blocking(self._write_fd, False)  # a full pipe already holds a wake-up: never block a submit
        self._lock = threading.Lock()

    def wake(self) -> None:
        with self._lock:
            if self._write_fd >= 0:
                try:
                    os.write(self._write_fd, b"x")
                except OSError:  # full (BlockingIOError): a wake-up is pending anyway
                    pass

    def drain(self) -> None:
        """Read what woke the dispatcher (dispatcher thread only)."""
        try:
            while os.read(self.read_fd, 4096):
                pass
        except OSError:  # empty (BlockingIOError): drained
            pass

    def close_write(self) -> None:
        with self._lock:
            fd, self._write_fd = self._write_fd, -1
        if fd >= 0:
            os.close(fd)

    def close_read(self) -> None:
        """The dispatcher's last act."""
        fd, self.read_fd = self.read_fd, -1
        if fd >= 0:
            os.close(fd)

    def forget(self) -> None:
        """In a forked child: close its copies of both ends (not under the lock, which a parent thread may
        have held at the fork)."""
        for fd in (self.read_fd, self._write_fd):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.read_fd = self._write_fd = -1


class _Users:
    """``acquire``/``release`` by reference count, for a pool with ``_lock``, ``_refs``, ``start()`` and ``close()``."""

    _lock: Any
    _refs: int

    def start(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def acquire(self) -> Any:
        """Register a user and make sure the pool is running (or, for a machine pool, connecting)."""
        with self._lock:
            self._refs += 1
        self.start()
        return self

    def release(self) -> None:
        """Drop a user; the last one out stops this process's pool or connection (a later request restarts it)."""
        with self._lock:
            self._refs = max(0, self._refs - 1)
            last = self._refs == 0
        if last:
            self.close()


class WorkerPool(_Users):
    """One pool of killable worker processes running one handler (see the module docstring)."""

    def __init__(self, handler: str, config: PoolConfig | None = None) -> None:
        self.handler = check_handler("WorkerPool.handler", handler)
        self.config = config or PoolConfig()
        self._lock = threading.RLock()
        # start() and close() whole, one at a time: a restart by a request never lands inside a close().
        self._lifecycle = threading.RLock()
        self._queue: collections.deque[_Request] = collections.deque()
        self._workers: list[_Worker] = []
        self._dying: list[subprocess.Popen] = []  # workers killed at a deadline, not yet reaped
        self._in_flight = self._refs = self._startup_failures = 0
        self._ids = itertools.count()
        self._thread: threading.Thread | None = None  # the live dispatcher; an old one sees it is not and exits
        self._waker: _Waker | None = None  # the live dispatcher's
        self._counters: collections.Counter[str] = collections.Counter()
        self._done: list[tuple[concurrent.futures.Future, TaskOutcome]] = []  # resolved outside the lock
        self._run_s_sum = self._run_s_max = self._queued_s_max = 0.0
        self._ready_since: float | None = None  # queue clocks start once the pool first served
        self._worker_start_s = 0.0  # the slowest recent start-up of a worker, spawn to ready
        self._respawn_at = 0.0
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
            waker = self._waker = _Waker()
            self._ready_since, self._startup_failures, self._respawn_at = None, 0, 0.0
            self._thread = threading.Thread(target=self._dispatch_forever, args=(waker,), daemon=True,
                                            name=f"gym-integrity-pool:{self.handler}")
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

    def wait_ready(self, timeout: float = _STARTUP_TIMEOUT_S) -> bool:
        """Block until every worker process has warmed up (True), or ``timeout`` passes (False)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self._lock:
                if len(self._workers) == self.config.workers + self.config.spare_workers and \
                        all(w.ready for w in self._workers):
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

    def submit_pickled(self, data: bytes, *, run_timeout_s: float | None = None) -> concurrent.futures.Future:
        """:meth:`submit` of a payload pickled elsewhere (a machine-pool client): the bytes go to a worker
        as they are, so the process holding the pool never unpickles a client's payload."""
        return self.submit(_Pickled(bytes(data)), run_timeout_s=run_timeout_s)

    def submit(self, payload: Any, *, run_timeout_s: float | None = None) -> concurrent.futures.Future:
        """Queue ``payload``; the future yields a :class:`TaskOutcome` (never an exception)."""
        budget = self._budget(run_timeout_s)
        request = _Request(next(self._ids), payload, budget, concurrent.futures.Future())
        while True:
            if not self.running:
                self.start()
            with self._lock:
                if not self.running:  # closed since the check above: queued now, it would wait for no one
                    continue
                self._counters["requests"] += 1
                self._in_flight += 1
                if self._in_flight > self.config.max_in_flight:
                    self._finish(request, PoolStatus.OVERLOADED, detail=(
                        f"{self._in_flight - 1} requests in flight (max_in_flight={self.config.max_in_flight})"))
                else:
                    # Each request ahead may run to its budget and then wait for its killed worker's successor.
                    running = [w.request for w in self._workers if w.request is not None]
                    ahead = sum(r.budget for r in self._queue) + sum(r.budget for r in running)
                    ahead += (len(self._queue) + len(running)) * self._worker_start_s
                    request.queue_allowance = self.config.queue_timeout_s + ahead / self.config.workers
                    self._queue.append(request)
                break
        request.future.queue_allowance = request.queue_allowance  # type: ignore[attr-defined]  (read by run)
        self._flush()
        self._wake()
        return request.future

    def run(self, payload: Any, *, run_timeout_s: float | None = None) -> TaskOutcome:
        """Run ``payload`` on a worker and wait: never raises (but for a bad argument), never hangs."""
        future = self.submit(payload, run_timeout_s=run_timeout_s)
        allowance = getattr(future, "queue_allowance", 0.0) or self.config.queue_timeout_s
        worst = ((self.config.max_retries + 1) * (allowance + self._budget(run_timeout_s))
                 + _STARTUP_TIMEOUT_S + _CALLER_GRACE_S)
        try:
            return future.result(timeout=worst)
        except concurrent.futures.TimeoutError:
            # A dispatcher bug or a frozen machine: answer now, rebuild the pool for the next request.
            self._counters["stalls"] += 1
            self.close()
            self.start()
            return future.result() if future.done() else TaskOutcome(
                PoolStatus.INFRA_ERROR, detail=f"the worker pool did not answer within {worst:g} s")

    def _budget(self, run_timeout_s: float | None) -> float:
        if run_timeout_s is None:
            return float(self.config.run_timeout_s)
        return check_number("WorkerPool.run_timeout_s", run_timeout_s, low=0, low_open=True, unit="seconds")

    def stats(self, fresh: bool = True) -> dict[str, float]:
        """Cumulative metrics, flat ``pool/...`` float keys (always fresh here: ``fresh`` is for the machine pool's
        client, whose figures come from its server)."""
        with self._lock:
            c = self._counters
            out = {f"pool/{k}": float(c[k]) for k in ("requests", "completed", "timeouts", "crashes", "errors",
                                                       "infra_errors", "overloaded", "retries", "worker_restarts")}
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

    def _finish(self, request: _Request, status: PoolStatus, value: Any = None, detail: str = "") -> None:
        """Count ``request`` as done, once; :meth:`_flush` hands out its outcome (caller holds the lock)."""
        if request.finished:
            return
        request.finished = True
        self._in_flight = max(0, self._in_flight - 1)
        run_s = time.monotonic() - request.started if request.started else 0.0
        if status is PoolStatus.TIMEOUT:
            run_s = request.budget  # the kill's own latency is not the input's run time
        key = {PoolStatus.OK: "ok", PoolStatus.ERROR: "errors", PoolStatus.TIMEOUT: "timeouts",
               PoolStatus.CRASHED: "crashes", PoolStatus.INFRA_ERROR: "infra_errors",
               PoolStatus.OVERLOADED: "overloaded"}[status]
        self._counters[key] += 1
        self._counters["completed"] += 1
        if request.started:
            self._counters["ran"] += 1
            self._run_s_sum += run_s
            self._run_s_max = max(self._run_s_max, run_s)
        self._queued_s_max = max(self._queued_s_max, request.queued_s)
        self._done.append((request.future, TaskOutcome(status, value, detail, request.queued_s, run_s,
                                                       request.attempts)))

    def _flush(self) -> None:
        """Resolve finished futures outside the lock, so callbacks may call back into the pool."""
        with self._lock:
            done, self._done = self._done, []
        for future, outcome in done:
            if not future.done():
                future.set_result(outcome)

    def _serving(self) -> bool:
        """True in the live dispatcher thread (False once close() or a restart replaced it)."""
        return self._thread is threading.current_thread()

    def _dispatch_forever(self, waker: _Waker) -> None:
        try:
            while self._serving():
                try:
                    self._dispatch_once(waker)
                except Exception as exc:  # noqa: BLE001  (a dispatcher bug must not hang callers)
                    self._recover(exc)
        finally:
            waker.close_read()

    def _recover(self, exc: Exception) -> None:
        """After a dispatcher error: every request pending ends ``INFRA_ERROR``, every worker is replaced."""
        with self._lock:
            if not self._serving():
                return  # retired by close(), whose clean-up this would race
            pending = list(self._queue) + [w.request for w in self._workers if w.request is not None]
            self._queue.clear()
            for worker in list(self._workers):
                worker.request = None
                self._replace(worker)
            for request in pending:
                self._finish(request, PoolStatus.INFRA_ERROR, detail=f"pool dispatcher error: {type(exc).__name__}")
        self._flush()
        time.sleep(0.05)

    def _dispatch_once(self, waker: _Waker) -> None:
        with self._lock:
            if not self._serving():
                return
            self._refill()
            self._expire_queued()
            self._assign()
            timeout = self._next_timeout()
            watched = [w.recv_conn for w in self._workers]  # idle ones too: EOF the moment they die
        ready = wait(watched + [waker.read_fd], timeout=timeout)
        if waker.read_fd in ready:
            waker.drain()
        with self._lock:
            if not self._serving():
                return  # retired while waiting: the workers and queue are close()'s now
            by_conn = {id(w.recv_conn): w for w in self._workers}
            for conn in ready:
                worker = by_conn.get(id(conn))
                if worker is not None:
                    self._read_reply(worker)
            self._enforce_deadlines()
        self._flush()

    def _refill(self) -> None:
        if self._dying:
            self._dying = [proc for proc in self._dying if proc.poll() is None]   # reap killed workers
        if self._broken and time.monotonic() < self._respawn_at:
            return
        while self._serving() and len(self._workers) < self.config.workers + self.config.spare_workers:
            try:
                self._workers.append(_Worker(self.handler, self.config.memory_limit_mb))
            except OSError:  # no fds or pids right now: try again next loop
                break

    @property
    def _broken(self) -> bool:
        return self._startup_failures >= _MAX_STARTUP_FAILURES

    def _replace(self, worker: _Worker, wait: bool = True) -> None:
        """Kill ``worker`` and drop it; :meth:`_refill` starts its successor (caller holds the lock).

        ``wait=False``: do not wait for its exit (the timed-out request's outcome would wait with it);
        :meth:`_refill` reaps it later, :meth:`close` waits for it.
        """
        worker.kill(wait=wait)
        if not wait:
            self._dying.append(worker.proc)
        self._counters["worker_restarts"] += 1
        if not worker.ready:
            self._startup_failures += 1
            if self._broken:
                self._respawn_at = time.monotonic() + min(30.0, 2.0 ** (self._startup_failures -
                                                                        _MAX_STARTUP_FAILURES))
        if worker in self._workers:
            self._workers.remove(worker)
        self._refill()

    def _expire_queued(self) -> None:
        if self._broken and not any(w.ready for w in self._workers):
            while self._queue:
                self._finish(self._queue.popleft(), PoolStatus.INFRA_ERROR, detail=(
                    f"pool workers exit while starting ({self._startup_failures} in a row): "
                    f"{self._startup_error or 'no reason given'}; check `{sys.executable} -c "
                    f"'from {self.handler.split(':')[0]} import {self.handler.split(':')[1]}'`"))
            return
        if self._ready_since is None:
            return  # cold start: interpreter start-up is nobody's queueing
        now = time.monotonic()
        for request in [r for r in self._queue if self._queue_deadline(r) <= now]:
            self._queue.remove(request)
            request.queued_s += now - max(request.enqueued, self._ready_since)
            self._finish(request, PoolStatus.OVERLOADED,
                         detail=f"no worker was free within {request.queue_allowance:g} s")

    def _queue_deadline(self, request: _Request) -> float:
        return max(request.enqueued, self._ready_since or request.enqueued) + request.queue_allowance

    def _assign(self) -> None:
        busy = sum(w.request is not None for w in self._workers)
        for worker in list(self._workers):
            if not self._queue or busy >= self.config.workers:
                return
            if not worker.ready or worker.request is not None:
                continue
            if worker.proc.poll() is not None or worker.recv_conn.poll(0):
                self._replace(worker)  # died while idle: nobody's request, nobody's retry
                continue
            request = self._queue.popleft()
            try:
                payload = request.payload
                data = payload.data if type(payload) is _Pickled else pickle.dumps(payload)
            except Exception as exc:  # the caller's error, not the pool's
                self._finish(request, PoolStatus.ERROR, detail=f"unsendable payload ({type(exc).__name__})")
                continue
            try:
                worker.send_conn.send((request.req_id, data))
            except (OSError, ValueError):
                self._queue.appendleft(request)  # never reached a live worker: not an attempt
                self._replace(worker)
                continue
            now = time.monotonic()
            request.queued_s += now - max(request.enqueued, self._ready_since or now)
            request.attempts += 1
            request.started = now
            worker.request = request
            busy += 1

    def _next_timeout(self) -> float:
        deadlines = [w.request.started + w.request.budget for w in self._workers if w.request is not None]
        if self._ready_since is not None:
            deadlines += [self._queue_deadline(r) for r in self._queue]
        if not deadlines:
            return 1.0
        return min(1.0, max(0.0, min(deadlines) - time.monotonic()))

    def _read_reply(self, worker: _Worker) -> None:
        try:
            raw = worker.recv_conn.recv_bytes(_MAX_REPLY_BYTES)
        except EOFError:
            self._worker_died(worker)
            return
        except OSError:  # longer than _MAX_REPLY_BYTES: left unread, so the stream is out of step
            raw = b""
        try:
            message = _parse_reply(raw)
        except Exception as exc:  # noqa: BLE001  (a reply the parent refuses to read: the worker is done)
            request, worker.request = worker.request, None
            self._replace(worker)
            if request is not None:
                self._finish(request, PoolStatus.ERROR, detail=f"unreadable reply ({type(exc).__name__})")
            return
        if message[0] == "ready":
            worker.ready = True
            self._startup_failures = 0
            # Decays so one start on a loaded machine does not stretch every later allowance.
            self._worker_start_s = max(time.monotonic() - worker.started_at, 0.8 * self._worker_start_s)
            if self._ready_since is None:
                self._ready_since = time.monotonic()
            return
        if message[0] == "startup_error":
            self._startup_error = message[1]
            return  # the EOF that follows replaces the worker
        req_id, status, value = message
        request, worker.request = worker.request, None
        if request is None or request.req_id != req_id:
            return
        if status == PoolStatus.OK.value:
            self._finish(request, PoolStatus.OK, value=value)
        else:
            self._finish(request, PoolStatus.ERROR, detail=str(value))

    def _worker_died(self, worker: _Worker) -> None:
        """A worker exited on its own: replace it; retry its request on another process or give up."""
        from_outside, how = worker.death()  # first: were it to raise, the request is still the worker's, and the
        request, worker.request = worker.request, None  # dispatcher's recovery ends it instead of losing it
        self._replace(worker)
        if request is None:
            return
        request.deaths.append(how)
        request.from_outside = request.from_outside or from_outside
        if request.attempts <= self.config.max_retries:
            self._counters["retries"] += 1
            request.enqueued, request.started = time.monotonic(), 0.0
            self._queue.appendleft(request)
            return
        deaths = ", ".join(request.deaths)
        if request.from_outside:
            self._finish(request, PoolStatus.INFRA_ERROR, detail=(
                f"the worker was killed from outside ({deaths}) on {request.attempts} attempt(s)"))
        else:
            self._finish(request, PoolStatus.CRASHED, detail=(
                f"the worker died running it ({deaths}) on each of {request.attempts} attempt(s), "
                "each on another process"))

    def _enforce_deadlines(self) -> None:
        now = time.monotonic()
        for worker in list(self._workers):
            request = worker.request
            if request is not None and request.started + request.budget <= now:
                worker.request = None
                self._replace(worker, wait=False)   # the outcome is not held up by the kernel freeing its memory
                self._finish(request, PoolStatus.TIMEOUT,
                             detail=f"ran past its {request.budget:g} s run budget; the worker was killed")
            elif not worker.ready and now - worker.started_at > _STARTUP_TIMEOUT_S:
                self._replace(worker)


class Pool(Protocol):
    """What envs and services use of a pool: a :class:`WorkerPool` (scope ``"process"``) or a
    :class:`~gym_integrity.services.machine_pool.MachinePool` client (scope ``"machine"``)."""

    handler: str
    config: PoolConfig

    def acquire(self) -> "Pool": ...
    def release(self) -> None: ...
    def start(self) -> None: ...
    def close(self) -> None: ...
    @property
    def running(self) -> bool: ...
    def submit(self, payload: Any, *, run_timeout_s: float | None = None) -> concurrent.futures.Future: ...
    def run(self, payload: Any, *, run_timeout_s: float | None = None) -> TaskOutcome: ...
    def stats(self, fresh: bool = True) -> dict[str, float]: ...
    def worker_pids(self) -> list[int]: ...
    def busy_worker_pids(self) -> list[int]: ...
    def wait_ready(self, timeout: float = ...) -> bool: ...


_POOLS: ProcessCache[tuple[str, PoolConfig, str], Pool] = ProcessCache("worker pools")
_live_pools: "weakref.WeakSet[WorkerPool]" = weakref.WeakSet()  # shared or not: for shutdown and fork


def make_pool(handler: str, config: PoolConfig | None = None) -> Pool:
    """A new, unshared pool for ``(handler, config)`` in the config's scope (not started).

    ``"machine"``: a client of the machine's pool server for that handler and
    config (:mod:`gym_integrity.services.machine_pool`); ``"process"``: a
    :class:`WorkerPool` of this process's own.
    """
    config = config or PoolConfig()
    if config.resolved_scope == "machine":
        from gym_integrity.services.machine_pool import MachinePool

        return MachinePool(handler, config)
    return WorkerPool(handler, config)


def get_pool(handler: str, config: PoolConfig | None = None) -> Pool:
    """The process's pool for ``(handler, config)`` (created on first use, not started), in the config's scope.

    By default (scope ``"machine"``) this is the process's one client of the
    machine's pool: every process of the user that asks for the same handler
    and config reaches the same workers. Scope ``"process"`` gives a
    :class:`WorkerPool` of this process's own.
    """
    config = config or PoolConfig()
    key = (handler, config, config.resolved_scope)
    return _POOLS.get_or_create(key, lambda: make_pool(handler, config))


def shutdown_all() -> None:
    """Stop every pool of this process (also runs at interpreter exit)."""
    for pool in list(_live_pools):
        pool.close()


def _forget_after_fork() -> None:
    """In a forked child, reset the parent's pools: their dispatcher thread did not survive the fork.

    Closing the child's copies of the parent's pipe ends keeps the parent's
    EOF-based death detection working. A pool an env took before the fork
    starts afresh on its next request; :func:`get_pool` builds new ones.
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
        pool._waker, pool._ready_since = None, None


atexit.register(shutdown_all)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)

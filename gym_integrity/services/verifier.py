r"""The answer verifier: math_verify in killable worker processes, with a wall-clock deadline per request.

math_verify's own timeout uses ``signal.alarm``: it refuses to run off the main
thread and cannot interrupt C-level work, and answers such as
``\boxed{9^{9^{9^{9}}}}`` or a few hundred nested brackets hang it for seconds
to forever. So the parse and the comparison run in worker processes that the
parent can SIGKILL, and the parent alone enforces the deadline:

* workers are plain ``python`` subprocesses (not ``multiprocessing`` children:
  those re-import the user's ``__main__`` script, and a fork would copy the
  dispatcher thread's locks), each talking to the parent over its own pair of
  pipes;
* a dispatcher thread hands requests to idle workers, waits on their pipes
  with the nearest deadline as timeout, and on overrun kills the worker, starts
  a replacement and answers ``timeout``; the next request is served normally;
* ``spare_workers`` idle processes are kept started, so a killed worker's
  successor is already warm; workers that keep dying while starting (a broken
  interpreter) give ``grader_error`` and a growing pause, not a spawn loop;
* at most ``max_in_flight`` requests are queued or running; one more is refused
  at once with a ``grader_error`` no-verdict (backpressure, not an unbounded queue);
* a worker that dies mid-request (crash, OOM, SIGKILL) is replaced and the
  request retried, up to ``max_retries`` times, within its deadline;
* each worker caches the parsed gold answer, keyed by problem id, gold text
  and verifier settings: a gold answer is parsed once per worker;
* :func:`get_verifier` returns one service per process per configuration;
  envs :meth:`~VerifierService.acquire` it and :meth:`~VerifierService.release`
  it at ``close()``; the last release, or interpreter exit, shuts it down.

Example:
    >>> from gym_integrity.services.verifier import VerifierConfig, check_boxed
    >>> check_boxed(r"so the answer is \boxed{\frac{1}{2}}.", max_chars=64)
    ('\\frac{1}{2}', None)
    >>> check_boxed("I give up", max_chars=64)[1].verdict.value
    'no_answer'
    >>> VerifierConfig(deadline_s=0)
    Traceback (most recent call last):
    ...
    ValueError: VerifierConfig.deadline_s must be a number > 0 (seconds), got 0
"""

from __future__ import annotations

import atexit
import collections
import concurrent.futures
import dataclasses
import hashlib
import itertools
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from gym_integrity.checks import is_int, is_number
from gym_integrity.extract import last_boxed
from gym_integrity.protocol import Grade, Verdict

__all__ = ["VerifierConfig", "VerifierService", "VerifyOutcome", "check_boxed", "get_verifier", "shutdown_all"]

# Workers import this module without running gym_integrity/__init__.py (which
# imports gymnasium and registers every env): empty package stubs make each
# replacement of a killed worker start about a quarter faster.
_WORKER_CODE = """
import sys, types
for name, path in (("gym_integrity", {root!r}), ("gym_integrity.services", {services!r})):
    module = types.ModuleType(name)
    module.__path__ = [path]
    sys.modules[name] = module
from gym_integrity.services.verifier import _worker_main
_worker_main()
"""
# How long to wait for the pool's first worker to import math_verify; not
# charged to a request's deadline, which measures grading, not interpreter start.
_STARTUP_TIMEOUT_S = 60.0
# Workers that die before saying ready this many times in a row mean the
# interpreter cannot run them (math_verify missing, no memory): stop spawning
# in a loop, answer grader_error, and retry with a growing pause.
_MAX_STARTUP_FAILURES = 3
# Beyond the deadline, how long a caller waits for the dispatcher before it
# declares the service stuck (a bug, not an input) and answers anyway.
_CALLER_GRACE_S = 2.0


@dataclass(frozen=True)
class VerifierConfig:
    """Settings of one verifier service (one pool of workers per distinct config).

    Attributes:
        num_workers: Requests verified at once (busy worker processes).
            ``None``: ``min(2, os.cpu_count())``.
        spare_workers: Extra idle workers kept started, so a worker killed at
            its deadline is replaced at once instead of after an interpreter start.
        deadline_s: Wall-clock budget of a request, from submission (queueing
            included) to verdict. A worker still busy at the deadline is killed.
        max_in_flight: Requests queued or running at once; one more is refused
            with a ``grader_error`` no-verdict.
        max_retries: Re-runs of a request whose worker died under it.
        max_answer_chars: Longest ``\\boxed{}`` content sent to math_verify;
            longer is ``unparsable``.
        float_rounding, numeric_precision, strict: math_verify's ``verify`` options.
        gold_cache_size: Parsed gold answers each worker keeps.
        memory_limit_mb: Address-space limit of each worker (``RLIMIT_AS``);
            ``None`` for none.
    """

    num_workers: int | None = None
    spare_workers: int = 1
    deadline_s: float = 5.0
    max_in_flight: int = 256
    max_retries: int = 1
    max_answer_chars: int = 1024
    float_rounding: int = 6
    numeric_precision: int = 15
    strict: bool = True
    gold_cache_size: int = 4096
    memory_limit_mb: int | None = 4096

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        def need_int(name: str, low: int, allow_none: bool = False) -> None:
            value = getattr(self, name)
            if value is None and allow_none:
                return
            if not is_int(value) or value < low:
                extra = " or None" if allow_none else ""
                raise ValueError(f"VerifierConfig.{name} must be an int >= {low}{extra}, got {value!r}")

        need_int("num_workers", 1, allow_none=True)
        need_int("spare_workers", 0)
        need_int("max_in_flight", 1)
        need_int("max_retries", 0)
        need_int("max_answer_chars", 1)
        need_int("float_rounding", 0)
        need_int("numeric_precision", 1)
        need_int("gold_cache_size", 1)
        need_int("memory_limit_mb", 256, allow_none=True)
        if not is_number(self.deadline_s) or not self.deadline_s > 0:
            raise ValueError(f"VerifierConfig.deadline_s must be a number > 0 (seconds), got {self.deadline_s!r}")
        if not isinstance(self.strict, bool):
            raise ValueError(f"VerifierConfig.strict must be a bool, got {self.strict!r}")

    @property
    def workers(self) -> int:
        return self.num_workers if self.num_workers is not None else max(1, min(2, os.cpu_count() or 1))

    @property
    def processes(self) -> int:
        return self.workers + self.spare_workers

    @property
    def settings(self) -> tuple[int, int, bool]:
        """What changes a verdict (part of the gold cache key)."""
        return (self.float_rounding, self.numeric_precision, self.strict)

    @classmethod
    def from_value(cls, value: "VerifierConfig | dict[str, Any] | None") -> "VerifierConfig":
        if value is None:
            return cls()
        if isinstance(value, VerifierConfig):
            return value
        if isinstance(value, dict):
            valid = {f.name for f in dataclasses.fields(cls)}
            unknown = sorted(set(value) - valid)
            if unknown:
                raise ValueError(f"verifier: unknown option(s) {unknown}; valid: {sorted(valid)}")
            return cls(**value)
        raise TypeError(f"verifier must be a VerifierConfig, a dict or None, got {type(value).__name__}")


@dataclass(frozen=True)
class VerifyOutcome:
    """A verdict plus the request's metrics (flat ``verifier/...`` keys, float values)."""

    grade: Grade
    metrics: dict[str, float]


def check_boxed(text: str, max_chars: int) -> tuple[str | None, Grade | None]:
    r"""``(content, None)`` of the last ``\boxed{}`` in ``text``, or ``(None, grade)`` saying why there is none.

    Missing: ``no_answer``. Empty, unbalanced or longer than ``max_chars``: ``unparsable``.

    >>> check_boxed(r"\boxed{" + "1" * 10 + "}", max_chars=4)[1].cause
    'the boxed answer is longer than 4 characters'
    """
    extraction = last_boxed(text, max_chars)
    if extraction.failure is Verdict.NO_ANSWER:
        return None, Grade(Verdict.NO_ANSWER, 0.0, cause="no \\boxed{} answer found")
    if extraction.failure is Verdict.TOO_LONG:
        return None, Grade(Verdict.UNPARSABLE, 0.0, cause=f"the boxed answer is longer than {max_chars} characters")
    if extraction.failure is not None or extraction.answer is None:
        return None, Grade(Verdict.UNPARSABLE, 0.0, cause="the last \\boxed{} is empty or its braces are unbalanced")
    return extraction.answer, None


# --------------------------------------------------------------------------- worker side


def _gold_as_boxed(gold: str) -> str:
    gold = gold.strip()
    if "\\boxed" in gold:
        return gold
    if len(gold) >= 2 and gold[0] == "$" and gold[-1] == "$":
        gold = gold.strip("$").strip()
    return "\\boxed{" + gold + "}"


def _worker_main() -> None:
    """Entry point of a worker process: read requests on fd 0, answer on fd 1."""
    reply_fd = os.dup(1)
    os.dup2(2, 1)  # library prints go to stderr and cannot corrupt the reply stream
    requests, replies = Connection(0, writable=False), Connection(reply_fd, readable=False)
    try:  # die with the parent even if it is SIGKILLed (Linux)
        import ctypes
        import signal

        ctypes.CDLL(None).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
        if os.getppid() == 1:
            return
    except Exception:
        pass
    limit_mb = int(os.environ.get("GYM_INTEGRITY_VERIFIER_MEM_MB", "0"))
    if limit_mb > 0:
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (limit_mb << 20, limit_mb << 20))
        except (ImportError, ValueError, OSError):
            pass
    import logging

    logging.disable(logging.CRITICAL)  # math_verify warns per request; the parent keeps the metrics
    from math_verify import parse, verify

    parse("\\boxed{1}", parsing_timeout=None)  # load the LaTeX grammar before saying ready
    replies.send(("ready", os.getpid()))
    cache: collections.OrderedDict[Any, Any] = collections.OrderedDict()
    while True:
        try:
            message = requests.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        req_id, key, gold_text, answer, settings, cache_size = message
        float_rounding, numeric_precision, strict = settings
        hit = key in cache
        try:
            if hit:
                cache.move_to_end(key)
                gold = cache[key]
            else:
                gold = parse(_gold_as_boxed(gold_text), parsing_timeout=None)
                if gold:
                    cache[key] = gold
                    while len(cache) > cache_size:
                        cache.popitem(last=False)
            if not gold:
                status = "gold_unparsable"
            else:
                pred = parse("\\boxed{" + answer + "}", parsing_timeout=None)
                if not pred:
                    status = "unparsable"
                else:
                    ok = verify(gold, pred, float_rounding=float_rounding, numeric_precision=numeric_precision,
                                strict=strict, timeout_seconds=None)
                    status = "correct" if ok else "incorrect"
            replies.send((req_id, status, hit, ""))
        except BaseException as exc:  # noqa: BLE001  (report, keep serving)
            try:
                replies.send((req_id, "error", hit, type(exc).__name__))
            except Exception:
                return


# --------------------------------------------------------------------------- parent side


def _worker_code() -> str:
    services = os.path.dirname(os.path.abspath(__file__))
    return _WORKER_CODE.format(root=os.path.dirname(services), services=services)


class _Worker:
    """One worker subprocess and the two ends of its pipes."""

    def __init__(self, memory_limit_mb: int | None) -> None:
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        env = dict(os.environ)
        package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        env["GYM_INTEGRITY_VERIFIER_MEM_MB"] = str(memory_limit_mb or 0)
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _worker_code()], stdin=req_r, stdout=rep_w, stderr=subprocess.DEVNULL,
                close_fds=True, env=env, start_new_session=True,
            )
        finally:
            os.close(req_r)
            os.close(rep_w)
        self.send_conn = Connection(req_w, readable=False)
        self.recv_conn = Connection(rep_r, writable=False)
        self.ready = False
        self.request: _Request | None = None
        self.started_at = time.monotonic()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def kill(self) -> None:
        for conn in (self.send_conn, self.recv_conn):
            try:
                conn.close()
            except OSError:
                pass
        try:
            self.proc.kill()
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass


def _stop_workers(workers: list[_Worker], grace_s: float = 0.5) -> None:
    """Ask idle, ready workers to exit (EOF on their request pipe), then kill whatever is left.

    A busy or still-starting worker would not read its pipe in time: killed at once.
    """
    polite = [w for w in workers if w.ready and w.request is None]
    for worker in polite:
        try:
            worker.send_conn.close()
        except OSError:
            pass
    end = time.monotonic() + grace_s
    for worker in polite:
        try:
            worker.proc.wait(timeout=max(0.0, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for worker in workers:
        worker.kill()


@dataclass
class _Request:
    req_id: int
    key: tuple[Any, ...]
    gold: str
    answer: str
    submitted: float
    deadline: float
    budget: float
    future: concurrent.futures.Future
    attempts: int = 0
    started: float | None = None


class VerifierService:
    """A pool of math_verify workers shared by every env of a process (see the module docstring).

    Use :func:`get_verifier` rather than building one: it returns the shared
    instance for a config. Thread-safe: any thread may call :meth:`verify`.
    """

    def __init__(self, config: VerifierConfig) -> None:
        self.config = config
        self._lock = threading.RLock()  # _resolve runs both inside and outside the dispatcher's critical sections
        self._queue: collections.deque[_Request] = collections.deque()
        self._workers: list[_Worker] = []
        self._in_flight = 0
        self._refs = 0
        self._ids = itertools.count()
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._wake_r, self._wake_w = -1, -1
        self._counters: collections.Counter[str] = collections.Counter()
        self._latency_sum = 0.0
        self._latency_max = 0.0
        self._ever_ready = False
        self._startup_failures = 0
        self._respawn_at = 0.0

    # ----------------------------------------------------------------- lifecycle

    def acquire(self) -> "VerifierService":
        """Register a user (an env) and make sure the pool is running."""
        with self._lock:
            self._refs += 1
        self.start()
        return self

    def release(self) -> None:
        """Drop a user; the last one out shuts the pool down (a later request restarts it)."""
        with self._lock:
            self._refs = max(0, self._refs - 1)
            last = self._refs == 0
        if last:
            self.close()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Start the workers and the dispatcher, if not running (non-blocking)."""
        with self._lock:
            if self.running:
                return
            self._stopping = False
            self._wake_r, self._wake_w = os.pipe()
            os.set_blocking(self._wake_r, False)
            self._ever_ready = False
            self._startup_failures = 0
            self._respawn_at = 0.0
            self._workers = [self._spawn() for _ in range(self.config.processes)]
            self._thread = threading.Thread(target=self._dispatch_forever, name="gym-integrity-verifier", daemon=True)
            self._thread.start()

    def close(self) -> None:
        """Stop the dispatcher and every worker; pending requests answer ``grader_error``."""
        with self._lock:
            thread, self._thread = self._thread, None
            self._stopping = True
        if thread is None:
            return
        self._wake()
        thread.join(timeout=5)
        with self._lock:
            workers, self._workers = self._workers, []
            pending = list(self._queue) + [w.request for w in workers if w.request is not None]
            self._queue.clear()
        _stop_workers(workers)
        for request in pending:
            self._resolve(request, Grade(Verdict.GRADER_ERROR, 0.0, cause="the verifier was shut down"))
        for fd in (self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass
        self._wake_r = self._wake_w = -1

    def worker_pids(self) -> list[int]:
        """Process ids of the current workers (for operators and tests)."""
        with self._lock:
            return [w.pid for w in self._workers]

    def busy_worker_pids(self) -> list[int]:
        """Process ids of workers running a request right now."""
        with self._lock:
            return [w.pid for w in self._workers if w.request is not None]

    def wait_ready(self, timeout: float = _STARTUP_TIMEOUT_S) -> bool:
        """Block until every worker has loaded math_verify (True), or ``timeout`` passes (False)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self._lock:
                if self._workers and all(w.ready for w in self._workers):
                    return True
            time.sleep(0.01)
        return False

    # ----------------------------------------------------------------- requests

    def verify(self, text: str, gold: str, *, problem_id: str, deadline_s: float | None = None) -> VerifyOutcome:
        r"""Grade the last ``\boxed{}`` of ``text`` against ``gold``: never raises, never hangs.

        Verdicts: ``correct``, ``incorrect``, ``no_answer``, ``unparsable``
        (extraction or math_verify could not read the answer), or the
        no-verdicts ``timeout`` (deadline passed; the worker was killed) and
        ``grader_error`` (overload, worker crashes beyond the retry budget,
        unparsable gold answer, shutdown). Causes never quote the gold answer.
        ``deadline_s`` overrides the config's deadline for this request.
        """
        answer, failure = check_boxed(text, self.config.max_answer_chars)
        if failure is not None:
            with self._lock:
                self._counters["extraction_failures"] += 1
            return VerifyOutcome(failure, self._metrics(0.0, False))
        return self._verify_extracted(answer, gold, problem_id, deadline_s)

    def submit(self, answer: str, gold: str, *, problem_id: str,
               deadline_s: float | None = None) -> concurrent.futures.Future:
        """Queue an already extracted answer; the future yields a :class:`Grade`. For batch callers."""
        budget = self._budget(deadline_s)
        if not self.running:
            self.start()
        self._await_pool()
        now = time.monotonic()
        key = (problem_id, hashlib.sha1(gold.encode("utf-8", "surrogatepass")).hexdigest(), self.config.settings)
        request = _Request(next(self._ids), key, gold, answer, now, now + budget, budget,
                           concurrent.futures.Future())
        with self._lock:
            self._counters["requests"] += 1
            if self._in_flight >= self.config.max_in_flight:
                self._counters["rejected"] += 1
                request.future.set_result(Grade(
                    Verdict.GRADER_ERROR, 0.0,
                    cause=f"verifier overloaded: {self._in_flight} requests in flight (max_in_flight="
                          f"{self.config.max_in_flight})"))
                return request.future
            self._in_flight += 1
            self._queue.append(request)
        self._wake()
        return request.future

    def _budget(self, deadline_s: float | None) -> float:
        if deadline_s is None:
            return float(self.config.deadline_s)
        if not is_number(deadline_s) or not deadline_s > 0:
            raise ValueError(f"deadline_s must be a number > 0 (seconds) or None, got {deadline_s!r}")
        return float(deadline_s)

    def _verify_extracted(self, answer: str, gold: str, problem_id: str, deadline_s: float | None) -> VerifyOutcome:
        start = time.monotonic()
        future = self.submit(answer, gold, problem_id=problem_id, deadline_s=deadline_s)
        try:
            grade = future.result(timeout=self._budget(deadline_s) + _CALLER_GRACE_S)
        except concurrent.futures.TimeoutError:
            # The dispatcher missed its own deadline: a bug or a frozen machine.
            # Answer now, and rebuild the pool so the next request is served.
            grade = Grade(Verdict.TIMEOUT, 0.0, cause="the verifier did not answer within its deadline")
            with self._lock:
                self._counters["timeouts"] += 1
                self._counters["dispatcher_restarts"] += 1
            self.close()
            self.start()
        latency = time.monotonic() - start
        return VerifyOutcome(grade, self._metrics(latency, getattr(future, "cache_hit", False)))

    def _await_pool(self) -> None:
        """At a cold start only, wait for a first worker: interpreter start is not grading time.

        Once the pool has served, waiting for a replacement counts against the
        request's deadline like any other queueing.
        """
        end = time.monotonic() + _STARTUP_TIMEOUT_S
        while time.monotonic() < end:
            with self._lock:
                if self._ever_ready or self._stopping or self._broken:
                    return
            time.sleep(0.005)

    # ----------------------------------------------------------------- metrics

    def stats(self) -> dict[str, float]:
        """Cumulative service metrics, flat ``verifier/...`` keys."""
        with self._lock:
            c = self._counters
            served = c["cache_hits"] + c["cache_misses"]
            done = c["completed"]
            return {
                "verifier/requests": float(c["requests"]),
                "verifier/completed": float(done),
                "verifier/timeouts": float(c["timeouts"]),
                "verifier/errors": float(c["errors"]),
                "verifier/rejected": float(c["rejected"]),
                "verifier/retries": float(c["retries"]),
                "verifier/worker_restarts": float(c["worker_restarts"]),
                "verifier/extraction_failures": float(c["extraction_failures"]),
                "verifier/queue_depth": float(len(self._queue)),
                "verifier/in_flight": float(self._in_flight),
                "verifier/cache_hit_rate": float(c["cache_hits"] / served) if served else 0.0,
                "verifier/latency_mean_s": float(self._latency_sum / done) if done else 0.0,
                "verifier/latency_max_s": float(self._latency_max),
            }

    def _metrics(self, latency: float, cache_hit: bool) -> dict[str, float]:
        out = self.stats()
        out["verifier/latency_s"] = float(latency)
        out["verifier/cache_hit"] = 1.0 if cache_hit else 0.0
        return out

    # ----------------------------------------------------------------- dispatcher

    def _wake(self) -> None:
        try:
            os.write(self._wake_w, b"x")
        except (OSError, ValueError):
            pass

    def _spawn(self) -> _Worker:
        return _Worker(self.config.memory_limit_mb)

    @property
    def _broken(self) -> bool:
        return self._startup_failures >= _MAX_STARTUP_FAILURES

    def _replace(self, worker: _Worker) -> None:
        """Kill ``worker`` and put a fresh one in its place (caller holds the lock)."""
        worker.kill()
        self._counters["worker_restarts"] += 1
        if not worker.ready:
            self._startup_failures += 1
        try:
            index = self._workers.index(worker)
        except ValueError:
            return
        if self._broken:
            # Leave the slot empty; _refill retries after a growing pause.
            del self._workers[index]
            pause = min(30.0, 2.0 ** (self._startup_failures - _MAX_STARTUP_FAILURES))
            self._respawn_at = time.monotonic() + pause
            return
        try:
            self._workers[index] = self._spawn()
        except OSError:
            # Cannot start a process right now (fd or pid exhaustion): drop the
            # slot; _refill tries again on the next loop.
            del self._workers[index]

    def _resolve(self, request: _Request, grade: Grade) -> None:
        if request.future.done():
            return
        with self._lock:
            self._in_flight = max(0, self._in_flight - 1)
            self._counters["completed"] += 1
            if grade.verdict is Verdict.TIMEOUT:
                self._counters["timeouts"] += 1
            elif grade.verdict is Verdict.GRADER_ERROR:
                self._counters["errors"] += 1
            latency = time.monotonic() - request.submitted
            self._latency_sum += latency
            self._latency_max = max(self._latency_max, latency)
        request.future.set_result(grade)

    def _dispatch_forever(self) -> None:
        while not self._stopping:
            try:
                self._dispatch_once()
            except Exception as exc:  # noqa: BLE001  (a dispatcher bug must not hang callers)
                self._fail_all(f"verifier dispatcher error: {type(exc).__name__}")
                time.sleep(0.05)

    def _fail_all(self, cause: str) -> None:
        with self._lock:
            pending = list(self._queue) + [w.request for w in self._workers if w.request is not None]
            self._queue.clear()
            for worker in list(self._workers):
                worker.request = None
                self._replace(worker)
            for request in pending:
                self._resolve(request, Grade(Verdict.GRADER_ERROR, 0.0, cause=cause))

    def _dispatch_once(self) -> None:
        with self._lock:
            self._refill()
            self._expire_queued()
            self._assign()
            timeout = self._next_timeout()
            # Idle workers too: their pipe turns readable (EOF) the moment they die.
            watched = [w.recv_conn for w in self._workers]
        ready = wait(watched + [self._wake_r], timeout=timeout)
        if self._wake_r in ready:
            try:
                while os.read(self._wake_r, 4096):
                    pass
            except (BlockingIOError, OSError):
                pass
        with self._lock:
            by_conn = {id(w.recv_conn): w for w in self._workers}
            for conn in ready:
                worker = by_conn.get(id(conn))
                if worker is not None:
                    self._read_reply(worker)
            self._enforce_deadlines()

    def _refill(self) -> None:
        if self._broken and time.monotonic() < self._respawn_at:
            return
        while len(self._workers) < self.config.processes:
            try:
                self._workers.append(self._spawn())
            except OSError:
                break

    def _expire_queued(self) -> None:
        if self._broken and not any(w.ready for w in self._workers):
            while self._queue:
                self._resolve(self._queue.popleft(), Grade(
                    Verdict.GRADER_ERROR, 0.0,
                    cause=f"verifier workers exit while starting ({self._startup_failures} in a row); "
                          f"check that `{sys.executable} -c 'import math_verify'` works"))
            return
        now = time.monotonic()
        expired = [r for r in self._queue if r.deadline <= now]  # per-request deadlines: not FIFO-ordered
        for request in expired:
            self._queue.remove(request)
            self._resolve(request, Grade(Verdict.TIMEOUT, 0.0,
                                         cause=f"deadline of {request.budget:g}s passed while queued "
                                               "(all verifier workers busy)"))

    def _assign(self) -> None:
        busy = sum(w.request is not None for w in self._workers)
        for worker in self._workers:
            if not self._queue or busy >= self.config.workers:
                return
            if not worker.ready or worker.request is not None:
                continue
            if worker.proc.poll() is not None or worker.recv_conn.poll(0):
                # Died while idle (an idle worker's pipe is readable only at EOF):
                # not this request's failure, so it is not charged a retry.
                self._replace(worker)
                continue
            request = self._queue.popleft()
            try:
                worker.send_conn.send((request.req_id, request.key, request.gold, request.answer,
                                       self.config.settings, self.config.gold_cache_size))
            except (OSError, ValueError):
                # The request never reached a live worker: requeue it uncharged.
                self._queue.appendleft(request)
                self._replace(worker)
                continue
            request.attempts += 1
            request.started = time.monotonic()
            worker.request = request
            busy += 1

    def _next_timeout(self) -> float:
        deadlines = [w.request.deadline for w in self._workers if w.request is not None]
        deadlines += [r.deadline for r in self._queue]
        if not deadlines:
            return 1.0
        return min(1.0, max(0.0, min(deadlines) - time.monotonic()))

    def _read_reply(self, worker: _Worker) -> None:
        try:
            message = worker.recv_conn.recv()
        except (EOFError, OSError):
            self._worker_died(worker)
            return
        if message[0] == "ready":
            worker.ready = True
            self._ever_ready = True
            self._startup_failures = 0
            return
        req_id, status, hit, detail = message
        request, worker.request = worker.request, None
        if request is None or request.req_id != req_id:
            return
        self._counters["cache_hits" if hit else "cache_misses"] += 1
        request.future.cache_hit = bool(hit)  # type: ignore[attr-defined]  (read by _verify_extracted)
        if status in ("correct", "incorrect"):
            grade = Grade(Verdict(status), 1.0 if status == "correct" else 0.0)
        elif status == "unparsable":
            grade = Grade(Verdict.UNPARSABLE, 0.0, cause="math_verify could not parse the boxed answer")
        elif status == "gold_unparsable":
            grade = Grade(Verdict.GRADER_ERROR, 0.0,
                          cause=f"math_verify could not parse the gold answer of problem {request.key[0]!r}")
        else:
            grade = Grade(Verdict.GRADER_ERROR, 0.0, cause=f"math_verify raised {detail or 'an error'}")
        self._resolve(request, grade)

    def _worker_died(self, worker: _Worker) -> None:
        """A worker exited under us: replace it and retry its request within budget and deadline."""
        request, worker.request = worker.request, None
        self._replace(worker)
        if request is None:
            return
        if request.attempts <= self.config.max_retries and time.monotonic() < request.deadline:
            self._counters["retries"] += 1
            self._queue.appendleft(request)
            return
        self._resolve(request, Grade(Verdict.GRADER_ERROR, 0.0,
                                     cause=f"verifier worker died {request.attempts} time(s) on this request "
                                           f"(max_retries={self.config.max_retries})"))

    def _enforce_deadlines(self) -> None:
        now = time.monotonic()
        for worker in list(self._workers):
            request = worker.request
            if request is not None and request.deadline <= now:
                worker.request = None
                self._replace(worker)
                self._resolve(request, Grade(Verdict.TIMEOUT, 0.0,
                                             cause=f"verification exceeded its {request.budget:g}s deadline; "
                                                   "the worker was killed"))
            elif not worker.ready and now - worker.started_at > _STARTUP_TIMEOUT_S:
                self._replace(worker)


_services: dict[VerifierConfig, VerifierService] = {}
_services_lock = threading.Lock()


def get_verifier(config: VerifierConfig | None = None) -> VerifierService:
    """The process's verifier service for ``config`` (created on first use, not started)."""
    config = config or VerifierConfig()
    with _services_lock:
        service = _services.get(config)
        if service is None:
            service = _services[config] = VerifierService(config)
        return service


def shutdown_all() -> None:
    """Stop every verifier service of this process (also runs at interpreter exit)."""
    with _services_lock:
        services = list(_services.values())
    for service in services:
        service.close()


def _forget_after_fork() -> None:
    """In a forked child (e.g. an AsyncVectorEnv worker), drop the parent's pools.

    The dispatcher thread does not survive a fork and its lock may have been
    held at that instant; the child starts its own pool on first use. Closing
    the child's copies of the parent's pipe ends keeps the parent's EOF-based
    shutdown of its workers working.
    """
    global _services_lock
    _services_lock = threading.Lock()
    for service in _services.values():
        for worker in service._workers:
            for conn in (worker.send_conn, worker.recv_conn):
                try:
                    conn.close()
                except OSError:
                    pass
        for fd in (service._wake_r, service._wake_w):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        service._lock = threading.RLock()
        service._thread = None
        service._workers = []
        service._queue.clear()
        service._in_flight = 0
        service._refs = 0
        service._wake_r = service._wake_w = -1
        service._ever_ready = False


atexit.register(shutdown_all)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)

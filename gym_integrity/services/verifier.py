r"""The answer verifier: math_verify in a killable worker pool, each answer with a run budget of its own.

math_verify's own timeout uses ``signal.alarm``: it refuses to run off the main
thread and cannot interrupt C-level work, and answers such as
``\boxed{9^{9^{9^{9}}}}`` or a few hundred nested brackets hang it for seconds
to forever. So the parse and the comparison run in a
:class:`~gym_integrity.workers.Sandbox` (handler
:mod:`gym_integrity.services.math_worker`): worker processes the parent
SIGKILLs when an answer's own run on a worker passes ``deadline_s``. Time an
answer spends queued behind others is never charged to it, so hostile answers
in a batch cannot turn other answers into timeouts.

Whose fault each pool outcome is, and the grade it becomes (the workers' one
fault table, :data:`~gym_integrity.grading.FAULT_VERDICTS`, in the verifier's words):

* the answer's: ``timeout`` (its run passed its budget; a graded verdict,
  ``no_verdict=False``), ``unparsable`` (math_verify could not read it, it
  crashed the verifier on every try, or it exhausted the worker's memory);
* the grader's (``grader_error`` no-verdicts, never blamed on the answer): an
  overloaded queue (``max_in_flight`` reached or no worker free within
  ``queue_timeout_s``), a worker killed from outside beyond ``max_retries``,
  workers that cannot start, an unparsable gold answer, shutdown.

:func:`get_verifier` returns one service per process per configuration; envs
:meth:`~VerifierService.acquire` it and :meth:`~VerifierService.release` it at
``close()``; the last release, or interpreter exit, shuts it down. By default
(``scope="machine"``) the workers are the machine's: every process of the user
with the same configuration reaches one pool server
(:mod:`gym_integrity.workers`), which stops after the last of
them lets go; ``scope="process"`` gives the service workers of its own.

Example:
    >>> from gym_integrity.services.verifier import VerifierConfig
    >>> VerifierConfig(deadline_s=0)
    Traceback (most recent call last):
    ...
    ValueError: VerifierConfig.deadline_s must be a number (seconds) > 0, got 0.0
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from gym_integrity.checks import check_bool, check_int, check_number, check_type, config_from, nested, reject_unknown
from gym_integrity.grading.cost import refusal
from gym_integrity.grading.faults import fault_grade, refused_unrun
from gym_integrity.grading.reader import boxed_answer
from gym_integrity.protocol import Grade, Verdict
from gym_integrity.services.verifier_tally import VerifierTally
from gym_integrity.workers import (
    Fault,
    PoolConfig,
    PoolStatus,
    ProcessCache,
    Sandbox,
    TaskOutcome,
    check_pool_settings,
    pool_scope,
)
from gym_integrity.workers._lifecycle import at_exit

__all__ = ["VerifierConfig", "VerifierService", "VerifierTally", "VerifyOutcome", "get_verifier", "shutdown_all"]

_HANDLER = "gym_integrity.services.math_worker:verify"


#: VerifierConfig's keywords for its pool's settings, as documented (``verifier={"num_workers": 4}``), and the
#: PoolConfig field each sets (the run budget is the verifier's ``deadline_s``).
POOL_KEYWORDS = {
    "num_workers": "num_workers",
    "spare_workers": "spare_workers",
    "deadline_s": "run_timeout_s",
    "queue_timeout_s": "queue_timeout_s",
    "max_in_flight": "max_in_flight",
    "max_retries": "max_retries",
    "memory_limit_mb": "memory_limit_mb",
    "scope": "scope",
}
_MIN_MEMORY_MB = 256  # math_verify and sympy need more address space than a bare worker


@dataclass(frozen=True, init=False)
class VerifierConfig:
    """Settings of one verifier service (one pool of workers per distinct config).

    Attributes:
        pool: The worker pool's settings (:class:`~gym_integrity.workers.PoolConfig`; its
            ``run_timeout_s`` is the verifier's run budget, ``deadline_s``). Give them either as
            ``pool=PoolConfig(...)`` (or a dict of its fields) or as the keywords below, not both.
        max_answer_chars: Longest ``\\boxed{}`` content sent to math_verify;
            longer is ``unparsable``.
        float_rounding, numeric_precision, strict: math_verify's ``verify`` options.
        gold_cache_size: Parsed gold answers each worker keeps.

    Keywords for the pool's settings (stored in ``pool``):
        num_workers: Requests verified at once (busy worker processes).
            ``None``: ``min(2, os.cpu_count())``.
        spare_workers: Extra idle workers kept started, so a worker killed at
            its deadline is replaced at once instead of after an interpreter start.
        deadline_s: Run budget of a request on a worker, counted from the
            moment a worker starts it (time spent queued is not charged). A
            worker still busy at the deadline is killed, and the answer is
            graded ``timeout`` (its own fault: a graded verdict, not a no-verdict).
        queue_timeout_s: How long a request may wait for a free worker beyond
            the budgets of the requests ahead of it (shared by the workers);
            past it the request is a ``grader_error`` no-verdict (overloaded),
            never a ``timeout``. A burst of answers that each run to their
            budget delays the others but never drops them.
        max_in_flight: Requests queued or running at once; one more is refused
            with a ``grader_error`` no-verdict.
        max_retries: Re-runs, each on another worker, of a request whose worker
            died under it (see :mod:`gym_integrity.workers`).
        memory_limit_mb: Address-space limit of each worker (``RLIMIT_AS``, at least 256);
            ``None`` for none.
        scope: ``"machine"`` (one pool per machine, shared by every process
            of the user with this config), ``"process"`` (workers of this
            process's own) or ``None`` (``$GYM_INTEGRITY_POOL_SCOPE``, else
            ``"machine"``). See :class:`~gym_integrity.workers.PoolConfig`.
    """

    pool: PoolConfig
    max_answer_chars: int = 1024
    float_rounding: int = 6
    numeric_precision: int = 15
    strict: bool = True
    gold_cache_size: int = 4096

    def __init__(
        self,
        pool: PoolConfig | Mapping[str, Any] | None = None,
        *,
        max_answer_chars: int = 1024,
        float_rounding: int = 6,
        numeric_precision: int = 15,
        strict: bool = True,
        gold_cache_size: int = 4096,
        **pool_keywords: Any,
    ) -> None:
        reject_unknown("VerifierConfig", pool_keywords, [*_FIELDS, *POOL_KEYWORDS])
        object.__setattr__(self, "pool", _pool_of(pool, pool_keywords))
        for name, value in (
            ("max_answer_chars", max_answer_chars),
            ("float_rounding", float_rounding),
            ("numeric_precision", numeric_precision),
            ("strict", strict),
            ("gold_cache_size", gold_cache_size),
        ):
            object.__setattr__(self, name, value)
        self.validate()

    def validate(self) -> None:
        check_int("VerifierConfig.max_answer_chars", self.max_answer_chars, low=1)
        check_int("VerifierConfig.float_rounding", self.float_rounding, low=0)
        check_int("VerifierConfig.numeric_precision", self.numeric_precision, low=1)
        check_bool("VerifierConfig.strict", self.strict)
        check_int("VerifierConfig.gold_cache_size", self.gold_cache_size, low=1)

    @property
    def deadline_s(self) -> float:
        """The run budget of a request on a worker (the pool's ``run_timeout_s``)."""
        return self.pool.run_timeout_s

    @property
    def scope(self) -> str | None:
        return self.pool.scope

    @property
    def workers(self) -> int:
        return self.pool.workers

    @property
    def processes(self) -> int:
        return self.pool.workers + self.pool.spare_workers

    @property
    def settings(self) -> tuple[int, int, bool]:
        """What changes a verdict (part of the gold cache key)."""
        return (self.float_rounding, self.numeric_precision, self.strict)

    @classmethod
    def from_value(cls, value: VerifierConfig | Mapping[str, Any] | None) -> VerifierConfig:
        """A config from a VerifierConfig, a dict of its fields and pool keywords (unknown keys: ``TypeError``)
        or None (defaults)."""
        if isinstance(value, Mapping):
            reject_unknown("VerifierConfig", value, [*_FIELDS, *POOL_KEYWORDS])
            return cls(**value)
        return config_from(cls, value)


_FIELDS = ("pool", "max_answer_chars", "float_rounding", "numeric_precision", "strict", "gold_cache_size")


def _pool_of(pool: Any, keywords: Mapping[str, Any]) -> PoolConfig:
    """The PoolConfig of ``pool=`` or of the pool keywords, checked under VerifierConfig's names."""
    if pool is not None and keywords:
        raise ValueError(
            f"VerifierConfig.pool is given, and so are {sorted(keywords)}: give the pool's settings "
            "either as pool=PoolConfig(...) or as keywords, not both"
        )
    if pool is None:
        values = {name: keywords.get(name, getattr(_DEFAULT_POOL, field)) for name, field in POOL_KEYWORDS.items()}
        check_pool_settings(
            "VerifierConfig", SimpleNamespace(**values), run_timeout_field="deadline_s", min_memory_mb=_MIN_MEMORY_MB
        )
        return PoolConfig(**{field: values[name] for name, field in POOL_KEYWORDS.items()})
    check_type("VerifierConfig.pool", pool, (PoolConfig, Mapping), "a PoolConfig or a dict of its fields")
    config = nested("VerifierConfig.pool", PoolConfig.from_value, pool)
    check_int("VerifierConfig.pool.memory_limit_mb", config.memory_limit_mb, low=_MIN_MEMORY_MB, optional=True)
    return config


_DEFAULT_POOL = PoolConfig()


@dataclass(frozen=True)
class VerifyOutcome:
    """A verdict plus the metrics of the tally it was counted in (flat ``verifier/...`` keys, float values)."""

    grade: Grade
    metrics: dict[str, float]


def _times(n: int) -> str:
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


def _causes(memory_limit_mb: int | None) -> Any:
    """The verifier's words for each fault (the verdict is the fault table's,
    :data:`~gym_integrity.grading.FAULT_VERDICTS`)."""

    def cause(fault: Fault, outcome: TaskOutcome, budget: float, problem_id: str) -> str:
        if fault is Fault.TIMEOUT:
            return f"the answer's verification ran past its {budget:g} s budget on a worker of its own"
        if fault is Fault.CRASHED:
            return (
                f"the verifier crashed on this answer {_times(outcome.attempts)}, each time on a fresh worker process"
            )
        if fault is Fault.OUT_OF_MEMORY:
            limit = f" ({memory_limit_mb} MB)" if memory_limit_mb else ""
            return f"the answer exhausted the verifier's memory limit{limit}"
        if fault is Fault.HANDLER_ERROR:
            return f"math_verify raised {outcome.detail or 'an error'}"
        if fault is Fault.OVERLOADED:
            return f"verifier overloaded: {outcome.detail}"
        return f"verifier infrastructure fault: {outcome.detail}"

    return cause


def grade_outcome(outcome: TaskOutcome, *, problem_id: str, budget: float, memory_limit_mb: int | None = None) -> Grade:
    """The :class:`Grade` of one pool outcome: math_verify's verdict, or the fault table's grade of a failure."""
    failed = fault_grade(outcome, _causes(memory_limit_mb), budget_s=budget, subject=problem_id)
    if failed is not None:
        return failed
    verdict = outcome.value[0]
    if verdict in ("correct", "incorrect"):
        return Grade(Verdict(verdict), 1.0 if verdict == "correct" else 0.0)
    if verdict == "unparsable":
        return Grade(Verdict.UNPARSABLE, 0.0, cause="math_verify could not parse the boxed answer")
    return Grade(
        Verdict.GRADER_ERROR, 0.0, cause=f"math_verify could not parse the gold answer of problem {problem_id!r}"
    )


class VerifierService:
    """math_verify on a worker pool, shared by every env of a process (see the module docstring).

    Use :func:`get_verifier` rather than building one: it returns the shared
    instance for a config. Thread-safe: any thread may call :meth:`verify`.
    """

    def __init__(self, config: VerifierConfig) -> None:
        self.config = config
        # The machine's pool, or the process's own (scope); unshared: one per service.
        self.sandbox = Sandbox(_HANDLER, config.pool, shared=False)
        self._pool = self.sandbox.pool()
        self._tally = VerifierTally()  # every request of this service, whichever env sent it
        _live_services.add(self)

    # ----------------------------------------------------------------- lifecycle

    def acquire(self) -> VerifierService:
        """Register a user (an env) and make sure the pool is running."""
        self._pool.acquire()
        return self

    def release(self) -> None:
        """Drop a user; the last one out shuts the pool down (a later request restarts it)."""
        self._pool.release()

    @property
    def running(self) -> bool:
        return self._pool.running

    def start(self) -> None:
        """Start the workers, if not running (non-blocking)."""
        self._pool.start()

    def close(self) -> None:
        """Stop every worker; pending requests answer ``grader_error``."""
        self._pool.close()

    def worker_pids(self) -> list[int]:
        """Process ids of the current workers (for operators and tests)."""
        return self._pool.worker_pids()

    def busy_worker_pids(self) -> list[int]:
        """Process ids of workers running a request right now."""
        return self._pool.busy_worker_pids()

    def wait_ready(self, timeout: float = 60.0) -> bool:
        """Block until every worker has loaded math_verify (True), or ``timeout`` passes (False)."""
        return self._pool.wait_ready(timeout)

    # ----------------------------------------------------------------- requests

    def verify(
        self,
        text: str,
        gold: str,
        *,
        problem_id: str,
        deadline_s: float | None = None,
        tally: VerifierTally | None = None,
    ) -> VerifyOutcome:
        r"""Grade the last ``\boxed{}`` of ``text`` against ``gold``: never raises, never hangs.

        The answer is read by the grading layer's one reader
        (:func:`~gym_integrity.grading.boxed_answer`) and graded by :meth:`verify_answer`; a caller whose rules
        read the answer first reads it there itself and calls :meth:`verify_answer` with the same string.
        """
        answer, failure = boxed_answer(text, self.config.max_answer_chars)
        if failure is not None:
            return VerifyOutcome(failure, self.extraction_failed(tally))
        assert answer is not None
        return self.verify_answer(answer, gold, problem_id=problem_id, deadline_s=deadline_s, tally=tally)

    def extraction_failed(self, tally: VerifierTally | None = None) -> dict[str, float]:
        """Count an answer its caller could not read (no box, unbalanced, too long); the step's metrics."""
        tallies = self._tallies(tally)
        self._count(tallies, "extraction_failures")
        return self.outcome_metrics(tallies[-1], 0.0, False)

    def verify_answer(
        self,
        answer: str,
        gold: str,
        *,
        problem_id: str,
        deadline_s: float | None = None,
        tally: VerifierTally | None = None,
    ) -> VerifyOutcome:
        """Grade an answer already read (the content of its box) against ``gold``: never raises, never hangs.

        Verdicts: ``correct``, ``incorrect``, ``unparsable``,
        ``timeout`` (the answer's own run passed ``deadline_s``, or its cost bound refused it unrun: graded, not a
        no-verdict) and the no-verdict ``grader_error`` (overload, infrastructure,
        unparsable gold, shutdown). Causes never quote the gold answer.
        ``deadline_s`` overrides the config's run budget for this request.
        The request is counted in ``tally`` (the caller's own: an env's) and in
        the service's; the outcome's metrics are ``tally``'s (the service's if none).
        """
        tallies = self._tallies(tally)
        reason = refusal(answer)  # a tower, a huge factorial, deep nesting: graded unrun, no worker held
        if reason is not None:
            self._count(tallies, "refused")
            return VerifyOutcome(refused_unrun(reason), self.outcome_metrics(tallies[-1], 0.0, False))
        budget = self._budget(deadline_s)
        start = time.monotonic()
        self._count(tallies, "requests")
        outcome = self._pool.run(self._payload(answer, gold, problem_id), run_timeout_s=budget)
        grade, hit = self._record(tallies, outcome, problem_id, budget, time.monotonic() - start)
        return VerifyOutcome(grade, self.outcome_metrics(tallies[-1], time.monotonic() - start, hit))

    def submit(
        self,
        answer: str,
        gold: str,
        *,
        problem_id: str,
        deadline_s: float | None = None,
        tally: VerifierTally | None = None,
    ) -> concurrent.futures.Future:
        """Queue an already extracted answer; the future yields a :class:`Grade`. For batch callers.
        Counted in ``tally`` and the service's, as :meth:`verify`."""
        tallies = self._tallies(tally)
        budget = self._budget(deadline_s)
        start = time.monotonic()
        graded: concurrent.futures.Future = concurrent.futures.Future()
        self._count(tallies, "requests")
        pooled = self._pool.submit(self._payload(answer, gold, problem_id), run_timeout_s=budget)

        def done(future: concurrent.futures.Future) -> None:
            try:
                grade, hit = self._record(tallies, future.result(), problem_id, budget, time.monotonic() - start)
            except Exception as exc:  # noqa: BLE001  (a bug here must not leave the caller waiting)
                grade, hit = Grade(Verdict.GRADER_ERROR, 0.0, cause=f"verifier error: {type(exc).__name__}"), False
            graded.cache_hit = hit  # type: ignore[attr-defined]  # the Future carries the cache hit to the caller
            graded.set_result(grade)

        pooled.add_done_callback(done)
        return graded

    def _tallies(self, tally: VerifierTally | None) -> tuple[VerifierTally, ...]:
        """Where a request is counted: the service's tally, then the caller's (last: its metrics are returned)."""
        if tally is None:
            return (self._tally,)
        check_type("VerifierService.tally", tally, VerifierTally, "a VerifierTally or None")
        return (self._tally, tally)

    @staticmethod
    def _count(tallies: tuple[VerifierTally, ...], key: str) -> None:
        for tally in tallies:
            tally.count(key)

    def _payload(self, answer: str, gold: str, problem_id: str) -> tuple[Any, ...]:
        key = (problem_id, hashlib.sha1(gold.encode("utf-8", "surrogatepass")).hexdigest(), self.config.settings)
        return (key, gold, answer, self.config.settings, self.config.gold_cache_size)

    def _budget(self, deadline_s: float | None) -> float:
        if deadline_s is None:
            return float(self.config.deadline_s)
        return check_number("VerifierService.deadline_s", deadline_s, low=0, low_open=True, unit="seconds")

    def _record(
        self, tallies: tuple[VerifierTally, ...], outcome: TaskOutcome, problem_id: str, budget: float, latency: float
    ) -> tuple[Grade, bool]:
        """The outcome's grade and cache hit, counted in ``tallies``."""
        grade = grade_outcome(
            outcome, problem_id=problem_id, budget=budget, memory_limit_mb=self.config.pool.memory_limit_mb
        )
        hit = outcome.status is PoolStatus.OK and bool(outcome.value[1])
        for tally in tallies:
            tally.record(outcome, grade, hit, latency)
        return grade, hit

    # ----------------------------------------------------------------- metrics

    def stats(self) -> dict[str, float]:
        """Cumulative metrics of every request this service was given in this process (every env's), flat
        ``verifier/...`` keys; an env's own are its :class:`VerifierTally`'s. The pool's own figures (for the
        machine pool, every process's) are :func:`gym_integrity.workers.machine_stats`'."""
        return self._tally.metrics()

    @staticmethod
    def outcome_metrics(tally: VerifierTally, latency: float, cache_hit: bool) -> dict[str, float]:
        """A step's verifier metrics: the tally's counters, this request's latency and whether the cache served it."""
        out = tally.metrics()
        out["verifier/latency_s"] = float(latency)
        out["verifier/cache_hit"] = 1.0 if cache_hit else 0.0
        return out


#: One service per config per process; a forked child starts without any (:class:`~gym_integrity.workers.ProcessCache`).
_SERVICES: ProcessCache[tuple[VerifierConfig, str], VerifierService] = ProcessCache("verifier services")
#: Every service of this process, shared or not: a forked child may still hold one an env took before the fork.
_live_services: weakref.WeakSet[VerifierService] = weakref.WeakSet()


def get_verifier(config: VerifierConfig | None = None) -> VerifierService:
    """The process's verifier service for ``config`` (created on first use, not started)."""
    config = config or VerifierConfig()
    return _SERVICES.get_or_create((config, pool_scope(config.scope)), lambda: VerifierService(config))


@at_exit
def shutdown_all() -> None:
    """Stop every verifier service of this process (also runs at interpreter exit)."""
    for service in list(_live_services):
        service.close()

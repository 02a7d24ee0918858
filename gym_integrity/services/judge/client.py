"""JudgeClient: one proof graded with bounded retries, a wall-clock deadline per request and a concurrency bound; get_judge shares one per process."""

from __future__ import annotations

import os
import queue
import random
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gym_integrity.protocol import Grade, Verdict
from gym_integrity.services.judge.config import Endpoint, JudgeConfig, resolve_endpoint
from gym_integrity.services.judge.errors import (
    JudgeConnectionError,
    JudgeError,
    JudgeRateLimited,
    JudgeTimeout,
    ScoreParseError,
)
from gym_integrity.services.judge.feedback import agent_feedback, no_verdict_feedback
from gym_integrity.services.judge.metrics import GradingMetrics
from gym_integrity.services.judge.parsing import Answer, parse_score, points_grade
from gym_integrity.services.judge.prompts import load_prompt, neutralise_tags
from gym_integrity.services.judge.transport import Transport
from gym_integrity.services.openai_call import backoff_s
from gym_integrity.workers import ProcessCache

__all__ = ["JudgeClient", "JudgeResult", "get_judge"]


@dataclass(frozen=True)
class JudgeResult:
    """One grading: a Grade for the env, the 0-7 points, agent-safe feedback, privileged raw output.

    ``grade.score`` is ``points / 7``. ``grade.verdict`` is ``correct`` (points >=
    the success threshold), ``partial`` (1 or more points), ``incorrect`` (0),
    ``no_answer`` (empty proof, not sent), ``too_long`` (over
    ``max_proof_chars``, not sent), or a no-verdict ``timeout`` /
    ``grader_error`` with ``grade.cause``. ``judge_output`` is the judge's raw
    text (or the last malformed body): privileged, never for the agent.
    """

    grade: Grade
    points: int | None
    feedback: str
    judge_output: str | None = field(repr=False)
    metrics: dict[str, float] = field(default_factory=dict)
    fingerprint: dict[str, str] = field(default_factory=dict)

    @property
    def no_verdict(self) -> bool:
        return bool(self.grade.no_verdict)


class JudgeClient:
    """Grades proofs against one endpoint; thread-safe; get the shared one with :func:`get_judge`.

    Each request runs on a daemon thread and is abandoned at its wall-clock
    deadline (the HTTP timeouts are set to the same value so the abandoned call
    ends too); at most ``max_concurrency`` run at once. Every failed request is
    a :class:`~gym_integrity.services.judge.errors.JudgeError` whose ``kind`` is
    counted; retryable ones are tried again after a jittered backoff.

    ``http_client`` (an ``httpx.Client``) replaces the network, as in the tests:
    ``JudgeClient(config, http_client=httpx.Client(transport=httpx.MockTransport(handler)))``.
    """

    def __init__(self, config: JudgeConfig, *, endpoint: Endpoint | None = None, http_client: Any = None) -> None:
        config.validate()
        self.config = config
        self._endpoint = endpoint or resolve_endpoint(config)
        self._template = load_prompt(config.prompt)
        self._allowed = config.allowed()
        self._transport = Transport(self._endpoint, config, http_client=http_client)
        self._slots = threading.BoundedSemaphore(config.max_concurrency)
        self._senders = _Senders(self._transport.send)
        self._rng = random.Random()
        self._rng_lock = threading.Lock()

    # ------------------------------------------------------------------ identity

    @property
    def configured(self) -> bool:
        """True when both an endpoint and a model are set: nothing is guessed for either."""
        return self._endpoint.configured

    @property
    def endpoint_host(self) -> str:
        return self._endpoint.host

    @property
    def fingerprint(self) -> dict[str, str]:
        """What identifies this grader: a trainer can refuse samples from a different one."""
        return {
            "prompt": self._template.version,
            "prompt_sha256": self._template.sha256[:16],
            "model": self._endpoint.model or "",
            "endpoint_host": self.endpoint_host,
            "api": self._transport.api,
            "allowed_scores": ",".join(map(str, self._allowed)),
        }

    def __repr__(self) -> str:
        return (
            f"JudgeClient(endpoint={self.endpoint_host or None!r}, model={self._endpoint.model!r}, "
            f"prompt={self._template.version!r})"
        )

    # ------------------------------------------------------------------ grading

    def grade(
        self,
        *,
        problem: str,
        proof: str,
        reference_solution: str,
        grading_guidelines: str,
        hidden_texts: Sequence[str] = (),
    ) -> JudgeResult:
        """Grade one proof. Never raises for any text; faults become no-verdicts.

        ``hidden_texts`` are extra texts the feedback must not repeat (e.g. the
        marking scheme when the env hides it); the reference solution always is.
        Pieces that the problem statement also holds are not secret (the agent
        sees it), so the feedback may repeat them.
        """
        for name, value in (
            ("problem", problem),
            ("proof", proof),
            ("reference_solution", reference_solution),
            ("grading_guidelines", grading_guidelines),
        ):
            if not isinstance(value, str):
                raise TypeError(f"JudgeClient.grade({name}=...) must be a str, got {type(value).__name__}")
        metrics = GradingMetrics()
        if not proof.strip():
            # An empty proof is a real (worthless) answer, graded without asking the judge.
            metrics.count("no_input")
            return self._result(Grade(Verdict.NO_ANSWER, 0.0), 0, "Empty submission: 0/7.", None, metrics, True)
        if len(proof) > self.config.max_proof_chars:
            # The agent's doing, not the judge's: a real verdict, and no request a judge would refuse anyway.
            metrics.count("too_long")
            feedback = f"Submission over {self.config.max_proof_chars} characters: not graded, 0/7."
            return self._result(Grade(Verdict.TOO_LONG, 0.0), 0, feedback, None, metrics, True)
        if not self.configured:
            # Nothing is sent anywhere: no endpoint is guessed, no model is picked from a list.
            metrics.count("not_configured")
            return self._no_verdict(Verdict.GRADER_ERROR, self._endpoint.not_configured_cause(), None, metrics)
        try:
            self._transport.open()  # built (and openai imported) outside the first request's deadline
        except Exception as err:
            metrics.count("rejected")
            cause = f"could not build the judge client ({type(err).__name__}); check judge.base_url and judge.api_key"
            return self._no_verdict(Verdict.GRADER_ERROR, cause, None, metrics)

        prompt = self._template.render(
            {
                "problem": problem,
                "proof": neutralise_tags(proof),
                "reference_solution": reference_solution,
                "grading_guidelines": grading_guidelines,
            }
        )
        # Lone surrogates cannot be sent as UTF-8 JSON; replace them rather than fail every attempt.
        prompt = prompt.encode("utf-8", "replace").decode("utf-8")
        last: JudgeError | None = None
        last_body: str | None = None
        for attempt in range(1 + self.config.max_retries):
            if attempt:
                metrics.count("num_retries")
                time.sleep(self._backoff(attempt, last))
            started = time.monotonic()
            try:
                answer = self._send_with_deadline(prompt)
            except JudgeError as err:
                metrics.request(time.monotonic() - started)
                metrics.count(err.kind)
                last, last_body = err, err.body if err.body is not None else last_body
                if not err.retryable:
                    break
                continue
            metrics.request(time.monotonic() - started, answer)
            try:
                points = parse_score(answer.text, allowed=self._allowed)
            except ScoreParseError as err:  # sampling may differ: asked again
                metrics.count(err.kind)
                last, last_body = err, answer.text
                continue
            hidden = [reference_solution, *hidden_texts]
            feedback = agent_feedback(points, answer.text, hidden, problem)
            grade = points_grade(points, self.config.success_threshold)
            return self._result(grade, points, feedback, answer.text, metrics, True)

        assert last is not None
        if last.retryable:
            metrics.count("all_attempts_failed")
        verdict = Verdict.TIMEOUT if isinstance(last, JudgeTimeout) else Verdict.GRADER_ERROR
        n = metrics.requests
        cause = f"judge at {self.endpoint_host}: {n} request{'s' if n != 1 else ''} failed; last: {last}"
        return self._no_verdict(verdict, cause, last_body, metrics)

    def _result(
        self,
        grade: Grade,
        points: int | None,
        feedback: str,
        output: str | None,
        metrics: GradingMetrics,
        success: bool,
    ) -> JudgeResult:
        return JudgeResult(grade, points, feedback, output, metrics.done(success=success), self.fingerprint)

    def _no_verdict(self, verdict: Verdict, cause: str, output: str | None, metrics: GradingMetrics) -> JudgeResult:
        grade = Grade(verdict, 0.0, cause)
        return self._result(grade, None, no_verdict_feedback(verdict), output, metrics, False)

    def _backoff(self, attempt: int, last: JudgeError | None) -> float:
        """The one backoff rule (services/openai_call.py), at least a 429's Retry-After, both capped."""
        cfg = self.config
        wait = last.retry_after if isinstance(last, JudgeRateLimited) else None
        with self._rng_lock:
            return backoff_s(attempt, base_s=cfg.backoff_s, cap_s=cfg.max_backoff_s, rng=self._rng, retry_after=wait)

    # ------------------------------------------------------------------ deadline and concurrency

    def _send_with_deadline(self, prompt: str) -> Answer:
        """One request on a daemon thread of :class:`_Senders`, abandoned at the wall-clock deadline.

        A slot (``max_concurrency``) is held until the request really ends, so
        abandoned requests still count against the bound; waiting for a slot
        counts against the deadline. Daemon threads never hold up exit.
        """
        timeout = self.config.timeout_s
        deadline = time.monotonic() + timeout
        if not self._slots.acquire(timeout=timeout):
            raise JudgeTimeout(
                f"no free request slot within the {timeout:g} s deadline "
                f"({self.config.max_concurrency} requests in flight)"
            )
        box: dict[str, Any] = {}
        done = threading.Event()

        def finish(ok: bool, value: Any) -> None:
            box["value" if ok else "error"] = value  # an error is handed to the caller's thread
            self._slots.release()
            done.set()

        try:
            self._senders.run(prompt, finish)
        except RuntimeError as err:  # no thread to be had (resource limits): a retryable local failure
            self._slots.release()
            raise JudgeConnectionError("could not start a request thread") from err
        if not done.wait(max(0.0, deadline - time.monotonic())):
            raise JudgeTimeout(f"no answer within the {timeout:g} s deadline")
        if "error" in box:
            raise box["error"]
        return box["value"]

    def close(self) -> None:
        """Release the HTTP connections and the request threads (the next grading opens new ones)."""
        self._senders.close()
        self._transport.close()


class _Senders:
    """Daemon threads that send the requests, each kept for the next one.

    A thread started per request costs a start handshake (``Thread.start``
    waits until the new thread runs), which at a step's width queues behind
    every other thread for the GIL. A request takes an idle thread, or starts
    one if none is idle; the client's slots bound what is in flight, so the
    threads never outnumber ``max_concurrency`` by more than a request or two.
    """

    def __init__(self, send: Any) -> None:
        self._send = send
        self._jobs: queue.SimpleQueue[tuple[str, Any] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._pid = os.getpid()

    def run(self, prompt: str, finish: Any) -> None:
        """Send ``prompt`` on a thread of this pool; ``finish(ok, answer or error)`` is called there.
        Raises RuntimeError when a thread is needed and none can start (nothing was queued then)."""
        with self._lock:
            if self._pid != os.getpid():  # a forked child: the parent's threads are not here
                self._jobs, self._idle, self._pid = queue.SimpleQueue(), 0, os.getpid()
            start = self._idle == 0
            if not start:
                self._idle -= 1
        if start:
            threading.Thread(target=self._serve, name="gym-integrity-judge", daemon=True).start()
        self._jobs.put((prompt, finish))

    def close(self) -> None:
        """End the idle threads now and the busy ones when their request ends (a later request starts new ones)."""
        with self._lock:
            jobs, idle = self._jobs, self._idle
            self._jobs, self._idle = queue.SimpleQueue(), 0
        for _ in range(idle):
            jobs.put(None)

    def _serve(self) -> None:
        jobs = self._jobs
        while (job := jobs.get()) is not None:
            prompt, finish = job
            try:
                ok, value = True, self._send(prompt)
            except BaseException as err:
                ok, value = False, err
            with self._lock:  # idle before the caller hears back, so its next request finds this thread
                retired = jobs is not self._jobs  # closed or forked since: this queue gets no more jobs
                if not retired:
                    self._idle += 1
            finish(ok, value)
            if retired:
                return


#: One client per (config, resolved endpoint) per process: every env of a process shares its connection pool.
_JUDGES: ProcessCache[tuple[JudgeConfig, Endpoint], JudgeClient] = ProcessCache("judge clients")


def get_judge(config: JudgeConfig) -> JudgeClient:
    """The process's client for this config (and the JUDGE_* variables as they are now), built once.

    A forked child builds its own instead of sharing the parent's sockets and
    threads (:mod:`gym_integrity.workers` empties every cache there).
    """
    if not isinstance(config, JudgeConfig):
        raise TypeError(f"get_judge expects a JudgeConfig (see JudgeConfig.from_value), got {type(config).__name__}")
    endpoint = resolve_endpoint(config)
    return _JUDGES.get_or_create((config, endpoint), lambda: JudgeClient(config, endpoint=endpoint))

"""The metrics of one grading: every ``judge/...`` key, always all of them, floats."""

from __future__ import annotations

import time

from gym_integrity.services.judge.parsing import Answer

__all__ = ["METRIC_KEYS", "FAILURE_KINDS", "GradingMetrics"]

#: The ``judge/failures/<kind>`` counters: one per exception kind (errors.py), and the outcomes decided
#: without asking (``not_configured``, ``no_input``, ``too_long``) or after the budget (``all_attempts_failed``).
FAILURE_KINDS = (
    "timeout",
    "rate_limited",
    "server_error",
    "connection",
    "malformed",
    "empty_response",
    "no_score_tag",
    "invalid_score",
    "rejected",
    "not_configured",
    "no_input",
    "too_long",
    "all_attempts_failed",
    "num_retries",
)

#: Every key a grading puts in ``metrics``. All of them, every time: vector envs batch info by the first
#: value, so a key must not come and go. The judge has its own prefix because QEDMath-v0 reports the
#: answer verifier's ``verifier/...`` keys too, and under one prefix ``verifier/requests`` (worker-pool
#: requests, cumulative) and ``verifier/runtime/requests`` (this grading's HTTP requests) read as one count.
METRIC_KEYS = (
    "judge/rollouts/success",
    "judge/rollouts/failure",
    *(f"judge/failures/{kind}" for kind in FAILURE_KINDS),
    "judge/runtime/requests",
    "judge/runtime/latency_per_request",
    "judge/runtime/latency_total",
    "judge/runtime/input_tokens",
    "judge/runtime/output_tokens",
)


class GradingMetrics:
    """Counts one grading as it goes; :meth:`done` returns the flat dict (all :data:`METRIC_KEYS`).

    >>> m = GradingMetrics()
    >>> m.count("rate_limited"); m.count("num_retries"); m.request(0.5, Answer("<score>3</score>", 10, 4))
    >>> d = m.done(success=True)
    >>> d["judge/failures/rate_limited"], d["judge/runtime/requests"], d["judge/runtime/input_tokens"]
    (1.0, 1.0, 10.0)
    """

    def __init__(self) -> None:
        self._values = dict.fromkeys(METRIC_KEYS, 0.0)
        self._latencies: list[float] = []
        self._started = time.monotonic()

    def count(self, kind: str) -> None:
        """One more ``judge/failures/<kind>`` (a failed request, a retry, or how the grading ended)."""
        self._values[f"judge/failures/{kind}"] += 1.0

    def request(self, seconds: float, answer: Answer | None = None) -> None:
        """One HTTP attempt took ``seconds``; ``answer``: the usage it reported, if it answered."""
        self._latencies.append(seconds)
        if answer is not None:
            self._values["judge/runtime/input_tokens"] += answer.input_tokens
            self._values["judge/runtime/output_tokens"] += answer.output_tokens

    @property
    def requests(self) -> int:
        return len(self._latencies)

    def done(self, *, success: bool) -> dict[str, float]:
        """The grading's metrics: ``success`` is a real verdict (graded, or not sent), else a no-verdict."""
        values = dict(self._values)
        values["judge/rollouts/success" if success else "judge/rollouts/failure"] = 1.0
        latencies = self._latencies
        values["judge/runtime/requests"] = float(len(latencies))
        values["judge/runtime/latency_per_request"] = sum(latencies) / len(latencies) if latencies else 0.0
        values["judge/runtime/latency_total"] = time.monotonic() - self._started if latencies else 0.0
        return values

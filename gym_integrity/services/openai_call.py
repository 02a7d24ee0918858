"""One call to an OpenAI-compatible endpoint: what its faults are called, which are retried, Retry-After, backoff.

The judge (:mod:`gym_integrity.services.judge.transport`) and the eval's
policy client (:class:`gym_integrity.rollout.endpoint.ChatClient`) both ask an endpoint through
the ``openai`` package with ``max_retries=0`` and retry themselves. They name a
fault with :func:`fault_kind` and wait with :func:`backoff_s`, so a 429 is
``rate_limited`` in a judge metric and in an eval record alike:

============== ============================================== =========
kind           what happened                                  retried
============== ============================================== =========
timeout        no complete answer within the deadline         yes
connection     refused, dropped, or no client to send with    yes
rate_limited   HTTP 429 (its ``Retry-After`` is honoured)      yes
server_error   HTTP 5xx, 408, 409                             yes
rejected       any other 4xx: asking again will not help      no
malformed      the body is not the API's JSON                 yes
============== ============================================== =========

>>> fault_kind(TimeoutError()), is_retryable("rejected")
('timeout', False)
>>> import random
>>> 0.5 <= backoff_s(2, base_s=0.5, cap_s=30.0, rng=random.Random(0)) <= 1.0
True
>>> backoff_s(1, base_s=0.5, cap_s=30.0, rng=random.Random(0), retry_after=4.0)
4.0
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

__all__ = ["FAULT_KINDS", "RETRYABLE_KINDS", "fault_kind", "is_retryable", "retry_after", "backoff_s"]

FAULT_KINDS = ("timeout", "connection", "rate_limited", "server_error", "rejected", "malformed")
RETRYABLE_KINDS = frozenset(FAULT_KINDS) - {"rejected"}


def fault_kind(exc: BaseException) -> str:
    """The kind (:data:`FAULT_KINDS`) of an exception raised by one request; anything unknown is ``malformed``.

    Anything the package raised while reading a body (bad JSON, deep nesting,
    wrong types) is the server's malformed answer, whatever its type.
    """
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return "timeout"
    try:
        import openai  # lazy: `import gym_integrity` must not import it
    except ImportError:  # pragma: no cover - both callers have imported it already
        return "malformed"
    if isinstance(exc, openai.APITimeoutError):  # before APIConnectionError, its base class
        return "timeout"
    if isinstance(exc, openai.RateLimitError):
        return "rate_limited"
    if isinstance(exc, openai.APIStatusError):
        code = exc.status_code
        return "server_error" if code >= 500 or code in (408, 409) else "rejected"
    if isinstance(exc, openai.APIConnectionError):
        return "connection"
    return "malformed"


def is_retryable(kind: str) -> bool:
    """Whether asking again may help after a fault of this kind."""
    return kind in RETRYABLE_KINDS


def retry_after(exc: Any) -> float | None:
    """The ``Retry-After`` of an HTTP error response in seconds (never negative), or None without a usable one."""
    try:
        value = exc.response.headers.get("retry-after")
        return max(0.0, float(value)) if value is not None else None
    except (AttributeError, TypeError, ValueError):
        return None


def backoff_s(
    attempt: int, *, base_s: float, cap_s: float, rng: random.Random, retry_after: float | None = None
) -> float:
    """The wait before retry ``attempt`` (1 for the first): ``base_s * 2**(attempt-1)`` capped at ``cap_s`` and
    jittered to 50-100 %, and at least a 429's ``retry_after`` (capped too)."""
    delay = min(cap_s, base_s * 2 ** (attempt - 1)) * (0.5 + 0.5 * rng.random())
    if retry_after is not None:
        delay = max(delay, min(retry_after, cap_s))
    return delay

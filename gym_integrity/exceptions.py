"""Every exception the package raises of its own, under one base, :class:`GymIntegrityError`.

A programming mistake (a wrong type, a bad value) is a plain ``TypeError`` or
``ValueError`` (``checks.py``, the one error rule); what is here is what a
caller may catch and handle: a grader that gave no score, a policy endpoint
that failed, a served env that does not match its twin. Each is re-exported
where it is used (``gym_integrity.services.judge``, ``gym_integrity.rollout.endpoint``,
``gym_integrity.audit``); ``except GymIntegrityError`` catches them all.

The hierarchy:

* GymIntegrityError                   (base)
  * JudgeError                        the judge gave no score (below)
  * PolicyError                       the policy endpoint failed past its retries; ``kind``
  * ToolsUnsupported                  the policy server refuses requests carrying ``tools``
  * TwinMismatchError                 (also a ``ValueError``) the audited served env is not its local twin
  * RowProblem                        (also a ``ValueError``) one data set row cannot load; ``reason``, ``detail``

The judge's, one class per failure kind. Why one request to the judge gave no score: an exception class per failure kind.

Each class carries ``kind`` (the ``judge/failures/<kind>`` metric it counts
under; a transport fault's kind is the one :mod:`gym_integrity.services.openai_call`
names, as the eval's policy client does) and ``retryable`` (whether asking again may help). The client catches
them, counts them and retries; after its budget the last one becomes a
no-verdict whose cause is the exception's message. Messages name status codes
and exception types only, never a server's body or the judge's text (a 422 may
echo the request, reference solution included); those stay in ``body``, which
goes to the privileged ``judge_output`` only.

The hierarchy:

* JudgeError                        (base; ``kind``, ``retryable``, ``body``)
  * JudgeTimeout                    ``timeout``: no answer, or no free request slot, within the deadline
  * JudgeConnectionError            ``connection``: refused, dropped, or no thread or client to send it with
  * JudgeStatusError                an HTTP error status; ``status_code``
    * JudgeRateLimited              ``rate_limited``: 429; ``retry_after`` (seconds, or None)
    * JudgeServerError              ``server_error``: 5xx, 408, 409
    * JudgeRejected                 ``rejected``: any other 4xx; not retried (asking again will not help)
  * JudgeBadAnswer                  the endpoint answered, but with no usable grade
    * JudgeMalformed                ``malformed``: not JSON, or not the API's shape
    * JudgeEmptyAnswer              ``empty_response``: no text, no choices
    * ScoreParseError               the text has no valid score (also a ``ValueError``)
      * NoScoreTag                  ``no_score_tag``: no ``<score>N</score>`` at all
      * InvalidScore                ``invalid_score``: the last tag is not an allowed integer

Example:
    >>> err = JudgeRateLimited(429, retry_after=2.0)
    >>> err.kind, err.retryable, str(err), isinstance(err, JudgeStatusError)
    ('rate_limited', True, 'HTTP 429 (rate limited)', True)
    >>> JudgeRejected(401).retryable
    False
"""

from __future__ import annotations

__all__ = [
    "GymIntegrityError",
    "JudgeError",
    "JudgeTimeout",
    "JudgeConnectionError",
    "JudgeStatusError",
    "JudgeRateLimited",
    "JudgeServerError",
    "JudgeRejected",
    "JudgeBadAnswer",
    "JudgeMalformed",
    "JudgeEmptyAnswer",
    "ScoreParseError",
    "NoScoreTag",
    "InvalidScore",
    "PolicyError",
    "ToolsUnsupported",
    "TwinMismatchError",
    "RowProblem",
]


class GymIntegrityError(Exception):
    """The base of every exception gym-integrity raises of its own (not the one error rule's TypeError/ValueError)."""


class JudgeError(GymIntegrityError):
    """One request to the judge gave no score. ``body``: the server's raw text, if any (privileged)."""

    kind = "judge_error"
    retryable = True

    def __init__(self, message: str, *, body: str | None = None) -> None:
        super().__init__(message)
        self.body = body

    def __reduce__(self) -> tuple:
        # Subclasses take other arguments than their message: pickle (copy, a process boundary) by state.
        return _restore, (type(self), str(self), self.__dict__)


def _restore(cls: type[JudgeError], message: str, state: dict) -> JudgeError:
    error = cls.__new__(cls)
    Exception.__init__(error, message)
    error.__dict__.update(state)
    return error


class JudgeTimeout(JudgeError):
    """No answer (or no free request slot) within the request's wall-clock deadline."""

    kind = "timeout"


class JudgeConnectionError(JudgeError):
    """The request did not reach the judge or its answer did not come back (refused, dropped)."""

    kind = "connection"


class JudgeStatusError(JudgeError):
    """The judge answered with an HTTP error status."""

    def __init__(self, status_code: int, message: str | None = None, *, body: str | None = None) -> None:
        super().__init__(message or f"HTTP {status_code}", body=body)
        self.status_code = status_code


class JudgeRateLimited(JudgeStatusError):
    """HTTP 429. ``retry_after``: the server's ``Retry-After`` in seconds, honoured up to the backoff cap."""

    kind = "rate_limited"

    def __init__(self, status_code: int = 429, *, retry_after: float | None = None, body: str | None = None) -> None:
        super().__init__(status_code, f"HTTP {status_code} (rate limited)", body=body)
        self.retry_after = retry_after


class JudgeServerError(JudgeStatusError):
    """HTTP 5xx, 408 (request timeout) or 409 (conflict): the server's trouble, worth another try."""

    kind = "server_error"


#: What to check for a refused request, by status (appended to the cause).
_REJECTION_HINTS = {
    400: "; the endpoint refused the request: check judge.model, max_output_tokens and the judge's context length",
    401: "; check judge.api_key / JUDGE_API_KEY",
    403: "; check judge.api_key / JUDGE_API_KEY",
    404: "; check that judge.base_url ends in /v1 and that judge.model exists there",
}


class JudgeRejected(JudgeStatusError):
    """Any other 4xx (400, 401, 403, 404, 422): the request itself is refused, so it is not retried."""

    kind = "rejected"
    retryable = False

    def __init__(self, status_code: int, *, body: str | None = None) -> None:
        hint = _REJECTION_HINTS.get(status_code, "")
        super().__init__(status_code, f"HTTP {status_code} (not retried{hint})", body=body)


class JudgeBadAnswer(JudgeError):
    """The endpoint answered, but the answer carries no usable grade (sampling may differ next time)."""


class JudgeMalformed(JudgeBadAnswer):
    """The body is not JSON, or not the shape of the API asked."""

    kind = "malformed"


class JudgeEmptyAnswer(JudgeBadAnswer):
    """The judge's answer has no text (or no choices)."""

    kind = "empty_response"


class ScoreParseError(JudgeBadAnswer, ValueError):
    """The judge's text carries no valid score."""


class NoScoreTag(ScoreParseError):
    """No ``<score>N</score>`` tag at all."""

    kind = "no_score_tag"


class InvalidScore(ScoreParseError):
    """The last score tag does not hold a plain integer among the allowed scores."""

    kind = "invalid_score"


class PolicyError(GymIntegrityError):
    """The policy endpoint failed past its retries (or at once for a request it refuses): the episode is not
    graded. ``kind``: one of :data:`gym_integrity.services.openai_call.FAULT_KINDS` (``rate_limited``,
    ``server_error``, ``timeout``, ``connection``, ``malformed``, ``rejected``), as the judge names them."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind


class ToolsUnsupported(GymIntegrityError):
    """The server refused a request because it carried ``tools`` (no native function calling)."""


class TwinMismatchError(GymIntegrityError, ValueError):
    """The local twin shows another problem than the server (other env kwargs), or the server serves another id."""


class RowProblem(GymIntegrityError, ValueError):
    """Why one data set row cannot load: ``reason`` is a code of :data:`gym_integrity.datacheck.REASONS` (checked
    where the row is recorded, ``DataReport.skip``), the message says what is wrong.

    Messages never quote a gold answer or a reference solution.
    """

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail

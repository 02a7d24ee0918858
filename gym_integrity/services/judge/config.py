"""JudgeConfig, and where the judge's endpoint, model and key come from (never the policy's ``OPENAI_*``)."""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from gym_integrity.checks import check_choice, check_int, check_number, check_str, check_type, reject_unknown
from gym_integrity.services.judge.prompts import DEFAULT_ALLOWED, load_prompt

__all__ = ["JudgeConfig", "JUDGE_ENV_VARS", "MAX_POINTS", "Endpoint", "resolve_endpoint"]

#: Proofs are graded on the olympiad scale 0..MAX_POINTS.
MAX_POINTS = 7

_API_CHOICES = ("auto", "responses", "chat")

#: The judge is configured only by ``judge=...`` or these variables. The policy's own ``OPENAI_*``
#: variables are never read: RL setups point them at the policy's server, which would grade itself.
JUDGE_ENV_VARS = ("JUDGE_BASE_URL", "JUDGE_MODEL", "JUDGE_API_KEY")

_HOW_TO_CONFIGURE = (
    "pass judge={'base_url': 'http://host:port/v1', 'model': '...', 'api_key': '...'} to "
    "gym.make('QEDMath-v0', ...), or set JUDGE_BASE_URL and JUDGE_MODEL (and JUDGE_API_KEY if the endpoint "
    "needs a key); OPENAI_BASE_URL / OPENAI_API_KEY are never used for the judge; see docs/judge.md"
)


def _near_misses(given: Mapping[str, Any], fields: list[str]) -> dict[str, str]:
    """A did-you-mean for each unknown key of ``given`` that is close to a field.

    Cutoff 0.5, below difflib's default: the common slips here are a field's
    short name (``url``, ``key``, ``timeout``, ``max_tokens``), which share half
    the letters of ``base_url``, ``api_key``, ... and are never another field.
    """
    hints = {}
    for key in given:
        close = difflib.get_close_matches(str(key), fields, n=1, cutoff=0.5) if key not in fields else []
        if close:
            hints[str(key)] = f"did you mean {close[0]!r}?"
    return hints


@dataclass(frozen=True)
class JudgeConfig:
    """How to reach and use the proof judge.

    The endpoint, model and key come from these fields or, when a field is
    ``None``, from ``JUDGE_BASE_URL``, ``JUDGE_MODEL`` and ``JUDGE_API_KEY``
    (read when the client is built), and from nowhere else: never from the
    policy's ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``, and the model is never
    picked from the endpoint's ``/models`` list. An empty string means "unset,
    and do not read the variable". Grading needs both an endpoint and a model;
    without them every proof is a no-verdict whose cause says what to set.
    Without a key a placeholder is sent (local servers ignore it).

    ``timeout_s`` is the wall-clock deadline of one request, queueing included;
    it must exceed the judge server's own time budget for a generation (see
    docs/judge.md). A grading makes at most ``1 + max_retries`` requests, with
    exponential backoff from ``backoff_s`` (jittered, capped at ``max_backoff_s``,
    and at least a 429's ``Retry-After`` up to that cap) between them.

    Every field is checked at construction: a wrong type raises ``TypeError``, a
    wrong value ``ValueError``, both naming ``JudgeConfig.<field>``.
    """

    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    model: str | None = None
    api: str = "auto"
    prompt: str = "v1"
    temperature: float | None = 0.0
    max_output_tokens: int = 4096
    timeout_s: float = 120.0
    max_retries: int = 3
    backoff_s: float = 1.0
    max_backoff_s: float = 30.0
    success_threshold: int = 7
    allowed_scores: tuple[int, ...] | None = None
    max_concurrency: int = 64
    max_proof_chars: int = 100_000

    def __post_init__(self) -> None:
        # Lists are accepted for convenience but the config must stay hashable (it keys the shared clients).
        if isinstance(self.allowed_scores, list):
            object.__setattr__(self, "allowed_scores", tuple(self.allowed_scores))
        self.validate()

    def validate(self) -> None:
        """Raise ``TypeError`` (wrong type) or ``ValueError`` (wrong value) naming ``JudgeConfig.<field>``."""
        for name in ("base_url", "api_key", "model"):
            check_str(f"JudgeConfig.{name}", getattr(self, name), non_empty=False, optional=True)
        if self.base_url and not re.match(r"^https?://[^/\s]+", self.base_url):
            raise ValueError(
                f"JudgeConfig.base_url must be an http(s) URL like 'http://127.0.0.1:8000/v1', got {self.base_url!r}"
            )
        check_choice("JudgeConfig.api", self.api, _API_CHOICES)
        check_str("JudgeConfig.prompt", self.prompt, what="a prompt version ('v0', 'v1', 'v2') or template path")
        check_number("JudgeConfig.temperature", self.temperature, low=0.0, high=2.0, optional=True)
        check_int("JudgeConfig.max_output_tokens", self.max_output_tokens, low=1)
        check_number("JudgeConfig.timeout_s", self.timeout_s, low=0.0, low_open=True, unit="seconds")
        check_int("JudgeConfig.max_retries", self.max_retries, low=0)
        check_number("JudgeConfig.backoff_s", self.backoff_s, low=0.0, unit="seconds")
        check_number("JudgeConfig.max_backoff_s", self.max_backoff_s, low=0.0, unit="seconds")
        check_int("JudgeConfig.success_threshold", self.success_threshold, low=1, high=MAX_POINTS)
        check_int("JudgeConfig.max_concurrency", self.max_concurrency, low=1)
        check_int("JudgeConfig.max_proof_chars", self.max_proof_chars, low=1)
        if self.allowed_scores is not None:
            what = f"a non-empty list of ints in [0, {MAX_POINTS}] or None"
            check_type("JudgeConfig.allowed_scores", self.allowed_scores, tuple, what)
            if not self.allowed_scores:
                raise ValueError(f"JudgeConfig.allowed_scores must be {what}, got an empty list")
            for i, score in enumerate(self.allowed_scores):
                check_int(f"JudgeConfig.allowed_scores[{i}]", score, low=0, high=MAX_POINTS)
        # Loads and checks the template: a missing file or an unknown placeholder fails here, at make.
        load_prompt(self.prompt)

    @classmethod
    def from_value(cls, value: JudgeConfig | Mapping[str, Any] | None) -> JudgeConfig:
        """A validated config from a JudgeConfig, a dict of its fields, or None (all defaults)."""
        if value is None:
            return cls()
        if isinstance(value, JudgeConfig):
            return value
        if isinstance(value, Mapping):
            fields = [f.name for f in dataclasses.fields(cls)]
            reject_unknown("JudgeConfig", value, fields, hints=_near_misses(value, fields))
            return cls(**dict(value))
        raise TypeError(
            f"JudgeConfig must be given as a JudgeConfig, a dict of its fields or None, "
            f"got {type(value).__name__} {value!r:.60}"
        )

    def allowed(self) -> tuple[int, ...]:
        """The scores a judge answer may carry under this config."""
        if self.allowed_scores is not None:
            return tuple(sorted(set(self.allowed_scores)))
        return DEFAULT_ALLOWED.get(self.prompt, tuple(range(MAX_POINTS + 1)))


@dataclass(frozen=True)
class Endpoint:
    """Where one client sends its requests, resolved once when it is built. ``api_key`` never shows in repr."""

    base_url: str | None
    api_key: str | None = field(repr=False)
    model: str | None

    @property
    def host(self) -> str:
        return urlsplit(self.base_url).netloc if self.base_url else ""

    @property
    def configured(self) -> bool:
        """True when both an endpoint and a model are set: nothing is guessed for either."""
        return bool(self.base_url and self.model)

    def not_configured_cause(self) -> str:
        """What to set, for the no-verdict of a client that cannot grade."""
        if self.base_url:
            return (
                f"no judge model configured for the endpoint at {self.host}: set judge={{'model': ...}} or "
                f"JUDGE_MODEL (the judge never takes a model from the endpoint's list: it may be the policy itself)"
            )
        return f"no judge endpoint configured: {_HOW_TO_CONFIGURE}"


def resolve_endpoint(config: JudgeConfig) -> Endpoint:
    """The endpoint, key and model: the config's fields, else the JUDGE_* variables, else nothing.

    Never OPENAI_BASE_URL / OPENAI_API_KEY: in RL setups they point at the policy's
    own server, and a policy graded by itself (or a key sent to the wrong server)
    is exactly what an explicit judge prevents.
    """

    def pick(value: str | None, name: str) -> str | None:
        if value is not None:
            return value or None  # "" means unset, without reading the variable
        return os.environ.get(name) or None

    return Endpoint(
        base_url=pick(config.base_url, "JUDGE_BASE_URL"),
        api_key=pick(config.api_key, "JUDGE_API_KEY"),
        model=pick(config.model, "JUDGE_MODEL"),
    )

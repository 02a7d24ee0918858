"""QEDMathConfig: every option of ``gym.make("QEDMath-v0", ...)``, validated at construction.

Example:
    >>> from gym_integrity.envs.qed_math.config import QEDMathConfig
    >>> QEDMathConfig(reward_preset="base").validate()
    >>> QEDMathConfig(reward_preset="lenient").validate()
    Traceback (most recent call last):
    ...
    ValueError: QEDMathConfig.reward_preset must be one of ('pure_success', 'base'), got 'lenient'
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Sequence

from gym_integrity.checks import is_int, is_number
from gym_integrity.envs.qed_math.problems import PROBLEM_TYPES
from gym_integrity.envs.qed_math.shaping import REWARD_PRESETS
from gym_integrity.services.verifier import VerifierConfig

__all__ = ["QEDMathConfig"]


@dataclass
class QEDMathConfig:
    """What ``gym.make("QEDMath-v0", **kwargs)`` accepts.

    Attributes:
        dataset: The problems: ``None`` (built-in set), a ``.jsonl``/``.json``
            path, a hub id ``"owner/name"``, a dict ``{"hub_id"|"path",
            "config", "split"}``, a ``datasets.Dataset``, or a list of these.
        problem_types: Keep only these types (``proof``, ``answer``,
            ``multi_step``); ``None`` keeps all.
        show_guidelines: Put a proof's grading guidelines in the observation.
        reward_preset: Answer-mode rewards by verdict: ``"pure_success"``
            (correct 1, else 0) or ``"base"`` (correct 1, wrong -0.5, no answer
            or unparsable -1). No-verdicts always give 0.0.
        reasoning_delimiters: The text after the last of these is graded;
            without any, the whole text is. ``()`` grades the whole text.
        collapse_partial: Proof rewards become 1.0 at or above the judge's
            ``success_threshold`` (default 7/7) and 0.0 below it.
        discount_factor: ``reward *= discount_factor ** L`` (L: the trainer's
            token count). 1.0 disables it.
        max_tokens: Generation budget for the overlong penalty (``None``: no penalty).
        buffer_tokens: The penalty rises linearly from 0 to ``-overlong_penalty``
            over the last ``buffer_tokens`` before ``max_tokens``.
        overlong_penalty: The penalty at ``max_tokens`` and beyond (>= 0).
        max_attempts: Attempts per problem when the row has no ``max_attempts``.
            ``None``: 3 for ``multi_step`` problems, 1 for the others.
        verifier: :class:`~gym_integrity.services.verifier.VerifierConfig` (or
            its dict) for answer grading: workers, deadline, in-flight bound...
        judge: ``JudgeConfig`` (or its dict) for proof grading; see
            ``gym_integrity.services.judge``.
    """

    dataset: Any = None
    problem_types: Sequence[str] | None = None
    show_guidelines: bool = False
    reward_preset: str = "pure_success"
    reasoning_delimiters: Sequence[str] = ("</think>",)
    collapse_partial: bool = False
    discount_factor: float = 1.0
    max_tokens: int | None = None
    buffer_tokens: int = 0
    overlong_penalty: float = 1.0
    max_attempts: int | None = None
    verifier: Any = None
    judge: Any = None
    _verifier_config: VerifierConfig | None = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in fields(cls) if f.init]

    def validate(self) -> None:
        if self.problem_types is not None:
            if isinstance(self.problem_types, str) or not all(t in PROBLEM_TYPES for t in self.problem_types):
                raise ValueError(f"QEDMathConfig.problem_types must be None or a list drawn from {PROBLEM_TYPES}, "
                                 f"got {self.problem_types!r}")
            if not self.problem_types:
                raise ValueError("QEDMathConfig.problem_types must not be empty (None keeps every type)")
        for name in ("show_guidelines", "collapse_partial"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"QEDMathConfig.{name} must be a bool, got {getattr(self, name)!r}")
        if self.reward_preset not in REWARD_PRESETS:
            raise ValueError(f"QEDMathConfig.reward_preset must be one of {tuple(REWARD_PRESETS)}, "
                             f"got {self.reward_preset!r}")
        delimiters = self.reasoning_delimiters
        if isinstance(delimiters, str):
            self.reasoning_delimiters = delimiters = (delimiters,)
        if not isinstance(delimiters, Sequence) or not all(isinstance(d, str) and d for d in delimiters):
            raise ValueError("QEDMathConfig.reasoning_delimiters must be a list of non-empty str "
                             f"(e.g. ['</think>']), got {delimiters!r}")
        self.reasoning_delimiters = tuple(delimiters)
        if not is_number(self.discount_factor) or not 0.0 < self.discount_factor <= 1.0:
            raise ValueError(f"QEDMathConfig.discount_factor must be a number in (0, 1], got {self.discount_factor!r}")
        if self.max_tokens is not None and (not is_int(self.max_tokens) or self.max_tokens < 1):
            raise ValueError(f"QEDMathConfig.max_tokens must be a positive int or None, got {self.max_tokens!r}")
        if not is_int(self.buffer_tokens) or self.buffer_tokens < 0:
            raise ValueError(f"QEDMathConfig.buffer_tokens must be an int >= 0, got {self.buffer_tokens!r}")
        if self.max_tokens is not None and self.buffer_tokens > self.max_tokens:
            raise ValueError(f"QEDMathConfig.buffer_tokens ({self.buffer_tokens}) must be <= max_tokens "
                             f"({self.max_tokens})")
        if not is_number(self.overlong_penalty) or self.overlong_penalty < 0:
            raise ValueError(f"QEDMathConfig.overlong_penalty must be a number >= 0, got {self.overlong_penalty!r}")
        if self.max_attempts is not None and (not is_int(self.max_attempts) or self.max_attempts < 1):
            raise ValueError(f"QEDMathConfig.max_attempts must be a positive int or None, got {self.max_attempts!r}")
        try:
            self._verifier_config = VerifierConfig.from_value(self.verifier)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"QEDMathConfig.verifier: {exc}") from None
        if self.judge is not None and not isinstance(self.judge, dict) and type(self.judge).__name__ != "JudgeConfig":
            raise TypeError(f"QEDMathConfig.judge must be a JudgeConfig, a dict or None, got {type(self.judge).__name__}")

    @property
    def verifier_config(self) -> VerifierConfig:
        if self._verifier_config is None:
            self._verifier_config = VerifierConfig.from_value(self.verifier)
        return self._verifier_config

    def judge_config(self) -> Any:
        """The judge's config, built (and validated) by the judge module, imported only here."""
        from gym_integrity.services.judge import JudgeConfig

        try:
            return JudgeConfig.from_value(self.judge)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"QEDMathConfig.judge: {exc}") from None

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

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from gym_integrity.checks import check_bool, check_choice, check_int, check_number, check_strs, check_type, nested
from gym_integrity.envs.qed_math.rows import PROBLEM_TYPES
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
        """Check every field: a wrong type is a ``TypeError``, a wrong value a ``ValueError``, both naming it.

        ``dataset`` is checked where it is read (``problems.load_problems``, at ``gym.make``).
        """
        if self.problem_types is not None:
            self.problem_types = check_strs(
                "QEDMathConfig.problem_types", self.problem_types, choices=PROBLEM_TYPES, min_items=1
            )
        check_bool("QEDMathConfig.show_guidelines", self.show_guidelines)
        check_bool("QEDMathConfig.collapse_partial", self.collapse_partial)
        check_choice("QEDMathConfig.reward_preset", self.reward_preset, tuple(REWARD_PRESETS))
        if isinstance(self.reasoning_delimiters, str):  # one delimiter, given bare
            self.reasoning_delimiters = (self.reasoning_delimiters,)
        self.reasoning_delimiters = check_strs("QEDMathConfig.reasoning_delimiters", self.reasoning_delimiters)
        check_number("QEDMathConfig.discount_factor", self.discount_factor, low=0, low_open=True, high=1)
        check_int("QEDMathConfig.max_tokens", self.max_tokens, low=1, optional=True)
        check_int("QEDMathConfig.buffer_tokens", self.buffer_tokens, low=0)
        if self.max_tokens is not None and self.buffer_tokens > self.max_tokens:
            raise ValueError(
                f"QEDMathConfig.buffer_tokens must be <= max_tokens ({self.max_tokens}), got {self.buffer_tokens}"
            )
        check_number("QEDMathConfig.overlong_penalty", self.overlong_penalty, low=0)
        check_int("QEDMathConfig.max_attempts", self.max_attempts, low=1, optional=True)
        check_type(
            "QEDMathConfig.verifier",
            self.verifier,
            (VerifierConfig, dict, type(None)),
            "a VerifierConfig, a dict of its fields or None",
        )
        self._verifier_config = nested("QEDMathConfig.verifier", VerifierConfig.from_value, self.verifier)
        if self.judge is not None:
            if not isinstance(self.judge, dict) and type(self.judge).__name__ != "JudgeConfig":
                raise TypeError(
                    "QEDMathConfig.judge must be a JudgeConfig, a dict of its fields or None, "
                    f"got {type(self.judge).__name__}"
                )
            self.judge_config()  # a bad judge option fails here, even with no proof problem loaded

    @property
    def verifier_config(self) -> VerifierConfig:
        if self._verifier_config is None:
            self._verifier_config = nested("QEDMathConfig.verifier", VerifierConfig.from_value, self.verifier)
        return self._verifier_config

    def judge_config(self) -> Any:
        """The judge's config, built (and validated) by the judge module, imported only here."""
        from gym_integrity.services.judge import JudgeConfig

        return nested("QEDMathConfig.judge", JudgeConfig.from_value, self.judge)

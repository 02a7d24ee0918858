"""The contract every gym-integrity env keeps: verdicts, grades, info keys, trainer actions.

Envs build their ``info`` with :func:`grade_info` so that every id speaks the
same vocabulary, and wrappers and the audit can rely on it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gym_integrity.checks import check_int, reject_unknown

__all__ = [
    "Verdict",
    "NO_VERDICTS",
    "Grade",
    "PRIVILEGED_KEY",
    "DEFAULT_HIDDEN_KEYS",
    "TrainerAction",
    "split_trainer_action",
    "grade_info",
]


class Verdict(str, enum.Enum):
    """One word for how a step was graded; ``info["verdict"]`` holds its value."""

    CORRECT = "correct"
    INCORRECT = "incorrect"
    PARTIAL = "partial"
    NO_ANSWER = "no_answer"
    UNPARSABLE = "unparsable"
    TOO_LONG = "too_long"
    TIMEOUT = "timeout"
    GRADER_ERROR = "grader_error"
    PENDING = "pending"

    def __str__(self) -> str:
        return self.value


#: Verdicts that mean "the grader could not decide" unless the grade says
#: otherwise (``Grade.no_verdict``): the reward is 0.0 but the sample is not a
#: negative example, and ``info["no_verdict"]`` is True so a trainer can drop it.
NO_VERDICTS = frozenset({Verdict.TIMEOUT, Verdict.GRADER_ERROR})

#: Envs put every answer-bearing value (gold answers, reference solutions, raw
#: generator metadata) under ``info[PRIVILEGED_KEY]``. HideInfoKeys removes it.
PRIVILEGED_KEY = "privileged"

#: What HideInfoKeys removes by default. ``privileged`` is where our envs put
#: answer-bearing data; the other names are defence in depth for envs (ours
#: or third-party) that use the common names for it. A bare name matches at
#: any depth.
DEFAULT_HIDDEN_KEYS: tuple[str, ...] = (
    PRIVILEGED_KEY,
    "answer",
    "gold_answer",
    "ground_truth",
    "reference_solution",
    "solution",
    "metadata",
    "judge_output",
)


@dataclass(frozen=True)
class Grade:
    """The outcome of grading one submission.

    ``score`` is in [0, 1] (partial credit allowed). ``no_verdict`` says the
    grader could not decide (an infrastructure fault: an unreachable judge, an
    overloaded or crashed worker pool); its score is 0.0 and ``cause`` says
    why. It defaults to ``verdict in NO_VERDICTS``. A ``timeout`` can be the
    answer's own fault (its verification ran past its budget on a worker of
    its own): that grade is built with ``no_verdict=False`` and is a real
    negative sample, so a policy cannot escape a penalty by timing out.
    """

    verdict: Verdict
    score: float = 0.0
    cause: str | None = None
    no_verdict: bool | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.verdict, Verdict):
            raise TypeError(f"Grade.verdict must be a Verdict, got {type(self.verdict).__name__}")
        if not 0.0 <= float(self.score) <= 1.0:
            raise ValueError(f"Grade.score must be in [0, 1], got {self.score}")
        if self.no_verdict is None:
            object.__setattr__(self, "no_verdict", self.verdict in NO_VERDICTS)
        elif not isinstance(self.no_verdict, bool):
            raise TypeError(f"Grade.no_verdict must be a bool or None, got {type(self.no_verdict).__name__}")
        elif self.no_verdict and self.score != 0.0:
            raise ValueError(f"Grade.score of a no-verdict must be 0.0, got {self.score}")


@dataclass(frozen=True)
class TrainerAction:
    """A model's text plus what only the trainer knows about its generation.

    Envs accept either a plain ``str`` or this (or the equivalent dict
    ``{"text": ..., "num_tokens": ...}``). ``num_tokens`` feeds length shaping;
    it is never read from the text, so a model cannot claim to be short.
    """

    text: str
    num_tokens: int | None = None


#: Above any real generation length; keeps ``discount ** num_tokens`` and the
#: overlong penalty in ordinary float range.
MAX_NUM_TOKENS = 10**9


def split_trainer_action(action: Any) -> tuple[str, int | None]:
    """Return ``(text, num_tokens)`` from a str, a TrainerAction or its dict form.

    Raises:
        TypeError: for any other type, naming what is accepted.
    """
    if isinstance(action, str):
        return action, None
    if isinstance(action, TrainerAction):
        text, tokens = action.text, action.num_tokens
    elif isinstance(action, Mapping) and "text" in action:
        unknown = set(action) - {"text", "num_tokens"}
        if unknown:
            reject_unknown("TrainerAction", action, ("text", "num_tokens"))
        text, tokens = action["text"], action.get("num_tokens")
    else:
        raise TypeError(
            "action must be a str (the model's text), a TrainerAction, or a dict "
            f"{{'text': str, 'num_tokens': int}}; got {type(action).__name__}"
        )
    if not isinstance(text, str):
        raise TypeError(f"TrainerAction.text must be a str, got {type(text).__name__}")
    # The trainer, not the model, writes num_tokens, so a bad one is a programming
    # error; the upper bound keeps length shaping's float arithmetic finite.
    check_int("TrainerAction.num_tokens", tokens, low=0, high=MAX_NUM_TOKENS, optional=True)
    return text, tokens


def grade_info(problem_id: str, grade: Grade, **extra: Any) -> dict[str, Any]:
    """The info dict of a graded step: problem_id, verdict, no_verdict, score, cause, extras."""
    info: dict[str, Any] = {
        "problem_id": problem_id,
        "verdict": grade.verdict.value,
        "no_verdict": grade.no_verdict,
        "score": float(grade.score),
    }
    if grade.cause is not None:
        info["cause"] = grade.cause
    info.update(extra)
    return info

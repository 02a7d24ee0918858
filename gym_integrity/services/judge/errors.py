"""The judge's exceptions, one class per failure kind: they live in :mod:`gym_integrity.exceptions` (the hierarchy)."""

from gym_integrity.exceptions import (
    InvalidScore,
    JudgeBadAnswer,
    JudgeConnectionError,
    JudgeEmptyAnswer,
    JudgeError,
    JudgeMalformed,
    JudgeRateLimited,
    JudgeRejected,
    JudgeServerError,
    JudgeStatusError,
    JudgeTimeout,
    NoScoreTag,
    ScoreParseError,
)

__all__ = [
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
]

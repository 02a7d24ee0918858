"""GradedAttempt: what QEDMath-v0's two graders (math_verify for answers, the judge for proofs) return for one attempt."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gym_integrity.protocol import Grade

__all__ = ["GradedAttempt"]


@dataclass(frozen=True)
class GradedAttempt:
    """One attempt as graded, before length shaping; the env turns it into reward, observation and info.

    Attributes:
        grade: The verdict, score and cause.
        base_reward: The reward before shaping: the answer preset's value, or a
            proof's points / 7 (0 or 1 with ``collapse_partial``). Always 0.0
            for a no-verdict, whatever the grader said: a fault is never a
            negative sample.
        success: Whether the attempt ends the episode as solved (a correct
            answer; a proof at or above the judge's success threshold).
        feedback: Agent-safe text for the next observation (the judge's redacted errors), or "".
        metrics: The grader's flat ``group/name`` metrics (floats).
        judge_output: The judge's raw text: privileged, goes under ``info["privileged"]`` only.
        judge_fingerprint: What identifies the judge, for ``info["judge"]`` (empty for answers).

    >>> from gym_integrity.protocol import Verdict
    >>> GradedAttempt(Grade(Verdict.GRADER_ERROR, 0.0, cause="judge down"), base_reward=0.4).base_reward
    0.0
    """

    grade: Grade
    base_reward: float
    success: bool = False
    feedback: str = ""
    metrics: Mapping[str, float] = field(default_factory=dict)
    judge_output: str | None = field(default=None, repr=False)
    judge_fingerprint: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.grade.no_verdict:
            object.__setattr__(self, "base_reward", 0.0)
            object.__setattr__(self, "success", False)
        object.__setattr__(self, "base_reward", float(self.base_reward))
        object.__setattr__(self, "metrics", {k: float(v) for k, v in self.metrics.items()})

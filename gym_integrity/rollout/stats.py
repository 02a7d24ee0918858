"""What a batch of episodes gives a trainer: GRPO group advantages without the no-verdicts, and one flat metrics dict."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from gym_integrity.protocol import Verdict
from gym_integrity.rollout.conversation import Episode

__all__ = ["group_advantages", "batch_metrics"]


def group_advantages(episodes: Sequence[Episode], eps: float = 1e-6, *, scale: bool = True) -> np.ndarray:
    """GRPO advantages, one per episode: ``(r - mean) / (std + eps)`` within each group of equal seeds.

    Only :attr:`Episode.usable` members count: a no-verdict's 0.0 is not a wrong
    answer, and an episode left out for a policy fault was never graded. They
    get NaN (no advantage: leave them out of the loss) and are not in their
    group's mean or std. The std is the population one, so a group's
    advantages sum to 0; a group whose graded members agree gets 0 everywhere.
    ``scale=False`` gives ``r - mean`` (Dr. GRPO).

    >>> from gym_integrity.rollout import Episode
    >>> eps = [Episode(0, 7, reward=1.0), Episode(1, 7, reward=0.0), Episode(2, 7, no_verdict=True),
    ...        Episode(3, 8, reward=0.5)]
    >>> group_advantages(eps).round(3).tolist()
    [1.0, -1.0, nan, 0.0]
    """
    advantages = np.full(len(episodes), np.nan)
    groups: dict[Any, list[int]] = defaultdict(list)
    for i, episode in enumerate(episodes):
        if episode.usable:
            groups[episode.seed].append(i)
    for members in groups.values():
        rewards = np.array([episodes[i].reward for i in members], dtype=float)
        centred = rewards - rewards.mean()
        advantages[members] = centred / (rewards.std() + eps) if scale else centred
    return advantages


def _cause_key(cause: str) -> str:
    """A short, stable metric name for a no-verdict cause (its first words, without the details)."""
    head = cause.split(":")[0].split(".")[0].strip().lower()
    return "_".join(head.split()[:6]) or "unknown"


def batch_metrics(episodes: Sequence[Episode], prefix: str = "rollout") -> dict[str, float]:
    """One flat dict of floats for ``wandb.log`` / ``trackio.log``.

    Keys: ``{prefix}/episodes``, ``reward_mean`` (over usable episodes),
    ``return_mean``, ``success_rate``, ``no_verdict_rate`` (over episodes the
    grader saw), ``policy_errors``, ``steps_mean``, ``completion_tokens_mean``,
    ``verdict/<v>`` for every verdict of the vocabulary (zeros included, so a
    mean over batches reads right), ``no_verdict_cause/<cause>``, and
    ``dataset/<name>/reward_mean`` and ``/episodes`` per reasoning-gym member.

    >>> from gym_integrity.rollout import Episode
    >>> m = batch_metrics([Episode(0, 1, reward=1.0, verdict="correct", steps=1),
    ...                    Episode(1, 1, verdict="grader_error", no_verdict=True, cause="no judge: set one", steps=1)])
    >>> m["rollout/reward_mean"], m["rollout/no_verdict_rate"], m["rollout/no_verdict_cause/no_judge"]
    (1.0, 0.5, 1.0)
    """
    n = len(episodes)
    usable = [e for e in episodes if e.usable]
    graded_or_not = [e for e in episodes if e.steps > 0]
    no_verdicts = [e for e in graded_or_not if e.no_verdict]
    out: dict[str, float] = {
        f"{prefix}/episodes": float(n),
        f"{prefix}/usable": float(len(usable)),
        f"{prefix}/reward_mean": float(np.mean([e.reward for e in usable])) if usable else float("nan"),
        f"{prefix}/return_mean": float(np.mean([e.return_ for e in usable])) if usable else float("nan"),
        f"{prefix}/success_rate": (sum(e.verdict == "correct" for e in usable) / len(usable))
        if usable
        else float("nan"),
        f"{prefix}/no_verdict_rate": len(no_verdicts) / len(graded_or_not) if graded_or_not else 0.0,
        f"{prefix}/policy_errors": float(sum(e.error is not None for e in episodes)),
        f"{prefix}/steps_mean": float(np.mean([e.steps for e in episodes])) if n else 0.0,
        f"{prefix}/completion_tokens_mean": float(np.mean([e.completion_tokens for e in episodes])) if n else 0.0,
    }
    counts = Counter(e.verdict for e in graded_or_not)
    for verdict in Verdict:
        out[f"{prefix}/verdict/{verdict.value}"] = float(counts.get(verdict.value, 0))
    for cause, count in Counter(_cause_key(e.cause or "unknown") for e in no_verdicts).items():
        out[f"{prefix}/no_verdict_cause/{cause}"] = float(count)
    datasets = defaultdict(list)
    for e in usable:
        if isinstance(e.dataset, str):
            datasets[e.dataset].append(e.reward)
    for name, rewards in sorted(datasets.items()):
        out[f"{prefix}/dataset/{name}/reward_mean"] = float(np.mean(rewards))
        out[f"{prefix}/dataset/{name}/episodes"] = float(len(rewards))
    return out

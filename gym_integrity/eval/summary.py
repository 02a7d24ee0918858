"""What an eval's episode records add up to: accuracy with a Wilson interval, pass@k, verdicts, tokens, latency."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["EvalSummary", "summarize", "wilson_interval", "pass_at_k", "mean_label"]

_Z95 = 1.959963984540054


def wilson_interval(mean: float, n: int, z: float = _Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion (or a mean reward in [0, 1]) over ``n`` samples.

    >>> [round(x, 3) for x in wilson_interval(0.5, 100)]
    [0.404, 0.596]
    >>> wilson_interval(0.0, 0)
    (0.0, 1.0)
    """
    if n <= 0:
        return 0.0, 1.0
    p = min(max(mean, 0.0), 1.0)
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    # round(): at p = 0 or 1 the bound is exact in theory and 5.6e-17 off in floats
    return max(0.0, round(centre - half, 12)), min(1.0, round(centre + half, 12))


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimate from ``n`` samples of which ``c`` are correct (Chen et al., 2021).

    >>> pass_at_k(4, 1, 1), pass_at_k(4, 1, 4), pass_at_k(4, 0, 2)
    (0.25, 1.0, 0.0)
    """
    if n - c < k:
        return 1.0
    return 1.0 - math.prod((n - c - i) / (n - i) for i in range(k))


def mean_label(rewards: Iterable[float]) -> str:
    """What the mean of these rewards is: an accuracy only when every reward is 0 or 1.

    >>> mean_label([1.0, 0.0]), mean_label([1.0, 0.5]), mean_label([1.0, -0.5])
    ('accuracy', 'mean reward (partial credit)', 'mean shaped reward')
    """
    values = list(rewards)
    if all(r in (0.0, 1.0) for r in values):
        return "accuracy"
    return "mean reward (partial credit)" if _wilson_applies(values) else "mean shaped reward"


def _wilson_applies(rewards: list[float]) -> bool:
    return all(0.0 <= r <= 1.0 for r in rewards)


def _interval(rewards: list[float]) -> tuple[float, float]:
    """Wilson for rewards in [0, 1]; outside it (a ``base`` preset's -0.5 and -1), mean +- 1.96 standard errors."""
    n = len(rewards)
    mean = sum(rewards) / n
    if _wilson_applies(rewards):
        return wilson_interval(mean, n)
    sd = math.sqrt(sum((r - mean) ** 2 for r in rewards) / (n - 1)) if n > 1 else 0.0
    half = _Z95 * sd / math.sqrt(n)
    return mean - half, mean + half


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    rank = min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))
    return ordered[rank]


@dataclass
class EvalSummary:
    """The table ``gym-integrity eval`` prints (and ``--json`` writes). Accuracy is over graded episodes only:
    no-verdicts and policy errors before any graded step are counted and shown, never scored as 0; an
    episode whose policy failed after a graded step is scored as it stood (``ended_by_policy_error``)."""

    env_id: str
    episodes: int
    graded: int
    accuracy: float | None
    accuracy_ci95: tuple[float, float] | None
    success_rate: float | None
    pass_at_k: dict[int, float]
    no_verdict: int
    no_verdict_rate: float
    policy_errors: int
    ended_by_policy_error: int
    verdicts: dict[str, int]
    prompt_tokens: int
    completion_tokens: int
    latency_p50_s: float | None
    latency_p99_s: float | None
    wall_time_s: float
    per_dataset: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: How ``accuracy_ci95`` was computed: ``"wilson"`` (rewards in [0, 1]) or ``"normal"`` (mean +- 1.96 SE).
    accuracy_ci_method: str | None = None
    #: What ``accuracy`` is (:func:`mean_label`): ``"accuracy"`` for 0/1 rewards, else a mean reward, so
    #: a shaped preset's -0.500 is never shown as an accuracy.
    accuracy_label: str = "accuracy"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["pass_at_k"] = {str(k): v for k, v in self.pass_at_k.items()}
        return out


def summarize(env_id: str, records: Iterable[Mapping[str, Any]], wall_time_s: float, samples: int) -> EvalSummary:
    """Add up episode records (one per episode, as the JSONL file holds them)."""
    records = list(records)
    graded = [r for r in records if not r.get("policy_error") and not r.get("no_verdict")]
    rewards = [float(r["reward"]) for r in graded]
    accuracy = sum(rewards) / len(rewards) if rewards else None
    successes = [r for r in graded if r.get("verdict") == "correct"]
    by_item: dict[Any, list[bool]] = defaultdict(list)
    for r in graded:
        by_item[r.get("seed")].append(r.get("verdict") == "correct")
    pass_k = {}
    for k in range(1, max(1, samples) + 1):
        estimates = [pass_at_k(len(v), sum(v), k) for v in by_item.values() if len(v) >= k]
        if estimates:
            pass_k[k] = sum(estimates) / len(estimates)
    per_dataset: dict[str, dict[str, Any]] = {}
    datasets = {str(r["dataset"]) for r in graded if r.get("dataset")}
    if len(datasets) > 1:
        for name in sorted(datasets):
            values = [float(r["reward"]) for r in graded if r.get("dataset") == name]
            mean = sum(values) / len(values)
            per_dataset[name] = {"episodes": len(values), "accuracy": mean, "ci95": wilson_interval(mean, len(values))}
    latencies = [t for r in records for t in r.get("latency_s", [])]
    no_verdict = sum(1 for r in records if r.get("no_verdict") and not r.get("policy_error"))
    scored = len(records) - sum(1 for r in records if r.get("policy_error"))
    return EvalSummary(
        env_id=env_id,
        episodes=len(records),
        graded=len(graded),
        accuracy=accuracy,
        accuracy_ci95=_interval(rewards) if accuracy is not None else None,
        accuracy_ci_method=("wilson" if _wilson_applies(rewards) else "normal") if accuracy is not None else None,
        success_rate=len(successes) / len(graded) if graded else None,
        pass_at_k=pass_k,
        no_verdict=no_verdict,
        no_verdict_rate=no_verdict / scored if scored else 0.0,
        policy_errors=sum(1 for r in records if r.get("policy_error")),
        ended_by_policy_error=sum(1 for r in records if r.get("ended_by_policy_error")),
        verdicts=dict(sorted(Counter(str(r.get("verdict") or "policy_error") for r in records).items())),
        prompt_tokens=sum(int(r.get("usage", {}).get("prompt_tokens", 0) or 0) for r in records),
        completion_tokens=sum(int(r.get("usage", {}).get("completion_tokens", 0) or 0) for r in records),
        latency_p50_s=_percentile(latencies, 50),
        latency_p99_s=_percentile(latencies, 99),
        wall_time_s=wall_time_s,
        per_dataset=per_dataset,
        accuracy_label=mean_label(rewards),
    )

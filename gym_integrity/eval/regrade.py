"""``gym-integrity regrade``: stored completions graded again by today's graders, and what flipped.

A record is replayed through the registered stack: ``reset(seed)`` (the item
checked against the stored ``problem_id``), then the stored actions in order,
until the env ends. Two shapes are read (docs/regrade.md): eval records and
rollout records (``messages``: every assistant turn, its tool calls each one
step), and the minimal trainer record (``completion`` or ``completions``).
"""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gym_integrity.eval.records import read_records
from gym_integrity.protocol import TrainerAction
from gym_integrity.registration import make

__all__ = ["Regraded", "RegradeReport", "record_actions", "regrade", "regrade_file"]


@dataclass
class Regraded:
    """One record graded again: the stored and the new verdict and reward, or why it could not be replayed."""

    line: int
    env_id: str | None
    dataset: str | None
    seed: Any
    problem_id: Any
    old_verdict: str | None
    new_verdict: str | None = None
    old_reward: float | None = None
    new_reward: float | None = None
    skipped: str | None = None

    @property
    def flipped(self) -> bool:
        if self.skipped:
            return False
        reward_moved = (
            self.old_reward is not None
            and self.new_reward is not None
            and abs(self.old_reward - self.new_reward) > 1e-9
        )
        return self.old_verdict != self.new_verdict or reward_moved


@dataclass
class RegradeReport:
    """Every record's outcome, and the flips counted by dataset and by ``old -> new`` verdict."""

    rows: list[Regraded] = field(default_factory=list)

    @property
    def flips(self) -> list[Regraded]:
        return [r for r in self.rows if r.flipped]

    def by_dataset(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = defaultdict(lambda: {"records": 0, "regraded": 0, "flipped": 0})
        for r in self.rows:
            row = out[r.dataset or r.env_id or "?"]
            row["records"] += 1
            row["regraded"] += r.skipped is None
            row["flipped"] += r.flipped
        return dict(sorted(out.items()))

    def by_verdict(self) -> dict[str, int]:
        return dict(Counter(f"{r.old_verdict} -> {r.new_verdict}" for r in self.flips).most_common())

    def to_dict(self) -> dict[str, Any]:
        return {
            "records": len(self.rows),
            "regraded": sum(r.skipped is None for r in self.rows),
            "flipped": len(self.flips),
            "by_dataset": self.by_dataset(),
            "by_verdict": self.by_verdict(),
            "skipped": dict(Counter(r.skipped for r in self.rows if r.skipped)),
            "flips": [r.__dict__ for r in self.flips],
        }


def record_actions(record: Mapping[str, Any]) -> list[Any]:
    """The env actions a record stores, in order (each assistant turn's tool calls, else its text)."""
    if "completions" in record or "completion" in record:
        texts = record.get("completions", [record.get("completion")])
        tokens = record.get("num_tokens")
        tokens = tokens if isinstance(tokens, list) else [tokens] * len(texts)
        return [TrainerAction(t, num_tokens=n) for t, n in zip(texts, tokens)]
    turns = [m for m in record.get("messages") or [] if m.get("role") == "assistant"]
    tokens = record.get("turn_tokens")
    if not isinstance(tokens, list) or len(tokens) != len(turns):
        total = (record.get("usage") or {}).get("completion_tokens")
        tokens = [total if len(turns) == 1 else None] * len(turns)  # a multi-turn total cannot be split
    actions: list[Any] = []
    for message, count in zip(turns, tokens):
        calls = message.get("tool_calls") or []
        if calls:
            actions.extend({"tool": c["function"]["name"], "arguments": c["function"]["arguments"]} for c in calls)
        else:
            actions.append(TrainerAction(message.get("content") or "", num_tokens=count))
    return actions


def _merged(stored: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``stored`` with ``override`` on top, one level deep for dict values (a judge's key over its stored URL)."""
    out = dict(stored)
    for key, value in override.items():
        out[key] = {**out[key], **value} if isinstance(value, Mapping) and isinstance(out.get(key), Mapping) else value
    return out


class _Envs:
    """One env per (id, options), made on first use and closed at the end."""

    def __init__(self) -> None:
        self._envs: dict[str, Any] = {}

    def get(self, env_id: str, kwargs: Mapping[str, Any]) -> Any:
        key = json.dumps([env_id, kwargs], sort_keys=True, default=str)
        if key not in self._envs:
            self._envs[key] = make(env_id, **kwargs)
        return self._envs[key]

    def close(self) -> None:
        for env in self._envs.values():
            env.close()


def _replay(env: Any, record: Mapping[str, Any], row: Regraded) -> None:
    actions = record_actions(record)
    if not actions:
        row.skipped = "no_actions"
        return
    _, info = env.reset(seed=record.get("seed"))
    if row.problem_id is not None and info.get("problem_id") != row.problem_id:
        row.skipped = "item_mismatch"  # other options, or a data set that changed: not the same question
        return
    reward = 0.0
    for action in actions:
        _, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    row.new_verdict, row.new_reward = info.get("verdict"), float(reward)


def regrade(records: Iterable[Mapping[str, Any]], env_kwargs: Mapping[str, Any] | None = None) -> RegradeReport:
    """Grade ``records`` again with today's graders; ``env_kwargs`` overrides the stored options (a judge key)."""
    report = RegradeReport()
    envs = _Envs()
    try:
        for line, record in enumerate(records, 1):
            provenance = record.get("provenance") or {}
            env_id = record.get("env_id") or provenance.get("env_id")
            row = Regraded(
                line=line,
                env_id=env_id,
                dataset=record.get("dataset"),
                seed=record.get("seed"),
                problem_id=record.get("problem_id", record.get("item", provenance.get("problem_id"))),
                old_verdict=record.get("verdict"),
                old_reward=None if record.get("reward") is None else float(record["reward"]),
            )
            report.rows.append(row)
            if record.get("policy_error") and not record.get("steps"):
                row.skipped = "never_graded"
                continue
            if not isinstance(env_id, str) or not isinstance(row.seed, int):
                row.skipped = "no_env_id_or_seed"
                continue
            kwargs = _merged(record.get("env_kwargs", provenance.get("env_kwargs")) or {}, env_kwargs or {})
            try:
                _replay(envs.get(env_id, kwargs), record, row)
            except Exception as exc:  # noqa: BLE001 - one bad record is reported, never the end of the run
                row.skipped = f"error: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
    finally:
        envs.close()
    return report


def regrade_file(path: str | os.PathLike[str], env_kwargs: Mapping[str, Any] | None = None) -> RegradeReport:
    return regrade(read_records(path), env_kwargs)

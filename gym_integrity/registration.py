"""The registered env ids: each carries the integrity stack through ``additional_wrappers``."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

import gymnasium as gym

from gym_integrity.wrappers.stack import integrity_wrapper_specs

__all__ = ["REGISTERED", "EnvEntry", "register_envs", "make"]


@dataclass(frozen=True)
class EnvEntry:
    id: str
    entry_point: str
    description: str
    nondeterministic: bool = False


#: Every id the package registers. Envs graded by an LLM are nondeterministic.
REGISTERED: tuple[EnvEntry, ...] = (
    EnvEntry(
        "ReasoningGym-v0",
        "gym_integrity.envs.reasoning_gym:ReasoningGymEnv",
        "reasoning-gym's procedural tasks (or a weighted composite): strict scoring, expression scorers sandboxed",
    ),
    EnvEntry(
        "QEDMath-v0",
        "gym_integrity.envs.qed_math:QEDMathEnv",
        "olympiad math: proofs graded 0-7 by an LLM judge, boxed answers by math_verify, multi-attempt problems",
        nondeterministic=True,
    ),
    EnvEntry(
        "FinQA-v0",
        "gym_integrity.envs.finqa:FinQAEnv",
        "financial questions answered through table tools and a read-only SQL sandbox, one tool call per step",
    ),
)


def register_envs() -> None:
    """Register every id in :data:`REGISTERED` (idempotent: re-import safe)."""
    for entry in REGISTERED:
        if entry.id in gym.registry:
            continue
        gym.register(
            id=entry.id,
            entry_point=entry.entry_point,
            nondeterministic=entry.nondeterministic,
            additional_wrappers=integrity_wrapper_specs(),
        )


def make(
    id: str,
    *,
    reveal_on_end: bool = False,
    frozen_reward: Literal["repeat", "zero"] = "repeat",
    max_steps: int | None = None,
    **kwargs: Any,
) -> gym.Env:
    """``gym.make`` with the integrity stack's own settings exposed.

    ``gym.make(id, **kwargs)`` passes keyword arguments to the env only, so the
    stack's switches live here: ``reveal_on_end=True`` is the trainer's explicit
    opt-in to see answer-bearing info on the final transition (for logging);
    ``frozen_reward`` and ``max_steps`` set TerminalFreeze and MaxStepsTruncation.
    The result is built by ``gym.make`` from a copy of the registered spec, so
    ``env.spec`` recreates it.
    """
    spec = dataclasses.replace(
        gym.spec(id),
        additional_wrappers=integrity_wrapper_specs(
            max_steps=max_steps, reveal_on_end=reveal_on_end, frozen_reward=frozen_reward
        ),
    )
    return gym.make(spec, **kwargs)

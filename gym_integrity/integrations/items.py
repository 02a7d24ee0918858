"""What every trainer adapter does with an item: make the registered env by id, and check a row still picks its item."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from gym_integrity.checks import check_int, check_str
from gym_integrity.registration import check_registered, make
from gym_integrity.seeding import distinct_item_seeds

__all__ = ["check_item", "first_observations", "make_registered"]


def make_registered(where: str, env_id: Any, env_kwargs: Mapping[str, Any]) -> gym.Env:
    """``gym_integrity.make(env_id, **env_kwargs)``, with a registry miss named for the caller.

    ``"module:Name-v0"`` imports the module first, as ``gym.make`` does.
    """
    check_str(f"{where} env_id", env_id)
    if ":" in env_id:
        module, _, env_id = env_id.partition(":")
        importlib.import_module(module)
    return make(check_registered(where, env_id), **env_kwargs)


def check_item(owner: str, seed: int, problem_id: Any, info: Mapping[str, Any]) -> None:
    """The row's ``problem_id`` (if it has one) must be what its seed picks here: else the env kwargs differ."""
    if problem_id is not None and problem_id != "" and str(problem_id) != str(info.get("problem_id", problem_id)):
        raise ValueError(
            f"{owner}: seed {seed} picks {info.get('problem_id')!r} here, but the row was made for "
            f"{problem_id!r}: give the same env kwargs as the dataset (make_dataset's)"
        )


def first_observations(
    where: str, env_id: str, num_problems: int, seed: int, env_kwargs: Mapping[str, Any]
) -> list[tuple[int, str, str]]:
    """``(seed, first observation, problem_id)`` of ``num_problems`` distinct items from ``seed`` up: a dataset's rows.

    The observation is the stacked env's (HideInfoKeys has run), so a row made
    from it holds nothing the agent could not see.
    """
    check_int(f"{where} num_problems", num_problems, low=1)
    check_int(f"{where} seed", seed, low=0)
    env = make_registered(where, env_id, env_kwargs)
    try:
        rows = []
        for row_seed in distinct_item_seeds(env, num_problems, seed):
            observation, info = env.reset(seed=row_seed)
            rows.append((row_seed, observation, str(info.get("problem_id", ""))))
    finally:
        env.close()
    return rows

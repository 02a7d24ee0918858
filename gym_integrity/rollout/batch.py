"""The envs a rollout plays, seen one way: a list of sub-envs reset with seeds and stepped with one action each.

A vector env (threaded, ``gym.make_vec`` sync or async, Ray) batches infos as
Gymnasium does, nested dicts of arrays with ``_key`` masks; :func:`sub_info`
takes sub-env ``i``'s plain dict back out. A single env is a batch of one.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

__all__ = ["EnvBatch", "sub_info", "as_batch"]


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def sub_info(infos: dict[str, Any], i: int) -> dict[str, Any]:
    """Sub-env ``i``'s info out of a vector env's batched ``infos`` (keys it does not have are left out)."""
    out: dict[str, Any] = {}
    for key, value in infos.items():
        if key.startswith("_"):
            continue
        mask = infos.get(f"_{key}")
        if mask is not None and not mask[i]:
            continue
        out[key] = sub_info(value, i) if isinstance(value, dict) else _plain(value[i])
    return out


class EnvBatch:
    """Sub-envs stepped together: ``reset(seeds)`` and ``step(actions)`` on plain per-sub-env lists."""

    def __init__(self, env: gym.Env | gym.vector.VectorEnv) -> None:
        self.env: Any = env  # an Env or a VectorEnv: used as whichever ``vector`` says
        self.vector = isinstance(env, gym.vector.VectorEnv)
        self.size = env.num_envs if isinstance(env, gym.vector.VectorEnv) else 1
        if self.vector:
            from gymnasium.vector import AutoresetMode, SyncVectorEnv

            mode = env.metadata.get("autoreset_mode")
            if type(env) is SyncVectorEnv and mode == AutoresetMode.DISABLED:
                # Gymnasium's sync env asserts on a step of an ended sub-env, and a multi-turn batch must step it.
                raise ValueError(
                    "rollout: gym.make_vec(..., vectorization_mode='sync') needs its default "
                    "autoreset_mode ('NextStep'); 'Disabled' cannot step a batch whose sub-envs end "
                    "at different turns (use make_threaded_vec(..., autoreset_mode='Disabled'))"
                )

    def spec(self) -> Any:
        """The (first) sub-env's ``EnvSpec``: its id and the options it was made with, for provenance."""
        if not self.vector:
            return self.env.spec
        if getattr(self.env, "spec", None) is not None:
            return self.env.spec
        try:
            return self.env.get_attr("spec")[0]
        except Exception:  # noqa: BLE001 - a vector env that cannot say: the records go without it
            return None

    def tools(self) -> list[Any]:
        """Each sub-env's tool schemas (``unwrapped.tools``), or None."""
        if not self.vector:
            return [getattr(self.env.unwrapped, "tools", None)]
        try:
            return list(self.env.get_attr("tools"))
        except (AttributeError, NotImplementedError):
            return [None] * self.size

    def reset(self, seeds: list[int | None]) -> tuple[list[str], list[dict[str, Any]]]:
        if not self.vector:
            obs, info = self.env.reset(seed=seeds[0])
            return [obs], [info]
        obs, infos = self.env.reset(seed=list(seeds))
        return list(obs), [sub_info(infos, i) for i in range(self.size)]

    def step(self, actions: list[Any]) -> list[tuple[str, float, bool, bool, dict[str, Any]]]:
        if not self.vector:
            return [self.env.step(actions[0])]
        batch = np.empty(self.size, dtype=object)  # a dict or TrainerAction per slot, never broadcast by numpy
        batch[:] = actions
        obs, rewards, terminated, truncated, infos = self.env.step(batch)
        out = []
        for i in range(self.size):
            info = sub_info(infos, i)
            final = info.pop("final_info", None)  # SameStep autoreset: the ended episode's info is here
            info.pop("final_obs", None)
            out.append((obs[i], float(rewards[i]), bool(terminated[i]), bool(truncated[i]), final or info))
        return out


def as_batch(env: Any) -> EnvBatch:
    if isinstance(env, EnvBatch):
        return env
    if not isinstance(env, (gym.Env, gym.vector.VectorEnv)):
        raise TypeError(f"rollout: env must be a gymnasium Env or VectorEnv, got {type(env).__name__}")
    return EnvBatch(env)

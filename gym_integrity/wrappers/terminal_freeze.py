"""TerminalFreeze: once an episode has ended, nothing below this wrapper runs until reset()."""

from __future__ import annotations

from typing import Any, Literal, SupportsFloat

import gymnasium as gym
from gymnasium.core import ActType, ObsType

from gym_integrity.checks import check_choice
from gym_integrity.infotree import copy_tree

__all__ = ["TerminalFreeze"]

_FROZEN_REWARDS: tuple[Literal["repeat", "zero"], ...] = ("repeat", "zero")


class TerminalFreeze(gym.Wrapper[ObsType, ActType, ObsType, ActType], gym.utils.RecordConstructorArgs):
    """Replays the final transition on every step after the end, without calling the inner env.

    An environment that grades every ``step()`` can be gamed: answer wrong, read
    what the final observation reveals, answer again and be paid. After the
    first step that returns ``terminated`` or ``truncated``, this wrapper
    answers each further ``step()`` with a copy of that final transition. The
    inner env is not called, so no grader, tool or counter runs, until
    ``reset()``. Steps before the end pass through untouched, so multi-step
    episodes behave exactly as without the wrapper.

    Args:
        env: The environment to protect. Put it outermost in the stack.
        frozen_reward: Reward reported on a frozen step. ``"repeat"`` (default)
            repeats the scored reward, for loops that read the last step's
            reward; ``"zero"`` reports 0.0, for loops that sum rewards. Our
            vector envs set ``"zero"`` on every sub-env (trainers sum a batch's
            rewards): see :func:`gym_integrity.vector.zero_frozen_rewards`.

    ``info["integrity"]`` holds ``frozen`` (bool) and ``ignored_steps`` (int,
    the steps swallowed since the end) on every step.

    Example:
        >>> import gym_integrity, gymnasium as gym
        >>> env = gym.make("ReasoningGym-v0", dataset="basic_arithmetic")
        >>> _ = env.reset(seed=3)
        >>> _, reward, terminated, _, info = env.step("<answer>-1</answer>")
        >>> terminated, reward, info["integrity"]["frozen"]
        (True, 0.0, False)
        >>> answer = env.unwrapped.gold_answers()[0]   # what a cheater would learn
        >>> _, reward, _, _, info = env.step(f"<answer>{answer}</answer>")
        >>> reward, info["integrity"]["frozen"], info["integrity"]["ignored_steps"]
        (0.0, True, 1)
    """

    def __init__(self, env: gym.Env[ObsType, ActType], frozen_reward: Literal["repeat", "zero"] = "repeat") -> None:
        check_choice("TerminalFreeze.frozen_reward", frozen_reward, _FROZEN_REWARDS)
        gym.utils.RecordConstructorArgs.__init__(self, frozen_reward=frozen_reward)
        gym.Wrapper.__init__(self, env)
        self.frozen_reward = frozen_reward
        self._final: tuple[ObsType, SupportsFloat, bool, bool, dict[str, Any]] | None = None
        self._ignored_steps = 0

    @property
    def frozen_reward(self) -> Literal["repeat", "zero"]:
        """``"repeat"`` or ``"zero"``; may be switched after construction (vector envs set ``"zero"``)."""
        return self._frozen_reward

    @frozen_reward.setter
    def frozen_reward(self, value: Literal["repeat", "zero"]) -> None:
        self._frozen_reward = check_choice("TerminalFreeze.frozen_reward", value, _FROZEN_REWARDS)

    @property
    def is_frozen(self) -> bool:
        """True between the end of an episode and the next ``reset()``."""
        return self._final is not None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[ObsType, dict[str, Any]]:
        # The inner reset first: one that raises (a bad option) has started no episode, so the end stands and a
        # step after it is still frozen. Clearing first would let a refused reset reopen a finished episode.
        obs, info = self.env.reset(seed=seed, options=options)
        self._final = None
        self._ignored_steps = 0
        return obs, _marked(info, frozen=False, ignored_steps=0)

    def step(self, action: ActType) -> tuple[ObsType, SupportsFloat, bool, bool, dict[str, Any]]:
        if self._final is not None:
            self._ignored_steps += 1
            obs, reward, terminated, truncated, info = copy_tree(self._final)
            reward = 0.0 if self._frozen_reward == "zero" else reward
            return obs, reward, terminated, truncated, _marked(info, frozen=True, ignored_steps=self._ignored_steps)

        obs, reward, terminated, truncated, info = self.env.step(action)
        info = _marked(info, frozen=False, ignored_steps=0)
        if terminated or truncated:
            # The snapshot the frozen steps replay is a deep copy: nothing the caller does to what it got can
            # change it, and each frozen step hands out a deep copy of it in turn.
            self._final = copy_tree((obs, reward, terminated, truncated, info))
        return obs, reward, terminated, truncated, info


def _marked(info: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A copy of ``info`` whose ``integrity`` dict (also a copy) holds ``fields``."""
    return {**info, "integrity": {**info.get("integrity", {}), **fields}}

"""MaxStepsTruncation: every episode ends, and an answer on the last allowed step still counts."""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym
from gymnasium.core import ActType, ObsType

from gym_integrity.checks import check_int
from gym_integrity.protocol import Verdict

__all__ = ["MaxStepsTruncation"]


def _registered_with_the_stack(env: gym.Env) -> bool:
    spec = env.unwrapped.spec
    registered = gym.registry.get(spec.id) if spec is not None else None
    this = f"{__name__}:{MaxStepsTruncation.__name__}"
    return registered is not None and any(w.entry_point == this for w in registered.additional_wrappers)


def _below_time_limit(env: gym.Env) -> tuple[gym.Env, int | None]:
    """``env`` without the TimeLimit ``gym.make`` put on it (its bound kept on the spec), and a bound chosen by the
    caller (None when it is the registered one). Only for an id registered with the stack: another env keeps its own."""
    if not isinstance(env, gym.wrappers.TimeLimit) or not _registered_with_the_stack(env):
        return env, None
    bound = env.spec.max_episode_steps if env.spec is not None else None
    env = env.env
    spec = env.unwrapped.spec
    assert spec is not None  # registered with the stack: gym.make gave it its spec
    spec.max_episode_steps = bound  # a copy gym.make made for this env: env.spec recreates the same stack
    return env, (bound if gym.registry[spec.id].max_episode_steps != bound else None)


class MaxStepsTruncation(gym.Wrapper[ObsType, ActType, ObsType, ActType], gym.utils.RecordConstructorArgs):
    """Truncates an episode after ``max_steps`` steps that did not terminate it.

    Unlike :class:`gymnasium.wrappers.TimeLimit`, a step that terminates the
    episode on the last allowed step is reported ``terminated=True,
    truncated=False``: the answer was given in time and is scored as such, and
    trainers that treat ``truncated`` as "bootstrap, no final reward" see a real
    end. Only a step that neither terminates nor has budget left is truncated.

    A truncated step whose ``info["verdict"]`` is ``"pending"`` (a tool step,
    which the task leaves open for a later answer) is reported ``"no_answer"``:
    the episode is over and no answer came, and ``pending`` on a final step
    would tell a trainer to wait for a grade that never arrives. The reward is
    the step's own (0.0 for a tool step, what a missing answer earns).

    Args:
        env: The environment to bound.
        max_steps: The step budget. ``None`` (default) reads the budget the task
            declares, the ``step_budget`` attribute of the unwrapped env, at
            every ``reset()`` (it may differ per problem, e.g. its attempt count).

    The bound is this wrapper's alone. For an id whose spec declares
    ``max_episode_steps``, ``gym.make`` puts a gymnasium ``TimeLimit`` right
    below the stack; this wrapper takes the env below that TimeLimit instead
    (whose end rule differs: it truncates an answer on the last step) and
    keeps the bound on the env's spec: this env's own (``max_steps``, else the
    task's ``step_budget`` when made). A bound other than the registered one
    (``gym.make(id, max_episode_steps=N)``) is taken as ``max_steps=N``.

    ``info["integrity"]["steps"]`` counts the steps of the current episode.
    Placed inside TerminalFreeze, steps after the end never reach it, so they
    are not counted.

    Example:
        >>> import gymnasium as gym
        >>> from gym_integrity.wrappers import MaxStepsTruncation
        >>> class NeverEnds(gym.Env):
        ...     observation_space = action_space = gym.spaces.Discrete(2)
        ...     def reset(self, *, seed=None, options=None): return 0, {}
        ...     def step(self, action): return 0, 0.0, action == 1, False, {}
        >>> env = MaxStepsTruncation(NeverEnds(), max_steps=2)
        >>> _ = env.reset()
        >>> env.step(0)[2:4], env.step(0)[2:4]
        ((False, False), (False, True))
        >>> _ = env.reset(); _ = env.step(0)
        >>> env.step(1)[2:4]    # an answer on the last allowed step
        (True, False)
    """

    def __init__(self, env: gym.Env[ObsType, ActType], max_steps: int | None = None) -> None:
        check_int("MaxStepsTruncation.max_steps", max_steps, low=1, optional=True)
        gym.utils.RecordConstructorArgs.__init__(self, max_steps=max_steps)
        env, chosen = _below_time_limit(env)
        gym.Wrapper.__init__(self, env)
        self.max_steps = max_steps if max_steps is not None else chosen
        self._budget = self.max_steps
        self._elapsed = 0
        spec = env.unwrapped.spec
        if (
            spec is not None
            and _registered_with_the_stack(env)
            and (self.max_steps is not None or spec.max_episode_steps is not None)
        ):
            spec.max_episode_steps = self.max_steps if self.max_steps is not None else self._declared_budget()

    def _declared_budget(self) -> int:
        task = self.env.unwrapped
        if not hasattr(task, "step_budget"):
            raise AttributeError(
                f"MaxStepsTruncation(max_steps=None) needs the env to declare a `step_budget` attribute; "
                f"{task.__class__.__name__} has none. Pass max_steps=N."
            )
        # The task's declaration, checked as the env's own field: MaxStepsTruncation only reads it.
        check_int(f"{type(task).__name__}.step_budget", task.step_budget, low=1)
        return task.step_budget

    @property
    def elapsed_steps(self) -> int:
        return self._elapsed

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[ObsType, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        self._elapsed = 0
        self._budget = self.max_steps if self.max_steps is not None else self._declared_budget()
        return obs, self._counted(info)

    def step(self, action: ActType) -> tuple[ObsType, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._elapsed += 1
        info = self._counted(info)
        if not terminated:
            truncated = truncated or (self._budget is not None and self._elapsed >= self._budget)
            if truncated and info.get("verdict") == Verdict.PENDING.value:
                info["verdict"] = Verdict.NO_ANSWER.value
        return obs, reward, terminated, truncated, info

    def _counted(self, info: dict[str, Any]) -> dict[str, Any]:
        """A copy of ``info`` whose ``integrity`` dict (also a copy) holds the episode's step count and budget."""
        integrity = {**info.get("integrity", {}), "steps": self._elapsed, "step_budget": self._budget}
        return {**info, "integrity": integrity}

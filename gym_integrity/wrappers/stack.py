"""The integrity stack: the three wrappers in their one correct order, for code and for registration."""

from __future__ import annotations

from typing import Any, Iterable, Literal

import gymnasium as gym
from gymnasium.envs.registration import WrapperSpec

from gym_integrity.protocol import DEFAULT_HIDDEN_KEYS
from gym_integrity.wrappers.hide_info_keys import HideInfoKeys
from gym_integrity.wrappers.max_steps_truncation import MaxStepsTruncation
from gym_integrity.wrappers.terminal_freeze import TerminalFreeze

__all__ = ["integrity_stack", "integrity_wrapper_specs", "STACK_ORDER", "STACK_SWITCHES", "stack_switch_hints"]

#: Innermost first. TerminalFreeze is outermost so that nothing below it
#: (filtering, step counting, the task) runs after the end.
STACK_ORDER = (MaxStepsTruncation, HideInfoKeys, TerminalFreeze)


#: The stack's settings that ``gym_integrity.make`` takes; ``gym.make(id, **kwargs)`` sends kwargs to the env only.
STACK_SWITCHES = ("reveal_on_end", "frozen_reward", "max_steps", "deep_scan")


def stack_switch_hints(env_id: str) -> dict[str, str]:
    """For an env's unknown-option error: a stack switch given to ``gym.make`` says where it belongs.

    >>> stack_switch_hints("FinQA-v0")["max_steps"].split(": ")[1]
    "use gym_integrity.make('FinQA-v0', max_steps=...) instead of gym.make"
    """
    return {name: f"a setting of the integrity stack, not of the env: use gym_integrity.make({env_id!r}, {name}=...) "
                  "instead of gym.make" for name in STACK_SWITCHES}

def _stack_kwargs(max_steps: int | None, hidden_keys: Iterable[str], hide_mode: str, reveal_on_end: bool,
                  frozen_reward: str, deep_scan: bool) -> list[dict[str, Any]]:
    return [
        {"max_steps": max_steps},
        {"keys": tuple(hidden_keys), "mode": hide_mode, "reveal_on_end": reveal_on_end, "deep_scan": deep_scan},
        {"frozen_reward": frozen_reward},
    ]


def integrity_stack(
    env: gym.Env,
    *,
    max_steps: int | None = None,
    hidden_keys: Iterable[str] = DEFAULT_HIDDEN_KEYS,
    hide_mode: Literal["deny", "allow"] = "deny",
    reveal_on_end: bool = False,
    frozen_reward: Literal["repeat", "zero"] = "repeat",
    deep_scan: bool = False,
) -> gym.Env:
    """Wrap ``env`` in MaxStepsTruncation, HideInfoKeys and TerminalFreeze (innermost first).

    This is what every registered id already has; use it for an env you build
    yourself. ``max_steps=None`` reads the env's ``step_budget`` attribute;
    ``deep_scan=True`` makes HideInfoKeys scan every key at every depth even
    for an env that declares the privileged-info convention.

    Example:
        >>> import gymnasium as gym
        >>> from gym_integrity.wrappers import integrity_stack
        >>> from gym_integrity.envs.reasoning_gym import ReasoningGymEnv
        >>> env = integrity_stack(ReasoningGymEnv(dataset="leg_counting"))
        >>> [type(w).__name__ for w in (env, env.env, env.env.env)]
        ['TerminalFreeze', 'HideInfoKeys', 'MaxStepsTruncation']
    """
    kwargs = _stack_kwargs(max_steps, hidden_keys, hide_mode, reveal_on_end, frozen_reward, deep_scan)
    for wrapper_cls, wrapper_kwargs in zip(STACK_ORDER, kwargs):
        env = wrapper_cls(env, **wrapper_kwargs)
    return env


def integrity_wrapper_specs(
    *,
    max_steps: int | None = None,
    hidden_keys: Iterable[str] = DEFAULT_HIDDEN_KEYS,
    hide_mode: Literal["deny", "allow"] = "deny",
    reveal_on_end: bool = False,
    frozen_reward: Literal["repeat", "zero"] = "repeat",
    deep_scan: bool = False,
) -> tuple[WrapperSpec, ...]:
    """The same stack as ``WrapperSpec``s, for ``gym.register(additional_wrappers=...)``."""
    kwargs = _stack_kwargs(max_steps, hidden_keys, hide_mode, reveal_on_end, frozen_reward, deep_scan)
    return tuple(
        WrapperSpec(name=cls.__name__, entry_point=f"{cls.__module__}:{cls.__name__}", kwargs=kw)
        for cls, kw in zip(STACK_ORDER, kwargs)
    )

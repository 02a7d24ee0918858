"""The integrity stack: its settings (StackConfig) and the three wrappers in their one correct order."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

import gymnasium as gym
from gymnasium.envs.registration import WrapperSpec

from gym_integrity.checks import check_bool, check_choice, check_int, check_strs
from gym_integrity.protocol import DEFAULT_HIDDEN_KEYS
from gym_integrity.wrappers.hide_info_keys import HideInfoKeys
from gym_integrity.wrappers.max_steps_truncation import MaxStepsTruncation
from gym_integrity.wrappers.terminal_freeze import TerminalFreeze

__all__ = [
    "STACK_ORDER",
    "STACK_SWITCHES",
    "StackConfig",
    "integrity_stack",
    "integrity_wrapper_specs",
    "stack_switch_hints",
]

#: Innermost first. TerminalFreeze is outermost so that nothing below it
#: (filtering, step counting, the task) runs after the end.
STACK_ORDER = (MaxStepsTruncation, HideInfoKeys, TerminalFreeze)


@dataclass(frozen=True)
class StackConfig:
    """The integrity stack's settings, checked when built.

    Attributes:
        max_steps: MaxStepsTruncation's budget; ``None`` reads the env's ``step_budget``.
        hidden_keys: What HideInfoKeys removes (or, with ``hide_mode="allow"``, keeps).
        hide_mode: ``"deny"`` or ``"allow"``.
        reveal_on_end: The trainer's opt-in to see the hidden keys on the final transition (for logging).
        frozen_reward: TerminalFreeze's reward after the end: ``"repeat"`` or ``"zero"``.

    >>> StackConfig(max_steps=0)
    Traceback (most recent call last):
    ...
    ValueError: StackConfig.max_steps must be an int >= 1 or None, got 0
    """

    max_steps: int | None = None
    hidden_keys: tuple[str, ...] = DEFAULT_HIDDEN_KEYS
    hide_mode: Literal["deny", "allow"] = "deny"
    reveal_on_end: bool = False
    frozen_reward: Literal["repeat", "zero"] = "repeat"

    def __post_init__(self) -> None:
        check_int("StackConfig.max_steps", self.max_steps, low=1, optional=True)
        object.__setattr__(self, "hidden_keys", check_strs("StackConfig.hidden_keys", self.hidden_keys))
        check_choice("StackConfig.hide_mode", self.hide_mode, ("deny", "allow"))
        check_bool("StackConfig.reveal_on_end", self.reveal_on_end)
        check_choice("StackConfig.frozen_reward", self.frozen_reward, ("repeat", "zero"))

    def layer_kwargs(self) -> tuple[dict[str, Any], ...]:
        """Each wrapper's keyword arguments, in :data:`STACK_ORDER`."""
        return (
            {"max_steps": self.max_steps},
            {"keys": self.hidden_keys, "mode": self.hide_mode, "reveal_on_end": self.reveal_on_end},
            {"frozen_reward": self.frozen_reward},
        )


#: The names of the settings: what ``gym_integrity.make`` takes beside the env's options (``gym.make(id, **kwargs)``
#: sends kwargs to the env only).
STACK_SWITCHES = tuple(field.name for field in dataclasses.fields(StackConfig))


def stack_switch_hints(env_id: str) -> dict[str, str]:
    """For an env's unknown-option error: a stack switch given to ``gym.make`` says where it belongs.

    >>> stack_switch_hints("FinQA-v0")["max_steps"].split(": ")[1]
    "use gym_integrity.make('FinQA-v0', max_steps=...) instead of gym.make"
    """
    return {
        name: f"a setting of the integrity stack, not of the env: use gym_integrity.make({env_id!r}, {name}=...) "
        "instead of gym.make"
        for name in STACK_SWITCHES
    }


def integrity_stack(env: gym.Env, **settings: Any) -> gym.Env:
    """Wrap ``env`` in MaxStepsTruncation, HideInfoKeys and TerminalFreeze (innermost first).

    This is what every registered id already has; use it for an env you build
    yourself. ``settings`` are :class:`StackConfig`'s fields.

    Example:
        >>> from gym_integrity.wrappers import integrity_stack
        >>> from gym_integrity.envs.reasoning_gym import ReasoningGymEnv
        >>> env = integrity_stack(ReasoningGymEnv(dataset="leg_counting"), frozen_reward="zero")
        >>> [type(w).__name__ for w in (env, env.env, env.env.env)], env.frozen_reward
        (['TerminalFreeze', 'HideInfoKeys', 'MaxStepsTruncation'], 'zero')
    """
    for wrapper_cls, kwargs in zip(STACK_ORDER, StackConfig(**settings).layer_kwargs()):
        env = wrapper_cls(env, **kwargs)
    return env


def integrity_wrapper_specs(config: StackConfig = StackConfig()) -> tuple[WrapperSpec, ...]:
    """The same stack as ``WrapperSpec``s, for ``gym.register(additional_wrappers=...)``."""
    return tuple(
        WrapperSpec(name=cls.__name__, entry_point=f"{cls.__module__}:{cls.__name__}", kwargs=kwargs)
        for cls, kwargs in zip(STACK_ORDER, config.layer_kwargs())
    )

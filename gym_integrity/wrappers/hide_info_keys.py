"""HideInfoKeys: answer-bearing entries of ``info`` never reach the agent."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal, SupportsFloat

import gymnasium as gym
from gymnasium.core import ActType, ObsType

from gym_integrity.checks import check_bool, check_choice, check_strs
from gym_integrity.protocol import DEFAULT_HIDDEN_KEYS

__all__ = ["HideInfoKeys"]

_MODES = ("deny", "allow")

Path = tuple[str, ...]
_LEAVES = (str, int, float, type(None))


def _is_mapping(value: Any) -> bool:
    # A foreign env may nest any Mapping; the dict and leaf checks first spare most values the slower ABC check.
    return isinstance(value, dict) or (not isinstance(value, _LEAVES) and isinstance(value, Mapping))


def _drop_keys(info: Mapping[str, Any], names: frozenset[str], paths: frozenset[Path], prefix: Path = ()) -> dict:
    """A new dict, at every depth, without bare ``names`` anywhere and without the exact dotted ``paths``."""
    out = {}
    for key, value in info.items():
        here = (*prefix, str(key)) if paths else prefix
        if key in names or here in paths:
            continue
        out[key] = _drop_keys(value, names, paths, here) if _is_mapping(value) else value
    return out


def _keep_paths(info: Mapping[str, Any], paths: frozenset[Path], prefix: Path = ()) -> dict:
    """A new dict holding only the allowed paths (a path keeps everything below it)."""
    out = {}
    for key, value in info.items():
        here = (*prefix, str(key))
        if here in paths:
            out[key] = _drop_keys(value, frozenset(), frozenset()) if _is_mapping(value) else value
        elif _is_mapping(value) and any(p[: len(here)] == here for p in paths):
            out[key] = _keep_paths(value, paths, here)
    return out


class HideInfoKeys(gym.Wrapper[ObsType, ActType, ObsType, ActType], gym.utils.RecordConstructorArgs):
    """Removes answer-bearing keys from ``info`` at ``reset()`` and at every ``step()``.

    Harnesses print and log ``info``, and a policy may be shown it, so ``info``
    must be clean by default. Every key at every depth is visited, and the
    filtered info is a new dict at every depth: the inner env's dicts are never
    changed, and nothing the caller edits reaches back into them.

    Args:
        env: The environment to filter.
        keys: In ``"deny"`` mode, what to remove: a bare name (``"answer"``) is
            removed at any nesting depth; a dotted path (``"privileged.gold"``)
            only there. In ``"allow"`` mode, the dotted paths to keep; all else
            is removed. Defaults to :data:`gym_integrity.protocol.DEFAULT_HIDDEN_KEYS`.
        mode: ``"deny"`` (default) or ``"allow"``.
        reveal_on_end: The trainer's opt-in to see the hidden keys on the final
            transition of an episode (for logging gold answers). Safe only with
            TerminalFreeze outside this wrapper, which the registered stack has.

    Example:
        >>> import gymnasium as gym
        >>> from gym_integrity.wrappers import HideInfoKeys
        >>> class Leaky(gym.Env):
        ...     observation_space = action_space = gym.spaces.Discrete(2)
        ...     def reset(self, *, seed=None, options=None):
        ...         return 0, {"problem_id": "p1", "privileged": {"gold": "42"},
        ...                    "debug": {"answer": "42", "latency": 0.1}}
        >>> env = HideInfoKeys(Leaky())
        >>> env.reset()[1]
        {'problem_id': 'p1', 'debug': {'latency': 0.1}}
        >>> HideInfoKeys(Leaky(), keys=("problem_id", "debug.latency"), mode="allow").reset()[1]
        {'problem_id': 'p1', 'debug': {'latency': 0.1}}
    """

    def __init__(
        self,
        env: gym.Env[ObsType, ActType],
        keys: Iterable[str] = DEFAULT_HIDDEN_KEYS,
        mode: Literal["deny", "allow"] = "deny",
        reveal_on_end: bool = False,
    ) -> None:
        keys = check_strs("HideInfoKeys.keys", keys)
        check_choice("HideInfoKeys.mode", mode, _MODES)
        check_bool("HideInfoKeys.reveal_on_end", reveal_on_end)
        gym.utils.RecordConstructorArgs.__init__(self, keys=keys, mode=mode, reveal_on_end=reveal_on_end)
        gym.Wrapper.__init__(self, env)
        self.keys, self.mode, self.reveal_on_end = keys, mode, reveal_on_end
        self._names = frozenset(k for k in keys if "." not in k)
        self._paths = frozenset(tuple(k.split(".")) for k in keys if mode == "allow" or "." in k)

    def filter(self, info: Mapping[str, Any]) -> dict[str, Any]:
        """The agent-safe copy of ``info``."""
        if self.mode == "allow":
            return _keep_paths(info, self._paths)
        return _drop_keys(info, self._names, self._paths)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[ObsType, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        return obs, self.filter(info)

    def step(self, action: ActType) -> tuple[ObsType, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self.reveal_on_end and (terminated or truncated):
            return obs, reward, terminated, truncated, dict(info)
        return obs, reward, terminated, truncated, self.filter(info)

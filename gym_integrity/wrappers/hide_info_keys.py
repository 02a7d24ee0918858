"""HideInfoKeys: answer-bearing entries of ``info`` never reach the agent."""

from __future__ import annotations

from typing import Any, Iterable, Literal, Mapping, SupportsFloat

import gymnasium as gym
from gymnasium.core import ActType, ObsType

from gym_integrity.checks import check_bool, check_choice, check_strs
from gym_integrity.protocol import DEFAULT_HIDDEN_KEYS, PRIVILEGED_KEY
from gym_integrity.wrappers.info_ownership import fresh_info_below, privileged_only_below

__all__ = ["HideInfoKeys"]

_MODES = ("deny", "allow")


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _is_mapping(value: Any) -> bool:
    # type() first: isinstance against the Mapping ABC is slow, and info is plain dicts and scalars
    cls = type(value)
    return cls is dict or (cls not in _SCALARS and isinstance(value, Mapping))


def _drop_keys(info: Mapping[str, Any], names: frozenset[str], paths: frozenset[tuple[str, ...]],
               prefix: tuple[str, ...] = ()) -> dict[str, Any]:
    """A new dict without bare ``names`` at any depth and without exact dotted ``paths``."""
    if not paths:  # the common case (bare names only), on every step: copy at C speed, then descend
        out = dict(info) if names.isdisjoint(info) else {k: v for k, v in info.items() if k not in names}
        for key, value in out.items():
            if type(value) not in _SCALARS and _is_mapping(value):
                out[key] = _drop_keys(value, names, paths)  # rebinding a key while iterating is safe
        return out
    out: dict[str, Any] = {}
    for key, value in info.items():
        here = (*prefix, str(key))
        if key in names or here in paths:
            continue
        out[key] = _drop_keys(value, names, paths, here) if _is_mapping(value) else value
    return out


def _keep_paths(info: Mapping[str, Any], paths: frozenset[tuple[str, ...]],
                prefix: tuple[str, ...] = ()) -> dict[str, Any]:
    """A new dict holding only the allowed paths (a path keeps everything below it)."""
    out: dict[str, Any] = {}
    for key, value in info.items():
        here = (*prefix, str(key))
        if here in paths:
            out[key] = _drop_keys(value, frozenset(), frozenset()) if _is_mapping(value) else value
        elif _is_mapping(value) and any(p[: len(here)] == here for p in paths):
            out[key] = _keep_paths(value, paths, here)
    return out


def _drop_privileged(info: Mapping[str, Any]) -> dict[str, Any]:
    """A new dict without the top-level privileged key: the fast path (C-speed copy and one delete)."""
    out = dict(info)
    out.pop(PRIVILEGED_KEY, None)
    return out


class HideInfoKeys(
    gym.Wrapper[ObsType, ActType, ObsType, ActType], gym.utils.RecordConstructorArgs
):
    """Removes answer-bearing keys from ``info`` at ``reset()`` and at every ``step()``.

    Harnesses print and log ``info``, and a policy may be shown it, so ``info``
    must be clean by default. A dict the inner env may still hold is never
    mutated: the filtered info is a new dict, unless the layers below declare
    that their info dicts are their callers' (:mod:`~gym_integrity.wrappers.info_ownership`).

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
        deep_scan: Always visit every key at every depth, even for an env that
            declares the privileged-info convention.

    Two paths, one result. The deep scan builds a new dict at every depth,
    leaving out the hidden names wherever they are: what a foreign env needs,
    whose answer may sit under any common name. An env that declares the
    privileged-info convention (:data:`gym_integrity.protocol.PRIVILEGED_ONLY`:
    answer-bearing values only under ``info["privileged"]``, no hidden name
    anywhere else), with only layers that declare they keep it in between
    (gym.make's, the stack's, or a wrapper of yours that says so:
    :func:`~gym_integrity.wrappers.info_ownership.privileged_only_below`), gets the fast path, with the default keys in ``"deny"`` mode:
    ``privileged`` dropped from the top level (of the dict itself when nothing
    below keeps it, else of a copy), nested dicts passed on as the inner layers
    made them (fresh on every call). ``filter_path`` says which applies.

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

    Change logs:
        v0.1.0 - Initially added.
        v0.2.0 - The fast path for envs that declare the privileged-info convention; ``deep_scan``.
        v0.3.0 - Any wrapper in between that declares it keeps the fast path (``info_ownership``).
    """

    # The info-ownership protocol (info_ownership): every dict returned is new or a fresh one handed up, none kept;
    # nothing answer-bearing is added outside info["privileged"].
    returns_new_info = True
    passes_privileged_only = True

    def __init__(
        self,
        env: gym.Env[ObsType, ActType],
        keys: Iterable[str] = DEFAULT_HIDDEN_KEYS,
        mode: Literal["deny", "allow"] = "deny",
        reveal_on_end: bool = False,
        deep_scan: bool = False,
    ) -> None:
        keys = check_strs("HideInfoKeys.keys", keys)
        check_choice("HideInfoKeys.mode", mode, _MODES)
        check_bool("HideInfoKeys.reveal_on_end", reveal_on_end)
        check_bool("HideInfoKeys.deep_scan", deep_scan)
        gym.utils.RecordConstructorArgs.__init__(self, keys=keys, mode=mode, reveal_on_end=reveal_on_end,
                                                 deep_scan=deep_scan)
        gym.Wrapper.__init__(self, env)
        self.keys, self.mode, self.reveal_on_end, self.deep_scan = keys, mode, reveal_on_end, deep_scan
        self._names = frozenset(k for k in keys if "." not in k)
        if mode == "allow":
            self._paths = frozenset(tuple(k.split(".")) for k in keys)
        else:
            self._paths = frozenset(tuple(k.split(".")) for k in keys if "." in k)
        # Decided once: the layers below are fixed when this one is built.
        fast = (not deep_scan and mode == "deny" and frozenset(keys) == frozenset(DEFAULT_HIDDEN_KEYS)
                and privileged_only_below(env))
        self._fast = fast
        # The fast path drops the key from the dict it is handed when nothing below keeps that dict
        # (fresh_info_below), else from a top-level copy; nested dicts are never edited on either path.
        self._owns_inner_info = fresh_info_below(env)
        self.filter_path: Literal["privileged key", "deep scan"] = "privileged key" if fast else "deep scan"

    def filter(self, info: Mapping[str, Any]) -> dict[str, Any]:
        """The agent-safe copy of ``info`` (by the path ``filter_path`` names)."""
        if self._fast:
            return _drop_privileged(info)
        if self.mode == "allow":
            return _keep_paths(info, self._paths)
        return _drop_keys(info, self._names, self._paths)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[ObsType, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        if self._fast:  # filter(), inlined: this runs twice an episode
            if not self._owns_inner_info:
                info = dict(info)
            info.pop(PRIVILEGED_KEY, None)
            return obs, info
        return obs, self.filter(info)

    def step(self, action: ActType) -> tuple[ObsType, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self.reveal_on_end and (terminated or truncated):
            return obs, reward, terminated, truncated, dict(info)
        if self._fast:
            if not self._owns_inner_info:
                info = dict(info)
            info.pop(PRIVILEGED_KEY, None)
            return obs, reward, terminated, truncated, info
        return obs, reward, terminated, truncated, self.filter(info)

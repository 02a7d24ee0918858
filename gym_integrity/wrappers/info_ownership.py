"""Who owns an ``info`` dict in a stack of wrappers: the one protocol every integrity wrapper reads.

Two questions decide how cheaply a wrapper may touch the ``info`` it is
handed, and both are answered here, by walking the layers below it once,
when it is built:

* **Fresh info** (:func:`fresh_info_below`): is every top-level info dict
  coming up new for that call and kept by no one below? Then a wrapper may set
  its keys in that dict; otherwise it works on a copy, so an env or wrapper
  that reuses or keeps its info dict never sees it changed.
* **Privileged only** (:func:`privileged_only_below`): is every answer-bearing
  value below under ``info["privileged"]`` alone? Then HideInfoKeys drops that
  one key instead of scanning every key at every depth (its fast path).

A layer answers for itself through class attributes; a layer that says
nothing gets the safe answer (copy, deep scan), so a wrapper written without
this module in mind is always correct, only slower.

The raw env declares (see :mod:`gym_integrity.protocol`):

* ``fresh_info = True`` (:data:`~gym_integrity.protocol.FRESH_INFO`): each
  info dict it returns is built for that call and not kept. Every
  :class:`~gym_integrity.envs.base.TextEnv` does.
* ``privileged_info_only = True`` (:data:`~gym_integrity.protocol.PRIVILEGED_ONLY`):
  answer-bearing values only under ``info["privileged"]``, no name of
  :data:`~gym_integrity.protocol.DEFAULT_HIDDEN_KEYS` anywhere else.

A wrapper declares, as class attributes (all default to False):

* ``returns_new_info = True`` (:data:`RETURNS_NEW_INFO`): every info dict it
  returns is one it built for that call, or the dict it was handed when that
  one was fresh, and it keeps no dict it returned (a snapshot it keeps is its
  own copy). What comes out of it is fresh whatever is below.
* ``passes_fresh_info = True`` (:data:`PASSES_FRESH_INFO`): it returns the dict
  it was handed or a new one, and keeps none it returned: what comes out is
  fresh when what comes in is.
* ``passes_privileged_only = True`` (:data:`PASSES_PRIVILEGED_ONLY`): it adds
  nothing answer-bearing to ``info`` outside ``info["privileged"]`` and no key
  named in ``DEFAULT_HIDDEN_KEYS`` at any depth.

The three integrity wrappers declare ``returns_new_info`` and
``passes_privileged_only``; gymnasium's PassiveEnvChecker and OrderEnforcing
(what ``gym.make`` adds) pass info on untouched and are known here by exact
type. A wrapper of your own that only reads ``info`` keeps the stack's fast
paths by saying so:

    >>> import gymnasium as gym
    >>> from gym_integrity.wrappers import integrity_stack
    >>> from gym_integrity.envs.reasoning_gym import ReasoningGymEnv
    >>> class CountSteps(gym.Wrapper):
    ...     passes_fresh_info = passes_privileged_only = True
    ...     def step(self, action):
    ...         self.steps = getattr(self, "steps", 0) + 1
    ...         return self.env.step(action)
    >>> integrity_stack(CountSteps(ReasoningGymEnv(dataset="leg_counting"))).env.filter_path
    'privileged key'
    >>> class Silent(gym.Wrapper):
    ...     pass
    >>> integrity_stack(Silent(ReasoningGymEnv(dataset="leg_counting"))).env.filter_path
    'deep scan'
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from gymnasium.wrappers import OrderEnforcing, PassiveEnvChecker

from gym_integrity.protocol import declares_fresh_info, declares_privileged_only

__all__ = [
    "RETURNS_NEW_INFO",
    "PASSES_FRESH_INFO",
    "PASSES_PRIVILEGED_ONLY",
    "fresh_info_below",
    "privileged_only_below",
    "with_integrity",
]

#: Wrapper class attribute: every info dict it returns is fresh, whatever is below (see the module docstring).
RETURNS_NEW_INFO = "returns_new_info"
#: Wrapper class attribute: the info dicts it returns are fresh when the ones it is handed are.
PASSES_FRESH_INFO = "passes_fresh_info"
#: Wrapper class attribute: it adds nothing answer-bearing to info outside ``info["privileged"]``.
PASSES_PRIVILEGED_ONLY = "passes_privileged_only"

#: Gymnasium's layers that ``gym.make`` adds: they hand info on as they got it. Exact types: a subclass
#: may do more, and says so with the attributes above.
_GYMNASIUM_PASSTHROUGH = (PassiveEnvChecker, OrderEnforcing)


def _declares(layer: gym.Env, attribute: str) -> bool:
    cls = type(layer)
    return cls in _GYMNASIUM_PASSTHROUGH or getattr(cls, attribute, False) is True


def fresh_info_below(env: gym.Env) -> bool:
    """Whether every info dict coming up from ``env`` is new for that call and kept by no one below.

    True at the first layer that declares ``returns_new_info``, or when every
    wrapper down to the raw env declares ``passes_fresh_info`` and the raw env
    declares ``fresh_info``. A layer above may then set keys in the dict it is
    handed; otherwise it copies first.
    """
    layer = env
    while isinstance(layer, gym.Wrapper):
        cls = type(layer)
        if cls not in _GYMNASIUM_PASSTHROUGH and getattr(cls, RETURNS_NEW_INFO, False) is True:
            return True
        if not _declares(layer, PASSES_FRESH_INFO):
            return False
        layer = layer.env
    return declares_fresh_info(layer)


def privileged_only_below(env: gym.Env) -> bool:
    """Whether everything ``info`` can hold below this point keeps the privileged-info convention.

    True when the raw env declares ``privileged_info_only`` and every wrapper
    between declares ``passes_privileged_only`` (or is one of gym.make's
    layers). Any other wrapper may add keys of its own, so HideInfoKeys above
    it gets the deep scan.
    """
    layer = env
    while isinstance(layer, gym.Wrapper):
        if not _declares(layer, PASSES_PRIVILEGED_ONLY):
            return False
        layer = layer.env
    return declares_privileged_only(layer)


def with_integrity(info: dict[str, Any], fields: dict[str, Any], *, in_place: bool = False) -> dict[str, Any]:
    """``info`` whose ``integrity`` sub-dict also has ``fields``: a shallow copy, or ``info`` itself if ``in_place``.

    ``in_place`` is for a caller that owns ``info`` (:func:`fresh_info_below`).
    The ``integrity`` dict is always a new one (the one there may be an inner
    layer's), and ``fields`` must be a dict made for this call: it becomes the
    new ``integrity`` when ``info`` has none.

    >>> kept = {"integrity": {"steps": 1}}
    >>> with_integrity(kept, {"frozen": False})
    {'integrity': {'steps': 1, 'frozen': False}}
    >>> kept
    {'integrity': {'steps': 1}}
    """
    out = info if in_place else dict(info)
    inner = info.get("integrity")
    out["integrity"] = {**inner, **fields} if inner else fields
    return out

"""A GEM env (``gem.make(id, **options)``, PyPI ``gem-llm``) as the text env the auditor plays, untouched.

GEM's ``Env`` has Gymnasium's ``reset``/``step`` shape but is not a
``gymnasium.Env``; :class:`GemEnv` forwards both as they are (steps after the
end included: what GEM does then is what the audit measures) and adds what the
auditor needs: text spaces, and the privileged ``gold_answers()`` hook read
from the env's own state (``answer`` of the math and QA envs, ``data["answer"]``
of the reasoning-gym ones, or the attribute named by ``gold_attr``).

* ``reset(seed, options)``: GEM's ``reset`` takes no options, so a reset with
  options raises there, as it would for a trainer.
* ``dataset=``: a path or a ``datasets`` id is loaded here (GEM's math and QA
  envs otherwise download theirs from the hub) and passed as a ``datasets.Dataset``.
* GEM's math and QA envs grade in a ``multiprocessing.Pool`` of their own
  (``use_mp=True``). The auditor's child processes are daemons, which
  ``multiprocessing`` forbids to start children, so building one in such a
  process lifts that flag for the process first (a pool left behind by a killed
  child dies with it only when its own workers notice).

Example (needs the ``[gem]`` extra)::

    from gym_integrity.audit import check_integrity
    from gym_integrity.audit.adapters_gem import GemEnv
    report = check_integrity(lambda: GemEnv("rg:leg_counting", size=16))
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from gym_integrity.checks import check_type
from gym_integrity.envs.base import MAX_TEXT_CHARS
from gym_integrity.spaces import UnicodeText

try:
    import gem
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError("gym_integrity.audit.adapters_gem needs GEM: pip install 'gym-integrity[gem]'") from exc

__all__ = ["GemEnv", "gem_gold"]


def gem_gold(env: Any, attr: str | None = None) -> list[str] | None:
    """The gold of a GEM env's current episode from its own state, or None if it keeps none the adapter knows."""
    if attr is not None:
        value = getattr(env, attr, None)
    else:
        value = getattr(env, "answer", None)
        data = getattr(env, "data", None)
        if value is None and isinstance(data, Mapping):
            value = data.get("answer")
    if value is None:
        return None
    values = value if isinstance(value, (list, tuple)) else [value]
    return [str(v) for v in values if str(v).strip()]


def _as_dataset(dataset: Any, split: str | None) -> Any:
    if isinstance(dataset, str):
        import datasets

        from gym_integrity.audit.adapters_reward import load_rows

        rows = load_rows(dataset, split=split)
        return rows if isinstance(rows, datasets.Dataset) else datasets.Dataset.from_list(list(rows))
    return dataset


class GemEnv(gym.Env[str, str]):
    """``gem.make(env_id, **options)`` behind Gymnasium's API, with the auditor's gold hook (module docstring)."""

    def __init__(
        self,
        env_id: str,
        *,
        gold_attr: str | None = None,
        dataset: Any = None,
        split: str | None = None,
        **options: Any,
    ) -> None:
        check_type("GemEnv env_id", env_id, str, "a GEM env id, e.g. 'rg:leg_counting'")
        if dataset is not None:
            options["dataset"] = _as_dataset(dataset, split)
        elif split is not None:
            options["split"] = split
        if multiprocessing.current_process().daemon:  # GEM's grading pool needs a process allowed children
            multiprocessing.current_process().daemon = False
        self.gem_env = gem.make(env_id, **options)
        self.env_id = env_id
        self.gold_attr = gold_attr
        # The steps GEM allows an episode (its games' max_turns; its single-turn envs end on the first step): what
        # integrity_stack's MaxStepsTruncation bounds an episode by.
        turns = getattr(self.gem_env.unwrapped, "max_turns", None)
        self.step_budget = turns if isinstance(turns, int) and turns >= 1 else 1
        self.observation_space = UnicodeText(MAX_TEXT_CHARS, min_length=0)
        self.action_space = UnicodeText(MAX_TEXT_CHARS, min_length=0)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        if options is None:
            obs, info = self.gem_env.reset(seed=seed)
        else:
            obs, info = self.gem_env.reset(seed=seed, options=options)
        return obs, dict(info or {})

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.gem_env.step(action)
        return obs, float(reward), bool(terminated), bool(truncated), dict(info or {})

    def gold_answers(self) -> list[str] | None:
        """The privileged auditor hook: the gold GEM keeps for the current episode."""
        return gem_gold(self.gem_env.unwrapped, self.gold_attr)

    def close(self) -> None:
        pool = getattr(self.gem_env, "mp_pool", None)
        if pool is not None:
            pool.terminate()

"""OpenEnv's reasoning_gym_env, as its server runs it, played in-process for ecosystem_audit.py.

The sources come from OpenEnv's repository at :data:`COMMIT` (``git archive`` of a local clone, ``--openenv-git``);
nothing in them is edited. :class:`OpenEnvReasoningGym` calls the server's ``ReasoningGymEnvironment`` as the
server's HTTP/WebSocket handler does: ``reset(dataset_name=..., dataset_config={}, seed=seed, size=1)`` (one
question per seed), ``step(ReasoningGymAction(answer=text))``; the text a client receives is the observation's
fields as the server serializes them (``model_dump`` without the ``done``/``reward`` it sends apart), the reward
and ``done`` are the observation's. The gold (privileged ``gold_answers()``) is the current entry's ``answer``.
This is the env the wire serves minus the transport: the audit over the wire (``--url``) is the adapters' work.

OpenEnv's finqa_env's grader is audited as a reward function (``finqa_reward``): its ``compute_reward(submitted,
truth)`` over FinQA-style rows.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from typing import Any

import gymnasium as gym

__all__ = ["COMMIT", "OpenEnvReasoningGym", "build", "extract", "finqa_reward"]

#: The OpenEnv commit whose envs are audited.
COMMIT = "685de411e5f77286b0fd94798d42c4467cf8a1bc"
_ROOT_ENV = "ECOSYSTEM_OPENENV_ROOT"


def extract(git_dir: str, directory: str) -> str:
    """``envs/reasoning_gym_env`` and ``envs/finqa_env`` at :data:`COMMIT` into ``directory``; the envs' root."""
    root = os.path.join(directory, "openenv_envs")
    if not os.path.isdir(os.path.join(root, "reasoning_gym_env")):
        os.makedirs(root, exist_ok=True)
        archive = subprocess.run(["git", "--git-dir", git_dir, "archive", COMMIT, "envs/reasoning_gym_env",
                                  "envs/finqa_env"], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "--strip-components=1", "-C", root], input=archive, check=True)
    os.environ[_ROOT_ENV] = root
    return root


def _import(module: str) -> Any:
    root = os.environ[_ROOT_ENV]
    if root not in sys.path:
        sys.path.insert(0, root)
    return importlib.import_module(module)


class OpenEnvReasoningGym(gym.Env[str, str]):
    """OpenEnv's ReasoningGymEnvironment, one question per seed (module docstring)."""

    def __init__(self, dataset: str = "leg_counting") -> None:
        from gym_integrity.envs.base import MAX_TEXT_CHARS
        from gym_integrity.spaces import UnicodeText

        server = _import("reasoning_gym_env.server.reasoning_gym_environment")
        self._action_cls = _import("reasoning_gym_env.models").ReasoningGymAction
        self.server_env = server.ReasoningGymEnvironment()
        self.dataset = dataset
        self.observation_space = UnicodeText(MAX_TEXT_CHARS, min_length=0)
        self.action_space = UnicodeText(MAX_TEXT_CHARS, min_length=0)
        self.step_budget = 1

    @staticmethod
    def _wire(obs: Any) -> tuple[str, dict[str, Any]]:
        fields = obs.model_dump(exclude={"done", "reward"})
        return json.dumps(fields, default=str), fields

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        obs = self.server_env.reset(dataset_name=self.dataset, dataset_config=dict(options or {}),
                                    seed=0 if seed is None else seed, size=1)
        return self._wire(obs)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        obs = self.server_env.step(self._action_cls(answer=action))
        text, fields = self._wire(obs)
        return text, float(obs.reward or 0.0), bool(obs.done), False, fields

    def gold_answers(self) -> list[str] | None:
        entry = self.server_env._current_entry
        return [str(entry["answer"])] if entry and entry.get("answer") is not None else None


def build(stacked: bool = False, root: str = "", **kwargs: Any) -> gym.Env:
    """What each audit child builds: the env, inside ``integrity_stack`` if ``stacked``."""
    os.environ[_ROOT_ENV] = root
    env: gym.Env = OpenEnvReasoningGym(**kwargs)
    if stacked:
        from gym_integrity.wrappers import integrity_stack

        env = integrity_stack(env)
    return env


def finqa_reward(data_source: Any, solution_str: str, ground_truth: Any, extra_info: Any = None) -> float:
    """OpenEnv finqa_env's ``compute_reward(submitted_answer, ground_truth)``, as its step calls it."""
    import importlib.util

    # By file: the package's __init__ imports its client and server (fastmcp, pandas); rewards.py needs neither.
    path = os.path.join(os.environ[_ROOT_ENV], "finqa_env", "server", "rewards.py")
    spec = importlib.util.spec_from_file_location("openenv_finqa_rewards", path)
    assert spec is not None and spec.loader is not None
    rewards = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rewards)
    return float(rewards.compute_reward(solution_str, str(ground_truth)))

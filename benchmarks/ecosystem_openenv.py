"""OpenEnv's reasoning_gym_env, as its server runs it, played in-process for ecosystem_audit.py.

The sources come from OpenEnv's repository at :data:`COMMIT` (``git archive`` of a local clone, ``--openenv-git``);
nothing in them is edited. :class:`OpenEnvReasoningGym` calls the server's ``ReasoningGymEnvironment`` as the
server's HTTP/WebSocket handler does: ``reset(dataset_name=..., dataset_config={}, seed=seed, size=1)`` (one
question per seed), ``step(ReasoningGymAction(answer=text))``; the text a client receives is the observation's
fields as the server serializes them (``model_dump`` without the ``done``/``reward`` it sends apart), the reward
and ``done`` are the observation's. The gold (privileged ``gold_answers()``) is the current entry's ``answer``.
This is the env the wire serves minus the transport: the audit over the wire (``--url``) is the adapters' work.

OpenEnv's finqa_env's grader is audited as a reward function (``finqa_reward``): its ``compute_reward(submitted,
truth)`` over FinQA-style rows. Its whole env, and the qed_math env (from the repository's history:
:data:`QED_COMMIT`), are MCP envs: :class:`OpenEnvMCPInProcess` plays them as their WebSocket handler does
(``reset(seed=...)``, then ``await env.step_async(CallToolAction(...))``), a reply's ``<tool_call>`` as that call and
any other reply as the env's submission tool called with the reply (a harness that submits the final text).
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import gymnasium as gym

__all__ = ["COMMIT", "QED_COMMIT", "OpenEnvMCPInProcess", "OpenEnvReasoningGym", "build", "build_mcp", "extract",
           "finqa_reward", "qed_judge_policy"]

#: The OpenEnv commit whose envs are audited.
COMMIT = "685de411e5f77286b0fd94798d42c4467cf8a1bc"
#: The last commit holding envs/qed_math_env (on no branch of the repository now; `git log --all -- envs/qed_math_env`).
QED_COMMIT = "389980d73452a892dba6a9af52faab09c2f0d285"
_ROOT_ENV = "ECOSYSTEM_OPENENV_ROOT"


def extract(git_dir: str, directory: str) -> str:
    """``envs/reasoning_gym_env`` and ``envs/finqa_env`` at :data:`COMMIT`, ``envs/qed_math_env`` at
    :data:`QED_COMMIT`, into ``directory``; the envs' root."""
    root = os.path.join(directory, "openenv_envs")
    os.makedirs(root, exist_ok=True)
    for commit, paths in ((COMMIT, ["envs/reasoning_gym_env", "envs/finqa_env"]), (QED_COMMIT, ["envs/qed_math_env"])):
        if not os.path.isdir(os.path.join(root, os.path.basename(paths[0]))):
            archive = subprocess.run(["git", "--git-dir", git_dir, "archive", commit, *paths],
                                     check=True, capture_output=True).stdout
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


def _payload(result: Any) -> Any:
    """What an MCP tool returned, out of fastmcp's CallToolResult (``data``, else ``structured_content``)."""
    for key in ("data", "structured_content"):
        value = getattr(result, key, None)
        if value is not None:
            return value
    return result


class OpenEnvMCPInProcess(gym.Env[str, str]):
    """An OpenEnv MCPEnvironment played as its WebSocket handler plays it (module docstring).

    ``reward_from_result``: the reward and ``done`` are read from the submission tool's result (``reward``,
    ``done``), as the env's own client reads them, because its ``step_async`` leaves the observation's at their
    defaults (qed_math); otherwise they are the observation's (finqa sets them). The text the policy sees is the
    observation as the server serializes it.
    """

    def __init__(self, server_env: Any, submit_tool: str, submit_argument: str, *, reward_from_result: bool,
                 step_budget: int, gold: Callable[[Any], list[str]]) -> None:
        import asyncio

        from gym_integrity.envs.base import MAX_TEXT_CHARS
        from gym_integrity.spaces import UnicodeText

        self.server_env = server_env
        self.submit_tool, self.submit_argument = submit_tool, submit_argument
        self.reward_from_result = reward_from_result
        self.step_budget = step_budget
        self._gold = gold  # the current item's gold, read from the server env (the privileged hook)
        self.observation_space = UnicodeText(MAX_TEXT_CHARS, min_length=0)
        self.action_space = UnicodeText(MAX_TEXT_CHARS, min_length=0)
        self._loop = asyncio.new_event_loop()  # the server's loop: every step_async runs on this one
        listed = self._loop.run_until_complete(server_env._async_list_tools())
        self.tools = [{"type": "function", "function": {"name": t.name, "description": t.description or "",
                                                        "parameters": getattr(t, "inputSchema", {}) or {}}}
                      for t in listed]

    def _wire(self, obs: Any) -> str:
        from openenv.core.env_server.serialization import serialize_observation

        return json.dumps(serialize_observation(obs), default=str)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        obs = self.server_env.reset(seed=seed, **(options or {}))
        return self._wire(obs), {}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        from openenv.core.env_server.mcp_types import CallToolAction

        from gym_integrity.audit.adapters_openenv import parse_tool_call

        call = parse_tool_call(action) if isinstance(action, str) else None
        name, arguments = call if call is not None else (self.submit_tool, {self.submit_argument: str(action)})
        obs = self._loop.run_until_complete(self.server_env.step_async(CallToolAction(tool_name=name,
                                                                                      arguments=arguments)))
        reward, done = float(obs.reward or 0.0), bool(obs.done)
        value = _payload(getattr(obs, "result", None))
        if self.reward_from_result and name == self.submit_tool and isinstance(value, dict) and "reward" in value:
            reward, done = float(value["reward"] or 0.0), bool(value.get("done", True))
        info = dict(value) if isinstance(value, dict) else {}
        return self._wire(obs), reward, done, False, info

    def gold_answers(self) -> list[str]:
        return self._gold(self.server_env)

    def close(self) -> None:
        if self._loop.is_closed():
            return
        stop = getattr(self.server_env, "shutdown_verifier_service", None)
        if stop is not None:
            self._loop.run_until_complete(stop())
        self._loop.close()


def _finqa(data_path: str) -> OpenEnvMCPInProcess:
    """finqa_env's server factory (its app.py's ``_env_factory``: data path, max_steps 50, task finqa)."""
    server = _import("finqa_env.server.finqa_environment")
    return OpenEnvMCPInProcess(server.FinQAEnvironment(data_path=data_path, max_steps=50, task="finqa"),
                               "submit_answer", "answer", reward_from_result=False, step_budget=50,
                               gold=lambda server_env: [str(server_env.state.ground_truth)])


def _qed(dataset_path: str, judge_url: str, mode: str) -> OpenEnvMCPInProcess:
    """qed_math_env's ``QEDMathEnvironment`` over ``dataset_path``, its judge the local stub at ``judge_url``.

    Its app.py builds ``QEDMathEnvironment()`` (the one bootstrap problem); a deployment with a dataset passes
    ``dataset_path``, as here; the judge comes from ``JUDGE_API_BASE_URL``/``JUDGE_API_KEY``/``JUDGE_MODEL``, which
    its server reads. Answer rows are graded by its MathVerifierService (math_verify in spawned worker processes).
    The episode's declared bound (what the stack enforces) is one submission, or a multi-step row's 3 attempts.
    """
    import multiprocessing
    import re

    from gym_integrity.openai_stub import STUB_JUDGE_MODEL

    # The audit's children are daemons, which multiprocessing forbids to start processes; the verifier service
    # starts a pool (as for GEM's and NeMo-Gym's graders).
    multiprocessing.current_process().daemon = False
    os.environ.update(JUDGE_API_BASE_URL=judge_url, JUDGE_API_KEY="audit-stub", JUDGE_MODEL=STUB_JUDGE_MODEL)
    server = _import("qed_math_env.server.qed_math_environment")

    def gold(server_env: Any) -> list[str]:
        # Answer rows hold the gold boxed (the env boxes it); a proof row's gold is its reference proof.
        reference = str((server_env._current_problem or {}).get("reference_solution", ""))
        boxed = re.fullmatch(r"\\boxed\{(.*)\}", reference.strip(), re.DOTALL)
        return [boxed.group(1) if boxed else reference]

    env = OpenEnvMCPInProcess(server.QEDMathEnvironment(dataset_path=dataset_path), "submit_proof", "proof",
                              reward_from_result=True, step_budget=3 if mode == "multi_step" else 1, gold=gold)
    if mode != "answer":
        # A proof is submitted as the text it is (the auditor's default wraps an answer in <answer> and \\boxed{}).
        env.audit_answer_action = lambda answer: answer  # type: ignore[attr-defined]
    return env


def build_mcp(name: str, stacked: bool = False, root: str = "", **kwargs: Any) -> gym.Env:
    """What each audit child builds for an MCP target: ``finqa`` (``data_path=``) or ``qed`` (``dataset_path=``,
    ``judge_url=``, ``mode=``), inside ``integrity_stack`` if ``stacked``."""
    os.environ[_ROOT_ENV] = root
    env: gym.Env = _finqa(**kwargs) if name == "finqa" else _qed(**kwargs)
    if stacked:
        from gym_integrity.wrappers import integrity_stack

        env = integrity_stack(env)
    return env


def qed_judge_policy(rows_path: str) -> dict[str, str]:
    """The stub judge's policy for the proof rows: ``<score>7</score>`` for a proof that starts with the item's own
    reference solution, ``<score>0</score>`` for anything else (an exact judge, so that what the audit finds is the
    env's, not a lenient judge's). A key is the end of the env's v2 evaluator prompt as it renders for that item:
    its marking scheme, then the proof."""
    rubric = _import("qed_math_env.server.rubric")
    policy = {"": "<assessment>Exact test judge: not this item's reference proof.</assessment>\n<score>0</score>"}
    with open(rows_path, encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            key = f"{rubric.parse_schema(row['rubrics'])}\n\n**Proof Solution**\n{row['solution']}"
            policy[key] = "<assessment>Exact test judge: the item's reference proof.</assessment>\n<score>7</score>"
    return policy

"""verifiers (v1 API) on our envs: a Taskset of seeded items, an Env that plays the stacked env as the user, a chat harness.

verifiers loads a taskset by a top-level module name, so importing this
module makes it importable as :data:`TASKSET_ID` (``"gym_integrity_verifiers"``);
then verifiers' own eval runs it (docs/trainers.md). ``python -m
gym_integrity.integrations.verifiers ARGS`` is verifiers' ``vf-eval ARGS``
with the taskset loadable (``vf-eval`` alone cannot import it)::

    python -m gym_integrity.integrations.verifiers gym_integrity_verifiers --env.taskset.env-id FinQA-v0 \\
        -n 8 -r 4 --model m --client.base-url http://127.0.0.1:8000/v1 --no-push

or from Python::

    from verifiers.v1.cli.eval.runner import run_eval
    from verifiers.v1.configs.cli.eval import EvalConfig
    config = EvalConfig.model_validate({"env": {"taskset": {"id": TASKSET_ID, "env_id": "FinQA-v0"}},
                                        "model": "m", "client": {"base_url": url}, "push": False})
    episodes = asyncio.run(run_eval(config))

* :class:`GymTaskset` yields one task per item: the prompt is the first
  observation of ``reset(seed=s)`` through the registered stack, the task keeps
  ``env_id``, ``seed`` and the public ``problem_id`` (never a gold: HideInfoKeys
  has run). Seeds are the first from ``seed`` up whose items differ, as for TRL.
  ``-r N`` rollouts of one task share its seed: a GRPO group.
* :class:`GymEnv` runs one episode per rollout on its own env: each assistant
  reply is a ``step`` (with the provider's completion-token count as
  :class:`~gym_integrity.protocol.TrainerAction`'s ``num_tokens``), each
  observation the next user turn, until the env ends. Multi-turn and tool envs
  (FinQA-v0: ``<tool_call>`` text, the format its first observation states)
  play the same way. The reward is the env's, recorded as ``gym_integrity``;
  verdict, problem id and the env's metrics go on ``trace.info`` and
  ``trace.metrics``.
* A **no-verdict** (the judge or a worker could not decide) raises
  :class:`NoVerdict`, a ``verifiers`` ``TaskError``: verifiers records it on the
  trace (``ok=False``, ``stop_condition="noverdict_error"``, ``errors``) and on the
  episode, which its trainers and ``--resume`` treat as a failed rollout, never
  as a 0.0 sample.
* :class:`GymChatHarness` is verifiers' own tool-less chat program (the ``null``
  harness) run on this interpreter: the stock one builds a uv environment for
  it first, which needs uv and a package index at rollout time.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from typing import Any, SupportsFloat

try:
    import verifiers.v1 as vf
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError(
        "gym_integrity.integrations.verifiers needs verifiers: pip install 'gym-integrity[verifiers]'"
    ) from exc
from pydantic import Field
from verifiers.v1.harnesses.null import NullHarness
from verifiers.v1.harnesses.utils.launch import CHAT_PROGRAM_SOURCE

from gym_integrity.checks import check_int
from gym_integrity.integrations.items import check_item, make_registered
from gym_integrity.protocol import TrainerAction
from gym_integrity.seeding import distinct_item_seeds

__all__ = [
    "GymTaskset",
    "GymTasksetConfig",
    "GymTask",
    "GymData",
    "GymEnv",
    "GymEnvConfig",
    "GymChatHarness",
    "NoVerdict",
    "TASKSET_ID",
    "REWARD_NAME",
    "main",
]

#: The taskset id verifiers imports this module by (a top-level name: verifiers' loader takes no dotted path).
TASKSET_ID = "gym_integrity_verifiers"
if __name__ != "__main__":  # run as a script, the real module (imported below) takes the name
    sys.modules.setdefault(TASKSET_ID, sys.modules[__name__])
#: The name of the env's reward on ``trace.rewards``.
REWARD_NAME = "gym_integrity"
#: Tasks a taskset makes when ``num_tasks`` is None and the env does not say how many items it has.
_MAX_TASKS = 10_000


class NoVerdict(vf.TaskError):
    """The env's grader could not decide (``info["no_verdict"]``): a failed rollout, not a 0.0 sample."""


class GymTasksetConfig(vf.TasksetConfig):
    """Which env, its options, and which items (``--env.taskset.env-id`` etc. on verifiers' CLI)."""

    env_id: str = ""
    """A registered id (``gym_integrity.register_env`` included), or ``"module:Id-v0"`` to import it first."""
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Anything ``gym_integrity.make`` takes (env options and the stack's switches)."""
    num_tasks: int | None = None
    """How many items; None: one per item the env draws from, at most 10,000."""
    seed: int = 0
    """The first item's seed."""


class GymData(vf.TaskData):
    """One item: how to pick it again. Rides on every trace (``trace.task.data``); holds no gold."""

    env_id: str
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    seed: int
    problem_id: str = ""


class GymTask(vf.Task[GymData]):
    """A seeded item of a registered env (all behaviour is :class:`GymEnv`'s)."""

    @property
    def key(self) -> str:
        return f"{self.data.env_id}#{self.data.seed}"


class GymTaskset(vf.Taskset[GymTask, GymTasksetConfig]):
    """One task per distinct item of ``config.env_id``, its prompt the stacked env's first observation."""

    def load(self) -> Iterator[GymTask]:
        config = self.config
        env = make_registered("GymTasksetConfig", config.env_id, config.env_kwargs)
        try:
            count = config.num_tasks
            if count is None:
                count = min(int(getattr(env.unwrapped, "num_items", None) or _MAX_TASKS), _MAX_TASKS)
            check_int("GymTasksetConfig.num_tasks", count, low=1)
            check_int("GymTasksetConfig.seed", config.seed, low=0)
            rows = []
            for seed in distinct_item_seeds(env, count, config.seed):
                observation, info = env.reset(seed=seed)
                rows.append((seed, observation, str(info.get("problem_id", ""))))
        finally:
            env.close()
        for seed, observation, problem_id in rows:
            yield GymTask(
                GymData(
                    name=f"{config.env_id}#{seed}",
                    id=problem_id or None,
                    prompt=observation,
                    env_id=config.env_id,
                    env_kwargs=dict(config.env_kwargs),
                    seed=seed,
                    problem_id=problem_id,
                ),
                config.task,
            )


def _completion_tokens(trace: Any) -> int | None:
    """The last model call's completion tokens as the provider reported them (never read from the text)."""
    calls = getattr(trace, "calls", None) or []
    usage = getattr(calls[-1], "usage", None) if calls else None
    tokens = getattr(usage, "completion_tokens", None)
    return tokens if isinstance(tokens, int) and tokens >= 0 else None


def _record_info(trace: Any, info: dict[str, Any]) -> None:
    """Verdict, problem id and the env's numeric metrics onto the trace (``gym_integrity/<name>``)."""
    for key in ("problem_id", "verdict", "no_verdict", "cause"):
        if key in info:
            trace.info[f"gym_integrity_{key}"] = info[key]
    metrics = info.get("metrics")
    if isinstance(metrics, dict):
        for name, value in metrics.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                trace.record_metric(f"gym_integrity/{name}", float(value))


class GymEnvConfig(vf.EnvConfig):
    """The one role: ``player`` (``--env.player.*``)."""

    # A local subprocess by default: the chat program needs no sandbox, and a remote one would need a tunnel.
    player: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())


class GymEnv(vf.Env[GymEnvConfig]):
    """One episode of a registered env per rollout, the env playing the user (as verifiers' TextArena env does)."""

    async def run(self, task: GymTask, agents: Any) -> None:
        data = task.data
        # Envs block (worker pools, the judge over HTTP): every env call runs off the event loop.
        env = await asyncio.to_thread(make_registered, "GymEnv", data.env_id, data.env_kwargs)
        try:
            _, info = await asyncio.to_thread(env.reset, seed=data.seed)
            check_item("GymEnv", data.seed, data.problem_id, info)
            reward: SupportsFloat = 0.0
            ended, info = False, {}
            async with agents.player.interaction(task) as interaction:
                segment = await interaction.turn()
                while not segment.terminated:
                    action = TrainerAction(segment.last_reply, num_tokens=_completion_tokens(interaction.trace))
                    observation, reward, terminated, truncated, info = await asyncio.to_thread(env.step, action)
                    if terminated or truncated:
                        ended = True
                        break
                    segment = await interaction.turn(observation)
                trace = interaction.trace
                _record_info(trace, info)
                if ended and info.get("no_verdict"):
                    # Raised inside the interaction: verifiers records it on this trace and on the episode.
                    raise NoVerdict(
                        f"{data.env_id} seed {data.seed}: no verdict ({info.get('verdict')}): "
                        f"{info.get('cause', 'the grader could not decide')}"
                    )
            trace.info["gym_integrity_ended"] = ended
            if ended or trace.ok:
                # A rollout the model stopped before the env ended answered nothing: 0.0, like TRL's get_reward().
                # One that failed (a provider error) gets no reward at all: verifiers has its error.
                trace.record_reward(REWARD_NAME, float(reward) if ended else 0.0)
        finally:
            await asyncio.to_thread(env.close)


class GymChatHarness(NullHarness):
    """verifiers' null harness (its chat program, MCP tools included) run by this interpreter instead of a uv env.

    The program needs what verifiers itself depends on (openai, mcp, httpx,
    httpx2, tenacity, certifi), so this interpreter has it. The script is
    registered under the path the runtime would have built with uv; a runtime
    without that cache (a container) falls back to uv.
    """

    async def setup(self, runtime: Any) -> None:
        interpreters = getattr(runtime, "_uv_interpreters", None)
        if isinstance(interpreters, dict) and runtime.type == "subprocess":
            import hashlib

            data = CHAT_PROGRAM_SOURCE.encode()
            directory = runtime.scripts_dir if runtime.user is None else f"{runtime.scripts_dir}-{runtime.user}"
            path = f"{directory}/{hashlib.sha256(data).hexdigest()}.py"
            await runtime.write(path, data)
            interpreters[path] = sys.executable
            return
        await super().setup(runtime)


def main(argv: list[str] | None = None) -> None:
    """verifiers' ``vf-eval`` with this taskset importable under :data:`TASKSET_ID`."""
    import importlib

    importlib.import_module("gym_integrity.integrations.verifiers")  # the real module, not this script's copy
    from verifiers.v1.cli.eval.main import main as vf_eval

    vf_eval(argv)


if __name__ == "__main__":
    main()

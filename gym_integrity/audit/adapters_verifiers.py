"""A verifiers v1 taskset and its rewards, loaded as ``vf-eval`` loads them, as the text env the auditor plays.

``VerifiersEnv("my_taskset", **options)`` resolves ``my_taskset`` through
verifiers' own loader (``EnvConfig.model_validate({"taskset": {"id": ...,
**options}})`` then ``load_taskset``: the module or a ``verifiers.v1.tasksets``
package, its ``Taskset`` subclass from ``__all__``, its config with the options
validated by it), takes the first ``num_tasks`` tasks, and plays each as one
episode of a single-turn rollout: ``reset(seed)`` shows task ``seed % n``'s
prompt, ``step(text)`` records ``text`` as the model's reply on a verifiers
``Trace`` (the prompt messages, then the reply) and runs the task's own
``score`` (its ``@vf.reward`` functions and plugged judges, offline: signals
that need a runtime are skipped, as verifiers skips them) once; the reward is
``trace.reward``; with ``runtime="subprocess"`` the signals that need a runtime run
in verifiers' own local ``SubprocessRuntime`` (as ``vf-eval`` runs them on its
subprocess runtime: a taskset whose reward runs a script, such as its bundled
gsm8k's ``uv`` verifier). As for a reward function (``adapters_reward``), steps after
the end get the end's transition back: a rollout is scored once.

The gold (privileged ``gold_answers()``) is the task data's ``gold_column``
field, by default the first of ``adapters_reward.GOLD_COLUMNS`` it has
(``answer``...). Multi-turn envs (user simulators, tools in a runtime) are not
played: only the reply-scoring half of a taskset is audited here.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from gym_integrity.audit.adapters_reward import GOLD_COLUMNS, RewardFunctionEnv
from gym_integrity.checks import check_int, check_type

try:
    import verifiers.v1 as vf
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError(
        "gym_integrity.audit.adapters_verifiers needs verifiers: pip install 'gym-integrity[verifiers]'"
    ) from exc
from verifiers.v1.state import state_cls
from verifiers.v1.utils.loaders import load_taskset

__all__ = ["VerifiersEnv", "load_tasks", "score_reply", "start_runtime"]


def load_tasks(taskset_id: str, num_tasks: int = 64, **options: Any) -> list[Any]:
    """The first ``num_tasks`` tasks of ``taskset_id``, loaded through verifiers' own config and loader."""
    check_type("verifiers taskset id", taskset_id, str, "a taskset module, e.g. 'my_taskset'")
    check_int("verifiers num_tasks", num_tasks, low=1)
    config = vf.EnvConfig.model_validate({"taskset": {"id": taskset_id, **options}})
    return list(itertools.islice(iter(load_taskset(config.taskset)), num_tasks))


def start_runtime(kind: str | None) -> Any:
    """The runtime the task's runtime signals run in: None (offline: they are skipped) or ``"subprocess"``."""
    if kind is None:
        return None
    if kind != "subprocess":
        raise ValueError(f"verifiers runtime must be None or 'subprocess', got {kind!r}")
    from verifiers.v1.runtimes.subprocess import SubprocessConfig, SubprocessRuntime

    runtime = SubprocessRuntime(SubprocessConfig())
    asyncio.run(runtime.start())
    return runtime


def score_reply(task: Any, reply: str, runtime: Any = None) -> float:
    """The task's own score of a rollout whose one model reply is ``reply``: ``trace.reward``."""
    trace = vf.Trace(
        task=vf.TraceTask(type=type(task).__name__, data=task.data, key=task.key, hash=task.hash),
        state=state_cls(type(task))(),
        agent=vf.AgentInfo(config=vf.AgentConfig(), name="gym-integrity-audit", trainable=False),
    )
    prompt = task.data.prompt
    messages = [vf.UserMessage(content=prompt)] if isinstance(prompt, str) else list(prompt or [])
    if task.data.system_prompt:
        messages.insert(0, vf.SystemMessage(content=task.data.system_prompt))
    for message in messages:
        trace.nodes.append(vf.MessageNode(parent=len(trace.nodes) - 1 if trace.nodes else None, message=message))
    trace.nodes.append(
        vf.MessageNode(
            parent=len(trace.nodes) - 1 if trace.nodes else None,
            message=vf.AssistantMessage(content=reply),
            sampled=True,
        )
    )
    trace.is_completed = trace.ok = True
    asyncio.run(task.score(trace, runtime))
    return float(trace.reward)


def VerifiersEnv(
    taskset_id: str, *, num_tasks: int = 64, gold_column: str | None = None, runtime: str | None = None, **options: Any
) -> RewardFunctionEnv:
    """A verifiers taskset's tasks and rewards as a :class:`RewardFunctionEnv` (see the module docstring)."""
    fields = (*GOLD_COLUMNS, gold_column) if gold_column else GOLD_COLUMNS
    rows = [
        {
            "prompt": task.data.prompt_text,
            "task": task,
            **{k: v for k, v in task.data.model_dump().items() if k in fields},
        }
        for task in load_tasks(taskset_id, num_tasks, **options)
    ]

    live = start_runtime(runtime)

    def task_score(prompts: list[Any], completions: list[str], task: list[Any], **columns: Any) -> list[float]:
        return [score_reply(t, text, live) for t, text in zip(task, completions)]

    task_score.__qualname__ = f"verifiers[{taskset_id}].score"
    return RewardFunctionEnv(task_score, rows, style="trl", prompt_column="prompt", gold_column=gold_column)

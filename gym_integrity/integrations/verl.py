"""verl on our envs: ``compute_score`` for its reward loop, and an agent loop that plays whole episodes.

verl (0.9) takes a reward function and multi-turn rollouts at two places; this
module fills both, and writes the rows they read:

* :func:`make_rows`: rows for verl's ``RLHFDataset`` (write them to parquet):
  ``prompt`` (the stacked env's first observation as a chat), ``data_source``
  (the env id), ``agent_name``, ``reward_model.ground_truth`` (the public
  ``problem_id``: verl requires the key, and no gold leaves the env) and
  ``extra_info`` (``env_id``, ``seed``, ``problem_id``, ``env_kwargs`` as JSON).
* :func:`compute_score`: a ``reward.custom_reward_function`` (``path:
  pkg://gym_integrity.integrations.verl``, ``name: compute_score``). verl's
  reward managers call it once per response; it grades the response as the
  first step of the row's item (``reset(seed=extra_info["seed"])``) through
  the registered stack. verl passes it no token count, so length shaping gets
  the rollout module's estimate (one token per 4 characters).
* :class:`GymAgentLoop`: a verl agent loop (rows with ``agent_name:
  gym_integrity``, registered through a two-line YAML at
  ``actor_rollout_ref.rollout.agent.agent_loop_config_path``). It plays the
  row's episode: each model turn is one ``step`` carrying its exact token
  count, each observation the next user turn (FinQA's ``<tool_call>`` text and
  tool results, QEDMath's feedback between attempts) until the env ends or
  ``rollout.response_length`` runs out. The episode's reward (its final
  step's, as everywhere in this package) is the trajectory's ``reward_score``,
  so verl's reward loop does not grade it again.

Both return the same reward extras, ``score``, ``no_verdict`` (1.0/0.0),
``ended``, ``verdict``, ``num_tokens`` and ``steps``: verl stacks the extras of
a batch by the first response's keys, and logs their means in validation.

**No-verdicts** (the judge or a verifier could not decide) follow
``no_verdict``: ``"fail"`` (the default) raises :class:`~gym_integrity.exceptions.NoVerdictError`, so the
trajectory fails; verl 0.9's trainer (``trainer.use_v1``, its default) leaves
a failed trajectory out of its group and trains the group on the rest
(``trainer.v1.sampler.sync_refill_failed_groups=True`` replaces a group left
with none; the async trainers evict and refill it). ``"flag"`` is for the
legacy trainer, where an exception stops the step: the score is 0.0 with
``no_verdict`` 1.0, and the agent loop also zeroes the trajectory's
``response_mask`` so none of its tokens trains (its 0.0 still sits in its
GRPO group's mean).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast
from uuid import uuid4

try:
    from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopMetrics, AgentLoopOutput, register
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError(
        "gym_integrity.integrations.verl needs verl: pip install 'gym-integrity[verl]' (docs/trainers.md)"
    ) from exc
from verl.utils.profiler import simple_timer

from gym_integrity.checks import check_choice, check_int, check_str
from gym_integrity.exceptions import NoVerdictError
from gym_integrity.integrations.items import check_item, first_observations, make_registered
from gym_integrity.rollout.conversation import Completion, Conversation, Episode

__all__ = [
    "AGENT_NAME",
    "NO_VERDICT_POLICIES",
    "GymAgentLoop",
    "NoVerdictError",
    "close_envs",
    "compute_score",
    "make_rows",
]

#: The agent loop's name: rows' ``agent_name``, and the ``name`` of its entry in the agent loop YAML.
AGENT_NAME = "gym_integrity"
#: What a no-verdict does: ``"fail"`` the trajectory (verl drops it) or ``"flag"`` it (0.0, ``no_verdict`` 1.0).
NO_VERDICT_POLICIES = ("fail", "flag")


@dataclass(frozen=True)
class _Row:
    """What picks a row's item again: the id, the seed, the public problem id and the env kwargs (canonical JSON)."""

    env_id: str
    seed: int
    problem_id: str | None
    env_kwargs: str


def make_rows(
    env_id: str, num_problems: int, seed: int = 0, *, agent_name: str = AGENT_NAME, **env_kwargs: Any
) -> list[dict[str, Any]]:
    """verl dataset rows for ``num_problems`` distinct items of ``env_id`` from ``seed`` up (see the module doc).

    ``agent_name`` picks the agent loop: :data:`AGENT_NAME` plays whole
    episodes; verl's ``"single_turn_agent"`` generates once and leaves the
    grading to :func:`compute_score`.
    """
    check_str("make_rows agent_name", agent_name)
    try:
        kwargs_json = json.dumps(env_kwargs, sort_keys=True)  # parquet keeps one column type: the kwargs as text
    except TypeError as exc:
        raise TypeError(f"make_rows: env kwargs must be JSON data to travel in a row ({exc})") from None
    return [
        {
            "data_source": env_id,
            "prompt": [{"role": "user", "content": observation}],
            "ability": "gym_integrity",
            "agent_name": agent_name,
            "reward_model": {"style": "rule", "ground_truth": problem_id},
            "extra_info": {"env_id": env_id, "seed": row_seed, "problem_id": problem_id, "env_kwargs": kwargs_json},
        }
        for row_seed, observation, problem_id in first_observations("make_rows", env_id, num_problems, seed, env_kwargs)
    ]


def _row(where: str, data_source: Any, extra_info: Any) -> _Row:
    """The row's item from verl's ``extra_info`` (and ``data_source``, the id when ``extra_info`` has none)."""
    if extra_info is None:
        extra_info = {}
    if not isinstance(extra_info, Mapping):
        raise TypeError(f"{where}: extra_info must be a mapping, got {type(extra_info).__name__}")
    env_id = check_str(f"{where} env_id", extra_info.get("env_id") or data_source)
    if extra_info.get("seed") is None:
        raise ValueError(f"{where}: extra_info needs a 'seed' to pick the item again (make_rows writes one)")
    seed = extra_info["seed"]
    if hasattr(seed, "__index__") and not isinstance(seed, bool):
        seed = int(seed)  # a numpy int from a parquet column
    seed = check_int(f"{where} extra_info['seed']", seed, low=0)
    env_kwargs = extra_info.get("env_kwargs") or {}
    if isinstance(env_kwargs, str):
        env_kwargs = json.loads(env_kwargs)
    if not isinstance(env_kwargs, Mapping):
        raise TypeError(
            f"{where}: extra_info['env_kwargs'] must be a mapping or its JSON, got {type(env_kwargs).__name__}"
        )
    problem_id = extra_info.get("problem_id")
    return _Row(
        env_id, seed, None if problem_id is None else str(problem_id), json.dumps(dict(env_kwargs), sort_keys=True)
    )


def _start(where: str, env: Any, row: _Row) -> Conversation:
    """Reset ``env`` to the row's item; the episode's conversation, its first message the first observation."""
    observation, info = env.reset(seed=row.seed)
    check_item(where, row.seed, row.problem_id, info)
    episode = Episode(
        0,
        row.seed,
        problem_id=info.get("problem_id"),
        provenance={"env_id": row.env_id, "env_kwargs": json.loads(row.env_kwargs)},
    )
    return Conversation(episode, observation, tools=None)


def _step(env: Any, conversation: Conversation, text: str, num_tokens: int | None) -> str:
    """The model's turn as one step (``num_tokens`` None: estimated); the observation that follows it."""
    conversation.add_completion(Completion(text, completion_tokens=num_tokens))
    action, call = conversation.next_action()
    observation, reward, terminated, truncated, info = env.step(action)
    conversation.observe(call, observation, reward, terminated, truncated, info)
    return observation


def _score(where: str, episode: Episode, no_verdict: str) -> dict[str, Any]:
    """The reward extras (the same keys for every response: verl stacks them by the first one's)."""
    if episode.no_verdict and no_verdict == "fail":
        source = episode.provenance.get("env_id")
        raise NoVerdictError(
            f"{where}: {source} seed {episode.seed} ({episode.problem_id}): no verdict "
            f"({episode.verdict}): {episode.cause}"
        )
    graded = episode.ended and not episode.no_verdict
    return {
        "score": episode.reward if graded else 0.0,
        "no_verdict": float(episode.no_verdict),
        "ended": float(episode.ended),
        "verdict": str(episode.verdict or ""),
        "num_tokens": int(episode.completion_tokens),
        "steps": int(episode.steps),
    }


_local = threading.local()
_envs_lock = threading.Lock()
_all_envs: list[Any] = []
_generation = [0]  # close_envs() starts a new one: every thread's cached envs are then stale


def _env(row: _Row) -> Any:
    """This thread's env for the row's id and kwargs (verl's reward managers score on a thread pool)."""
    cached = getattr(_local, "envs", None)
    if cached is None or cached[0] != _generation[0]:
        cached = _local.envs = (_generation[0], {})
    envs: dict[tuple[str, str], Any] = cached[1]
    env = envs.get((row.env_id, row.env_kwargs))
    if env is None:
        env = envs[(row.env_id, row.env_kwargs)] = make_registered(
            "compute_score", row.env_id, json.loads(row.env_kwargs)
        )
        with _envs_lock:
            _all_envs.append(env)
    return env


def close_envs() -> None:
    """Close every env :func:`compute_score` made (in any thread), releasing the shared services."""
    with _envs_lock:
        envs, _all_envs[:] = list(_all_envs), []
        _generation[0] += 1
    for env in envs:
        env.close()


def compute_score(
    data_source: Any,
    solution_str: str,
    ground_truth: Any = None,
    extra_info: Any = None,
    *,
    no_verdict: str = "fail",
    **kwargs: Any,
) -> dict[str, Any]:
    """verl's reward function signature: the response graded as the row's first step (see the module doc).

    ``ground_truth`` is not read (the gold stays in the env); ``no_verdict``
    comes from ``custom_reward_function.reward_kwargs``; other keywords verl
    passes (a reward router's address) are ignored. Returns the reward extras,
    ``score`` first; a no-verdict raises ``NoVerdictError`` under ``"fail"``.
    """
    check_choice("compute_score no_verdict", no_verdict, NO_VERDICT_POLICIES)
    if not isinstance(solution_str, str):
        raise TypeError(f"compute_score: solution_str must be a str, got {type(solution_str).__name__}")
    row = _row("compute_score", data_source, extra_info)
    env = _env(row)
    conversation = _start("compute_score", env, row)
    _step(env, conversation, solution_str, None)
    return _score("compute_score", conversation.episode, no_verdict)


class GymAgentLoop(AgentLoopBase):
    """verl's agent loop over one stacked env per trajectory (see the module doc).

    verl builds it per trajectory with ``hydra.utils.instantiate`` from the
    agent loop YAML entry, whose extra keys come here: ``no_verdict`` (one of
    :data:`NO_VERDICT_POLICIES`).
    """

    def __init__(self, *args: Any, no_verdict: str = "fail", **kwargs: Any) -> None:
        kwargs.pop("tools", None)  # verl's tool list: our envs' tools are played through their text protocol
        super().__init__(*args, **kwargs)
        self.no_verdict = check_choice("GymAgentLoop no_verdict", no_verdict, NO_VERDICT_POLICIES)
        self.response_length = int(self.rollout_config.response_length)

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        row = _row("GymAgentLoop", kwargs.get("data_source"), kwargs.get("extra_info"))
        env = await self.loop.run_in_executor(
            None, make_registered, "GymAgentLoop", row.env_id, json.loads(row.env_kwargs)
        )
        try:
            conversation = await self.loop.run_in_executor(None, _start, "GymAgentLoop", env, row)
            messages = [dict(m) for m in kwargs["raw_prompt"]]
            first = conversation.messages[-1]["content"]
            if not messages or first not in str(messages[-1].get("content", "")):
                messages.append({"role": "user", "content": first})  # a prompt without the item's question
            return await self._play(env, conversation, messages, sampling_params)
        finally:
            env.close()

    async def _play(
        self, env: Any, conversation: Conversation, messages: list[dict[str, Any]], sampling_params: dict[str, Any]
    ) -> AgentLoopOutput:
        metrics: dict[str, Any] = {}
        request_id = uuid4().hex
        token_ids = await self.ct_build_initial_tokens(messages)
        mask: list[int] = []
        logprobs: list[float] = []  # the server's on the model's tokens, 0.0 on observations; [] if it sends none
        turns = 1  # verl counts the prompt, each model turn and each observation turn
        while True:
            with simple_timer("generate_sequences", metrics):
                output = await self.server_manager.generate(
                    request_id=request_id, prompt_ids=token_ids, sampling_params=sampling_params
                )
            if metrics.get("num_preempted") is None:
                metrics["num_preempted"] = output.num_preempted if output.num_preempted is not None else -1
            merged, mask, merged_logprobs = await self.ct_merge_assistant_token(
                token_ids,
                output.token_ids,
                mask,
                logprobs if (logprobs or output.log_probs) else None,
                assistant_logprobs=output.log_probs or None,
            )
            token_ids, turns, logprobs = merged.token_ids, turns + 1, merged_logprobs or logprobs
            text = cast(Any, self.tokenizer).decode(output.token_ids, skip_special_tokens=True)
            observation = await self.loop.run_in_executor(None, _step, env, conversation, text, len(output.token_ids))
            if conversation.done or len(mask) >= self.response_length:
                break
            messages.append({"role": "assistant", "content": text})
            before = list(messages)
            messages.append({"role": "user", "content": observation})
            merged, next_mask, next_logprobs = await self.ct_merge_context_msg(
                before, messages, token_ids, mask, logprobs or None
            )
            if len(next_mask) >= self.response_length:  # no room for another turn: the episode stops unended
                break
            token_ids, mask, logprobs = merged.token_ids, next_mask, (next_logprobs or []) if logprobs else []
            turns += 1
        extras = _score("GymAgentLoop", conversation.episode, self.no_verdict)
        if extras["no_verdict"]:
            mask = [0] * len(mask)  # "flag": no token of a trajectory nobody graded trains
        size = len(mask)
        return AgentLoopOutput(
            prompt_ids=token_ids[: len(token_ids) - size],
            response_ids=token_ids[len(token_ids) - size :][: self.response_length],
            response_mask=mask[: self.response_length],
            response_logprobs=logprobs[: self.response_length] if logprobs else None,
            reward_score=extras["score"],
            num_turns=turns,
            metrics=AgentLoopMetrics(**metrics),
            extra_fields={"reward_extra_info": extras, "turn_scores": [], "tool_rewards": []},
        )


register(AGENT_NAME)(GymAgentLoop)

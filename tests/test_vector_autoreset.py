"""One autoreset convention (NEXT_STEP) for every vector env we build, and Gymnasium's RecordEpisodeStatistics
counting each episode once on each of them: sync and async make_vec, the threaded env (Ray: tests/integrations/ray)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from gymnasium.wrappers.vector import RecordEpisodeStatistics

import gym_integrity
from gym_integrity.envs.finqa import format_tool_call
from gym_integrity.vector import make_threaded_vec

KINDS = ["sync", "async", "threaded"]
RG = {"dataset": "basic_arithmetic"}
LIST_TOOLS = format_tool_call("list_tools", {})
SUBMIT_RIGHT = format_tool_call("submit_answer", {"answer": "38.2%"})   # fq002: Northwind gross margin 2024


def make(kind: str, env_id: str, n: int, **kwargs) -> gym.vector.VectorEnv:
    """Each vector kind as documented, with its defaults (no autoreset_mode given)."""
    if kind == "threaded":
        return make_threaded_vec(env_id, n, **kwargs)
    vector_kwargs = gym_integrity.ASYNC_VECTOR_KWARGS if kind == "async" else {}
    return gym.make_vec(env_id, num_envs=n, vectorization_mode=kind, vector_kwargs=vector_kwargs, **kwargs)


@pytest.mark.parametrize("kind", KINDS)
def test_every_vector_kind_autoresets_on_the_next_step(kind):
    envs = make(kind, "ReasoningGym-v0", 2, **RG)
    try:
        assert envs.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    finally:
        envs.close()


@pytest.mark.parametrize("kind", KINDS)
def test_grpo_batches_log_one_record_per_episode(kind):
    # The GRPO loop: reset(seeds) -> one step that ends every sub-env -> reset(new seeds) -> ...
    single = gym.make("ReasoningGym-v0", **RG)
    envs = RecordEpisodeStatistics(make(kind, "ReasoningGym-v0", 4, **RG))
    try:
        for seed in (1, 2, 3):
            obs, _ = envs.reset(seed=[seed] * 4)
            assert list(obs) == [single.reset(seed=seed)[0]] * 4   # the seeded problem, not an autoreset's
            _, rewards, terminated, truncated, infos = envs.step(np.array(["<answer>0</answer>"] * 4, dtype=object))
            assert terminated.all() and not truncated.any() and infos["_verdict"].all()   # every step graded
        lengths = [int(n) for n in envs.length_queue]
    finally:
        envs.close()
        single.close()
    assert lengths == [1] * 12    # 3 batches of 4: no 0-step records


@pytest.mark.parametrize("kind", KINDS)
def test_a_multi_turn_batch_logs_each_finished_episode_once(kind):
    # Sub-env 0 submits at once and is stepped on with its batch; sub-env 1 explores, then submits at step 6.
    envs = RecordEpisodeStatistics(make(kind, "FinQA-v0", 2))
    try:
        envs.reset(seed=[0, 0], options={"question_id": "fq002"})
        totals = np.zeros(2)
        for step in range(6):
            actions = [SUBMIT_RIGHT if step == 0 else LIST_TOOLS, SUBMIT_RIGHT if step == 5 else LIST_TOOLS]
            _, rewards, terminated, _, infos = envs.step(np.array(actions, dtype=object))
            totals += rewards
            if step == 1:   # sub-env 0's autoreset: a new episode, nothing graded, nothing paid
                assert rewards[0] == 0.0 and not terminated[0] and not infos["integrity"]["frozen"][0]
        records = sorted((float(r), int(n)) for r, n in zip(envs.return_queue, envs.length_queue))
        envs.reset(seed=[1, 1])   # the batch's next start: sub-env 0's unfinished episode is never logged
    finally:
        envs.close()
    assert totals.tolist() == [1.0, 1.0]
    assert records == [(1.0, 1), (1.0, 6)]


def test_plain_gymnasium_async_worker_swallows_the_step_after_a_manual_reset():
    # Why ASYNC_VECTOR_KWARGS carries its own worker: Gymnasium's without shared memory keeps the ended
    # sub-env's autoreset flag across reset(), and spends the next step on an unseeded reset.
    envs = gym.make_vec("ReasoningGym-v0", num_envs=2, vectorization_mode="async",
                        vector_kwargs={"shared_memory": False}, **RG)
    try:
        envs.reset(seed=[1, 1])
        assert envs.step(np.array(["<answer>0</answer>"] * 2, dtype=object))[2].all()
        envs.reset(seed=[2, 2])
        _, _, terminated, _, infos = envs.step(np.array(["<answer>0</answer>"] * 2, dtype=object))
    finally:
        envs.close()
    assert not terminated.any() and "verdict" not in infos   # the answer was dropped

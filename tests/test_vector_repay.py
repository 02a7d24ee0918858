"""Vector envs never repay: a finished sub-env stepped with its batch earns 0.0, in every documented vector path."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from gymnasium.wrappers.vector import RecordEpisodeStatistics

import gym_integrity
from gym_integrity.envs.finqa import format_tool_call
from gym_integrity.vector import make_threaded_vec

QID = "fq002"   # Northwind gross margin 2024: 38.2%
STEPS = 6
LIST_TOOLS = format_tool_call("list_tools", {})
SUBMIT_RIGHT = format_tool_call("submit_answer", {"answer": "38.2%"})


def _batch_actions(step: int) -> np.ndarray:
    """Sub-env 0 submits the right answer at step 0 and is then stepped with its batch;
    sub-env 1 explores with a tool until it submits at the last step."""
    first = SUBMIT_RIGHT if step == 0 else LIST_TOOLS
    second = SUBMIT_RIGHT if step == STEPS - 1 else LIST_TOOLS
    return np.array([first, second], dtype=object)


def _play(envs: gym.vector.VectorEnv) -> tuple[np.ndarray, list[dict]]:
    envs.reset(seed=[0, 0], options={"question_id": QID})
    totals = np.zeros(2)
    frozen = []
    for step in range(STEPS):
        _, rewards, terminated, truncated, infos = envs.step(_batch_actions(step))
        totals += rewards
        frozen.append({"rewards": rewards.tolist(), "frozen": infos["integrity"]["frozen"].tolist(),
                       "ended": (terminated | truncated).tolist()})
    return totals, frozen


def _make_async(vector_kwargs: dict) -> gym.vector.VectorEnv:
    return gym.make_vec("FinQA-v0", num_envs=2, vectorization_mode="async", vector_kwargs=vector_kwargs)


@pytest.mark.parametrize("path", ["async", "threaded"])
def test_a_finished_sub_env_stepped_with_its_batch_earns_nothing_more(path):
    # Autoreset disabled (asked for: the convention is NEXT_STEP, tests/test_vector_autoreset.py): ended sub-envs
    # are stepped with their batch, frozen.
    envs = (_make_async({**gym_integrity.ASYNC_VECTOR_KWARGS, "autoreset_mode": "Disabled"}) if path == "async"
            else make_threaded_vec("FinQA-v0", 2, autoreset_mode=AutoresetMode.DISABLED))
    try:
        totals, steps = _play(envs)
    finally:
        envs.close()
    assert totals.tolist() == [1.0, 1.0]                       # each sub-env's sum is its episode reward
    for later in steps[1:]:                                    # every step after sub-env 0's end
        assert later["rewards"][0] == 0.0 and later["frozen"][0] and later["ended"][0]
    assert not any(s["frozen"][1] for s in steps)              # sub-env 1 ran to its own end


def test_the_old_async_settings_repay_a_finished_sub_env():
    # The configuration before vector envs zeroed frozen rewards: TerminalFreeze's single-env
    # default ("repeat") paid sub-env 0 its 1.0 again on every step its batch took.
    envs = _make_async({"shared_memory": False, "autoreset_mode": "Disabled"})
    try:
        totals, _ = _play(envs)
    finally:
        envs.close()
    assert totals[0] == float(STEPS)


def test_sync_make_vec_resets_a_finished_sub_env_instead_of_repaying():
    envs = gym.make_vec("FinQA-v0", num_envs=2, vectorization_mode="sync")
    try:
        envs.reset(seed=[0, 0], options={"question_id": QID})
        _, rewards, terminated, _, _ = envs.step(_batch_actions(0))
        assert rewards.tolist() == [1.0, 0.0] and terminated.tolist() == [True, False]
        _, rewards, terminated, _, infos = envs.step(_batch_actions(1))   # next-step autoreset of sub-env 0
        assert rewards[0] == 0.0 and not terminated[0] and not infos["integrity"]["frozen"][0]
    finally:
        envs.close()


@pytest.mark.parametrize("path", ["async", "threaded", "sync"])
def test_record_episode_statistics_never_sees_a_repaid_reward(path):
    if path == "async":
        envs = _make_async({**gym_integrity.ASYNC_VECTOR_KWARGS, "autoreset_mode": "Disabled"})
    elif path == "threaded":
        envs = make_threaded_vec("FinQA-v0", 2, autoreset_mode=AutoresetMode.DISABLED)
    else:
        envs = gym.make_vec("FinQA-v0", num_envs=2, vectorization_mode="sync")
    envs = RecordEpisodeStatistics(envs)
    try:
        totals, _ = _play(envs)
        returns = [float(r) for r in envs.return_queue]
        lengths = [int(n) for n in envs.length_queue]
    finally:
        envs.close()
    # Every reward the vector env paid is in a logged episode, and no logged episode holds more
    # than one answer's worth: a repaid reward would show as a return above 1.0 or a sum above totals.
    assert sum(returns) == pytest.approx(float(totals.sum()))
    assert max(returns) == 1.0 and all(r in (0.0, 1.0) for r in returns)
    # With autoreset disabled, Gymnasium's wrapper logs each step an ended sub-env is stepped as a
    # 0-step episode (it reads done=True again); those carry nothing, and the real ones are exact.
    real = sorted((r, n) for r, n in zip(returns, lengths) if n > 0)
    assert real == [(1.0, 1), (1.0, STEPS)]
    assert all(r == 0.0 for r, n in zip(returns, lengths) if n == 0)


def test_a_single_env_keeps_repeating_its_final_reward_by_default():
    env = gym.make("FinQA-v0")
    env.reset(options={"question_id": QID})
    _, reward, terminated, _, _ = env.step(SUBMIT_RIGHT)
    assert (reward, terminated) == (1.0, True)
    _, reward, _, _, info = env.step(LIST_TOOLS)
    assert reward == 1.0 and info["integrity"]["frozen"]
    env.close()

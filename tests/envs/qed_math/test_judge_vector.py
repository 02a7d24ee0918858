"""ThreadedVectorEnv keeps SyncVectorEnv's layout and autoreset semantics while stepping sub-envs concurrently."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from gym_integrity.vector import ThreadedVectorEnv, make_threaded_vec

ID, KW = "ReasoningGym-v0", {"dataset": "leg_counting"}


def test_same_layout_as_sync_vector_env():
    threaded = make_threaded_vec(ID, 3, **KW)
    sync = SyncVectorEnv([lambda: gym.make(ID, **KW) for _ in range(3)])
    obs_t, info_t = threaded.reset(seed=11)
    obs_s, info_s = sync.reset(seed=11)
    assert list(obs_t) == list(obs_s) and sorted(info_t) == sorted(info_s)
    actions = np.array(["<answer>4</answer>", "nonsense", "<answer>0</answer>"], dtype=object)
    out_t, out_s = threaded.step(actions), sync.step(actions)
    assert list(out_t[0]) == list(out_s[0])
    for a, b in zip(out_t[1:4], out_s[1:4]):
        assert a.tolist() == b.tolist()
    assert sorted(out_t[4]) == sorted(out_s[4])
    assert out_t[4]["verdict"].tolist() == out_s[4]["verdict"].tolist()
    threaded.close(), sync.close()


def test_next_step_autoreset_and_reset_mask():
    envs = make_threaded_vec(ID, 2, **KW)
    first, _ = envs.reset(seed=[5, 6])
    _, _, terminated, _, _ = envs.step(np.array(["x", "y"], dtype=object))
    assert terminated.tolist() == [True, True]
    # next step: both sub-envs reset (reward 0, not graded)
    obs, rewards, terminated, _, infos = envs.step(np.array(["x", "y"], dtype=object))
    assert rewards.tolist() == [0.0, 0.0] and terminated.tolist() == [False, False]
    assert "verdict" not in infos
    # partial reset of env 1 only
    obs2, infos = envs.reset(seed=[None, 6], options={"reset_mask": np.array([False, True])})
    assert obs2[0] == obs[0] and obs2[1] == first[1]
    envs.close()


def test_same_step_autoreset_reports_final_obs_and_info():
    envs = make_threaded_vec(ID, 2, autoreset_mode=AutoresetMode.SAME_STEP, **KW)
    envs.reset(seed=0)
    _, _, terminated, _, infos = envs.step(np.array(["x", "y"], dtype=object))
    assert terminated.all()
    assert infos["final_info"]["verdict"].tolist() == ["no_answer", "no_answer"]
    assert len(infos["final_obs"]) == 2
    envs.close()


def test_disabled_autoreset_steps_an_ended_env_frozen_at_zero():
    envs = make_threaded_vec(ID, 2, autoreset_mode=AutoresetMode.DISABLED, **KW)
    envs.reset(seed=0)
    envs.step(np.array(["x", "y"], dtype=object))
    _, rewards, terminated, _, infos = envs.step(np.array(["x", "y"], dtype=object))
    assert rewards.tolist() == [0.0, 0.0] and terminated.all() and infos["integrity"]["frozen"].all()
    envs.close()


def test_a_sub_env_error_is_raised_after_the_others_finish():
    envs = make_threaded_vec(ID, 2, **KW)
    envs.reset(seed=0)
    with pytest.raises(TypeError, match="action"):
        envs.step(np.array(["ok", 42], dtype=object))
    envs.close()


def test_call_get_attr_and_bad_arguments():
    envs = make_threaded_vec(ID, 3, max_workers=2, **KW)
    assert envs.max_workers == 2
    assert envs.get_attr("step_budget") == (1, 1, 1)
    assert isinstance(envs, ThreadedVectorEnv) and repr(envs) == "ThreadedVectorEnv(ReasoningGym-v0, num_envs=3)"
    envs.close()
    with pytest.raises(ValueError, match="num_envs"):
        make_threaded_vec(ID, 0)
    with pytest.raises(ValueError, match="max_workers"):
        ThreadedVectorEnv([lambda: gym.make(ID, **KW)], max_workers=0)

"""Every registered id: Gymnasium's env checker, vector envs, spec round trip, and the contract in docs/architecture.md.

"Every" is every entry of ``gym_integrity.env_entries()``: the package's ids and
TinySum-v0, a fourth env defined in tests/support/fourth_env.py and registered through
the public API, which passes the same checks without any file of the package
naming it.
"""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import fourth_env
import gym_integrity
from gym_integrity import AuditHooks, TextEnv
from gym_integrity.envs.base import MAX_TEXT_CHARS
from gym_integrity.spaces import UnicodeText
from gym_integrity.wrappers.stack import STACK_SWITCHES

IDS = [entry.id for entry in gym_integrity.env_entries()]


def test_the_fourth_env_is_registered_through_the_public_api_only():
    assert fourth_env.ENTRY.id in IDS and fourth_env.ENTRY.id not in {e.id for e in gym_integrity.REGISTERED}
    assert len(IDS) == len(gym_integrity.REGISTERED) + 1


@pytest.fixture(autouse=True)
def _quiet_checker_warnings():
    with __import__("warnings").catch_warnings():
        __import__("warnings").simplefilter("ignore", UserWarning)
        yield


@pytest.mark.parametrize("env_id", IDS)
def test_check_env_on_raw_and_stacked(env_id):
    env = gym.make(env_id)
    check_env(env.unwrapped, skip_render_check=True)
    check_env(env, skip_render_check=True)
    env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_a_first_reset_that_raises_leaves_the_env_usable(env_id):
    """A mistyped reset option in a notebook must not break the env (Gymnasium 1.4's passive checker did)."""
    env = gym.make(env_id)
    with pytest.raises(TypeError, match=r"reset options\['bogus_option'\] is not an option"):
        env.reset(options={"bogus_option": 1})
    with pytest.raises(TypeError, match=r"reset options must be a dict"):
        env.reset(options=[1])
    obs, _ = env.reset(seed=0)
    assert isinstance(obs, str)
    assert len(env.step("an answer")) == 5
    env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_raw_contract(env_id):
    env = gym.make(env_id)
    raw = env.unwrapped
    assert isinstance(raw.observation_space, UnicodeText)
    assert isinstance(raw.action_space, UnicodeText)
    obs, info = env.reset(seed=0)
    assert isinstance(obs, str) and isinstance(info["problem_id"], str)
    assert "privileged" not in info
    assert isinstance(raw.step_budget, int) and raw.step_budget >= 1
    assert all(isinstance(a, str) for a in raw.gold_answers())
    with pytest.raises(TypeError):
        env.step(12345)
    env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_every_env_runs_on_the_base_class_and_keeps_the_hooks_the_audit_reads(env_id):
    env = gym.make(env_id)
    raw = env.unwrapped
    cls = type(raw)
    assert isinstance(raw, TextEnv)
    # The base class asks for these and has no version of its own.
    for method in ("reset", "step", "render_text", "gold_answers"):
        assert getattr(cls, method) is not getattr(TextEnv, method), f"{cls.__name__} does not define {method}"
    assert raw.observation_space == UnicodeText(MAX_TEXT_CHARS)
    assert isinstance(raw.grading_time_bound_s, float) and raw.grading_time_bound_s > 0
    obs, _ = env.reset(seed=0)
    assert raw.gold_answers(), "the audit answers with the first gold answer"
    assert env.render() == raw.render_text() and obs in raw.render_text()
    if isinstance(raw, AuditHooks):  # an env with all three hooks: the action hooks make valid actions
        assert raw.action_space.contains(raw.audit_non_answer_action())
    env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_the_env_itself_enforces_reset_first(env_id):
    """The ids are registered without OrderEnforcing: the env raises ResetNeeded itself, and renders "" first."""
    env = gym.make(env_id, render_mode="ansi")
    assert not any(type(layer).__name__ == "OrderEnforcing" for layer in _layers(env))
    assert env.render() == ""
    with pytest.raises(gym.error.ResetNeeded):
        env.step("<answer>1</answer>")
    env.reset(seed=0)
    assert len(env.step("<answer>1</answer>")) == 5
    env.close()


def _layers(env):
    while isinstance(env, gym.Wrapper):
        yield env
        env = env.env
    yield env


@pytest.mark.parametrize("env_id", IDS)
def test_the_env_keeps_none_of_the_info_dicts_it_returns(env_id):
    """Each info is new and the caller's: the env holds none after returning it (a caller may edit what it gets)."""
    import gc

    raw = gym.make(env_id).unwrapped
    infos = [raw.reset(seed=3)[1], raw.step(raw.audit_non_answer_action() if isinstance(raw, AuditHooks)
                                             else "<answer>1</answer>")[4]]
    if not raw.step_budget > 1:  # single-turn: a step after the end (no TerminalFreeze here) still builds a new one
        infos.append(raw.step("<answer>1</answer>")[4])
    infos.append(raw.reset(seed=3)[1])
    assert len({id(info) for info in infos}) == len(infos)
    for info in infos:
        holders = [ref for ref in gc.get_referrers(info) if ref is not infos]
        assert not holders, f"{type(raw).__name__} keeps an info dict it returned: {holders!r:.300}"
    raw.close()


@pytest.mark.parametrize("env_id", IDS)
def test_options_render_mode_and_stack_switches_follow_the_one_error_rule(env_id):
    cls = type(gym.make(env_id).unwrapped)
    owner = cls.config_class.__name__
    with pytest.raises(TypeError, match=rf"^{owner}\.bogus is not an option"):
        gym.make(env_id, bogus=1)
    for switch in STACK_SWITCHES:
        with pytest.raises(TypeError, match=rf"^{owner}\.{switch} is not an option") as caught:
            gym.make(env_id, **{switch: 1})
        assert f"gym_integrity.make({env_id!r}, {switch}=...)" in str(caught.value)
    with pytest.raises(ValueError, match=rf"^{cls.__name__}\.render_mode"):
        cls(render_mode="rgb_array")


@pytest.mark.parametrize("env_id", IDS)
def test_human_render_prints_what_ansi_returns(env_id, capsys):
    ansi, human = gym.make(env_id, render_mode="ansi"), gym.make(env_id, render_mode="human")
    ansi.reset(seed=1), human.reset(seed=1)
    capsys.readouterr()
    assert human.render() is None
    assert capsys.readouterr().out == ansi.render() + "\n"
    ansi.close(), human.close()


@pytest.mark.parametrize("env_id", IDS)
def test_spec_recreates_the_stack(env_id):
    env = gym.make(env_id)
    again = gym.make(env.spec)
    assert str(again) == str(env)
    assert [w.name for w in again.spec.additional_wrappers] == ["MaxStepsTruncation", "HideInfoKeys", "TerminalFreeze"]
    env.close(), again.close()


@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("mode, vector_kwargs", [("sync", {}), ("async", {"shared_memory": False})])
def test_make_vec(env_id, mode, vector_kwargs):
    vec = gym.make_vec(env_id, num_envs=2, vectorization_mode=mode, vector_kwargs=vector_kwargs)
    try:
        obs, info = vec.reset(seed=[3, 3])
        assert obs[0] == obs[1] and isinstance(obs[0], str)
        assert "privileged" not in info
        obs, reward, terminated, truncated, info = vec.step(("no idea",) * 2)
        assert reward.dtype == np.float64 and "privileged" not in info
    finally:
        vec.close()


def test_async_vector_recommended_settings_grade_every_step_after_a_manual_reset():
    # Gymnasium 1.4's AsyncVectorEnv clears its next-step autoreset flag on reset() only with shared
    # memory, which text cannot use; the documented vector_kwargs (autoreset disabled) avoid the
    # swallowed step. This is the GRPO loop: reset(seed) -> step -> reset(seed) -> step.
    vec = gym.make_vec("ReasoningGym-v0", num_envs=2, vectorization_mode="async",
                       vector_kwargs=gym_integrity.ASYNC_VECTOR_KWARGS, dataset="basic_arithmetic")
    try:
        for seed in (1, 2, 3):
            vec.reset(seed=[seed, seed])
            _, _, terminated, _, info = vec.step(("<answer>0</answer>",) * 2)
            assert terminated.all() and info["_verdict"].all(), info
    finally:
        vec.close()

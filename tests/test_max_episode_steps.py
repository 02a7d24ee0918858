"""spec.max_episode_steps where the bound is known; the TimeLimit gym.make adds for it changes nothing."""

from __future__ import annotations

import gymnasium as gym
import pytest

import gym_integrity
from gym_integrity.envs.finqa import FinQAConfig, format_tool_call
from gym_integrity.registration import REGISTERED
from gym_integrity.wrappers import MaxStepsTruncation

LIST_TOOLS = format_tool_call("list_tools", {})
SUBMIT_RIGHT = format_tool_call("submit_answer", {"answer": "38.2%"})   # fq002: Northwind gross margin 2024
QID = {"question_id": "fq002"}


def test_the_registry_declares_each_known_bound():
    bounds = {entry.id: gym.spec(entry.id).max_episode_steps for entry in REGISTERED}
    assert bounds == {"FinQA-v0": FinQAConfig().step_budget, "ReasoningGym-v0": 1,
                      "QEDMath-v0": None}   # QEDMath's attempt count is each problem's (its data's)
    env = gym.make("ReasoningGym-v0", dataset="leg_counting")
    assert env.spec.max_episode_steps == 1
    env.close()


def _chain(env: gym.Env) -> list[str]:
    names = []
    while isinstance(env, gym.Wrapper):
        names.append(type(env).__name__)
        env = env.env
    return names


def test_gym_make_adds_no_time_limit_under_the_stack_and_the_spec_keeps_each_envs_bound():
    env = gym.make("FinQA-v0")
    assert _chain(env) == ["TerminalFreeze", "HideInfoKeys", "MaxStepsTruncation"]   # TimeLimit left out
    assert env.spec.max_episode_steps == 50
    again = gym.make(env.spec)   # the spec recreates the same stack and bound
    assert _chain(again) == _chain(env) and again.spec.max_episode_steps == 50
    for other in (gym.make("FinQA-v0", step_budget=7), gym_integrity.make("FinQA-v0", max_steps=7),
                  gym.make("FinQA-v0", max_episode_steps=7)):   # the bound each env really has
        assert other.spec.max_episode_steps == 7 and gym.make(other.spec).spec.max_episode_steps == 7
        other.close()
    for e in (env, again):
        e.close()


def test_gym_makes_max_episode_steps_is_the_stacks_bound():
    env = gym.make("FinQA-v0", max_episode_steps=3)
    env.reset(options=QID)
    env.step(LIST_TOOLS)
    env.step(LIST_TOOLS)
    _, reward, terminated, truncated, info = env.step(SUBMIT_RIGHT)   # on the last step: scored, terminated
    assert (reward, terminated, truncated) == (1.0, True, False) and info["integrity"]["step_budget"] == 3
    env.close()


@pytest.mark.parametrize("budget", [3, None])
def test_an_answer_on_the_last_allowed_step_is_terminated_not_truncated(budget):
    # FinQA's default bound (50) and a step_budget= option (3): no TimeLimit flags the scored last step.
    steps = budget or FinQAConfig().step_budget
    env = gym.make("FinQA-v0", **({"step_budget": budget} if budget else {}))
    env.reset(options=QID)
    for _ in range(steps - 1):
        _, reward, terminated, truncated, _ = env.step(LIST_TOOLS)
        assert (terminated, truncated) == (False, False)
    _, reward, terminated, truncated, info = env.step(SUBMIT_RIGHT)
    assert (reward, terminated, truncated, info["verdict"]) == (1.0, True, False, "correct")
    env.reset(options=QID)
    for _ in range(steps):
        _, reward, terminated, truncated, info = env.step(LIST_TOOLS)
    assert (reward, terminated, truncated, info["verdict"]) == (0.0, False, True, "no_answer")
    env.close()


def test_a_larger_step_budget_is_not_cut_at_the_registered_bound():
    env = gym.make("FinQA-v0", step_budget=60)
    env.reset(options=QID)
    for _ in range(FinQAConfig().step_budget):
        _, _, terminated, truncated, _ = env.step(LIST_TOOLS)
        assert not (terminated or truncated)
    env.close()


def test_reasoning_gym_single_answer_is_scored_and_terminated():
    env = gym.make("ReasoningGym-v0", dataset="leg_counting")
    env.reset(seed=0)
    _, _, terminated, truncated, info = env.step("<answer>0</answer>")
    assert (terminated, truncated, info["verdict"]) == (True, False, "incorrect")
    env.close()


def test_the_stack_alone_still_bounds_an_env_with_no_time_limit():
    env = gym_integrity.make("FinQA-v0", max_steps=2)
    env.reset(options=QID)
    env.step(LIST_TOOLS)
    assert env.step(LIST_TOOLS)[2:4] == (False, True)
    assert isinstance(env.env.env, MaxStepsTruncation)
    env.close()


def test_another_envs_own_time_limit_is_kept_under_the_stack():
    # An id registered without the stack (here CartPole, bound 500): integrity_stack leaves its TimeLimit alone.
    env = gym_integrity.integrity_stack(gym.make("CartPole-v1"), max_steps=3)
    assert _chain(env) == ["TerminalFreeze", "HideInfoKeys", "MaxStepsTruncation", "TimeLimit", "OrderEnforcing",
                           "PassiveEnvChecker"]
    assert env.spec.max_episode_steps == 500
    env.close()


@pytest.mark.parametrize("kind", ["sync", "async", "threaded"])
def test_every_vector_env_we_build_carries_the_bound_in_its_spec(kind):
    from gym_integrity.vector import make_threaded_vec

    if kind == "threaded":
        envs = make_threaded_vec("FinQA-v0", 2)
    else:
        kwargs = gym_integrity.ASYNC_VECTOR_KWARGS if kind == "async" else {}
        envs = gym.make_vec("FinQA-v0", num_envs=2, vectorization_mode=kind, vector_kwargs=kwargs)
    assert envs.spec is not None and envs.spec.id == "FinQA-v0" and envs.spec.max_episode_steps == 50
    envs.close()

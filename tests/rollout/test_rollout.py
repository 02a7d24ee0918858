"""gym_integrity.rollout on the three env families and every vector env we ship, with faults: real envs and graders."""

from __future__ import annotations

import asyncio
import json

import gymnasium as gym
import numpy as np
import pytest

import gym_integrity
from gym_integrity.rollout import Completion, EndpointPolicy, acollect, batch_metrics, collect, group_advantages
from gym_integrity.openai_stub.judge_server import JudgeServer, write_policy
from gym_integrity.vector import make_threaded_vec

from first_golds import golds

RG = {"dataset": "leg_counting"}


def first_user(messages) -> str:
    return next(m["content"] for m in messages if m["role"] == "user")


def test_threaded_groups_by_seed_advantages_and_metrics():
    seeds = [3, 3, 3, 5, 5, 5]
    gold = golds("ReasoningGym-v0", set(seeds), **RG)
    turn = iter(range(100))

    def policy(chats):  # right on every other conversation it is asked about
        return [f"<answer>{gold[first_user(c)] if next(turn) % 2 == 0 else 'x'}</answer>" for c in chats]

    envs = make_threaded_vec("ReasoningGym-v0", 6, autoreset_mode="Disabled", **RG)
    try:
        episodes = collect(envs, policy, seeds=seeds)
    finally:
        envs.close()
    assert [e.seed for e in episodes] == seeds and [e.index for e in episodes] == list(range(6))
    assert [e.verdict for e in episodes] == ["correct", "incorrect"] * 3
    assert [e.reward for e in episodes] == [1.0, 0.0] * 3 and all(e.steps == 1 and e.terminated for e in episodes)
    assert episodes[0].messages[0]["role"] == "user" and episodes[0].messages[1]["role"] == "assistant"
    adv = group_advantages(episodes)
    for group in (adv[:3], adv[3:]):  # per seed: zero sum, above 0 exactly where the reward beats the group mean
        assert group.sum() == pytest.approx(0.0, abs=1e-9)
    assert (adv[[0, 2, 4]] > 0).all() and (adv[[1, 3, 5]] < 0).all()  # rewards [1, 0, 1] and [0, 1, 0]
    metrics = batch_metrics(episodes)
    assert metrics["rollout/reward_mean"] == 0.5 and metrics["rollout/verdict/correct"] == 3.0
    assert metrics["rollout/verdict/no_answer"] == 0.0 and metrics["rollout/no_verdict_rate"] == 0.0
    assert all(isinstance(v, float) for v in metrics.values())


def test_async_vector_env_multi_attempt_keeps_each_history_and_stops_at_each_end():
    kwargs = {"problem_types": ["multi_step"]}
    gold = golds("QEDMath-v0", [0, 1], **kwargs)

    # Seed 0's sub-envs answer right on their second turn; seed 1's always wrong until the attempts run out.
    seed_of = {}

    def by_seed(chats):
        out = []
        for c in chats:
            attempts = sum(m["role"] == "assistant" for m in c)
            right = seed_of[first_user(c)] == 0 and attempts >= 1
            answer = gold[first_user(c)] if right else "-12345"
            out.append({"text": f"</think>\\boxed{{{answer}}}", "completion_tokens": 10})
        return out

    for seed in (0, 1):
        env = gym_integrity.make("QEDMath-v0", **kwargs)
        seed_of[env.reset(seed=seed)[0]] = seed
        env.close()
    envs = gym.make_vec("QEDMath-v0", num_envs=4, vectorization_mode="async",
                        vector_kwargs=gym_integrity.ASYNC_VECTOR_KWARGS, **kwargs)
    try:
        episodes = collect(envs, by_seed, seeds=[0, 1, 0, 1])
    finally:
        envs.close()
    right, wrong = episodes[0], episodes[1]
    assert right.verdict == "correct" and right.steps == 2 and right.reward > 0
    assert wrong.verdict == "incorrect" and wrong.steps >= 2 and wrong.reward == 0.0
    assert [e.steps for e in episodes] == [2, wrong.steps, 2, wrong.steps]
    roles = [m["role"] for m in right.messages]
    assert roles == ["user", "assistant", "user", "assistant"]  # the env's feedback came back as the next user turn
    assert right.completion_tokens == 20 and not right.tokens_estimated
    assert right.messages[0]["content"] != wrong.messages[0]["content"]


def test_tool_env_native_calls_single_env_and_threaded():
    gold = golds("FinQA-v0", [0, 1])

    def policy(chats, tools=None):
        assert tools is not None and all(t for t in tools)  # the env's schemas reach the policy
        out = []
        for c in chats:
            if len(c) == 1:  # first turn: two calls in one completion, the second one the answer
                out.append(Completion("", [
                    {"id": "a", "name": "list_tools", "arguments": "{}"},
                    {"id": "b", "name": "submit_answer", "arguments": json.dumps({"answer": gold[first_user(c)]})},
                    {"id": "c", "name": "list_tools", "arguments": "{}"}], completion_tokens=5))
            else:
                out.append("unused")
        return out

    env = gym_integrity.make("FinQA-v0")
    try:
        (single,) = collect(env, policy, seeds=[0])
    finally:
        env.close()
    envs = make_threaded_vec("FinQA-v0", 2, autoreset_mode="Disabled")
    try:
        batch = collect(envs, policy, seeds=[0, 1])
    finally:
        envs.close()
    for episode in (single, *batch):
        assert episode.verdict == "correct" and episode.reward == 1.0 and episode.steps == 2
        assert [m["role"] for m in episode.messages] == ["user", "assistant", "tool", "tool", "tool"]
        assert episode.messages[-1]["content"] == "The episode is over."  # a call after the end is not stepped


def test_a_raising_policy_fails_its_conversations_and_a_hanging_judge_is_a_no_verdict():
    envs = make_threaded_vec("ReasoningGym-v0", 3, autoreset_mode="Disabled", **RG)

    def boom(chats):
        raise RuntimeError("the sampler broke")

    def mixed(chats):
        return ["<answer>1</answer>", ValueError("one bad sample"), "<answer>2</answer>"]

    try:
        failed = collect(envs, boom, seeds=[0, 0, 0])
        partly = collect(envs, mixed, seeds=[0, 0, 0])
    finally:
        envs.close()
    assert all(e.error[0] == "policy_raised" and "the sampler broke" in e.error[1] and e.steps == 0 for e in failed)
    assert not any(e.usable for e in failed) and np.isnan(group_advantages(failed)).all()
    assert batch_metrics(failed)["rollout/policy_errors"] == 3.0
    assert [e.error is None for e in partly] == [True, False, True] and partly[1].steps == 0
    assert np.isnan(group_advantages(partly)[1]) and not np.isnan(group_advantages(partly)[[0, 2]]).any()

    with JudgeServer("hang", hang_s=5.0) as judge:
        judge_cfg = {"base_url": judge.url, "model": "m", "timeout_s": 0.5, "max_retries": 0}
        proofs = make_threaded_vec("QEDMath-v0", 2, autoreset_mode="Disabled", problem_types=["proof"],
                                   judge=judge_cfg)
        try:
            hung = collect(proofs, lambda chats: ["</think>Proof. Trivial."] * len(chats), seeds=[1, 1])
        finally:
            proofs.close()
    assert all(e.no_verdict and e.verdict == "timeout" and e.cause for e in hung)
    assert np.isnan(group_advantages(hung)).all()
    metrics = batch_metrics(hung)
    assert metrics["rollout/no_verdict_rate"] == 1.0 and metrics["rollout/verdict/timeout"] == 2.0
    assert any(k.startswith("rollout/no_verdict_cause/") for k in metrics)


def test_trainer_token_counts_reach_length_shaping():
    kwargs = {"problem_types": ["answer"], "discount_factor": 0.999}
    gold = golds("QEDMath-v0", [0], **kwargs)
    env = gym_integrity.make("QEDMath-v0", **kwargs)
    try:
        rewards = {}
        for tokens in (0, 500):
            (episode,) = collect(env, lambda chats: [{"text": f"</think>\\boxed{{{gold[first_user(c)]}}}",
                                                      "completion_tokens": tokens} for c in chats], seeds=[0])
            rewards[tokens] = episode.reward
    finally:
        env.close()
    assert rewards[0] == 1.0 and rewards[500] == pytest.approx(0.999 ** 500, rel=1e-6)


def test_endpoint_policy_async_against_the_test_server_and_a_dead_one(tmp_path):
    gold = golds("ReasoningGym-v0", [0, 1], **RG)
    write_policy(tmp_path / "p.json", {obs: f"<answer>{g}</answer>" for obs, g in gold.items()})
    envs = make_threaded_vec("ReasoningGym-v0", 4, autoreset_mode="Disabled", **RG)

    async def run(url):
        policy = EndpointPolicy(url, "m", max_retries=0, timeout_s=5)
        try:
            return await acollect(envs, policy, seeds=[0, 0, 1, 1])
        finally:
            await policy.close()

    try:
        with JudgeServer("policy", policy_file=tmp_path / "p.json") as server:
            episodes = asyncio.run(run(server.url))
        dead = asyncio.run(run("http://127.0.0.1:9/v1"))
    finally:
        envs.close()
    assert [e.verdict for e in episodes] == ["correct"] * 4
    assert all(e.completion_tokens > 0 and e.latency_s for e in episodes)
    assert all(e.error and e.error[0] == "connection" and e.steps == 0 for e in dead)


def test_bad_arguments_fail_clearly():
    envs = gym.make_vec("ReasoningGym-v0", num_envs=2, vectorization_mode="sync",
                        vector_kwargs={"autoreset_mode": "Disabled"}, **RG)
    try:
        with pytest.raises(ValueError, match="autoreset_mode"):
            collect(envs, lambda chats: ["x"] * len(chats), seeds=[0, 0])
    finally:
        envs.close()
    env = gym_integrity.make("ReasoningGym-v0", **RG)
    try:
        with pytest.raises(TypeError, match="callable"):
            collect(env, "not a policy", seeds=[0])
        with pytest.raises(ValueError, match="returned 2 completions for 1"):
            collect(env, lambda chats: ["a", "b"], seeds=[0])
        with pytest.raises(TypeError, match="a str, a Completion or a dict"):
            collect(env, lambda chats: [42], seeds=[0])
    finally:
        env.close()


def test_sync_vector_env_next_step_autoreset_counts_only_the_first_episode():
    envs = gym.make_vec("ReasoningGym-v0", num_envs=2, vectorization_mode="sync", **RG)
    try:
        episodes = collect(envs, lambda chats: ["<answer>0</answer>"] * len(chats), seeds=[4, 4])
    finally:
        envs.close()
    assert [(e.steps, e.verdict) for e in episodes] == [(1, "incorrect"), (1, "incorrect")]

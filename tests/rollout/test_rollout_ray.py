"""gym_integrity.rollout over make_ray_vec: sub-envs on Ray actors, a multi-turn tool env (needs the [ray] extra)."""

from __future__ import annotations

import json
import os

import pytest

if os.environ.get("GYM_INTEGRITY_REQUIRE_EXTRAS") == "1":
    import ray  # noqa: F401  (the [ray] extra is installed: a missing Ray must fail, not skip)
else:
    ray = pytest.importorskip("ray")

import gym_integrity  # noqa: E402
from gym_integrity.rollout import Completion, batch_metrics, collect, group_advantages  # noqa: E402

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


def test_ray_vector_env_plays_tool_episodes_to_each_end():
    from gym_integrity.ray import make_ray_vec

    env = gym_integrity.make("FinQA-v0")
    gold = {}
    for seed in (0, 1):
        obs, _ = env.reset(seed=seed)
        gold[obs] = env.unwrapped.gold_answers()[0]
    env.close()

    def policy(chats, tools=None):
        out = []
        for c in chats:
            question = c[0]["content"]
            if len(c) == 1 and question == next(iter(gold)):  # seed 0's sub-envs look first, then answer
                out.append(Completion("", [{"id": "a", "name": "list_tools", "arguments": "{}"}]))
            else:
                out.append(Completion("", [{"id": "b", "name": "submit_answer",
                                            "arguments": json.dumps({"answer": gold[question]})}]))
        return out

    envs = make_ray_vec("FinQA-v0", 4, envs_per_actor=2, autoreset_mode="Disabled")
    try:
        episodes = collect(envs, policy, seeds=[0, 0, 1, 1])
    finally:
        envs.close()
    assert [e.steps for e in episodes] == [2, 2, 1, 1]  # each stopped at its own end
    assert all(e.verdict == "correct" and e.reward == 1.0 for e in episodes)
    assert group_advantages(episodes).tolist() == [0.0] * 4
    assert batch_metrics(episodes)["rollout/verdict/correct"] == 4.0

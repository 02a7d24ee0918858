"""The draw's labels are the scorer's classes: golds one answer is paid on share one label when the draw balances
(draw.py, ``joined``): a tolerance relative to the gold pays coin_flip's ``0.999`` on ``1`` and on the near-1 golds
the draw once counted apart, which put it above chance."""

from __future__ import annotations

import gymnasium as gym

import gym_integrity  # noqa: F401  (registers the envs)
from gym_integrity.envs.reasoning_gym import draw, draw_plans


def test_a_constant_a_tolerance_pays_on_near_golds_is_within_chance_on_coin_flip():
    env = gym.make("ReasoningGym-v0", dataset="coin_flip")
    base = env.unwrapped
    paid = {"0.999": 0.0, "1": 0.0}
    seeds = range(600)
    for seed in seeds:
        env.reset(seed=seed)
        for answer in paid:
            paid[answer] += base._grader.grade(answer, base._item, base._source).score
    plan = draw_plans.plan_for(base._key, "strict", base._sample_item, base.size)
    limit = 1 / plan.k + 0.03  # each near-1 gold a label apart, 1 alone was capped: 0.999 was paid on 0.052
    assert all(total / len(seeds) <= limit for total in paid.values()), (paid, plan.k)
    # The near-1 golds the scorer pays 0.999 on are one class with 1
    assert {"0.9990234375", "0.9997558594", "0.9998779297"} <= {a for a, name in plan.classes.items() if name == "1"}
    env.close()


def _close(answer: str, item: dict[str, str]) -> bool:
    """A scorer with an absolute tolerance of 0.1 (the shape of coin_flip's relative one)."""
    return abs(float(answer) - float(item["answer"])) <= 0.1


def test_labels_one_answer_is_paid_on_are_one_class_in_the_plan_and_the_walk():
    values = ["1"] * 20 + ["0.95"] * 10 + ["0.8"] * 10 + [str(n) for n in range(2, 32) for _ in range(3)]
    sample = [(i, {"question": f"q{i}", "answer": value}) for i, value in enumerate(values)]
    apart = draw.build_plan(sample)
    plan = draw.build_plan(sample, _close)
    # 1 and 0.95 are within the tolerance; 0.8 and 0.95 only through an answer between them (0.875 is paid on both)
    assert plan.classes == {"0.95": "1", "0.8": "1"} and plan.k == apart.k - 2
    assert dict(plan.strata)["1"] <= 1 / plan.k + draw.TARGET_MARGIN + 1e-9
    assert plan.spans[0][:5] == ("1", None, 0.8, 1.0, 2.0)
    items = dict(sample)
    # A number the sample did not show: in the span, or in the gap to the next number where the scorer joins it
    assert plan.class_of("0.9") == "1"
    assert plan.class_of("1.05", {"answer": "1.05"}, items.get, _close) == "1"
    assert plan.class_of("1.5", {"answer": "1.5"}, items.get, _close) == "1.5"
    assert plan.class_of("1.05") == "1.05"  # without the scorer, a gap number is its own label
    assert draw_plans.from_json(draw_plans.to_json(plan)) == plan
    assert "classes" not in draw_plans.to_json(apart)  # plans without joins read as before

"""Shipped draw plans (draw_plans.py): one for every dataset's default configuration, equal to the plan built at
runtime (the staleness check), used only when the fingerprint and probe match, and the same items either way."""

from __future__ import annotations

import json
import subprocess
import sys

import gymnasium as gym
import pytest

import gym_integrity  # noqa: F401  (registers the envs)
from gym_integrity.envs.reasoning_gym import draw, draw_plans
from gym_integrity.envs.reasoning_gym.config import available_datasets
from gym_integrity.envs.reasoning_gym.datasets import auto_size, dataset_key

STALE = f"the shipped draw plans are stale; rebuild them (nice'd, about half an hour): {draw_plans.REBUILD}"


def _shipped_file() -> dict:
    return json.loads(draw_plans.PLANS_FILE.read_text(encoding="utf-8"))


def test_the_file_is_built_for_the_installed_reasoning_gym_and_rule():
    assert _shipped_file()["fingerprint"] == draw_plans.fingerprint(), STALE


def test_every_datasets_default_configuration_has_a_shipped_plan():
    keys = {entry["key"] for entry in _shipped_file()["plans"].values()}
    missing = [name for name in available_datasets() if dataset_key(name, {}, None, auto_size(name, {}), 42) not in keys]
    assert missing == [], f"{missing}: {STALE}"


def test_only_generators_whose_items_differ_by_process_ship_without_a_probe():
    plans = _shipped_file()["plans"]
    unprobed = {name for name, entry in plans.items() if len(entry["probe"]) != draw_plans.PROBE_ITEMS}
    assert all(plans[name].get("reproducible") is False and not plans[name]["probe"] for name in unprobed)
    assert unprobed == {"codeio", "knight_swap", "polynomial_multiplication"}, f"docs/chance.md names these: {unprobed}"


# syllogism: two options; gcd: open answers with rare labels whose pools were filled past the sample;
# color_cube_rotation: a selection (the answer is in the question, nothing filtered); letter_counting: long-tailed.
@pytest.mark.parametrize("dataset", ["syllogism", "gcd", "color_cube_rotation", "letter_counting"])
def test_a_shipped_plan_equals_the_one_built_at_runtime(dataset):
    env = gym.make("ReasoningGym-v0", dataset=dataset).unwrapped
    shipped = draw_plans.shipped_plan(env._key, env._sample_item)
    built = draw_plans.build(env._sample_item, env.size)
    assert shipped == built, f"{dataset}: {STALE}"
    sampled = set(draw_plans.sample_indices(env.size)[: draw.SAMPLE_ITEMS])
    if dataset == "gcd":
        assert built.balanced and any(set(pool) - sampled for pool in built.pools.values())  # pools were filled
    if dataset == "color_cube_rotation":
        assert not built.filters_echo and built.echo_share > draw.SELECTION_SHARE
    assert draw_plans.plan_for(env._key, "strict", env._sample_item, env.size) == built


def test_a_seed_gives_the_same_item_with_the_plan_shipped_or_built():
    env = gym.make("ReasoningGym-v0", dataset="gcd")
    shipped = [env.reset(seed=seed)[1]["problem_id"] for seed in range(30)]
    code = (
        "import gymnasium as gym, gym_integrity\n"
        "from gym_integrity.envs.reasoning_gym import draw_plans\n"
        "draw_plans.shipped_plan = lambda key, sample: None  # this process builds its plan\n"
        "env = gym.make('ReasoningGym-v0', dataset='gcd')\n"
        "print(','.join(env.reset(seed=s)[1]['problem_id'] for s in range(30)))"
    )
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    assert other.stdout.strip().split(",") == shipped


def _with_file(monkeypatch, tmp_path, data: dict) -> None:
    path = tmp_path / "draw_plans.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setattr(draw_plans, "PLANS_FILE", path)
    draw_plans._shipped.cache_clear()


@pytest.fixture
def restore_shipped():
    yield
    draw_plans._shipped.cache_clear()


def test_a_plan_whose_probe_does_not_match_its_generator_is_built(monkeypatch, tmp_path, restore_shipped):
    env = gym.make("ReasoningGym-v0", dataset="syllogism").unwrapped
    data = _shipped_file()
    entry = data["plans"]["syllogism"]
    assert draw_plans.shipped_plan(env._key, env._sample_item) is not None
    index, drawable, label = entry["probe"][0]
    entry["probe"][0] = [index, drawable, "maybe" if label != "maybe" else "no"]  # as if the generator had changed
    _with_file(monkeypatch, tmp_path, data)
    with pytest.warns(RuntimeWarning, match="does not match its generator"):
        assert draw_plans.shipped_plan(env._key, env._sample_item) is None


def test_plans_built_for_another_reasoning_gym_are_not_used(monkeypatch, tmp_path, restore_shipped):
    env = gym.make("ReasoningGym-v0", dataset="syllogism").unwrapped
    data = _shipped_file()
    data["fingerprint"] = {**data["fingerprint"], "reasoning_gym": "0.0.1"}
    _with_file(monkeypatch, tmp_path, data)
    with pytest.warns(RuntimeWarning, match="plans are built at each generator's first reset"):
        assert draw_plans.shipped_plan(env._key, env._sample_item) is None


def test_a_plan_round_trips_through_json():
    env = gym.make("ReasoningGym-v0", dataset="gcd").unwrapped
    plan = draw_plans.plan_for(env._key, "strict", env._sample_item, env.size)
    assert draw_plans.from_json(json.loads(json.dumps(draw_plans.to_json(plan)))) == plan

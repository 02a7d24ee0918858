"""Seeded resets (gymnasium's np_random): reproducible picks, gymnasium's seeding semantics kept."""

import collections

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils import seeding
from gymnasium.utils.env_checker import check_env

import gym_integrity  # noqa: F401
from gym_integrity.envs.reasoning_gym import ReasoningGymEnv


def test_a_seed_picks_the_same_item_every_time_and_seeds_spread():
    env = ReasoningGymEnv(dataset="leg_counting")
    picks = [env.reset(seed=s)[1]["index"] for s in range(300)]
    assert picks == [ReasoningGymEnv(dataset="leg_counting").reset(seed=s)[1]["index"] for s in range(300)]
    assert picks == [env.reset(seed=s)[1]["index"] for s in range(300)]  # the same instance again
    assert all(0 <= i < env.size for i in picks) and len(set(picks)) > 290  # 100,000 items: few collisions
    # the pick is gymnasium's: np_random seeded with s, its first integer below size
    assert picks[:20] == [int(seeding.np_random(s)[0].integers(env.size)) for s in range(20)]
    # Fixed values: a change here (of gymnasium's seeding or numpy's integers) changes which item every seed picks
    assert [env.reset(seed=s)[1]["index"] for s in (0, 1, 2**63, 2**200)] == [85062, 47318, 53549, 63027]
    # Seeds spread over the items: without the balanced draw, which is uniform over answers, not items (two of ten
    # items with the same answer share that answer's draw: docs/chance.md)
    small = ReasoningGymEnv(dataset="leg_counting", size=10, balanced_draw=False)
    counts = collections.Counter(small.reset(seed=s)[1]["index"] for s in range(5_000))
    assert len(counts) == 10 and min(counts.values()) > 400  # uniform within noise


def test_seeded_and_following_unseeded_resets_repeat_and_check_env_passes():
    env = ReasoningGymEnv(dataset="leg_counting")
    run = [env.reset(seed=5)[1]["index"]] + [env.reset()[1]["index"] for _ in range(4)]
    assert run == [env.reset(seed=5)[1]["index"]] + [env.reset()[1]["index"] for _ in range(4)]
    assert len(set(run)) == 5
    assert ReasoningGymEnv(dataset="leg_counting").reset(seed=5)[1]["index"] == run[0]  # another instance, same pick
    check_env(env, skip_render_check=True)


def test_np_random_is_gymnasiums_generator_for_the_seed():
    env = ReasoningGymEnv(dataset="leg_counting")
    env.reset(seed=11)
    expected, seed = seeding.np_random(11)
    expected.integers(env.size)  # the reset's own draw
    assert env.np_random.bit_generator.state == expected.bit_generator.state
    assert env.np_random_seed == seed == 11
    fresh = ReasoningGymEnv(dataset="leg_counting")
    fresh.reset()  # never seeded: from OS entropy, and np_random_seed says which
    assert isinstance(fresh.np_random_seed, int) and fresh.np_random_seed >= 0


def test_an_assigned_generator_drives_the_picks_until_the_next_seed():
    env = ReasoningGymEnv(dataset="leg_counting")
    env.np_random = np.random.default_rng(3)
    picks = [env.reset()[1]["index"] for _ in range(3)]
    assert picks == [int(x) for x in (lambda g: [g.integers(env.size) for _ in range(3)])(np.random.default_rng(3))]
    assert env.reset(seed=4)[1]["index"] == ReasoningGymEnv(dataset="leg_counting").reset(seed=4)[1]["index"]


@pytest.mark.parametrize("seed", [-1, 1.5, "3", np.int64(2)])
def test_bad_seeds_fail_as_gymnasium_fails_them(seed):
    with pytest.raises(gym.error.Error, match="Seed must be"):
        ReasoningGymEnv(dataset="leg_counting").reset(seed=seed)


def test_reset_and_step_infos_share_nothing_and_a_second_step_copies():
    env = ReasoningGymEnv(dataset="leg_counting")
    _, at_reset = env.reset(seed=0)
    first = env.step("<answer>1</answer>")[4]
    again = env.step("<answer>2</answer>")[4]  # the raw env grades again (the stack stops this)
    assert set(at_reset["privileged"]) == {"answer"} and set(first["privileged"]) == {"answer", "metadata"}
    assert first["privileged"]["metadata"] == again["privileged"]["metadata"]
    assert first["privileged"]["metadata"] is not again["privileged"]["metadata"]


def test_distinct_item_seeds_skip_seeds_that_repeat_an_item_until_none_is_left():
    import gymnasium as gym

    from gym_integrity.seeding import distinct_item_seeds

    env = gym.make("QEDMath-v0", problem_types=["answer"])
    total = env.unwrapped.num_items
    seeds = distinct_item_seeds(env, 12)
    ids = [env.reset(seed=s)[1]["problem_id"] for s in seeds]
    assert len(set(ids)) == 12 and seeds == sorted(seeds) and seeds[0] == 0
    assert len({env.reset(seed=s)[1]["problem_id"] for s in range(12)}) < 12  # plain seeds would repeat here
    more = distinct_item_seeds(env, total + 5, start=100)
    assert len(more) == total + 5 and len({env.reset(seed=s)[1]["problem_id"] for s in more}) == total
    env.close()

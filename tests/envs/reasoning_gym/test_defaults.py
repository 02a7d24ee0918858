"""ReasoningGym-v0's default size: every reasoning-gym dataset makes and resets with defaults (issue 10; its draw plan
shipped, draw_plans.py), a size a dataset refuses fails at make naming the size that works, and eager datasets are not
built at 100,000 items."""

import time

import gymnasium as gym
import pytest

from gym_integrity.envs.reasoning_gym.config import available_datasets
from gym_integrity.envs.reasoning_gym.datasets import AUTO_SIZE, EAGER_SIZE_CAPS
from gym_integrity.envs.reasoning_gym.draw import ABOVE_CHANCE

# Generous: the slowest dataset makes in ~1.5 s (arc_agi loads its task files) on the shared 2-core machine;
# acre at 100,000 items took over 20 s, which is what this bound is here to catch. CPU time of this process, not
# wall time: building items is CPU work here, and on a loaded machine (other jobs, two xdist workers) wall time
# grew to 14.6 s for futoshiki's 1.5 s.
MAKE_BOUND_S = 10.0
# reasoning-gym's own limits, found by its config's validate(); a new one shows up as a failure of the sweep's
# size check below, to be reviewed (not silently accepted).
OWN_LIMITS = {"word_ladder": 20_000}


# A shipped plan whose probe fails here warns and is built (slow): stale (rebuild) or a generator whose items differ
# by process (plan_builder --reprobe marks it); docs/chance.md, "Shipped plans".
@pytest.mark.filterwarnings("error:gym_integrity. the shipped draw plan:RuntimeWarning")
def test_every_dataset_makes_and_resets_with_defaults():
    envs, slow = [], {}
    try:
        for name in available_datasets():
            start = time.process_time()
            if name in ABOVE_CHANCE:  # not made by default: its figure names the opt-in
                with pytest.raises(ValueError, match="allow_above_chance=True"):
                    gym.make("ReasoningGym-v0", dataset=name)
            env = gym.make("ReasoningGym-v0", dataset=name, allow_above_chance=name in ABOVE_CHANCE)
            envs.append(env)
            question, info = env.reset(seed=0)
            elapsed = time.process_time() - start
            if elapsed > MAKE_BOUND_S:
                slow[name] = round(elapsed, 1)
            size = env.unwrapped.size
            assert size == min(AUTO_SIZE, EAGER_SIZE_CAPS.get(name, (AUTO_SIZE,))[0], OWN_LIMITS.get(name, AUTO_SIZE)), name
            assert question.strip() and 0 <= info["index"] < size, name
    finally:
        for env in envs:  # closed together: sandboxed datasets share one pool, stopped by the last close
            env.close()
    assert not slow, f"made and reset in more than {MAKE_BOUND_S} CPU s with defaults (eager? EAGER_SIZE_CAPS): {slow}"


def test_size_above_a_datasets_own_limit_fails_at_make_naming_the_largest_that_works():
    with pytest.raises(ValueError, match=r"size: word_ladder accepts at most 20000 items.*got 20001"):
        gym.make("ReasoningGym-v0", dataset="word_ladder", size=20_001)
    with pytest.raises(ValueError, match=r"word_ladder accepts at most 20000"):
        gym.make("ReasoningGym-v0", dataset={"leg_counting": 1, "word_ladder": 1}, size=50_000)
    assert gym.make("ReasoningGym-v0", dataset="word_ladder", size=20_000).unwrapped.size == 20_000


def test_auto_size_takes_the_smallest_limit_of_a_composite_and_explicit_sizes_stand():
    assert gym.make("ReasoningGym-v0", dataset={"leg_counting": 1, "word_ladder": 1}).unwrapped.size == 20_000
    assert gym.make("ReasoningGym-v0", dataset="word_ladder", size="auto").unwrapped.size == 20_000
    assert gym.make("ReasoningGym-v0", dataset="leg_counting", size=None).unwrapped.size == AUTO_SIZE
    assert gym.make("ReasoningGym-v0", dataset="acre", size=600).unwrapped.size == 600
    env = gym.make("ReasoningGym-v0", dataset="word_ladder")
    with pytest.raises(ValueError, match=r"options\['index'\].*19999"):
        env.reset(options={"index": 20_000})
    assert env.reset(options={"index": 19_999})[1]["index"] == 19_999


@pytest.mark.parametrize("size, error", [("10", ValueError), ("AUTO", ValueError), (0, ValueError),
                                         (1.5, TypeError), (True, TypeError)])
def test_a_bad_size_fails_naming_what_is_accepted(size, error):
    with pytest.raises(error, match=r"size must be an int >= 1, or None/'auto'"):
        gym.make("ReasoningGym-v0", size=size)

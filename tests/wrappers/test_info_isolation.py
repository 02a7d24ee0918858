"""What the stack guarantees about info dicts, whoever else holds them: nothing it was given is changed, nothing it
returns is shared, and no answer-bearing key gets through, whatever wrapper of the user's sits in the stack."""

import gymnasium as gym
import pytest

from gym_integrity.envs.reasoning_gym import ReasoningGymEnv
from gym_integrity.spaces import UnicodeText
from gym_integrity.wrappers import HideInfoKeys, MaxStepsTruncation, TerminalFreeze, integrity_stack


def _info():
    return {"problem_id": "p", "privileged": {"gold": "42"}, "metrics": {"m": 1.0}, "integrity": {"inner": 1}}


class ReusingEnv(gym.Env):
    """Hands out the same info dict on every call (and keeps it)."""

    observation_space = action_space = UnicodeText(max_length=100)
    step_budget = 3

    def __init__(self):
        self.info = _info()

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return "start", self.info

    def step(self, action):
        return "obs", 1.0, action == "end", False, self.info


class FreshEnv(ReusingEnv):
    """The same, with a new info dict per call."""

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return "start", _info()

    def step(self, action):
        return "obs", 1.0, action == "end", False, _info()


class Caching(gym.Wrapper):
    """A foreign wrapper that keeps the last info it returned (a logger, say)."""

    def reset(self, **kwargs):
        obs, self.kept = self.env.reset(**kwargs)
        return obs, self.kept

    def step(self, action):
        *head, self.kept = self.env.step(action)
        return (*head, self.kept)


class ReadOnly(gym.Wrapper):
    """A foreign wrapper that only reads info."""

    def step(self, action):
        out = self.env.step(action)
        self.seen = sorted(out[4])
        return out


def _play(env):
    seen = [env.reset()[1]]
    seen += [env.step(a)[4] for a in ("go", "end", "again")]
    return seen


def test_an_env_that_reuses_its_info_dict_never_has_it_mutated():
    raw = ReusingEnv()
    env = integrity_stack(raw)
    seen = _play(env)
    assert raw.info == _info()
    assert all("privileged" not in info and info["integrity"]["inner"] == 1 for info in seen)
    assert seen[1]["integrity"]["steps"] == 1 and seen[3]["integrity"]["frozen"] is True
    for info in seen:  # what the caller got is its own: editing it reaches nothing below
        info["metrics"]["m"] = 99.0
        info["integrity"]["inner"] = 99
    assert raw.info == _info()


def test_a_foreign_wrapper_that_keeps_its_info_never_has_it_written_into():
    for place in ("below the stack", "inside the stack"):
        if place == "below the stack":
            caching = Caching(FreshEnv())
            env = integrity_stack(caching)
        else:  # between MaxStepsTruncation and HideInfoKeys, over a fresh env
            caching = Caching(MaxStepsTruncation(FreshEnv()))
            env = TerminalFreeze(HideInfoKeys(caching))
        env.reset()
        kept_at_reset = dict(caching.kept)
        env.reset()
        assert caching.kept == kept_at_reset, place  # nothing above wrote into the dict the wrapper keeps
        for action in ("go", "end"):
            env.step(action)
            kept = caching.kept
            assert "privileged" in kept and set(kept["integrity"]) <= {"inner", "steps", "step_budget"}, place


def test_a_read_only_wrapper_in_between_changes_nothing_the_agent_sees():
    read_only = ReadOnly(FreshEnv())
    env = integrity_stack(read_only)
    seen = _play(env)
    assert all("privileged" not in info for info in seen) and read_only.seen[0] == "integrity"
    # the same stack over the real env: a read-only wrapper in between gives what the bare stack gives
    bare = integrity_stack(ReasoningGymEnv(dataset="leg_counting"))
    wrapped = integrity_stack(ReadOnly(ReasoningGymEnv(dataset="leg_counting")))
    for seed in range(3):
        assert bare.reset(seed=seed)[1] == wrapped.reset(seed=seed)[1]
        assert bare.step("<answer>4</answer>")[4] == wrapped.step("<answer>4</answer>")[4]


@pytest.mark.parametrize("wrapper", [MaxStepsTruncation, HideInfoKeys, TerminalFreeze])
def test_each_integrity_wrapper_returns_new_info_over_a_reusing_env(wrapper):
    """Over an env that reuses its dict, each wrapper returns a new one every call and leaves the env's alone."""
    raw = ReusingEnv()
    env = wrapper(raw)
    infos = [env.reset()[1], env.step("go")[4], env.step("end")[4], env.step("again")[4]]
    assert all(info is not raw.info for info in infos) and len({id(i) for i in infos}) == len(infos)
    assert raw.info == _info()

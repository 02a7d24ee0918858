"""The info-ownership protocol (wrappers/info_ownership.py): a wrapper of the user's in the stack, said or unsaid."""

import gymnasium as gym
import pytest

from gym_integrity.envs.reasoning_gym import ReasoningGymEnv
from gym_integrity.spaces import UnicodeText
from gym_integrity.wrappers import HideInfoKeys, MaxStepsTruncation, TerminalFreeze, integrity_stack
from gym_integrity.wrappers.info_ownership import fresh_info_below, privileged_only_below


def _info():
    return {"problem_id": "p", "privileged": {"gold": "42"}, "metrics": {"m": 1.0}, "integrity": {"inner": 1}}


class ReusingEnv(gym.Env):
    """Declares the privileged-info convention but hands out the same info dict every call (no ``fresh_info``)."""

    observation_space = action_space = UnicodeText(max_length=100)
    step_budget = 3
    privileged_info_only = True

    def __init__(self):
        self.info = _info()

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return "start", self.info

    def step(self, action):
        return "obs", 1.0, action == "end", False, self.info


class FreshEnv(ReusingEnv):
    """The same, with a new info dict per call, and saying so."""

    fresh_info = True

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return "start", _info()

    def step(self, action):
        return "obs", 1.0, action == "end", False, _info()


class Caching(gym.Wrapper):
    """A foreign wrapper that says nothing: it keeps the last info it returned (a logger, say)."""

    def reset(self, **kwargs):
        obs, self.kept = self.env.reset(**kwargs)
        return obs, self.kept

    def step(self, action):
        *head, self.kept = self.env.step(action)
        return (*head, self.kept)


class Declared(gym.Wrapper):
    """A foreign wrapper that only reads info, and declares both halves of the protocol."""

    passes_fresh_info = True
    passes_privileged_only = True

    def step(self, action):
        out = self.env.step(action)
        self.seen = sorted(out[4])
        return out


def _hide(env):
    while not isinstance(env, HideInfoKeys):
        env = env.env
    return env


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
    assert not fresh_info_below(raw) and _hide(env).filter_path == "privileged key"


def test_a_foreign_wrapper_that_says_nothing_is_kept_correct_and_turns_the_fast_path_off_for_it():
    for place in ("below the stack", "inside the stack"):
        if place == "below the stack":
            caching = Caching(FreshEnv())
            env = integrity_stack(caching)
        else:  # between MaxStepsTruncation and HideInfoKeys, over a fresh env
            caching = Caching(MaxStepsTruncation(FreshEnv()))
            env = TerminalFreeze(HideInfoKeys(caching))
        assert not fresh_info_below(caching) and not privileged_only_below(caching), place
        assert _hide(env).filter_path == "deep scan", place
        env.reset()
        kept_at_reset = dict(caching.kept)
        env.reset()
        assert caching.kept == kept_at_reset, place  # nothing above wrote into the dict the wrapper keeps
        for action in ("go", "end"):
            env.step(action)
            kept = caching.kept
            assert "privileged" in kept and set(kept["integrity"]) <= {"inner", "steps", "step_budget"}, place


def test_a_foreign_wrapper_that_declares_the_protocol_keeps_the_fast_path():
    declared = Declared(FreshEnv())
    assert fresh_info_below(declared) and privileged_only_below(declared)
    env = integrity_stack(declared)
    assert _hide(env).filter_path == "privileged key"
    assert env.env.env._owns_inner_info  # MaxStepsTruncation sets its keys in the fresh dict, no copy
    seen = _play(env)
    assert all("privileged" not in info for info in seen) and declared.seen[0] == "integrity"
    # the same stack over the real env: a declared wrapper in between gives what the bare stack gives
    bare, wrapped = integrity_stack(ReasoningGymEnv(dataset="leg_counting")), \
        integrity_stack(Declared(ReasoningGymEnv(dataset="leg_counting")))
    assert _hide(wrapped).filter_path == "privileged key"
    for seed in range(3):
        assert bare.reset(seed=seed)[1] == wrapped.reset(seed=seed)[1]
        assert bare.step("<answer>4</answer>")[4] == wrapped.step("<answer>4</answer>")[4]


def test_a_declared_wrapper_above_a_reusing_env_still_gets_copies():
    """Declaring passes_fresh_info promises nothing about the env below it: the env's own word decides."""
    raw = ReusingEnv()
    env = integrity_stack(Declared(raw))
    assert not fresh_info_below(env.env.env.env)
    _play(env)
    assert raw.info == _info()


@pytest.mark.parametrize("wrapper", [MaxStepsTruncation, HideInfoKeys, TerminalFreeze])
def test_each_integrity_wrapper_returns_new_info_over_a_reusing_env(wrapper):
    """What they declare (returns_new_info) holds: over an env that reuses its dict, each returns a new one."""
    raw = ReusingEnv()
    env = wrapper(raw)
    assert fresh_info_below(env) and privileged_only_below(env)
    infos = [env.reset()[1], env.step("go")[4], env.step("end")[4], env.step("again")[4]]
    assert all(info is not raw.info for info in infos) and len({id(i) for i in infos}) == len(infos)
    assert raw.info == _info()

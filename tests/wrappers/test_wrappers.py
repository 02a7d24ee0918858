"""The integrity wrappers on a small counting env: what each guarantees, and the stack's order and spec."""

import gymnasium as gym
import pytest

import gym_integrity
from gym_integrity.spaces import UnicodeText
from gym_integrity.wrappers import (STACK_ORDER, HideInfoKeys, MaxStepsTruncation, TerminalFreeze,
                                    integrity_stack)


class CountingEnv(gym.Env):
    """Ends when the action is "end"; counts every step it is given; leaks under several keys."""

    observation_space = UnicodeText(max_length=100)
    action_space = UnicodeText(max_length=100)
    step_budget = 3

    def __init__(self):
        self.calls = 0
        self.last_info = None

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return "start", {"problem_id": "p", "privileged": {"gold": "42"}}

    def step(self, action):
        self.calls += 1
        done = action == "end"
        self.last_info = {"problem_id": "p", "score": float(self.calls), "privileged": {"gold": "42"},
                          "debug": {"answer": "42", "nested": {"solution": "x", "ok": 1}}, "integrity": {"inner": 1}}
        return f"obs{self.calls}", float(self.calls), done, False, self.last_info


def test_terminal_freeze_replays_final_transition_without_calling_the_env():
    raw = CountingEnv()
    env = TerminalFreeze(raw)
    env.reset()
    assert env.step("go")[2] is False
    final = env.step("end")
    assert final[1] == 2.0 and final[2] is True and final[4]["integrity"]["frozen"] is False
    for k in range(1, 4):
        obs, reward, terminated, truncated, info = env.step("end")
        assert (obs, reward, terminated, truncated) == final[:4]
        assert info["integrity"] == {"inner": 1, "frozen": True, "ignored_steps": k}
    assert raw.calls == 2
    env.reset()
    assert env.step("end")[1] == 3.0 and raw.calls == 3


def test_terminal_freeze_zero_mode_and_isolation_from_caller_mutation():
    env = TerminalFreeze(CountingEnv(), frozen_reward="zero")
    env.reset()
    _, reward, _, _, info = env.step("end")
    assert reward == 1.0
    info["score"] = 99.0
    info["integrity"]["frozen"] = "tampered"
    _, reward, _, _, info2 = env.step("anything")
    assert reward == 0.0 and info2["score"] == 1.0 and info2["integrity"]["frozen"] is True
    with pytest.raises(ValueError, match="^TerminalFreeze.frozen_reward must be one of"):
        TerminalFreeze(CountingEnv(), frozen_reward="double")
    with pytest.raises(TypeError, match="^TerminalFreeze.frozen_reward"):
        TerminalFreeze(CountingEnv(), frozen_reward=0)


def test_terminal_freeze_does_not_mutate_inner_info():
    raw = CountingEnv()
    env = TerminalFreeze(raw)
    env.reset()
    env.step("go")
    assert raw.last_info["integrity"] == {"inner": 1}


def test_hide_info_keys_deny_mode_any_depth_and_dotted_paths():
    raw = CountingEnv()
    env = HideInfoKeys(raw)
    _, info = env.reset()
    assert info == {"problem_id": "p"}
    info = env.step("go")[4]
    assert "privileged" not in info and "answer" not in info["debug"]
    assert info["debug"]["nested"] == {"ok": 1}
    assert raw.last_info["debug"]["answer"] == "42" and "privileged" in raw.last_info  # inner untouched
    dotted = HideInfoKeys(CountingEnv(), keys=("debug.nested.ok",))
    dotted.reset()
    info = dotted.step("go")[4]
    assert info["debug"]["nested"] == {"solution": "x"} and info["privileged"] == {"gold": "42"}


def test_hide_info_keys_allow_mode_and_reveal_on_end():
    env = HideInfoKeys(CountingEnv(), keys=("score", "debug.nested.ok"), mode="allow")
    env.reset()
    assert env.step("go")[4] == {"score": 1.0, "debug": {"nested": {"ok": 1}}}
    reveal = HideInfoKeys(CountingEnv(), reveal_on_end=True)
    reveal.reset()
    assert "privileged" not in reveal.step("go")[4]
    assert reveal.step("end")[4]["privileged"] == {"gold": "42"}


@pytest.mark.parametrize("kwargs, exc", [({"keys": "answer"}, TypeError), ({"keys": (1,)}, TypeError),
                                         ({"keys": ("",)}, ValueError), ({"mode": "block"}, ValueError),
                                         ({"reveal_on_end": "yes"}, TypeError)])
def test_hide_info_keys_bad_arguments(kwargs, exc):
    with pytest.raises(exc, match=f"^HideInfoKeys.{next(iter(kwargs))}"):
        HideInfoKeys(CountingEnv(), **kwargs)


def test_max_steps_truncation_uses_declared_budget_and_scores_last_step():
    env = MaxStepsTruncation(CountingEnv())
    _, info = env.reset()
    assert info["integrity"] == {"steps": 0, "step_budget": 3}
    assert [env.step("go")[2:4] for _ in range(3)] == [(False, False), (False, False), (False, True)]
    env.reset()
    env.step("go"), env.step("go")
    _, reward, terminated, truncated, info = env.step("end")
    assert (terminated, truncated, reward) == (True, False, 6.0)
    assert info["integrity"]["steps"] == 3
    assert MaxStepsTruncation(CountingEnv(), max_steps=1).reset() and True


def test_max_steps_truncation_errors():
    with pytest.raises(ValueError, match="^MaxStepsTruncation.max_steps"):
        MaxStepsTruncation(CountingEnv(), max_steps=0)
    with pytest.raises(TypeError, match="^MaxStepsTruncation.max_steps"):
        MaxStepsTruncation(CountingEnv(), max_steps=True)

    class NoBudget(CountingEnv):
        step_budget = None

    with pytest.raises(TypeError, match="^NoBudget.step_budget must be an int >= 1"):
        MaxStepsTruncation(NoBudget()).reset()


def test_stack_order_and_frozen_steps_are_not_counted():
    raw = CountingEnv()
    env = integrity_stack(raw)
    assert [type(w) for w in (env.env.env, env.env, env)] == list(STACK_ORDER)
    env.reset()
    env.step("go")
    env.step("go")
    _, _, terminated, truncated, info = env.step("go")
    assert truncated and not terminated and "privileged" not in info
    for _ in range(5):
        _, _, _, truncated, info = env.step("end")
    assert truncated and info["integrity"]["steps"] == 3 and info["integrity"]["ignored_steps"] == 5
    assert raw.calls == 3


def test_registered_ids_carry_the_stack_and_spec_recreates_it():
    for entry in gym_integrity.REGISTERED:
        names = [w.name for w in gym.spec(entry.id).additional_wrappers]
        assert names == ["MaxStepsTruncation", "HideInfoKeys", "TerminalFreeze"], entry.id
    env = gym.make("ReasoningGym-v0", dataset="basic_arithmetic")
    again = gym.make(env.spec)
    assert str(again) == str(env)
    assert again.spec.kwargs == {"dataset": "basic_arithmetic"}


def test_make_exposes_the_stack_switches():
    env = gym_integrity.make("ReasoningGym-v0", reveal_on_end=True, frozen_reward="zero")
    env.reset(seed=1)
    _, _, _, _, info = env.step("<answer>1</answer>")
    assert info["privileged"]["answer"] == env.unwrapped.gold_answers()[0]
    assert env.step("again")[1] == 0.0
    assert gym.make(env.spec).spec.additional_wrappers == env.spec.additional_wrappers


# --------------------------------------------------------------------------- HideInfoKeys' two paths (issue 11)


class ConventionEnv(CountingEnv):
    """Keeps the privileged-info convention (answers only under info["privileged"]) and keeps its last info."""

    privileged_info_only = True

    def step(self, action):
        self.calls += 1
        self.last_info = {"problem_id": "p", "score": float(self.calls), "privileged": {"gold": "42", "metadata": {}},
                          "metrics": {"m": 1.0}, "integrity": {"inner": 1}}
        return f"obs{self.calls}", float(self.calls), action == "end", False, self.last_info


class AddsAnswer(gym.Wrapper):
    """A foreign wrapper between the env and the stack: it may add keys of its own."""

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated, truncated, {**info, "debug": {"answer": "42"}}


def test_hide_info_keys_fast_path_only_where_the_convention_is_declared_and_kept():
    assert HideInfoKeys(ConventionEnv()).filter_path == "privileged key"
    assert gym.make("ReasoningGym-v0").env.filter_path == "privileged key"  # through gym.make's layers too
    for env in (HideInfoKeys(CountingEnv()),                                   # a foreign env: no declaration
                HideInfoKeys(ConventionEnv(), deep_scan=True),                  # the option
                HideInfoKeys(ConventionEnv(), keys=("privileged", "score")),    # the caller's own keys
                HideInfoKeys(ConventionEnv(), keys=("problem_id",), mode="allow"),
                HideInfoKeys(AddsAnswer(ConventionEnv()))):                     # an unknown layer in between
        assert env.filter_path == "deep scan"
    leaky = HideInfoKeys(AddsAnswer(ConventionEnv()))
    leaky.reset()
    info = leaky.step("go")[4]
    assert "privileged" not in info and info["debug"] == {}
    assert integrity_stack(ConventionEnv(), deep_scan=True).env._saved_kwargs["deep_scan"] is True  # in env.spec


def test_the_stack_above_a_convention_env_mutates_nothing_it_was_given():
    raw = ConventionEnv()
    env = integrity_stack(raw)
    _, info = env.reset()
    assert info == {"problem_id": "p", "integrity": {"steps": 0, "step_budget": 3, "frozen": False, "ignored_steps": 0}}
    _, _, _, _, info = env.step("go")
    assert raw.last_info == {"problem_id": "p", "score": 1.0, "privileged": {"gold": "42", "metadata": {}},
                             "metrics": {"m": 1.0}, "integrity": {"inner": 1}}
    assert "privileged" not in info and info["integrity"] == {"inner": 1, "steps": 1, "step_budget": 3,
                                                              "frozen": False, "ignored_steps": 0}
    final = env.step("end")[4]
    final["score"] = 99.0
    frozen = env.step("again")[4]
    assert frozen["score"] == 2.0 and frozen["integrity"]["frozen"] is True and raw.last_info["integrity"] == {"inner": 1}


def _episodes(env, seeds, action_of):
    """Everything the agent sees over a few episodes: reset, a wrong answer, the gold one (frozen), more frozen steps."""
    seen = []
    for seed in seeds:
        seen.append(env.reset(seed=seed))
        gold = env.unwrapped.gold_answers()
        for text in ("wrong", gold[0] if gold else "none", "again"):
            seen.append(env.step(action_of(env, text)))
    return seen


@pytest.mark.parametrize("options", [{"dataset": "leg_counting"}, {"dataset": "basic_arithmetic"},
                                     {"dataset": {"leg_counting": 1, "gcd": 1}}], ids=["leg", "arith", "composite"])
@pytest.mark.parametrize("reveal_on_end", [False, True])
def test_both_paths_give_the_same_info_on_every_registered_env_that_declares_the_convention(options, reveal_on_end):
    from gymnasium.envs.registration import load_env_creator

    from gym_integrity.audit.adapters import answer_action
    from gym_integrity.protocol import declares_privileged_only

    declaring = [e for e in gym_integrity.REGISTERED
                 if getattr(load_env_creator(e.entry_point), "privileged_info_only", False) is True]
    assert "ReasoningGym-v0" in [e.id for e in declaring]
    for entry in declaring:
        if entry.id != "ReasoningGym-v0":
            options = {}
        fast = gym_integrity.make(entry.id, reveal_on_end=reveal_on_end, **options)
        cls = load_env_creator(entry.entry_point)
        deep = integrity_stack(cls(**options), reveal_on_end=reveal_on_end, deep_scan=True)
        assert declares_privileged_only(fast) and fast.env.filter_path == "privileged key"
        assert deep.env.filter_path == "deep scan"
        seeds = range(6)
        assert _episodes(fast, seeds, answer_action) == _episodes(deep, seeds, answer_action), entry.id


def test_gym_integrity_make_exposes_the_deep_scan_switch():
    """A leftover of issue 11: the deep scan was reachable only by building the stack by hand."""
    import gym_integrity
    from gym_integrity.wrappers import HideInfoKeys

    def hide(env):
        while not isinstance(env, HideInfoKeys):
            env = env.env
        return env

    fast, deep = gym_integrity.make("ReasoningGym-v0"), gym_integrity.make("ReasoningGym-v0", deep_scan=True)
    assert (hide(fast).filter_path, hide(deep).filter_path) == ("privileged key", "deep scan")
    assert fast.reset(seed=1)[1] == deep.reset(seed=1)[1]
    assert fast.step("<answer>1</answer>")[4] == deep.step("<answer>1</answer>")[4]
    assert str(gym.make(deep.spec)) == str(deep) and hide(gym.make(deep.spec)).deep_scan
    with pytest.raises(TypeError, match=r"gym_integrity.make\('ReasoningGym-v0', deep_scan=...\)"):
        gym.make("ReasoningGym-v0", deep_scan=True)


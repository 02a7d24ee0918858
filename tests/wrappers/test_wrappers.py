"""The integrity wrappers on a small counting env: what each guarantees, and the stack's order and spec."""

import gymnasium as gym
import pytest

import gym_integrity
from gym_integrity.spaces import UnicodeText
from gym_integrity.wrappers import STACK_ORDER, HideInfoKeys, MaxStepsTruncation, TerminalFreeze, integrity_stack


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


def test_the_stack_settings_are_one_frozen_config_checked_when_built():
    import dataclasses

    from gym_integrity.wrappers import StackConfig
    from gym_integrity.wrappers.stack import STACK_SWITCHES

    assert STACK_SWITCHES == tuple(f.name for f in dataclasses.fields(StackConfig))
    with pytest.raises(dataclasses.FrozenInstanceError):
        StackConfig().max_steps = 3
    with pytest.raises(ValueError, match=r"^StackConfig\.frozen_reward"):
        gym_integrity.make("ReasoningGym-v0", frozen_reward="double")
    with pytest.raises(TypeError, match=r"^StackConfig\.reveal_on_end"):
        integrity_stack(CountingEnv(), reveal_on_end="yes")
    env = gym_integrity.make("ReasoningGym-v0", hidden_keys=("privileged", "index"))  # any setting, through make
    assert set(env.reset(seed=0)[1]) == {"problem_id", "dataset", "integrity"}
    assert gym.make(env.spec).reset(seed=0)[1] == env.reset(seed=0)[1]


def test_make_exposes_the_stack_switches():
    env = gym_integrity.make("ReasoningGym-v0", reveal_on_end=True, frozen_reward="zero")
    env.reset(seed=1)
    _, _, _, _, info = env.step("<answer>1</answer>")
    assert info["privileged"]["answer"] == env.unwrapped.gold_answers()[0]
    assert env.step("again")[1] == 0.0
    assert gym.make(env.spec).spec.additional_wrappers == env.spec.additional_wrappers


# --------------------------------------------------------------------------- what HideInfoKeys hides, wherever it is


class ConventionEnv(CountingEnv):
    """Answers only under info["privileged"], and keeps its last info."""

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


def test_hide_info_keys_hides_what_a_foreign_wrapper_in_between_adds():
    leaky = HideInfoKeys(AddsAnswer(ConventionEnv()))
    leaky.reset()
    info = leaky.step("go")[4]
    assert "privileged" not in info and info["debug"] == {}


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
    final["metrics"]["m"] = 99.0
    frozen = env.step("again")[4]
    assert frozen["score"] == 2.0 and frozen["metrics"] == {"m": 1.0} and frozen["integrity"]["frozen"] is True
    assert raw.last_info["integrity"] == {"inner": 1}


def _hidden_anywhere(tree, names):
    if isinstance(tree, dict):
        return any(k in names or _hidden_anywhere(v, names) for k, v in tree.items())
    if isinstance(tree, (list, tuple)):
        return any(_hidden_anywhere(v, names) for v in tree)
    return False


def _episodes(env, seeds, action_of):
    """Everything the agent sees over a few episodes: reset, a wrong answer, the gold one (frozen), more frozen steps."""
    seen = []
    for seed in seeds:
        seen.append(env.reset(seed=seed))
        gold = env.unwrapped.gold_answers()
        for text in ("wrong", gold[0] if gold else "none", "again"):
            seen.append(env.step(action_of(env, text)))
    return seen


@pytest.mark.parametrize("entry", gym_integrity.REGISTERED, ids=lambda e: e.id)
@pytest.mark.parametrize("reveal_on_end", [False, True])
def test_no_hidden_key_reaches_the_agent_on_any_registered_env(entry, reveal_on_end):
    """No name of DEFAULT_HIDDEN_KEYS, at any depth, except on the final transitions the trainer opted into; and
    gym_integrity.make's stack gives what integrity_stack over the same env gives."""
    from gymnasium.envs.registration import load_env_creator

    from gym_integrity.audit.adapters import answer_action
    from gym_integrity.protocol import DEFAULT_HIDDEN_KEYS

    options = {"ReasoningGym-v0": {"dataset": {"leg_counting": 1, "gcd": 1}},
               "QEDMath-v0": {"problem_types": ["answer"]}}.get(entry.id, {})
    made = gym_integrity.make(entry.id, reveal_on_end=reveal_on_end, **options)
    seen = _episodes(made, range(3), answer_action)
    if entry.id == "ReasoningGym-v0":  # the others report latencies, which differ from run to run
        built = integrity_stack(load_env_creator(entry.entry_point)(**options), reveal_on_end=reveal_on_end)
        assert seen == _episodes(built, range(3), answer_action)
    leaks = [out for out in seen if _hidden_anywhere(out[-1], frozenset(DEFAULT_HIDDEN_KEYS))]
    if reveal_on_end:  # on the transitions that ended an episode (and their frozen replays) only
        assert all(len(out) == 5 and (out[2] or out[3]) for out in leaks), entry.id
    else:
        assert leaks == [], entry.id
    made.close()

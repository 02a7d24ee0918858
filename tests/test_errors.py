"""One rule for errors (docs/architecture.md, "Errors: one rule"), walked over every config field.

A wrong type is a ``TypeError``, a wrong value a ``ValueError``, an unknown option
a ``TypeError``, and every message starts with ``Owner.field``. The fields come
from ``dataclasses.fields`` (and wrapper/space signatures), so a field added
without an entry in the tables below (an env's rows: tests/envs/<family>/error_cases.py) fails here.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import re
from pathlib import Path
from typing import Any, Callable

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.envs.registration import load_env_creator

from gym_integrity.audit.session import AuditSettings
from gym_integrity.envs.finqa import FinQAConfig, FinQAEnv
from gym_integrity.envs.qed_math import QEDMathConfig, QEDMathEnv
from gym_integrity.envs.reasoning_gym import ReasoningGymConfig, ReasoningGymEnv
from gym_integrity.services.judge import JudgeConfig
from gym_integrity.workers import PoolConfig, WorkerPool
from gym_integrity.registration import REGISTERED
from gym_integrity.services.verifier import VerifierConfig
from gym_integrity.spaces import UnicodeText
from gym_integrity.vector import ThreadedVectorEnv, make_threaded_vec
from gym_integrity.wrappers import HideInfoKeys, MaxStepsTruncation, StackConfig, TerminalFreeze
from gym_integrity.wrappers.stack import STACK_SWITCHES

#: A field whose every value of the right type is valid (a bool, a seed, an optional key).
ANY = object()

#: field -> (a wrong type, a wrong value of the right type or ANY). Every init field must be here.
BAD: dict[type, dict[str, tuple[Any, Any]]] = {
    VerifierConfig: {
        "pool": (3, {"num_workers": 0}),
        "max_answer_chars": (1.5, 0),
        "float_rounding": ("6", -1),
        "numeric_precision": (None, 0),
        "strict": (1, ANY),
        "gold_cache_size": ("x", 0),
    },
    PoolConfig: {
        "num_workers": ("2", 0),
        "spare_workers": (1.0, -1),
        "run_timeout_s": ("5", 0),
        "queue_timeout_s": (None, 0),
        "max_in_flight": ("8", 0),
        "max_retries": (True, -1),
        "memory_limit_mb": (1.5, 1),
        "scope": (3, "cluster"),
    },
    AuditSettings: {
        "seeds": ([0, 1], ()),
        "probe_timeout_s": ("1", 0),
        "step_timeout_s": (None, -1),
        "max_steps": (1.5, 0),
        "grading_slack_s": (True, -1.0),
        "deep": (1, ANY),
    },
    JudgeConfig: {
        "base_url": (3, "ftp://judge"),
        "api_key": (3, ANY),
        "model": (3, ANY),
        "api": (3, "bogus"),
        "prompt": (3, "v9"),
        "temperature": ("0", 3.0),
        "max_output_tokens": ("1", 0),
        "timeout_s": ("1", 0),
        "max_retries": (1.5, -1),
        "backoff_s": ("1", -1),
        "max_backoff_s": (None, -1),
        "success_threshold": ("7", 8),
        "allowed_scores": (3, (9,)),
        "max_concurrency": (1.5, 0),
        "max_proof_chars": ("1", 0),
    },
}

def _env_rows() -> dict[type, dict[str, tuple[Any, Any]]]:
    """Each env family's rows, from tests/envs/<family>/error_cases.py: a new env brings its own file."""
    rows: dict[type, dict[str, tuple[Any, Any]]] = {}
    for path in sorted(Path(__file__).parent.glob("envs/*/error_cases.py")):
        spec = importlib.util.spec_from_file_location(f"error_cases_{path.parent.name}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for cls, fields in module.BAD.items():
            rows[cls] = {name: (wrong, ANY if value == "ANY" else value) for name, (wrong, value) in fields.items()}
    return rows


BAD.update(_env_rows())

#: Env configs fail at gym.make (some fields, e.g. QEDMath's dataset, are read only there). Read from the registry:
#: a new env is walked here once registered, and test_every_registered_config_is_walked asks for its rows in BAD.
ENV_CLASSES = {entry.id: load_env_creator(entry.entry_point) for entry in REGISTERED}
ENV_IDS = {cls.config_class: env_id for env_id, cls in ENV_CLASSES.items()}


def test_every_registered_config_is_walked():
    assert set(ENV_IDS) <= set(BAD), f"add rows to BAD for {[c.__name__ for c in set(ENV_IDS) - set(BAD)]}"


def build(cls: type, **kwargs: Any) -> Any:
    """An env config through ``gym.make``; a nested config through ``from_value`` (a dict of its fields)."""
    if cls in ENV_IDS:
        return gym.make(ENV_IDS[cls], **kwargs)
    return cls.from_value(kwargs)


def raises(kind: type[Exception], prefix: str, call: Callable[[], Any]) -> str:
    """``call()`` raises exactly ``kind`` whose message starts with ``prefix`` (as a whole name)."""
    with pytest.raises(Exception) as caught:
        call()
    exc = caught.value
    assert type(exc) is kind, f"expected {kind.__name__}, got {type(exc).__name__}: {exc}"
    assert re.match(re.escape(prefix) + r"(?![\w])", str(exc)), f"message does not start with {prefix!r}: {exc}"
    return str(exc)


#: VerifierConfig's keywords for its pool's settings (documented: ``verifier={"num_workers": 4}``), which it
#: stores in its ``pool`` field: they follow the rule under VerifierConfig's own names.
POOL_KEYWORD_BAD = {
    "num_workers": ("2", 0),
    "spare_workers": (1.0, -1),
    "deadline_s": ("5", 0),
    "queue_timeout_s": (None, -1),
    "max_in_flight": ("8", 0),
    "max_retries": (True, -1),
    "memory_limit_mb": (1.5, 100),
    "scope": (3, "cluster"),
}


def test_the_pool_keyword_table_is_verifier_configs():
    from gym_integrity.services.verifier import POOL_KEYWORDS

    assert set(POOL_KEYWORD_BAD) == set(POOL_KEYWORDS)


@pytest.mark.parametrize("name", list(POOL_KEYWORD_BAD))
def test_verifier_pool_keywords_follow_the_rule(name):
    wrong_type, bad_value = POOL_KEYWORD_BAD[name]
    raises(TypeError, f"VerifierConfig.{name}", lambda: build(VerifierConfig, **{name: wrong_type}))
    raises(ValueError, f"VerifierConfig.{name}", lambda: build(VerifierConfig, **{name: bad_value}))
    raises(TypeError, f"VerifierConfig.{name}", lambda: VerifierConfig(**{name: wrong_type}))


CONFIG_FIELDS = [(cls, f.name) for cls in BAD for f in dataclasses.fields(cls) if f.init]
IDS = [f"{cls.__name__}.{name}" for cls, name in CONFIG_FIELDS]


@pytest.mark.parametrize("cls, name", CONFIG_FIELDS, ids=IDS)
def test_wrong_type_is_a_type_error_naming_the_field(cls, name):
    if name not in BAD[cls]:
        pytest.fail(f"{cls.__name__}.{name} has no entry in tests/test_errors.py BAD: add its wrong type and value")
    wrong_type, _ = BAD[cls][name]
    raises(TypeError, f"{cls.__name__}.{name}", lambda: build(cls, **{name: wrong_type}))


@pytest.mark.parametrize("cls, name", CONFIG_FIELDS, ids=IDS)
def test_wrong_value_is_a_value_error_naming_the_field(cls, name):
    if name not in BAD[cls]:
        pytest.fail(f"{cls.__name__}.{name} has no entry in tests/test_errors.py BAD: add its wrong type and value")
    _, bad_value = BAD[cls][name]
    if bad_value is ANY:
        return  # every value of the right type is valid, by the table's say-so
    raises(ValueError, f"{cls.__name__}.{name}", lambda: build(cls, **{name: bad_value}))


@pytest.mark.parametrize("cls", list(BAD), ids=[c.__name__ for c in BAD])
def test_unknown_key_is_a_type_error_naming_it(cls):
    message = raises(TypeError, f"{cls.__name__}.max_retrys", lambda: build(cls, max_retrys=1))
    if "max_retries" in BAD[cls] or cls is VerifierConfig:
        assert "did you mean 'max_retries'" in message


@pytest.mark.parametrize("cls", list(BAD), ids=[c.__name__ for c in BAD])
def test_the_table_has_no_stale_field(cls):
    assert set(BAD[cls]) <= {f.name for f in dataclasses.fields(cls) if f.init}


@pytest.mark.parametrize("env_id", list(ENV_CLASSES))
def test_registered_env_unknown_option_names_the_config_key(env_id):
    config = {v: k for k, v in ENV_IDS.items()}[env_id]
    raises(TypeError, f"{config.__name__}.bogus", lambda: gym.make(env_id, bogus=1))


@pytest.mark.parametrize("env_id", list(ENV_CLASSES))
@pytest.mark.parametrize("switch", STACK_SWITCHES)
def test_a_stack_switch_given_to_gym_make_points_to_gym_integrity_make(env_id, switch):
    config = {v: k for k, v in ENV_IDS.items()}[env_id]
    message = raises(TypeError, f"{config.__name__}.{switch}", lambda: gym.make(env_id, **{switch: 1}))
    assert f"gym_integrity.make({env_id!r}, {switch}=...)" in message


@pytest.mark.parametrize("field, value, kind", [
    ("verifier", {"workers": 2}, TypeError),        # unknown key of the nested config
    ("verifier", {"deadline_s": "5"}, TypeError),   # the inner error keeps its type
    ("verifier", {"deadline_s": 0}, ValueError),
    ("judge", {"bogus": 1}, TypeError),
    ("judge", {"timeout_s": "slow"}, TypeError),
    ("judge", {"timeout_s": -1}, ValueError),
])
def test_nested_config_errors_keep_their_type_behind_the_outer_field(field, value, kind):
    inner = {"verifier": "VerifierConfig", "judge": "JudgeConfig"}[field]
    message = raises(kind, f"QEDMathConfig.{field}", lambda: gym.make("QEDMath-v0", **{field: value}))
    assert message.startswith(f"QEDMathConfig.{field}: {inner}."), message


def test_composite_entries_follow_the_rule():
    def make(dataset: Any) -> Any:
        return ReasoningGymConfig(dataset=dataset).validate()

    raises(TypeError, "ReasoningGymConfig.dataset[0]", lambda: make([3]))
    raises(TypeError, "ReasoningGymConfig.dataset[0].wieght", lambda: make([{"name": "gcd", "wieght": 2}]))
    raises(TypeError, "ReasoningGymConfig.dataset[0].weight", lambda: make([{"name": "gcd", "weight": "2"}]))
    raises(ValueError, "ReasoningGymConfig.dataset[0].weight", lambda: make([{"name": "gcd", "weight": 0}]))
    raises(TypeError, "ReasoningGymConfig.dataset[0].config", lambda: make([{"name": "gcd", "config": 3}]))
    raises(ValueError, "ReasoningGymConfig.dataset", lambda: make({"gcd": -1.0}))
    raises(TypeError, "ReasoningGymConfig.dataset_config.bogus",
           lambda: ReasoningGymConfig(dataset_config={"bogus": 1}).validate())
    # a dataset that cannot meet the chance rule (draw.ABOVE_CHANCE), alone or in a composite, without the opt-in
    raises(ValueError, "ReasoningGymConfig.dataset", lambda: make("propositional_logic"))
    raises(ValueError, "ReasoningGymConfig.dataset", lambda: make({"gcd": 1, "propositional_logic": 1}))


# --------------------------------------------------------------------------- wrappers, space, vector


class _Env(gym.Env):
    observation_space = action_space = gym.spaces.Discrete(2)
    step_budget = 1

    def reset(self, *, seed=None, options=None):
        return 0, {}

    def step(self, action):
        return 0, 0.0, True, False, {}


#: argument -> (a wrong type, a wrong value or ANY); every argument but ``env`` must be here.
WRAPPER_BAD: dict[Callable[..., Any], dict[str, tuple[Any, Any]]] = {
    TerminalFreeze: {"frozen_reward": (3, "double")},
    HideInfoKeys: {"keys": ("answer", [""]), "mode": (3, "block"), "reveal_on_end": ("yes", ANY)},
    MaxStepsTruncation: {"max_steps": ("3", 0)},
    StackConfig: {"max_steps": ("3", 0), "hidden_keys": ("answer", [""]), "hide_mode": (3, "block"),
                  "reveal_on_end": ("yes", ANY), "frozen_reward": (3, "double")},
    UnicodeText: {"max_length": ("10", 0), "min_length": (1.5, -1), "seed": ANY},
}
WRAPPER_ARGS = [(cls, name) for cls in WRAPPER_BAD for name in inspect.signature(cls.__init__).parameters
                if name not in ("self", "env")]


def _construct(cls: Any, **kwargs: Any) -> Any:
    if cls is UnicodeText:
        return UnicodeText(**{"max_length": 8, **kwargs})
    if cls is StackConfig:
        return StackConfig(**kwargs)
    return cls(_Env(), **kwargs)


@pytest.mark.parametrize("cls, name", WRAPPER_ARGS, ids=[f"{c.__name__}.{n}" for c, n in WRAPPER_ARGS])
def test_wrapper_and_space_arguments_follow_the_rule(cls, name):
    if name not in WRAPPER_BAD[cls]:
        pytest.fail(f"{cls.__name__}.{name} has no entry in tests/test_errors.py WRAPPER_BAD")
    if WRAPPER_BAD[cls][name] is ANY:
        return  # handled by Gymnasium itself (a space's seed)
    wrong_type, bad_value = WRAPPER_BAD[cls][name]
    raises(TypeError, f"{cls.__name__}.{name}", lambda: _construct(cls, **{name: wrong_type}))
    if bad_value is not ANY:
        raises(ValueError, f"{cls.__name__}.{name}", lambda: _construct(cls, **{name: bad_value}))


@pytest.mark.parametrize("cls", list(WRAPPER_BAD), ids=[c.__name__ for c in WRAPPER_BAD])
def test_wrapper_unknown_argument_is_pythons_type_error_naming_the_class(cls):
    with pytest.raises(TypeError, match=rf"^{cls.__name__}\.__init__\(\) got an unexpected keyword argument 'bogus'"):
        _construct(cls, bogus=1)


def test_frozen_reward_switched_after_construction_is_checked():
    env = TerminalFreeze(_Env())
    env.frozen_reward = "zero"
    raises(ValueError, "TerminalFreeze.frozen_reward", lambda: setattr(env, "frozen_reward", "half"))
    assert env.frozen_reward == "zero"


def test_declared_step_budget_is_checked_as_the_envs_field():
    class BadBudget(_Env):
        step_budget = "3"

    class ZeroBudget(_Env):
        step_budget = 0

    raises(TypeError, "BadBudget.step_budget", lambda: MaxStepsTruncation(BadBudget()).reset())
    raises(ValueError, "ZeroBudget.step_budget", lambda: MaxStepsTruncation(ZeroBudget()).reset())


def test_vector_and_pool_arguments_follow_the_rule():
    never = [lambda: pytest.fail("no sub-env is built for a bad argument")]
    raises(TypeError, "ThreadedVectorEnv.max_workers", lambda: ThreadedVectorEnv(never, max_workers="2"))
    raises(ValueError, "ThreadedVectorEnv.max_workers", lambda: ThreadedVectorEnv(never, max_workers=0))
    raises(ValueError, "ThreadedVectorEnv.autoreset_mode", lambda: ThreadedVectorEnv(never, autoreset_mode="same-step"))
    raises(TypeError, "ThreadedVectorEnv.autoreset_mode", lambda: ThreadedVectorEnv(never, autoreset_mode=1))
    raises(TypeError, "make_threaded_vec.num_envs", lambda: make_threaded_vec("ReasoningGym-v0", num_envs="2"))
    raises(ValueError, "make_threaded_vec.num_envs", lambda: make_threaded_vec("ReasoningGym-v0", num_envs=0))
    raises(TypeError, "ReasoningGymConfig.bogus", lambda: make_threaded_vec("ReasoningGym-v0", 1, bogus=1))
    raises(TypeError, "WorkerPool.handler", lambda: WorkerPool(3))
    raises(ValueError, "WorkerPool.handler", lambda: WorkerPool("no_colon"))


def test_a_threaded_vector_env_refuses_a_str_batch_and_any_use_after_close():
    envs = make_threaded_vec("ReasoningGym-v0", 2, dataset="leg_counting")
    envs.reset(seed=0)
    # A str is iterable: it would have stepped each sub-env with one of its characters, or said "expected 2, got 18".
    raises(TypeError, "ThreadedVectorEnv.step actions", lambda: envs.step("<answer>1</answer>"))
    envs.close()
    for method, call in (("step", lambda: envs.step(["a", "b"])), ("reset", lambda: envs.reset(seed=0)),
                         ("call", lambda: envs.call("spec"))):
        raises(RuntimeError, f"ThreadedVectorEnv.{method}", call)


# --------------------------------------------------------------------------- env arguments and reset options


@pytest.fixture(scope="module")
def raw_envs():
    envs = {
        "QEDMath-v0": QEDMathEnv(problem_types=["proof"]),  # no verifier workers needed
        "FinQA-v0": FinQAEnv(),
        "ReasoningGym-v0": ReasoningGymEnv(dataset="leg_counting"),
    }
    yield envs
    for env in envs.values():
        env.close()


RESET_CASES = [
    ("QEDMath-v0", {"index": 0}, TypeError, "QEDMathEnv.reset options['index']"),
    ("QEDMath-v0", {"problem_id": 3}, TypeError, "QEDMathEnv.reset options['problem_id']"),
    ("QEDMath-v0", {"problem_id": "nope"}, ValueError, "QEDMathEnv.reset options['problem_id']"),
    ("ReasoningGym-v0", {"indx": 0}, TypeError, "ReasoningGymEnv.reset options['indx']"),
    ("ReasoningGym-v0", {"index": "3"}, TypeError, "ReasoningGymEnv.reset options['index']"),
    ("ReasoningGym-v0", {"index": True}, TypeError, "ReasoningGymEnv.reset options['index']"),
    ("ReasoningGym-v0", {"index": -1}, ValueError, "ReasoningGymEnv.reset options['index']"),
    ("FinQA-v0", {"problem_id": "fq001"}, TypeError, "FinQAEnv.reset options['problem_id']"),
    ("FinQA-v0", {"question_id": 3}, TypeError, "FinQAEnv.reset options['question_id']"),
    ("FinQA-v0", {"question_id": "nope"}, ValueError, "FinQAEnv.reset options['question_id']"),
    ("FinQA-v0", {"index": 1.0}, TypeError, "FinQAEnv.reset options['index']"),
    ("FinQA-v0", {"index": 10_000}, ValueError, "FinQAEnv.reset options['index']"),
]


@pytest.mark.parametrize("env_id, options, kind, prefix", RESET_CASES)
def test_reset_options_follow_the_rule(raw_envs, env_id, options, kind, prefix):
    raises(kind, prefix, lambda: raw_envs[env_id].reset(seed=0, options=options))


@pytest.mark.parametrize("env_id", list(ENV_CLASSES))
def test_render_mode_follows_the_rule(env_id):
    cls = ENV_CLASSES[env_id]  # on the raw class: gym.make handles render_mode itself first
    raises(TypeError, f"{cls.__name__}.render_mode", lambda: cls(render_mode=3))
    raises(ValueError, f"{cls.__name__}.render_mode", lambda: cls(render_mode="rgb_array"))


def test_defaults_are_valid():
    """The bad values above are the only thing wrong in each call."""
    QEDMathConfig().validate()
    FinQAConfig().validate()
    for cls in (VerifierConfig, PoolConfig, AuditSettings, JudgeConfig):
        cls.from_value(None)
    TerminalFreeze(_Env()), HideInfoKeys(_Env()), MaxStepsTruncation(_Env()).reset(), UnicodeText(8)
    assert np.asarray([UnicodeText(np.int64(8)).max_length])[0] == 8


@pytest.mark.parametrize("tokens, kind", [(-1, ValueError), (10**5000, ValueError), (2.0, TypeError), (True, TypeError)],
                         ids=["negative", "5000-digits", "float", "bool"])
def test_trainer_num_tokens_follows_the_rule_even_when_huge(tokens, kind):
    # A 5000-digit count once escaped as OverflowError from length shaping.
    env = gym.make("QEDMath-v0", max_tokens=100)
    env.reset(seed=0)
    with pytest.raises(kind, match=r"^TrainerAction\.num_tokens "):
        env.step({"text": "\\boxed{1}", "num_tokens": tokens})
    with pytest.raises(TypeError, match=r"^TrainerAction\.tokens is not an option"):
        env.step({"text": "\\boxed{1}", "tokens": 3})
    env.close()

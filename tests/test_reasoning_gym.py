"""ReasoningGym-v0: grading, reproducibility, bad input, and the exploit the stack closes (raw vs stacked)."""

import re
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from gym_integrity.envs.reasoning_gym import ReasoningGymEnv

SCAN_DATASETS = ["leg_counting", "basic_arithmetic", "chain_sum", "letter_counting", "word_sorting",
                 "spell_backward", "gcd", "lcm", "prime_factorization", "base_conversion", "caesar_cipher",
                 "count_bits"]
NOTE = re.compile(r"^Graded: [a-z_]+ \(score \d\.\d\d\)\.$")
# Every leaf the stacked env may put in info, and nothing else (a new key must be reviewed for leaks).
ALLOWED_INFO_LEAVES = {"problem_id", "dataset", "index", "verdict", "no_verdict", "score", "cause", "attempt",
                       "metrics.reward/score", "integrity.frozen", "integrity.ignored_steps", "integrity.steps",
                       "integrity.step_budget"}


def leaves(value, prefix=""):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from leaves(v, f"{prefix}.{k}" if prefix else str(k))
    else:
        yield prefix, value


def answer_of(env):
    return env.unwrapped.gold_answers()[0]


def assert_info_clean(info, item):
    answer = str(item["answer"])
    metadata_keys = set(item["metadata"])
    for path, value in leaves(info):
        assert path in ALLOWED_INFO_LEAVES, f"unexpected info key {path!r}"
        assert path.rsplit(".", 1)[-1] not in metadata_keys - {"source_dataset"}, path
        if path == "problem_id":
            assert value == f"{info['dataset']}/{info['index']}"
        elif isinstance(value, str) and path not in ("dataset", "verdict"):
            assert answer not in value, f"answer in info[{path!r}]"


def test_check_env_passes_raw_and_stacked():
    env = gym.make("ReasoningGym-v0")
    check_env(env.unwrapped, skip_render_check=True)
    with pytest.warns(UserWarning, match="different from the unwrapped"):
        check_env(env, skip_render_check=True)


def test_correct_answer_scores_one_and_wrong_scores_zero():
    env = gym.make("ReasoningGym-v0", dataset="basic_arithmetic")
    env.reset(seed=5)
    _, reward, terminated, truncated, info = env.step(f"thinking...<answer>{answer_of(env)}</answer>")
    assert (reward, terminated, truncated, info["verdict"], info["no_verdict"]) == (1.0, True, False, "correct", False)
    env.reset(seed=5)
    _, reward, _, _, info = env.step(r"the answer is \boxed{123456789}")
    assert (reward, info["verdict"]) == (0.0, "incorrect")
    env.reset(seed=5)
    assert env.step("I give up")[4]["verdict"] == "no_answer"


def test_partial_credit_is_kept():
    env = gym.make("ReasoningGym-v0", dataset="leg_counting")
    env.reset(seed=2)
    _, reward, _, _, info = env.step(f"<answer>{answer_of(env)} legs</answer>")
    assert 0.0 < reward < 1.0 and info["verdict"] == "partial"


def test_wrong_then_correct_stays_zero_through_the_stack():
    env = gym.make("ReasoningGym-v0")
    env.reset(seed=11)
    assert env.step("<answer>-1</answer>")[1] == 0.0
    for _ in range(3):
        obs, reward, terminated, _, info = env.step(f"<answer>{answer_of(env)}</answer>")
        assert reward == 0.0 and terminated and info["integrity"]["frozen"]
    assert info["integrity"]["ignored_steps"] == 3


def test_raw_env_shows_the_exploit():
    env = ReasoningGymEnv()
    env.reset(seed=11)
    assert env.step("<answer>-1</answer>")[1] == 0.0
    assert env.step(f"<answer>{answer_of(env)}</answer>")[1] == 1.0  # paid in full after the end


@pytest.mark.parametrize("mode, extra_reward", [("repeat", 1.0), ("zero", 0.0)])
def test_correct_then_extra_step(mode, extra_reward):
    import gym_integrity

    env = gym_integrity.make("ReasoningGym-v0", frozen_reward=mode)
    env.reset(seed=4)
    assert env.step(f"<answer>{answer_of(env)}</answer>")[1] == 1.0
    assert env.step(f"<answer>{answer_of(env)}</answer>")[1] == extra_reward
    env.reset(seed=5)  # the next item is scored normally
    assert env.step(f"<answer>{answer_of(env)}</answer>")[1] == 1.0


def test_no_answer_or_metadata_leaks_over_100_episodes_across_datasets():
    episodes = 0
    for name in SCAN_DATASETS[:10]:
        env = gym.make("ReasoningGym-v0", dataset=name)
        raw = env.unwrapped
        for seed in range(10):
            obs, info = env.reset(seed=seed)
            item = raw._dataset[info["index"]]
            assert obs == raw._question() and obs.startswith(item["question"].rstrip())
            assert_info_clean(info, item)
            for action in ("<answer>wrong</answer>", f"<answer>{item['answer']}</answer>"):
                obs, reward, terminated, truncated, info = env.step(action)
                assert NOTE.match(obs), obs
                assert_info_clean(info, item)
            assert str(item["answer"]) not in env.render().replace(item["question"], "")
            assert str(item["answer"]) not in repr(env) + str(env.spec)
            episodes += 1
    assert episodes == 100


def test_the_scan_catches_the_raw_env():
    raw = ReasoningGymEnv(dataset="leg_counting")
    _, info = raw.reset(seed=0)
    with pytest.raises(AssertionError):
        assert_info_clean(info, raw._dataset[info["index"]])
    assert raw._privileged()["metadata"]["total_legs"] == int(answer_of(raw))  # why metadata is hidden


def test_seeded_reset_is_reproducible_and_forms_groups():
    env = gym.make("ReasoningGym-v0", dataset="basic_arithmetic")
    first = [env.reset(seed=s)[0] for s in range(5)]
    assert first == [env.reset(seed=s)[0] for s in range(5)]
    assert len(set(first)) == 5
    other = gym.make("ReasoningGym-v0", dataset="basic_arithmetic")
    assert other.reset(seed=3)[0] == first[3]
    assert env.reset(options={"index": 17})[1]["index"] == 17
    with pytest.raises(ValueError, match="index"):
        env.reset(options={"index": -1})


def test_huge_size_generates_lazily():
    env = gym.make("ReasoningGym-v0", size=10**12)
    _, info = env.reset(seed=0)
    assert 0 <= info["index"] < 10**12


def test_composite_with_weights():
    env = gym.make("ReasoningGym-v0", dataset=[{"name": "leg_counting", "weight": 1},
                                               {"name": "basic_arithmetic", "weight": 3, "config": {"min_terms": 2}}])
    seen = {env.reset(seed=s)[1]["dataset"] for s in range(40)}
    assert seen == {"leg_counting", "basic_arithmetic"}
    env.reset(seed=1)
    assert env.step(f"<answer>{answer_of(env)}</answer>")[1] == 1.0
    mapping = gym.make("ReasoningGym-v0", dataset={"gcd": 1.0, "lcm": 1.0})
    assert mapping.reset(seed=0)[1]["dataset"] in {"gcd", "lcm"}


@pytest.mark.parametrize("kwargs, match", [
    ({"dataset": "leg_countin"}, "Did you mean.*leg_counting.*Valid choices"),
    ({"dataset_config": {"min_animals": -1}}, "min_animals"),
    ({"dataset_config": {"bogus": 1}}, "no option.*bogus"),
    ({"answer_format": "xml"}, "answer_format"),
    ({"size": 0}, "size"),
    ({"dataset": [{"name": "gcd", "weight": 0}]}, "weight"),
    ({"dataset": [{"name": "gcd"}, {"name": "gcd"}]}, "twice"),
])
def test_bad_config_fails_at_make(kwargs, match):
    with pytest.raises(ValueError, match=match):
        gym.make("ReasoningGym-v0", **kwargs)


def test_bad_types_fail_at_make_and_step():
    with pytest.raises(TypeError, match="unknown option"):
        gym.make("ReasoningGym-v0", datset="gcd")
    with pytest.raises(TypeError, match="size must be an int"):
        gym.make("ReasoningGym-v0", size="10")
    env = gym.make("ReasoningGym-v0")
    env.reset(seed=0)
    with pytest.raises(TypeError, match="action must be a str"):
        env.step(42)


@pytest.mark.parametrize("text", ["", "x" * 1_000_000, "<answer>" + "9" * 1_000_000 + "</answer>",
                                  "\x00\x07\x1b[31m<answer>\x00</answer>", "\\boxed{{{", "<answer>}{</answer>",
                                  "<answer></answer>", "</answer><answer>", "🙂" * 1000])
def test_any_text_is_graded(text):
    for name in ("leg_counting", "basic_arithmetic", "word_sorting"):
        env = gym.make("ReasoningGym-v0", dataset=name)
        env.reset(seed=0)
        _, reward, terminated, _, info = env.step(text)
        assert terminated and reward == 0.0
        assert info["verdict"] in {"incorrect", "no_answer", "unparsable", "too_long"}


def test_vector_envs_sync_and_async():
    for mode, vector_kwargs in (("sync", {}), ("async", {"shared_memory": False})):
        vec = gym.make_vec("ReasoningGym-v0", num_envs=3, vectorization_mode=mode, vector_kwargs=vector_kwargs,
                           dataset="basic_arithmetic")
        obs, info = vec.reset(seed=[7, 7, 8])
        assert obs[0] == obs[1] != obs[2]
        obs, reward, terminated, truncated, info = vec.step(("<answer>0</answer>",) * 3)
        assert terminated.all() and not truncated.any() and "privileged" not in info
        assert reward.dtype == np.float64
        vec.close()


def test_import_is_light_and_module_prefix_works():
    code = ("import sys, gymnasium as gym\n"
            "env = gym.make('gym_integrity:ReasoningGym-v0')\n"
            "import gym_integrity\n"
            "heavy = [m for m in ('datasets', 'math_verify', 'openai') if m in sys.modules]\n"
            "assert not heavy, heavy\n")
    subprocess.run([sys.executable, "-c", code], check=True)
    code = ("import sys, gym_integrity\n"
            "heavy = [m for m in ('reasoning_gym', 'datasets', 'math_verify', 'openai') if m in sys.modules]\n"
            "assert not heavy, heavy\n")
    subprocess.run([sys.executable, "-c", code], check=True)

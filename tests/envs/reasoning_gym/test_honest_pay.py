"""Honest answers are paid (issue 35, deliverable 2): the items benchmarks/honest_pay.py found refused, by index.

Each case is a real reasoning-gym item at its index in the dataset's default
generator: a false refusal fixed for its class (codeio's JSON escapes), or an
item the draw no longer hands out: no answer could win it (a gold longer than
strict scoring reads), or its gold is not an answer (an integral sympy left
unevaluated).
"""

from __future__ import annotations

import gymnasium as gym
import pytest

import gym_integrity  # noqa: F401  (registers the envs)
from gym_integrity.grading.language import LANGUAGES, check

#: codeio items whose gold is JSON with escaped quotes or line breaks (the draws of seeds 57, 63, 82).
CODEIO_ESCAPED = (6519, 45568, 71695)
#: intermediate_integration items whose gold sympy left unevaluated (``-Integral(x*sin(3*x), x) + C``; seeds 15, 55).
UNEVALUATED = (93122, 96360)
#: palindrome_partitioning items whose gold (every partition of a 15-letter string) is over 4096 characters.
PALINDROME_TOO_LONG = (94490, 65459)


def test_json_escapes_are_in_codeio_language_and_python_escapes_stay_out_of_the_others():
    """codeio's scorer only parses JSON, whose strings escape with backslashes; a scorer that may read the answer as
    Python still refuses them (``\\x5f\\x5f`` spells a dunder)."""
    assert check("json_similarity", r'{"text": "a\"b\nc", "name": "__main__"}', {}) is None
    python_read = [name for name, spec in LANGUAGES.items() if spec.python]
    assert "arithmetic" in python_read and "json_similarity" not in python_read
    for name in python_read:
        assert check(name, "1+\\x5f", {}) == "backslashes are not part of the answer language", name
        assert check(name, "1+__x", {}) == "double underscores are not part of the answer language", name


@pytest.fixture(scope="module")
def codeio():
    env = gym.make("ReasoningGym-v0", dataset="codeio")
    yield env
    env.close()


@pytest.mark.parametrize("index", CODEIO_ESCAPED)
def test_a_codeio_gold_with_json_escapes_is_paid_and_a_changed_one_is_not(codeio, index):
    codeio.reset(options={"index": index})
    gold = codeio.unwrapped.gold_answers()[0]
    assert "\\" in gold
    assert codeio.step(f"<answer>{gold}</answer>")[1] == 1.0
    codeio.reset(options={"index": index})
    wrong = gold.replace("\\", "\\\\", 1)  # one escape doubled: another string
    assert codeio.step(f"<answer>{wrong}</answer>")[1] < 1.0


def test_an_item_whose_gold_is_longer_than_strict_scoring_reads_is_not_drawn():
    env = gym.make("ReasoningGym-v0", dataset="palindrome_partitioning", balanced_draw=True)
    base = env.unwrapped
    for index in PALINDROME_TOO_LONG:
        assert len(base._dataset[index]["answer"]) > base.config.max_answer_chars
        assert base._sample_item(index) is None
    for seed in (7, 84):  # the seeds that drew them before
        env.reset(seed=seed)
        assert base._index not in PALINDROME_TOO_LONG
        assert env.step(f"<answer>{base.gold_answers()[0]}</answer>")[1] == 1.0
    env.close()


@pytest.mark.parametrize("balanced", [False, True])
def test_the_answer_cap_is_the_one_the_draw_reads(balanced):
    """The class, on a cheap generator: with a 6-character cap, no drawn gold is longer (either draw)."""
    env = gym.make("ReasoningGym-v0", dataset="spell_backward", max_answer_chars=6, balanced_draw=balanced)
    golds = []
    for seed in range(30):
        env.reset(seed=seed)
        golds.append(env.unwrapped.gold_answers()[0])
    assert max(map(len, golds)) <= 6 and min(map(len, golds)) >= 1, golds
    unfiltered = gym.make("ReasoningGym-v0", dataset="spell_backward", scoring="reasoning_gym")
    lengths = []
    for seed in range(30):
        unfiltered.reset(seed=seed)
        lengths.append(len(unfiltered.unwrapped.gold_answers()[0]))
    assert max(lengths) > 6  # the generator makes longer ones: the cap had work to do


def test_an_integral_whose_gold_sympy_left_unevaluated_is_not_drawn_and_its_honest_answer_is_paid():
    env = gym.make("ReasoningGym-v0", dataset="intermediate_integration", balanced_draw=True)
    base = env.unwrapped
    for index in UNEVALUATED:
        assert "Integral(" in base._dataset[index]["answer"]
        assert base._sample_item(index) is None
    env.reset(options={"index": 93122})  # still reachable by index: the antiderivative is paid, the gold's form not
    assert env.step("<answer>x*cos(3*x)/3 - sin(3*x)/9 + C</answer>")[1] == 1.0
    env.reset(options={"index": 93122})
    assert env.step("<answer>-Integral(x*sin(3*x), x) + C</answer>")[1] == 0.0
    for seed in (15, 55):  # the seeds that drew them before
        env.reset(seed=seed)
        assert base._index not in UNEVALUATED
        assert env.step(f"<answer>{base.gold_answers()[0]}</answer>")[1] == 1.0
    env.close()

"""QEDMath reward shaping as pure functions: presets, stripping, collapse, discount, overlong penalty."""

from __future__ import annotations

import pytest

from gym_integrity.envs.qed_math.shaping import (
    REWARD_PRESETS,
    answer_reward,
    overlong_penalty,
    shape_reward,
    strip_reasoning,
)
from gym_integrity.protocol import NO_VERDICTS, Grade, Verdict


@pytest.mark.parametrize("preset", sorted(REWARD_PRESETS))
def test_no_verdicts_give_zero_in_every_preset(preset):
    for verdict in NO_VERDICTS:
        assert answer_reward(verdict, preset) == 0.0


@pytest.mark.parametrize("preset", sorted(REWARD_PRESETS))
def test_no_verdict_grades_give_zero_whatever_the_verdict(preset):
    for verdict in (Verdict.TIMEOUT, Verdict.GRADER_ERROR):
        assert answer_reward(Grade(verdict, 0.0, no_verdict=True), preset) == 0.0


@pytest.mark.parametrize("preset, expected", [("base", -1.0), ("pure_success", 0.0)])
def test_graded_timeout_pays_like_unparsable(preset, expected):
    """Issue 9: an answer that times out its own verification must not escape the penalty of a bad answer."""
    timeout = Grade(Verdict.TIMEOUT, 0.0, cause="ran past its budget", no_verdict=False)
    assert answer_reward(timeout, preset) == answer_reward(Grade(Verdict.UNPARSABLE), preset) == expected
    assert answer_reward(timeout, preset) <= answer_reward(Grade(Verdict.INCORRECT), preset)


def test_preset_tables():
    assert [answer_reward(v, "pure_success") for v in (Verdict.CORRECT, Verdict.INCORRECT, Verdict.NO_ANSWER,
                                                       Verdict.UNPARSABLE)] == [1.0, 0.0, 0.0, 0.0]
    assert [answer_reward(v, "base") for v in (Verdict.CORRECT, Verdict.INCORRECT, Verdict.NO_ANSWER,
                                               Verdict.UNPARSABLE)] == [1.0, -0.5, -1.0, -1.0]


@pytest.mark.parametrize(
    "text, delimiters, graded",
    [
        ("think</think>answer", ("</think>",), "answer"),
        ("a</think>b</think>c", ("</think>",), "c"),
        ("no delimiter", ("</think>",), "no delimiter"),
        ("x</think>y<|end|>z", ("</think>", "<|end|>"), "z"),
        ("x<|end|>y</think>z", ("</think>", "<|end|>"), "z"),
        ("keep</think>all", (), "keep</think>all"),
    ],
)
def test_strip_reasoning(text, delimiters, graded):
    assert strip_reasoning(text, delimiters) == graded


def test_overlong_penalty_is_linear_over_the_buffer():
    values = [overlong_penalty(n, max_tokens=1000, buffer_tokens=100) for n in (0, 900, 925, 950, 1000, 5000)]
    assert values == [0.0, 0.0, -0.25, -0.5, -1.0, -1.0]
    assert overlong_penalty(950, max_tokens=1000, buffer_tokens=100, factor=0.5) == -0.25
    assert overlong_penalty(1001, max_tokens=1000, buffer_tokens=0) == -1.0
    assert overlong_penalty(1000, max_tokens=1000, buffer_tokens=0) == 0.0


def test_shape_reward_discount_then_penalty_and_skipped_without_tokens():
    assert shape_reward(0.5, num_tokens=None, discount_factor=0.5, max_tokens=10, buffer_tokens=5) == (0.5, 0.0)
    shaped, penalty = shape_reward(1.0, num_tokens=8, discount_factor=0.9, max_tokens=10, buffer_tokens=4)
    assert penalty == pytest.approx(-0.5)
    assert shaped == pytest.approx(0.9 ** 8 - 0.5)
    assert shape_reward(-0.5, num_tokens=3, discount_factor=1.0, max_tokens=None, buffer_tokens=0) == (-0.5, 0.0)


def test_a_penalty_is_never_discounted_so_padding_a_wrong_answer_does_not_pay():
    """Found by the hostile-policy review of issue 13: -0.5 * 0.999**4000 is about -0.009, so padding paid."""
    for base in (-0.5, -1.0):
        short = shape_reward(base, num_tokens=10, discount_factor=0.999, max_tokens=8192, buffer_tokens=1024)
        padded = shape_reward(base, num_tokens=7168, discount_factor=0.999, max_tokens=8192, buffer_tokens=1024)
        assert padded[0] <= short[0] == base
    assert shape_reward(1.0, num_tokens=100, discount_factor=0.99, max_tokens=None, buffer_tokens=0)[0] < 1.0

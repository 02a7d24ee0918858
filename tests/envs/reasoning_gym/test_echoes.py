"""Answers echoed from the question: items whose answer is a term already shown are not drawn under strict scoring.

number_sequence's generator lets a sequence settle on a value or a two-cycle (``3, 1, 0, 0, ?``), so repeating
a shown term was the answer on about a third of the items: no rule inferred. The tests show the echo paid on the
items the lenient mode draws, and unpaid on what strict draws, where the gold is still paid.
"""

from __future__ import annotations

import gymnasium as gym

import gym_integrity  # noqa: F401
from gym_integrity.envs.reasoning_gym import replay

SEEDS = range(300)


def _terms(question: str) -> list[str]:
    return [term.strip() for term in question.split("\n\n")[0].split(",")[:-1]]


def _echo_rates(scoring: str) -> tuple[float, float, float, float]:
    """Mean reward of repeating the last term, the one before it, a constant 0, and the gold, over SEEDS."""
    env = gym.make("ReasoningGym-v0", dataset="number_sequence", scoring=scoring)
    totals = [0.0, 0.0, 0.0, 0.0]
    for seed in SEEDS:
        question, info = env.reset(seed=seed)
        terms = _terms(question)
        gold = env.unwrapped._item["answer"]
        for k, answer in enumerate((terms[-1], terms[-2], "0", gold)):
            env.reset(seed=seed)
            totals[k] += env.step(f"<answer>{answer}</answer>")[1]
    env.close()
    return tuple(t / len(SEEDS) for t in totals)  # type: ignore[return-value]


def test_repeating_a_shown_term_is_paid_on_the_generators_items_and_not_on_strict_draws():
    last, before, zero, gold = _echo_rates("reasoning_gym")
    assert last > 0.2 and before > 0.2 and zero > 0.08 and gold == 1.0, (last, before, zero)
    last, before, zero, gold = _echo_rates("strict")
    assert (last, before) == (0.0, 0.0)
    assert zero < 0.03 and gold == 1.0, (zero, gold)


def test_settled_items_stay_reachable_by_index_and_the_draw_is_a_function_of_the_seed():
    env = gym.make("ReasoningGym-v0", dataset="number_sequence")
    raw = env.unwrapped
    drawn = [raw.reset(seed=s)[1]["index"] for s in range(50)]
    assert [raw.reset(seed=s)[1]["index"] for s in range(50)] == drawn
    settled = next(i for i in range(200) if not replay.sequence_has_not_settled(raw.reset(options={"index": i})
                                                                                 and raw._item))
    assert raw._index == settled
    echoes = _terms(raw._item["question"])[-2:]
    assert raw._item["answer"] in echoes  # reachable by index, and an echo is its answer
    env.close()

"""Answers echoed from the question: items whose answer is already shown in the question are not drawn under strict.

number_sequence's generator lets a sequence settle on a value or a two-cycle (``3, 1, 0, 0, ?``), so repeating
a shown term was the answer on about a third of the items: no rule inferred. Tasks that transform an input
leave it as it is on some items (string_insertion on 96%: no pattern in the string), so copying the input is
paid there. The tests show each echo paid on the items the lenient mode draws (the generator's own), and
unpaid on what strict draws, where the gold is still paid.
"""

from __future__ import annotations

import re

import gymnasium as gym
import pytest

import gym_integrity  # noqa: F401
from gym_integrity.envs.reasoning_gym.tasks import number_sequence

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
    settled = next(i for i in range(200) if not number_sequence.sequence_has_not_settled(raw.reset(options={"index": i})
                                                                                 and raw._item))
    assert raw._index == settled
    echoes = _terms(raw._item["question"])[-2:]
    assert raw._item["answer"] in echoes  # reachable by index, and an echo is its answer
    env.close()


def _after_colon(question: str) -> str:
    return question.split("\n\n")[-2].rsplit(":", 1)[1].strip()


def _last_line(question: str) -> str:
    return question.split("\n\n")[-2].strip().splitlines()[-1].strip()


def _last_grid(question: str) -> str:
    """The question's last block of lines without words: the input grid or matrix."""
    lines = question.split("\n\n")[-2].strip().splitlines()
    grid: list[str] = []
    for line in reversed(lines):
        if not line.strip() or re.search(r"[A-Za-z]{2,}", line):
            break
        grid.insert(0, line.strip())
    return "\n".join(grid)


def _last_input_list(question: str) -> str:
    return re.findall(r"Input:\s*(\[[^\]]*\])", question)[-1]


def _first_matrix(question: str) -> str:
    return question.split("For the following matrix:\n", 1)[1].split("\n\n", 1)[0]


# dataset -> (the input as the question shows it, full payments of its copy in 200 lenient draws: at least)
INPUT_ECHOES = {
    "string_insertion": (_after_colon, 150),
    "string_manipulation": (_last_line, 40),
    "rotate_matrix": (_last_grid, 30),
    "pool_matrix": (_last_grid, 30),
    "rearc": (_last_grid, 12),
    "binary_matrix": (_last_grid, 6),
    "word_sorting": (_after_colon, 3),
    "list_functions": (_last_input_list, 6),
    "manipulate_matrix": (_first_matrix, 3),
}


def _full_payments(name: str, scoring: str, answer_for) -> tuple[int, int]:
    """(answers paid 1.0, draws whose answer is non-empty) over 200 seeds; an empty answer is not an answer."""
    env = gym.make("ReasoningGym-v0", dataset=name, scoring=scoring)
    paid = answerable = 0
    for seed in range(200):
        question, _ = env.reset(seed=seed)
        answer = answer_for(question, env.unwrapped._item)
        answerable += bool(answer.strip())
        paid += env.step(f"<answer>{answer}</answer>")[1] == 1.0
    env.close()
    return paid, answerable


@pytest.mark.parametrize("name", sorted(INPUT_ECHOES))
def test_the_input_copied_is_paid_on_the_generators_items_and_not_on_strict_draws(name):
    echo, at_least = INPUT_ECHOES[name]
    assert _full_payments(name, "reasoning_gym", lambda question, item: echo(question))[0] >= at_least
    assert _full_payments(name, "strict", lambda question, item: echo(question))[0] == 0
    paid, answerable = _full_payments(name, "strict", lambda question, item: item["answer"])
    assert paid == answerable >= 195


def test_power_function_draws_no_power_that_needs_no_computing():
    """x^0 is 1 and x^1 the base shown: a constant 1 and the base copied were paid on the generator's items."""
    def base(question: str, item) -> str:
        return re.search(r"Compute (-?[\d.]+)\^", question).group(1)

    assert _full_payments("power_function", "reasoning_gym", lambda question, item: "1")[0] >= 12
    assert _full_payments("power_function", "reasoning_gym", base)[0] >= 8
    assert _full_payments("power_function", "strict", lambda question, item: "1")[0] == 0
    assert _full_payments("power_function", "strict", base)[0] == 0
    paid, answerable = _full_payments("power_function", "strict", lambda question, item: item["answer"])
    assert paid == answerable == 200


def test_game_of_life_draws_no_board_on_which_every_cell_dies():
    """An empty board of the size shown needs no simulation: paid where every cell dies (12% of default items)."""
    def empty(question: str, item) -> str:
        board = re.findall(r"\[\[.*?\]\]", question, re.S)[-1]
        return re.sub(r"\d", "0", board)

    assert _full_payments("game_of_life", "reasoning_gym", empty)[0] >= 12
    assert _full_payments("game_of_life", "strict", empty)[0] == 0
    paid, answerable = _full_payments("game_of_life", "strict", lambda question, item: item["answer"])
    assert paid == answerable == 200

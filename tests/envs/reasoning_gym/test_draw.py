"""The balanced draw (draw.py): labels equally likely on skewed datasets, reproducible seeds, no answer in its question,
and no rule strict scoring holds answers to left unstated."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

import gymnasium as gym
import pytest

import gym_integrity  # noqa: F401  (registers the envs)
from gym_integrity.envs.reasoning_gym import draw, draw_plans
from gym_integrity.envs.reasoning_gym.config import available_datasets

SEEDS = range(400)


def _labels(env: gym.Env, seeds: range) -> Counter[str | None]:
    counts: Counter[str | None] = Counter()
    for seed in seeds:
        env.reset(seed=seed)
        counts[draw.label_of(env.unwrapped._item["answer"])] += 1
    return counts


def _natural(dataset: str, n: int = 400) -> Counter[str | None]:
    """The generator's own label counts over its first ``n`` items: the skew the draw removes."""
    env = gym.make("ReasoningGym-v0", dataset=dataset)
    base = env.unwrapped
    return Counter(draw.label_of(base._dataset[i]["answer"]) for i in range(n))


@pytest.mark.parametrize("dataset", ["syllogism", "circuit_logic"])
def test_yes_no_datasets_draw_each_answer_half_the_time(dataset):
    natural = _natural(dataset)
    assert max(natural.values()) / sum(natural.values()) >= 0.58  # skewed as generated: the draw has work to do
    counts = _labels(gym.make("ReasoningGym-v0", dataset=dataset), SEEDS)
    assert len(counts) == 2
    assert all(abs(n / len(SEEDS) - 0.5) <= 0.01 for n in counts.values()), counts


@pytest.mark.parametrize("dataset", ["letter_counting", "gcd", "shortest_path"])
def test_no_label_of_a_long_tailed_dataset_beats_a_uniform_guess(dataset):
    natural = _natural(dataset)
    top = max(natural.values()) / sum(natural.values())
    env = gym.make("ReasoningGym-v0", dataset=dataset)
    counts = _labels(env, SEEDS)
    plan = draw_plans.plan_for(env.unwrapped._key, "strict", None, env.unwrapped.size)
    assert top > 2 * (1 / plan.k + 0.03)  # the most common answer as generated is far above chance
    share = max(counts.values()) / len(SEEDS)
    assert share <= min(plan.cap + 0.02, 1 / plan.k + 0.03), (counts.most_common(3), plan.cap, plan.k)


def test_a_seed_gives_the_same_item_every_time_and_in_another_process():
    env = gym.make("ReasoningGym-v0", dataset="syllogism")
    first = [env.reset(seed=seed)[1]["problem_id"] for seed in range(20)]
    again = [env.reset(seed=seed)[1]["problem_id"] for seed in reversed(range(20))][::-1]
    assert first == again
    stream = [env.reset(seed=7)[1]["problem_id"]] + [env.reset()[1]["problem_id"] for _ in range(9)]
    assert stream == [env.reset(seed=7)[1]["problem_id"]] + [env.reset()[1]["problem_id"] for _ in range(9)]
    code = ("import gymnasium as gym, gym_integrity\n"
            "env = gym.make('ReasoningGym-v0', dataset='syllogism')\n"
            "print(','.join(env.reset(seed=s)[1]['problem_id'] for s in range(20)))")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    assert other.stdout.strip().split(",") == first


def test_an_item_whose_answer_is_in_its_question_is_not_drawn():
    natural = gym.make("ReasoningGym-v0", dataset="prime_factorization").unwrapped._dataset
    echoed = sum(draw.answer_in_question(draw.label_of(natural[i]["answer"]), draw._tokens(natural[i]["question"]))
                 for i in range(300))
    assert echoed >= 20  # the primes: the question's number is the answer
    env = gym.make("ReasoningGym-v0", dataset="prime_factorization")
    for seed in range(300):
        question, _ = env.reset(seed=seed)
        answer = env.unwrapped._item["answer"]
        assert not draw.answer_in_question(draw.label_of(answer), draw._tokens(question)), (seed, answer)
    assert env.step(f"<answer>{env.unwrapped._item['answer']}</answer>")[1] == 1.0


def test_plan_on_made_up_items():
    def item(question: str, answer: str) -> dict[str, str]:
        return {"question": question, "answer": answer}

    # 3:1 skew over two options that every question lists: both kept (template), drawn half and half
    sample = [(i, item(f"Is {i} odd? Answer Yes or No.", "Yes" if i % 4 else "No")) for i in range(200)]
    plan = draw.build_plan(sample)
    assert plan.k == 2 and plan.cap == 0.5 and not any(plan.echoes(it) for _, it in sample)
    halves = Counter(plan.stratum(draw.stratum_position(seed, 0))[0] for seed in range(1000))
    assert halves["yes"] == pytest.approx(500, abs=2) and halves["no"] == pytest.approx(500, abs=2)
    # the answer copied from a question that is not the dataset's template is an echo
    assert plan.echoes(item("Factor 97.", "97")) and not plan.echoes(item("Factor 98.", "2 × 7 × 7"))


def test_a_selection_task_is_not_filtered():
    sample = [(i, item) for i, item in enumerate(
        {"question": f"Which of {i}, {i + 1}, {i + 2} is largest?", "answer": str(i + 2)} for i in range(100))]
    plan = draw.build_plan(sample)
    assert plan.echo_share == 1.0 and not plan.filters_echo


def test_propositional_logic_states_its_rule_and_pays_its_own_examples():
    env = gym.make("ReasoningGym-v0", dataset="propositional_logic", allow_above_chance=True)
    for seed in range(10):
        question, _ = env.reset(seed=seed)
        assert draw.STATED_RULES["propositional_logic"] in question
        example = draw.own_example(env.unwrapped._item)
        assert example is not None
        assert env.step(f"<answer>{example}</answer>")[1] == 1.0
    raw = gym.make("ReasoningGym-v0", dataset="propositional_logic", scoring="reasoning_gym")
    assert draw.STATED_RULES["propositional_logic"] not in raw.reset(seed=0)[0]


def test_a_dataset_above_chance_is_made_only_when_asked_for():
    for dataset in ("propositional_logic", {"gcd": 1, "propositional_logic": 1}):
        with pytest.raises(ValueError, match=r"propositional_logic is not drawn by default: .* 0\.250 .*"
                                             r"allow_above_chance=True"):
            gym.make("ReasoningGym-v0", dataset=dataset)
        gym.make("ReasoningGym-v0", dataset=dataset, allow_above_chance=True).reset(seed=0)
    gym.make("ReasoningGym-v0", dataset="propositional_logic", scoring="reasoning_gym")  # the task's own scorer
    assert set(draw.ABOVE_CHANCE) <= set(available_datasets())

"""Strict scoring pays the answer: constant answers earn no more than chance on every dataset; golds still earn 1.0.

The chance rate of a constant ``c`` on a dataset is the fraction of its items
whose gold equals ``c`` after normalisation (whitespace, case, numbers as
numbers): what always answering ``c`` earns from a scorer that pays only the
answer. Under the default scoring every dataset must keep every constant
(short answers, the empty answer, long digit sprays) at or below it. The
known lenient cases are shown still paying under the explicit opt-in
``scoring="reasoning_gym"``: the old behaviour, kept for whoever asks for it.
"""

from __future__ import annotations

import re
from fractions import Fraction

import gymnasium as gym
import pytest

import gym_integrity  # noqa: F401
from gym_integrity.envs.reasoning_gym import available_datasets
from gym_integrity.envs.reasoning_gym.tasks import propositional_logic
from gym_integrity.grading.numbers import RATIO

CONSTANTS = ["", "0", "1", "-1", "yes", "no", "Yes", "No", "True", "False", "A", "0.5", "None", "[]", "{}",
             "0123456789" * 5, " ".join(str(i) for i in range(1, 101))]
EPSILON = 1e-9  # strict scorers pay exactly: even the smallest substring credit must show
SEED = 1
ITEMS = 8
SLOW_ITEMS = {"knight_swap": 2, "futoshiki": 3, "sokoban": 3, "zebra_puzzles": 3, "intermediate_integration": 4,
              "arc_agi": 4, "puzzle24": 4, "countdown": 4, "codeio": 4, "sudoku": 4, "figlet_font": 4}
_NUMBER = re.compile(RATIO)


def item_count(name: str) -> int:
    return SLOW_ITEMS.get(name, ITEMS)


def normalised(text) -> object:
    """Whitespace collapsed and case-folded; a number as its exact value."""
    text = " ".join(str(text).split()).casefold()
    return Fraction(text) if _NUMBER.fullmatch(text) else text


def chance(constant: str, golds: list) -> float:
    """The fraction of items whose gold equals the constant after normalisation (a None gold never does)."""
    return sum(gold is not None and normalised(gold) == normalised(constant) for gold in golds) / len(golds)


def sweep(name: str, scoring: str, answers: list[str]) -> tuple[list, dict[str, float]]:
    """The golds of the dataset's first items, and the mean reward of each answer over them (raw env: every
    step is graded, so one reset serves every answer)."""
    env = gym.make("ReasoningGym-v0", dataset=name, size=max(item_count(name), 16), seed=SEED, scoring=scoring,
                   allow_above_chance=True)
    raw = env.unwrapped
    golds, totals = [], dict.fromkeys(answers, 0.0)
    for index in range(item_count(name)):
        raw.reset(options={"index": index})
        golds.append(raw._item["answer"])
        for answer in answers:
            totals[answer] += raw.step(f"<answer>{answer}</answer>")[1]
    env.close()
    return golds, {a: total / len(golds) for a, total in totals.items()}


@pytest.fixture(scope="module", autouse=True)
def warm_sandbox():
    """Keep the sandbox pool up for the whole module (each env's close would otherwise stop it)."""
    from gym_integrity.envs.reasoning_gym import sandbox

    pool = sandbox.acquire_pool()
    yield
    pool.release()


@pytest.mark.parametrize("name", available_datasets())
def test_no_constant_beats_chance_under_strict_scoring(name):
    golds, means = sweep(name, "strict", CONSTANTS)
    over = {c[:24]: (round(m, 4), chance(c, golds)) for c, m in means.items() if m > chance(c, golds) + EPSILON}
    assert not over, f"{name}: constant -> (mean reward, chance rate): {over}"


@pytest.mark.parametrize("name", available_datasets())
def test_gold_answers_still_score_one(name):
    env = gym.make("ReasoningGym-v0", dataset=name, size=max(item_count(name), 16), seed=SEED,
                   allow_above_chance=True)
    raw = env.unwrapped
    scored = []
    for index in range(item_count(name)):
        raw.reset(options={"index": index})
        metadata = raw._item["metadata"]
        reference = raw._item["answer"]
        if reference is None:  # tasks without one gold: the valid example their metadata keeps, if any
            reference = metadata.get("example_answer") or metadata.get("example_correct_answer")
        if reference is None:
            continue
        if name == "propositional_logic" and not propositional_logic.concludes(reference, raw._item):
            continue  # the task's example is built from its premises alone: strict does not pay that (test_plans.py)
        _, reward, _, _, info = raw.step(f"<answer>{reference}</answer>")
        scored.append((index, reward, info["verdict"]))
    env.close()
    assert all(reward == 1.0 for _, reward, _ in scored), f"{name}: {scored}"


def _non_numbers_shaped_like(gold: str) -> list[str]:
    """The gold with every number replaced by a non-finite or non-number token: right shape, no content."""
    return [_NUMBER.sub(token, gold) for token in ("NaN", "nan", "inf", "-Infinity", "None")]


@pytest.mark.parametrize("name", available_datasets())
def test_answers_shaped_like_the_gold_without_its_numbers_earn_nothing(name):
    """number_sorting's own scorer paid 1.0 for ``[NaN, NaN, ...]`` (json.loads reads NaN; NaN lists compare
    equal by identity): a content-free answer that only counts the question's numbers."""
    env = gym.make("ReasoningGym-v0", dataset=name, size=max(item_count(name), 16), seed=SEED,
                   allow_above_chance=True)
    raw = env.unwrapped
    paid = []
    for index in range(item_count(name)):
        raw.reset(options={"index": index})
        gold = raw._item["answer"]
        if gold is None or not _NUMBER.search(str(gold)):
            continue
        for answer in _non_numbers_shaped_like(str(gold)):
            reward = raw.step(f"<answer>{answer}</answer>")[1]
            if reward > 0.0:
                paid.append((index, answer[:40], reward))
    env.close()
    assert not paid, f"{name}: {paid}"


# Scorers that read the start of the answer and ignore the rest (a parser taking the first fraction or number)
# or whose per-position credit sums to 1.0 when the gold is a prefix: each paid the gold followed by more text.
TRAILING = {"letter_jumble": " extra words", "spell_backward": "xyz", "word_sorting": ", zebra",
            "fraction_simplification": " or 1/2", "time_intervals": ", or 7/9"}


@pytest.mark.parametrize("name", sorted(TRAILING))
def test_the_gold_followed_by_more_text_earns_nothing_under_strict(name):
    def paid(scoring: str) -> list[tuple[int, float]]:
        env = gym.make("ReasoningGym-v0", dataset=name, size=16, seed=SEED, scoring=scoring)
        raw, out = env.unwrapped, []
        for index in range(ITEMS):
            raw.reset(options={"index": index})
            gold = str(raw._item["answer"])
            assert raw.step(f"<answer>{gold}</answer>")[1] == 1.0, (name, index, gold)   # the gold alone: paid
            out.append((index, raw.step(f"<answer>{gold}{TRAILING[name]}</answer>")[1]))
        env.close()
        return out

    assert all(reward == 0.0 for _, reward in paid("strict")), f"{name}: {paid('strict')}"
    # The task's own scoring (the opt-in) pays it on some item: what strict scoring used to pay.
    assert any(reward >= 0.8 for _, reward in paid("reasoning_gym")), name


def test_time_intervals_pays_the_gold_duration_only():
    """Its own parser read a date's leading number and any digits after '.', and let minutes reach 60: a date with
    a time after it, and 14:34:59.1000 for 14:35, were paid in full. Strict compares durations in the gold's form."""
    env = gym.make("ReasoningGym-v0", dataset="time_intervals", size=64, seed=SEED)
    lenient = gym.make("ReasoningGym-v0", dataset="time_intervals", size=64, seed=SEED, scoring="reasoning_gym")
    raw, opt_in = env.unwrapped, lenient.unwrapped
    tried = 0
    for index in range(64):
        raw.reset(options={"index": index})
        opt_in.reset(options={"index": index})
        gold, kind = raw._item["answer"], raw._item["metadata"]["task_type"]
        if kind == "date":
            wrong = [f"{gold}, 05:00", f"{gold.split()[0]} DAYS, 23:59:59"]
            right = [gold.split()[0], gold.upper()]
        elif kind == "time" and not gold.endswith(":00"):
            hours, minutes = gold.split(":")
            wrong = [f"{hours}:{int(minutes) - 1:02d}:59.1000", f"{int(hours) - 1}:{int(minutes) + 60}"]
            right = [f"{gold}:00", f"{gold}:00.000"]
        else:
            continue
        for answer in right:
            assert raw.step(f"<answer>{answer}</answer>")[1] == 1.0, (gold, answer)
        for answer in wrong:
            assert raw.step(f"<answer>{answer}</answer>")[1] == 0.0, (gold, answer)
            assert opt_in.step(f"<answer>{answer}</answer>")[1] == 1.0, (gold, answer)   # what strict used to pay
            tried += 1
    env.close(), lenient.close()
    assert tried >= 20


def test_puzzle24_pays_24_made_from_the_items_numbers_only():
    """Its scorer checks four in-range numbers making 24 after int(), never that they are the puzzle's: 6*4*1*1 was
    paid on every item, and 7*7/2*1 (24.5) too. Strict requires the item's numbers and exactly 24."""
    env = gym.make("ReasoningGym-v0", dataset="puzzle24", size=16, seed=SEED)
    lenient = gym.make("ReasoningGym-v0", dataset="puzzle24", size=16, seed=SEED, scoring="reasoning_gym")
    raw, opt_in = env.unwrapped, lenient.unwrapped
    for index in range(ITEMS):
        raw.reset(options={"index": index})
        opt_in.reset(options={"index": index})
        gold, numbers = raw._item["answer"], raw._item["metadata"]["numbers"]
        assert raw.step(f"<answer>{gold}</answer>")[1] == 1.0, gold
        for constant in ("6*4*1*1", "7*7/2*1"):
            if sorted(numbers) != sorted([int(n) for n in constant.replace("/", "*").split("*")]):
                assert raw.step(f"<answer>{constant}</answer>")[1] == 0.0, (numbers, constant)
                assert opt_in.step(f"<answer>{constant}</answer>")[1] == 1.0, (numbers, constant)  # what it paid
    env.close(), lenient.close()


# The known lenient scorers: each pays a constant far above chance under the opt-in mode, and nothing under strict.
KNOWN_CASES = [
    ("game_of_life_halting", "yes", 0.99),  # bool(answer) == bool(gold): any non-empty answer
    ("coin_flip", "0", 0.5),                # |0 - p| <= 1e-4 for small p, prefix credit otherwise
    ("polynomial_equations", "0", 0.1),     # exp-decay credit for the root 0
    ("gcd", "-1", 0.1),                     # substring credit: the gold 1 is inside "-1"
    ("count_bits", CONSTANTS[-1], 0.003),   # substring credit for a digit spray
    ("leg_counting", CONSTANTS[-1], 0.0005),
]


@pytest.mark.parametrize("name, constant, margin", KNOWN_CASES)
def test_known_lenient_scorers_pay_only_under_the_opt_in(name, constant, margin):
    golds, lenient = sweep(name, "reasoning_gym", [constant])
    _, strict = sweep(name, "strict", [constant])
    assert lenient[constant] > chance(constant, golds) + margin
    assert strict[constant] <= chance(constant, golds) + EPSILON


def test_real_partial_credit_is_kept_under_strict():
    """tower_of_hanoi pays optimal/len for a longer valid solution: earned by content, so strict keeps it."""
    env = gym.make("ReasoningGym-v0", dataset="tower_of_hanoi", size=4, seed=SEED)
    raw = env.unwrapped
    raw.reset(options={"index": 0})
    moves = raw._item["answer"].splitlines()
    disk, src, dst = re.match(r"Move disk (\d+) from Peg (\d+) to Peg (\d+)", moves[0]).groups()
    detour = [f"Move disk {disk} from Peg {src} to Peg {dst}", f"Move disk {disk} from Peg {dst} to Peg {src}"]
    _, reward, _, _, info = raw.step("<answer>" + "\n".join(detour + moves) + "</answer>")
    assert reward == pytest.approx(len(moves) / (len(moves) + 2)) and info["verdict"] == "partial"
    _, reward, _, _, _ = raw.step("<answer>" + "\n".join(moves[:1]) + "</answer>")  # legal, unsolved: consolation
    assert reward == 0.0
    env.close()

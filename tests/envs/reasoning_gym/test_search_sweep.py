"""Search sweep: the search probes' content-free answers earn no more than chance on every reasoning-gym dataset.

Every dataset, the registered default (strict) scoring, the first items: each
item's question echoed (premises, their conjunction, numbers, spans, lines),
sprays over the answer's alphabet (inferred from the question's format example
and the golds of *other* items, never the item's own), and covering digit
sequences, replayed on the raw env (every step graded, so one reset serves
every answer: the cost of ``test_constants``' sweep, not of an audit per
dataset). An answer paid above its chance (the gold's reward if it is the
gold, else 0) fails its dataset, so a reasoning-gym upgrade that adds a lenient
scorer fails CI. ``gym-integrity audit ReasoningGym-v0 --all-datasets`` runs
the probes themselves, with the adaptive search too. Items with no single
answer get their gold from the dataset's solver (``gold_answers()``), so chance
is the solver's answer's reward there too, and every dataset has a gold the
grader pays on the audit's seeds (its gold-needing probes run on all of them).
Where many answers are right and the dataset's module writes its rule apart
from the scorer (graph_color, jugs, propositional_logic, quantum_lock), an
answer that rule takes as right (``tasks.is_right_answer``) is a right guess,
at chance. The env's auditor hook also vouches, on the other datasets with
many right answers, for what strict scoring pays in full: that is the reward
itself, so this test never asks it, and stays a check of strict scoring.

``STILL_PAID`` lists the datasets whose scorers the search probes catch today,
each with what pays; they are strict xfails, so each one fixed must leave the
list.
"""

from __future__ import annotations

import gymnasium as gym
import pytest

import gym_integrity  # noqa: F401
from gym_integrity.audit.answer_space import answer_cap
from gym_integrity.audit.chance import chance_of
from gym_integrity.audit.search import item_attacks
from gym_integrity.envs.reasoning_gym import available_datasets
from gym_integrity.envs.reasoning_gym.tasks import is_right_answer

SEED = 1
ITEMS, SCOUTS = 3, 3
#: The audit's default seeds: its gold-needing probes play them first.
AUDIT_SEEDS = (0, 1, 2)
PER_FAMILY = 8
#: Datasets whose scorer takes a second or more per answer: fewer items and answers (the audit plays them all).
SLOW = {"knight_swap", "futoshiki", "sokoban", "zebra_puzzles", "intermediate_integration", "arc_agi", "puzzle24",
        "countdown", "codeio", "sudoku", "figlet_font", "propositional_logic", "rubiks_cube", "simple_integration",
        "n_queens", "rush_hour", "polynomial_multiplication", "rectangle_count"}
#: Datasets whose lenient case shows on some items only: more items, the first answers of each family.
WIDE = {"propositional_logic": (6, 3)}
#: Content-free answers today's strict scorers still pay (what pays, on these items); the strict fixes empty it.
STILL_PAID: dict[str, str] = {}


def _paid_for_nothing(name: str) -> list[tuple[int, str, str, float, float]]:
    items, per_family = WIDE.get(name) or ((2, 4) if name in SLOW else (ITEMS, PER_FAMILY))
    env = gym.make("ReasoningGym-v0", dataset=name, size=items + SCOUTS, seed=SEED, allow_above_chance=True)
    raw = env.unwrapped
    scouts = []
    for index in range(items, items + SCOUTS):  # other items' golds: the answer format a policy learns
        raw.reset(options={"index": index})
        scouts.extend(raw.gold_answers()[:1])
    paid = []
    for index in range(items):
        question, _ = raw.reset(options={"index": index})
        golds = raw.gold_answers()  # the item's own, else its dataset's solver's (tasks/), as the audit reads it
        gold = golds[0] if golds else None
        gold_reward = raw.step(f"<answer>{gold}</answer>")[1] if gold is not None else 0.0
        wrong_reward = raw.step("<answer>-987654.321</answer>")[1]
        for attack in item_attacks(question, scouts, answer_cap(raw), per_family, seed=index):
            reward = raw.step(f"<answer>{attack.text}</answer>")[1]
            chance = chance_of(attack.text, gold, gold_reward, wrong_reward)
            if reward > chance + 1e-9 and not is_right_answer(name, raw._item, attack.text):  # a right guess
                paid.append((index, attack.family, attack.text[:60], reward, chance))
    env.close()
    return paid


@pytest.fixture(scope="module", autouse=True)
def warm_sandbox():
    """Keep the sandbox pool up for the whole module (each env's close would otherwise stop it)."""
    from gym_integrity.envs.reasoning_gym import sandbox

    pool = sandbox.acquire_pool()
    yield
    pool.release()


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=pytest.mark.xfail(reason=STILL_PAID[name], strict=True)) if name in STILL_PAID
    else name for name in available_datasets()])
def test_no_content_free_answer_beats_chance(name):
    paid = _paid_for_nothing(name)
    assert not paid, f"{name}: (item, family, answer, reward, chance) {paid[:5]}"


@pytest.mark.parametrize("name", available_datasets())
def test_every_dataset_has_a_gold_its_grader_pays_on_the_audit_seeds(name):
    """What the audit's gold-needing probes read (gold_answer_scored, constant_answers, cross_env_isolation): a
    dataset without one on these seeds leaves them not run and the sweep inconclusive."""
    env = gym.make("ReasoningGym-v0", dataset=name, allow_above_chance=True)
    raw = env.unwrapped
    unpaid = []
    for seed in AUDIT_SEEDS:
        raw.reset(seed=seed)
        golds = raw.gold_answers()
        gold_reward = raw.step(f"<answer>{golds[0]}</answer>")[1] if golds else None
        if gold_reward is None or gold_reward <= raw.step("<answer>-987654.321</answer>")[1]:
            unpaid.append((seed, golds[:1], gold_reward))
    env.close()
    assert not unpaid, f"{name}: (seed, gold, its reward) {unpaid}"


def test_every_still_paid_dataset_exists():
    assert set(STILL_PAID) <= set(available_datasets())

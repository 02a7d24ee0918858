"""The gold providers of gold-free datasets: each solver's answer earns 1.0 under strict scoring, stays bounded,
and reaches the auditor through ``gold_answers()`` only, never the agent's obs, info or render."""

from __future__ import annotations

import itertools
import json
import re

import gymnasium as gym
import pytest

import gym_integrity  # noqa: F401
from gym_integrity.audit.right_answers import control_answers
from gym_integrity.envs.reasoning_gym.table import MANY_RIGHT_ANSWERS, rule_for
from gym_integrity.envs.reasoning_gym.tasks import TASKS, boxnet, graph_color, rush_hour, solve
from gym_integrity.grading.rules import OwnRule

#: Items per dataset, drawn by seed as the audit draws them.
ITEMS = 100
#: The seeds the audit plays (its 3 seeds, constant_answers' 6 episodes, the search probes' 6 items and 3 scouts).
AUDIT_SEEDS = range(9)
SOLVED = sorted(name for name, task in TASKS.items() if task.solve is not None)


@pytest.fixture(scope="module", autouse=True)
def warm_sandbox():
    """Keep the sandbox pool up for the whole module (each env's close would otherwise stop it)."""
    from gym_integrity.envs.reasoning_gym import sandbox

    pool = sandbox.acquire_pool()
    yield
    pool.release()


def _solved_rewards(name: str, seeds) -> list[tuple[int, str | None, float]]:
    """(seed, the env's gold, its reward) over seeded resets of the registered default stack's raw env."""
    env = gym.make("ReasoningGym-v0", dataset=name, allow_above_chance=True)
    raw = env.unwrapped
    out = []
    for seed in seeds:
        raw.reset(seed=seed)
        assert raw._item["answer"] is None, f"{name} has a gold now: its solver is not needed"
        golds = raw.gold_answers()
        gold = golds[0] if golds else None
        out.append((seed, gold, raw.step(f"<answer>{gold}</answer>")[1] if gold is not None else 0.0))
    env.close()
    return out


@pytest.mark.parametrize("name", SOLVED)
def test_every_solver_answer_earns_one_under_strict_scoring(name):
    rewards = _solved_rewards(name, range(ITEMS))
    unpaid = [(seed, gold, reward) for seed, gold, reward in rewards if reward != 1.0]
    assert not unpaid, f"{name}: {len(unpaid)}/{ITEMS} unsolved or unpaid, e.g. {unpaid[:3]}"


@pytest.mark.parametrize("name", SOLVED)
def test_the_audit_seeds_all_have_a_paid_gold(name):
    """What the sweep's gold-needing probes read: one paid answer on every seed they play."""
    rewards = _solved_rewards(name, AUDIT_SEEDS)
    assert all(gold is not None and reward == 1.0 for _, gold, reward in rewards), rewards


def test_golds_of_items_with_one_answer_are_the_items_own():
    env = gym.make("ReasoningGym-v0", dataset="leg_counting")
    raw = env.unwrapped
    raw.reset(seed=3)
    assert raw.gold_answers() == [str(raw._item["answer"])]
    env.close()
    assert solve("leg_counting", raw._item) is None  # no solver: the item's own gold is the only source


@pytest.mark.parametrize("name", SOLVED)
def test_the_solvers_answer_reaches_no_agent_channel(name):
    """The stacked env's obs, info and render, at reset and at the step, never hold what the solver found."""
    env = gym.make("ReasoningGym-v0", dataset=name, render_mode="ansi", allow_above_chance=True)
    raw = env.unwrapped
    checked = 0
    for seed in range(6):
        obs, info = env.reset(seed=seed)
        golds = raw.gold_answers()
        if not golds:
            continue
        question = obs
        seen = [obs, repr(info), env.render()]
        obs, _, _, _, info = env.step("<answer>wrong</answer>")
        seen += [obs, repr(info), env.render(), repr(env), str(env.spec)]
        assert "privileged" not in repr(info)
        # the question itself may hold a short answer (propositional_logic's `P`): only what is added counts,
        # as a whole token (a one-letter gold is inside any word)
        gold = re.compile(rf"(?<!\w){re.escape(golds[0])}(?!\w)")
        assert not any(gold.search(text.replace(question, "")) for text in seen), (name, seed, golds[0])
        checked += 1
    env.close()
    assert checked >= 3


# ------------------------------------------------------------------ each solver on hand-made items


def test_rush_hour_moves_each_car_in_full_and_names_cars_as_the_question_does():
    # Labels sorted then renamed A, B, ... (the question's names): "G" is the red car "A", "Q" the blocker "B".
    item = {"metadata": {"board_config": "oooooo" "oooQoo" "GGoQoo" "oooooo" "oooooo" "oooooo"}}
    answer = solve("rush_hour", item)
    assert answer in ("B-1 A+4", "B+2 A+4")
    assert rush_hour.car_moves_all_act(answer, {"metadata": {"board_config": item["metadata"]["board_config"]
                                                          .replace("G", "A").replace("Q", "B")}})


def test_rush_hour_gives_up_past_its_bound(monkeypatch):
    item = {"metadata": {"board_config": "oooooo" "oooBoo" "AAoBoo" "oooooo" "oooooo" "oooooo"}}
    assert solve("rush_hour", item) is not None
    monkeypatch.setattr(rush_hour, "MAX_BOARDS", 2)
    assert solve("rush_hour", item) is None
    walled = {"metadata": {"board_config": "oooooo" "oooooo" "AAoxoo" "oooooo" "oooooo" "oooooo"}}
    monkeypatch.setattr(rush_hour, "MAX_BOARDS", 1000)
    assert solve("rush_hour", walled) is None  # a wall on the red car's row: no solution, every board visited


def test_boxnet_walks_each_box_to_its_target():
    item = {"metadata": {"initial_state": {"0.5_0.5": ["box_red", "target_blue"], "0.5_1.5": [],
                                           "1.5_0.5": ["box_blue"], "1.5_1.5": ["target_red"]}}}
    plan = json.loads(solve("boxnet", item))
    assert plan == [{"Agent[0.5, 0.5]": "move(box_red, square[1.5, 0.5])"},
                    {"Agent[1.5, 0.5]": "move(box_red, square[1.5, 1.5])"},
                    {"Agent[1.5, 1.5]": "move(box_red, target_red)"},
                    {"Agent[1.5, 0.5]": "move(box_blue, square[0.5, 0.5])"},
                    {"Agent[0.5, 0.5]": "move(box_blue, target_blue)"}]
    assert boxnet.boxnet_actions_all_act(json.dumps(plan), item)


def test_rubiks_cube_undoes_the_scramble_or_gives_none_for_moves_its_scorer_skips():
    assert solve("rubiks_cube", {"metadata": {"scramble_moves": "R U' F F"}}) == "F' F' U R'"
    assert solve("rubiks_cube", {"metadata": {"scramble_moves": "Dw R' 1Bw 2L"}}) is None


def test_graph_color_colours_properly_or_gives_none(monkeypatch):
    def item(edges, colours=3, n=4):
        return {"metadata": {"puzzle": {"vertices": list(range(n)), "edges": edges,
                                        "color_options": list(range(1, colours + 1))}}}

    square = item([(0, 1), (1, 2), (2, 3), (3, 0)], colours=2)
    colouring = json.loads(solve("graph_color", square))
    assert set(colouring) == {"0", "1", "2", "3"} and colouring["0"] == colouring["2"] != colouring["1"]
    complete = [(u, v) for u in range(4) for v in range(u + 1, 4)]
    assert solve("graph_color", item(complete)) is None  # K4 in 3 colours
    assert solve("graph_color", item(complete, colours=4)) is not None
    monkeypatch.setattr(graph_color, "MAX_STEPS", 3)
    assert solve("graph_color", item(complete, colours=4)) is None


@pytest.mark.parametrize("dataset, answers", [
    ("quantum_lock", lambda gold: [" → ".join(c) for c in itertools.product("ABC", repeat=len(gold.split("→")))]),
    ("graph_color", lambda gold: [json.dumps({k: (v % 3) + 1 for k, v in json.loads(gold).items()}),
                                  json.dumps({k: 1 + (int(k) % 3) for k in json.loads(gold)}), gold]),
    ("propositional_logic", lambda gold: ["P", "¬P", "Q", "¬Q", "R", "¬R", "S", "¬S", "P ∨ Q", gold]),
    ("jugs", lambda gold: [json.dumps(plan) for plan in (json.loads(gold), json.loads(gold)[:-1],
                                                         ["fill A"] + json.loads(gold), json.loads(gold) + ["empty A"],
                                                         json.loads(gold) + ["pour A->A"], ["fill A", "fill B"])]),
])
def test_is_right_answer_agrees_with_what_strict_pays(dataset, answers):
    """The audit counts a paid answer the hook takes as right at chance: the hook must be the task's rule, no
    wider and no narrower than what strict scoring pays (quantum_lock: every sequence of the shortest length)."""
    env = gym.make("ReasoningGym-v0", dataset=dataset, allow_above_chance=True)
    raw = env.unwrapped
    disagree, right = [], 0
    for seed in range(12):
        env.reset(seed=seed)
        gold = raw.gold_answers()[0]
        if dataset == "quantum_lock" and len(gold.split("→")) > 5:
            continue
        for answer in answers(gold):
            env.reset(seed=seed)
            paid = env.step(f"<answer>{answer}</answer>")[1] == 1.0
            right += paid
            if paid != raw.is_right_answer(answer):
                disagree.append((seed, answer, paid))
    env.close()
    assert right and not disagree, disagree[:5]


@pytest.mark.parametrize("dataset", sorted(MANY_RIGHT_ANSWERS))
def test_the_hook_takes_the_gold_and_refuses_the_audits_controls_on_every_dataset_with_many_right_answers(dataset):
    """The audit trusts is_right_answer only while it refuses answers that solve nothing (audit/right_answers.py):
    on each dataset it vouches for, it takes the paid gold as right and every control as wrong, so the sweep's
    hook keeps its word. Its rule is the task's own scorer at full credit under strict's requirements."""
    assert isinstance(rule_for(dataset), OwnRule)
    env = gym.make("ReasoningGym-v0", dataset=dataset, allow_above_chance=True)
    raw = env.unwrapped
    for seed in range(3):
        env.reset(seed=seed)
        gold = raw.gold_answers()[0]
        assert raw.is_right_answer(gold), (seed, gold)
        assert not any(raw.is_right_answer(control) for control in control_answers(seed)), seed
    env.close()


def test_the_hook_vouches_for_nothing_but_the_gold_on_a_dataset_with_one_right_answer():
    """leg_counting has one right answer, the gold, which the audit's chance already counts: the hook never vouches,
    not even for the gold, so a strict leniency there stays a finding."""
    env = gym.make("ReasoningGym-v0", dataset="leg_counting")
    raw = env.unwrapped
    env.reset(seed=0)
    assert not raw.is_right_answer(raw.gold_answers()[0])
    env.close()

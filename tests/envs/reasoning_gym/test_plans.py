"""Strict scoring of plan answers closes the classes: no-op or illegal moves, partial credit, conclusions built from the premises.

Each exploit test sends content-free answers (fixed plans over the move
alphabet, random walks over the names on the board, the question's premises)
and asserts the registered id pays none of them, and shows the raw scorer
paying them (so the test fails on the old scoring table). Each gold test
checks that the gold and its legitimate variants still earn 1.0; the
gold-free tasks' solved plans are checked in ``test_solvers.py``.
"""

from __future__ import annotations

import json
import random
import re

import gymnasium as gym
import pytest

import gym_integrity  # noqa: F401
from gym_integrity.envs.reasoning_gym.tasks import (
    boxnet,
    graph_color,
    knights_knaves,
    propositional_logic,
    rubiks_cube,
    rush_hour,
    sokoban,
)

ITEMS = 30


def _env(name: str, seed: int = 1, size: int = 400):
    return gym.make("ReasoningGym-v0", dataset=name, size=size, seed=seed, allow_above_chance=True)


def _paid(raw, index: int, answers: list[str]) -> list[float]:
    raw.reset(options={"index": index})
    return [raw.step(f"<answer>{answer}</answer>")[1] for answer in answers]


def _raw_scores(raw, answers: list[str]) -> list[float]:
    item = raw._item
    return [raw._dataset.score_answer(answer, entry=item) for answer in answers]


# ------------------------------------------------------------------ content-free answers


def _fixed_moves(count: int = 12) -> list[str]:
    """The same random U/D/L/R strings for every item."""
    out = []
    for k in range(count):
        rng = random.Random(k)
        out.append("".join(rng.choice("UDLR") for _ in range(rng.choice([50, 100, 200, 400, 1000]))))
    return out


def _car_walks(question: str, rng: random.Random, count: int = 6) -> list[str]:
    cars = sorted(set(re.findall(r"[A-Z]", question.split("Board:")[1])))
    return [" ".join(f"{rng.choice(cars)}{rng.choice('+-')}{rng.randint(1, 3)}" for _ in range(rng.randint(30, 150)))
            for _ in range(count)]


def _boxnet_sprays() -> list[str]:
    """Every colour's box to its target from every square of a 4x4 grid, then moves toward the origin."""
    colours, cells = ("red", "blue", "green"), [(r + 0.5, c + 0.5) for r in range(4) for c in range(4)]
    matches = [{f"Agent[{r}, {c}]": f"move(box_{col}, target_{col})" for r, c in cells} for col in colours]
    plans = [matches]
    for dr, dc in ((0, -1), (-1, 0)):
        plan = list(matches)
        for _ in range(3):
            for col in colours:
                plan.append({f"Agent[{r}, {c}]": f"move(box_{col}, square[{r + dr}, {c + dc}])"
                             for r, c in cells if r + dr > 0 and c + dc > 0})
                plan.append({f"Agent[{r}, {c}]": f"move(box_{col}, target_{col})" for r, c in cells})
        plans.append(plan)
    fitted = []
    for plan in plans:
        while len(json.dumps(plan)) > 4000:  # under the env's answer cap
            plan = plan[:-1]
        fitted.append(json.dumps(plan))
    return fitted


def _premises(question: str) -> list[str]:
    return re.findall(r"\d+\. (.*)\n", question.replace("\n.", "\n"))


def _premise_echoes(question: str) -> list[str]:
    """Premise copies, their conjunction, and premise pairs joined by ↔ → ∨: truth functions of the premises."""
    premises = _premises(question)
    pairs = [f"({a}) {op} ({b})" for a, b in zip(premises, premises[1:]) for op in ("↔", "→", "∨")]
    return [premises[0], " ∧ ".join(f"({p})" for p in premises), " ∧ ".join(premises)] + pairs


def _premise_weakenings(question: str) -> list[str]:
    """A premise or-ed with a literal of the item's variables."""
    premises = _premises(question)
    variables = sorted(set(re.findall(r"[A-Z]", " ".join(premises))))
    return [f"({p}) ∨ {sign}{v}" for p in premises[:2] for v in variables for sign in ("", "¬")]


def _exploit_totals(name: str, answers_for, items: int = ITEMS, raw_bar: float = 0.05) -> tuple[int, int]:
    """(items the raw scorer pays a content-free answer above ``raw_bar`` (its format-only 0.01 / 0.05 aside),
    items the registered id pays it anything)."""
    env = _env(name)
    raw = env.unwrapped
    rng = random.Random(0)
    raw_paid = strict_paid = 0
    for index in range(items):
        raw.reset(options={"index": index})
        answers = answers_for(raw._item["question"], rng)
        if not answers:
            continue
        raw_paid += max(_raw_scores(raw, answers)) > raw_bar
        strict_paid += max(_paid(raw, index, answers)) > 0
    env.close()
    return raw_paid, strict_paid


@pytest.mark.parametrize("name, answers_for", [
    ("sokoban", lambda question, rng: _fixed_moves()),
    ("rush_hour", _car_walks),
    ("boxnet", lambda question, rng: _boxnet_sprays()),
    ("quantum_lock", lambda question, rng: [" → ".join(rng.choice("ABC") for _ in range(rng.randint(2, 14)))
                                            for _ in range(8)]),
])
def test_content_free_plans_are_paid_by_the_raw_scorer_and_not_under_strict(name, answers_for):
    raw_paid, strict_paid = _exploit_totals(name, answers_for, items=100 if name in ("quantum_lock", "rush_hour")
                                            else ITEMS)
    assert raw_paid > 0, f"{name}: the attack no longer pays the raw scorer; pick a stronger one"
    assert strict_paid == 0, f"{name}: strict paid a content-free plan on {strict_paid} items"


def test_a_longer_path_than_the_shortest_earns_nothing():
    """The task asks for the shortest path; the raw scorer pays 0.5 for any longer valid one (a detour)."""
    env = _env("shortest_path")
    raw = env.unwrapped
    for index in range(ITEMS):
        raw.reset(options={"index": index})
        gold = raw._item["answer"]
        if gold == "infeasible":
            continue
        for detour in ("up down", "down up", "left right", "right left"):
            longer = f"{detour} {gold}"
            if _raw_scores(raw, [longer])[0] == 0.5:
                assert _paid(raw, index, [longer]) == [0.0]
    env.close()


def test_truth_functions_of_the_premises_are_not_a_conclusion():
    raw_paid, strict_paid = _exploit_totals("propositional_logic", lambda question, rng: _premise_echoes(question),
                                            items=40, raw_bar=0.99)
    assert raw_paid >= 30 and strict_paid == 0


def test_premise_weakenings_are_not_a_conclusion():
    """A premise or-ed with a literal, where the literal's variable is idle (rule 3) and where it is bound inside
    the premise (``((Q ↔ S) ∧ ¬R) ∨ Q``: rule 4, a disjunct that already follows)."""
    raw_paid, strict_paid = _exploit_totals("propositional_logic", lambda question, rng: _premise_weakenings(question),
                                            items=40, raw_bar=0.99)
    assert raw_paid >= 30 and strict_paid == 0


def test_the_rule_on_its_cases():
    item = {"metadata": {"variables": ["P", "Q", "R", "S"], "premises": ["(S ∧ R)", "(P → Q)", "P"]}}
    paid = ["Q", "¬¬Q", "S", "Q ∧ R", "R ∧ S ∧ Q"]  # modus ponens, conjunction elimination
    refused = ["(S ∧ R)", "(S ∧ R) ∧ P", "(S ∧ R) ∨ ¬R", "P ∨ ¬R", "(S ∧ R) ↔ P", "P ∨ Q", "Q ∨ (R ∨ ¬R)",
               "Q ∨ ¬Q", "¬Q", "T", "((S ∧ R) ∧ (P → Q) ∧ P) ∨ S", "¬(¬S ∧ ¬(S ∧ R ∧ P))", "¬S → (S ∧ R)",
               "Q ∧ (P ∨ ¬R)"]
    assert [a for a in paid if not propositional_logic.concludes(a, item)] == []
    assert [a for a in refused if propositional_logic.concludes(a, item)] == []
    assert propositional_logic.solve(item) == "Q"
    atoms = {"metadata": {"variables": ["P", "Q"], "premises": ["P", "Q"]}}
    assert propositional_logic.solve(atoms) is None and not propositional_logic.has_conclusion(atoms)


def test_items_without_a_conclusion_are_not_drawn_and_the_solver_is_paid():
    """Strict draws only items the solver answers, and pays its answer in full: a bare variable too (the task's
    scorer labels it trivial, 0.25); options={"index": i} still reaches any item."""
    env = _env("propositional_logic")
    raw = env.unwrapped
    bare = 0
    for seed in range(40):
        raw.reset(seed=seed)
        answer = propositional_logic.solve(raw._item)
        assert answer is not None, raw._item["metadata"]["premises"]
        bare += re.fullmatch(r"[A-Z]", answer) is not None
        assert raw.step(f"<answer>{answer}</answer>")[1] == 1.0, (seed, answer)
    assert bare > 0
    undrawn = next(i for i in range(400) if not propositional_logic.has_conclusion(raw.reset(options={"index": i})
                                                                           and raw._item))
    assert raw._index == undrawn
    env.close()


def _quoted_statements(question: str, rng: random.Random) -> list[str]:
    quotes = [q.rstrip(".") for q in re.findall(r'"([^"]+)"', question) if "/" not in q]
    # A quoted pure assignment of a truthful speaker is the answer itself (left: picking it is inference).
    return [q for q in quotes if knights_knaves.ROLE_ASSIGNMENT.fullmatch(q) is None]


def test_a_statement_quoted_from_the_question_is_not_an_assignment():
    raw_paid, strict_paid = _exploit_totals("knights_knaves", _quoted_statements, items=30, raw_bar=0.99)
    assert raw_paid > 0 and strict_paid == 0


# ------------------------------------------------------------------ valid answers keep full credit


def _variants(name: str, gold: str) -> list[str]:
    if name == "sokoban":
        return [gold, f"  {gold}\n", " ".join(gold)]
    if name == "quantum_lock":
        presses = re.findall(r"[A-C]", gold)
        return [gold, "→".join(presses), " -> ".join(presses), ", ".join(presses), " → ".join(presses).lower()]
    if name == "shortest_path":
        return [gold, f" {gold} ", "  ".join(gold.split())]
    if name == "knights_knaves":
        clauses = [c.strip(" .") for c in re.split(r",\s*and\s+|,\s*|\s+and\s+", gold)]
        return [gold, gold.lower(), gold.rstrip("."), ". ".join(clauses) + ".", "\n".join(clauses)]
    return [gold]


@pytest.mark.parametrize("name", ["sokoban", "quantum_lock", "shortest_path", "knights_knaves"])
def test_golds_and_their_variants_still_earn_one(name):
    for seed in (1, 2):
        env = _env(name, seed=seed)
        raw = env.unwrapped
        for index in range(ITEMS // 2 if name == "sokoban" else ITEMS):
            raw.reset(options={"index": index})
            gold = raw._item["answer"]
            for answer in _variants(name, gold):
                assert raw.step(f"<answer>{answer}</answer>")[1] == 1.0, (name, seed, index, answer)
        env.close()


def test_the_tasks_example_conclusions_that_meet_the_rule_are_still_paid():
    """The task's example conclusions that meet the rule earn 1.0 (24 of 78 drawn default items; the rest
    are truth functions of the premises or have an idle variable: benchmarks/propositional_templates.py)."""
    env = _env("propositional_logic")
    raw = env.unwrapped
    kept = 0
    for index in range(120):
        raw.reset(options={"index": index})
        example = raw._item["metadata"]["example_answer"]
        if propositional_logic.concludes(example, raw._item):
            kept += 1
            assert raw.step(f"<answer>{example}</answer>")[1] == 1.0, (index, example)
    env.close()
    assert kept >= 5  # 6 of these 120 (most items have no conclusion under the rule and are not drawn)


def test_illegal_moves_are_refused_by_the_replays():
    item = {"metadata": {"gamestr": "+ + + + +\n+ * @ X +\n+ + + + +\n"}}
    assert sokoban.sokoban_moves_all_act("R", item) and not sokoban.sokoban_moves_all_act("UR", item)
    assert not sokoban.sokoban_moves_all_act("RR", item)  # a push of a box into a wall
    board = {"metadata": {"board_config": "oooooo" "oooooo" "AAoooB" "oooooB" "oooooo" "oooooo"}}
    assert rush_hour.car_moves_all_act("A+2", board) and not rush_hour.car_moves_all_act("A+4", board)  # blocked by B
    assert not rush_hour.car_moves_all_act("A+0 A+2", board) and not rush_hour.car_moves_all_act("go A+2", board)
    state = {"metadata": {"initial_state": {"0.5_0.5": ["box_red"], "0.5_1.5": ["target_red"]}}}
    ok = '[{"Agent[0.5, 0.5]": "move(box_red, square[0.5, 1.5])"}, {"Agent[0.5, 1.5]": "move(box_red, target_red)"}]'
    assert boxnet.boxnet_actions_all_act(ok, state)
    assert not boxnet.boxnet_actions_all_act('[{"Agent[0.5, 1.5]": "move(box_red, target_red)"}]', state)


def test_rubiks_cube_draws_no_scramble_that_cancels_below_its_minimum():
    """8 of 300 default items reduce to one move (D D' U is U): a fixed answer solved them. Strict never draws them;
    options={"index": i} still reaches any item, and the draw stays a fixed function of the seed."""
    from gym_integrity.envs.reasoning_gym.tasks.rubiks_cube import reduced_scramble_length

    env = gym.make("ReasoningGym-v0", dataset="rubiks_cube")
    raw = env.unwrapped
    seen = []
    for seed in range(120):
        raw.reset(seed=seed)
        seen.append(raw._index)
        assert reduced_scramble_length(raw._item["metadata"]["scramble_moves"]) >= 3, (seed, raw._item["metadata"])
    assert [raw.reset(seed=s)[1]["index"] for s in range(120)] == seen
    lenient = gym.make("ReasoningGym-v0", dataset="rubiks_cube", scoring="reasoning_gym").unwrapped
    short = [s for s in range(300) if reduced_scramble_length(
        lenient._item["metadata"]["scramble_moves"] if lenient.reset(seed=s) else "") < 3]
    assert short, "the generator's own draws include scrambles that cancel (the case this rule exists for)"
    env.close()
    lenient.close()


_QUARTER_TURNS = [face + turn for face in "UDLRFB" for turn in ("", "'")]


def _within_two_moves_of_solved() -> set[str]:
    """The rendered 3x3 cubes that one or two quarter turns (or none) reach from solved: exactly the cubes that a
    fixed answer of at most two moves solves."""
    import magiccube

    states = set()
    for answer in [""] + _QUARTER_TURNS + [f"{a} {b}" for a in _QUARTER_TURNS for b in _QUARTER_TURNS]:
        cube = magiccube.Cube(3)
        if answer:
            cube.rotate(answer)
        states.add(str(cube))
    return states


def _scrambled(item) -> str:
    import magiccube

    cube = magiccube.Cube(3)
    cube.rotate(item["metadata"]["scramble_moves"])
    return str(cube)


def test_rubiks_cube_draws_no_scramble_whose_commuting_turns_cancel():
    """Opposite faces commute: D F' F U' D' U is the solved cube and L B F B' is two moves, though no two adjacent
    turns of one face cancel. The old rule drew them (seed 100101 drew L B F B', seed 100119 the solved cube), and
    the raw scorer pays a fixed answer there; strict draws no cube within two moves of solved."""
    near = _within_two_moves_of_solved()
    env = gym.make("ReasoningGym-v0", dataset="rubiks_cube")
    raw = env.unwrapped
    cases = ((100101, 69376, "L B F B'", "F' L'"), (100119, 27197, "D F' F U' D' U", "U U'"))
    for seed, index, scramble, fixed in cases:
        raw.reset(options={"index": index})
        assert raw._item["metadata"]["scramble_moves"] == scramble
        assert _raw_scores(raw, [fixed]) == [1.0]  # a fixed answer solves it
        assert not rubiks_cube.scramble_keeps_its_length(raw._item)
        raw.reset(seed=seed)
        assert raw._index != index and raw.step(f"<answer>{fixed}</answer>")[1] == 0.0
    drawn = 0
    for seed in range(300):
        raw.reset(seed=seed)
        assert _scrambled(raw._item) not in near, (seed, raw._item["metadata"]["scramble_moves"])
        drawn += 1
    lenient = gym.make("ReasoningGym-v0", dataset="rubiks_cube", scoring="reasoning_gym").unwrapped
    close = sum(_scrambled(lenient._item) in near for seed in range(300) if lenient.reset(seed=seed))
    assert close >= 3, "the generator's own draws include cubes a fixed short answer solves"
    env.close()
    lenient.close()


def test_rubiks_cube_solver_answers_still_paid_on_the_items_strict_draws():
    from gym_integrity.envs.reasoning_gym.tasks import solve

    env = gym.make("ReasoningGym-v0", dataset="rubiks_cube")
    raw = env.unwrapped
    paid = 0
    for seed in range(200):
        raw.reset(seed=seed)
        paid += raw.step(f"<answer>{solve('rubiks_cube', raw._item)}</answer>")[1] == 1.0
    assert paid == 200
    env.close()


def test_proper_colouring_share_is_the_exact_count_and_its_bounds_hold():
    import itertools

    rng = random.Random(5)
    for _ in range(40):
        n, k = rng.randint(1, 7), rng.randint(2, 4)
        edges = [(u, v) for u in range(n) for v in range(u + 1, n) if rng.random() < 0.4]
        puzzle = {"vertices": list(range(n)), "edges": edges, "color_options": list(range(1, k + 1))}
        proper = sum(all(c[u] != c[v] for u, v in edges) for c in itertools.product(range(k), repeat=n))
        assert graph_color.proper_colouring_share(puzzle) == proper / k ** n, puzzle
        lower, upper = graph_color.share_bounds(graph_color.neighbours(puzzle), k)
        assert lower <= proper / k ** n + 1e-12 and proper / k ** n <= upper + 1e-12, puzzle
    dense = {"vertices": list(range(12)), "edges": [(u, v) for u in range(12) for v in range(u + 1, 12)],
             "color_options": [1, 2, 3, 4]}
    assert graph_color.proper_colouring_share(dense, max_states=10) is None  # past its bound: unknown, never guessed


def test_graph_color_draws_only_items_a_fixed_colouring_rarely_solves():
    """On the default sparse graphs the same JSON map for every item (vertex v gets v % 3 + 1) was valid on 28% of
    items. Strict draws only items where under 1% of all colourings are proper; the draw stays a fixed function
    of the seed and options={"index": i} still reaches any item."""
    fixed = json.dumps({str(v): v % 3 + 1 for v in range(10)})
    env = gym.make("ReasoningGym-v0", dataset="graph_color")
    raw = env.unwrapped
    drawn, paid = [], 0
    for seed in range(100):
        raw.reset(seed=seed)
        drawn.append(raw._index)
        assert graph_color.proper_colouring_share(raw._item["metadata"]["puzzle"]) < graph_color.GUESSABLE_SHARE, seed
        paid += raw.step(f"<answer>{fixed}</answer>")[1] == 1.0
    assert paid <= 5, paid
    assert [raw.reset(seed=s)[1]["index"] for s in range(100)] == drawn
    lenient = gym.make("ReasoningGym-v0", dataset="graph_color", scoring="reasoning_gym").unwrapped
    guessed, skipped = 0, []
    for seed in range(100):
        lenient.reset(seed=seed)
        guessed += lenient.step(f"<answer>{fixed}</answer>")[1] == 1.0
        if graph_color.proper_colouring_share(lenient._item["metadata"]["puzzle"]) >= graph_color.GUESSABLE_SHARE:
            skipped.append(lenient._index)
    assert guessed >= 15, "the generator's own draws are often solved by a fixed colouring (why this rule exists)"
    raw.reset(options={"index": skipped[0]})
    assert raw._index == skipped[0]
    env.close()
    lenient.close()

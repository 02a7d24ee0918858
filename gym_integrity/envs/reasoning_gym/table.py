"""The per-dataset scoring table: the rule strict scoring grades each reasoning-gym dataset by, and why.

Each entry is a rule of ``gym_integrity.grading.rules`` (its class is the
kind: ``Exact``, ``Numeric``, ``OwnFullCredit``, ...), and its ``why`` was
read from the task's ``score_answer`` (reasoning-gym 0.1.25);
``tests/envs/reasoning_gym/test_constants.py`` and
``tests/envs/reasoning_gym/test_canaries.py`` check the table against the real
scorers, so a wrong entry fails a test. A rule's ``requires`` and ``shape``
come from the task's module (``tasks/``), which also holds its draw filter,
solver and right-answer check.

``language`` marks an own scorer that is unsafe in the env's process (it
evaluates the answer, or loops as often as the answer says): whenever that
scorer runs, in either scoring mode, it runs in the sandbox's workers after
the answer passed that language (``gym_integrity.grading.language``).
"""

from __future__ import annotations

import re
from typing import Any

from gym_integrity.envs.reasoning_gym.tasks import (
    boxnet,
    complex_arithmetic,
    knights_knaves,
    propositional_logic,
    puzzle24,
    quantum_lock,
    rush_hour,
    sokoban,
)
from gym_integrity.grading.rules import (
    ComplexNumber,
    Duration,
    Exact,
    NumberList,
    Numeric,
    OrderedNumberList,
    OwnFullCredit,
    OwnNoConsolation,
    OwnRule,
    OwnScorer,
    Rule,
)

__all__ = [
    "BASE_SCORER",
    "MANY_RIGHT_ANSWERS",
    "RULES",
    "UNREVIEWED",
    "rule_for",
    "sandbox_language",
    "uses_own_scorer",
]

#: The datasets on reasoning-gym's base scorer (``ProceduralDataset.score_answer``) all get this one rule.
BASE_SCORER = Exact(
    "reasoning-gym's base scorer: substring credit len(gold)/len(answer) for any answer containing the gold"
)

RULES: dict[str, Rule] = {
    "ab": OwnScorer("1.0 for the exact answer, else 0"),
    "acre": BASE_SCORER,
    "advanced_geometry": OwnNoConsolation(
        "0.05 / 0.01 for any non-empty or unparsable answer; 0.5 for the incircle radius to 2 decimals is content",
        consolation=(0.01, 0.05),
    ),
    "aiw": BASE_SCORER,
    "arc_1d": BASE_SCORER,
    "arc_agi": OwnFullCredit("0.05 for any parseable board"),
    "base_conversion": BASE_SCORER,
    "basic_arithmetic": BASE_SCORER,
    "bf": BASE_SCORER,
    "binary_alternation": BASE_SCORER,
    "binary_matrix": Exact("exact match, or 0.1 for the matrix as a Python list via eval(answer)", language="matrix"),
    "bitwise_arithmetic": OwnScorer(
        "int(answer, 0) against eval of the generated problem; the answer is never evaluated"
    ),
    "boxnet": OwnFullCredit(
        "max(0.05, boxes lifted): 0.05 for any JSON, and the lifted fraction for a plan that does "
        "not solve; it skips any action it cannot apply, so one plan of every action in every "
        "square was paid: the boxes all matched, each action applying where written, required",
        requires=boxnet.boxnet_actions_all_act,
    ),
    "caesar_cipher": BASE_SCORER,
    "calendar_arithmetic": Exact(
        "0.1 / 0.05 for any weekday name, exp(-5 rel. error) for any number", fold=True, numeric=True
    ),
    "chain_sum": Numeric("Decimal equality, else substring credit", commas=True),
    "circuit_logic": OwnScorer("1.0 for the exact 0/1 answer"),
    "codeio": OwnFullCredit(
        "0.01 for any JSON, JSON-similarity and substring credit; the similarity is super-quadratic in the answer",
        language="json_similarity",
    ),
    "coin_flip": Numeric(
        "|answer - gold| <= 1e-4 absolute (a constant 0 matches every small probability) plus credit "
        "for a matching digit prefix; own scorer: Fraction(answer) with an unbounded exponent",
        language="probability",
        rel_tol=1e-3,
    ),
    "color_cube_rotation": OwnFullCredit("0.01 for any wrong answer"),
    "complex_arithmetic": ComplexNumber(
        "exp(-distance): every answer earns something",
        parse=complex_arithmetic.parse_answer,
        target=complex_arithmetic.result,
        rel_tol=1e-6,
        abs_tol=1e-9,
    ),
    "count_bits": BASE_SCORER,
    "count_primes": BASE_SCORER,
    "countdown": OwnFullCredit(
        "0.01 for anything, 0.05 for the right numbers with the wrong value; many valid "
        "expressions; sympy.parse_expr(answer)",
        language="arithmetic",
    ),
    "course_schedule": BASE_SCORER,
    "cryptarithm": OwnFullCredit("0.01 for any parseable mapping; any valid mapping scores 1.0"),
    "decimal_arithmetic": OwnScorer("Decimal within 10^-precision"),
    "decimal_chain_sum": OwnScorer("Decimal equality"),
    "dice": OwnScorer("exact match, case-insensitive"),
    "emoji_mystery": OwnFullCredit("0.01 for any answer; per-character credit for any guess of the right length"),
    "family_relationships": OwnScorer("exact match, case-insensitive"),
    "figlet_font": Exact(
        "0.1 per letter in place, capped at 1.0: a wrong 10-letter guess earns 1.0", fold=True, no_spaces=True
    ),
    "fraction_simplification": OwnFullCredit(
        "0.1 for copying the question's numerator or denominator, 0.05 / 0.01 "
        "for any answer; reads the first fraction and ignores the rest",
        shape=re.compile(
            r"\$*\s*(?:\\d?frac\s*\{\s*\d+\s*\}\s*\{\s*\d+\s*\}|"
            r"\d+\s*/\s*\d+)\s*\$*",
            re.IGNORECASE,
        ),
    ),
    "futoshiki": OwnFullCredit("per-cell credit: a constant grid earns about 1/n"),
    "game_of_life": OwnFullCredit(
        "per-cell credit: an all-dead grid earns most cells, and is the answer where every "
        "cell dies (12% of default items): such items are not drawn"
    ),
    "game_of_life_halting": Exact("bool(answer) == bool(gold): any non-empty answer scores 1.0", fold=True),
    "gcd": BASE_SCORER,
    "graph_color": OwnFullCredit(
        "0.01 for any JSON; any valid colouring scores 1.0, and on the default sparse graphs "
        "a fixed colouring was valid on 28% of items: only items where under 1% of all "
        "colourings are proper are drawn"
    ),
    "group_anagrams": OwnFullCredit("0.01 for any JSON"),
    "gsm_symbolic": Numeric(
        "the first number anywhere in the answer (a spray starts with one), 0.01 otherwise", commas=True
    ),
    "intermediate_integration": OwnScorer(
        "1.0 when d/dx(answer) simplifies to the integrand; sympy.parse_expr(answer)", language="algebra"
    ),
    "isomorphic_strings": BASE_SCORER,
    "jugs": OwnFullCredit("0.01 for any JSON; any valid plan scores 1.0"),
    "kakurasu": OwnScorer("1.0 for a grid meeting every sum, else 0"),
    "knight_swap": OwnNoConsolation(
        "0.05 for legal moves that do not solve; a longer solution's optimal/len credit is content", consolation=(0.05,)
    ),
    "knights_knaves": OwnFullCredit(
        "0.3 + 0.7 x matches for any full assignment: a uniform guess earns ~0.6; reads "
        "name-role pairs out of any text, so a statement quoted from the question was "
        "paid: an answer of '<name> is a <role>' clauses only",
        shape=knights_knaves.ROLE_ASSIGNMENT,
    ),
    "largest_island": BASE_SCORER,
    "lcm": BASE_SCORER,
    "leg_counting": BASE_SCORER,
    "letter_counting": BASE_SCORER,
    "letter_jumble": Exact(
        "word-in-place credit: the question's unscrambled short words earn it, and the gold "
        "followed by more words earns 1.0",
        fold=True,
        items=" ",
    ),
    "list_functions": BASE_SCORER,
    "mahjong_puzzle": BASE_SCORER,
    "manipulate_matrix": OwnFullCredit("substring credit"),
    "maze": BASE_SCORER,
    "mini_sudoku": OwnFullCredit("per-cell credit: a constant grid earns about 1/n"),
    "modulo_grid": BASE_SCORER,
    "n_queens": OwnFullCredit(
        "any valid board scores 1.0; 0.5 for a board as a Python list via eval(answer)", language="queens"
    ),
    "needle_haystack": OwnScorer("exact match, case-insensitive"),
    "number_filtering": BASE_SCORER,
    "number_format": OwnScorer("a number within 0.01"),
    "number_sequence": BASE_SCORER,
    "number_sorting": OrderedNumberList(
        "json.loads accepts NaN, and a list of NaN equals any list (identity), so one "
        "NaN per number paid 1.0; and each number passed within an absolute 1: the "
        "sorted list in order, each number as written",
        rel_tol=1e-9,
        abs_tol=1e-9,
    ),
    "palindrome_generation": OwnFullCredit("0.02 / 0.05 for any (palindromic) string; any valid palindrome scores 1.0"),
    "palindrome_partitioning": OwnScorer("the set of partitions, else 0"),
    "path_star": OwnScorer("exact path, whitespace collapsed"),
    "polynomial_equations": NumberList(
        "exp-decay credit per root minus penalties: '0' earns ~0.4; roots are asked to 4 decimals",
        abs_tol=1e-4,
        rel_tol=1e-6,
    ),
    "polynomial_multiplication": OwnScorer(
        "structural equality of sympy expressions; sympy.parse_expr(answer)", language="algebra"
    ),
    "pool_matrix": OwnFullCredit("0.1 for any matrix of the right shape"),
    "power_function": OwnFullCredit(
        "0.01 for any wrong answer; x^0 and x^1 are 1 and the base shown (a constant 1 "
        "was paid on 11% of items): such items are not drawn"
    ),
    "prime_factorization": OwnFullCredit("0.5 for factors whose product is n (n itself), 0.01 otherwise"),
    "products": Numeric("Decimal equality, else substring credit", commas=True),
    "propositional_logic": OwnFullCredit(
        "0.25 for a tautology or a bare variable, 0.05 for any formula; any valid "
        "conclusion scores 1.0, so text built from the premises alone was paid (a "
        "premise, their conjunction, P1 ↔ P2, a premise or-ed with a variable it "
        "never needed): a conclusion must not be a truth function of the premises "
        "and must have no idle variable (a bare variable meeting that is inference: "
        "paid in full); items with no such conclusion are not drawn; recursive parser",
        language="logic",
        requires=propositional_logic.concludes,
        also_full=(0.25,),
    ),
    "puzzle24": OwnFullCredit(
        "0.01 for anything wrong; many valid expressions; sympy.parse_expr(answer); pays any 4 "
        "in-range numbers making 24 after int(): the item's numbers, exactly 24, required",
        requires=puzzle24.makes_24_from_the_items_numbers,
        language="arithmetic",
    ),
    "quantum_lock": OwnFullCredit(
        "the task asks for the shortest sequence: 0.5 for a longer one that reaches the "
        "target, which random presses do; its simulation skips a press in the wrong light "
        "and it reads A-C out of any text: buttons only, each press active",
        shape=quantum_lock.SHAPE,
        requires=quantum_lock.presses_all_act,
    ),
    "ransom_note": BASE_SCORER,
    "rearc": OwnFullCredit("0.05 for any parseable board"),
    "rectangle_count": Numeric("linear credit for any nearby count: '1' earns ~0.2"),
    "rotate_matrix": BASE_SCORER,
    "rotten_oranges": BASE_SCORER,
    "rubiks_cube": OwnFullCredit(
        "max(0.05, solved stickers): the scrambled cube alone earns it; repeats a move as "
        "often as its count says; a scramble whose moves cancel below the configured minimum "
        "(D D' U is U, U D U' is D) is solved by a fixed answer, so such items are not drawn",
        language="cube_moves",
    ),
    "rush_hour": OwnFullCredit(
        "0.01 for any moves; any solving sequence scores 1.0; steps a car as far as the answer "
        "says, stopping silently where it is blocked, and reads moves out of any text, so a "
        "random walk of the board's cars was paid: moves only, each travelled in full",
        language="car_moves",
        requires=rush_hour.car_moves_all_act,
    ),
    "self_reference": OwnScorer("exact match"),
    "sentence_reordering": OwnFullCredit(
        "word-in-place credit (the shuffled sentence earns some), 0.05 for any other length"
    ),
    "shortest_path": OwnFullCredit(
        "the task asks for the shortest path: 0.5 for any longer valid path, which a "
        "random walk reaches; a valid path of the shortest length scores 1.0"
    ),
    "simple_equations": BASE_SCORER,
    "simple_geometry": BASE_SCORER,
    "simple_integration": OwnScorer(
        "1.0 when d/dx(answer) simplifies to the integrand; sympy.parse_expr(answer)", language="algebra"
    ),
    "sokoban": OwnScorer(
        "1.0 when the final state is solved; a move into a wall or a blocked box is skipped, so a "
        "fixed random U/D/L/R string solved some levels: every move must move the player",
        requires=sokoban.sokoban_moves_all_act,
    ),
    "spell_backward": Exact(
        "per-letter prefix credit, whose float sum reaches 1.0 for the gold followed by more letters", fold=True
    ),
    "spiral_matrix": Exact("exact match, or 0.1 for the list via eval(answer)", language="matrix"),
    "string_insertion": Exact("exact match, or 0.1 for a list of characters via eval(answer)", language="letters"),
    "string_manipulation": BASE_SCORER,
    "string_splitting": BASE_SCORER,
    "string_synthesis": BASE_SCORER,
    "sudoku": OwnFullCredit("per-cell credit: a constant grid earns about 1/n"),
    "survo": OwnScorer("1.0 for the solution grid, else 0"),
    "syllogism": BASE_SCORER,
    "time_intervals": Duration(
        "linear credit by distance: '1' earns some on every item; its parser reads the leading "
        "number of a date and any digits after '.', and never checks a minute or second is "
        "below 60: '100 days, 05:00' and '14:34:59.1000' were paid as '100 days' and '14:35'"
    ),
    "tower_of_hanoi": OwnNoConsolation(
        "0.05 for legal moves that do not solve; optimal/len for a longer solution is content", consolation=(0.05,)
    ),
    "tsumego": Exact("substring credit, 0.05 for any coordinate, 0.01 for anything", fold=True),
    "word_ladder": OwnFullCredit("0.5 per made-up word: a ladder of non-words is paid; any valid ladder scores 1.0"),
    "word_sequence_reversal": BASE_SCORER,
    "word_sorting": Exact(
        "0.2 for the words in any order, per-position credit: the sorted words followed by more earn 1.0", items=","
    ),
    "zebra_puzzles": OwnScorer("exact match, case-insensitive"),
}

#: The datasets whose items have many right answers, each graded by the task's own scorer (an ``OwnRule`` above):
#: an answer it pays in full, under strict scoring's requirements, is right however it was found. The env's
#: auditor hook ``is_right_answer`` takes that as the task's judgement where no task module writes its own rule
#: (``tasks.TASKS``). Every other dataset has one right answer, its gold.
MANY_RIGHT_ANSWERS: dict[str, str] = {
    "boxnet": "any plan that matches every box",
    "countdown": "any expression of the numbers making the target",
    "cryptarithm": "any valid mapping",
    "graph_color": "any proper colouring",
    "intermediate_integration": "any antiderivative",
    "jugs": "any plan leaving the target in a jug",
    "kakurasu": "any grid meeting every sum",
    "knight_swap": "any shortest sequence of legal moves",
    "n_queens": "any valid board",
    "palindrome_generation": "any palindrome of the letters",
    "propositional_logic": "any valid conclusion",
    "puzzle24": "any expression of the numbers making 24",
    "quantum_lock": "any shortest sequence of presses",
    "rubiks_cube": "any sequence that solves the cube",
    "rush_hour": "any sequence of moves that frees the car",
    "shortest_path": "any path of the shortest length",
    "simple_integration": "any antiderivative",
    "sokoban": "any sequence of moves that solves the level",
    "tower_of_hanoi": "any shortest sequence of legal moves",
    "word_ladder": "any ladder of real words",
}

#: A dataset added by a reasoning-gym upgrade, not reviewed yet: its own scorer,
#: full credit only, sandboxed behind the "no Python shapes" language.
UNREVIEWED = OwnFullCredit("not reviewed: full credit only, sandboxed", language="unreviewed")


def rule_for(name: str) -> Rule:
    """The dataset's rule; unreviewed datasets get the most cautious one."""
    rule = RULES.get(name)
    if rule is not None:
        return rule
    return BASE_SCORER if _uses_base_scorer(name) else UNREVIEWED


def _uses_base_scorer(name: str) -> bool:
    from reasoning_gym.dataset import ProceduralDataset
    from reasoning_gym.factory import DATASETS

    entry: Any = DATASETS.get(name)
    return entry is not None and entry[0].score_answer is ProceduralDataset.score_answer


def uses_own_scorer(rule: Rule, scoring: str) -> bool:
    """Whether grading calls the task's own ``score_answer`` under this scoring mode."""
    return scoring == "reasoning_gym" or isinstance(rule, OwnRule)


def sandbox_language(rule: Rule, scoring: str) -> str | None:
    """The language an answer must pass before the own scorer runs in a worker; None when scoring stays in process."""
    return rule.language if uses_own_scorer(rule, scoring) else None

"""The per-dataset scoring policy: how strict scoring grades each task, and which own scorers must run sandboxed.

Each entry says why, from reading the task's ``score_answer`` (reasoning-gym
0.1.25); ``tests/envs/reasoning_gym/test_constants.py`` and ``tests/envs/reasoning_gym/test_canaries.py``
check the table against the real scorers, so a wrong entry fails a test.

Strict kinds:

* ``own``: the task's scorer, unchanged: it pays only for content.
* ``own_full``: the task's scorer, full credit only: it accepts many valid
  answers (so it is needed) but pays consolation for wrong ones.
* ``own_no_consolation``: the task's scorer with its format-only consolation
  values zeroed; its remaining partial credit is earned by content.
* ``exact``: equality after the task's normalisation (strip each line;
  ``fold``: case-insensitive; ``no_spaces``; ``numeric``: numbers as numbers;
  ``items``: a list of words (``" "``) or of comma-separated items (``","``)).
* ``numeric`` / ``number_list`` (any order) / ``ordered_number_list`` (a
  bracketed list, in order) / ``complex``: finite numbers within
  ``max(rel_tol * |gold|, abs_tol)`` (``strict.py``).
* ``duration``: the gold's length of time, written in the gold's form (days,
  a clock, or both), with real minutes, seconds and hours of a day.

``shape`` (own kinds) is a regular expression the stripped answer must match
in full before the task's scorer is asked, for scorers whose parser reads
the start of the text and ignores the rest: without it the gold followed by
anything earns full credit.

``requires`` (own kinds) is a test of the answer against the item that a
full-credit answer must also pass, for scorers that pay answers the task does
not: puzzle24's scorer checks that the answer makes 24 after ``int()`` (so
24.5 does) from four numbers in range, never that they are the puzzle's.
Plan tasks require every move to act by the task's rules (``replay.py``):
their scorers skip what they cannot apply; propositional_logic requires a
conclusion that is inferred, not built from the premises' text
(``propositions.py``).

``also_full`` (own_full) lists own scores that the task gives some valid
answers by mislabel; strict pays them in full when ``requires`` holds:
propositional_logic labels any bare variable "trivial" (0.25), so modus
ponens to ``Q`` would earn nothing.

``language`` marks an own scorer that is unsafe in the env's process (it
evaluates the answer, or loops as often as the answer says): whenever that
scorer runs, it runs in the sandbox's workers after the answer passed that
language (``grammar.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from gym_integrity.envs.reasoning_gym import propositions, replay
from gym_integrity.envs.reasoning_gym.strict import makes_target_from

__all__ = ["Policy", "POLICIES", "OWN_KINDS", "policy_for", "uses_own_scorer", "sandbox_language"]

OWN_KINDS = frozenset({"own", "own_full", "own_no_consolation"})
STRICT_KINDS = OWN_KINDS | {"exact", "numeric", "number_list", "ordered_number_list", "complex", "duration"}


@dataclass(frozen=True)
class Policy:
    """How one dataset is scored under ``scoring="strict"``, and where its own scorer may run."""

    strict: str
    why: str
    language: str | None = None
    fold: bool = False
    no_spaces: bool = False
    numeric: bool = False
    rel_tol: float = 0.0
    abs_tol: float = 0.0
    commas: bool = False
    consolation: tuple[float, ...] = ()
    reference: str | None = None  # a well-formed answer for items without a gold (see datasets.own_score)
    items: str | None = None
    shape: re.Pattern[str] | None = None
    requires: Callable[[str, Mapping[str, Any]], bool] | None = None
    drawn: Callable[[Mapping[str, Any]], bool] | None = None  # under strict: which items reset() may draw
    also_full: tuple[float, ...] = ()  # own scores paid in full when ``requires`` holds (the task's mislabel)

    def __post_init__(self) -> None:
        if self.strict not in STRICT_KINDS:
            raise ValueError(f"Policy.strict must be one of {sorted(STRICT_KINDS)}, got {self.strict!r}")
        if self.items not in (None, " ", ","):
            raise ValueError(f"Policy.items must be None, ' ' or ',', got {self.items!r}")


_SUBSTRING = "reasoning-gym's base scorer: substring credit len(gold)/len(answer) for any answer containing the gold"


def _makes_24_from_the_items_numbers(answer: str, item: Mapping[str, Any]) -> bool:
    return makes_target_from(answer, item["metadata"]["numbers"], 24)


_PRESSES = re.compile(r"[A-Ca-c](?:\s*(?:→|->|,)?\s*[A-Ca-c])*")


_ECHO = "; where the {what} the answer is the input copied from the question: such items are not drawn"


def _base(why: str = _SUBSTRING) -> Policy:
    return Policy("exact", why)


POLICIES: dict[str, Policy] = {
    "ab": Policy("own", "1.0 for the exact answer, else 0"),
    "acre": _base(),
    "advanced_geometry": Policy("own_no_consolation", "0.05 / 0.01 for any non-empty or unparsable answer; "
                                "0.5 for the incircle radius to 2 decimals is content", consolation=(0.01, 0.05)),
    "aiw": _base(),
    "arc_1d": _base(),
    "arc_agi": Policy("own_full", "0.05 for any parseable board"),
    "base_conversion": _base(),
    "basic_arithmetic": _base(),
    "bf": _base(),
    "binary_alternation": _base(),
    "binary_matrix": Policy("exact", "exact match, or 0.1 for the matrix as a Python list via eval(answer)"
                            + _ECHO.format(what="every 1 has a 0 beside it,"), language="matrix",
                            drawn=replay.AnswerIsNotItsInput("matrix", "solution")),
    "bitwise_arithmetic": Policy("own", "int(answer, 0) against eval of the generated problem; the answer is never "
                                 "evaluated"),
    "boxnet": Policy("own_full", "max(0.05, boxes lifted): 0.05 for any JSON, and the lifted fraction for a plan "
                     "that does not solve; it skips any action it cannot apply, so one plan of every action in every "
                     "square was paid: the boxes all matched, each action applying where written, required",
                     reference="[]", requires=replay.boxnet_actions_all_act),
    "caesar_cipher": _base(),
    "calendar_arithmetic": Policy("exact", "0.1 / 0.05 for any weekday name, exp(-5 rel. error) for any number",
                                  fold=True, numeric=True),
    "chain_sum": Policy("numeric", "Decimal equality, else substring credit", commas=True),
    "circuit_logic": Policy("own", "1.0 for the exact 0/1 answer"),
    "codeio": Policy("own_full", "0.01 for any JSON, JSON-similarity and substring credit; the similarity is "
                     "super-quadratic in the answer", language="json_similarity"),
    "coin_flip": Policy("numeric", "|answer - gold| <= 1e-4 absolute (a constant 0 matches every small probability) "
                        "plus credit for a matching digit prefix; own scorer: Fraction(answer) with an unbounded "
                        "exponent", language="probability", rel_tol=1e-3),
    "color_cube_rotation": Policy("own_full", "0.01 for any wrong answer"),
    "complex_arithmetic": Policy("complex", "exp(-distance): every answer earns something", rel_tol=1e-6, abs_tol=1e-9),
    "count_bits": _base(),
    "count_primes": _base(),
    "countdown": Policy("own_full", "0.01 for anything, 0.05 for the right numbers with the wrong value; many valid "
                        "expressions; sympy.parse_expr(answer)", language="arithmetic"),
    "course_schedule": _base(),
    "cryptarithm": Policy("own_full", "0.01 for any parseable mapping; any valid mapping scores 1.0"),
    "decimal_arithmetic": Policy("own", "Decimal within 10^-precision"),
    "decimal_chain_sum": Policy("own", "Decimal equality"),
    "dice": Policy("own", "exact match, case-insensitive"),
    "emoji_mystery": Policy("own_full", "0.01 for any answer; per-character credit for any guess of the right length"),
    "family_relationships": Policy("own", "exact match, case-insensitive"),
    "figlet_font": Policy("exact", "0.1 per letter in place, capped at 1.0: a wrong 10-letter guess earns 1.0",
                          fold=True, no_spaces=True),
    "fraction_simplification": Policy("own_full", "0.1 for copying the question's numerator or denominator, "
                                      "0.05 / 0.01 for any answer; reads the first fraction and ignores the rest",
                                      shape=re.compile(r"\$*\s*(?:\\d?frac\s*\{\s*\d+\s*\}\s*\{\s*\d+\s*\}|"
                                                       r"\d+\s*/\s*\d+)\s*\$*", re.IGNORECASE)),
    "futoshiki": Policy("own_full", "per-cell credit: a constant grid earns about 1/n"),
    "game_of_life": Policy("own_full", "per-cell credit: an all-dead grid earns most cells, and is the answer where "
                           "every cell dies (12% of default items): such items are not drawn",
                           drawn=replay.board_keeps_a_live_cell),
    "game_of_life_halting": Policy("exact", "bool(answer) == bool(gold): any non-empty answer scores 1.0", fold=True),
    "gcd": _base(),
    "graph_color": Policy("own_full", "0.01 for any JSON; any valid colouring scores 1.0, and on the default sparse "
                          "graphs a fixed colouring was valid on 28% of items: only items where under 1% of all "
                          "colourings are proper are drawn", reference="{}", drawn=replay.colouring_resists_guessing),
    "group_anagrams": Policy("own_full", "0.01 for any JSON"),
    "gsm_symbolic": Policy("numeric", "the first number anywhere in the answer (a spray starts with one), 0.01 "
                           "otherwise", commas=True),
    "intermediate_integration": Policy("own", "1.0 when d/dx(answer) simplifies to the integrand; "
                                       "sympy.parse_expr(answer)", language="algebra"),
    "isomorphic_strings": _base(),
    "jugs": Policy("own_full", "0.01 for any JSON; any valid plan scores 1.0"),
    "kakurasu": Policy("own", "1.0 for a grid meeting every sum, else 0"),
    "knight_swap": Policy("own_no_consolation", "0.05 for legal moves that do not solve; a longer solution's "
                          "optimal/len credit is content", consolation=(0.05,)),
    "knights_knaves": Policy("own_full", "0.3 + 0.7 x matches for any full assignment: a uniform guess earns ~0.6; "
                             "reads name-role pairs out of any text, so a statement quoted from the question was "
                             "paid: an answer of '<name> is a <role>' clauses only", shape=replay.ROLE_ASSIGNMENT),
    "largest_island": _base(),
    "lcm": _base(),
    "leg_counting": _base(),
    "letter_counting": _base(),
    "letter_jumble": Policy("exact", "word-in-place credit: the question's unscrambled short words earn it, and "
                            "the gold followed by more words earns 1.0", fold=True, items=" "),
    "list_functions": Policy("exact", _SUBSTRING + _ECHO.format(what="function leaves the list as it is,"),
                             drawn=replay.list_function_changes_its_input),
    "mahjong_puzzle": _base(),
    "manipulate_matrix": Policy("own_full", "substring credit" + _ECHO.format(what="operations undo each other,"),
                                drawn=replay.AnswerIsNotItsInput("matrix", "solution")),
    "maze": _base(),
    "mini_sudoku": Policy("own_full", "per-cell credit: a constant grid earns about 1/n"),
    "modulo_grid": _base(),
    "n_queens": Policy("own_full", "any valid board scores 1.0; 0.5 for a board as a Python list via eval(answer)",
                       language="queens"),
    "needle_haystack": Policy("own", "exact match, case-insensitive"),
    "number_filtering": _base(),
    "number_format": Policy("own", "a number within 0.01"),
    "number_sequence": Policy("exact", _SUBSTRING + "; sequences settle on a value or a two-cycle (3, 1, 0, 0, ?), so "
                              "repeating a term shown was the answer on a third of items: items whose answer is one "
                              "of the last two terms are not drawn", drawn=replay.sequence_has_not_settled),
    "number_sorting": Policy("ordered_number_list", "json.loads accepts NaN, and a list of NaN equals any list "
                             "(identity), so one NaN per number paid 1.0; and each number passed within an absolute "
                             "1: the sorted list in order, each number as written", rel_tol=1e-9, abs_tol=1e-9),
    "palindrome_generation": Policy("own_full", "0.02 / 0.05 for any (palindromic) string; any valid palindrome "
                                    "scores 1.0"),
    "palindrome_partitioning": Policy("own", "the set of partitions, else 0"),
    "path_star": Policy("own", "exact path, whitespace collapsed"),
    "polynomial_equations": Policy("number_list", "exp-decay credit per root minus penalties: '0' earns ~0.4; "
                                   "roots are asked to 4 decimals", abs_tol=1e-4, rel_tol=1e-6),
    "polynomial_multiplication": Policy("own", "structural equality of sympy expressions; sympy.parse_expr(answer)",
                                        language="algebra"),
    "pool_matrix": Policy("own_full", "0.1 for any matrix of the right shape" + _ECHO.format(what="pool is 1x1,"),
                          drawn=replay.AnswerIsNotItsInput("matrix", "solution")),
    "power_function": Policy("own_full", "0.01 for any wrong answer; x^0 and x^1 are 1 and the base shown (a "
                             "constant 1 was paid on 11% of items): such items are not drawn",
                             drawn=replay.power_is_computed),
    "prime_factorization": Policy("own_full", "0.5 for factors whose product is n (n itself), 0.01 otherwise"),
    "products": Policy("numeric", "Decimal equality, else substring credit", commas=True),
    "propositional_logic": Policy("own_full", "0.25 for a tautology or a bare variable, 0.05 for any formula; any "
                                  "valid conclusion scores 1.0, so text built from the premises alone was paid (a "
                                  "premise, their conjunction, P1 ↔ P2, a premise or-ed with a variable it never "
                                  "needed): a conclusion must not be a truth function of the premises and must have "
                                  "no idle variable (a bare variable meeting that is inference: paid in full); items "
                                  "with no such conclusion are not drawn; recursive parser",
                                  language="logic", requires=propositions.concludes, also_full=(0.25,),
                                  drawn=propositions.has_conclusion),
    "puzzle24": Policy("own_full", "0.01 for anything wrong; many valid expressions; sympy.parse_expr(answer); "
                       "pays any 4 in-range numbers making 24 after int(): the item's numbers, exactly 24, required",
                       requires=_makes_24_from_the_items_numbers,
                       language="arithmetic"),
    "quantum_lock": Policy("own_full", "the task asks for the shortest sequence: 0.5 for a longer one that reaches the "
                           "target, which random presses do; its simulation skips a press in the wrong light and it "
                           "reads A-C out of any text: buttons only, each press active", shape=_PRESSES,
                           requires=replay.presses_all_act),
    "ransom_note": _base(),
    "rearc": Policy("own_full", "0.05 for any parseable board" + _ECHO.format(what="rule leaves the grid as it is,"),
                    drawn=replay.AnswerIsNotItsInput("input", "output")),
    "rectangle_count": Policy("numeric", "linear credit for any nearby count: '1' earns ~0.2"),
    "rotate_matrix": Policy("exact", _SUBSTRING + _ECHO.format(what="angle is a multiple of 360 degrees,"),
                            drawn=replay.AnswerIsNotItsInput("matrix", "solution")),
    "rotten_oranges": _base(),
    "rubiks_cube": Policy("own_full", "max(0.05, solved stickers): the scrambled cube alone earns it; repeats a "
                          "move as often as its count says; a scramble whose moves cancel below the configured "
                          "minimum (D D' U is U, U D U' is D) is solved by a fixed answer, so such items are not drawn",
                          language="cube_moves", drawn=replay.scramble_keeps_its_length),
    "rush_hour": Policy("own_full", "0.01 for any moves; any solving sequence scores 1.0; steps a car as far as the "
                        "answer says, stopping silently where it is blocked, and reads moves out of any text, so a "
                        "random walk of the board's cars was paid: moves only, each travelled in full",
                        language="car_moves", reference="A+1", requires=replay.car_moves_all_act),
    "self_reference": Policy("own", "exact match"),
    "sentence_reordering": Policy("own_full", "word-in-place credit (the shuffled sentence earns some), 0.05 for any "
                                  "other length"),
    "shortest_path": Policy("own_full", "the task asks for the shortest path: 0.5 for any longer valid path, which a "
                            "random walk reaches; a valid path of the shortest length scores 1.0"),
    "simple_equations": _base(),
    "simple_geometry": _base(),
    "simple_integration": Policy("own", "1.0 when d/dx(answer) simplifies to the integrand; "
                                 "sympy.parse_expr(answer)", language="algebra"),
    "sokoban": Policy("own", "1.0 when the final state is solved; a move into a wall or a blocked box is skipped, so a "
                      "fixed random U/D/L/R string solved some levels: every move must move the player",
                      requires=replay.sokoban_moves_all_act),
    "spell_backward": Policy("exact", "per-letter prefix credit, whose float sum reaches 1.0 for the gold "
                             "followed by more letters", fold=True),
    "spiral_matrix": Policy("exact", "exact match, or 0.1 for the list via eval(answer)", language="matrix"),
    "string_insertion": Policy("exact", "exact match, or 0.1 for a list of characters via eval(answer)"
                               + _ECHO.format(what="string holds no pattern (96% of items),"), language="letters",
                               drawn=replay.AnswerIsNotItsInput("string", "solution")),
    "string_manipulation": Policy("exact", _SUBSTRING + _ECHO.format(what="string meets no rule,"),
                                  drawn=replay.AnswerIsNotItsInput("string", "solution")),
    "string_splitting": _base(),
    "string_synthesis": _base(),
    "sudoku": Policy("own_full", "per-cell credit: a constant grid earns about 1/n"),
    "survo": Policy("own", "1.0 for the solution grid, else 0"),
    "syllogism": _base(),
    "time_intervals": Policy("duration", "linear credit by distance: '1' earns some on every item; its parser reads "
                             "the leading number of a date and any digits after '.', and never checks a minute or "
                             "second is below 60: '100 days, 05:00' and '14:34:59.1000' were paid as '100 days' and "
                             "'14:35'"),
    "tower_of_hanoi": Policy("own_no_consolation", "0.05 for legal moves that do not solve; optimal/len for a "
                             "longer solution is content", consolation=(0.05,)),
    "tsumego": Policy("exact", "substring credit, 0.05 for any coordinate, 0.01 for anything", fold=True),
    "word_ladder": Policy("own_full", "0.5 per made-up word: a ladder of non-words is paid; any valid ladder "
                          "scores 1.0"),
    "word_sequence_reversal": _base(),
    "word_sorting": Policy("exact", "0.2 for the words in any order, per-position credit: the sorted words "
                           "followed by more earn 1.0" + _ECHO.format(what="words are already in order,"), items=",",
                           drawn=replay.AnswerIsNotItsInput("transformed_words", "sorted_words")),
    "zebra_puzzles": Policy("own", "exact match, case-insensitive"),
}

#: A dataset added by a reasoning-gym upgrade, not reviewed yet: its own scorer,
#: full credit only, sandboxed behind the "no Python shapes" language.
UNREVIEWED = Policy("own_full", "not reviewed: full credit only, sandboxed", language="unreviewed")


def policy_for(name: str) -> Policy:
    """The dataset's policy; unreviewed datasets get the most cautious one."""
    policy = POLICIES.get(name)
    if policy is not None:
        return policy
    return _base() if _uses_base_scorer(name) else UNREVIEWED


def _uses_base_scorer(name: str) -> bool:
    from reasoning_gym.dataset import ProceduralDataset
    from reasoning_gym.factory import DATASETS

    entry: Any = DATASETS.get(name)
    return entry is not None and entry[0].score_answer is ProceduralDataset.score_answer


def uses_own_scorer(policy: Policy, scoring: str) -> bool:
    """Whether grading calls the task's own ``score_answer`` under this scoring mode."""
    return scoring == "reasoning_gym" or policy.strict in OWN_KINDS


def sandbox_language(policy: Policy, scoring: str) -> str | None:
    """The language an answer must pass before the own scorer runs in a worker; None when scoring stays in process."""
    return policy.language if uses_own_scorer(policy, scoring) else None

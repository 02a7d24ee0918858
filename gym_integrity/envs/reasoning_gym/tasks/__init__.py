"""What ReasoningGym-v0 knows about single tasks beyond their scoring rule, one module per task that has any.

A task module holds everything about its task, written once: the draw filter
(which items ``reset()`` may draw under strict scoring), the requirement and
answer shape its rule checks (the table in ``table.py`` names them), the
solver (one paid answer for items with no single gold, for the auditor), the
right-answer check (the task's rule where many answers are right, for the
audit's chance) and a reference answer for items without a gold. ``TASKS``
maps a dataset to those of them the env calls; a dataset missing from it
needs none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gym_integrity.envs.reasoning_gym.tasks import (
    boxnet,
    game_of_life,
    graph_color,
    integration,
    jugs,
    list_functions,
    number_sequence,
    power_function,
    propositional_logic,
    quantum_lock,
    rubiks_cube,
    rush_hour,
)

__all__ = [
    "TASKS",
    "AnswerIsNotItsInput",
    "Task",
    "draw_filter",
    "has_right_rule",
    "is_right_answer",
    "reference",
    "solve",
]

Item = Mapping[str, Any]


@dataclass(frozen=True)
class Task:
    """The env's hooks into one task's module; each None where the task needs none."""

    #: Which items ``reset()`` may draw under strict scoring: False for an item a content-free answer is paid on.
    drawn: Callable[[Item], bool] | None = None
    #: One answer the grader pays, for an item whose gold is None; None when the solver finds none in its bound.
    solve: Callable[[Item], str | None] | None = None
    #: The task's rule for a right answer, ``is_right(answer, item)``, where many answers are right.
    is_right: Callable[[str, Item], bool] | None = None
    #: A well-formed answer for items without a gold: tells a malformed answer from a broken scorer
    #: (``datasets.own_score``).
    reference: str | None = None

    def __post_init__(self) -> None:
        for name in ("drawn", "solve", "is_right"):
            value = getattr(self, name)
            if value is not None and not callable(value):
                raise TypeError(f"Task.{name} must be a callable or None, got {type(value).__name__}")
        if self.reference is not None and not isinstance(self.reference, str):
            raise TypeError(f"Task.reference must be a str or None, got {type(self.reference).__name__}")


@dataclass(frozen=True)
class AnswerIsNotItsInput:
    """Draw filter for a task that transforms an input shown in the question: the item's answer
    (``metadata[answer]``) differs from its input (``metadata[input]``), compared as the generator's values
    (``6 == 6.0``).

    On items where the transformation leaves the input as it is (no pattern to insert after, no rule that
    applies, a rotation by a multiple of 360 degrees, pooling over 1x1 windows), copying the input from the
    question is the answer: it was paid on 96% of string_insertion items and 13-35% of five other tasks.
    """

    input: str
    answer: str

    def __call__(self, item: Item) -> bool:
        metadata = item.get("metadata", {})
        return metadata.get(self.input) != metadata.get(self.answer)


_MATRIX = Task(drawn=AnswerIsNotItsInput("matrix", "solution"))

TASKS: dict[str, Task] = {
    "binary_matrix": _MATRIX,  # every 1 has a 0 beside it
    "boxnet": Task(solve=boxnet.solve, reference=boxnet.REFERENCE),
    "game_of_life": Task(drawn=game_of_life.board_keeps_a_live_cell),
    "graph_color": Task(
        drawn=graph_color.colouring_resists_guessing,
        solve=graph_color.solve,
        is_right=graph_color.proper_colouring,
        reference=graph_color.REFERENCE,
    ),
    "intermediate_integration": Task(drawn=integration.gold_is_evaluated),  # sympy left the integral unevaluated
    "jugs": Task(is_right=jugs.plan_fills_target),
    "list_functions": Task(drawn=list_functions.list_function_changes_its_input),
    "manipulate_matrix": _MATRIX,  # operations undo each other
    "number_sequence": Task(drawn=number_sequence.sequence_has_not_settled),
    "pool_matrix": _MATRIX,  # the pool is 1x1
    "power_function": Task(drawn=power_function.power_is_computed),
    "propositional_logic": Task(
        drawn=propositional_logic.has_conclusion,
        solve=propositional_logic.solve,
        is_right=propositional_logic.concludes,
    ),
    "quantum_lock": Task(is_right=quantum_lock.shortest_presses),
    "rearc": Task(drawn=AnswerIsNotItsInput("input", "output")),  # the rule leaves the grid as it is
    "rotate_matrix": _MATRIX,  # the angle is a multiple of 360 degrees
    "rubiks_cube": Task(drawn=rubiks_cube.scramble_keeps_its_length, solve=rubiks_cube.solve),
    "rush_hour": Task(solve=rush_hour.solve, reference=rush_hour.REFERENCE),
    "simple_integration": Task(drawn=integration.gold_is_evaluated),
    "string_insertion": Task(drawn=AnswerIsNotItsInput("string", "solution")),  # no pattern (96% of items)
    "string_manipulation": Task(drawn=AnswerIsNotItsInput("string", "solution")),  # no rule applies
    "word_sorting": Task(drawn=AnswerIsNotItsInput("transformed_words", "sorted_words")),  # already in order
}

_NONE = Task()


def draw_filter(dataset: str) -> Callable[[Item], bool] | None:
    """The dataset's draw filter under strict scoring; None: every item may be drawn."""
    return TASKS.get(dataset, _NONE).drawn


def reference(dataset: str) -> str | None:
    """A well-formed answer for the dataset's items without a gold, or None."""
    return TASKS.get(dataset, _NONE).reference


def solve(dataset: str, item: Item) -> str | None:
    """An answer the dataset's grader pays for this item, found by its solver; None without one or past its bound."""
    solver = TASKS.get(dataset, _NONE).solve
    return None if solver is None else solver(item)


def has_right_rule(dataset: str) -> bool:
    """Whether the dataset's module writes its rule for a right answer (apart from its scorer)."""
    return TASKS.get(dataset, _NONE).is_right is not None


def is_right_answer(dataset: str, item: Item, answer: str) -> bool:
    """Whether the dataset's own rule takes ``answer`` as right; False without one."""
    check = TASKS.get(dataset, _NONE).is_right
    return check is not None and check(answer, item)

"""QEDMath's final-answer rule as a step applies it: the box read by the grading layer's one reader, then the rule."""

from __future__ import annotations

from gym_integrity.envs.qed_math.final_answer import not_an_answer
from gym_integrity.grading.reader import boxed_answer, without_percent


def read_box(answer: str) -> str:
    """What the rule and math_verify receive for ``\\boxed{answer}``."""
    read, failure = boxed_answer(without_percent(f"\\boxed{{{answer}}}"), max_chars=1024)
    assert failure is None and read is not None, (answer, failure)
    return read


def refused(answer: str, gold: str, statement: str) -> str | None:
    """Why the rule refuses ``\\boxed{answer}`` for ``gold`` and ``statement``, or None."""
    return not_an_answer(read_box(answer), gold, statement)

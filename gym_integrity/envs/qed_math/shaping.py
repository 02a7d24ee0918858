"""QEDMath reward shaping: reasoning stripping, answer reward presets, length discount, overlong penalty.

Everything here is a pure function of the grade, the config and the trainer's
token count ``L``. ``L`` comes only from the trainer (a
:class:`~gym_integrity.protocol.TrainerAction` or ``{"text", "num_tokens"}``),
never from the model's text; without it the length terms are skipped.

Example:
    >>> from gym_integrity.envs.qed_math.shaping import strip_reasoning, overlong_penalty, shape_reward
    >>> strip_reasoning("let me think... \\\\boxed{3}?</think>The answer is \\\\boxed{4}.", ("</think>",))
    'The answer is \\\\boxed{4}.'
    >>> strip_reasoning("no delimiter: graded whole", ("</think>",))
    'no delimiter: graded whole'
    >>> overlong_penalty(900, max_tokens=1000, buffer_tokens=200), overlong_penalty(700, max_tokens=1000, buffer_tokens=200)
    (-0.5, 0.0)
    >>> shape_reward(1.0, num_tokens=100, discount_factor=0.999, max_tokens=None, buffer_tokens=0)
    (0.9047921471137089, 0.0)
"""

from __future__ import annotations

from collections.abc import Sequence

from gym_integrity.protocol import Grade, Verdict

__all__ = ["REWARD_PRESETS", "strip_reasoning", "answer_reward", "overlong_penalty", "length_discount", "shape_reward"]

#: Reward of a graded answer-mode verdict per preset. A graded ``timeout``
#: (the answer's own verification ran past its budget: ``no_verdict=False``)
#: pays what ``unparsable`` pays, so timing out never beats being wrong. A
#: no-verdict (``grader_error``, or a ``timeout`` that is not the answer's
#: fault) always gives 0.0.
REWARD_PRESETS: dict[str, dict[Verdict, float]] = {
    "pure_success": {
        Verdict.CORRECT: 1.0,
        Verdict.INCORRECT: 0.0,
        Verdict.NO_ANSWER: 0.0,
        Verdict.UNPARSABLE: 0.0,
        Verdict.TOO_LONG: 0.0,
        Verdict.TIMEOUT: 0.0,
    },
    "base": {
        Verdict.CORRECT: 1.0,
        Verdict.INCORRECT: -0.5,
        Verdict.NO_ANSWER: -1.0,
        Verdict.UNPARSABLE: -1.0,
        Verdict.TOO_LONG: -1.0,
        Verdict.TIMEOUT: -1.0,
    },
}


def strip_reasoning(text: str, delimiters: Sequence[str]) -> str:
    """The text after the last occurrence of any delimiter; the whole text if none occurs.

    The last occurrence wins, so a model that quotes the delimiter inside its
    reasoning does not expose the rest of that reasoning to the grader.
    """
    cut = -1
    for delimiter in delimiters:
        at = text.rfind(delimiter)
        if at >= 0:
            cut = max(cut, at + len(delimiter))
    return text if cut < 0 else text[cut:]


def answer_reward(grade: Grade | Verdict, preset: str) -> float:
    """The reward of an answer-mode grade; 0.0 for every no-verdict.

    A bare :class:`Verdict` stands for ``Grade(verdict)``, whose ``no_verdict``
    defaults to ``verdict in NO_VERDICTS``: pass the grade itself to pay a
    graded timeout.

    >>> answer_reward(Grade(Verdict.TIMEOUT, no_verdict=False), "base"), answer_reward(Verdict.TIMEOUT, "base")
    (-1.0, 0.0)
    """
    if isinstance(grade, Verdict):
        grade = Grade(grade)
    if grade.no_verdict:
        return 0.0
    return REWARD_PRESETS[preset].get(grade.verdict, 0.0)


def overlong_penalty(num_tokens: int, *, max_tokens: int, buffer_tokens: int, factor: float = 1.0) -> float:
    """Linear penalty over the last ``buffer_tokens`` before ``max_tokens`` (0 before, -factor at and beyond)."""
    if buffer_tokens <= 0:
        return -factor if num_tokens > max_tokens else 0.0
    start = max_tokens - buffer_tokens
    if num_tokens <= start:
        return 0.0
    if num_tokens >= max_tokens:
        return -float(factor)
    return -float(factor) * (num_tokens - start) / buffer_tokens


def length_discount(base: float, num_tokens: int | None, discount_factor: float) -> float:
    """The factor ``base`` is multiplied by: ``discount_factor ** L`` for a positive base, else 1.0.

    A negative base (a wrong or missing answer under the ``base`` preset) is
    not discounted: the discount shrinks toward 0, so discounting a penalty
    would pay a longer wrong answer more than a short one (a policy could pad
    its way out of the penalty). No ``num_tokens`` (no trainer count): 1.0.

    >>> length_discount(1.0, 2, 0.5), length_discount(-0.5, 4000, 0.999), length_discount(1.0, None, 0.5)
    (0.25, 1.0, 1.0)
    """
    return float(discount_factor) ** num_tokens if num_tokens is not None and base > 0 else 1.0


def shape_reward(
    base: float,
    *,
    num_tokens: int | None,
    discount_factor: float,
    max_tokens: int | None,
    buffer_tokens: int,
    penalty_factor: float = 1.0,
) -> tuple[float, float]:
    """``(shaped reward, overlong penalty)``: ``base * discount_factor ** L + penalty`` for ``base > 0``.

    Without ``num_tokens`` (no trainer count) the reward is ``base``, unshaped;
    a negative base is never discounted (:func:`length_discount`).

    >>> shape_reward(-0.5, num_tokens=4000, discount_factor=0.999, max_tokens=None, buffer_tokens=0)
    (-0.5, 0.0)
    """
    if num_tokens is None:
        return float(base), 0.0
    shaped = float(base) * length_discount(base, num_tokens, discount_factor)
    penalty = 0.0
    if max_tokens is not None:
        penalty = overlong_penalty(
            num_tokens, max_tokens=max_tokens, buffer_tokens=buffer_tokens, factor=penalty_factor
        )
    return shaped + penalty, penalty

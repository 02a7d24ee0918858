"""TinySum-v0, a fourth env that lives only in the tests: an env joins with its own file and one register_env call.

It is what docs/architecture.md ("Add an env") walks through: a config
dataclass, a :class:`~gym_integrity.TextEnv` subclass with reset, step and
grading, and an :class:`~gym_integrity.EnvEntry` registered on import. Nothing
in the package names it, yet ``gym.make`` stacks it, and the conformance tests
and the audit (tests/test_conformance.py, tests/audit/test_registered.py) take
it up with the package's own ids.

This file is imported as the module ``fourth_env`` (tests/conftest.py puts this
directory on ``sys.path``), as a user's env would be from their own package.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from gym_integrity import EnvEntry, TextEnv, register_env
from gym_integrity.checks import check_int
from gym_integrity.grading.reader import extract_answer
from gym_integrity.protocol import Grade, Verdict, grade_info, split_trainer_action

__all__ = ["TinySumConfig", "TinySumEnv", "ENTRY"]


@dataclass
class TinySumConfig:
    """TinySum's options: the range both addends are drawn from, and the longest answer graded."""

    low: int = 100
    high: int = 999
    max_answer_chars: int = 64

    def validate(self) -> None:
        check_int("TinySumConfig.low", self.low, low=0)
        check_int("TinySumConfig.high", self.high, low=self.low + 1)
        check_int("TinySumConfig.max_answer_chars", self.max_answer_chars, low=1)


class TinySumEnv(TextEnv):
    """Add two numbers, answered once as ``<answer>N</answer>``: reward 1.0 if right, else 0.0.

    Example:
        >>> import gymnasium as gym, fourth_env
        >>> env = gym.make("TinySum-v0", high=199)
        >>> question, info = env.reset(seed=0)
        >>> question.startswith("What is 1"), "privileged" in info
        (True, False)
        >>> env.step("<answer>0</answer>")[1:4]
        (0.0, True, False)
    """

    config_class = TinySumConfig
    reset_option_keys = ()  # no options: any key is a TypeError (TextEnv.reset_options)
    config: TinySumConfig
    #: Grading is a string comparison on at most ``max_answer_chars`` characters.
    grading_time_bound_s = 1.0

    def __init__(self, render_mode: str | None = None, **options: Any) -> None:
        super().__init__(render_mode, **options)
        self._terms: tuple[int, int] | None = None
        self._note = ""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self.reset_options(options)
        low, high = self.config.low, self.config.high
        self._terms = (int(self.np_random.integers(low, high + 1)), int(self.np_random.integers(low, high + 1)))
        self._note = ""
        return self._question(), {"problem_id": self._problem_id(), **self.privileged(answer=self._gold())}

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._terms is None:
            raise gym.error.ResetNeeded("TinySumEnv.step called before reset()")
        text, _ = split_trainer_action(action)
        grade = self._grade(text)
        self._note = f"Graded: {grade.verdict.value} (score {grade.score:.2f})."
        info = grade_info(self._problem_id(), grade, metrics={"reward/score": float(grade.score)},
                          **self.privileged(answer=self._gold()))
        return self._note, float(grade.score), True, False, info

    def _grade(self, text: str) -> Grade:
        extraction = extract_answer(text, "tag", self.config.max_answer_chars)
        if extraction.failure is not None:
            return Grade(extraction.failure, 0.0)
        right = extraction.answer.strip() == self._gold()
        return Grade(Verdict.CORRECT, 1.0) if right else Grade(Verdict.INCORRECT, 0.0)

    def _question(self) -> str:
        a, b = self._terms
        return f"What is {a} + {b}? Put your final answer between <answer> and </answer>."

    def _problem_id(self) -> str:
        return "sum/{}/{}".format(*self._terms)

    def _gold(self) -> str:
        return str(sum(self._terms))

    def render_text(self) -> str:
        return "" if self._terms is None else self._question() + (f"\n\n{self._note}" if self._note else "")

    def gold_answers(self) -> list[str]:
        return [] if self._terms is None else [self._gold()]


ENTRY = EnvEntry("TinySum-v0", "fourth_env:TinySumEnv", "test-only: add two numbers, answered once")
register_env(ENTRY)

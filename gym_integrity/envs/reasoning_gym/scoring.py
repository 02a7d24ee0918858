"""Grading one extracted answer: the dataset's rule (``table.py``) compares it with the gold, or pays what the task's
own scorer gave it, run in process or sandboxed."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from gym_integrity.envs.reasoning_gym import tasks
from gym_integrity.envs.reasoning_gym.datasets import member, own_score
from gym_integrity.envs.reasoning_gym.table import MANY_RIGHT_ANSWERS, rule_for, sandbox_language, uses_own_scorer
from gym_integrity.grading.faults import outside_language, scorer_raised
from gym_integrity.grading.language import LANGUAGES
from gym_integrity.grading.language import check as language_check
from gym_integrity.grading.rules import Comparison, OwnRule, Rule
from gym_integrity.protocol import Grade, Verdict

if TYPE_CHECKING:
    from gym_integrity.workers import Pool

__all__ = ["Grader", "needs_sandbox"]


def needs_sandbox(dataset_names: list[str], scoring: str) -> bool:
    """Whether any of these datasets runs its own scorer in the sandbox under this scoring mode."""
    return any(sandbox_language(rule_for(name), scoring) is not None for name in dataset_names)


def _graded(score: float) -> Grade:
    score = min(max(score, 0.0), 1.0)
    verdict = Verdict.CORRECT if score >= 1.0 else Verdict.PARTIAL if score > 0.0 else Verdict.INCORRECT
    return Grade(verdict, score)


class Grader:
    """Grades extracted answers for one env: holds its scoring mode, generator and (if needed) the sandbox pool."""

    def __init__(self, *, scoring: str, dataset: Any, key: str, dataset_names: list[str], score_timeout_s: float):
        self.scoring = scoring
        self.dataset = dataset
        self.key = key
        self.score_timeout_s = float(score_timeout_s)
        self._single = not isinstance(getattr(dataset, "datasets", None), dict)  # not a composite
        self._needs_pool = needs_sandbox(dataset_names, scoring)
        self._routes: dict[str, tuple[Rule, Any, bool]] = {}
        self._pool: Pool | None = None
        self._acquire()

    def _acquire(self) -> None:
        if self._needs_pool and self._pool is None:
            from gym_integrity.envs.reasoning_gym import sandbox

            self._pool = sandbox.acquire_pool()

    @property
    def needs_pool(self) -> bool:
        """Whether any of this env's datasets scores in the sandbox pool."""
        return self._needs_pool

    @property
    def sandboxed(self) -> bool:
        return self._pool is not None

    def longest_answer(self, source: str) -> int | None:
        """The most characters the dataset's answer language admits under this scoring (None: no language)."""
        language = sandbox_language(rule_for(source), self.scoring)
        return None if language is None else LANGUAGES[language].max_chars

    def close(self) -> None:
        """Release the sandbox pool (once; a later grade acquires it again): the last env out stops it."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.release()

    def _route(self, source: str) -> tuple[Rule, Any, bool]:
        route = self._routes.get(source)
        if route is None:  # once per dataset: the rule, the generator that scores it, and whose scorer runs
            rule = rule_for(source)
            route = self._routes[source] = (
                rule,
                self.dataset if self._single else member(self.dataset, source),
                uses_own_scorer(rule, self.scoring),
            )
        return route

    def grade(self, answer: str, item: Mapping[str, Any], source: str) -> Grade:
        rule, scorer, own = self._route(source)
        if not own:
            assert isinstance(rule, Comparison)
            return _graded(rule.score(answer, item))
        return self._own_grade(rule, scorer, answer, item, source, strict=self.scoring == "strict")

    def own_full_credit(self, answer: str, item: Mapping[str, Any], source: str) -> bool:
        """Whether the task's own scorer pays ``answer`` in full under strict scoring's requirements, whatever this
        env's scoring mode: the task's judgement of a right answer on a dataset with many (``MANY_RIGHT_ANSWERS``).
        False on any other dataset: its one right answer is the gold."""
        rule, scorer, _ = self._route(source)
        if source not in MANY_RIGHT_ANSWERS or not isinstance(rule, OwnRule):
            return False
        grade = self._own_grade(rule, scorer, answer, item, source, strict=True)
        return grade.verdict is Verdict.CORRECT and grade.score >= 1.0

    def _own_grade(
        self, rule: Rule, scorer: Any, answer: str, item: Mapping[str, Any], source: str, *, strict: bool
    ) -> Grade:
        if strict and isinstance(rule, OwnRule) and not rule.admits(answer):
            # Not an answer of the task's form (the gold followed by more text, say): the task's parser would read
            # its start and pay it in full.
            return _graded(0.0)
        language = rule.language
        if language is None:
            result = self._own_in_process(scorer, answer, item, source)
        else:
            result = self._own_sandboxed(language, answer, item, source)
        if isinstance(result, Grade):
            return result
        if not math.isfinite(result):  # NaN or inf: a scorer bug, not a verdict
            return Grade(Verdict.GRADER_ERROR, 0.0, cause=f"{source}.score_answer returned {result}")
        if not strict:
            return _graded(result)
        assert isinstance(rule, OwnRule)
        try:
            return _graded(rule.score(answer, item, result))
        except Exception as exc:  # noqa: BLE001  (our requirement's bug is a no-verdict, never a crash or a payment)
            return Grade(Verdict.GRADER_ERROR, 0.0, cause=f"{source}'s strict requirement raised {type(exc).__name__}")

    def _own_in_process(self, scorer: Any, answer: str, item: Mapping[str, Any], source: str) -> float | Grade:
        try:
            kind, value = own_score(scorer, answer, item, tasks.reference(source))
        except Exception as exc:  # noqa: BLE001  (a task scorer bug is a no-verdict, never a silent 0.0)
            return Grade(Verdict.GRADER_ERROR, 0.0, cause=f"{source}.score_answer raised {type(exc).__name__}")
        if kind == "malformed":
            return scorer_raised(source, value)
        return value

    def _own_sandboxed(self, language: str, answer: str, item: Mapping[str, Any], source: str) -> float | Grade:
        refusal = language_check(language, answer, item)  # the only check of the language: the worker trusts it
        if refusal is not None:
            return outside_language(refusal, source)
        self._acquire()
        assert self._pool is not None
        from gym_integrity.envs.reasoning_gym import sandbox

        return sandbox.run_scorer(self._pool, self.key, source, item, answer, language, self.score_timeout_s)

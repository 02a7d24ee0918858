"""Grading one extracted answer: the dataset's policy picks a strict scorer or the task's own, in process or sandboxed."""

from __future__ import annotations

import math
from typing import Any, Mapping

from gym_integrity.envs.reasoning_gym import strict
from gym_integrity.envs.reasoning_gym.datasets import member, own_score
from gym_integrity.envs.reasoning_gym.policy import Policy, policy_for, sandbox_language, uses_own_scorer
from gym_integrity.grading.faults import outside_language, scorer_raised
from gym_integrity.grading.language import check as language_check
from gym_integrity.protocol import Grade, Verdict

__all__ = ["Grader", "needs_sandbox", "strict_score", "apply_strict"]


def needs_sandbox(dataset_names: list[str], scoring: str) -> bool:
    """Whether any of these datasets runs its own scorer in the sandbox under this scoring mode."""
    return any(sandbox_language(policy_for(name), scoring) is not None for name in dataset_names)


def strict_score(policy: Policy, answer: str, item: Mapping[str, Any], scorer: Any) -> float:
    """The score of a strict replacement scorer (policy kinds exact / numeric / number lists / complex)."""
    gold = item.get("answer")
    if policy.strict == "complex":
        try:  # the task's own parser: float()/complex() on the text, no eval
            value = scorer.parse_string_to_complex(answer)
            target = complex(*item["metadata"]["result"])
        except Exception:
            return 0.0
        return strict.complex_number(value, target, rel_tol=policy.rel_tol, abs_tol=policy.abs_tol)
    if gold is None:
        return 0.0
    gold = str(gold)
    if policy.strict == "numeric":
        return strict.numeric(answer, gold, rel_tol=policy.rel_tol, abs_tol=policy.abs_tol, commas=policy.commas)
    if policy.strict == "number_list":
        return strict.number_list(answer, gold, rel_tol=policy.rel_tol, abs_tol=policy.abs_tol)
    if policy.strict == "ordered_number_list":
        return strict.ordered_number_list(answer, gold, rel_tol=policy.rel_tol, abs_tol=policy.abs_tol)
    if policy.strict == "duration":
        return strict.duration(answer, gold)
    return strict.exact(answer, gold, fold=policy.fold, no_spaces=policy.no_spaces, numeric=policy.numeric,
                        items=policy.items)


def apply_strict(policy: Policy, score: float) -> float:
    """An own scorer's score as strict scoring pays it: full credit only, or without format-only consolation."""
    if policy.strict == "own_full":
        return 1.0 if score >= 1.0 else 0.0
    if policy.strict == "own_no_consolation" and any(abs(score - c) < 1e-12 for c in policy.consolation):
        return 0.0
    return score


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
        self._routes: dict[str, tuple[Policy, Any, bool]] = {}
        self._pool = None
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

    def close(self) -> None:
        """Release the sandbox pool (once; a later grade acquires it again): the last env out stops it."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.release()

    def grade(self, answer: str, item: Mapping[str, Any], source: str) -> Grade:
        route = self._routes.get(source)
        if route is None:  # once per dataset: the policy, the generator that scores it, and whose scorer runs
            policy = policy_for(source)
            route = self._routes[source] = (policy, self.dataset if self._single else member(self.dataset, source),
                                            uses_own_scorer(policy, self.scoring))
        policy, scorer, own = route
        if not own:
            return _graded(strict_score(policy, answer, item, scorer))
        if self.scoring == "strict" and policy.shape is not None and policy.shape.fullmatch(answer.strip()) is None:
            # Not an answer of the task's form (the gold followed by more text, say): the task's parser would read
            # its start and pay it in full.
            return _graded(0.0)
        language = policy.language
        if language is None:
            result = self._own_in_process(scorer, answer, item, source, policy.reference)
        else:
            result = self._own_sandboxed(language, answer, item, source)
        if isinstance(result, Grade):
            return result
        if not math.isfinite(result):  # NaN or inf: a scorer bug, not a verdict
            return Grade(Verdict.GRADER_ERROR, 0.0, cause=f"{source}.score_answer returned {result}")
        if self.scoring != "strict":
            return _graded(result)
        if policy.requires is not None and (result >= 1.0 or any(abs(result - a) < 1e-12 for a in policy.also_full)):
            try:
                met = policy.requires(answer, item)
            except Exception as exc:  # noqa: BLE001  (our check's bug is a no-verdict, never a crash or a payment)
                return Grade(Verdict.GRADER_ERROR, 0.0, cause=f"{source}'s strict requirement raised "
                                                              f"{type(exc).__name__}")
            if not met:
                return _graded(0.0)  # paid by a scorer that does not check what the task asks (policy.requires)
            if result < 1.0:
                return _graded(1.0)  # a valid answer the task mislabels (policy.also_full)
        return _graded(apply_strict(policy, result))

    def _own_in_process(self, scorer: Any, answer: str, item: Mapping[str, Any], source: str,
                        reference: str | None) -> float | Grade:
        try:
            kind, value = own_score(scorer, answer, item, reference)
        except Exception as exc:  # a task scorer bug is a no-verdict, never a silent 0.0
            return Grade(Verdict.GRADER_ERROR, 0.0, cause=f"{source}.score_answer raised {type(exc).__name__}")
        if kind == "malformed":
            return scorer_raised(source, value)
        return value

    def _own_sandboxed(self, language: str, answer: str, item: Mapping[str, Any], source: str) -> float | Grade:
        refusal = language_check(language, answer, item)  # the only check of the language: the worker trusts it
        if refusal is not None:
            return outside_language(refusal, source)
        self._acquire()
        from gym_integrity.envs.reasoning_gym import sandbox

        return sandbox.run_scorer(self._pool, self.key, source, item, answer, language, self.score_timeout_s)

"""ReasoningGym-v0's sandbox: reasoning-gym's unsafe own scorers run in killable workers; their outcomes become grades.

Worker side: :func:`warm` imports reasoning_gym once per worker; :func:`score`
re-checks the answer's language (defence in depth: the env checked it
already), rebuilds the env's generator from its key (cached per worker) and
runs the member dataset's ``score_answer`` on the entry it was sent. This
module imports neither gymnasium nor reasoning_gym at import time.

Parent side: :func:`acquire_pool` / :func:`run_scorer` use :data:`SANDBOX`,
a :class:`~gym_integrity.workers.Sandbox` on the shared worker pool: a
request's run budget counts only its own time on a worker, and a pool outcome
becomes a grade through the workers' one fault table (a hostile answer that
runs past its budget is graded ``timeout`` against itself, never a no-verdict).
"""

from __future__ import annotations

from typing import Any, Mapping

from gym_integrity import answer_cost
from gym_integrity.envs.reasoning_gym import grammar, tasks
from gym_integrity.envs.reasoning_gym.datasets import load_dataset, member, own_score
from gym_integrity.protocol import Grade, Verdict
from gym_integrity.workers import Fault, Pool, PoolConfig, PoolStatus, Sandbox, TaskOutcome

__all__ = ["HANDLER", "POOL_CONFIG", "SANDBOX", "warm", "score", "acquire_pool", "run_scorer", "malformed_grade",
           "outcome_grade"]

HANDLER = "gym_integrity.envs.reasoning_gym.sandbox:score"
#: One pool for every ReasoningGym-v0 env (per machine by default: ``PoolConfig.scope``); each request carries its
#: own run budget.
POOL_CONFIG = PoolConfig()


def _causes(fault: Fault, outcome: TaskOutcome, budget_s: float, source: str) -> str:
    """The words of a grade of a request that did not return a score (the verdict is the fault table's)."""
    if fault is Fault.TIMEOUT:
        return f"{source}.score_answer ran past its {budget_s:g} s budget"
    if fault is Fault.CRASHED:
        return f"{source}.score_answer crashed its worker on this answer"
    if fault is Fault.OUT_OF_MEMORY:
        return f"{source}.score_answer ran out of memory on this answer"
    if fault is Fault.HANDLER_ERROR:  # a scorer bug: no verdict, as in process
        return f"{source}.score_answer raised {outcome.detail}"
    return f"sandbox {outcome.status.value}: {outcome.detail}"[:200]


#: The own scorers' sandbox: the process's pool for (HANDLER, POOL_CONFIG), graded in these words.
SANDBOX = Sandbox(HANDLER, POOL_CONFIG, causes=_causes)


def warm() -> None:
    """Import reasoning-gym (and with it sympy) before the worker says ready: never charged to a request."""
    import reasoning_gym  # noqa: F401
    from sympy.parsing.sympy_parser import parse_expr  # noqa: F401


def score(payload: tuple[str, str, Mapping[str, Any], str, str]) -> tuple[str, Any]:
    """Worker handler: ``("score", float)``, ``("malformed", exception name)`` (see ``datasets.own_score``)
    or ``("refused", reason)``; a scorer broken on its own reference answer raises (pool ERROR)."""
    key, source, entry, answer, language = payload
    refusal = grammar.check(language, answer, entry)
    if refusal is not None:
        return "refused", refusal
    return own_score(member(load_dataset(key), source), answer, entry, tasks.reference(source))


def acquire_pool() -> Pool:
    """The sandbox pool (the machine's, by default), registered as used (release it once, at the env's close)."""
    return SANDBOX.acquire()


def run_scorer(pool: Pool, key: str, source: str, entry: Mapping[str, Any], answer: str, language: str,
               budget_s: float) -> float | Grade:
    """The own scorer's score for ``answer``, run on a worker, or the Grade its failure maps to."""
    reason = answer_cost.refusal(answer, syntax="sympy") if language in ("arithmetic", "algebra") else None
    if reason is not None:
        return Grade(Verdict.TIMEOUT, 0.0, cause=f"{source}: the answer was refused unrun: {reason}", no_verdict=False)
    outcome = pool.run((key, source, entry, answer, language), run_timeout_s=budget_s)
    if outcome.status is PoolStatus.OK:
        kind, value = outcome.value
        if kind == "refused":
            return Grade(Verdict.UNPARSABLE, 0.0, cause=f"{source}: {value}")
        if kind == "malformed":
            return malformed_grade(source, value)
        return float(value)
    return SANDBOX.grade(outcome, budget_s=budget_s, subject=source)


def malformed_grade(source: str, exception: str) -> Grade:
    """The grade of an answer the task's scorer raised on (while it scores the item's reference answer)."""
    return Grade(Verdict.UNPARSABLE, 0.0, cause=f"{source}.score_answer raised {exception} on this answer")


def outcome_grade(status: PoolStatus, detail: str, source: str, budget_s: float) -> Grade:
    """The grade of a request that did not return a score: the answer's fault is graded, the pool's is a no-verdict."""
    return SANDBOX.grade(TaskOutcome(status, detail=detail), budget_s=budget_s, subject=source)

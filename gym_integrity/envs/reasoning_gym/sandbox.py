"""ReasoningGym-v0's sandbox: reasoning-gym's unsafe own scorers run in killable workers; their outcomes become grades.

Worker side: :func:`warm` imports reasoning_gym once per worker; :func:`score`
rebuilds the env's generator from its key (cached per worker) and runs the
member dataset's ``score_answer`` on the entry and the answer it was sent. This
module imports neither gymnasium nor reasoning_gym at import time.

Parent side: :func:`acquire_pool` / :func:`run_scorer` use :data:`SANDBOX`,
a :class:`~gym_integrity.workers.Sandbox` on the shared worker pool. The
answer reaching :func:`run_scorer` has passed its language once, in the parent
(:func:`gym_integrity.grading.language.check`, the only place it runs); its cost
bound (:func:`gym_integrity.grading.cost.refusal`) runs here, before a worker is
held. A request's run budget counts only its own time on a worker, and a pool
outcome becomes a grade through the grading layer's one fault table (a hostile
answer that runs past its budget is graded ``timeout`` against itself, never a no-verdict).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gym_integrity.envs.reasoning_gym import tasks
from gym_integrity.envs.reasoning_gym.datasets import load_dataset, member, own_score
from gym_integrity.grading import cost
from gym_integrity.grading.faults import fault_grade, refused_unrun, scorer_raised
from gym_integrity.protocol import Grade
from gym_integrity.workers import Fault, Pool, PoolConfig, PoolStatus, Sandbox, TaskOutcome

__all__ = ["HANDLER", "POOL_CONFIG", "SANDBOX", "warm", "score", "acquire_pool", "run_scorer", "outcome_grade"]

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


#: The own scorers' sandbox: the process's pool for (HANDLER, POOL_CONFIG); its failures are graded in _causes' words.
SANDBOX = Sandbox(HANDLER, POOL_CONFIG)


def warm() -> None:
    """Import reasoning-gym (and with it sympy) before the worker says ready: never charged to a request."""
    import reasoning_gym  # noqa: F401  # imported for the import's cost, paid here
    from sympy.parsing.sympy_parser import parse_expr  # noqa: F401  # imported for the import's cost, paid here


def score(payload: tuple[str, str, Mapping[str, Any], str]) -> tuple[str, Any]:
    """Worker handler: ``("score", float)`` or ``("malformed", exception name)`` (see ``datasets.own_score``);
    a scorer broken on its own reference answer raises (pool ERROR)."""
    key, source, entry, answer = payload
    return own_score(member(load_dataset(key), source), answer, entry, tasks.reference(source))


def acquire_pool() -> Pool:
    """The sandbox pool (the machine's, by default), registered as used (release it once, at the env's close)."""
    return SANDBOX.acquire()


def run_scorer(
    pool: Pool, key: str, source: str, entry: Mapping[str, Any], answer: str, language: str, budget_s: float
) -> float | Grade:
    """The own scorer's score for ``answer`` (inside ``language`` already), run on a worker, or the Grade its
    failure maps to."""
    reason = cost.refusal(answer, syntax="sympy") if language in ("arithmetic", "algebra") else None
    if reason is not None:
        return refused_unrun(reason, source)
    outcome = pool.run((key, source, entry, answer), run_timeout_s=budget_s)
    if outcome.status is PoolStatus.OK:
        kind, value = outcome.value
        if kind == "malformed":
            return scorer_raised(source, value)
        return float(value)
    return _failed(outcome, source, budget_s)


def outcome_grade(status: PoolStatus, detail: str, source: str, budget_s: float) -> Grade:
    """The grade of a request that did not return a score: the answer's fault is graded, the pool's is a no-verdict."""
    return _failed(TaskOutcome(status, detail=detail), source, budget_s)


def _failed(outcome: TaskOutcome, source: str, budget_s: float) -> Grade:
    grade = fault_grade(outcome, _causes, budget_s=budget_s, subject=source)
    assert grade is not None, "an OK outcome is the scorer's to read"
    return grade

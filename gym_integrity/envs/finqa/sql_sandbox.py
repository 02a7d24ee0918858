"""FinQA's SQL tool on a killable worker (layer 5 of the SQL sandbox): each query runs the engine in a pool worker.

Layers 1-4 (:mod:`gym_integrity.envs.finqa.sql_engine`) run in a worker of the
package's pool (:data:`SQL_SANDBOX`, a :class:`~gym_integrity.workers.Sandbox`
with handler :func:`run_query`), under a run budget 10% above the clock
(:func:`run_budget_s`) and ``RLIMIT_AS`` = :data:`SQL_MEMORY_LIMIT_MB`. The
progress handler only runs once the statement runs, and sqlite's *prepare*
phase can blow up first, as query flattening and CTE expansion copy a
subquery's or CTE's expressions into every reference. In process, under a
0.5 s clock, 11 nested CTEs (900 characters) took 13.7 s, 12 nested
subqueries (540 characters) 36 s and 4.8 GB, and four levels of 100-wide
``max(x, ..., x)`` 179 s and 16 GB before the first check; a
``conn.interrupt()`` from another thread does not stop it. The pool SIGKILLs
the worker at the budget (the step gets the same time-limit error, the spare
worker takes the next query), and an allocation past the limit fails inside
sqlite (a memory error step; the worker keeps serving). A worker process
serves query after query (the table's rows travel with each request; a
fresh database per query), so a step costs one round trip, not a spawn.

Who is at fault decides the observation (FinQA tool errors are observations;
the episode goes on): a query past its budget, past the memory limit, or
crashing its worker on every try gets an error naming what it ran into; a
pool that is overloaded or cannot run workers gets an error starting
:data:`SQL_UNAVAILABLE` that says so (not the query's fault; the env counts
these in ``finqa/sql_unavailable``).

Whose fault an outcome is comes from the workers' one rule
(:func:`~gym_integrity.workers.fault_of`); only the words are FinQA's.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from gym_integrity.envs.finqa.sql_engine import MEMORY_ERROR, SQLSandbox, timeout_message
from gym_integrity.workers import Fault, Pool, PoolConfig, Sandbox, TaskOutcome, fault_of

__all__ = [
    "PooledSQLSandbox",
    "SQL_HANDLER",
    "SQL_MEMORY_LIMIT_MB",
    "SQL_POOL_CONFIG",
    "SQL_SANDBOX",
    "SQL_UNAVAILABLE",
    "acquire_sql_pool",
    "run_budget_s",
    "run_query",
    "warm",
]

#: The handler SQL workers run (:func:`warm` once, then :func:`run_query` per query).
SQL_HANDLER = "gym_integrity.envs.finqa.sql_sandbox:run_query"
#: ``RLIMIT_AS`` of each SQL worker. A worker's address space is ~24 MB, idle and after ordinary queries
#: on every shipped table (a fresh database per query), so nearly all of it is a query's own: a sort of
#: 59,049 rows of 9 KB (in memory: ``temp_store=MEMORY``) passes it in ~0.5 s, and a prepare-phase
#: blow-up that reached 4.8-16 GB in process fails or is killed within it.
SQL_MEMORY_LIMIT_MB = 512
#: One SQL pool per process for every FinQA env (each request carries its own run budget).
SQL_POOL_CONFIG = PoolConfig(memory_limit_mb=SQL_MEMORY_LIMIT_MB)
#: The SQL tool's sandbox: the process's pool for (SQL_HANDLER, SQL_POOL_CONFIG). Its outcomes become
#: observations (:meth:`PooledSQLSandbox.outcome_text`), not grades: FinQA tool errors are steps.
SQL_SANDBOX = Sandbox(SQL_HANDLER, SQL_POOL_CONFIG)
#: How the observation starts when the SQL tool could not run a query for a reason not the query's own
#: (an overloaded pool, workers that cannot start or were killed from outside, a handler bug).
SQL_UNAVAILABLE = "Error: the SQL tool is unavailable"


def run_budget_s(timeout_s: float) -> float:
    """The worker's run budget for a query whose clock is ``timeout_s``: 10% above it.

    Above, so the in-worker clock answers an ordinary long query (no kill, no
    worker restart); close, so the kill (for what runs where the clock is not:
    the prepare phase, a sort) still ends the step within 1.2x the clock.
    """
    return 1.1 * float(timeout_s)


class _Rows(NamedTuple):
    """What :class:`SQLSandbox` reads of a table, rebuilt in the worker from plain data."""

    name: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]


def warm() -> None:
    """Run one query before the worker says ready: sqlite's first connection is never charged to a request."""
    SQLSandbox().run(_Rows("t", ("a",), (("1",),)), "SELECT a FROM t WHERE a = '1'")


def run_query(payload: tuple[float, int, int, str, tuple[str, ...], tuple[tuple[Any, ...], ...], str]) -> str:
    """Worker handler: ``(timeout_s, row_cap, max_result_chars, table name, columns, rows, query)`` -> the text."""
    timeout_s, row_cap, max_result_chars, name, columns, rows, query = payload
    try:
        # The nesting check was made by the sender, before a worker slot was used; the kill is the backstop.
        return SQLSandbox(timeout_s, row_cap, max_result_chars).run(
            _Rows(name, tuple(columns), tuple(rows)), query, nesting=False
        )
    except MemoryError:
        return MEMORY_ERROR
    except Exception as exc:  # noqa: BLE001  (an error text, never the pool's ERROR: that means the pool's own fault)
        return f"Error executing query: {type(exc).__name__}"


def acquire_sql_pool() -> Pool:
    """The SQL pool (the machine's, by default), registered as used (release it once, at the env's close)."""
    return SQL_SANDBOX.acquire()


class PooledSQLSandbox:
    """:class:`SQLSandbox`'s limits and calls, each query run on a worker of the process's SQL pool (layer 5).

    The cheap refusals (type, length, NUL, an empty table) are answered here,
    so an oversized query never reaches a pipe; the worker checks them again,
    then the shape (only there: a character loop in Python, not paid twice). Stateless and thread-safe: one
    instance may serve many envs. An env holds the pool with
    :func:`acquire_sql_pool` while it lives; a query run with no holder starts
    the pool, which then stops at interpreter exit.

    Args:
        timeout_s, row_cap, max_result_chars: As :class:`SQLSandbox`'s; the
            worker's run budget is :func:`run_budget_s` of ``timeout_s``.
    """

    def __init__(self, timeout_s: float = 1.0, row_cap: int = 50, max_result_chars: int = 8000) -> None:
        self.engine = SQLSandbox(timeout_s, row_cap, max_result_chars)

    @property
    def timeout_s(self) -> float:
        return self.engine.timeout_s

    @property
    def run_budget_s(self) -> float:
        return run_budget_s(self.engine.timeout_s)

    def run(self, table: Any, query: Any) -> str:
        """Run ``query`` against ``table`` on a worker: the result text or an ``Error: ...`` line, never a raise."""
        refusal = self.engine.refusal(table, query, shape=False)
        if refusal is not None:
            return refusal
        engine = self.engine
        payload = (
            engine.timeout_s,
            engine.row_cap,
            engine.max_result_chars,
            table.name,
            tuple(table.columns),
            tuple(table.rows),
            query,
        )
        outcome = SQL_SANDBOX.run(payload, budget_s=self.run_budget_s)
        return self.outcome_text(outcome)

    def outcome_text(self, outcome: TaskOutcome) -> str:
        """The observation of one pool outcome: the query's own failures named, the pool's as unavailable."""
        fault = fault_of(outcome)
        if fault is Fault.NONE and isinstance(outcome.value, str):
            return outcome.value
        if fault is Fault.TIMEOUT:  # the prepare phase (or a sort) ran past the budget: the worker was killed
            return timeout_message(self.engine.timeout_s)
        if fault is Fault.OUT_OF_MEMORY:
            return MEMORY_ERROR
        if fault is Fault.CRASHED:
            return (
                "Error: the query crashed the SQL engine on every try, each on a fresh process, and was "
                "stopped. Simplify it."
            )
        reason = "overloaded" if fault is Fault.OVERLOADED else "its worker processes failed"
        return (
            f"{SQL_UNAVAILABLE} right now ({reason}); this is not caused by your query. "
            "Send it again, or go on with the other tools."
        )

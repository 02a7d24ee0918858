"""Where a pool comes from: the Pool interface both kinds give, and get_pool / make_pool picking one by scope.

Example:
    >>> from gym_integrity.workers import PoolConfig, WorkerPool, get_pool
    >>> pool = get_pool("gym_integrity.workers.scripted_handlers:handle", PoolConfig(scope="process"))
    >>> isinstance(pool, WorkerPool), pool is get_pool(pool.handler, pool.config), pool.running
    (True, True, False)
"""

from __future__ import annotations

import concurrent.futures
from typing import Any, Protocol

from gym_integrity.workers._cache import ProcessCache
from gym_integrity.workers._config import PoolConfig
from gym_integrity.workers._machine_client import MachinePool, live_clients
from gym_integrity.workers._outcomes import TaskOutcome
from gym_integrity.workers._process_pool import WorkerPool, live_pools

__all__ = ["Pool", "get_pool", "machine_stats", "make_pool"]


class Pool(Protocol):
    """What envs and services use of a pool: a :class:`WorkerPool` (scope ``"process"``) or a
    :class:`MachinePool` client (scope ``"machine"``)."""

    handler: str
    config: PoolConfig

    def acquire(self) -> Pool: ...
    def release(self) -> None: ...
    def start(self) -> None: ...
    def close(self) -> None: ...
    @property
    def running(self) -> bool: ...
    def submit(self, payload: Any, *, run_timeout_s: float | None = None) -> concurrent.futures.Future: ...
    def run(self, payload: Any, *, run_timeout_s: float | None = None) -> TaskOutcome: ...
    def stats(self, fresh: bool = True) -> dict[str, float]: ...
    def worker_pids(self) -> list[int]: ...
    def busy_worker_pids(self) -> list[int]: ...
    def wait_ready(self, timeout: float = ...) -> bool: ...


_POOLS: ProcessCache[tuple[str, PoolConfig, str], Pool] = ProcessCache("worker pools")


def make_pool(handler: str, config: PoolConfig | None = None) -> Pool:
    """A new, unshared pool for ``(handler, config)`` in the config's scope (not started).

    ``"machine"``: a client of the machine's pool server for that handler and
    config; ``"process"``: a
    :class:`WorkerPool` of this process's own.
    """
    config = config or PoolConfig()
    if config.resolved_scope == "machine":
        return MachinePool(handler, config)
    return WorkerPool(handler, config)


def get_pool(handler: str, config: PoolConfig | None = None) -> Pool:
    """The process's pool for ``(handler, config)`` (created on first use, not started), in the config's scope.

    By default (scope ``"machine"``) this is the process's one client of the
    machine's pool: every process of the user that asks for the same handler
    and config reaches the same workers. Scope ``"process"`` gives a
    :class:`WorkerPool` of this process's own.
    """
    config = config or PoolConfig()
    key = (handler, config, config.resolved_scope)
    return _POOLS.get_or_create(key, lambda: make_pool(handler, config))


def machine_stats() -> list[dict[str, Any]]:
    """One entry per pool this process uses, shared (:func:`get_pool`) or its own (a service's), one per
    (handler, config, scope): its ``handler``, ``scope`` and ``stats`` (flat ``pool/...`` floats).

    A machine pool's are its server's counters, every client process's requests summed, fetched now when it is
    running. They are an operator's figures (``GET /stats`` of ``gym-integrity serve``, logs), never one env's
    or session's metrics.
    """
    chosen: dict[tuple[str, PoolConfig, str], Pool] = {}
    for pool in [*_POOLS.values(), *live_clients(), *live_pools()]:
        key = (pool.handler, pool.config, "machine" if isinstance(pool, MachinePool) else "process")
        if key not in chosen or (pool.running and not chosen[key].running):
            chosen[key] = pool  # of two clients of one server, a running one can ask it
    # A pool not started yet has nothing to ask its server (and asking would start one).
    return [
        {"handler": handler, "scope": scope, "stats": pool.stats(fresh=pool.running)}
        for (handler, _config, scope), pool in chosen.items()
    ]

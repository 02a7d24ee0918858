"""The worker pool's former import path, kept for callers not yet moved: all of it is :mod:`gym_integrity.workers`'s."""

from gym_integrity.workers import (POOL_SCOPES, WORKER_START_ALLOWANCE_S, Pool, PoolConfig, PoolStatus,
                                   TaskOutcome, WorkerPool, check_handler, check_pool_settings, get_pool, make_pool,
                                   pool_scope, shutdown_all)

__all__ = ["POOL_SCOPES", "WORKER_START_ALLOWANCE_S", "Pool", "PoolConfig", "PoolStatus", "TaskOutcome", "WorkerPool",
           "check_handler", "check_pool_settings", "get_pool", "make_pool", "pool_scope", "shutdown_all"]

"""What a pool is set up with: PoolConfig, its scope, and the checks every config that carries a pool's settings runs.

Example:
    >>> PoolConfig(run_timeout_s=0)
    Traceback (most recent call last):
    ...
    ValueError: PoolConfig.run_timeout_s must be a number (seconds) > 0, got 0.0
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from gym_integrity.checks import check_choice, check_int, check_number, check_str, config_from

__all__ = [
    "POOL_SCOPES",
    "SCOPE_ENV",
    "PoolConfig",
    "WORKER_START_ALLOWANCE_S",
    "check_handler",
    "check_pool_settings",
    "pool_scope",
]

#: What a step may wait, on a quiet machine, for a killed worker's successor to start (interpreter and
#: handler imports): envs add it to a worker's run budget when they declare ``grading_time_bound_s``.
WORKER_START_ALLOWANCE_S = 3.0


@dataclass(frozen=True)
class PoolConfig:
    """Settings of one pool (one pool per distinct handler and config).

    Attributes:
        num_workers: Requests run at once. ``None``: ``max(1, min(2, os.cpu_count()))``.
        spare_workers: Idle processes kept started so a killed worker is replaced at once.
        run_timeout_s: A request's budget, counted from the moment a worker starts it (queue time excluded).
        queue_timeout_s: How long a request may wait for a free worker beyond the run budgets
            of the requests queued or running ahead of it (divided among the workers); past
            it the request is ``OVERLOADED``. The budgets ahead are allowed for, so a burst of
            answers that each run to their budget (the policy's own doing) delays the others
            but never turns them into no-verdicts; a pool whose workers stop serving does.
        max_in_flight: Requests queued or running; one more is ``OVERLOADED`` at once.
        max_retries: Re-runs on another worker after the worker died under the request.
        memory_limit_mb: ``RLIMIT_AS`` of each worker, or ``None`` for none.
        scope: Where the pool lives (:func:`get_pool`): ``"machine"``, one pool per machine shared by every
            process of the user (:mod:`gym_integrity.workers` (the machine pool)), or ``"process"``, a pool of
            this process's own. ``None``: ``$GYM_INTEGRITY_POOL_SCOPE`` if set, else ``"machine"``.
    """

    num_workers: int | None = None
    spare_workers: int = 1
    run_timeout_s: float = 5.0
    queue_timeout_s: float = 30.0
    max_in_flight: int = 256
    max_retries: int = 1
    memory_limit_mb: int | None = 4096
    scope: str | None = None

    def __post_init__(self) -> None:
        check_pool_settings("PoolConfig", self)

    @classmethod
    def from_value(cls, value: PoolConfig | dict[str, Any] | None) -> PoolConfig:
        """A config from a PoolConfig, a dict of its fields (unknown keys: ``TypeError``) or None (defaults)."""
        return config_from(cls, value)

    @property
    def workers(self) -> int:
        return self.num_workers if self.num_workers is not None else max(1, min(2, os.cpu_count() or 1))

    @property
    def resolved_scope(self) -> str:
        """``scope``, or the environment's choice when it is None (see :func:`pool_scope`)."""
        return pool_scope(self.scope)


#: Where a pool lives: one per machine (a server every process of the user shares) or one per process.
POOL_SCOPES = ("machine", "process")
#: The environment variable that picks the scope of pools whose config leaves it None.
SCOPE_ENV = "GYM_INTEGRITY_POOL_SCOPE"


def pool_scope(scope: str | None = None) -> str:
    """``scope`` if given, else ``$GYM_INTEGRITY_POOL_SCOPE`` (checked like a config field), else ``"machine"``."""
    if scope is not None:
        return check_choice("PoolConfig.scope", scope, POOL_SCOPES)
    value = os.environ.get(SCOPE_ENV, "").strip()
    return check_choice(SCOPE_ENV, value, POOL_SCOPES) if value else "machine"


def check_pool_settings(
    owner: str, config: Any, *, run_timeout_field: str = "run_timeout_s", min_memory_mb: int = 64
) -> None:
    """PoolConfig's checks, run on ``config``'s fields of the same names and named ``owner.field``.

    Shared with configs that carry a pool's settings (VerifierConfig, whose run
    budget is ``deadline_s`` and whose math workers need more memory), so the
    two cannot drift apart.
    """
    check_int(f"{owner}.num_workers", config.num_workers, low=1, optional=True)
    check_int(f"{owner}.spare_workers", config.spare_workers, low=0)
    check_number(
        f"{owner}.{run_timeout_field}", getattr(config, run_timeout_field), low=0, low_open=True, unit="seconds"
    )
    check_number(f"{owner}.queue_timeout_s", config.queue_timeout_s, low=0, low_open=True, unit="seconds")
    check_int(f"{owner}.max_in_flight", config.max_in_flight, low=1)
    check_int(f"{owner}.max_retries", config.max_retries, low=0)
    check_int(f"{owner}.memory_limit_mb", config.memory_limit_mb, low=min_memory_mb, optional=True)
    if getattr(config, "scope", None) is not None:
        check_choice(f"{owner}.scope", config.scope, POOL_SCOPES)


def check_handler(name: str, handler: Any) -> str:
    """``handler`` if it is a str ``"module:function"`` (else TypeError / ValueError naming ``name``)."""
    check_str(name, handler, what="a str 'module:function'")
    if handler.count(":") != 1 or not all(handler.split(":")):
        raise ValueError(f"{name} must look like 'package.module:function', got {handler!r}")
    return handler

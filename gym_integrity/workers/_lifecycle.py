"""One lifecycle for everything the package shares in a process: users counted, and one fork and exit registry.

**Fork.** A child made by ``os.fork`` (multiprocessing's ``fork`` start
method, which gymnasium's ``AsyncVectorEnv`` uses on Linux) inherits memory
but not threads: a pool's dispatcher, a connection's reader, a lock another
thread held at the fork are dead or shared with the parent there. Each module
that holds such state registers a reset with :func:`after_fork_in_child`; they
run in the child in the order they were registered (caches are emptied first,
then the live pools, machine-pool clients and services an env took before the
fork are reset, so they start afresh on first use).

**Exit.** :func:`at_exit` hooks run at interpreter exit in the reverse order of
registration (users of pools before the pools), as ``atexit`` runs its own.

One ``os.register_at_fork`` and one ``atexit.register`` for the whole package,
so the order is stated here rather than left to import order across files.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Callable
from typing import Any

__all__ = ["RefCounted", "after_fork_in_child", "at_exit"]

_FORK_HOOKS: list[Callable[[], None]] = []
_EXIT_HOOKS: list[Callable[[], None]] = []


def after_fork_in_child(hook: Callable[[], None]) -> Callable[[], None]:
    """Run ``hook()`` in every child this process forks from now on (after the hooks registered before it)."""
    _FORK_HOOKS.append(hook)
    return hook


def at_exit(hook: Callable[[], None]) -> Callable[[], None]:
    """Run ``hook()`` at interpreter exit (before the hooks registered before it)."""
    _EXIT_HOOKS.append(hook)
    return hook


def _run_fork_hooks() -> None:
    for hook in list(_FORK_HOOKS):
        hook()


def _run_exit_hooks() -> None:
    for hook in reversed(list(_EXIT_HOOKS)):
        try:
            hook()
        except Exception:  # noqa: BLE001  (one failing shutdown must not skip the others)
            pass


atexit.register(_run_exit_hooks)
if hasattr(os, "register_at_fork"):  # absent on Windows, which cannot fork
    os.register_at_fork(after_in_child=_run_fork_hooks)


class RefCounted:
    """``acquire``/``release`` by reference count, for a pool with ``start()`` and ``close()``.

    Subclasses set ``_lock`` (a lock) and ``_refs`` (0) in their ``__init__``.
    """

    _lock: Any
    _refs: int

    def start(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def acquire(self) -> Any:
        """Register a user and make sure the pool is running (or, for a machine pool, connecting)."""
        with self._lock:
            self._refs += 1
        self.start()
        return self

    def release(self) -> None:
        """Drop a user; the last one out stops this process's pool or connection (a later request restarts it)."""
        with self._lock:
            self._refs = max(0, self._refs - 1)
            last = self._refs == 0
        if last:
            self.close()

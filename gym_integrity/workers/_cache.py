"""ProcessCache: the one per-process cache of the package (thread-safe, keyed, optionally bounded, empty after fork).

Every object the envs of one process share (worker pools, verifier services,
judge clients, loaded data sets, reasoning-gym generators, parsed prompts)
lives in a :class:`ProcessCache`, so all of them follow one rule.

**The fork policy: a forked child starts with every cache empty.** A child made
by ``os.fork`` (multiprocessing's ``fork`` start method, which gymnasium's
``AsyncVectorEnv`` uses on Linux) inherits memory but not threads: a pool's
dispatcher thread, a judge client's sockets and request threads, a lock
another thread held at the fork are all dead or shared with the parent there.
Rather than sort values into "safe to keep" and "must rebuild", the child
rebuilds everything on first use, exactly as a ``spawn`` or ``forkserver``
child (the default on macOS, and on Linux from Python 3.14) already must. The
cost is one reload per child process of data the parent had loaded. Every
cache also gets new locks in the child, since a lock held at the fork would
stay held forever. Objects already handed out (an env's pool made before the
fork) are the owning module's business: the in-process pool resets its live
pools in the child (every reset goes through :mod:`~gym_integrity.workers._lifecycle`).

Example:
    >>> cache = ProcessCache("example", max_items=2)
    >>> cache.get_or_create("a", lambda: [1])
    [1]
    >>> cache.get_or_create("a", lambda: [2])  # built once per key
    [1]
    >>> _ = cache.get_or_create("b", list), cache.get_or_create("c", list)
    >>> "a" in cache, len(cache)  # bounded: the least recently used went first
    (False, 2)
"""

from __future__ import annotations

import collections
import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from gym_integrity.workers._lifecycle import after_fork_in_child

__all__ = ["ProcessCache"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_MISSING = object()


class ProcessCache(Generic[K, V]):
    """Values shared by everything in one process, keyed, built once per key.

    Args:
        name: What it holds, for ``repr`` (operators debugging a process).
        max_items: Keep at most this many, dropping the least recently used;
            ``None`` keeps all (caches keyed by configuration stay small).

    Thread-safe. :meth:`get_or_create` runs the factory outside the cache's
    lock, at most once per key at a time (concurrent callers of the same key
    wait for the first; different keys build in parallel); a factory that
    raises stores nothing. Emptied in a forked child (see the module docstring).
    """

    def __init__(self, name: str, *, max_items: int | None = None) -> None:
        if max_items is not None and (not isinstance(max_items, int) or isinstance(max_items, bool) or max_items < 1):
            raise ValueError(f"ProcessCache.max_items must be an int >= 1 or None, got {max_items!r}")
        self.name = name
        self._max_items = max_items
        self._items: collections.OrderedDict[K, V] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._building: dict[K, threading.Lock] = {}
        _CACHES.add(self)

    # ------------------------------------------------------------------ reading

    def get(self, key: K, default: V | None = None) -> V | None:
        """The value of ``key``, or ``default``."""
        with self._lock:
            value = self._items.get(key, _MISSING)
            if value is _MISSING:
                return default
            if self._max_items is not None:
                self._items.move_to_end(key)
            return value  # type: ignore[return-value]  # not the sentinel: a stored value

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._items

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def values(self) -> list[V]:
        """A snapshot of the values (oldest first)."""
        with self._lock:
            return list(self._items.values())

    def items(self) -> list[tuple[K, V]]:
        """A snapshot of the entries (oldest first)."""
        with self._lock:
            return list(self._items.items())

    # ------------------------------------------------------------------ writing

    def get_or_create(self, key: K, factory: Callable[[], V]) -> V:
        """The value of ``key``, built by ``factory()`` if absent."""
        value = self.get(key, _MISSING)  # type: ignore[arg-type]  # the sentinel as the default
        if value is not _MISSING:
            return value  # type: ignore[return-value]  # not the sentinel: a stored value
        with self._lock:
            building = self._building.setdefault(key, threading.Lock())
        with building:
            value = self.get(key, _MISSING)
            if value is not _MISSING:  # another thread built it while we waited
                return value  # type: ignore[return-value]  # not the sentinel: a stored value
            try:
                value = factory()
                self.setdefault(key, value)
            finally:
                with self._lock:
                    if self._building.get(key) is building:
                        del self._building[key]
        return value

    def setdefault(self, key: K, value: V) -> V:
        """Store ``value`` unless ``key`` already has one; return the stored value (the first one wins)."""
        with self._lock:
            existing = self._items.get(key, _MISSING)
            if existing is not _MISSING:
                return existing  # type: ignore[return-value]  # not the sentinel: a stored value
            self._items[key] = value
            if self._max_items is not None:
                while len(self._items) > self._max_items:
                    self._items.popitem(last=False)
            return value

    def resize(self, max_items: int | None) -> None:
        """Change the bound (math_worker learns it from each request), dropping the oldest if over it."""
        with self._lock:
            self._max_items = max_items
            if max_items is not None:
                while len(self._items) > max_items:
                    self._items.popitem(last=False)

    def pop(self, key: K, default: V | None = None) -> V | None:
        """Remove ``key`` and return its value, or ``default``."""
        with self._lock:
            return self._items.pop(key, default)

    def clear(self) -> None:
        """Forget every value (tests and benchmarks measure cold loads with it)."""
        with self._lock:
            self._items.clear()

    def __repr__(self) -> str:
        bound = "" if self._max_items is None else f"/{self._max_items}"
        return f"ProcessCache({self.name!r}, {len(self)}{bound} items)"

    def _after_fork_in_child(self) -> None:
        # No other thread exists in the child: no lock is needed, and none may be trusted.
        self._lock = threading.Lock()
        self._building = {}
        self._items = collections.OrderedDict()


_CACHES: weakref.WeakSet[ProcessCache] = weakref.WeakSet()


@after_fork_in_child
def _empty_all_in_child() -> None:
    for cache in list(_CACHES):
        cache._after_fork_in_child()

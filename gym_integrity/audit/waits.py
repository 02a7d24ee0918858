"""Time a thread spent waiting for a CPU: what the audit's time bounds leave out, so that a loaded machine does not
fail an env for other processes' work.

A call's wall time is the env's work, its sleeps and waits (on a lock, a
pipe, a worker process) and the time its thread was ready to run while other
processes held every CPU. Only the last is the machine's load. Linux counts it
per thread (``/proc/<pid>/task/<tid>/schedstat``: time on a CPU, time runnable
and waiting for one, timeslices); the bounds compare a call's wall time minus
that wait. A reset that computes for 12 s still takes 12 s; one that sleeps,
or waits for a subprocess (whose own wait is not its thread's), is counted in
full. The allowance is bounded: however loaded the machine, a call past
``LOAD_STRETCH`` times its bound on the wall clock is slow, so load (other
processes', or busy processes an env starts beside its own computing thread)
stretches a bound threefold at most. Where the counter is missing (not Linux,
or a kernel without schedstats) the wait reads 0 and the bounds are wall time,
as before.

>>> waited = thread_wait_s()
>>> waited is None or waited >= 0.0
True
"""

from __future__ import annotations

import os
import threading

__all__ = ["LOAD_STRETCH", "allowance", "process_waits", "thread_wait_s", "waited_since"]

#: The most a bound stretches for time spent waiting for a CPU: a call past this many times its bound is slow.
LOAD_STRETCH = 3.0


def allowance(waited: float, bound: float) -> float:
    """The seconds a call past ``bound`` may add for having ``waited`` for a CPU: the wait, up to the stretch.

    >>> allowance(4.0, 10.0), allowance(25.0, 10.0), allowance(-1.0, 10.0)
    (4.0, 20.0, 0.0)
    """
    return min(max(waited, 0.0), (LOAD_STRETCH - 1.0) * bound)


def _read_wait(path: str) -> float | None:
    try:
        with open(path, encoding="ascii") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def thread_wait_s(native_id: int | None = None) -> float | None:
    """Seconds a thread of this process (the calling one by default) has spent runnable but waiting for a CPU;
    None where the kernel does not say."""
    if native_id is None or native_id == threading.get_native_id():
        return _read_wait("/proc/thread-self/schedstat")
    return _read_wait(f"/proc/self/task/{native_id}/schedstat")


def process_waits(pid: int) -> dict[int, float]:
    """Each thread's wait for a CPU so far (seconds, by thread id) of process ``pid``; empty where unknown."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return {}
    out = {}
    for tid in tids:
        wait = _read_wait(f"/proc/{pid}/task/{tid}/schedstat")
        if wait is not None and tid.isdigit():
            out[int(tid)] = wait
    return out


def waited_since(before: dict[int, float], now: dict[int, float]) -> float:
    """The longest any one thread waited for a CPU between two :func:`process_waits` readings (a thread that
    started in between: all of its wait). The longest, not the sum: the threads wait side by side.

    >>> waited_since({1: 2.0, 2: 0.5}, {1: 2.5, 2: 3.5, 3: 1.0})
    3.0
    """
    return max((wait - before.get(tid, 0.0) for tid, wait in now.items()), default=0.0)

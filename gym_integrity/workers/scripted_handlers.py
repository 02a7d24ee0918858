"""Scripted worker-pool handlers: each request names what the worker does (echo, sleep, crash, allocate, raise, a big reply on cue); the tests and benchmarks of the pools use them.

The payload is ``(action, argument)``; the pool's workers run :func:`handle`.
Crashes can be made to happen on a given worker only, to tell a crash that
follows the input from one that follows the process (``crash_once``).
"""

from __future__ import annotations

import os
import time
from typing import Any

__all__ = ["handle", "warm"]

WARMED = False


def warm() -> None:
    """Called once per worker before it says ready: proves the pool calls it.

    ``GYM_INTEGRITY_TEST_WARM_S`` (inherited from the parent at spawn) makes it
    take that long: a worker whose successor is slow to start.
    """
    global WARMED
    time.sleep(float(os.environ.get("GYM_INTEGRITY_TEST_WARM_S", "0")))
    WARMED = True


def handle(payload: tuple[str, Any]) -> Any:
    action, argument = payload
    if action == "echo":
        return argument
    if action == "warmed":
        return WARMED
    if action == "pid":
        return os.getpid()
    if action == "sleep":
        time.sleep(float(argument))
        return argument
    if action == "started_at":  # sleep ``argument`` s; return when it began (CLOCK_MONOTONIC is machine-wide)
        started = time.monotonic()
        time.sleep(float(argument))
        return started
    if action == "abort":
        os.abort()
    if action == "exit":
        os._exit(int(argument))
    if action == "crash_once":
        # Abort only if the marker file does not exist yet, and create it: the
        # first worker to run this crashes, any later one answers.
        try:
            fd = os.open(str(argument), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return "survived"
        os.close(fd)
        os.abort()
    if action == "bytes_when":  # a reply of ``size`` bytes, sent once the file ``path`` exists
        path, size = argument
        while not os.path.exists(path):
            time.sleep(0.01)
        return b"x" * int(size)
    if action == "allocate_mb":
        block = bytearray(int(argument) << 20)
        return len(block)
    if action == "raise":
        raise ValueError(str(argument))
    raise ValueError(f"unknown action {action!r}")

"""Test helper: run a function in a forked child and get back what it returned (the fork tests of the caches and pools)."""

from __future__ import annotations

import os
import pickle
import select
import signal

import pytest


def in_child(work) -> object:
    """Run ``work()`` in a forked child and return what it returned (or the exception's repr)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            try:
                out = work()
            except BaseException as exc:  # noqa: BLE001 - reported to the parent
                out = repr(exc)
            os.write(write_end, pickle.dumps(out))
        finally:
            os._exit(0)
    os.close(write_end)
    ready, _, _ = select.select([read_end], [], [], 20)
    if not ready:  # a child stuck on a lock inherited from the fork: do not leave it behind
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(read_end)
        pytest.fail("the forked child hung")
    with os.fdopen(read_end, "rb") as handle:
        data = handle.read()
    os.waitpid(pid, 0)
    return pickle.loads(data)

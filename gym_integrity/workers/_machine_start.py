"""Reaching a machine pool's server from a client: dial it, or start it detached under the spawn lock and dial.

The client's side of the machine pool's lifetime rule (the package docstring,
:mod:`gym_integrity.workers`): the first client to find no server takes an
``flock`` on ``<name>.lock``, dials once more, then spawns the server and
dials until it answers, all within :data:`SPAWN_TIMEOUT_S`.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable

from gym_integrity.workers._config import PoolConfig
from gym_integrity.workers._machine_link import (
    Link,
    _Unreachable,
    dial_server,
    exit_code,
    reap_spawned,
    spawn_detached,
    spawned,
)
from gym_integrity.workers._machine_paths import (
    DIR_ENV,
    EXIT_LOCK_HELD,
    HANDSHAKE_TIMEOUT_S,
    LOG_ENV,
    auth_key,
    config_fields,
    flock,
    pool_dir,
    server_name,
    unlock,
)
from gym_integrity.workers._wire import PACKAGE_ROOT, stubbed_main_code

__all__ = ["SPAWN_TIMEOUT_S", "open_link", "spawn_server"]

SPAWN_TIMEOUT_S = 30.0  # a client waits this long for a server to start (lock, spawn, answer)
_MAX_SOCKET_PATH = 107  # sun_path holds 108 bytes with the NUL


def open_link(handler: str, config: PoolConfig, on_spawn: Callable[[], None]) -> Link:
    """Connect to the server of (``handler``, ``config``), or start it under the spawn lock and connect (bounded by
    SPAWN_TIMEOUT_S). ``on_spawn()`` runs once a server has been spawned, whether or not it then answers."""
    directory = pool_dir()
    key = auth_key(directory)
    name = server_name(handler, config)
    path = os.path.join(directory, name + ".sock")
    if len(os.fsencode(path)) > _MAX_SOCKET_PATH:
        raise OSError(
            f"the machine grading pool's socket path {path} is longer than a Unix socket allows "
            f"({_MAX_SOCKET_PATH} bytes): set {DIR_ENV} to a shorter directory"
        )
    deadline = time.monotonic() + SPAWN_TIMEOUT_S

    def dial() -> Link:
        return dial_server(path, key, timeout=max(0.5, min(HANDSHAKE_TIMEOUT_S, deadline - time.monotonic())))

    try:
        return dial()
    except _Unreachable:
        pass
    lock = flock(os.path.join(directory, name + ".lock"), deadline)
    if lock is None:
        raise TimeoutError(f"another process held the pool's start lock for {SPAWN_TIMEOUT_S:g} s")
    try:
        try:
            return dial()
        except _Unreachable:
            pass
        reap_spawned()
        pid = spawn_server(handler, config, directory, name)
        on_spawn()
        while True:
            try:
                return dial()
            except _Unreachable:
                pass
            code = exit_code(pid)
            if code is not None:
                why = (
                    ": another server of this pool holds its lock and does not answer" if code == EXIT_LOCK_HELD else ""
                )
                raise OSError(f"its server exited while starting (exit status {code}{why})")
            if time.monotonic() >= deadline:
                raise TimeoutError(f"its server did not answer within {SPAWN_TIMEOUT_S:g} s of its start")
            time.sleep(0.02)
    finally:
        unlock(lock)


def spawn_server(handler: str, config: PoolConfig, directory: str, name: str) -> int:
    """Start the server detached: its own session, no stdio, ``gym_integrity``'s package files stubbed
    (it imports neither gymnasium nor numpy, as a worker does not). Returns its pid."""
    spec = json.dumps({"handler": handler, "config": config_fields(config), "directory": directory, "name": name})
    code = stubbed_main_code(
        "gym_integrity.workers._machine_server", "main", spec, "gym_integrity.workers._machine_server"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
    pid = spawn_detached([sys.executable, "-c", code], env, os.environ.get(LOG_ENV, "").strip() or os.devnull)
    spawned.append(pid)
    return pid

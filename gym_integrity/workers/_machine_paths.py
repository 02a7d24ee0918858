"""The machine pool's shared ground: its directory, key file, socket names, locks, and the rules both ends agree on.

The server listens on a Unix socket in a per-user directory of mode 0700
(:func:`pool_dir`); a connection must pass ``multiprocessing.connection``'s
challenge with the key of a 0600 file in that directory (:func:`auth_key`);
the socket's name (:func:`server_name`) is a hash of what decides how a
request is graded, so another venv or checkout gets a server of its own.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
import os
import secrets
import stat
import sys
import time
from typing import Any

from gym_integrity.workers._config import SCOPE_ENV, PoolConfig
from gym_integrity.workers._lifecycle import after_fork_in_child
from gym_integrity.workers._wire import PACKAGE_ROOT

__all__ = [
    "DIR_ENV",
    "EXIT_LOCK_HELD",
    "GRACE_ENV",
    "HANDSHAKE_TIMEOUT_S",
    "LOG_ENV",
    "PROTOCOL",
    "auth_key",
    "check_private_dir",
    "config_fields",
    "flock",
    "grace_s",
    "pool_dir",
    "server_name",
    "unlock",
]

DIR_ENV = "GYM_INTEGRITY_POOL_DIR"  # the per-user directory, if not the default
GRACE_ENV = "GYM_INTEGRITY_POOL_GRACE_S"  # how long a server with no client waits before it exits
LOG_ENV = "GYM_INTEGRITY_POOL_LOG"  # a file for the servers' stderr (an operator's debugging); default: none
PROTOCOL = 1  # part of the socket's name: a client never meets a server that speaks another protocol
HANDSHAKE_TIMEOUT_S = 10.0  # a connection not through the key challenge by then is dropped
EXIT_LOCK_HELD = 3  # a server's exit status when another live server of its pool holds the alive lock
_DEFAULT_GRACE_S = 2.0
_KEY_BYTES = 32


def _refuse(path: str, why: str) -> PermissionError:
    return PermissionError(
        f"the machine grading pool's directory {path} {why}: refusing it (set {DIR_ENV} to a "
        f"private directory, or {SCOPE_ENV}=process for a pool per process)"
    )


def check_private_dir(path: str) -> None:
    """Raise ``PermissionError`` unless ``path`` is a real directory of this user that only this user may enter."""
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise _refuse(path, "is not a directory (a symlink or a file)")
    if info.st_uid != os.getuid():
        raise _refuse(path, f"belongs to uid {info.st_uid}, not to this user (uid {os.getuid()})")
    if info.st_mode & 0o077:
        raise _refuse(
            path,
            f"has mode {stat.S_IMODE(info.st_mode):04o}, which lets group or others in "
            f"(it must be 0700: chmod 700 {path})",
        )


def pool_dir() -> str:
    """The per-user directory of the machine's pool servers, made (mode 0700) if missing, and checked.

    ``$GYM_INTEGRITY_POOL_DIR`` if set; else ``$XDG_RUNTIME_DIR/gym-integrity``
    if that variable names a writable directory; else ``/tmp/gym-integrity-<uid>``.
    """
    path = os.environ.get(DIR_ENV, "").strip()
    if not path:
        runtime = os.environ.get("XDG_RUNTIME_DIR", "").strip()
        if runtime and os.path.isdir(runtime) and os.access(runtime, os.W_OK | os.X_OK):
            path = os.path.join(runtime, "gym-integrity")
        else:
            path = f"/tmp/gym-integrity-{os.getuid()}"
    path = os.path.abspath(path)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except FileNotFoundError:
        raise _refuse(path, "cannot be made: its parent directory does not exist") from None
    check_private_dir(path)
    return path


def auth_key(directory: str) -> bytes:
    """The connection key of ``directory``'s servers: its ``authkey`` file (0600, this user's), made once."""
    path = os.path.join(directory, "authkey")
    for _ in range(3):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            _create_key(path)
            continue
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
                raise PermissionError(
                    f"the machine grading pool's key file {path} is not a file of this user's "
                    f"with mode 0600 (mode {stat.S_IMODE(info.st_mode):04o}, uid {info.st_uid}): "
                    "refusing it; remove it and a new one is made"
                )
            key = os.read(fd, _KEY_BYTES + 1)
        finally:
            os.close(fd)
        if len(key) != _KEY_BYTES:
            raise PermissionError(
                f"the machine grading pool's key file {path} does not hold a {_KEY_BYTES}-byte "
                "key: remove it and a new one is made"
            )
        return key
    raise PermissionError(f"the machine grading pool's key file {path} could not be made")


def _create_key(path: str) -> None:
    """Write a new key beside ``path`` and link it into place: a reader never sees a half-written key."""
    staging = f"{path}.{os.getpid()}.{secrets.token_hex(4)}"
    fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, secrets.token_bytes(_KEY_BYTES))
    finally:
        os.close(fd)
    try:
        os.link(staging, path)
    except FileExistsError:
        pass  # another process made it first: its key is the key
    finally:
        os.unlink(staging)


def server_name(handler: str, config: PoolConfig) -> str:
    """The file name stem of the server for ``(handler, config)``: a hash of what decides how it grades."""
    identity = {
        "protocol": PROTOCOL,
        "python": os.path.realpath(sys.executable),
        "prefix": sys.prefix,
        "package": PACKAGE_ROOT,
        "pythonpath": os.environ.get("PYTHONPATH", ""),
        "handler": handler,
        "config": config_fields(config),
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:24]


def config_fields(config: PoolConfig) -> dict[str, Any]:
    return {f.name: getattr(config, f.name) for f in dataclasses.fields(config) if f.name != "scope"}


def grace_s() -> float:
    try:
        return max(0.0, float(os.environ.get(GRACE_ENV, _DEFAULT_GRACE_S)))
    except ValueError:
        return _DEFAULT_GRACE_S


_held_lock_fds: set[int] = set()  # flocks this process holds: a forked child must not keep them


def flock(path: str, deadline: float) -> int | None:
    """An fd holding an exclusive ``flock`` on ``path`` (made 0600 if missing), or None at ``deadline``."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    _held_lock_fds.add(fd)  # before the lock is taken: a child forked at any moment closes its copy
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                _held_lock_fds.discard(fd)
                os.close(fd)
                return None
            time.sleep(0.02)


def unlock(fd: int) -> None:
    # LOCK_UN first: a flock belongs to the open file, which a child forked while it was held shares; closing
    # only this fd would leave the lock held until that child closes its copy too.
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        _held_lock_fds.discard(fd)
        os.close(fd)


@after_fork_in_child
def _close_inherited_locks() -> None:
    """In a forked child: close its copies of the parent's lock fds (the parent's flock stays held by its own)."""
    for fd in list(_held_lock_fds):
        _held_lock_fds.discard(fd)
        try:
            os.close(fd)
        except OSError:
            pass

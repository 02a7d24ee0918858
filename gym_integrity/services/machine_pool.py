"""The machine's grading pool: one WorkerPool per (handler, config) per machine and user, served over a private Unix socket.

(About 1,000 lines, far above the ~400 aimed for (some 780 of code):
the module holds both ends of one socket protocol, the server and its client,
and the directory, key, lock and spawn rules both ends must agree on. Split,
a change to a message or to the access rules would span files that can drift
apart, which is why pool.py keeps its worker and dispatcher together too.)

Every process that grades (the sub-processes of an async vector env, several
trainer processes, a threaded vector env) reaches the same workers: a pool
*server* process hosts one :class:`~gym_integrity.services.pool.WorkerPool`
for one handler and :class:`~gym_integrity.services.pool.PoolConfig`, with the
pool's own kill, budget, queue and fault rules unchanged, and
:class:`MachinePool`, the client, gives envs and services the interface of a
``WorkerPool`` (``acquire``/``release``/``start``/``close``/``running``/
``submit``/``run``/``stats``/``worker_pids``/``busy_worker_pids``/``wait_ready``).

* **Channel and access.** The server listens on a Unix socket in a per-user
  directory of mode 0700 (:func:`pool_dir`: ``$GYM_INTEGRITY_POOL_DIR``, else
  ``$XDG_RUNTIME_DIR/gym-integrity/``, else ``/tmp/gym-integrity-<uid>/``); a
  directory that is not the user's own, or that group or others may enter, is
  refused with the reason. A connection must also pass
  ``multiprocessing.connection``'s challenge with the key of a 0600 file in
  that directory (made once, ``secrets.token_bytes``). The socket's name is a
  hash of the handler, the config's fields, the interpreter, its prefix (the
  venv), ``PYTHONPATH`` and the package's location: another venv or checkout
  gets a server of its own, so a request is always graded by the code of the
  process that sent it.
* **Plain data only.** Messages go with ``send_bytes``/``recv_bytes`` and are
  read with the pool's plain-data unpickler on both sides, so neither end ever
  looks up a class. A request's payload is pickled by the client and passed to
  a worker as it is: the server never unpickles it (the worker does, as with
  an in-process pool).
* **Lifetime.** The first client starts the server: it takes an ``flock`` on
  ``<name>.lock``, tries once more, then spawns the server detached (its own
  session, no stdio) and waits for it (``_SPAWN_TIMEOUT_S`` at most). The
  server holds ``<name>.alive`` locked while it lives, so a socket file left
  by a dead server is told from a live one. It counts connected clients (a
  process holds one connection per pool while it uses it: from ``start`` or
  the first request to the last ``release`` or ``close``); at zero it waits
  ``$GYM_INTEGRITY_POOL_GRACE_S`` (2 s) and exits if nobody came back,
  killing its workers. A crash of every client closes their sockets, so the
  same rule stops it. It also exits when its socket file is removed or replaced.
* **Failures are no-verdicts, never hangs.** If the connection breaks (the
  server died or was killed), every request in flight on it ends
  ``INFRA_ERROR`` ("the machine grading pool died"), and the next request
  reconnects, which starts a new server. A server that cannot be reached or
  started within its bound gives ``INFRA_ERROR`` too, naming why. The server
  tells every client it is alive every few seconds; a client with requests in
  flight that hears nothing for ``_SILENCE_S`` drops the connection (a wedged
  or stopped server: ``INFRA_ERROR``), and the server rebuilds its pool when a
  request passes its worst honest wait, as ``WorkerPool.run`` does.
* **Fork-safe.** A forked child drops its copy of the parent's connection (the
  parent's stays up) and connects on first use.

:func:`gym_integrity.services.pool.get_pool` returns a :class:`MachinePool` by
default (``PoolConfig.scope``, ``$GYM_INTEGRITY_POOL_SCOPE``).
"""

from __future__ import annotations

import atexit
import collections
import concurrent.futures
import dataclasses
import errno
import fcntl
import hashlib
import itertools
import json
import os
import pickle
import secrets
import select
import signal
import socket
import stat
import sys
import threading
import time
import weakref
from multiprocessing.connection import AuthenticationError, Connection, answer_challenge, deliver_challenge
from typing import Any

from gym_integrity.checks import check_number
from gym_integrity.services.pool import (SCOPE_ENV, PoolConfig, PoolStatus, TaskOutcome, WorkerPool, _plain_loads,
                                         _Users, check_handler, stubbed_main_code)

__all__ = ["DIR_ENV", "GRACE_ENV", "LOG_ENV", "MachinePool", "auth_key", "pool_dir", "server_name"]

DIR_ENV = "GYM_INTEGRITY_POOL_DIR"  # the per-user directory, if not the default
GRACE_ENV = "GYM_INTEGRITY_POOL_GRACE_S"  # how long a server with no client waits before it exits
LOG_ENV = "GYM_INTEGRITY_POOL_LOG"  # a file for the servers' stderr (an operator's debugging); default: none
PROTOCOL = 1  # part of the socket's name: a client never meets a server that speaks another protocol
_DEFAULT_GRACE_S = 2.0
_FIRST_CLIENT_GRACE_S = 10.0  # a new server waits at least this long for its first client
_SPAWN_TIMEOUT_S = 30.0  # a client waits this long for a server to start (lock, spawn, answer)
_HANDSHAKE_TIMEOUT_S = 10.0  # a connection not through the key challenge by then is dropped
_KEEPALIVE_S = 5.0  # the server tells each client it is alive this often
_SILENCE_S = 30.0  # a client with requests in flight that hears nothing this long drops the connection
_CALL_TIMEOUT_S = 10.0  # stats, pids: a reply later than this is given up (the fallback is returned)
_ALIVE_LOCK_WAIT_S = 10.0  # a starting server waits this long for an exiting one to let go of the pool
_STARTUP_TIMEOUT_S = 60.0  # as the pool's: a worker's start, part of run()'s worst honest wait
_CALLER_GRACE_S = 5.0
_CONNECT_SLACK_S = 5.0  # past the spawn bound: a connecting thread's last dial and its bookkeeping
_MAX_CONNECT_BACKOFF_S = 30.0  # failed connections are retried after 0.5 s, 1 s, 2 s, ... at most this
_MAX_MESSAGE_BYTES = 64 << 20
_KEY_BYTES = 32
_MAX_SOCKET_PATH = 107  # sun_path holds 108 bytes with the NUL
_EXIT_LOCK_HELD = 3  # a server that found another live server of its pool holding the alive lock
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_STAT_KEYS = ("requests", "completed", "timeouts", "crashes", "errors", "infra_errors", "overloaded", "retries",
              "worker_restarts", "queue_depth", "in_flight", "run_s_mean", "run_s_max", "queued_s_max")



# --------------------------------------------------------------------------- the directory, the key, the name


def _refuse(path: str, why: str) -> PermissionError:
    return PermissionError(f"the machine grading pool's directory {path} {why}: refusing it (set {DIR_ENV} to a "
                           f"private directory, or {SCOPE_ENV}=process for a pool per process)")


def check_private_dir(path: str) -> None:
    """Raise ``PermissionError`` unless ``path`` is a real directory of this user that only this user may enter."""
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise _refuse(path, "is not a directory (a symlink or a file)")
    if info.st_uid != os.getuid():
        raise _refuse(path, f"belongs to uid {info.st_uid}, not to this user (uid {os.getuid()})")
    if info.st_mode & 0o077:
        raise _refuse(path, f"has mode {stat.S_IMODE(info.st_mode):04o}, which lets group or others in "
                            f"(it must be 0700: chmod 700 {path})")


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
                raise PermissionError(f"the machine grading pool's key file {path} is not a file of this user's "
                                      f"with mode 0600 (mode {stat.S_IMODE(info.st_mode):04o}, uid {info.st_uid}): "
                                      "refusing it; remove it and a new one is made")
            key = os.read(fd, _KEY_BYTES + 1)
        finally:
            os.close(fd)
        if len(key) != _KEY_BYTES:
            raise PermissionError(f"the machine grading pool's key file {path} does not hold a {_KEY_BYTES}-byte "
                                  "key: remove it and a new one is made")
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
    identity = {"protocol": PROTOCOL, "python": os.path.realpath(sys.executable), "prefix": sys.prefix,
                "package": _PACKAGE_ROOT, "pythonpath": os.environ.get("PYTHONPATH", ""), "handler": handler,
                "config": _config_fields(config)}
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:24]


def _config_fields(config: PoolConfig) -> dict[str, Any]:
    return {f.name: getattr(config, f.name) for f in dataclasses.fields(config) if f.name != "scope"}


def _grace_s() -> float:
    try:
        return max(0.0, float(os.environ.get(GRACE_ENV, _DEFAULT_GRACE_S)))
    except ValueError:
        return _DEFAULT_GRACE_S


_held_lock_fds: set[int] = set()  # flocks this process holds: a forked child must not keep them


def _flock(path: str, deadline: float) -> int | None:
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


def _unlock(fd: int) -> None:
    # LOCK_UN first: a flock belongs to the open file, which a child forked while it was held shares; closing
    # only this fd would leave the lock held until that child closes its copy too.
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        _held_lock_fds.discard(fd)
        os.close(fd)


def _dumps(message: Any) -> bytes:
    return pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)


def _shutdown(sock: socket.socket) -> None:
    """Wake every thread blocked on ``sock`` (a plain close would not)."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


# --------------------------------------------------------------------------- client side


class _Unreachable(Exception):
    """No server answered at the socket (none, a stale file, one exiting, or one not through the handshake)."""


class _Link:
    """One authenticated connection to a server, with the requests and calls waiting on it."""

    def __init__(self, sock: socket.socket, conn: Connection, hello: dict[str, Any]) -> None:
        self.sock, self.conn, self.hello = sock, conn, hello
        self.lock = threading.Lock()  # pending, calls, dead
        self.send_lock = threading.Lock()  # one message at a time; the fd is closed only under it
        self.pending: dict[int, concurrent.futures.Future] = {}  # request id -> its outcome's future
        self.calls: dict[int, concurrent.futures.Future] = {}
        self.dead = self.closed = self.closing = False
        self.reader: threading.Thread | None = None
        self.last_heard = time.monotonic()

    def send(self, message: Any) -> None:
        data = _dumps(message)
        with self.send_lock:
            if self.closed:
                raise OSError("the connection is closed")
            self.conn.send_bytes(data)

    def close_fds(self) -> None:
        with self.send_lock:
            self.closed = True
            for end in (self.conn, self.sock):
                try:
                    end.close()
                except OSError:
                    pass

    def forget(self) -> None:
        """In a forked child: drop this process's copies of the fds, leaving the parent's connection up."""
        self.closed = self.dead = True
        self.pending, self.calls = {}, {}
        for end in (self.conn, self.sock):
            try:
                end.close()
            except OSError:
                pass


def _dial(path: str, key: bytes, timeout: float = _HANDSHAKE_TIMEOUT_S) -> _Link:
    """Connect, pass the key challenge both ways and exchange hellos, within ``timeout``."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.connect(path)
        sock.settimeout(None)
    except (FileNotFoundError, ConnectionError, socket.timeout) as exc:
        sock.close()
        raise _Unreachable(type(exc).__name__) from None
    except OSError:
        sock.close()
        raise
    conn = Connection(os.dup(sock.fileno()))
    timer = threading.Timer(timeout, _shutdown, (sock,))
    timer.daemon = True
    timer.start()
    try:
        answer_challenge(conn, key)
        deliver_challenge(conn, key)
        conn.send_bytes(_dumps(("hello", PROTOCOL, os.getpid())))
        hello = _plain_loads(conn.recv_bytes(1 << 16))
        if not (isinstance(hello, tuple) and len(hello) == 2 and hello[0] == "hello" and isinstance(hello[1], dict)
                and isinstance(hello[1].get("pid"), int)):
            raise EOFError("not a pool server's hello")
    except AuthenticationError:
        conn.close()
        sock.close()
        raise PermissionError(f"the machine grading pool's server at {path} refused this process's key "
                              f"(the key file {os.path.join(os.path.dirname(path), 'authkey')} changed while it ran?)"
                              ) from None
    except (EOFError, OSError, pickle.UnpicklingError) as exc:
        conn.close()
        sock.close()
        raise _Unreachable(type(exc).__name__) from None
    finally:
        timer.cancel()
    return _Link(sock, conn, hello[1])


_spawned: list[int] = []  # servers this process started: reaped once they exit


def _exit_code(pid: int) -> int | None:
    """The exit code of the spawned child ``pid`` (reaping it), or None while it runs."""
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:  # reaped already (by someone's waitpid(-1)): it is gone
        return -1
    if done == 0:
        return None
    if pid in _spawned:
        _spawned.remove(pid)
    return os.waitstatus_to_exitcode(status)


def _reap_spawned() -> None:
    for pid in list(_spawned):
        _exit_code(pid)


def _spawn_detached(argv: list[str], env: dict[str, str], stderr_path: str) -> int:
    """``posix_spawn`` ``argv`` in a new session with stdin/stdout on /dev/null and stderr appended to
    ``stderr_path``; no inheritable fd of ours goes with it.

    Not ``subprocess.Popen``: Popen waits on a pipe for the child's exec, and a fork
    made at that moment by another thread (an ``AsyncVectorEnv`` starting its
    sub-processes while a sub-env connects in the background) inherits the
    pipe's write end, so Popen would block until that sub-process exits.
    ``posix_spawn`` (vfork semantics) holds no such pipe.
    """
    actions: list[tuple[Any, ...]] = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                                      (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                                      (os.POSIX_SPAWN_OPEN, 2, stderr_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT,
                                       0o600)]
    try:
        open_fds = [int(fd) for fd in os.listdir("/proc/self/fd")]
    except OSError:
        open_fds = list(range(3, 1024))
    for fd in open_fds:
        try:
            if fd > 2 and os.get_inheritable(fd):
                actions.append((os.POSIX_SPAWN_CLOSE, fd))
        except OSError:
            pass
    return os.posix_spawn(argv[0], argv, env, file_actions=actions, setsid=True)


class MachinePool(_Users):
    """A client of the machine's pool server for one (handler, config): a :class:`WorkerPool`'s interface.

    Use :func:`gym_integrity.services.pool.get_pool` rather than building one:
    it returns the process's shared client. Thread-safe. ``run()`` and the
    futures of ``submit()`` always end in a :class:`TaskOutcome`; a server that
    dies, cannot start or stops answering gives ``INFRA_ERROR`` outcomes.
    """

    def __init__(self, handler: str, config: PoolConfig | None = None) -> None:
        self.handler = check_handler("MachinePool.handler", handler)
        self.config = config or PoolConfig()
        self._lock = threading.RLock()
        self._link: _Link | None = None
        self._connector: threading.Thread | None = None
        self._started = False
        self._refs = 0
        self._ids = itertools.count()
        self._error = ""  # why the last connection attempt failed
        self._failures = 0  # failed connection attempts in a row
        self._retry_at = 0.0  # no new attempt before (a server that cannot start is not a spawn loop)
        self._counters: collections.Counter[str] = collections.Counter()  # outcomes given without a server
        self._last_stats: dict[str, float] = {}
        _live_clients.add(self)

    def __repr__(self) -> str:
        return f"MachinePool({self.handler!r}, server pid {self.server_pid()})"

    # ----------------------------------------------------------------- lifecycle

    @property
    def running(self) -> bool:
        """Started and not closed: connected, or connecting on the next request."""
        return self._started

    def start(self) -> None:
        """Connect to the server, starting it if none answers (in the background: non-blocking)."""
        with self._lock:
            self._started = True
            if self._link is None:
                self._connect_in_background()

    def close(self) -> None:
        """Close this process's connection; its pending requests end ``INFRA_ERROR`` (shut down)."""
        with self._lock:
            self._started = False
            link, self._link = self._link, None
        if link is not None:
            link.closing = True
            self._lost(link, "closed")

    def server_pid(self) -> int | None:
        """The process id of the server this client is connected to (None if not connected)."""
        link = self._link
        return None if link is None or link.dead else int(link.hello["pid"])

    def worker_pids(self) -> list[int]:
        return self._int_list(self._call("worker_pids", None, _CALL_TIMEOUT_S, []))

    def busy_worker_pids(self) -> list[int]:
        return self._int_list(self._call("busy_worker_pids", None, _CALL_TIMEOUT_S, []))

    def wait_ready(self, timeout: float = _STARTUP_TIMEOUT_S) -> bool:
        """Block until the server's every worker has warmed up (True), or ``timeout`` passes (False)."""
        end = time.monotonic() + timeout
        if self._connected(timeout) is None:
            return False
        remaining = max(0.0, end - time.monotonic())
        return self._call("wait_ready", remaining, remaining + _CALL_TIMEOUT_S, False) is True

    # ----------------------------------------------------------------- requests

    def submit(self, payload: Any, *, run_timeout_s: float | None = None) -> concurrent.futures.Future:
        """Send ``payload`` to the server's pool; the future yields a :class:`TaskOutcome` (never an exception)."""
        budget = self._budget(run_timeout_s)
        future: concurrent.futures.Future = concurrent.futures.Future()
        try:
            data = _dumps(payload)
        except Exception as exc:  # the caller's error, not the pool's
            return self._given(future, PoolStatus.ERROR, f"unsendable payload ({type(exc).__name__})")
        if len(data) > _MAX_MESSAGE_BYTES - 4096:
            return self._given(future, PoolStatus.ERROR, f"unsendable payload (larger than {_MAX_MESSAGE_BYTES >> 20} "
                                                         "MB)")
        # A request that could not be sent never reached a server: it is sent again once, on a new connection
        # (a server that died since this client last heard from it is noticed here, at the send, as often as by
        # the reader). A request that was sent is never resent: its fate on a dead server is unknown.
        why = ""
        for _ in range(2):
            link = self._connected(_SPAWN_TIMEOUT_S + _CONNECT_SLACK_S)
            if link is None:
                return self._given(future, PoolStatus.INFRA_ERROR,
                                   f"the machine grading pool could not be reached: {self._error or 'no answer'}")
            req_id = next(self._ids)
            attempt: concurrent.futures.Future = concurrent.futures.Future()
            with link.lock:
                dead = link.dead
                if not dead:
                    link.pending[req_id] = attempt
            if dead:
                why = "died before the request was sent"
                continue
            try:
                link.send(("submit", req_id, data, budget))
            except (OSError, ValueError) as exc:
                why = f"died before the request was sent ({type(exc).__name__})"
                self._unsent(link, req_id)
                self._lost(link, f"sending failed: {type(exc).__name__}")
                continue
            attempt.add_done_callback(lambda done: future.set_result(done.result()))
            return future
        return self._given(future, PoolStatus.INFRA_ERROR, f"the machine grading pool {why}, twice; the request "
                                                           "was not graded")

    def run(self, payload: Any, *, run_timeout_s: float | None = None) -> TaskOutcome:
        """Run ``payload`` on a worker of the machine's pool and wait: never raises (but for a bad argument),
        never hangs (the connection's reader answers every request: with its outcome, or ``INFRA_ERROR`` when
        the connection breaks or the server falls silent)."""
        return self.submit(payload, run_timeout_s=run_timeout_s).result()

    def stats(self, fresh: bool = True) -> dict[str, float]:
        """The server's ``pool/...`` metrics (every client's requests), plus the outcomes this client gave
        itself (a server it could not reach, or that died under its requests) and its server starts.

        ``fresh=False``: the figures the server sent with this client's latest
        outcome (as of that request's end), without asking it again: for
        per-request metrics.
        """
        served = self._call("stats", None, _CALL_TIMEOUT_S, None) if fresh else None
        with self._lock:
            if served is not None:
                self._keep_stats(served)
            out = {f"pool/{k}": 0.0 for k in _STAT_KEYS}
            out.update(self._last_stats)
            for key in ("requests", "completed", "errors", "infra_errors"):
                out[f"pool/{key}"] += float(self._counters[key])
            out["pool/server_starts"] = float(self._counters["server_starts"])
            out["pool/connection_losses"] = float(self._counters["connection_losses"])
        return out

    # ----------------------------------------------------------------- internals

    def _budget(self, run_timeout_s: float | None) -> float:
        if run_timeout_s is None:
            return float(self.config.run_timeout_s)
        return check_number("MachinePool.run_timeout_s", run_timeout_s, low=0, low_open=True, unit="seconds")

    def _keep_stats(self, served: Any) -> None:
        """Remember the server's figures (caller holds the lock)."""
        if isinstance(served, dict):
            self._last_stats = {str(k): float(v) for k, v in served.items()
                                if isinstance(v, (int, float)) and not isinstance(v, bool)}

    @staticmethod
    def _int_list(value: Any) -> list[int]:
        return [v for v in value if isinstance(v, int)] if isinstance(value, list) else []

    def _given(self, future: concurrent.futures.Future, status: PoolStatus, detail: str) -> concurrent.futures.Future:
        """Resolve ``future`` here, without a server (counted in this client's share of the stats)."""
        with self._lock:
            self._counters["requests"] += 1
            self._counters["completed"] += 1
            self._counters["errors" if status is PoolStatus.ERROR else "infra_errors"] += 1
        future.set_result(TaskOutcome(status, detail=detail))
        return future

    def _unsent(self, link: _Link, req_id: int) -> None:
        """Take back request ``req_id``, whose send failed, from ``link`` (uncounting the no-verdict the reader
        may already have given it: the caller sends it again)."""
        with link.lock:
            taken = link.pending.pop(req_id, None) is None
        if taken:
            with self._lock:
                self._counters["infra_errors"] -= 1
                self._counters["completed"] -= 1

    def _lost(self, link: _Link, cause: str) -> None:
        """``link`` is down: its requests end INFRA_ERROR, its calls get no reply; the next request reconnects."""
        with link.lock:
            if link.dead:
                return
            link.dead = True
            pending, link.pending = list(link.pending.values()), {}
            calls, link.calls = list(link.calls.values()), {}
        with self._lock:
            if self._link is link:
                self._link = None
            if not link.closing:
                self._counters["connection_losses"] += 1
            self._counters["infra_errors"] += len(pending)
            self._counters["completed"] += len(pending)
        _shutdown(link.sock)  # wakes the reader, which closes the fds
        if link.closing:
            detail = "the worker pool was shut down"
        elif cause.startswith("the machine grading pool"):
            detail = f"{cause}; the request was not graded"
        else:
            detail = f"the machine grading pool died ({cause}); the request was not graded"
        for request in pending:
            if not request.done():
                request.set_result(TaskOutcome(PoolStatus.INFRA_ERROR, detail=detail))
        for call in calls:
            if not call.done():
                call.set_result(_NO_REPLY)

    def _call(self, name: str, argument: Any, timeout: float, fallback: Any) -> Any:
        """Ask the server (never starts one): its reply, or ``fallback`` if not connected or no timely reply."""
        link = self._link
        if link is None or link.dead or threading.current_thread() is link.reader:
            return fallback  # a callback on the reader thread cannot wait for the reader
        req_id = next(self._ids)
        call: concurrent.futures.Future = concurrent.futures.Future()
        with link.lock:
            if link.dead:
                return fallback
            link.calls[req_id] = call
        try:
            link.send(("call", req_id, name, argument))
            value = call.result(timeout=timeout)
        except (OSError, ValueError) as exc:
            self._lost(link, f"sending failed: {type(exc).__name__}")
            return fallback
        except concurrent.futures.TimeoutError:
            with link.lock:
                link.calls.pop(req_id, None)
            return fallback
        return fallback if value is _NO_REPLY else value

    def _connected(self, timeout: float) -> _Link | None:
        """The live link, connecting (and starting the server) first if needed, within ``timeout``."""
        with self._lock:
            link = self._link
            if link is not None and not link.dead:
                return link
            self._started = True
            connector = self._connect_in_background()
            if connector is None:
                return None  # backing off after a failed attempt: self._error says why
        connector.join(timeout)
        with self._lock:
            link = self._link
            if link is None and connector.is_alive():
                self._error = f"no connection within {timeout:g} s"
            return link if link is not None and not link.dead else None

    def _connect_in_background(self) -> threading.Thread | None:
        """The connecting thread, started if none is (caller holds the lock); None while backing off."""
        if self._connector is None or not self._connector.is_alive():
            if time.monotonic() < self._retry_at:
                return None
            self._connector = threading.Thread(target=self._connect, daemon=True,
                                               name=f"gym-integrity-machine-pool-connect:{self.handler}")
            self._connector.start()
        return self._connector

    def _connect(self) -> None:
        try:
            link = self._open_link()
        except Exception as exc:  # noqa: BLE001  (reported in the outcomes of the requests that wanted it)
            with self._lock:
                self._error = str(exc) or type(exc).__name__
                self._failures += 1
                self._retry_at = time.monotonic() + min(_MAX_CONNECT_BACKOFF_S, 0.5 * 2 ** (self._failures - 1))
            return
        with self._lock:
            self._failures, self._retry_at = 0, 0.0
            if not self._started or (self._link is not None and not self._link.dead):
                keep = False  # closed while connecting, or another connection won: this one is not needed
            else:
                self._link, self._error, keep = link, "", True
        if not keep:
            _shutdown(link.sock)
            link.close_fds()
            return
        link.reader = threading.Thread(target=self._read, args=(link,), daemon=True,
                                       name=f"gym-integrity-machine-pool-reader:{self.handler}")
        link.reader.start()

    def _open_link(self) -> _Link:
        """Connect to the server, or start it under the spawn lock and connect (bounded by _SPAWN_TIMEOUT_S)."""
        directory = pool_dir()
        key = auth_key(directory)
        name = server_name(self.handler, self.config)
        path = os.path.join(directory, name + ".sock")
        if len(os.fsencode(path)) > _MAX_SOCKET_PATH:
            raise OSError(f"the machine grading pool's socket path {path} is longer than a Unix socket allows "
                          f"({_MAX_SOCKET_PATH} bytes): set {DIR_ENV} to a shorter directory")
        deadline = time.monotonic() + _SPAWN_TIMEOUT_S

        def dial() -> _Link:
            return _dial(path, key, timeout=max(0.5, min(_HANDSHAKE_TIMEOUT_S, deadline - time.monotonic())))

        try:
            return dial()
        except _Unreachable:
            pass
        lock = _flock(os.path.join(directory, name + ".lock"), deadline)
        if lock is None:
            raise TimeoutError(f"another process held the pool's start lock for {_SPAWN_TIMEOUT_S:g} s")
        try:
            try:
                return dial()
            except _Unreachable:
                pass
            _reap_spawned()
            pid = self._spawn(directory, name)
            while True:
                try:
                    return dial()
                except _Unreachable:
                    pass
                code = _exit_code(pid)
                if code is not None:
                    why = (": another server of this pool holds its lock and does not answer"
                           if code == _EXIT_LOCK_HELD else "")
                    raise OSError(f"its server exited while starting (exit status {code}{why})")
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"its server did not answer within {_SPAWN_TIMEOUT_S:g} s of its start")
                time.sleep(0.02)
        finally:
            _unlock(lock)

    def _spawn(self, directory: str, name: str) -> int:
        """Start the server detached: its own session, no stdio, ``gym_integrity``'s package files stubbed
        (it imports neither gymnasium nor numpy, as a worker does not). Returns its pid."""
        spec = json.dumps({"handler": self.handler, "config": _config_fields(self.config), "directory": directory,
                           "name": name})
        code = stubbed_main_code("gym_integrity.services.machine_pool", "_server_main", spec,
                                 "gym_integrity.services.machine_pool")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
        pid = _spawn_detached([sys.executable, "-c", code], env, os.environ.get(LOG_ENV, "").strip() or os.devnull)
        _spawned.append(pid)
        with self._lock:
            self._counters["server_starts"] += 1
        return pid

    def _read(self, link: _Link) -> None:
        """The link's reader: resolves requests and calls by id until the connection ends."""
        cause = "the connection closed"
        try:
            while True:
                if not link.conn.poll(1.0):
                    if link.pending and time.monotonic() - link.last_heard > _SILENCE_S:
                        cause = f"the machine grading pool did not answer for {_SILENCE_S:g} s"
                        break
                    continue
                message = _plain_loads(link.conn.recv_bytes(_MAX_MESSAGE_BYTES))
                link.last_heard = time.monotonic()
                self._on_message(link, message)
        except EOFError:
            cause = "its server closed the connection"
        except OSError as exc:
            cause = f"{type(exc).__name__} on its connection"
        except Exception as exc:  # noqa: BLE001  (a message this client refuses to read ends the link)
            cause = f"an unreadable message ({type(exc).__name__})"
        finally:
            self._lost(link, cause)
            link.close_fds()

    def _on_message(self, link: _Link, message: Any) -> None:
        kind = message[0] if isinstance(message, tuple) and message else None
        if kind == "alive":
            pass
        elif kind == "outcome":
            _, req_id, status, value, detail, queued_s, run_s, attempts, served = message
            outcome = TaskOutcome(PoolStatus(status), value, str(detail), float(queued_s), float(run_s), int(attempts))
            with self._lock:
                self._keep_stats(served)
            with link.lock:
                request = link.pending.pop(req_id, None)
            if request is not None and not request.done():
                request.set_result(outcome)
        elif kind == "reply":
            _, req_id, value = message
            with link.lock:
                call = link.calls.pop(req_id, None)
            if call is not None and not call.done():
                call.set_result(value)
        else:
            raise ValueError("not a pool server's message")


_NO_REPLY = object()
_live_clients: "weakref.WeakSet[MachinePool]" = weakref.WeakSet()


def shutdown_all() -> None:
    """Close every client of this process (also at interpreter exit; the process's exit would close the sockets)."""
    for client in list(_live_clients):
        client.close()


def _forget_after_fork() -> None:
    """In a forked child: drop the parent's connections (its copies of the fds only) and locks; reconnect on use."""
    for client in list(_live_clients):
        link = client._link
        client._lock = threading.RLock()
        client._link, client._connector, client._started, client._refs = None, None, False, 0
        client._failures, client._retry_at = 0, 0.0
        client._counters = collections.Counter()
        if link is not None:
            link.forget()
    for fd in list(_held_lock_fds):
        _held_lock_fds.discard(fd)
        try:
            os.close(fd)  # the parent's flock stays held by the parent's own fd
        except OSError:
            pass
    _spawned.clear()  # the parent's children, not this process's


atexit.register(shutdown_all)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


# --------------------------------------------------------------------------- server side


#: How many clients' full shares of ``max_in_flight`` the machine's pool admits at once.
_CLIENT_SHARES = 16


class _Server:
    """One WorkerPool served on the socket ``<directory>/<name>.sock`` (see the module docstring)."""

    def __init__(self, handler: str, config: PoolConfig, directory: str, name: str) -> None:
        # Fairness between processes: each client may have config.max_in_flight requests in flight (its own share,
        # as a process's own pool allowed), so one process's flood is refused to it alone; the pool itself admits
        # _CLIENT_SHARES times that before it refuses anyone.
        self.per_client = config.max_in_flight
        self.pool = WorkerPool(handler, dataclasses.replace(config, max_in_flight=config.max_in_flight * _CLIENT_SHARES))
        self.directory, self.name = directory, name
        self.path = os.path.join(directory, name + ".sock")
        self.key = b""
        self.grace = _grace_s()
        self.lock = threading.Lock()
        self.clients = 0  # connections accepted and not yet closed (handshakes included)
        self.served = False  # a client has passed the handshake
        self.idle_since = time.monotonic()
        self.watch: dict[concurrent.futures.Future, float] = {}  # request -> when the pool is deemed stuck
        self.outboxes: set[Any] = set()  # each connected client's put(): keepalives go to all
        self.stop = threading.Event()

    def serve(self) -> int:
        check_private_dir(self.directory)
        self.key = auth_key(self.directory)
        alive = _flock(os.path.join(self.directory, self.name + ".alive"), time.monotonic() + _ALIVE_LOCK_WAIT_S)
        if alive is None:
            return _EXIT_LOCK_HELD
        try:
            os.unlink(self.path)  # a dead server's socket: the alive lock says no live one owns it
        except FileNotFoundError:
            pass
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.path)
        os.chmod(self.path, 0o600)
        listener.listen(128)
        inode = os.stat(self.path).st_ino
        signal.signal(signal.SIGTERM, lambda *_: self.stop.set())
        self.pool.start()
        next_keepalive = time.monotonic() + _KEEPALIVE_S
        try:
            while not self.stop.is_set():
                ready, _, _ = select.select([listener], [], [], 0.2)
                if ready:
                    try:
                        sock, _ = listener.accept()
                    except OSError:
                        continue
                    with self.lock:
                        self.clients += 1
                    threading.Thread(target=self._serve_client, args=(sock,), daemon=True).start()
                if not self._socket_is(inode) or self._idle_past_grace():
                    break
                self._unstick()
                if time.monotonic() >= next_keepalive:
                    next_keepalive = time.monotonic() + _KEEPALIVE_S
                    with self.lock:
                        outboxes = list(self.outboxes)
                    for put in outboxes:
                        put(("alive",))
        finally:
            if self._socket_is(inode):
                try:
                    os.unlink(self.path)  # first, so no new client reaches a server on its way out
                except OSError:
                    pass
            listener.close()
            self.pool.close()
            _unlock(alive)
        return 0

    def _socket_is(self, inode: int) -> bool:
        try:
            return os.stat(self.path).st_ino == inode
        except OSError:
            return False

    def _idle_past_grace(self) -> bool:
        with self.lock:
            if self.clients:
                return False
            limit = self.grace if self.served else max(self.grace, _FIRST_CLIENT_GRACE_S)
            return time.monotonic() - self.idle_since >= limit

    def _unstick(self) -> None:
        """A request past its worst honest wait means a stuck dispatcher: rebuild the pool, as ``run()`` would."""
        now = time.monotonic()
        with self.lock:
            stuck = [f for f, deadline in self.watch.items() if deadline <= now and not f.done()]
        if not stuck:
            return
        self.pool.close()  # answers everything pending INFRA_ERROR
        self.pool.start()
        for future in stuck:
            try:
                future.set_result(TaskOutcome(PoolStatus.INFRA_ERROR, detail="the worker pool stopped answering"))
            except concurrent.futures.InvalidStateError:
                pass

    def _serve_client(self, sock: socket.socket) -> None:
        sock.setblocking(True)
        conn = Connection(os.dup(sock.fileno()))
        out: "collections.deque[Any]" = collections.deque()
        wake = threading.Condition()
        writer: threading.Thread | None = None

        def put(item: Any) -> None:
            with wake:
                out.append(item)
                wake.notify()

        mine: set[concurrent.futures.Future] = set()  # this client's requests not yet answered

        try:
            timer = threading.Timer(_HANDSHAKE_TIMEOUT_S, _shutdown, (sock,))
            timer.daemon = True
            timer.start()
            try:
                deliver_challenge(conn, self.key)
                answer_challenge(conn, self.key)
                hello = _plain_loads(conn.recv_bytes(1 << 16))
            finally:
                timer.cancel()
            if not (isinstance(hello, tuple) and len(hello) == 3 and hello[:2] == ("hello", PROTOCOL)):
                return
            config = self.pool.config
            conn.send_bytes(_dumps(("hello", {"pid": os.getpid(), "protocol": PROTOCOL, "handler": self.pool.handler,
                                              "workers": config.workers, "spare_workers": config.spare_workers})))
            with self.lock:
                self.served = True
                self.outboxes.add(put)
            writer = threading.Thread(target=self._write, args=(conn, out, wake), daemon=True)
            writer.start()
            while True:
                self._handle(_plain_loads(conn.recv_bytes(_MAX_MESSAGE_BYTES)), put, mine)
        except Exception:  # noqa: BLE001  (EOF, a failed challenge, a refused message: this client is gone)
            pass
        finally:
            # A client gone (exited, killed) leaves its queued requests: no one will read their outcomes, and they
            # would hold the workers against the clients still here. One already on a worker runs to its budget.
            with self.lock:
                left = list(mine)
            for future in left:
                self.pool.cancel(future, "cancelled: the process that sent it left")
            put(None)
            _shutdown(sock)
            if writer is not None:
                writer.join(timeout=5)
            for end in (conn, sock):
                try:
                    end.close()
                except OSError:
                    pass
            with self.lock:
                self.outboxes.discard(put)
                self.clients -= 1
                if not self.clients:
                    self.idle_since = time.monotonic()

    @staticmethod
    def _write(conn: Connection, out: "collections.deque[Any]", wake: threading.Condition) -> None:
        """The connection's writer: outcomes are queued by the pool's dispatcher, which must never block on a
        client that does not read."""
        while True:
            with wake:
                while not out:
                    wake.wait()
                item = out.popleft()
            if item is None:
                return
            try:
                conn.send_bytes(_dumps(item))
            except Exception:  # noqa: BLE001  (the client is gone; its reader thread ends the connection)
                return

    def _handle(self, message: Any, put: Any, mine: "set[concurrent.futures.Future]") -> None:
        kind = message[0] if isinstance(message, tuple) and message else None
        if kind == "submit":
            _, req_id, data, budget = message
            if not isinstance(req_id, int) or not isinstance(data, bytes):
                raise ValueError("malformed request")
            with self.lock:
                over = len(mine) >= self.per_client
            if over:
                self.pool.count_refused()
                put(("outcome", req_id, PoolStatus.OVERLOADED.value, None,
                     f"{len(mine)} requests of this process in flight (max_in_flight={self.per_client})",
                     0.0, 0.0, 0, self.pool.stats()))
                return
            try:
                future = self.pool.submit_pickled(data, run_timeout_s=budget)
            except (TypeError, ValueError) as exc:  # a budget the client did not check: its error, not the pool's
                put(("outcome", req_id, PoolStatus.ERROR.value, None, f"bad run budget ({type(exc).__name__})",
                     0.0, 0.0, 0, None))
                return
            config = self.pool.config
            allowance = float(getattr(future, "queue_allowance", 0.0) or config.queue_timeout_s)
            budget_s = float(budget) if budget is not None else float(config.run_timeout_s)
            worst = (config.max_retries + 1) * (allowance + budget_s) + _STARTUP_TIMEOUT_S + _CALLER_GRACE_S
            with self.lock:
                self.watch[future] = time.monotonic() + worst
                mine.add(future)

            def done(finished: concurrent.futures.Future, req_id: int = req_id) -> None:
                with self.lock:
                    self.watch.pop(finished, None)
                    mine.discard(finished)
                o = finished.result()
                put(("outcome", req_id, o.status.value, o.value, o.detail, o.queued_s, o.run_s, o.attempts,
                     self.pool.stats()))

            future.add_done_callback(done)
        elif kind == "call":
            _, req_id, name, argument = message
            if name == "wait_ready":
                seconds = float(argument) if isinstance(argument, (int, float)) else 0.0
                threading.Thread(target=lambda: put(("reply", req_id, self.pool.wait_ready(seconds))),
                                 daemon=True).start()
            elif name in ("stats", "worker_pids", "busy_worker_pids"):
                put(("reply", req_id, getattr(self.pool, name)()))
            else:
                put(("reply", req_id, None))
        else:
            raise ValueError("not a pool client's message")


def _server_main(spec_json: str) -> None:
    """Entry point of a server process (see :meth:`MachinePool._spawn`)."""
    spec = json.loads(spec_json)
    config = PoolConfig(**spec["config"], scope="process")
    try:
        code = _Server(spec["handler"], config, spec["directory"], spec["name"]).serve()
    except OSError as exc:
        code = 2 if exc.errno != errno.EADDRINUSE else _EXIT_LOCK_HELD
    os._exit(code)  # everything is closed: no interpreter teardown to wait for


if __name__ == "__main__":  # python -m gym_integrity.services.machine_pool '<spec json>' (by hand, for debugging)
    _server_main(sys.argv[1])

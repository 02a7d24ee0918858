"""One authenticated connection to a machine pool server (the client's end), and the detached spawn of a server.

Messages go with ``send_bytes``/``recv_bytes`` and are read as plain data
(:func:`~gym_integrity.workers._wire.plain_loads`) on both ends.
"""

from __future__ import annotations

import concurrent.futures
import os
import pickle
import socket
import threading
import time
from multiprocessing import AuthenticationError
from multiprocessing.connection import Connection, answer_challenge, deliver_challenge
from typing import Any

from gym_integrity.workers._lifecycle import after_fork_in_child
from gym_integrity.workers._machine_paths import HANDSHAKE_TIMEOUT_S, PROTOCOL
from gym_integrity.workers._wire import dumps, plain_loads

__all__ = ["Link", "dial_server", "exit_code", "reap_spawned", "shutdown_socket", "spawn_detached", "spawned"]


def shutdown_socket(sock: socket.socket) -> None:
    """Wake every thread blocked on ``sock`` (a plain close would not)."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


# --------------------------------------------------------------------------- client side


class _Unreachable(Exception):
    """No server answered at the socket (none, a stale file, one exiting, or one not through the handshake)."""


class Link:
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
        data = dumps(message)
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


def dial_server(path: str, key: bytes, timeout: float = HANDSHAKE_TIMEOUT_S) -> Link:
    """Connect, pass the key challenge both ways and exchange hellos, within ``timeout``."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.connect(path)
        sock.settimeout(None)
    except (TimeoutError, FileNotFoundError, ConnectionError) as exc:
        sock.close()
        raise _Unreachable(type(exc).__name__) from None
    except OSError:
        sock.close()
        raise
    conn = Connection(os.dup(sock.fileno()))
    timer = threading.Timer(timeout, shutdown_socket, (sock,))
    timer.daemon = True
    timer.start()
    try:
        answer_challenge(conn, key)
        deliver_challenge(conn, key)
        conn.send_bytes(dumps(("hello", PROTOCOL, os.getpid())))
        hello = plain_loads(conn.recv_bytes(1 << 16))
        if not (
            isinstance(hello, tuple)
            and len(hello) == 2
            and hello[0] == "hello"
            and isinstance(hello[1], dict)
            and isinstance(hello[1].get("pid"), int)
        ):
            raise EOFError("not a pool server's hello")
    except AuthenticationError:
        conn.close()
        sock.close()
        raise PermissionError(
            f"the machine grading pool's server at {path} refused this process's key "
            f"(the key file {os.path.join(os.path.dirname(path), 'authkey')} changed while it ran?)"
        ) from None
    except (EOFError, OSError, pickle.UnpicklingError) as exc:
        conn.close()
        sock.close()
        raise _Unreachable(type(exc).__name__) from None
    finally:
        timer.cancel()
    return Link(sock, conn, hello[1])


spawned: list[int] = []  # servers this process started: reaped once they exit


def exit_code(pid: int) -> int | None:
    """The exit code of the spawned child ``pid`` (reaping it), or None while it runs."""
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:  # reaped already (by someone's waitpid(-1)): it is gone
        return -1
    if done == 0:
        return None
    if pid in spawned:
        spawned.remove(pid)
    return os.waitstatus_to_exitcode(status)


def reap_spawned() -> None:
    for pid in list(spawned):
        exit_code(pid)


def spawn_detached(argv: list[str], env: dict[str, str], stderr_path: str) -> int:
    """``posix_spawn`` ``argv`` in a new session with stdin/stdout on /dev/null and stderr appended to
    ``stderr_path``; no inheritable fd of ours goes with it.

    Not ``subprocess.Popen``: Popen waits on a pipe for the child's exec, and a fork
    made at that moment by another thread (an ``AsyncVectorEnv`` starting its
    sub-processes while a sub-env connects in the background) inherits the
    pipe's write end, so Popen would block until that sub-process exits.
    ``posix_spawn`` (vfork semantics) holds no such pipe.
    """
    actions: list[tuple[Any, ...]] = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, stderr_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600),
    ]
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


@after_fork_in_child
def _forget_spawned() -> None:
    spawned.clear()  # the parent's children, not this process's

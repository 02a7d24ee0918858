"""One worker subprocess with its two pipes, and the dispatcher's wake-up pipe: the in-process pool's OS-level parts.

A worker is a plain ``python -c`` subprocess (not a ``multiprocessing`` child,
which re-imports the user's ``__main__``; not a fork, which would copy the
dispatcher's locks), in its own session, stderr to ``/dev/null``, running
:func:`gym_integrity.workers._worker.main`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from typing import Any

from gym_integrity.workers._wire import PACKAGE_ROOT, frame_size, stubbed_main_code
from gym_integrity.workers._worker import MEMORY_ENV

__all__ = ["WorkerProcess", "Waker"]

_OUTSIDE_KILLS = (signal.SIGKILL, signal.SIGTERM)  # deaths that are not the input's doing


class WorkerProcess:
    """One worker subprocess and the two ends of its pipes."""

    def __init__(self, handler: str, memory_limit_mb: int | None) -> None:
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
        env[MEMORY_ENV] = str(memory_limit_mb or 0)
        code = stubbed_main_code("gym_integrity.workers._worker", "main", handler, handler.split(":")[0])
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", code],
                stdin=req_r,
                stdout=rep_w,
                stderr=subprocess.DEVNULL,
                close_fds=True,
                env=env,
                start_new_session=True,
            )
        finally:
            os.close(req_r)
            os.close(rep_w)
        os.set_blocking(rep_r, False)  # read_message() takes what has come and never waits for the rest
        self.send_conn = Connection(req_w, readable=False)
        self.recv_conn = Connection(rep_r, writable=False)
        self._partial = bytearray()  # the start of a message whose rest has not come yet
        self.ready = False
        self.request: Any = None  # the request it runs (the dispatcher's), or None
        self.started_at = time.monotonic()

    def read_message(self) -> bytes | None:
        """The worker's next whole message, or None while only part of it has come (kept for the next call).

        Never blocks: a worker that stops in the middle of a reply (a reply over 16 KB is written as its header,
        then its body, and one over the pipe's 64 KB only as the dispatcher reads) must not hold the dispatcher,
        and the pool's lock with it, until it finishes. Raises EOFError at the pipe's end, OSError for a length
        over ``MAX_MESSAGE_BYTES``.
        """
        while True:
            frame = frame_size(self._partial)
            if frame is None:
                wanted = (4 if len(self._partial) < 4 else 12) - len(self._partial)
            else:
                wanted = sum(frame) - len(self._partial)
                if wanted == 0:
                    message = bytes(self._partial[frame[0] :])
                    self._partial = bytearray()
                    return message
            try:
                piece = os.read(self.recv_conn.fileno(), min(wanted, 1 << 20))  # never past this message
            except BlockingIOError:
                return None
            if not piece:
                raise EOFError
            self._partial += piece

    def kill(self, wait: bool = True) -> None:
        """SIGKILL; ``wait=False`` leaves the reaping to the caller (a process freeing GBs exits in tens of ms)."""
        for conn in (self.send_conn, self.recv_conn):
            try:
                conn.close()
            except OSError:
                pass
        try:
            self.proc.kill()
            if wait:
                self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass

    def death(self) -> tuple[bool, str]:
        """``(from_outside, description)`` of how this (exited) worker died."""
        try:
            code = self.proc.wait(timeout=2)  # the pipe's EOF can precede the exit status by a moment
        except subprocess.TimeoutExpired:
            self.kill()  # closed its pipe yet lives on: the handler's doing
            return False, "closed its reply pipe"
        if code < 0:
            try:
                sig = signal.Signals(-code)
            except ValueError:  # a real-time signal (SIGRTMIN+n) has no name
                return False, f"signal {-code}"
            return sig in _OUTSIDE_KILLS, sig.name
        return False, f"exit status {code}"


class Waker:
    """The dispatcher's wake-up pipe, one per dispatcher.

    Why not two raw fds on the pool: a number the kernel has taken back at a
    close is soon handed to the next pipe, often a worker's. With raw fds a
    request racing ``close()`` could write its wake-up byte into a worker's
    request stream, and a dispatcher outliving its ``close()`` could read another
    pipe's bytes and then block holding the pool's lock (our best account of a
    CI run that hung in the pool's close-racing test). So the write end is
    written and closed under one lock (a late writer finds it closed, never a
    stranger's pipe), and the read end is closed by the one thread that reads
    it, the dispatcher, when it ends. Closing the write end is the last wake-up:
    the reader sees EOF.
    """

    def __init__(self) -> None:
        self.read_fd, self._write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        os.set_blocking(self._write_fd, False)  # a full pipe already holds a wake-up: never block a submit
        self._lock = threading.Lock()

    def wake(self) -> None:
        with self._lock:
            if self._write_fd >= 0:
                try:
                    os.write(self._write_fd, b"x")
                except OSError:  # full (BlockingIOError): a wake-up is pending anyway
                    pass

    def drain(self) -> None:
        """Read what woke the dispatcher (dispatcher thread only)."""
        try:
            while os.read(self.read_fd, 4096):
                pass
        except OSError:  # empty (BlockingIOError): drained
            pass

    def close_write(self) -> None:
        with self._lock:
            fd, self._write_fd = self._write_fd, -1
        if fd >= 0:
            os.close(fd)

    def close_read(self) -> None:
        """The dispatcher's last act."""
        fd, self.read_fd = self.read_fd, -1
        if fd >= 0:
            os.close(fd)

    def forget(self) -> None:
        """In a forked child: close its copies of both ends (not under the lock, which a parent thread may
        have held at the fork)."""
        for fd in (self.read_fd, self._write_fd):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.read_fd = self._write_fd = -1

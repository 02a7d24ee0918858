"""The machine pool's server process: one WorkerPool for one (handler, config), served to every client on a Unix socket.

Started detached by the first :class:`~gym_integrity.workers._machine_client.MachinePool`
that finds none (:func:`main`); its lifetime and fairness rules are set out in
the package docstring, :mod:`gym_integrity.workers`.
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import errno
import itertools
import json
import os
import select
import signal
import socket
import sys
import threading
import time
from multiprocessing.connection import Connection, answer_challenge, deliver_challenge
from typing import Any

from gym_integrity.workers._config import PoolConfig
from gym_integrity.workers._machine_link import shutdown_socket
from gym_integrity.workers._machine_paths import (
    EXIT_LOCK_HELD,
    HANDSHAKE_TIMEOUT_S,
    PROTOCOL,
    auth_key,
    check_private_dir,
    flock,
    grace_s,
    unlock,
)
from gym_integrity.workers._outcomes import PoolStatus, TaskOutcome
from gym_integrity.workers._process_pool import WorkerPool
from gym_integrity.workers._wire import MAX_MESSAGE_BYTES, dumps, outcome_message, plain_loads, worst_wait_s

__all__ = ["main"]

_FIRST_CLIENT_GRACE_S = 10.0  # a new server waits at least this long for its first client
_KEEPALIVE_S = 5.0  # the server tells each client it is alive this often
_ALIVE_LOCK_WAIT_S = 10.0  # a starting server waits this long for an exiting one to let go of the pool


#: How many clients' full shares of ``max_in_flight`` the machine's pool admits at once.
_CLIENT_SHARES = 16


class _Server:
    """One WorkerPool served on the socket ``<directory>/<name>.sock`` (see the module docstring)."""

    def __init__(self, handler: str, config: PoolConfig, directory: str, name: str) -> None:
        # Fairness between processes: each client may have config.max_in_flight requests in flight (its own share,
        # as a process's own pool allowed), so one process's flood is refused to it alone; the pool itself admits
        # _CLIENT_SHARES times that before it refuses anyone.
        self.per_client = config.max_in_flight
        self.pool = WorkerPool(
            handler, dataclasses.replace(config, max_in_flight=config.max_in_flight * _CLIENT_SHARES)
        )
        self.directory, self.name = directory, name
        self.path = os.path.join(directory, name + ".sock")
        self.key = b""
        self.grace = grace_s()
        self.lock = threading.Lock()
        self.clients = 0  # connections accepted and not yet closed (handshakes included)
        self.served = False  # a client has passed the handshake
        self.idle_since = time.monotonic()
        # request -> (when it was queued, its run budget): the pool is deemed stuck once it passes its worst wait,
        # read when checked (its queue allowance grows as other clients' requests are queued ahead of it)
        self.watch: dict[concurrent.futures.Future, tuple[float, float]] = {}
        self.client_ids = itertools.count()
        self.outboxes: set[Any] = set()  # each connected client's put(): keepalives go to all
        self.stop = threading.Event()

    def serve(self) -> int:
        check_private_dir(self.directory)
        self.key = auth_key(self.directory)
        alive = flock(os.path.join(self.directory, self.name + ".alive"), time.monotonic() + _ALIVE_LOCK_WAIT_S)
        if alive is None:
            return EXIT_LOCK_HELD
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
            unlock(alive)
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
        config = self.pool.config
        with self.lock:
            watched = list(self.watch.items())
        stuck = [
            f
            for f, (queued, budget) in watched
            if not f.done()
            and now
            >= queued
            + worst_wait_s(
                config.max_retries, float(getattr(f, "queue_allowance", 0.0) or config.queue_timeout_s), budget
            )
        ]
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
        out: collections.deque[Any] = collections.deque()
        wake = threading.Condition()
        writer: threading.Thread | None = None

        def put(item: Any) -> None:
            with wake:
                out.append(item)
                wake.notify()

        mine: set[concurrent.futures.Future] = set()  # this client's requests not yet answered
        client = next(self.client_ids)  # its requests take turns with other clients' at free workers

        try:
            timer = threading.Timer(HANDSHAKE_TIMEOUT_S, shutdown_socket, (sock,))
            timer.daemon = True
            timer.start()
            try:
                deliver_challenge(conn, self.key)
                answer_challenge(conn, self.key)
                hello = plain_loads(conn.recv_bytes(1 << 16))
            finally:
                timer.cancel()
            if not (isinstance(hello, tuple) and len(hello) == 3 and hello[:2] == ("hello", PROTOCOL)):
                return
            config = self.pool.config
            conn.send_bytes(
                dumps(
                    (
                        "hello",
                        {
                            "pid": os.getpid(),
                            "protocol": PROTOCOL,
                            "handler": self.pool.handler,
                            "workers": config.workers,
                            "spare_workers": config.spare_workers,
                        },
                    )
                )
            )
            with self.lock:
                self.served = True
                self.outboxes.add(put)
            writer = threading.Thread(target=self._write, args=(conn, out, wake), daemon=True)
            writer.start()
            while True:
                self._handle(plain_loads(conn.recv_bytes(MAX_MESSAGE_BYTES)), put, mine, client)
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
            shutdown_socket(sock)
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
    def _write(conn: Connection, out: collections.deque[Any], wake: threading.Condition) -> None:
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
                conn.send_bytes(dumps(item))
            except Exception:  # noqa: BLE001  (the client is gone; its reader thread ends the connection)
                return

    def _handle(self, message: Any, put: Any, mine: set[concurrent.futures.Future], client: int) -> None:
        kind = message[0] if isinstance(message, tuple) and message else None
        if kind == "submit":
            _, req_id, data, budget = message
            if not isinstance(req_id, int) or not isinstance(data, bytes):
                raise ValueError("malformed request")
            with self.lock:
                over = len(mine) >= self.per_client
            if over:
                self.pool.count_refused()
                put(
                    outcome_message(
                        req_id,
                        TaskOutcome(
                            PoolStatus.OVERLOADED,
                            detail=(
                                f"{len(mine)} requests of this process in flight (max_in_flight={self.per_client})"
                            ),
                        ),
                        self.pool.stats(),
                    )
                )
                return
            try:
                future = self.pool.submit_pickled(data, run_timeout_s=budget, client=client)
            except (TypeError, ValueError) as exc:  # a budget the client did not check: its error, not the pool's
                refused = TaskOutcome(PoolStatus.ERROR, detail=f"bad run budget ({type(exc).__name__})")
                put(outcome_message(req_id, refused, None))
                return
            budget_s = float(budget) if budget is not None else float(self.pool.config.run_timeout_s)
            with self.lock:
                self.watch[future] = (time.monotonic(), budget_s)
                mine.add(future)

            def done(finished: concurrent.futures.Future, req_id: int = req_id) -> None:
                with self.lock:
                    self.watch.pop(finished, None)
                    mine.discard(finished)
                put(outcome_message(req_id, finished.result(), self.pool.stats()))

            future.add_done_callback(done)
        elif kind == "call":
            _, req_id, name, argument = message
            if name == "wait_ready":
                seconds = float(argument) if isinstance(argument, (int, float)) else 0.0
                threading.Thread(
                    target=lambda: put(("reply", req_id, self.pool.wait_ready(seconds))), daemon=True
                ).start()
            elif name in ("stats", "worker_pids", "busy_worker_pids"):
                put(("reply", req_id, getattr(self.pool, name)()))
            else:
                put(("reply", req_id, None))
        else:
            raise ValueError("not a pool client's message")


def main(spec_json: str) -> None:
    """Entry point of a server process (see :func:`~gym_integrity.workers._machine_start.spawn_server`)."""
    spec = json.loads(spec_json)
    config = PoolConfig(**spec["config"], scope="process")
    try:
        code = _Server(spec["handler"], config, spec["directory"], spec["name"]).serve()
    except OSError as exc:
        code = 2 if exc.errno != errno.EADDRINUSE else EXIT_LOCK_HELD
    os._exit(code)  # everything is closed: no interpreter teardown to wait for


if __name__ == "__main__":  # python -m gym_integrity.workers._machine_server '<spec json>' (by hand, for debugging)
    main(sys.argv[1])

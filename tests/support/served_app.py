"""A served app under uvicorn in a test's thread: ``serving(env_id, env_kwargs, **build_app options)``."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from typing import Any, Callable, Iterator

import uvicorn

from gym_integrity.integrations.openenv import build_app

__all__ = ["Served", "serving", "wait_until"]


class Served:
    """``app`` under uvicorn in a daemon thread, on a socket bound here (no free-port race)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning",
                                                    ws="websockets-sansio"))
        self._thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self._sock]}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    @property
    def active_sessions(self) -> int:
        return self.app.state.env_server.active_sessions

    def start(self) -> "Served":
        self._thread.start()
        wait_until(lambda: self.server.started or not self._thread.is_alive(), 30, "uvicorn to start")
        assert self.server.started, "uvicorn died at startup"
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self._thread.join(20)
        self._sock.close()
        assert not self._thread.is_alive(), "uvicorn did not stop"


@contextlib.contextmanager
def serving(env_id: str, env_kwargs: dict[str, Any] | None = None, **options: Any) -> Iterator[Served]:
    served = Served(build_app(env_id, env_kwargs, **options)).start()
    try:
        yield served
    finally:
        served.stop()


def wait_until(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out after {timeout} s waiting for {what}"
        time.sleep(0.02)

"""Session lifetimes of a served env: openenv's server with a reaper that knows which sessions a socket holds.

openenv's ``HTTPEnvServer`` makes a session three ways: a WebSocket on
``/ws`` (or ``/mcp``) that owns it, ``POST /mcp openenv/session/create``
(which no socket holds), and a ``/ws?session_id=...`` that attaches to one
made over HTTP (``MCPToolClient`` does both). Its own idle reaper cannot tell
the first from the second, so one timeout would either close a training
client's socket between batches or let HTTP sessions that keep pinging hold
every slot. :class:`SessionServer` keeps the two apart:

* a session a socket holds is never closed for idleness unless the server
  was started with ``socket_timeout_s`` (``--session-timeout``);
* a session no socket holds is closed ``detached_ttl_s`` seconds after it was
  made or its socket went away, whatever it does meanwhile.

Capacity and the refusal frames are openenv's own (``CAPACITY_REACHED``).
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from typing import Any

from openenv.core.env_server.http_server import HTTPEnvServer

__all__ = ["SessionServer", "SocketScope"]

#: True while a WebSocket connection's handler runs: a session made then is that socket's.
_IN_SOCKET: contextvars.ContextVar[bool] = contextvars.ContextVar("gym_integrity_in_socket", default=False)


class SocketScope:
    """ASGI middleware: marks WebSocket connections (so :class:`SessionServer` knows who made a session), and drops
    the ``WebSocketDisconnect`` a client that closed first can raise after its session was torn down."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        from starlette.websockets import WebSocketDisconnect

        token = _IN_SOCKET.set(True)
        try:
            await self.app(scope, receive, send)
        except WebSocketDisconnect:
            pass
        finally:
            _IN_SOCKET.reset(token)


class SessionServer(HTTPEnvServer):
    """openenv's server whose idle reaper is replaced by one that tells socket-held sessions from the others.

    Pass ``concurrency_config`` with ``session_timeout=None`` (openenv's own
    reaper off); :meth:`start_reaper` runs at the app's start-up.
    """

    def __init__(self, *args: Any, socket_timeout_s: float | None, detached_ttl_s: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.socket_timeout_s = socket_timeout_s
        self.detached_ttl_s = detached_ttl_s
        self._socket_owned: set[str] = set()
        self._detached_since: dict[str, float] = {}
        self._reaper: asyncio.Task[None] | None = None

    async def _create_session(self) -> tuple[str, Any]:
        session_id, env = await super()._create_session()
        if _IN_SOCKET.get():
            self._socket_owned.add(session_id)
        else:
            self._detached_since[session_id] = time.monotonic()
        return session_id, env

    async def _destroy_session(self, session_id: str) -> None:
        self._socket_owned.discard(session_id)
        self._detached_since.pop(session_id, None)
        await super()._destroy_session(session_id)

    def held_by_socket(self, session_id: str) -> bool:
        """Whether a WebSocket holds the session now (its own, or one attached to a session made over HTTP)."""
        return session_id in self._socket_owned or session_id in self._session_websocket_attachments

    def expired(self, now_monotonic: float, now_wall: float) -> list[str]:
        """The sessions to close now (and, as a side effect, the time each socket-less one lost its socket)."""
        out = []
        for session_id, info in list(self._session_info.items()):
            if self.held_by_socket(session_id):
                self._detached_since.pop(session_id, None)
                if self.socket_timeout_s is not None and now_wall - info.last_activity_at > self.socket_timeout_s:
                    out.append(session_id)
            elif now_monotonic - self._detached_since.setdefault(session_id, now_monotonic) > self.detached_ttl_s:
                out.append(session_id)
        for session_id in list(self._detached_since):  # closed over HTTP (openenv/session/close) without us
            if session_id not in self._session_info:
                del self._detached_since[session_id]
        return out

    def _interval(self) -> float:
        # openenv's own reaper's pace: a session outlives its limit by at most this much.
        shortest = min(t for t in (self.socket_timeout_s, self.detached_ttl_s) if t is not None)
        return max(shortest / 4, 5.0)

    async def _reap(self) -> None:
        while True:
            await asyncio.sleep(self._interval())
            for session_id in self.expired(time.monotonic(), time.time()):
                # A socket's own session is closed under it: the served env then refuses every call
                # (served_envs.ServedSession), so the socket cannot keep playing outside the session cap.
                await self._destroy_session(session_id)

    def start_reaper(self) -> None:
        if self._reaper is None:
            self._reaper = asyncio.get_running_loop().create_task(self._reap())

    def stop_reaper(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            self._reaper = None

"""The served app: openenv-core's own server (``HTTPEnvServer``) around a registered id, and ``serve()`` to run it."""

from __future__ import annotations

import functools
import ipaddress
import sys
from typing import Any, Mapping

from openenv.core.env_server.http_server import HTTPEnvServer
from openenv.core.env_server.types import ConcurrencyConfig

from gym_integrity.checks import check_int, check_number, check_str, check_type
from gym_integrity.registration import check_registered, make
from gym_integrity.integrations.openenv.models import GymAction, GymObservation, GymOrToolCallAction
from gym_integrity.integrations.openenv.served import INLINE_BOUND_S, InlineServedEnv, ServedEnv, ServedQEDMathEnv

__all__ = ["build_app", "serve", "MCP_TOOLSETS", "DEFAULT_MAX_SESSIONS", "DEFAULT_SESSION_TIMEOUT_S"]

#: Ids served with an upstream OpenEnv env's MCP tool set as well as the text protocol.
MCP_TOOLSETS = {"QEDMath-v0": ServedQEDMathEnv}
DEFAULT_MAX_SESSIONS = 8
#: Seconds a session may stay idle before the server closes its env. Never None: openenv-core's
#: ``openenv/session/create`` (POST /mcp) opens sessions no socket holds, which only the reaper ends.
DEFAULT_SESSION_TIMEOUT_S = 300.0


class _QuietClientDisconnect:
    """Drops the ``WebSocketDisconnect`` openenv-core 0.3.0 raises after a client closed its socket first.

    Its session handler closes the socket in a ``finally`` that expects a
    ``RuntimeError``; under uvicorn's websockets-sansio protocol a socket the
    client already closed raises ``WebSocketDisconnect`` there instead, and
    uvicorn logs a traceback for every session that ended normally. The
    session has been torn down by then; nothing is lost by dropping it.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        from starlette.websockets import WebSocketDisconnect

        try:
            await self.app(scope, receive, send)
        except WebSocketDisconnect:
            pass


def _make_kwargs(env_id: str, env_kwargs: Any) -> tuple[dict[str, Any], float | None]:
    kwargs = dict(check_type("serve env_kwargs", env_kwargs if env_kwargs is not None else {}, Mapping,
                             "a dict of gym_integrity.make keyword arguments"))
    if kwargs.get("reveal_on_end"):
        raise ValueError("serve: reveal_on_end is for trainers in the same process; a served env never sends the "
                         "privileged info (drop reveal_on_end)")
    kwargs.pop("reveal_on_end", None)
    # A client over the wire may sum its step rewards; a frozen step pays nothing (the observation says frozen).
    kwargs.setdefault("frozen_reward", "zero")
    # Fail here, once, on a bad option (TypeError/ValueError naming it), not as a FACTORY_ERROR per session; and
    # read the env's declared step bound, which decides whether sessions run inline (InlineServedEnv).
    env = make(env_id, **kwargs)
    try:
        bound = getattr(env.unwrapped, "grading_time_bound_s", None)
    finally:
        env.close()
    return kwargs, (float(bound) if isinstance(bound, (int, float)) and not isinstance(bound, bool) else None)


def build_app(env_id: str, env_kwargs: Mapping[str, Any] | None = None, *,
              max_sessions: int = DEFAULT_MAX_SESSIONS,
              session_timeout_s: float = DEFAULT_SESSION_TIMEOUT_S) -> Any:
    """A FastAPI app serving ``env_id`` over OpenEnv's protocol, one integrity-stacked env per session.

    ``env_kwargs`` are ``gym_integrity.make`` keyword arguments (env options
    and the stack's switches; ``frozen_reward`` defaults to ``"zero"``,
    ``reveal_on_end`` is refused). Routes are openenv-core's production set:
    the ``/ws`` session socket, ``/mcp``, ``/health``, ``/metadata``,
    ``/schema``; not the stateless HTTP ``/reset`` and ``/step``, which build
    a fresh env per request. At most ``max_sessions`` sessions at once; one
    idle ``session_timeout_s`` seconds is closed. An env that declares every
    step bounded in-process is served by :class:`InlineServedEnv` (its calls on
    the event loop), any other by :class:`ServedEnv` (a thread per session).

    Example:
        >>> app = build_app("ReasoningGym-v0", {"dataset": "leg_counting"}, max_sessions=2)
        >>> sorted(r.path for r in app.routes if r.path in ("/ws", "/step", "/health"))
        ['/health', '/ws']
    """
    check_registered("serve", env_id)
    check_int("serve max_sessions", max_sessions, low=1)
    check_number("serve session_timeout_s", session_timeout_s, low=0, low_open=True, unit="seconds")
    kwargs, bound = _make_kwargs(env_id, env_kwargs)
    from fastapi import FastAPI

    from gym_integrity import __version__

    inline = bound is not None and bound <= INLINE_BOUND_S
    env_class = MCP_TOOLSETS.get(env_id) or (InlineServedEnv if inline else ServedEnv)
    action_class = GymOrToolCallAction if env_id in MCP_TOOLSETS else GymAction
    server = HTTPEnvServer(
        functools.partial(env_class, env_id, kwargs), action_class, GymObservation,
        concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=float(session_timeout_s)),
    )
    app = FastAPI(title=f"gym-integrity: {env_id}", version=__version__,
                  description=f"{env_id} over OpenEnv's protocol, with the gym-integrity stack on the server side.")
    server.register_routes(app, mode="production")
    app.add_middleware(_QuietClientDisconnect)
    app.state.env_server = server
    return app


def _check_free(host: str, port: int) -> None:
    """A ``ValueError`` naming the port when nothing can listen on ``host:port`` (in use, or an unknown host), before
    the banner says the server is up."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ValueError(f"serve --host {host!r}: not an address of this machine ({exc})") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            raise ValueError(f"serve: cannot listen on {host}:{port} ({exc.strerror}): pass another --port") from None


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(env_id: str, env_kwargs: Mapping[str, Any] | None = None, *, host: str = "127.0.0.1", port: int = 8000,
          max_sessions: int = DEFAULT_MAX_SESSIONS, session_timeout_s: float = DEFAULT_SESSION_TIMEOUT_S,
          log_level: str = "warning") -> None:
    """Run :func:`build_app` under uvicorn until interrupted. Binds to 127.0.0.1 unless ``host`` says otherwise."""
    check_str("serve host", host)
    check_int("serve port", port, low=0, high=65535)
    _check_free(host, port)
    app = build_app(env_id, env_kwargs, max_sessions=max_sessions, session_timeout_s=session_timeout_s)
    import uvicorn

    if not _is_loopback(host):
        print(f"gym-integrity serve: listening on {host}, beyond this machine. There is no authentication: anyone "
              "who reaches the port can open sessions and spend the env's grading (and judge) budget. Put it "
              "behind a proxy that authenticates, or keep it on 127.0.0.1 (docs/serve.md).", file=sys.stderr)
    print(f"gym-integrity serve: {env_id} on ws://{host}:{port}/ws (max {max_sessions} sessions, "
          f"idle timeout {session_timeout_s:g} s); Ctrl-C stops it", file=sys.stderr)
    print(f"gym-integrity serve: clients take the base URL http://{host}:{port} (OpenEnv's EnvClient, RemoteEnv, "
          "gym-integrity audit --url)", file=sys.stderr)
    uvicorn.run(app, host=host, port=port, log_level=log_level, ws="websockets-sansio")

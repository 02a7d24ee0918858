"""The served app: openenv's own server (``HTTPEnvServer``) around a registered id, and ``serve()`` to run it."""

from __future__ import annotations

import functools
import ipaddress
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from openenv.core.env_server.types import ConcurrencyConfig

from gym_integrity.checks import check_int, check_number, check_str, check_type
from gym_integrity.integrations.openenv.client_resets import ClientResets
from gym_integrity.integrations.openenv.models import GymAction, GymObservation, GymOrToolCallAction
from gym_integrity.integrations.openenv.served_envs import ServedEnv
from gym_integrity.integrations.openenv.served_mcp import ServedMCPEnv, mcp_reset, mcp_toolset
from gym_integrity.integrations.openenv.sessions import SessionServer, SocketScope
from gym_integrity.integrations.openenv.stats import stats_payload
from gym_integrity.registration import check_registered, make

__all__ = [
    "build_app",
    "serve",
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_SESSION_TIMEOUT_S",
    "DEFAULT_DETACHED_SESSION_TTL_S",
    "DEFAULT_RESET_BUDGET_S",
]

DEFAULT_MAX_SESSIONS = 8
#: None: a session a WebSocket holds is never closed for idleness (a trainer's pooled client may wait out a long
#: training step between batches); ``--session-timeout`` opts in.
DEFAULT_SESSION_TIMEOUT_S: float | None = None
#: Seconds a session no socket holds (POST /mcp openenv/session/create) lives, however often it is used.
DEFAULT_DETACHED_SESSION_TTL_S = 300.0
#: Seconds one reset (item generation, or a client's dataset rebuilt) may take before it is stopped and fails.
#: Resets at the datasets' default configs take milliseconds; the slowest shipped generators about a second.
DEFAULT_RESET_BUDGET_S: float | None = 10.0


def _make_kwargs(env_id: str, env_kwargs: Any) -> tuple[dict[str, Any], Any]:
    kwargs = dict(
        check_type(
            "serve env_kwargs",
            env_kwargs if env_kwargs is not None else {},
            Mapping,
            "a dict of gym_integrity.make keyword arguments",
        )
    )
    if kwargs.get("reveal_on_end"):
        raise ValueError(
            "serve: reveal_on_end is for trainers in the same process; a served env never sends the "
            "privileged info (drop reveal_on_end)"
        )
    kwargs.pop("reveal_on_end", None)
    # A client over the wire may sum its step rewards; a frozen step pays nothing (the observation says frozen).
    kwargs.setdefault("frozen_reward", "zero")
    # Fail here, once, on a bad option (TypeError/ValueError naming it), not as a FACTORY_ERROR per session; and
    # read what the env declares: its tools (an MCP tool set) and its dataset options (client resets).
    env = make(env_id, **kwargs)
    try:
        return kwargs, env.unwrapped
    finally:
        env.close()


def build_app(
    env_id: str,
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    session_timeout_s: float | None = DEFAULT_SESSION_TIMEOUT_S,
    detached_session_ttl_s: float = DEFAULT_DETACHED_SESSION_TTL_S,
    client_datasets: Sequence[str] | None = None,
    max_size: int | None = None,
    reset_budget_s: float | None = DEFAULT_RESET_BUDGET_S,
) -> Any:
    """A FastAPI app serving ``env_id`` over OpenEnv's protocol, one integrity-stacked env per session.

    ``env_kwargs`` are ``gym_integrity.make`` keyword arguments (env options
    and the stack's switches; ``frozen_reward`` defaults to ``"zero"``,
    ``reveal_on_end`` is refused). Routes are openenv's production set:
    the ``/ws`` session socket, ``/mcp``, ``/health``, ``/metadata``,
    ``/schema``; not the stateless HTTP ``/reset`` and ``/step``, which build
    a fresh env per request. At most ``max_sessions`` sessions at once. A
    session a WebSocket holds is closed for idleness only with
    ``session_timeout_s``; one no socket holds lives ``detached_session_ttl_s``
    seconds (:mod:`~gym_integrity.integrations.openenv.sessions`). A reset
    may pick the dataset as OpenEnv's reasoning_gym_env client does, among
    ``client_datasets`` (default: the served one's) and at most ``max_size``
    items (default: the served size), every numeric option of its config at
    most the served one's (else the dataset's default)
    (:mod:`~gym_integrity.integrations.openenv.client_resets`). A reset not
    done within ``reset_budget_s`` seconds (None: no budget) is stopped and
    fails with an error naming the budget; other sessions are not touched. An env with
    an MCP tool set (declared by its package, or its own tools) is served by
    :class:`ServedMCPEnv`, any other by :class:`ServedEnv`; either way a
    session's resets, steps and tool calls run on a thread of its own, never
    on the event loop. ``GET /stats`` gives the grading pools' machine-wide
    counters (:func:`~gym_integrity.workers.machine_stats`),
    which no session's observation carries.

    Example:
        >>> app = build_app("ReasoningGym-v0", {"dataset": "leg_counting"}, max_sessions=2)
        >>> sorted(r.path for r in app.routes if r.path in ("/ws", "/step", "/health"))
        ['/health', '/ws']
    """
    check_registered("serve", env_id)
    check_int("serve max_sessions", max_sessions, low=1)
    if session_timeout_s is not None:
        check_number("serve session_timeout_s", session_timeout_s, low=0, low_open=True, unit="seconds")
    check_number("serve detached_session_ttl_s", detached_session_ttl_s, low=0, low_open=True, unit="seconds")
    if reset_budget_s is not None:
        check_number("serve reset_budget_s", reset_budget_s, low=0, low_open=True, unit="seconds")
    kwargs, raw = _make_kwargs(env_id, env_kwargs)
    from fastapi import FastAPI

    from gym_integrity import __version__

    toolset = mcp_toolset(raw)
    if toolset is not None:
        factory = functools.partial(ServedMCPEnv, env_id, kwargs, toolset, mcp_reset(raw), reset_budget_s)
        action_class = GymOrToolCallAction
    else:
        factory = functools.partial(
            ServedEnv, env_id, kwargs, ClientResets.for_env(raw, client_datasets, max_size), reset_budget_s
        )
        action_class = GymAction
    server = SessionServer(
        factory,
        action_class,
        GymObservation,
        concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=None),
        socket_timeout_s=None if session_timeout_s is None else float(session_timeout_s),
        detached_ttl_s=float(detached_session_ttl_s),
    )
    app = FastAPI(
        title=f"gym-integrity: {env_id}",
        version=__version__,
        description=f"{env_id} over OpenEnv's protocol, with the gym-integrity stack on the server side.",
        on_startup=[server.start_reaper, shorten_gil_switch],
        on_shutdown=[server.stop_reaper],
    )
    server.register_routes(app, mode="production")
    # A plain def: FastAPI runs it on its thread pool, so a round trip to the machine pool's server never holds
    # the event loop.
    app.add_api_route(
        "/stats",
        functools.partial(stats_payload, server),
        methods=["GET"],
        tags=["Health"],
        summary="Machine-wide grading counters (every session's, every process's)",
    )
    app.add_middleware(SocketScope)
    app.state.env_server = server
    return app


#: The longest a session's thread generating an item keeps the GIL from the event loop once the loop asks for it
#: (CPython's default is 5 ms, paid at each of the hand-offs of every other session's call).
GIL_SWITCH_INTERVAL_S = 0.001


def shorten_gil_switch() -> None:
    """Set the interpreter's switch interval to :data:`GIL_SWITCH_INTERVAL_S` when the served app starts (never
    lengthen one set shorter): a server process answers many sessions while some of their threads compute."""
    if sys.getswitchinterval() > GIL_SWITCH_INTERVAL_S:
        sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)


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


def serve(
    env_id: str,
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    session_timeout_s: float | None = DEFAULT_SESSION_TIMEOUT_S,
    detached_session_ttl_s: float = DEFAULT_DETACHED_SESSION_TTL_S,
    client_datasets: Sequence[str] | None = None,
    max_size: int | None = None,
    reset_budget_s: float | None = DEFAULT_RESET_BUDGET_S,
    log_level: str = "warning",
) -> None:
    """Run :func:`build_app` under uvicorn until interrupted. Binds to 127.0.0.1 unless ``host`` says otherwise."""
    check_str("serve host", host)
    check_int("serve port", port, low=0, high=65535)
    _check_free(host, port)
    app = build_app(
        env_id,
        env_kwargs,
        max_sessions=max_sessions,
        session_timeout_s=session_timeout_s,
        detached_session_ttl_s=detached_session_ttl_s,
        client_datasets=client_datasets,
        max_size=max_size,
        reset_budget_s=reset_budget_s,
    )
    import uvicorn

    if not _is_loopback(host):
        print(
            f"gym-integrity serve: listening on {host}, beyond this machine. There is no authentication: anyone "
            "who reaches the port can open sessions and spend the env's grading (and judge) budget. Put it "
            "behind a proxy that authenticates, or keep it on 127.0.0.1 (docs/serve.md).",
            file=sys.stderr,
        )
    print(
        f"gym-integrity serve: {env_id} on ws://{host}:{port}/ws (max {max_sessions} sessions, "
        f"{'no idle timeout' if session_timeout_s is None else f'idle timeout {session_timeout_s:g} s'}); Ctrl-C stops it",
        file=sys.stderr,
    )
    print(
        f"gym-integrity serve: clients take the base URL http://{host}:{port} (OpenEnv's EnvClient, RemoteEnv, "
        "gym-integrity audit --url)",
        file=sys.stderr,
    )
    uvicorn.run(app, host=host, port=port, log_level=log_level, ws="websockets-sansio")

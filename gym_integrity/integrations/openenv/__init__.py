"""Serve any registered id over OpenEnv's protocol with the integrity stack on the server side (``[serve]`` extra).

``gym-integrity serve ENV_ID`` (or :func:`serve`) runs openenv's own
server around ``gym_integrity.make(ENV_ID, ...)``, one env per session;
OpenEnv's clients (``EnvClient``, ``GenericEnvClient``, ``MCPToolClient``)
talk to it as to any OpenEnv env. :class:`RemoteEnv` is the way back: a
Gymnasium env playing a served one. ``docs/serve.md`` has the protocol, the
guarantees and what exposing a server means.
"""

from __future__ import annotations

try:
    import openenv.core  # noqa: F401  # imported only to fail early without the extra
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError("gym_integrity.integrations.openenv needs openenv: pip install 'gym-integrity[serve]'") from exc

from gym_integrity.integrations.openenv.app import (
    DEFAULT_DETACHED_SESSION_TTL_S,
    DEFAULT_MAX_SESSIONS,
    DEFAULT_SESSION_TIMEOUT_S,
    build_app,
    serve,
)
from gym_integrity.integrations.openenv.client import GymEnvClient, RemoteEnv, observation_info
from gym_integrity.integrations.openenv.models import GymAction, GymObservation, GymOrToolCallAction, GymState
from gym_integrity.integrations.openenv.served_envs import ServedEnv
from gym_integrity.integrations.openenv.served_mcp import ServedMCPEnv, mcp_toolset
from gym_integrity.workers import machine_stats

__all__ = [
    "build_app",
    "serve",
    "GymAction",
    "GymOrToolCallAction",
    "GymObservation",
    "GymState",
    "GymEnvClient",
    "RemoteEnv",
    "observation_info",
    "ServedEnv",
    "ServedMCPEnv",
    "mcp_toolset",
    "machine_stats",
    "DEFAULT_DETACHED_SESSION_TTL_S",
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_SESSION_TIMEOUT_S",
]

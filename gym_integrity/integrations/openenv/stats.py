"""The served app's ``GET /stats``: this process's grading counters, which are the machine's, not one session's.

A grading pool's counters (requests, timeouts, kills, queue depth) count
every session of this server and, for the machine pool, every process of
the user that grades. They are an operator's figures: one client must not
read another's requests or timeouts in its observation, so they are served
here and nowhere in a session's frames (``docs/serve.md``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["machine_stats", "stats_payload"]


def machine_stats() -> list[dict[str, Any]]:
    """One entry per grading pool this process has used: its ``handler``, ``scope`` and ``stats`` (flat
    ``pool/...`` floats; a machine pool's are its server's, every client's, fetched now when it is running)."""
    from gym_integrity.workers._pools import _POOLS

    out = []
    for (handler, _config, scope), pool in _POOLS.items():
        # A pool not started yet has nothing to ask its server (and asking would start one).
        out.append({"handler": handler, "scope": scope, "stats": pool.stats(fresh=pool.running)})
    return out


def stats_payload(server: Any) -> dict[str, Any]:
    """What ``GET /stats`` returns: the server's session counts and :func:`machine_stats`."""
    return {"active_sessions": int(server.active_sessions), "max_sessions": int(server.max_concurrent_envs),
            "grading_pools": machine_stats()}

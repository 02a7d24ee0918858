"""The served app's ``GET /stats``: this process's grading counters, which are the machine's, not one session's.

A grading pool's counters (requests, timeouts, kills, queue depth) count
every session of this server and, for the machine pool, every process of
the user that grades. They are an operator's figures: one client must not
read another's requests or timeouts in its observation, so they are served
here and nowhere in a session's frames (``docs/serve.md``).
"""

from __future__ import annotations

from typing import Any

from gym_integrity.workers import machine_stats

__all__ = ["stats_payload"]


def stats_payload(server: Any) -> dict[str, Any]:
    """What ``GET /stats`` returns: the server's session counts and
    :func:`~gym_integrity.workers.machine_stats` (every grading pool this process uses, with its server's counters)."""
    return {
        "active_sessions": int(server.active_sessions),
        "max_sessions": int(server.max_concurrent_envs),
        "grading_pools": machine_stats(),
    }

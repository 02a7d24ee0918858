"""Servers the tests, the audit and the README start on 127.0.0.1 (no network, no real grading).

``from gym_integrity.testing import JudgeServer`` works; the module loads on first use so that
``python -m gym_integrity.testing.judge_server`` runs it cleanly.
"""

from typing import Any

__all__ = ["JudgeServer"]


def __getattr__(name: str) -> Any:
    if name == "JudgeServer":
        from gym_integrity.testing.judge_server import JudgeServer

        return JudgeServer
    raise AttributeError(f"module 'gym_integrity.testing' has no attribute {name!r}")

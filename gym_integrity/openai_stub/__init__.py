"""An OpenAI-compatible stub server (judge and policy) that the tests, the audit and the README start on 127.0.0.1 (no network, no real grading).

``from gym_integrity.openai_stub import JudgeServer`` works; the module loads on first use so that
``python -m gym_integrity.openai_stub.judge_server`` runs it cleanly.
"""

from typing import Any

__all__ = ["JudgeServer"]


def __getattr__(name: str) -> Any:
    if name == "JudgeServer":
        from gym_integrity.openai_stub.judge_server import JudgeServer

        return JudgeServer
    raise AttributeError(f"module 'gym_integrity.openai_stub' has no attribute {name!r}")

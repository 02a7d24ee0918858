"""An OpenAI-compatible stub server (judge and policy) that the tests, the audit and the README start on 127.0.0.1 (no network, no real grading).

``from gym_integrity.openai_stub import JudgeServer`` works; the module loads on first use so that
``python -m gym_integrity.openai_stub.judge_server`` runs it cleanly.
"""

from typing import Any

__all__ = ["STUB_JUDGE_MODEL", "JudgeServer"]

#: The model name the audit addresses the stub judge by: a grade from it is a test's, not a grader's.
STUB_JUDGE_MODEL = "stub-judge"


def __getattr__(name: str) -> Any:
    if name == "JudgeServer":
        from gym_integrity.openai_stub.judge_server import JudgeServer

        return JudgeServer
    raise AttributeError(f"module 'gym_integrity.openai_stub' has no attribute {name!r}")

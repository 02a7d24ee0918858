"""The policy for verifiers' rollouts: the project's test server, which verifiers' chat program streams from directly.

verifiers always asks for ``stream=True``; the test server answers it as
OpenAI does (server-sent chat-completion chunks), so the scripted policy and
its request log are the server's own, with no relay in between.
"""

from __future__ import annotations

import pytest

from gym_integrity.openai_stub.judge_server import JudgeServer, write_policy  # the one import of the test server here

__all__ = ["JudgeServer", "write_policy"]


@pytest.fixture
def policy(tmp_path):
    """``policy(mapping, **server_kwargs)``: a started test server playing ``mapping``; yields (its url, the server)."""
    opened = []

    def start(mapping, **kwargs):
        path = tmp_path / f"policy{len(opened)}.json"
        write_policy(path, mapping)
        server = JudgeServer("policy", policy_file=path, **kwargs).start()
        opened.append(server)
        return server.url, server

    yield start
    for server in opened:
        server.stop()

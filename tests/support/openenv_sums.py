"""A third-party-style OpenEnv MCP env server (openenv's MCPEnvironment, FastMCP tools, create_app), in the layout of
OpenEnv's own reasoning_gym_env: reset draws a question, ``get_question`` shows it, ``submit_answer`` grades it and
returns the score and the correct answer. This one re-grades every submission (no end guard) and pays any answer
that contains the sum: what tests/audit/test_adapters_openenv.py audits over the wire."""

from __future__ import annotations

from typing import Any
from uuid import uuid4

from fastmcp import FastMCP
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
from openenv.core.env_server.types import Action, Observation, State

import reward_toys

__all__ = ["SumsEnvironment", "app"]


class SumsEnvironment(MCPEnvironment):
    SUPPORTS_CONCURRENT_SESSIONS = True  # each session gets its own instance: the audit holds several at once

    def __init__(self) -> None:
        self._rows = reward_toys.rows(16)
        self._row: dict[str, Any] | None = None
        self._done, self._score = False, 0.0
        self._state = State(episode_id=str(uuid4()), step_count=0)
        mcp = FastMCP("sums")
        env = self

        @mcp.tool
        def get_question() -> dict:
            """The current question."""
            return {"question": env._row["prompt"]} if env._row else {"error": "reset first"}

        @mcp.tool
        def submit_answer(answer: str) -> dict:
            """Grade an answer: the score and the correct answer."""
            if env._row is None:
                return {"error": "reset first"}
            env._score = 1.0 if env._row["answer"] in answer else 0.0
            env._done = True
            return {"score": env._score, "correct_answer": env._row["answer"]}

        super().__init__(mcp)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Observation:
        self._row = self._rows[(seed or 0) % len(self._rows)]
        self._done, self._score = False, 0.0
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
        return Observation(done=False, reward=0.0, metadata={"status": "ready"})

    def _step_impl(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        return Observation(done=self._done, reward=0.0, metadata={"error": "use MCP tool calls"})

    def step(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        self._state.step_count += 1
        obs = super().step(action, timeout_s=timeout_s, **kwargs)
        obs.done, obs.reward = self._done, self._score if self._done else 0.0
        return obs

    @property
    def state(self) -> State:
        return self._state


app = create_app(SumsEnvironment, CallToolAction, CallToolObservation, env_name="sums_env", max_concurrent_envs=4)

"""A third-party OpenEnv MCP env server (OpenEnv's ``envs/*_env``: tools over ``/ws``), as the text env the auditor plays.

``OpenEnvMCPEnv(url)`` connects with openenv's own ``MCPToolClient``, lists the
server's tools (the auditor then answers with a ``<tool_call>`` to
``submit_answer``, as a tool-calling policy does), and plays:

* ``reset(seed, options)``: the client's ``reset(seed=seed, **reset_kwargs, **options)``,
  then the ``question_tool`` (``get_question``) for the prompt, as OpenEnv's
  reasoning_gym and finqa clients do; the observation is its result's
  ``question`` (or the whole result as JSON);
* ``step(text)``: the ``<tool_call>`` in ``text`` as a ``CallToolAction``, or, for
  a reply without one, ``submit_tool(answer=text)`` (a harness that submits the
  final reply); the observation is the tool's result as JSON and ``info`` the
  result itself. The reward is the result's ``reward_key`` (``score``) where it
  has one, as OpenEnv's clients read it, and a scored ``submit_tool`` call ends
  the episode; else the server's reward and done. (openenv 0.10 routes tool
  calls through ``MCPEnvironment.step_async``, so a reward and done an env sets
  in its ``step()`` never reach the wire.) Steps after the end go to the server
  as they are.

No privileged hook reaches a server: the gold is what the server reveals at the
end (``correct_answer``, ``ground_truth``, ... in a result: the auditor reads
answer-like keys), and without it the report says which probes could not run.
``gym-integrity audit ID --url URL`` (our own ids, with a local twin) is
``audit/served_audit.py``; this adapter is for servers this package did not build.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from gym_integrity.checks import check_type
from gym_integrity.envs.base import MAX_TEXT_CHARS
from gym_integrity.spaces import UnicodeText

try:
    from openenv.core.env_server.mcp_types import CallToolAction
    from openenv.core.mcp_client import MCPToolClient
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError("gym_integrity.audit.adapters_openenv needs openenv: pip install 'gym-integrity[serve]'") from exc

__all__ = ["OpenEnvMCPEnv", "parse_tool_call"]


def parse_tool_call(text: str) -> tuple[str, dict[str, Any]] | None:
    """The first well-formed ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` in ``text``, or None.

    >>> parse_tool_call('<tool_call>{"name": "submit_answer", "arguments": {"answer": "7"}}</tool_call>')
    ('submit_answer', {'answer': '7'})
    >>> parse_tool_call("7") is None
    True
    """
    start = text.find("<tool_call>")
    end = text.find("</tool_call>", start)
    if start < 0 or end < 0:
        return None
    try:
        call = json.loads(text[start + len("<tool_call>") : end])
    except (ValueError, RecursionError):
        return None
    if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
        return None
    arguments = call.get("arguments", {})
    return call["name"], dict(arguments) if isinstance(arguments, Mapping) else {}


def tool_value(result: Any) -> Any:
    """What a tool returned, out of MCP's result envelope (``data``, ``structured_content``, or JSON text content).

    >>> tool_value({"content": [{"type": "text", "text": '{"score": 1.0}'}], "data": {"score": 1.0}})
    {'score': 1.0}
    """
    if not isinstance(result, Mapping):
        return result
    for key in ("data", "structured_content"):
        if result.get(key) is not None:
            return result[key]
    content = result.get("content")
    if isinstance(content, list) and content and isinstance(content[0], Mapping) and "text" in content[0]:
        try:
            return json.loads(content[0]["text"])
        except (ValueError, RecursionError):
            return content[0]["text"]
    return result


def _text(result: Any) -> str:
    try:
        return json.dumps(result, default=str)
    except (TypeError, ValueError):
        return str(result)


class OpenEnvMCPEnv(gym.Env[str, str]):
    """An OpenEnv MCP server behind Gymnasium's API (see the module docstring)."""

    def __init__(
        self,
        url: str,
        *,
        question_tool: str = "get_question",
        submit_tool: str = "submit_answer",
        reward_key: str | None = "score",
        reset_kwargs: Mapping[str, Any] | None = None,
        max_steps: int = 8,
    ) -> None:
        check_type("OpenEnvMCPEnv url", url, str, "an http:// or ws:// URL of an OpenEnv server")
        self.url = url
        self.question_tool, self.submit_tool, self.reward_key = question_tool, submit_tool, reward_key
        self.reset_kwargs = dict(reset_kwargs or {})
        self.client = MCPToolClient(base_url=url).sync()
        self.client.connect()
        self.tools = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": t.input_schema},
            }
            for t in self.client.list_tools()
        ]
        self.observation_space = UnicodeText(MAX_TEXT_CHARS, min_length=0)
        self.action_space = UnicodeText(MAX_TEXT_CHARS, min_length=0)
        self.step_budget = max_steps  # what the stack bounds an episode by: a server declares none

    def _call(self, name: str, arguments: Mapping[str, Any]) -> tuple[Any, float, bool]:
        result = self.client.step(CallToolAction(tool_name=name, arguments=dict(arguments)))
        observation = result.observation
        value = tool_value(getattr(observation, "result", None))
        error = getattr(observation, "error", None)
        if error is not None:
            value = {"error": getattr(error, "message", str(error))}
        reward = float(result.reward) if result.reward is not None else 0.0
        done = bool(result.done)
        if self.reward_key and isinstance(value, Mapping) and isinstance(value.get(self.reward_key), (int, float)):
            # openenv routes tool calls through MCPEnvironment.step_async, past a step() override that sets the
            # episode's reward and done: over the wire they stay 0 and False, so the score is read where the
            # env's own clients read it, in the tool's result; a scored submission ends the episode.
            reward, done = float(value[self.reward_key]), done or name == self.submit_tool
        return value, reward, done

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        kwargs = {**self.reset_kwargs, **(options or {})}
        self.client.reset(**({"seed": seed} if seed is not None else {}), **kwargs)
        result, _, _ = self._call(self.question_tool, {})
        question = result.get("question") if isinstance(result, Mapping) else None
        return str(question) if question is not None else _text(result), {}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        call = parse_tool_call(action) if isinstance(action, str) else None
        name, arguments = call if call is not None else (self.submit_tool, {"answer": str(action)})
        result, reward, done = self._call(name, arguments)
        info = dict(result) if isinstance(result, Mapping) else {"result": result}
        return _text(result), reward, done, False, info

    def close(self) -> None:
        self.client.close()

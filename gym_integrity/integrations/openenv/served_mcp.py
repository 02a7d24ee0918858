"""The MCP side of a served env: the tools an env's package declares, and the served env that offers them.

:class:`ServedMCPEnv` is a :class:`~gym_integrity.integrations.openenv.served_envs.ServedEnv`'s
counterpart for an env with tools (:func:`mcp_toolset`). MCP tool calls
arrive on the server's event loop and hand their work to the session's own
thread (:class:`~gym_integrity.integrations.openenv.served_envs.SessionThread`),
so a judge call neither stalls the loop nor queues behind other sessions'
calls; the session's lock keeps ``close`` (from the reaper) out of a call in
flight (``docs/serve.md``).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation, ListToolsAction

from gym_integrity.integrations.openenv.models import GymAction, GymObservation, ToolResetObservation
from gym_integrity.integrations.openenv.served_envs import ServedSession, _OneSession

__all__ = ["ServedMCPEnv", "mcp_reset", "mcp_toolset"]


def _tools_module(raw_env: Any) -> tuple[str, Any]:
    """The name of the module beside the env class that declares its MCP tools, and that module (None if absent)."""
    package = type(raw_env).__module__.rpartition(".")[0]
    name = f"{package}.mcp_tools"
    try:
        found = importlib.util.find_spec(name) if package else None
    except ModuleNotFoundError:
        found = None
    return name, importlib.import_module(name) if found is not None else None


def mcp_reset(raw_env: Any) -> Callable[..., Any] | None:
    """The tool whose fields a reset observation holds (``<package>.mcp_tools.MCP_RESET``), or None: a tool set
    whose client parses reset as a typed observation declares it (QEDMath-v0: ``get_problem``)."""
    name, module = _tools_module(raw_env)
    tool = getattr(module, "MCP_RESET", None)
    if tool is not None and not callable(tool):
        raise TypeError(f"{name}.MCP_RESET must be a function (session) -> dict of the reset observation's fields")
    return tool


def mcp_toolset(raw_env: Any) -> tuple[Any, ...] | None:
    """The MCP tools of an env: the ones its package declares (``<package>.mcp_tools.MCP_TOOLS``), else one per
    tool the env itself takes (``env.tools``, each call a step of the stacked env), else None.

    Found through the env class's own module, so a new env with tools edits
    no list here: ``gym_integrity.envs.qed_math.mcp_tools`` for QEDMath-v0,
    or the same module name beside a user's env class; FinQA-v0's four
    tools come from its own schemas.
    """
    name, module = _tools_module(raw_env)
    tools = getattr(module, "MCP_TOOLS", None)
    if tools is not None:
        tools = tuple(tools)
        if not tools or not all(callable(tool) for tool in tools):
            raise TypeError(f"{name}.MCP_TOOLS must be a non-empty sequence of functions (session, **arguments)")
        return tools
    schemas = getattr(raw_env, "tools", None)
    if schemas:
        return tuple(schema["function"] for schema in schemas)
    return None


def _as_mcp_tool(session: ServedSession, tool: Callable[..., Any]) -> Callable[..., Any]:
    """``tool`` with its session bound, as an async function FastMCP reads (name, doc, the other parameters).

    Async, and its work on the session's own thread: FastMCP awaits it on the server's event loop, which a judge
    call (seconds) must not hold."""
    signature = inspect.signature(tool)
    parameters = list(signature.parameters.values())[1:]

    async def call(**arguments: Any) -> Any:
        return await session.run(functools.partial(tool, session, **arguments))

    call.__name__ = tool.__name__
    call.__doc__ = tool.__doc__
    call.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]  # inspect reads a function's __signature__
    call.__annotations__ = {
        k: v
        for k, v in getattr(tool, "__annotations__", {}).items()
        if k in {p.name for p in parameters} or k == "return"
    }
    return call


def _env_tool(session: ServedSession, function: Mapping[str, Any]) -> Any:
    """One of the env's own tools (an OpenAI function schema) as an MCP tool: a call is one step of the stacked
    env, and its result is the env's observation (the tool's output, or the grading note for an answer)."""
    from fastmcp.tools import Tool
    from fastmcp.tools.base import ToolResult

    name = str(function["name"])

    class EnvTool(Tool):
        async def run(self, arguments: dict[str, Any]) -> ToolResult:
            obs = await session.run(session.step, GymAction(tool=name, arguments=dict(arguments or {})))
            return ToolResult(content=obs.text, structured_content={"result": obs.text})

    return EnvTool(
        name=name,
        description=str(function.get("description") or ""),
        parameters=dict(function.get("parameters") or {"type": "object", "properties": {}}),
        # FastMCP's own shape for a tool returning a str: clients unwrap ``result`` into ``.data``.
        output_schema={
            "type": "object",
            "properties": {"result": {"type": "string"}},
            "required": ["result"],
            "x-fastmcp-wrap-result": True,
        },
    )


class ServedMCPEnv(_OneSession, MCPEnvironment):
    """A served env with the MCP tools its package declares (:func:`mcp_toolset`), and the text protocol.

    QEDMath-v0 is served with the tool set of OpenEnv's ``qed_math_env``
    (``gym_integrity.envs.qed_math.mcp_tools``): client code written for it
    works unchanged (``list_tools()``, ``call_tool("get_problem")``,
    ``call_tool("submit_proof", proof=...)``). Each tool sees the session's
    public observations only, and a tool that steps the env steps the stacked
    env, so a call after the end is frozen. A plain ``{"text": ...}`` step
    works too.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(
        self,
        env_id: str,
        make_kwargs: Mapping[str, Any],
        tools: tuple[Callable[..., Any] | Mapping[str, Any], ...],
        reset_fields: Callable[..., Any] | None = None,
        reset_budget_s: float | None = None,
    ) -> None:
        from fastmcp import FastMCP

        self._reset_fields = reset_fields

        session = self.session = ServedSession(env_id, make_kwargs, reset_budget_s=reset_budget_s)
        mcp = FastMCP(f"gym-integrity {env_id}")
        for tool in tools:
            if callable(tool):
                mcp.tool(_as_mcp_tool(session, tool))
            else:
                mcp.add_tool(_env_tool(session, tool))
        self._env_tools = {str(tool["name"]) for tool in tools if not callable(tool)}
        super().__init__(mcp)

    def _step_impl(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> GymObservation:
        if not isinstance(action, GymAction):
            raise TypeError(f"expected a GymAction or an MCP tool call, got {type(action).__name__}")
        return self.session.step(action)

    async def step_async(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Any:
        # MCPEnvironment runs a text step on the loop's default executor (a few threads shared by every session):
        # the session's own thread instead, as for the tools, so proofs waiting on the judge do not queue there.
        if isinstance(action, CallToolAction) and action.tool_name in self._env_tools:
            # A step of the env's own tool over the socket: the observation carries the stack's reward and done
            # (OpenEnv's FinQA client loops until done), the tool's output and the question, as upstream's metadata.
            obs = await self.session.run(
                self.session.step, GymAction(tool=action.tool_name, arguments=dict(action.arguments or {}))
            )
            return CallToolObservation(
                tool_name=action.tool_name,
                result={"data": obs.text},
                done=obs.done,
                reward=obs.reward,
                metadata=_tool_metadata(self.session, obs),
            )
        if isinstance(action, (CallToolAction, ListToolsAction)):
            return await super().step_async(action, timeout_s=timeout_s, **kwargs)
        return await self.session.run(self._step_impl, action)

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,  # type: ignore[override]
        options: Mapping[str, Any] | None = None,
        **reset_options: Any,
    ) -> GymObservation | ToolResetObservation:
        first = super().reset(seed, episode_id, options, **reset_options)
        if self._env_tools:  # OpenEnv's FinQA client reads the question and company from the reset's metadata
            first = first.model_copy(update={"metadata": _tool_metadata(self.session, first)})
        if self._reset_fields is not None:  # OpenEnv's QED client parses reset as its get_problem observation
            return ToolResetObservation.of(self._reset_fields(self.session), first)
        return first

    def close(self) -> None:
        self.session.close()
        super().close()


def _tool_metadata(session: ServedSession, obs: GymObservation) -> dict[str, Any]:
    """The public part of upstream FinQA's observation metadata: the question, the company, the tool's output."""
    first = session.first
    out: dict[str, Any] = {
        "question": first.text if first is not None else "",
        "company": str(first.details.get("company") or "") if first is not None else "",
        "tool_result": "" if obs is first else obs.text,
    }
    if obs.verdict is not None:
        out.update(verdict=obs.verdict, no_verdict=obs.no_verdict)
    return out

"""The served envs: one integrity-stacked gym env per OpenEnv session, and QEDMath's upstream MCP tool set on it.

openenv-core builds one of these per WebSocket session (``/ws``) from a
factory and calls ``reset``/``step``/``state``/``close`` on it from that
session's own thread. The gym env inside is ``gym_integrity.make(id, ...)``:
the whole integrity stack sits below the OpenEnv layer, so everything a
client gets has already been frozen after the end and stripped of privileged
info, and :func:`~gym_integrity.integrations.openenv.models.public_observation`
then keeps only plain public values.

Two facts of the server shape this module (``docs/serve.md``):

* the idle-session reaper closes the env but leaves the socket open, so a
  closed env refuses every call instead of serving a session that no longer
  counts against ``--max-sessions``;
* MCP tool calls run on the server's event loop, text steps on the session's
  thread: one lock per session puts both in one order, and the tools hand
  their work to a thread of the session's own, so a judge call neither stalls
  the event loop nor queues behind other sessions' calls in a shared pool.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Callable
from typing import Any, Mapping, Optional

import gymnasium as gym
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.mcp_types import CallToolAction, ListToolsAction
from openenv.core.env_server.types import EnvironmentMetadata

from gym_integrity.registration import env_entry, make
from gym_integrity.integrations.openenv.models import GymAction, GymObservation, GymState, public_observation

__all__ = ["ServedEnv", "InlineServedEnv", "ServedQEDMathEnv", "ServedSession", "PROOF_SCALE", "INLINE_BOUND_S",
           "INLINE_MAX_CHARS"]

_CLOSED = "this session is closed (idle too long, or closed by its client): open a new session"
#: The upstream QED Math env reports proof scores on the olympiad 0-7 scale; our grades are in [0, 1].
PROOF_SCALE = 7


class ServedSession:
    """One session's stacked env and what the wire needs of it: the lock, the state, the reset observation.

    The gym env is built at the first ``reset`` (``/metadata`` and ``/schema``
    build a served env per request and never reset it), and refuses every
    call after ``close``.
    """

    def __init__(self, env_id: str, make_kwargs: Mapping[str, Any]) -> None:
        self.env_id = env_id
        self._make_kwargs = dict(make_kwargs)
        self._env: gym.Env | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._takes_tools = False
        self._tool_thread: ThreadPoolExecutor | None = None
        self._thread_lock = threading.Lock()
        self.state = GymState(env_id=env_id)
        self.first: GymObservation | None = None  # what reset returned: the problem, for tools that show it again

    def _open_env(self) -> gym.Env:
        if self._closed:
            raise RuntimeError(_CLOSED)
        if self._env is None:
            self._env = make(self.env_id, **self._make_kwargs)
            self._takes_tools = bool(getattr(self._env.unwrapped, "tools", None))
        return self._env

    def reset(self, seed: Optional[int], episode_id: Optional[str], options: Mapping[str, Any]) -> GymObservation:
        # The new state is built (and so validated) before the env resets: a refused reset changes nothing.
        state = GymState(env_id=self.env_id, episode_id=episode_id or uuid.uuid4().hex, step_count=0)
        with self._lock:
            env = self._open_env()
            obs, info = env.reset(seed=seed, options=dict(options) or None)
            self.state, self.first = state, public_observation(obs, info)
            return self.first

    def step(self, action: GymAction) -> GymObservation:
        with self._lock:
            env = self._open_env()
            if self.first is None:
                raise RuntimeError("call reset() before step()")
            if action.tool is not None and not self._takes_tools:
                raise ValueError(f"{self.env_id} takes text actions {{'text': ...}}; it has no tools")
            obs, reward, terminated, truncated, info = env.step(action.to_env_action())
            self.state.step_count += 1
            self.state.done = bool(terminated or truncated)
            return public_observation(obs, info, float(reward), terminated, truncated)

    async def run(self, work: Callable[..., Any], *args: Any) -> Any:
        """``work(*args)`` on this session's own thread (made at the first call that needs it), awaited."""
        # Not the session's lock: this runs on the event loop, which must never wait for a grading step.
        with self._thread_lock:
            if self._closed:  # refused here, before it would make a thread no one shuts down
                raise RuntimeError(_CLOSED)
            if self._tool_thread is None:
                self._tool_thread = ThreadPoolExecutor(1, thread_name_prefix=f"serve-{self.env_id}")
            thread = self._tool_thread
        return await asyncio.get_running_loop().run_in_executor(thread, work, *args)

    def close(self) -> None:
        with self._lock:  # after a step in flight: the env is never closed under a grading call
            self._closed = True
            if self._env is not None:
                self._env.close()
                self._env = None
            with self._thread_lock:
                if self._tool_thread is not None:
                    self._tool_thread.shutdown(wait=False)


def _metadata(env_id: str) -> EnvironmentMetadata:
    from gym_integrity import __version__

    entry = env_entry(env_id)
    description = entry.description if entry is not None else f"{env_id}, served with the gym-integrity stack"
    return EnvironmentMetadata(name=env_id, description=description, version=__version__, author="gym-integrity",
                               documentation_url="https://github.com/gym-integrity/gym-integrity/blob/main/docs/serve.md")


def _reset_options(options: Any, extra: Mapping[str, Any]) -> dict[str, Any]:
    # openenv-core hands reset every key of the client's reset message; the ones that are not seed or
    # episode_id are reset options (QEDMath's ``problem_id``, as the upstream QED client sends it), and the env
    # refuses an unknown one with a TypeError naming the keys it takes.
    if options is None and not extra:
        return {}
    merged = dict(options) if isinstance(options, Mapping) else {}
    if options is not None and not isinstance(options, Mapping):
        raise TypeError(f"reset options must be a JSON object, got {type(options).__name__}")
    merged.update(extra)
    return merged


class _OneSession:
    """What both served classes do with their :class:`ServedSession`: reset, state, metadata."""

    session: ServedSession

    def reset(self, seed: Optional[int] = None, episode_id: Optional[str] = None,
              options: Optional[Mapping[str, Any]] = None, **reset_options: Any) -> GymObservation:
        return self.session.reset(seed, episode_id, _reset_options(options, reset_options))

    @property
    def state(self) -> GymState:
        return self.session.state

    def get_metadata(self) -> EnvironmentMetadata:
        return _metadata(self.session.env_id)


class ServedEnv(_OneSession, Environment[GymAction, GymObservation, GymState]):
    """An OpenEnv ``Environment`` around ``gym_integrity.make(env_id, **make_kwargs)``; one per session.

    Build it through :func:`~gym_integrity.integrations.openenv.build_app`
    (or ``gym-integrity serve``); the server calls ``ServedEnv(env_id,
    make_kwargs)`` for each session. ``reset(seed=..., episode_id=...,
    options=...)``: any other key of the reset message is a reset option.
    ``step(GymAction)`` before ``reset`` or after ``close`` raises, which
    the server answers with an ``EXECUTION_ERROR`` frame.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True  # each session has its own env; nothing is shared but the grading pools

    def __init__(self, env_id: str, make_kwargs: Mapping[str, Any]) -> None:
        super().__init__()
        self.session = ServedSession(env_id, make_kwargs)

    def step(self, action: GymAction, timeout_s: Optional[float] = None, **kwargs: Any) -> GymObservation:
        # timeout_s never arrives over the WebSocket; grading budgets are the env's own (docs/serve.md).
        return self.session.step(action)

    def close(self) -> None:
        self.session.close()


class InlineServedEnv(ServedEnv):
    """A :class:`ServedEnv` whose calls run on the server's event loop, for envs that grade in-process.

    openenv-core awaits ``reset_async``/``step_async`` directly when a class
    overrides them, instead of handing each call to the session's thread and
    back (about a third of the server's CPU per ReasoningGym episode,
    ``benchmarks/bench_serve.py``). :func:`~gym_integrity.integrations.openenv.build_app`
    picks it only for an env that declares every step bounded in-process
    (``grading_time_bound_s`` at most :data:`INLINE_BOUND_S`: no judge, no
    worker pool, no sandbox to wait on), and a text longer than
    :data:`INLINE_MAX_CHARS` is still graded on the session's thread. A
    declared bound that a scorer does not keep would hold every session: the
    audit's ``pathological_answers`` probe checks the bound, and issue 15's
    review moved the one scorer found slow (codeio's) into the sandbox.
    """

    async def reset_async(self, seed: Optional[int] = None, episode_id: Optional[str] = None,
                          options: Optional[Mapping[str, Any]] = None, **reset_options: Any) -> GymObservation:
        return self.reset(seed, episode_id, options, **reset_options)

    async def step_async(self, action: GymAction, timeout_s: Optional[float] = None, **kwargs: Any) -> GymObservation:
        # Even an in-process grader reads the whole text (a scan for the answer tag is a Python loop over it): a
        # text past INLINE_MAX_CHARS goes to the session's thread, where the GIL's switch interval keeps the event
        # loop answering other sessions (a 16 MB text held it 4 s inline, 0.1 s from a thread).
        if action.text is not None and len(action.text) > INLINE_MAX_CHARS:
            return await self.session.run(self.session.step, action)
        return self.session.step(action)


#: The longest step an env may declare (``grading_time_bound_s``, seconds) and still be served inline.
INLINE_BOUND_S = 1.0
#: The longest text graded on the event loop (a few ms of scanning); a longer one is graded on the session's thread.
INLINE_MAX_CHARS = 65_536


class ServedQEDMathEnv(_OneSession, MCPEnvironment):
    """QEDMath-v0 served with both the text protocol and the upstream QED Math env's MCP tools.

    Client code written for OpenEnv's ``qed_math_env`` works unchanged:
    ``env.list_tools()``, ``env.call_tool("get_problem")``,
    ``env.call_tool("submit_proof", proof=...)`` and
    ``env.call_tool("get_grading_guidelines")``, with the same result keys
    (so its ``ProblemObservation``/``ProofSubmissionObservation`` parse them).
    What differs is what makes it safe: ``get_problem`` returns the prompt the
    agent is shown and never the reference solution; the guidelines only when
    the env shows them in the prompt; ``submit_proof`` is one step of the
    stacked env, so a submission after the end is frozen (reward 0, the final
    feedback again). A plain ``{"text": ...}`` step works too.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, env_id: str, make_kwargs: Mapping[str, Any]) -> None:
        from fastmcp import FastMCP

        session = self.session = ServedSession(env_id, make_kwargs)
        mcp = FastMCP(f"gym-integrity {env_id}")

        # Async tools that hand the work to the session's thread: FastMCP awaits them on the server's event
        # loop, which a judge call (seconds) must not hold.
        @mcp.tool
        async def get_problem() -> dict:
            """The current problem: the prompt the agent is shown, its id and source (never a reference solution)."""
            return await session.run(_problem_payload, session)

        @mcp.tool
        async def submit_proof(proof: str) -> dict:
            """Submit a proof (or a final answer) for grading; returns score (0-7), feedback, reward and done."""
            return await session.run(_submission_payload, session, proof)

        @mcp.tool
        async def get_grading_guidelines() -> dict:
            """The grading guidelines of the current problem when the env shows them in the prompt, else empty."""
            return await session.run(_guidelines_payload, session)

        super().__init__(mcp)

    def _step_impl(self, action: Any, timeout_s: Optional[float] = None, **kwargs: Any) -> GymObservation:
        if not isinstance(action, GymAction):
            raise TypeError(f"expected a GymAction or an MCP tool call, got {type(action).__name__}")
        return self.session.step(action)

    async def step_async(self, action: Any, timeout_s: Optional[float] = None, **kwargs: Any) -> Any:
        # MCPEnvironment runs a text step on the loop's default executor (a few threads shared by every session):
        # the session's own thread instead, as for the tools, so proofs waiting on the judge do not queue there.
        if isinstance(action, (CallToolAction, ListToolsAction)):
            return await super().step_async(action, timeout_s=timeout_s, **kwargs)
        return await self.session.run(self._step_impl, action)

    def close(self) -> None:
        self.session.close()
        super().close()


def _started(session: ServedSession) -> GymObservation:
    if session.first is None:
        raise RuntimeError("call reset() before using the tools")
    return session.first


def _problem_payload(session: ServedSession) -> dict[str, Any]:
    first = _started(session)
    return {"problem": first.text, "problem_id": first.problem_id or "",
            "dataset_source": str(first.details.get("dataset_source") or ""),
            "grading_guidelines": str(first.details.get("grading_guidelines") or "")}


def _guidelines_payload(session: ServedSession) -> dict[str, Any]:
    first = _started(session)
    return {"problem_id": first.problem_id or "", "grading_guidelines": str(first.details.get("grading_guidelines") or ""),
            "scale": f"0-{PROOF_SCALE}"}


def _submission_payload(session: ServedSession, proof: Any) -> dict[str, Any]:
    if not isinstance(proof, str):
        raise TypeError(f"submit_proof: proof must be a string, got {type(proof).__name__}")
    _started(session)
    obs = session.step(GymAction(text=proof))
    # Only keys the upstream ProofSubmissionObservation has (it forbids others); ours go under metadata.
    return {
        "score": round(PROOF_SCALE * (obs.score or 0.0)),
        "feedback": obs.text,
        "reward": obs.reward,
        "done": obs.done,
        "metadata": {"problem_id": obs.problem_id, "verdict": obs.verdict, "no_verdict": obs.no_verdict,
                     "frozen": bool(obs.integrity.get("frozen")),
                     "attempts_remaining": obs.details.get("attempts_remaining")},
    }

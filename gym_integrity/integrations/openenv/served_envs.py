"""The served envs: one integrity-stacked gym env per OpenEnv session, on a thread of the session's own.

openenv-core builds one of these per WebSocket session (``/ws``) from a
factory and awaits its ``reset``/``step``, which run on the session's own
thread (:class:`SessionThread`). The gym env inside is ``gym_integrity.make(id, ...)``:
the whole integrity stack sits below the OpenEnv layer, so everything a
client gets has already been frozen after the end and stripped of privileged
info, and :func:`~gym_integrity.integrations.openenv.models.public_observation`
then keeps only plain public values. The MCP tools an env's package declares,
and the served env that offers them, are in
:mod:`~gym_integrity.integrations.openenv.served_mcp`.

Three facts of the server shape this module (``docs/serve.md``):

* nothing that can take long runs on the server's event loop, which answers
  every session: item generation (seconds for a large spiral_matrix),
  grading and env construction run on a thread of the session's own. One
  thread per session, so a session's stream of slow resets holds its own
  thread only: others' calls never queue behind it, and the threads are
  bounded by ``--max-sessions``;
* the idle-session reaper closes the env but leaves the socket open, so a
  closed env refuses every call instead of serving a session that no longer
  counts against ``--max-sessions``;
* MCP tool calls arrive on the server's event loop and hand their work to
  the same thread, so a judge call neither stalls the loop nor queues behind
  other sessions' calls; one lock per session keeps ``close`` (from the
  reaper) out of a call in flight.
"""

from __future__ import annotations

import asyncio
import functools
import queue
import threading
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata

from gym_integrity.integrations.openenv.client_resets import CONFIG_KEYS, ClientResets
from gym_integrity.integrations.openenv.models import GymAction, GymObservation, GymState, public_observation
from gym_integrity.registration import env_entry, make

__all__ = ["ServedEnv", "ServedSession", "SessionThread"]

_CLOSED = "this session is closed (idle too long, or closed by its client): open a new session"


def _settle(future: asyncio.Future[Any], ok: bool, value: Any) -> None:
    if not future.cancelled():  # its caller went away (a dropped socket): nobody reads the outcome
        future.set_result(value) if ok else future.set_exception(value)


class _ResetBudgetExceeded(BaseException):
    """Raised inside a session's thread to stop a reset past its budget. A BaseException: item generators retry
    on ``Exception`` (maze draws grids until one fits), which would swallow it."""


class SessionThread:
    """One session's worker thread: its calls run there in order, off the event loop, and each outcome is handed
    back to the awaiting coroutine.

    A queue and ``call_soon_threadsafe`` rather than ``run_in_executor``:
    the hop there and back measured alone is a third cheaper (27 against
    40 µs), and every cheap call of every session pays it.
    """

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._running: Any = None  # the future of the call running now
        self._running_lock = threading.Lock()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    async def run(self, work: Callable[..., Any], *args: Any, budget_s: float | None = None) -> Any:
        """``work(*args)`` on this thread, after the calls queued before it; its result, or its exception.

        With ``budget_s``, a call not done that long after it was queued (a session sends one call at a time) is
        stopped (an exception raised in
        the thread: Python code stops at its next instruction) and a ``TimeoutError`` raised here.
        """
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._jobs.put((loop, future, work, args))
        if budget_s is None:
            return await future
        try:
            return await asyncio.wait_for(asyncio.shield(future), budget_s)
        except TimeoutError:
            self._interrupt(future)
            raise TimeoutError(
                f"reset: item generation ran past this server's budget of {budget_s:g} s per reset "
                "and was stopped; ask for a smaller dataset config, or start the server with a "
                "larger --reset-budget"
            ) from None

    def _interrupt(self, future: Any) -> None:
        import ctypes

        with self._running_lock:
            if self._running is future and self._thread.ident is not None:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    ctypes.c_ulong(self._thread.ident), ctypes.py_object(_ResetBudgetExceeded)
                )

    def stop(self) -> None:
        """End the thread once the calls queued so far have run."""
        self._jobs.put(None)

    def _serve(self) -> None:
        while True:
            try:
                if self._serve_one():
                    return
            except _ResetBudgetExceeded:  # delivered just after its call ended: nothing left to stop
                continue

    def _serve_one(self) -> bool:
        job = self._jobs.get()
        if job is None:
            return True
        loop, future, work, args = job
        ok: bool = False
        value: Any = RuntimeError("the session's thread stopped under this call")
        try:
            with self._running_lock:
                self._running = future
            ok, value = True, work(*args)
        except _ResetBudgetExceeded:
            ok, value = False, TimeoutError("stopped at the reset budget")  # its caller has its error already
        except Exception as exc:  # the caller's to handle (openenv sends it as an error frame)
            value = exc
        finally:
            with self._running_lock:
                self._running = None
            try:
                loop.call_soon_threadsafe(_settle, future, ok, value)
            except RuntimeError:  # the loop closed meanwhile: the server is gone
                pass
        return False


class ServedSession:
    """One session's stacked env and what the wire needs of it: the lock, the state, the reset observation.

    The gym env is built at the first ``reset`` (``/metadata`` and ``/schema``
    build a served env per request and never reset it), and refuses every
    call after ``close``.
    """

    def __init__(
        self,
        env_id: str,
        make_kwargs: Mapping[str, Any],
        client_resets: ClientResets | None = None,
        reset_budget_s: float | None = None,
    ) -> None:
        self.env_id = env_id
        self.reset_budget_s = reset_budget_s
        self._make_kwargs = dict(make_kwargs)
        self._client_resets = client_resets
        self._cursor: int | None = None  # the next item, for a session that chose its dataset at reset
        self._env: gym.Env | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._takes_tools = False
        self._answer_format = "tag"  # how an OpenEnv ``{"answer": ...}`` becomes the env's text (models.GymAction)
        self._thread: SessionThread | None = None
        self._thread_lock = threading.Lock()
        self.state = GymState(env_id=env_id)
        self.first: GymObservation | None = None  # what reset returned: the problem, for tools that show it again

    def _open_env(self) -> gym.Env:
        if self._closed:
            raise RuntimeError(_CLOSED)
        if self._env is None:
            self._adopt(make(self.env_id, **self._make_kwargs))
        assert self._env is not None
        return self._env

    def _adopt(self, env: gym.Env) -> None:
        self._env = env
        self._takes_tools = bool(getattr(env.unwrapped, "tools", None))
        self._answer_format = str(getattr(getattr(env.unwrapped, "config", None), "answer_format", "tag"))

    def reset(self, seed: int | None, episode_id: str | None, options: Mapping[str, Any]) -> GymObservation:
        # The new state is built (and so validated) before the env resets: a refused reset changes nothing.
        state = GymState(env_id=self.env_id, episode_id=episode_id or uuid.uuid4().hex, step_count=0)
        options = dict(options)
        request = {key: options.pop(key) for key in CONFIG_KEYS if key in options}
        with self._lock:
            if request:
                self._rebuild(request, seed)
                seed = None  # it seeded the dataset; the first item is item 0, as OpenEnv's server gives it
            env = self._open_env()
            if self._cursor is not None and seed is None and "index" not in options and hasattr(env.unwrapped, "size"):
                # A session that picked its dataset as OpenEnv's client does takes the next item, as there.
                options["index"], self._cursor = self._cursor % env.unwrapped.size, self._cursor + 1
            elif not request:
                self._cursor = None
            try:
                obs, info = env.reset(seed=seed, options=options or None)
            except _ResetBudgetExceeded:
                self.first = None  # stopped mid-reset: no step until a reset completes
                raise
            self.state, self.first = state, public_observation(obs, info)
            return self.first

    def _rebuild(self, request: Mapping[str, Any], seed: int | None) -> None:
        """The session's env rebuilt with the dataset a reset asks for (checked first: a refusal keeps the env)."""
        if self._client_resets is None:
            raise TypeError(
                f"{self.env_id} takes no dataset arguments at reset ({sorted(request)}): its dataset "
                "is the server's (gym-integrity serve --env-kwargs)"
            )
        if self._closed:
            raise RuntimeError(_CLOSED)
        kwargs = {**self._make_kwargs, **self._client_resets.make_kwargs(request, seed)}
        env = make(self.env_id, **kwargs)  # a bad config fails here, naming the option
        if self._env is not None:
            self._env.close()
        self._adopt(env)
        self._make_kwargs, self._cursor = kwargs, 0

    def step(self, action: GymAction) -> GymObservation:
        with self._lock:
            env = self._open_env()
            if self.first is None:
                raise RuntimeError("call reset() before step()")
            if action.tool is not None and not self._takes_tools:
                raise ValueError(f"{self.env_id} takes text actions {{'text': ...}}; it has no tools")
            obs, reward, terminated, truncated, info = env.step(action.to_env_action(self._answer_format))
            self.state.step_count += 1
            self.state.done = bool(terminated or truncated)
            return public_observation(obs, info, float(reward), terminated, truncated)

    def step_text(self, text: str) -> GymObservation:
        """One text step (what a tool that submits an answer does): the stacked env's public observation."""
        return self.step(GymAction(text=text))

    async def run(self, work: Callable[..., Any], *args: Any, budget_s: float | None = None) -> Any:
        """``work(*args)`` on this session's own thread (made at the first call), awaited (within ``budget_s``:
        :meth:`SessionThread.run`)."""
        # Not the session's lock: this runs on the event loop, which must never wait for a grading step.
        with self._thread_lock:
            if self._closed:  # refused here, before it would make a thread no one stops
                raise RuntimeError(_CLOSED)
            if self._thread is None:
                self._thread = SessionThread(f"serve-{self.env_id}")
            thread = self._thread
        return await thread.run(work, *args, budget_s=budget_s)

    def close(self) -> None:
        with self._lock:  # after a step in flight: the env is never closed under a grading call
            self._closed = True
            if self._env is not None:
                self._env.close()
                self._env = None
            with self._thread_lock:
                if self._thread is not None:
                    self._thread.stop()


def _metadata(env_id: str) -> EnvironmentMetadata:
    from gym_integrity import __version__

    entry = env_entry(env_id)
    description = entry.description if entry is not None else f"{env_id}, served with the gym-integrity stack"
    return EnvironmentMetadata(
        name=env_id,
        description=description,
        version=__version__,
        author="gym-integrity",
        documentation_url="https://github.com/gym-integrity/gym-integrity/blob/main/docs/serve.md",
    )


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
    """What both served classes do with their :class:`ServedSession`: reset (on the session's thread), state,
    metadata."""

    session: ServedSession

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        options: Mapping[str, Any] | None = None,
        **reset_options: Any,
    ) -> GymObservation:
        return self.session.reset(seed, episode_id, _reset_options(options, reset_options))

    async def reset_async(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        options: Mapping[str, Any] | None = None,
        **reset_options: Any,
    ) -> GymObservation:
        # openenv-core awaits this instead of running reset on its own executor: item generation (seconds for
        # some datasets) on the session's thread, as every other call of the session.
        # Within the server's budget per reset: a reset past it fails that session's reset only.
        return await self.session.run(
            functools.partial(self.reset, seed, episode_id, options, **reset_options),
            budget_s=self.session.reset_budget_s,
        )

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
    the server answers with an ``EXECUTION_ERROR`` frame. Every ``reset``
    and ``step`` runs on the session's :class:`SessionThread`, never on the
    server's event loop.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True  # each session has its own env; nothing is shared but the grading pools

    def __init__(
        self,
        env_id: str,
        make_kwargs: Mapping[str, Any],
        client_resets: ClientResets | None = None,
        reset_budget_s: float | None = None,
    ) -> None:
        super().__init__()
        self.session = ServedSession(env_id, make_kwargs, client_resets, reset_budget_s)

    def step(self, action: GymAction, timeout_s: float | None = None, **kwargs: Any) -> GymObservation:
        # timeout_s never arrives over the WebSocket; grading budgets are the env's own (docs/serve.md).
        return self.session.step(action)

    async def step_async(self, action: GymAction, timeout_s: float | None = None, **kwargs: Any) -> GymObservation:
        return await self.session.run(self.session.step, action)

    def close(self) -> None:
        self.session.close()

"""One request to the judge's endpoint through the ``openai`` package (the only module that imports it), its faults as JudgeErrors."""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

from gym_integrity.services.judge.config import Endpoint, JudgeConfig
from gym_integrity.services.judge.errors import (
    JudgeConnectionError,
    JudgeError,
    JudgeMalformed,
    JudgeRateLimited,
    JudgeRejected,
    JudgeServerError,
    JudgeTimeout,
)
from gym_integrity.services.judge.parsing import Answer, answer_from_chat, answer_from_responses
from gym_integrity.services.openai_call import fault_kind, retry_after

__all__ = ["Transport"]


class _NoResponsesAPI(Exception):
    """The endpoint has no Responses API (404/405/501 on ``/responses``): fall back to Chat Completions."""


class Transport:
    """Sends a prompt, returns the judge's :class:`Answer`, or raises the JudgeError of what went wrong.

    Thread-safe. The ``openai`` client is built on first use (``import
    gym_integrity`` must not import ``openai``) with ``max_retries=0``: the
    caller retries and counts. ``http_client`` (an ``httpx.Client``, from
    ``httpx2`` for openai >= 3) replaces the network: tests pass one with a
    ``MockTransport`` to run parsing and retries in process.

    With ``api="auto"`` it asks the Responses API and, if the endpoint has
    none, uses Chat Completions from then on.
    """

    def __init__(self, endpoint: Endpoint, config: JudgeConfig, *, http_client: Any = None) -> None:
        self._endpoint = endpoint
        self._config = config
        self._http_client = http_client
        self._lock = threading.Lock()
        self._api = "responses" if config.api == "auto" else config.api
        self._openai: Any = None

    @property
    def api(self) -> str:
        """The API requests use now (``auto`` settles on one at the first request)."""
        with self._lock:
            return self._api

    def open(self) -> Any:
        """The ``openai`` client, built on first use.

        Raises whatever the package raises for a bad URL or key: the caller
        builds it before the first request's deadline starts, and reports it.
        """
        with self._lock:
            if self._openai is not None:
                return self._openai
            import openai  # lazy: `import gym_integrity` must not import it

            # Local servers (vLLM, SGLang) take any key; the package insists on one. It is passed
            # explicitly, like base_url, so the package never falls back to the policy's OPENAI_* values.
            key = self._endpoint.api_key or "EMPTY"
            client = openai.OpenAI(
                base_url=self._endpoint.base_url,
                api_key=key,
                max_retries=0,  # the caller's loop retries, counts and backs off
                timeout=self._config.timeout_s,
                default_headers={**_policy_headers_cancelled(), "Authorization": f"Bearer {key}"},
                http_client=self._http_client or _pooled_http_client(openai, self._config),
            )
            # The package loads its resource modules on first access: do it now, outside any deadline.
            _ = client.models
            self._openai = client
            return client

    def send(self, prompt: str) -> Answer:
        """One request (two when ``auto`` discovers that the Responses API is missing)."""
        try:
            client = self.open()  # built already, unless close() ran since
        except Exception as err:
            raise JudgeConnectionError(f"could not build the judge client ({type(err).__name__})") from err
        try:
            if self.api == "responses":
                try:
                    return self._via_responses(client, prompt)
                except _NoResponsesAPI:
                    with self._lock:
                        self._api = "chat"
            return self._via_chat(client, prompt)
        except JudgeError:
            raise
        except Exception as err:  # named by the one fault table: the package choking on a body is malformed
            raise _judge_error(err, self._config.timeout_s) from err

    # Requests go through the package's generic ``post`` (auth, headers, timeouts, status errors mapped
    # to its exceptions) and the body comes back as text, parsed by parsing.py: under half the client
    # CPU of the typed path (param transforms, pydantic models), which decides throughput when many envs
    # share a GIL, and a malformed body is kept for debugging.

    def _via_responses(self, client: Any, prompt: str) -> Answer:
        import openai

        body: dict[str, Any] = {
            "model": self._endpoint.model,
            "input": prompt,
            "max_output_tokens": self._config.max_output_tokens,
        }
        if self._config.temperature is not None:
            body["temperature"] = self._config.temperature
        try:
            text = client.post("/responses", body=body, cast_to=str)
        except openai.APIStatusError as err:
            if self._config.api == "auto" and err.status_code in (404, 405, 501):
                raise _NoResponsesAPI() from err
            raise
        return answer_from_responses(text)

    def _via_chat(self, client: Any, prompt: str) -> Answer:
        body: dict[str, Any] = {
            "model": self._endpoint.model,
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": self._config.max_output_tokens,
        }
        if self._config.temperature is not None:
            body["temperature"] = self._config.temperature
        return answer_from_chat(client.post("/chat/completions", body=body, cast_to=str))

    def close(self) -> None:
        """Release the HTTP connections (the next request opens new ones)."""
        with self._lock:
            client, self._openai = self._openai, None
        if client is not None and self._http_client is None:  # a caller's http_client is the caller's to close
            client.close()


def _pooled_http_client(openai: Any, config: JudgeConfig) -> Any:
    """The package's default HTTP client with a pool as wide as ``max_concurrency``.

    The package's own pool opens at most 1,000 connections and keeps 100 alive:
    past 1,000 requests in flight the rest wait for a connection (a whole judge
    latency, counted against their deadline), and past 100 every grading step
    reconnects most of its requests. The client's slots already bound what is
    in flight, so the pool holds exactly that many, all kept alive.
    """
    # openai >= 3 is built on httpx2, older releases on httpx: the Limits of the one its client class derives from.
    base = next(c for c in openai.DefaultHttpxClient.__mro__ if c.__name__ == "Client" and c.__module__ != "openai")
    httpx = sys.modules[base.__module__.partition(".")[0]]
    width = config.max_concurrency
    return openai.DefaultHttpxClient(
        limits=httpx.Limits(max_connections=width, max_keepalive_connections=width), timeout=config.timeout_s
    )


def _policy_headers_cancelled() -> dict[str, Any]:
    """Headers that cancel what the openai package would add from the policy's OPENAI_* variables.

    The package reads OPENAI_ORG_ID, OPENAI_PROJECT_ID and OPENAI_CUSTOM_HEADERS on
    its own; they belong to the policy's endpoint and must not reach the judge's.
    ``Omit()`` removes a header; an explicit Authorization (set by the caller)
    already displaces one from OPENAI_CUSTOM_HEADERS.
    """
    from openai import Omit

    cancelled: dict[str, Any] = {"OpenAI-Organization": Omit(), "OpenAI-Project": Omit()}
    for line in os.environ.get("OPENAI_CUSTOM_HEADERS", "").split("\n"):
        name, colon, _ = line.partition(":")
        if colon and name.strip() and name.strip().lower() != "authorization":
            cancelled[name.strip()] = Omit()
    return cancelled


def _body(err: Any) -> str | None:
    try:
        return err.response.text
    except Exception:
        return None


def _judge_error(err: Exception, timeout_s: float) -> JudgeError:
    """The JudgeError of a fault, by its kind in :mod:`gym_integrity.services.openai_call`.

    A status error's body stays out of the message (a server may echo the
    request, reference solution included); the privileged judge_output keeps it.
    """
    kind = fault_kind(err)
    status: int = getattr(err, "status_code", 0)  # the status error's code, for the kinds that have one
    if kind == "timeout":
        return JudgeTimeout(f"HTTP timeout after {timeout_s:g} s")
    if kind == "rate_limited":
        return JudgeRateLimited(status, retry_after=retry_after(err), body=_body(err))
    if kind == "server_error":
        return JudgeServerError(status, body=_body(err))
    if kind == "rejected":
        return JudgeRejected(status, body=_body(err))
    if kind == "connection":
        return JudgeConnectionError(f"connection failed ({type(err.__cause__ or err).__name__})")
    return JudgeMalformed(f"malformed response ({type(err).__name__})")

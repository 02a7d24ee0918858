"""A ready policy for rollouts: a model behind an OpenAI-compatible endpoint (vLLM, SGLang, a hosted API).

:class:`ChatClient` asks the endpoint one chat turn at a time, its faults retried, then named;
:class:`EndpointPolicy` is the policy a rollout calls with a batch of conversations.
"""

from __future__ import annotations

import asyncio
import json
import random
import ssl
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gym_integrity.exceptions import PolicyError, ToolsUnsupported
from gym_integrity.services.openai_call import backoff_s, fault_kind, is_retryable, retry_after

__all__ = ["ChatClient", "ChatReply", "EndpointPolicy", "PolicyError", "ToolsUnsupported"]

#: Connections per client pool (see ChatClient.__init__).
_LANE_WIDTH = 4
#: The longest wait between two attempts, Retry-After included.
_MAX_BACKOFF_S = 60.0


@dataclass
class ChatReply:
    """One assistant turn: its text, its native tool calls (name, JSON arguments, id), tokens, seconds."""

    content: str
    tool_calls: list[dict[str, str]] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int | None = 0
    latency_s: float = 0.0
    truncated: bool = False


class ChatClient:
    """An OpenAI-compatible chat endpoint, asked with the async client (``max_retries=0``: the retries are ours).

    Faults the server may recover from (429, honouring ``retry-after``; 5xx;
    timeouts; dropped connections; a malformed body) are retried with
    exponential backoff and jitter up to ``max_retries`` times, then raised as
    :class:`PolicyError`; a 4xx other than 429 is raised at once.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None,
        *,
        temperature: float | None,
        max_tokens: int | None,
        timeout_s: float = 120.0,
        max_retries: int = 4,
        backoff_s: float = 0.5,
        concurrency: int = 8,
        max_reply_chars: int = 1_000_000,
        http_client: Any = None,
    ) -> None:
        import openai

        self._openai = openai
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self._rng = random.Random()
        self.timeout_s = timeout_s
        self.max_reply_chars = max_reply_chars
        if http_client is not None:
            clients = [http_client]
        else:
            # Lanes of at most _LANE_WIDTH connections, one client each: httpcore checks every pooled connection
            # on each request, so one pool of 64 spends more CPU per request than the request itself (measured:
            # a 64-way eval reached 0.59 of its latency bound with one pool).
            try:
                import httpx2 as httpx  # what openai >= 3 is built on
            except ImportError:  # openai < 3
                import httpx  # type: ignore[no-redef]  # the older client's module, under the same name

            lanes = max(1, -(-concurrency // _LANE_WIDTH))
            width = -(-concurrency // lanes)
            limits = httpx.Limits(max_connections=width, max_keepalive_connections=width)
            tls = ssl.create_default_context()  # one for all lanes: loading the CA store costs ~40 ms per client
            clients = [
                openai.DefaultAsyncHttpxClient(limits=limits, timeout=timeout_s, verify=tls) for _ in range(lanes)
            ]
        self._clients = [
            openai.AsyncOpenAI(
                base_url=base_url, api_key=api_key or "EMPTY", max_retries=0, timeout=timeout_s, http_client=client
            )
            for client in clients
        ]

    async def close(self) -> None:
        for client in self._clients:
            await client.close()

    async def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, *, lane: int = 0
    ) -> ChatReply:
        """One assistant turn for ``messages``; raises :class:`ToolsUnsupported` or :class:`PolicyError`.

        ``lane``: which connection pool (a worker keeps one, so its connection stays warm)."""
        openai = self._openai
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages}
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if self.max_tokens is not None:
            kwargs["max_tokens"] = self.max_tokens
        if tools:
            kwargs["tools"] = tools
        attempt = 0
        while True:
            start = time.perf_counter()
            try:
                # client.post, not chat.completions.create: the same request, but create() first walks the params
                # through openai's TypedDict transform (about 1 ms of CPU a request, the eval's largest cost at
                # 64-way concurrency) and builds pydantic models of the answer; plain JSON in and out is enough.
                # wait_for: the client's timeout bounds each read, not the request, so a server dripping one byte
                # at a time (or a body that never ends) would hold the episode forever.
                response = await asyncio.wait_for(
                    self._clients[lane % len(self._clients)].post("/chat/completions", body=kwargs, cast_to=object),
                    self.timeout_s,
                )
                return self._reply(response, time.perf_counter() - start, self.max_reply_chars)
            except openai.BadRequestError as exc:
                if tools and "tool" in str(exc).lower():
                    raise ToolsUnsupported(str(exc)) from exc
                raise PolicyError("rejected", _short(exc)) from exc
            except Exception as exc:  # noqa: BLE001 - named by the one fault table (services/openai_call): anything
                # unknown in the answer (bad JSON, deep nesting, wrong types, infinities) is the server's malformed
                # reply, retried, then a policy error, never a crash
                kind = fault_kind(exc)
                if not is_retryable(kind):  # a 4xx: the request itself is refused
                    raise PolicyError(kind, _short(exc)) from exc
                wait = retry_after(exc) if kind == "rate_limited" else None
                why = (
                    f"{type(exc).__name__}: {_short(exc)}"
                    if kind == "malformed"
                    else _short(exc) or f"no complete answer within {self.timeout_s} s"
                )
            attempt += 1
            if attempt > self.max_retries:
                raise PolicyError(kind, why)
            await asyncio.sleep(
                backoff_s(attempt, base_s=self.backoff_s, cap_s=_MAX_BACKOFF_S, rng=self._rng, retry_after=wait)
            )

    @staticmethod
    def _reply(response: Any, latency_s: float, max_chars: int) -> ChatReply:
        """The turn out of a chat completion's JSON; anything malformed raises (and is retried as ``malformed``).

        Text past ``max_chars`` is cut there (``truncated``): the env would refuse it anyway, and a conversation
        resending a 50 MB reply every turn would grow without bound. Token counts outside ``[0, 1e9]`` are
        ignored (``None``): the caller then estimates them from the text.
        """
        message = response["choices"][0]["message"]
        truncated = False
        calls = []
        for call in message.get("tool_calls") or []:
            function = call["function"]
            arguments = function.get("arguments") or "{}"
            if not isinstance(arguments, str):  # some servers send an object, not the JSON string OpenAI sends
                arguments = json.dumps(arguments)
            if len(arguments) > max_chars:
                arguments, truncated = arguments[:max_chars], True
            calls.append(
                {
                    "id": str(call.get("id") or "")[:200],
                    "name": str(function.get("name") or "")[:200],
                    "arguments": arguments,
                }
            )
        content = message.get("content") or ""
        if not isinstance(content, str):
            raise TypeError(f"message content is {type(content).__name__}, not a string")
        if len(content) > max_chars:
            content, truncated = content[:max_chars], True
        usage = response.get("usage") or {}
        return ChatReply(
            content=content,
            tool_calls=calls,
            prompt_tokens=_count(usage.get("prompt_tokens")) or 0,
            completion_tokens=_count(usage.get("completion_tokens")),
            latency_s=latency_s,
            truncated=truncated,
        )


def _count(value: Any) -> int | None:
    """A token count the server reported, if it is a plain int in [0, 1e9] (a bool, a float, NaN, 1e400 are not)."""
    return value if type(value) is int and 0 <= value <= 10**9 else None


def _short(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]


class EndpointPolicy:
    """An async batched policy: each conversation is one chat request, all sent at once.

    Faults are retried with backoff by :class:`ChatClient`,
    then returned as that conversation's error (its episode stops as it stands).
    Tool envs get native function calling; a server that refuses ``tools`` is
    asked again without them, and from then on the model writes ``<tool_call>``
    text (``tools="auto"``; ``"native"`` and ``"text"`` force one way).

    Example (not run here: it needs a server)::

        policy = EndpointPolicy("http://127.0.0.1:8000/v1", "my-model", max_tokens=512)
        episodes = await acollect(envs, policy, seeds=[0, 0, 1, 1])
        await policy.close()
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        timeout_s: float = 120.0,
        max_retries: int = 4,
        backoff_s: float = 0.5,
        concurrency: int = 8,
        tools: str = "auto",
        http_client: Any = None,
    ) -> None:
        if tools not in ("auto", "native", "text"):
            raise ValueError(f"EndpointPolicy.tools must be 'auto', 'native' or 'text', got {tools!r}")
        self.client = ChatClient(
            base_url,
            model,
            api_key,
            temperature=temperature,
            max_tokens=max_tokens,
            timeout_s=timeout_s,
            max_retries=max_retries,
            backoff_s=backoff_s,
            concurrency=concurrency,
            http_client=http_client,
        )
        self.tools_mode = tools
        self.native_tools = tools != "text"

    async def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, lane: int = 0
    ) -> Any:
        """One turn for one conversation (a :class:`ChatReply`), with the native-tools fallback."""
        if tools and self.native_tools:
            try:
                return await self.client.complete(messages, tools, lane=lane)
            except ToolsUnsupported:
                if self.tools_mode == "native":
                    raise PolicyError("rejected", "the server refuses native tools (--tools native)") from None
                self.native_tools = False  # no function calling here: tool calls go as <tool_call> text
        return await self.client.complete(messages, lane=lane)

    async def __call__(
        self, conversations: Sequence[list[dict[str, Any]]], tools: Sequence[Any] | None = None
    ) -> list[Any]:
        tools = list(tools) if tools is not None else [None] * len(conversations)
        return list(
            await asyncio.gather(
                *(self.complete(m, t, lane=i) for i, (m, t) in enumerate(zip(conversations, tools))),
                return_exceptions=True,
            )
        )

    async def close(self) -> None:
        await self.client.close()

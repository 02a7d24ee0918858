"""A ready policy for rollouts: a model behind an OpenAI-compatible endpoint (vLLM, SGLang, a hosted API)."""

from __future__ import annotations

import asyncio
from typing import Any, Sequence

__all__ = ["EndpointPolicy"]


class EndpointPolicy:
    """An async batched policy: each conversation is one chat request, all sent at once.

    Faults are retried with backoff by the eval's client (``gym_integrity.eval.policy``),
    then returned as that conversation's error (its episode stops as it stands).
    Tool envs get native function calling; a server that refuses ``tools`` is
    asked again without them, and from then on the model writes ``<tool_call>``
    text (``tools="auto"``; ``"native"`` and ``"text"`` force one way).

    Example (not run here: it needs a server)::

        policy = EndpointPolicy("http://127.0.0.1:8000/v1", "my-model", max_tokens=512)
        episodes = await acollect(envs, policy, seeds=[0, 0, 1, 1])
        await policy.close()
    """

    def __init__(self, base_url: str, model: str, api_key: str | None = None, *, temperature: float | None = None,
                 max_tokens: int | None = None, timeout_s: float = 120.0, max_retries: int = 4,
                 backoff_s: float = 0.5, concurrency: int = 8, tools: str = "auto", http_client: Any = None) -> None:
        import gym_integrity.eval.policy as client  # lazy: eval imports the rollout

        if tools not in ("auto", "native", "text"):
            raise ValueError(f"EndpointPolicy.tools must be 'auto', 'native' or 'text', got {tools!r}")
        self._client_module = client
        self.client = client.EvaluatedModel(base_url, model, api_key, temperature=temperature, max_tokens=max_tokens,
                                    timeout_s=timeout_s, max_retries=max_retries, backoff_s=backoff_s,
                                    concurrency=concurrency, http_client=http_client)
        self.tools_mode = tools
        self.native_tools = tools != "text"

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
                       lane: int = 0) -> Any:
        """One turn for one conversation (eval's reply object), with the native-tools fallback."""
        client = self._client_module
        if tools and self.native_tools:
            try:
                return await self.client.complete(messages, tools, lane=lane)
            except client.ToolsUnsupported:
                if self.tools_mode == "native":
                    raise client.PolicyError("rejected", "the server refuses native tools (--tools native)") from None
                self.native_tools = False  # no function calling here: tool calls go as <tool_call> text
        return await self.client.complete(messages, lane=lane)

    async def __call__(self, conversations: Sequence[list[dict[str, Any]]],
                       tools: Sequence[Any] | None = None) -> list[Any]:
        tools = list(tools) if tools is not None else [None] * len(conversations)
        return list(await asyncio.gather(*(self.complete(m, t, lane=i) for i, (m, t) in
                                           enumerate(zip(conversations, tools))), return_exceptions=True))

    async def close(self) -> None:
        await self.client.close()

"""Server-sent events for a ``stream=true`` chat completion, framed as OpenAI frames them.

:func:`chat_chunks` turns a whole ``chat.completion`` payload (what the test
server answers without ``stream``) into the ``chat.completion.chunk`` objects
OpenAI sends for it; :func:`sse_events` frames them as ``data: {chunk}`` lines
ending with ``data: [DONE]``. Per choice: a first delta with the role (and
``content: ""``), the text in word-sized pieces or each tool call as a delta with
its ``id``, ``type`` and ``name`` followed by its ``arguments`` in pieces, then an
empty delta with the ``finish_reason``. With ``stream_options.include_usage``
every chunk carries ``usage: null`` and one more chunk, with no choices, carries
the usage; without it no chunk has a ``usage`` key. Reassembling the deltas
gives back the whole completion's messages exactly.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["chat_chunks", "sse_events", "wants_usage", "MALFORMED_EVENT"]

#: What mode ``malformed`` sends to a streaming client: one event whose JSON is cut off, then the body ends
#: (``openai`` raises the ``json.JSONDecodeError`` as is, as for a whole answer).
MALFORMED_EVENT = b'data: {"id": "chatcmpl-broken", "object": "chat.completion.chunk", "choices": [{"del\n\n'

_PIECE_RE = re.compile(r"\s*\S+\s*|\s+")  # a word with the spaces around it: the pieces join back exactly
_ARGUMENT_PIECE = 16  # characters of a tool call's arguments per delta


def wants_usage(body: Any) -> bool:
    """The request asked for a usage chunk (``stream_options: {"include_usage": true}``)."""
    options = body.get("stream_options") if isinstance(body, dict) else None
    return isinstance(options, dict) and bool(options.get("include_usage"))


def chat_chunks(payload: dict[str, Any], include_usage: bool = False) -> list[dict[str, Any]]:
    """The chunks OpenAI streams for the whole ``chat.completion`` ``payload``."""
    base = {
        "id": payload["id"],
        "object": "chat.completion.chunk",
        "created": payload["created"],
        "model": payload["model"],
    }
    if include_usage:
        base["usage"] = None

    def chunk(index: int, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": index, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]}

    chunks = []
    for choice in payload["choices"]:
        index, message = choice["index"], choice["message"]
        chunks.append(chunk(index, {"role": "assistant", "content": ""}))
        chunks.extend(chunk(index, {"content": piece}) for piece in _PIECE_RE.findall(message.get("content") or ""))
        for position, call in enumerate(message.get("tool_calls") or []):
            function = call["function"]
            chunks.append(
                chunk(
                    index,
                    {
                        "tool_calls": [
                            {
                                "index": position,
                                "id": call["id"],
                                "type": call["type"],
                                "function": {"name": function["name"], "arguments": ""},
                            }
                        ]
                    },
                )
            )
            arguments = function["arguments"]
            chunks.extend(
                chunk(index, {"tool_calls": [{"index": position, "function": {"arguments": piece}}]})
                for piece in (arguments[i : i + _ARGUMENT_PIECE] for i in range(0, len(arguments), _ARGUMENT_PIECE))
            )
        chunks.append(chunk(index, {}, choice["finish_reason"]))
    if include_usage:
        chunks.append({**base, "choices": [], "usage": payload["usage"]})
    return chunks


def sse_events(chunks: list[dict[str, Any]]) -> list[bytes]:
    """Each chunk as one ``data: {json}`` event, then ``data: [DONE]``."""
    return [b"data: " + json.dumps(c, ensure_ascii=False).encode("utf-8") + b"\n\n" for c in chunks] + [
        b"data: [DONE]\n\n"
    ]

"""The request side of the local OpenAI-compatible server: what one request to it gets back, by mode.

:class:`~gym_integrity.openai_stub.judge_server.JudgeServer` owns the state (the
script queue, faults, latency, recording); ``_Handler`` reads it from
``self.server.owner`` and answers one request as the judge or as the policy; a
chat request with ``stream: true`` gets the same answer as server-sent events
(:mod:`gym_integrity.openai_stub.chat_stream`).
"""

from __future__ import annotations

import json
import os
import re
import socket
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from gym_integrity.openai_stub.chat_stream import MALFORMED_EVENT, chat_chunks, sse_events, wants_usage
from gym_integrity.openai_stub.judge_answers import (
    WRONG_ANSWER,
    PolicyReply,
    answer_text,
    check_policy,
    leak_text,
    stub_points,
    wrong_text,
)

__all__ = ["MODES", "POLICY_MODES", "RecordedRequest", "write_policy"]

MODES = (
    "stub",
    "score",
    "echo",
    "no_tag",
    "bad_score",
    "empty",
    "429",
    "500",
    "404",
    "malformed",
    "drop",
    "hang",
    "leak",
    "policy",
    "wrong",
)

#: The modes that play the policy model rather than the judge.
POLICY_MODES = ("policy", "wrong")

#: vLLM's answer to a tools request when it was started without ``--enable-auto-tool-choice``.
_NO_NATIVE_TOOLS = (
    '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set '
    "(test server started with native_tools=False)"
)

_SCORE_RE = re.compile(r"<score>\s*([0-9]+)\s*</score>", re.IGNORECASE)


@dataclass
class RecordedRequest:
    """One request the server received."""

    path: str
    body: Any
    prompt: str
    behaviour: str
    received_at: float = field(default_factory=time.monotonic)
    headers: dict[str, str] = field(default_factory=dict)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the openai client pools connections
    server: Any  # judge_server._Server: its ``owner`` is the JudgeServer whose state this handler reads

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in two writes; without NODELAY, Nagle and the client's delayed
        # ACK add ~40 ms to every answer (real servers such as uvicorn set it too).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - signature of the base class
        if self.server.owner.verbose:
            super().log_message(format, *args)

    # -- plumbing

    def _header_dict(self) -> dict[str, str]:
        # Names lowercased: HTTP header names are case-insensitive, and clients differ in how they send them.
        return {name.lower(): value for name, value in self.headers.items()}

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(payload).encode("utf-8"), headers)

    def _send_raw(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (deadline): nothing to do

    def _send_events(self, events: list[bytes]) -> None:
        """A 200 ``text/event-stream`` answer, one write per event (its length known, so keep-alive holds)."""
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Content-Length", str(sum(len(e) for e in events)))
            self.end_headers()
            for event in events:
                self.wfile.write(event)
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client stopped reading: nothing to do

    def _error(
        self,
        status: int,
        message: str,
        headers: dict[str, str] | None = None,
        *,
        error_type: str = "test_judge",
        param: str | None = None,
    ) -> None:
        error = {"message": message, "type": error_type, "code": status}
        if param is not None:
            error["param"] = param
        self._send_json(status, {"error": error}, headers)

    # -- routes

    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        owner = self.server.owner
        owner._record(RecordedRequest(self.path, None, "", "get", headers=self._header_dict()))
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            self._send_json(
                200,
                {
                    "object": "list",
                    "data": [{"id": owner.model, "object": "model", "created": 0, "owned_by": "gym-integrity"}],
                },
            )
        elif self.path.rstrip("/") in ("/health", "/v1/health"):
            self._send_json(200, {"status": "ok"})
        else:
            self._error(404, f"no route {self.path}")

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = self.path.split("?")[0].rstrip("/")
        kind = {
            "/v1/responses": "responses",
            "/responses": "responses",
            "/v1/chat/completions": "chat",
            "/chat/completions": "chat",
        }.get(path)
        if kind is None or kind not in owner.apis:
            owner._record(RecordedRequest(path, None, "", "404", headers=self._header_dict()))
            self._error(404, f"no route {path}")
            return
        try:
            body = json.loads(raw or b"{}")
            prompt = _prompt_of(kind, body)
        except (ValueError, TypeError, AttributeError):
            self._error(400, "request body is not the expected JSON")
            return
        if kind == "responses" and body.get("stream"):
            owner._record(RecordedRequest(path, body, prompt, "400:stream", headers=self._header_dict()))
            self._error(
                400,
                "stream=true is supported on /v1/chat/completions only (test server)",
                error_type="BadRequestError",
                param="stream",
            )
            return
        if not owner.native_tools and _wants_native_tools(body):
            owner._record(RecordedRequest(path, body, prompt, "400:tools", headers=self._header_dict()))
            self._error(400, _NO_NATIVE_TOOLS, error_type="BadRequestError", param="tools")
            return
        behaviour = owner._next_behaviour()
        owner._record(RecordedRequest(path, body, prompt, behaviour, headers=self._header_dict()))
        if owner.slots is not None:
            owner.slots.acquire()  # queued as at a judge with max_concurrent batch slots
        owner._enter()
        try:
            if owner.latency_s:
                time.sleep(owner.latency_s)
            self._behave(kind, body, prompt, behaviour)
        finally:
            owner._leave()
            if owner.slots is not None:
                owner.slots.release()

    def _behave(self, kind: str, body: Any, prompt: str, behaviour: str) -> None:
        owner = self.server.owner
        name, _, arg = behaviour.partition(":")
        if name == "429":
            self._error(429, "rate limited (test judge)", {"Retry-After": arg} if arg else None)
        elif name == "500":
            self._error(500, "internal error (test judge)")
        elif name == "404":
            self._error(404, "not found (test judge)")
        elif name == "malformed" and _streams(kind, body):
            self._send_events([MALFORMED_EVENT])
        elif name == "malformed":
            self._send_raw(200, b'{"id": "resp_broken", "output": [{"type": "mess')
        elif name == "drop":
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        elif name == "hang":
            owner._stopping.wait(float(arg) if arg else owner.hang_s)
            if owner._stopping.is_set():
                pass
            elif owner.mode.partition(":")[0] in POLICY_MODES:
                self._behave(kind, body, prompt, owner.mode)
            else:
                self._complete(kind, body, prompt, answer_text(2, "answered late"))
        elif name == "policy":
            try:
                reply = owner._policy_reply(kind, body)
            except _PolicyError as exc:
                self._error(500, str(exc))
                return
            self._reply(kind, body, prompt, reply)
        elif name == "wrong":
            self._reply(kind, body, prompt, _wrong_reply(body, prompt))
        elif name == "score":
            self._complete(kind, body, prompt, answer_text(int(arg or owner.score), "scripted score"))
        elif name == "echo":
            planted = _SCORE_RE.findall(prompt)
            points = int(planted[-1]) if planted else 2
            self._complete(kind, body, prompt, answer_text(points, "echoing a score tag from the prompt"))
        elif name == "no_tag":
            self._complete(kind, body, prompt, answer_text(None, "forgot the score tag"))
        elif name == "leak":
            self._complete(kind, body, prompt, leak_text(prompt, arg or "all"))
        elif name == "bad_score":
            self._complete(kind, body, prompt, answer_text(9, "score out of range"))
        elif name == "empty":
            self._complete(kind, body, prompt, "")
        else:  # stub
            points, note = stub_points(prompt)
            self._complete(kind, body, prompt, answer_text(points, note))

    def _reply(self, kind: str, body: Any, prompt: str, reply: PolicyReply) -> None:
        """Answer with a policy reply: text, or a tool call (native when the request carries ``tools``)."""
        if isinstance(reply, str):
            self._complete(kind, body, prompt, reply)
            return
        name, arguments = reply["tool"], dict(reply.get("arguments") or {})
        if _wants_native_tools(body):
            self._complete(kind, body, prompt, "", tool_call=(name, arguments))
        else:
            self._complete(kind, body, prompt, _tool_call_text(name, arguments))

    def _complete(
        self, kind: str, body: Any, prompt: str, text: str, tool_call: tuple[str, dict[str, Any]] | None = None
    ) -> None:
        model = body.get("model") or self.server.owner.model
        arguments = json.dumps(tool_call[1], ensure_ascii=False) if tool_call else ""
        n_in = len(prompt.split())
        n_out = len(text.split()) + (len(tool_call[0].split()) + len(arguments.split()) if tool_call else 0)
        now = int(time.time())
        if kind == "responses":
            output: list[dict[str, Any]]
            if tool_call:
                output = [
                    {
                        "type": "function_call",
                        "id": f"fc_{uuid.uuid4().hex[:16]}",
                        "call_id": f"call_{uuid.uuid4().hex[:24]}",
                        "name": tool_call[0],
                        "arguments": arguments,
                        "status": "completed",
                    }
                ]
            else:
                output = [
                    {
                        "type": "message",
                        "id": f"msg_{uuid.uuid4().hex[:16]}",
                        "role": "assistant",
                        "status": "completed",
                        "content": [{"type": "output_text", "text": text, "annotations": []}],
                    }
                ]
            payload = {
                "id": f"resp_{uuid.uuid4().hex[:16]}",
                "object": "response",
                "created_at": now,
                "model": model,
                "status": "completed",
                "parallel_tool_calls": False,
                "tool_choice": "auto",
                "tools": [],
                "output": output,
                "usage": {
                    "input_tokens": n_in,
                    "output_tokens": n_out,
                    "total_tokens": n_in + n_out,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens_details": {"reasoning_tokens": 0},
                },
            }
        else:
            n = body.get("n")
            n = n if isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= 128 else 1
            choices = []
            for index in range(n):
                if tool_call:
                    message: dict[str, Any] = {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": f"call_{uuid.uuid4().hex[:24]}",
                                "type": "function",
                                "function": {"name": tool_call[0], "arguments": arguments},
                            }
                        ],
                    }
                else:
                    message = {"role": "assistant", "content": text}
                choices.append(
                    {
                        "index": index,
                        "message": message,
                        "finish_reason": "tool_calls" if tool_call else "stop",
                        "logprobs": None,
                    }
                )
            payload = {
                "id": f"chatcmpl-{uuid.uuid4().hex[:16]}",
                "object": "chat.completion",
                "created": now,
                "model": model,
                "choices": choices,
                "usage": {"prompt_tokens": n_in, "completion_tokens": n * n_out, "total_tokens": n_in + n * n_out},
            }
        if _streams(kind, body):
            self._send_events(sse_events(chat_chunks(payload, wants_usage(body))))
        else:
            self._send_json(200, payload)


def _streams(kind: str, body: Any) -> bool:
    """A chat request asking for server-sent events (``stream: true``)."""
    return kind == "chat" and bool(body.get("stream"))


def _prompt_of(kind: str, body: Any) -> str:
    """The prompt text of a request: Responses ``input`` (str or messages) or Chat ``messages``."""
    items = body.get("input") if kind == "responses" else body.get("messages")
    if isinstance(items, str):
        return items
    parts: list[str] = []
    for message in items or []:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "\n".join(parts)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _conversation_of(kind: str, body: Any) -> tuple[str, int]:
    """The first user message's text and the number of assistant turns already in the conversation."""
    items = body.get("input") if kind == "responses" else body.get("messages")
    if isinstance(items, str):
        return items, 0
    first_user: str | None = None
    n_assistant = 0
    for item in items or []:
        if not isinstance(item, dict):
            continue
        if item.get("role") == "assistant" or item.get("type") == "function_call":
            n_assistant += 1
        elif item.get("role") == "user" and first_user is None:
            first_user = _content_text(item.get("content"))
    return first_user or "", n_assistant


def _wants_native_tools(body: Any) -> bool:
    """The request carries ``tools`` and lets the model call them (``tool_choice`` is not ``"none"``)."""
    return bool(body.get("tools")) and body.get("tool_choice") != "none"


def _tool_names(body: Any) -> set[str]:
    names = set()
    for tool in body.get("tools") or []:
        if isinstance(tool, dict):
            function = tool.get("function")
            name = function.get("name") if isinstance(function, dict) else tool.get("name")  # chat / responses
            if isinstance(name, str):
                names.add(name)
    return names


def _tool_call_text(name: str, arguments: Mapping[str, Any]) -> str:
    """A tool call as text, the form our tool envs parse: ``<tool_call>{"name": ..., "arguments": ...}</tool_call>``."""
    return "<tool_call>" + json.dumps({"name": name, "arguments": dict(arguments)}, ensure_ascii=False) + "</tool_call>"


def _wrong_reply(body: Any, prompt: str) -> PolicyReply:
    """The ``wrong`` policy's reply: a ``submit_answer`` tool call when offered natively, else :func:`wrong_text`."""
    if _wants_native_tools(body) and "submit_answer" in _tool_names(body):
        return {"tool": "submit_answer", "arguments": {"answer": WRONG_ANSWER}}
    return wrong_text(tool_call="submit_answer" in prompt or "submit_answer" in _tool_names(body))


class _PolicyError(Exception):
    """The policy file cannot be used (missing, not JSON, not a valid mapping): answered as HTTP 500."""


class _PolicyFile:
    """The ``policy`` mapping, re-read from its file whenever the file's mtime, size or inode change."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        self._key: tuple[int, int, int] | None = None
        self._mapping: dict[str, Any] = {}

    def mapping(self) -> dict[str, Any]:
        try:
            st = os.stat(self.path)
            key = (st.st_mtime_ns, st.st_size, st.st_ino)
            with self._lock:  # held for a small file's read only, never during latency
                if key != self._key:
                    with open(self.path, encoding="utf-8") as f:
                        self._mapping = check_policy(json.load(f))
                    self._key = key
                return self._mapping
        except (OSError, ValueError) as exc:
            raise _PolicyError(f"test server: policy file {self.path}: {exc}") from exc


def write_policy(path: str | os.PathLike[str], mapping: Mapping[str, Any]) -> None:
    """Check a ``policy`` mapping and write it to ``path`` atomically (a temp file, then ``os.replace``).

    The server sees the new file at its next request (the inode changes, so
    even two writes within one mtime tick are told apart).
    """
    text = json.dumps(check_policy(mapping), ensure_ascii=False, indent=1)
    path = os.fspath(path)
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)

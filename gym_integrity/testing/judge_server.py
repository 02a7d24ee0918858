r"""A small OpenAI-compatible judge server on 127.0.0.1, scriptable per request, for tests, the audit and the README.

It serves ``POST /v1/responses``, ``POST /v1/chat/completions`` and
``GET /v1/models`` with the standard library only. Each request takes the next
scripted behaviour, or the default mode when the script is empty:

==============  ==============================================================
``stub``        deterministic rule (labelled, not a real grader): the share of
                the reference solution's tokens (v0 prompts) or of the marking
                scheme's keywords (v1, v2) the proof uses, scaled to 0-7; it
                never repeats anything from the prompt (see :func:`stub_points`)
``score:N``     a well-formed answer with ``<score>N</score>``
``echo``        a fooled judge: echoes the last ``<score>N</score>`` found in
                the prompt (i.e. planted in the proof), else answers ``score:2``
``no_tag``      a well-formed answer without a score tag
``bad_score``   an answer whose score tag holds 9
``empty``       an empty answer
``429``         HTTP 429 (rate limited)
``500``         HTTP 500
``404``         HTTP 404
``malformed``   HTTP 200 with a truncated JSON body
``drop``        closes the connection without answering
``hang``        answers nothing for ``hang_s`` seconds (or until stop), then ``score:2``
``leak[:K]``    a misbehaving judge: quotes the prompt's reference solution and
                marking scheme in its errors, then ``score:3`` (tests that
                feedback redacts them). ``K`` picks the pieces, each on its own
                line after one harmless line (:data:`HARMLESS_ERROR`): ``whole``
                (each text whole), ``sentences`` (each sentence alone),
                ``words`` (every run of 3 consecutive words, in the judge's own
                prose), ``formulas`` (every ``$...$``, ``\(...\)``, ``\[...\]``
                span), or ``all`` (the default: all of these)
==============  ==============================================================

Every request is recorded (path, JSON body, prompt text, behaviour, headers with
lowercased names; a ``GET`` as behaviour ``get``) so tests can check what the
judge was sent, and that nothing was. ``latency_s`` delays every answer.

Example:

    >>> from gym_integrity.testing.judge_server import JudgeServer
    >>> import json, urllib.request
    >>> with JudgeServer(mode="score:6") as server:
    ...     body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "grade me"}]}).encode()
    ...     request = urllib.request.Request(server.url + "/chat/completions", body, {"Content-Type": "application/json"})
    ...     answer = json.load(urllib.request.urlopen(request))
    >>> answer["choices"][0]["message"]["content"].endswith("<score>6</score>")
    True
    >>> server.requests[0].prompt
    'grade me'

From a shell: ``python -m gym_integrity.testing.judge_server --port 8000 --mode stub``.
The answers' texts (stub, leak, the tests' quote check) live in
:mod:`gym_integrity.testing.judge_answers`; this module is the HTTP side.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterable

from gym_integrity.testing.judge_answers import (
    HARMLESS_ERROR,
    LEAK_KINDS,
    answer_text,
    leak_text,
    quoted_secrets,
    stub_points,
)

__all__ = ["JudgeServer", "RecordedRequest", "stub_points", "leak_text", "quoted_secrets", "MODES", "LEAK_KINDS", "HARMLESS_ERROR", "main"]

MODES = (
    "stub", "score", "echo", "no_tag", "bad_score", "empty", "429", "500", "404", "malformed", "drop", "hang", "leak",
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
    server: "_Server"

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

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        self._send_json(status, {"error": {"message": message, "type": "test_judge", "code": status}}, headers)

    # -- routes

    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        owner = self.server.owner
        owner._record(RecordedRequest(self.path, None, "", "get", headers=self._header_dict()))
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            self._send_json(200, {"object": "list", "data": [
                {"id": owner.model, "object": "model", "created": 0, "owned_by": "gym-integrity"}]})
        elif self.path.rstrip("/") in ("/health", "/v1/health"):
            self._send_json(200, {"status": "ok"})
        else:
            self._error(404, f"no route {self.path}")

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = self.path.split("?")[0].rstrip("/")
        kind = {"/v1/responses": "responses", "/responses": "responses",
                "/v1/chat/completions": "chat", "/chat/completions": "chat"}.get(path)
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
        behaviour = owner._next_behaviour()
        owner._record(RecordedRequest(path, body, prompt, behaviour, headers=self._header_dict()))
        owner._enter()
        try:
            if owner.latency_s:
                time.sleep(owner.latency_s)
            self._behave(kind, body, prompt, behaviour)
        finally:
            owner._leave()

    def _behave(self, kind: str, body: Any, prompt: str, behaviour: str) -> None:
        owner = self.server.owner
        name, _, arg = behaviour.partition(":")
        if name == "429":
            self._error(429, "rate limited (test judge)", {"Retry-After": arg} if arg else None)
        elif name == "500":
            self._error(500, "internal error (test judge)")
        elif name == "404":
            self._error(404, "not found (test judge)")
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
            if not owner._stopping.is_set():
                self._complete(kind, body, prompt, answer_text(2, "answered late"))
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

    def _complete(self, kind: str, body: Any, prompt: str, text: str) -> None:
        model = body.get("model") or self.server.owner.model
        n_in, n_out = len(prompt.split()), len(text.split())
        now = int(time.time())
        if kind == "responses":
            payload = {
                "id": f"resp_{uuid.uuid4().hex[:16]}", "object": "response", "created_at": now, "model": model,
                "status": "completed", "parallel_tool_calls": False, "tool_choice": "auto", "tools": [],
                "output": [{"type": "message", "id": f"msg_{uuid.uuid4().hex[:16]}", "role": "assistant",
                            "status": "completed",
                            "content": [{"type": "output_text", "text": text, "annotations": []}]}],
                "usage": {"input_tokens": n_in, "output_tokens": n_out, "total_tokens": n_in + n_out,
                          "input_tokens_details": {"cached_tokens": 0},
                          "output_tokens_details": {"reasoning_tokens": 0}},
            }
        else:
            payload = {
                "id": f"chatcmpl-{uuid.uuid4().hex[:16]}", "object": "chat.completion", "created": now,
                "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "finish_reason": "stop", "logprobs": None}],
                "usage": {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out},
            }
        self._send_json(200, payload)


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


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # many envs connect at once; a small backlog would stall them
    owner: "JudgeServer"


class JudgeServer:
    """An OpenAI-compatible judge on 127.0.0.1 in a background thread.

    Args:
        mode: the default behaviour (see the module docstring), e.g. ``"stub"``, ``"score:5"``, ``"500"``.
        port: 0 picks a free port.
        latency_s: delay before every answer.
        hang_s: how long ``hang`` waits (``stop()`` releases it early).
        apis: the APIs served; ``("chat",)`` makes ``/v1/responses`` answer 404.
        model: the model id listed at ``/v1/models``.
    """

    def __init__(
        self,
        mode: str = "stub",
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        latency_s: float = 0.0,
        hang_s: float = 30.0,
        apis: Iterable[str] = ("responses", "chat"),
        model: str = "test-judge",
        score: int = 5,
        max_recorded: int = 10_000,
        verbose: bool = False,
    ) -> None:
        _check_behaviour(mode)
        self.mode = mode
        self.host, self.port = host, port
        self.latency_s = float(latency_s)
        self.hang_s = float(hang_s)
        self.apis = frozenset(apis)
        unknown = self.apis - {"responses", "chat"}
        if unknown:
            raise ValueError(f"apis accepts 'responses' and 'chat', got {sorted(unknown)}")
        self.model = model
        self.score = score
        self.verbose = verbose
        self.requests: collections.deque[RecordedRequest] = collections.deque(maxlen=max_recorded)
        self._script: collections.deque[str] = collections.deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._in_flight = 0
        #: The most requests being answered at once since the last reset (shows concurrency).
        self.max_in_flight = 0
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The base URL to give a client: ``http://127.0.0.1:PORT/v1``."""
        if self._httpd is None:
            raise RuntimeError("JudgeServer is not started")
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> "JudgeServer":
        if self._httpd is not None:
            return self
        self._stopping.clear()
        self._httpd = _Server((self.host, self.port), _Handler)
        self._httpd.owner = self
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"judge-server-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # releases hanging handlers
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> "JudgeServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def serve_forever(self) -> None:
        """Start and block until interrupted (the CLI)."""
        self.start()
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
        finally:
            self.stop()

    # -- scripting

    def script(self, *behaviours: str) -> "JudgeServer":
        """Queue behaviours for the next requests, one each (then the default mode)."""
        for b in behaviours:
            _check_behaviour(b)
        with self._lock:
            self._script.extend(behaviours)
        return self

    def set_mode(self, mode: str) -> None:
        _check_behaviour(mode)
        with self._lock:
            self.mode = mode

    def reset(self, mode: str | None = None) -> None:
        """Forget the script and the recorded requests (and set the default mode)."""
        with self._lock:
            self._script.clear()
            self.requests.clear()
            self.max_in_flight = 0
            if mode is not None:
                _check_behaviour(mode)
                self.mode = mode

    def _next_behaviour(self) -> str:
        with self._lock:
            return self._script.popleft() if self._script else self.mode

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    @property
    def prompts(self) -> list[str]:
        with self._lock:
            return [r.prompt for r in self.requests]


def _check_behaviour(behaviour: str) -> None:
    if not isinstance(behaviour, str):
        raise TypeError(f"a behaviour is a str like 'score:5', got {type(behaviour).__name__}")
    name, _, arg = behaviour.partition(":")
    if name not in MODES:
        raise ValueError(f"unknown behaviour {behaviour!r}; accepted: {MODES} (score:N, hang:SECONDS, 429:RETRY_AFTER)")
    if name == "leak" and arg and arg not in LEAK_KINDS:
        raise ValueError(f"behaviour {behaviour!r}: leak takes one of {LEAK_KINDS} after ':'")
    if arg and name in ("score", "hang", "429"):
        try:
            float(arg)
        except ValueError:
            raise ValueError(f"behaviour {behaviour!r} needs a number after ':'") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gym_integrity.testing.judge_server",
        description="An OpenAI-compatible test judge on 127.0.0.1 (deterministic; not a real grader).",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--mode", default="stub", help=f"default behaviour: one of {MODES} (score:N, hang:S)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before every answer")
    parser.add_argument("--model", default="test-judge")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    server = JudgeServer(args.mode, host=args.host, port=args.port, latency_s=args.latency, model=args.model,
                         verbose=args.verbose)
    server.start()
    print(f"test judge ({args.mode}) serving at {server.url}  (model {args.model}); Ctrl-C stops", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The policy for verifiers' rollouts: the project's test server, behind a relay that streams its answers.

verifiers' chat program always asks for ``stream=True``; the test server
answers whole completions only. The relay forwards each request with
``stream`` off and sends the answer back as server-sent chat-completion
chunks (content, tool calls, finish reason, usage), so the scripted policy and
its request log stay the test server's.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from gym_integrity.openai_stub.judge_server import JudgeServer, write_policy  # the one import of the test server here

__all__ = ["JudgeServer", "write_policy", "StreamingRelay"]


def _chunks(answer: dict) -> list[dict]:
    """A whole chat completion as the chunks a streaming server sends."""
    base = {"id": answer.get("id", "x"), "object": "chat.completion.chunk", "created": answer.get("created", 0),
            "model": answer.get("model", "m")}
    chunks = []
    for choice in answer.get("choices", []):
        message = choice.get("message", {})
        delta = {"role": "assistant", "content": message.get("content") or ""}
        if message.get("tool_calls"):
            delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
        chunks.append({**base, "choices": [{"index": choice.get("index", 0), "delta": delta, "finish_reason": None}]})
        chunks.append({**base, "choices": [{"index": choice.get("index", 0), "delta": {},
                                            "finish_reason": choice.get("finish_reason", "stop")}]})
    chunks.append({**base, "choices": [], "usage": answer.get("usage")})
    return chunks


class StreamingRelay:
    """``url`` relays ``/v1/chat/completions`` to ``upstream`` (a JudgeServer url) and streams the answer."""

    def __init__(self, upstream: str) -> None:
        relay = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # noqa: D401 - quiet
                pass

            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                stream = bool(body.pop("stream", False))
                body.pop("stream_options", None)
                request = urllib.request.Request(relay.upstream + self.path.removeprefix("/v1"),
                                                 json.dumps(body).encode(), {"Content-Type": "application/json"})
                try:
                    with urllib.request.urlopen(request, timeout=60) as response:
                        status, data = response.status, response.read()
                except urllib.error.HTTPError as error:
                    status, data = error.code, error.read()
                if status != 200 or not stream:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                events = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in _chunks(json.loads(data)))
                events += b"data: [DONE]\n\n"
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(events)))
                self.end_headers()
                self.wfile.write(events)

        self.upstream = upstream.rstrip("/")
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def policy(tmp_path):
    """``policy(mapping, **server_kwargs)``: a started test server playing ``mapping``, behind a relay; yields (relay url, server)."""
    opened = []

    def start(mapping, **kwargs):
        path = tmp_path / f"policy{len(opened)}.json"
        write_policy(path, mapping)
        server = JudgeServer("policy", policy_file=path, **kwargs).start()
        relay = StreamingRelay(server.url)
        opened.append((server, relay))
        return relay.url, server

    yield start
    for server, relay in opened:
        relay.close()
        server.stop()

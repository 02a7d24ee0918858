r"""A small OpenAI-compatible test server on 127.0.0.1 that plays the LLM judge or the policy, scriptable per request.

It serves ``POST /v1/responses``, ``POST /v1/chat/completions`` and
``GET /v1/models`` with the standard library only, for tests, the audit and the
README. Each request takes the next scripted behaviour, or the default mode
when the script is empty:

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
``429[:S]``     HTTP 429 (rate limited), with ``Retry-After: S`` when ``S`` is given
``500``         HTTP 500
``404``         HTTP 404
``malformed``   HTTP 200 with a truncated JSON body (``openai`` raises the
                ``json.JSONDecodeError`` as is, not an ``openai.APIError``)
``drop``        closes the connection without answering
``hang[:S]``    answers nothing for ``S`` (default ``hang_s``) seconds (or until
                stop), then ``score:2`` (or the policy: see below)
``leak[:K]``    a misbehaving judge: quotes the prompt's reference solution and
                marking scheme in its errors, then ``score:3`` (tests that
                feedback redacts them). ``K`` picks the pieces, each on its own
                line after one harmless line (:data:`HARMLESS_ERROR`): ``whole``
                (each text whole), ``sentences`` (each sentence alone),
                ``words`` (every run of 3 consecutive words, in the judge's own
                prose), ``formulas`` (every ``$...$``, ``\(...\)``, ``\[...\]``
                span), or ``all`` (the default: all of these)
``policy``      a scripted policy model: the reply comes from the JSON mapping in
                ``policy_file`` (see "Playing the policy" below)
``wrong``       a policy that always answers well-formed but wrong:
                ``\boxed{-7}`` and ``<answer>-7</answer>``; when the request's
                ``tools`` name ``submit_answer``, the tool call
                ``submit_answer(answer="-7")`` instead, and when only the prompt
                names it, the text also holds that call as a ``<tool_call>``
==============  ==============================================================

Every request is recorded (path, JSON body, prompt text, behaviour, headers with
lowercased names; a ``GET`` as behaviour ``get``) so tests can check what the
judge was sent, and that nothing was. ``latency_s`` delays every answer without
holding a lock (64 keep-alive clients at 0.2 s got ~290 answers a second, of
the 320 possible, on 2 busy cores). Every answer
carries ``usage`` (whitespace-token counts) and ``finish_reason`` (``stop``,
or ``tool_calls`` for a native tool call); a chat request's ``n`` gives that
many choices. A chat request with ``stream: true`` gets the same answer as
OpenAI streams it, in every mode: ``data: {chunk}`` events whose
``choices[0].delta`` carry the role, the text in pieces or the tool calls, a
last chunk with the ``finish_reason``, a usage chunk when
``stream_options.include_usage`` is set, then ``data: [DONE]`` (see
:mod:`gym_integrity.openai_stub.chat_stream`); faults stay HTTP errors, and
``malformed`` sends one cut-off event. ``/v1/responses`` with ``stream`` gets HTTP 400.

Playing the policy (for ``gym-integrity eval`` and its tests):

* ``policy_file`` (CLI ``--policy-file``) holds a JSON object: key = a
  substring of the conversation's *first user message* (keys are tried
  longest first; ``""`` matches everything and so replaces the default
  reply); value = one reply for every turn, or a list whose element ``i``
  answers when the conversation already holds ``i`` assistant messages
  (``function_call`` items count on ``/v1/responses``), the last one repeating
  after the end. A reply is assistant text, or a tool call
  ``{"tool": name, "arguments": {...}}``: a real ``tool_calls`` entry (unique
  ``id``, ``arguments`` as a JSON string, ``finish_reason: "tool_calls"``; a
  ``function_call`` item on ``/v1/responses``) when the request carries
  ``tools`` (and ``tool_choice`` is not ``"none"``), else the text ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``.
  No key found: :data:`POLICY_DEFAULT_REPLY` (``"I don't know."``).
* The file is re-read whenever its mtime, size or inode change, so a test can
  rewrite it between runs; :func:`write_policy` checks a mapping and replaces
  the file atomically (a half-written file is never read). A missing or invalid
  file answers HTTP 500 saying why.
* ``native_tools=False`` (CLI ``--no-native-tools``) plays vLLM without
  ``--enable-auto-tool-choice``: a request with non-empty ``tools`` (and a
  ``tool_choice`` other than ``"none"``) gets HTTP 400 with an OpenAI-style
  error body, at once; it is recorded as behaviour ``400:tools`` and takes no
  scripted behaviour, so a script applies to the requests that pass.
* Faults come from the script, which is shared by all connections and taken in
  order of arrival: ``JudgeServer("policy", policy_file=p).script("500", "500")``
  (CLI ``--script 500,500``) answers the first two requests 500, then plays
  the policy. ``429``, ``500``, ``malformed``, ``drop`` and ``hang`` work on
  ``/v1/chat/completions`` as on ``/v1/responses``; a ``hang`` answers after
  its wait as the default mode when that is ``policy`` or ``wrong`` (else
  ``score:2``).

Example:

    >>> from gym_integrity.openai_stub.judge_server import JudgeServer
    >>> import json, urllib.request
    >>> with JudgeServer(mode="score:6") as server:
    ...     body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "grade me"}]}).encode()
    ...     request = urllib.request.Request(server.url + "/chat/completions", body, {"Content-Type": "application/json"})
    ...     answer = json.load(urllib.request.urlopen(request))
    >>> answer["choices"][0]["message"]["content"].endswith("<score>6</score>")
    True
    >>> server.requests[0].prompt
    'grade me'

From a shell: ``python -m gym_integrity.openai_stub.judge_server --port 8000 --mode stub``, or as
a policy: ``... --mode policy --policy-file replies.json [--no-native-tools] [--script 500,500]``.
The answers' texts (stub, leak, the tests' quote check) live in
:mod:`gym_integrity.openai_stub.judge_answers`; how one request is answered, in
:mod:`gym_integrity.openai_stub.chat_handler`; this module holds the server and its state. One
server plays both roles (judge and policy) on one request path: the script queue, the faults,
the latency and the recording are shared.
"""

from __future__ import annotations

import argparse
import collections
import os
import threading
import time
from collections.abc import Iterable
from http.server import ThreadingHTTPServer
from typing import Any

from gym_integrity.openai_stub.chat_handler import (
    MODES,
    POLICY_MODES,
    RecordedRequest,
    _conversation_of,
    _Handler,
    _PolicyError,
    _PolicyFile,
    write_policy,
)
from gym_integrity.openai_stub.judge_answers import (
    HARMLESS_ERROR,
    LEAK_KINDS,
    POLICY_DEFAULT_REPLY,
    WRONG_ANSWER,
    PolicyReply,
    leak_text,
    policy_reply,
    quoted_secrets,
    stub_points,
)

__all__ = [
    "JudgeServer",
    "RecordedRequest",
    "stub_points",
    "leak_text",
    "quoted_secrets",
    "MODES",
    "LEAK_KINDS",
    "HARMLESS_ERROR",
    "POLICY_MODES",
    "POLICY_DEFAULT_REPLY",
    "WRONG_ANSWER",
    "write_policy",
    "main",
]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 2048  # a training step connects 1,024 at once; a full backlog drops SYNs (resent after 1 s)
    owner: JudgeServer


class JudgeServer:
    """An OpenAI-compatible judge on 127.0.0.1 in a background thread.

    Args:
        mode: the default behaviour (see the module docstring), e.g. ``"stub"``, ``"score:5"``, ``"500"``.
        port: 0 picks a free port.
        latency_s: delay before every answer.
        max_concurrent: at most this many requests are answered at once (their latency running); later ones
            wait for a free slot, as at a judge server with that many batch slots. None: no bound.
        hang_s: how long ``hang`` waits (``stop()`` releases it early).
        gather: every answer first waits (at most ``hang_s``) until this many requests are in flight at once,
            as a batch forms; a test of concurrency then depends on no timing. None: no wait.
        apis: the APIs served; ``("chat",)`` makes ``/v1/responses`` answer 404.
        model: the model id listed at ``/v1/models``.
        policy_file: the JSON mapping the ``policy`` mode answers from (needed by that mode; re-read
            when it changes).
        native_tools: ``False`` answers every request carrying ``tools`` with HTTP 400, as vLLM
            without ``--enable-auto-tool-choice`` does.
    """

    def __init__(
        self,
        mode: str = "stub",
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        latency_s: float = 0.0,
        max_concurrent: int | None = None,
        hang_s: float = 30.0,
        gather: int | None = None,
        apis: Iterable[str] = ("responses", "chat"),
        model: str = "test-judge",
        score: int = 5,
        max_recorded: int = 10_000,
        verbose: bool = False,
        policy_file: str | os.PathLike[str] | None = None,
        native_tools: bool = True,
    ) -> None:
        self._policy = _PolicyFile(policy_file) if policy_file is not None else None
        self.native_tools = bool(native_tools)
        self._check(mode)
        self.mode = mode
        self.host, self.port = host, port
        self.latency_s = float(latency_s)
        if max_concurrent is not None and (type(max_concurrent) is not int or max_concurrent < 1):
            raise ValueError(f"max_concurrent must be a positive int or None, got {max_concurrent!r}")
        self.max_concurrent = max_concurrent
        self.slots = threading.BoundedSemaphore(max_concurrent) if max_concurrent else None
        self.hang_s = float(hang_s)
        if gather is not None and (type(gather) is not int or gather < 1):
            raise ValueError(f"gather must be a positive int or None, got {gather!r}")
        self.gather = gather
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
        self._arrived = threading.Condition(self._lock)
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

    def start(self) -> JudgeServer:
        if self._httpd is not None:
            return self
        self._stopping.clear()
        self._httpd = _Server((self.host, self.port), _Handler)
        self._httpd.owner = self
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"judge-server-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # releases hanging handlers
        with self._lock:
            self._arrived.notify_all()  # and gathering ones
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> JudgeServer:
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

    @property
    def policy_file(self) -> str | None:
        """The path of the ``policy`` mapping, or None."""
        return self._policy.path if self._policy is not None else None

    def set_policy_file(self, path: str | os.PathLike[str]) -> None:
        """Answer the ``policy`` mode from another file (read at the next request)."""
        self._policy = _PolicyFile(path)

    def script(self, *behaviours: str) -> JudgeServer:
        """Queue behaviours for the next requests, one each (then the default mode).

        The queue is shared by all connections, taken in order of arrival:
        ``server.script("500", "500")`` then mode ``policy`` answers the first two requests 500.
        """
        for b in behaviours:
            self._check(b)
        with self._lock:
            self._script.extend(behaviours)
        return self

    def set_mode(self, mode: str) -> None:
        self._check(mode)
        with self._lock:
            self.mode = mode

    def reset(self, mode: str | None = None) -> None:
        """Forget the script and the recorded requests (and set the default mode)."""
        with self._lock:
            self._script.clear()
            self.requests.clear()
            self.max_in_flight = 0
            if mode is not None:
                self._check(mode)
                self.mode = mode

    def _check(self, behaviour: str) -> None:
        _check_behaviour(behaviour)
        if behaviour.partition(":")[0] == "policy" and self._policy is None:
            raise ValueError("behaviour 'policy' needs a policy_file (JudgeServer(policy_file=...), --policy-file)")

    def _policy_reply(self, kind: str, body: Any) -> PolicyReply:
        policy = self._policy
        if policy is None:
            raise _PolicyError("test server: mode 'policy' has no policy_file")
        first_user, n_assistant = _conversation_of(kind, body)
        return policy_reply(policy.mapping(), first_user, n_assistant)

    def _next_behaviour(self) -> str:
        with self._lock:
            return self._script.popleft() if self._script else self.mode

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            self._arrived.notify_all()
            if self.gather is not None:
                gather = self.gather
                self._arrived.wait_for(lambda: self.max_in_flight >= gather or self._stopping.is_set(), self.hang_s)

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
    if name in POLICY_MODES and arg:
        raise ValueError(f"behaviour {behaviour!r}: {name} takes nothing after ':'")
    if name == "leak" and arg and arg not in LEAK_KINDS:
        raise ValueError(f"behaviour {behaviour!r}: leak takes one of {LEAK_KINDS} after ':'")
    if arg and name in ("score", "hang", "429"):
        try:
            float(arg)
        except ValueError:
            raise ValueError(f"behaviour {behaviour!r} needs a number after ':'") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gym_integrity.openai_stub.judge_server",
        description="An OpenAI-compatible test judge on 127.0.0.1 (deterministic; not a real grader).",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--mode", default="stub", help=f"default behaviour: one of {MODES} (score:N, hang:S)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before every answer")
    parser.add_argument(
        "--max-concurrent",
        type=int,
        default=None,
        help="answer at most this many requests at once; later ones wait (default: no bound)",
    )
    parser.add_argument("--hang", type=float, default=30.0, help="seconds a 'hang' waits before answering")
    parser.add_argument("--model", default="test-judge")
    parser.add_argument(
        "--policy-file",
        default=None,
        help="JSON mapping (substring of the first user message -> reply or list of replies) "
        "for --mode policy; re-read when it changes",
    )
    parser.add_argument(
        "--no-native-tools",
        dest="native_tools",
        action="store_false",
        help="answer requests carrying 'tools' with HTTP 400 (vLLM without --enable-auto-tool-choice)",
    )
    parser.add_argument(
        "--script", default="", help="comma-separated behaviours for the first requests, e.g. '500,429:1', then --mode"
    )
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    try:
        server = JudgeServer(
            args.mode,
            host=args.host,
            port=args.port,
            latency_s=args.latency,
            max_concurrent=args.max_concurrent,
            hang_s=args.hang,
            model=args.model,
            verbose=args.verbose,
            policy_file=args.policy_file,
            native_tools=args.native_tools,
        )
        server.script(*[b.strip() for b in args.script.split(",") if b.strip()])
        if args.mode == "policy":
            if not args.policy_file:
                raise ValueError("--mode policy needs --policy-file (a JSON object: question substring -> reply)")
            assert server._policy is not None  # policy_file was given just above
            server._policy.mapping()  # read it now: a missing or bad file fails here, not at every request
    except (TypeError, ValueError, _PolicyError) as exc:
        parser.error(str(exc))
    server.start()
    role = "policy" if args.mode.partition(":")[0] in POLICY_MODES else "judge"
    print(f"test {role} ({args.mode}) serving at {server.url}  (model {args.model}); Ctrl-C stops", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

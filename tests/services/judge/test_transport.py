"""The judge client in process: the real `openai` package over an httpx MockTransport (the network replaced, not our code).

Parsing, retries, backoff and the fault table run here without a server; a few
real-server tests stay in test_qed_judge_client.py.
"""

from __future__ import annotations

import json
import pickle
import re
import threading
import time

import pytest

try:
    import httpx2 as httpx  # the HTTP library of openai >= 3
except ImportError:  # openai 1.x and 2.x use httpx
    import httpx

from gym_integrity.protocol import Verdict
from gym_integrity.services.judge import (
    FAILURE_KINDS,
    METRIC_KEYS,
    InvalidScore,
    JudgeClient,
    JudgeConfig,
    JudgeError,
    JudgeRateLimited,
    JudgeRejected,
    JudgeStatusError,
    NoScoreTag,
    ScoreParseError,
    parse_score,
)

PROBLEM = "Prove that the quux invariant is preserved."
REFERENCE = "REFSECRET the key lemma is that every zorblax of the kernel is bounded by the quux invariant"
GUIDELINES = "2 points: define the invariant. 5 points: complete the induction."
PROOF = "We argue by induction on n. The base case is clear; the step follows from the invariant."


def judge_text(points: int | None, errors: str = "none") -> str:
    tail = f"\n<score>{points}</score>" if points is not None else ""
    return f"<assessment>fine</assessment>\n<errors>{errors}</errors>{tail}"


class FakeJudge:
    """An OpenAI-compatible endpoint as an httpx handler: one scripted behaviour per request, every request kept.

    Behaviours: ``score:N``, ``text:...`` (the judge's whole answer), ``echo`` (repeats the last live
    score tag of its prompt, else 2), ``status:CODE[:retry_after]``, ``body:...`` (a raw 200 body),
    ``read_timeout``, ``connect_error``, ``hang`` (until released).
    """

    def __init__(self, *script: str, apis: tuple[str, ...] = ("responses", "chat")) -> None:
        self.script = list(script)
        self.apis = apis
        self.requests: list[dict] = []
        self.times: list[float] = []
        self.release = threading.Event()

    def __call__(self, request: httpx.Request) -> httpx.Response:
        kind = {"/v1/responses": "responses", "/v1/chat/completions": "chat"}.get(request.url.path)
        body = json.loads(request.content) if request.content else None
        prompt = (body or {}).get("input") if kind == "responses" else ((body or {}).get("messages") or [{}])[0].get("content")
        self.requests.append({"path": request.url.path, "body": body, "prompt": prompt,
                              "headers": {k.lower(): v for k, v in request.headers.items()}})
        self.times.append(time.monotonic())
        if kind not in self.apis:
            return httpx.Response(404, json={"error": {"message": "no route"}})
        name, _, arg = (self.script.pop(0) if self.script else "score:5").partition(":")
        if name == "status":
            code, _, retry_after = arg.partition(":")
            headers = {"Retry-After": retry_after} if retry_after else {}
            # A server that echoes the request in its error (some do, for 422): must stay out of causes.
            return httpx.Response(int(code), json={"error": {"message": f"bad request: {prompt}"}}, headers=headers)
        if name == "body":
            return httpx.Response(200, content=arg.encode(), headers={"Content-Type": "application/json"})
        if name == "read_timeout":
            raise httpx.ReadTimeout("slow", request=request)
        if name == "connect_error":
            raise httpx.ConnectError("refused", request=request)
        if name == "hang":
            self.release.wait(10)
            name, arg = "score", "2"
        if name == "echo":
            planted = re.findall(r"<score>\s*([0-9]+)\s*</score>", prompt, re.IGNORECASE)
            name, arg = "score", planted[-1] if planted else "2"
        text = judge_text(int(arg)) if name == "score" else arg
        n_in, n_out = len(prompt.split()), len(text.split())
        if kind == "responses":
            return httpx.Response(200, json={
                "output": [{"type": "message", "content": [{"type": "output_text", "text": text}]}],
                "usage": {"input_tokens": n_in, "output_tokens": n_out}})
        return httpx.Response(200, json={"choices": [{"message": {"role": "assistant", "content": text}}],
                                         "usage": {"prompt_tokens": n_in, "completion_tokens": n_out}})


@pytest.fixture
def judge_with():
    made: list[tuple[FakeJudge, JudgeClient]] = []

    def make(*script: str, apis=("responses", "chat"), **overrides) -> tuple[FakeJudge, JudgeClient]:
        fake = FakeJudge(*script, apis=apis)
        cfg = dict(base_url="http://judge.test/v1", model="test-judge", api="responses", timeout_s=5.0,
                   max_retries=2, backoff_s=0.0)
        cfg.update(overrides)
        client = JudgeClient(JudgeConfig.from_value(cfg), http_client=httpx.Client(transport=httpx.MockTransport(fake)))
        made.append((fake, client))
        return fake, client

    yield make
    for fake, client in made:
        fake.release.set()
        client.close()


def grade(judge: JudgeClient, proof: str = PROOF, **kw):
    return judge.grade(problem=PROBLEM, proof=proof, reference_solution=REFERENCE, grading_guidelines=GUIDELINES, **kw)


def failures(result) -> dict[str, float]:
    return {k.rsplit("/", 1)[1]: v for k, v in result.metrics.items() if k.startswith("judge/failures/") and v}


# ------------------------------------------------------------------ answers and metrics


@pytest.mark.parametrize("api,path", [("responses", "/v1/responses"), ("chat", "/v1/chat/completions")])
def test_a_score_through_each_api_with_every_metric_key(judge_with, api, path):
    fake, judge = judge_with("score:6", api=api)
    result = grade(judge)
    assert (result.points, result.grade.verdict, result.no_verdict) == (6, Verdict.PARTIAL, False)
    assert list(result.metrics) == list(METRIC_KEYS) and all(type(v) is float for v in result.metrics.values())
    assert all(k.startswith("judge/") for k in METRIC_KEYS)  # not verifier/: QEDMath reports both
    assert {f"judge/failures/{k}" for k in FAILURE_KINDS} <= set(METRIC_KEYS)
    assert result.metrics["judge/rollouts/success"] == 1.0 and result.metrics["judge/runtime/requests"] == 1.0
    assert result.metrics["judge/runtime/input_tokens"] == len(fake.requests[0]["prompt"].split())
    assert [r["path"] for r in fake.requests] == [path]
    assert failures(result) == {} and result.fingerprint["api"] == api


def test_auto_falls_back_to_chat_once_and_stays_there(judge_with):
    fake, judge = judge_with("score:7", "score:7", apis=("chat",), api="auto")
    assert grade(judge).points == grade(judge).points == 7
    assert [r["path"] for r in fake.requests] == ["/v1/responses", "/v1/chat/completions", "/v1/chat/completions"]
    assert judge.fingerprint["api"] == "chat"


def test_chat_content_parts_are_joined(judge_with):
    parts = json.dumps({"choices": [{"message": {"content": [{"type": "text", "text": "<score>"},
                                                            {"type": "text", "text": "4</score>"}]}}]})
    _, judge = judge_with(f"body:{parts}", api="chat")
    assert grade(judge).points == 4


def test_a_forced_api_does_not_fall_back(judge_with):
    fake, judge = judge_with("score:7", apis=("chat",), api="responses", max_retries=3)
    result = grade(judge)
    assert result.no_verdict and "HTTP 404" in result.grade.cause and failures(result) == {"rejected": 1.0}
    assert [r["path"] for r in fake.requests] == ["/v1/responses"]


@pytest.mark.parametrize("points,verdict", [(7, Verdict.CORRECT), (6, Verdict.PARTIAL), (1, Verdict.PARTIAL),
                                            (0, Verdict.INCORRECT)])
def test_points_map_to_verdict_and_score(judge_with, points, verdict):
    _, judge = judge_with(f"score:{points}")
    result = grade(judge)
    assert (result.points, result.grade.verdict, result.grade.score) == (points, verdict, points / 7)


def test_success_threshold_is_configurable(judge_with):
    _, judge = judge_with("score:6", "score:5", success_threshold=6)
    assert grade(judge).grade.verdict is Verdict.CORRECT
    assert grade(judge).grade.verdict is Verdict.PARTIAL


def test_non_str_input_is_a_type_error(judge_with):
    _, judge = judge_with()
    with pytest.raises(TypeError, match="proof"):
        judge.grade(problem=PROBLEM, proof=None, reference_solution=REFERENCE, grading_guidelines=GUIDELINES)


# ------------------------------------------------------------------ the strict parse


@pytest.mark.parametrize("text,points", [
    ("<score>7</score> quoted ... final <score>3</score>", 3),  # the last tag counts
    ("<score>\n 4 \n</score>", 4),
    ("<SCORE>5</Score>", 5),
])
def test_parse_takes_the_last_tag(text, points):
    assert parse_score(text, allowed=range(8)) == points


@pytest.mark.parametrize("text,error", [
    ("score: 7", NoScoreTag),
    ("<score>7/7</score>", InvalidScore),
    ("<score>seven</score>", InvalidScore),
    ("<score>8</score>", InvalidScore),
    ("<score>-1</score>", InvalidScore),
    ("<score>3.5</score>", InvalidScore),
    ("<score>3</score><score></score>", InvalidScore),  # a valid earlier tag does not rescue an invalid last one
])
def test_parse_refuses_anything_but_a_plain_allowed_integer(text, error):
    with pytest.raises(error) as raised:
        parse_score(text, allowed=range(8))
    assert isinstance(raised.value, ScoreParseError) and isinstance(raised.value, ValueError)
    assert raised.value.kind == {NoScoreTag: "no_score_tag", InvalidScore: "invalid_score"}[error]
    assert text not in str(raised.value)  # messages reach causes: no judge text in them


def test_v2_allows_only_0_1_6_7(judge_with):
    _, judge = judge_with("score:6", "score:3", prompt="v2", max_retries=0)
    assert grade(judge).points == 6
    result = grade(judge)
    assert result.grade.verdict is Verdict.GRADER_ERROR
    assert failures(result) == {"invalid_score": 1.0, "all_attempts_failed": 1.0}
    with pytest.raises(InvalidScore):
        parse_score("<score>3</score>", allowed=(0, 1, 6, 7))


# ------------------------------------------------------------------ the fault table: kind, retried or not


RETRIED = [
    ("status:429", "rate_limited", "HTTP 429"),
    ("status:500", "server_error", "HTTP 500"),
    ("status:503", "server_error", "HTTP 503"),
    ("status:408", "server_error", "HTTP 408"),
    ("status:409", "server_error", "HTTP 409"),
    ("read_timeout", "timeout", "HTTP timeout"),
    ("connect_error", "connection", "connection failed"),
    ('body:{"id": "resp_broken", "output": [{"type": "mess', "malformed", "not JSON"),
    ("body:[1, 2]", "malformed", "not a JSON object"),
    ('body:{"output": "text"}', "malformed", "unexpected shape"),
    ('body:{"output": []}', "empty_response", "empty answer"),
    ("text:" + judge_text(None), "no_score_tag", "no <score>N</score> tag"),
    ("text:" + judge_text(9), "invalid_score", "not one of"),
]


@pytest.mark.parametrize("behaviour,kind,cause", RETRIED, ids=[r[1] + ":" + r[0][:12] for r in RETRIED])
def test_retryable_faults_then_a_score(judge_with, behaviour, kind, cause):
    _, judge = judge_with(behaviour, "score:6")
    result = grade(judge)
    assert (result.points, result.no_verdict) == (6, False)
    assert failures(result) == {kind: 1.0, "num_retries": 1.0}
    assert result.metrics["judge/runtime/requests"] == 2.0


@pytest.mark.parametrize("behaviour,kind,cause", RETRIED, ids=[r[1] + ":" + r[0][:12] for r in RETRIED])
def test_retryable_faults_forever_are_a_no_verdict_after_the_budget(judge_with, behaviour, kind, cause):
    fake, judge = judge_with(*[behaviour] * 3, max_retries=2)
    result = grade(judge)
    verdict = Verdict.TIMEOUT if kind == "timeout" else Verdict.GRADER_ERROR
    assert (result.grade.verdict, result.no_verdict, result.points, result.grade.score) == (verdict, True, None, 0.0)
    assert failures(result) == {kind: 3.0, "num_retries": 2.0, "all_attempts_failed": 1.0}
    assert result.metrics["judge/rollouts/failure"] == 1.0 and result.metrics["judge/rollouts/success"] == 0.0
    assert len(fake.requests) == 3
    assert "3 requests failed" in result.grade.cause and cause in result.grade.cause
    assert "REFSECRET" not in result.grade.cause and "not scored" in result.feedback


@pytest.mark.parametrize("code", [400, 401, 403, 404, 422])
def test_other_4xx_are_rejected_at_once_and_the_body_stays_privileged(judge_with, code):
    fake, judge = judge_with(f"status:{code}", prompt="v0")  # v0: the request, echoed by the 4xx body, has the reference
    result = grade(judge)
    assert result.grade.verdict is Verdict.GRADER_ERROR and result.no_verdict
    assert failures(result) == {"rejected": 1.0} and len(fake.requests) == 1  # not retried, not all_attempts_failed
    assert f"HTTP {code} (not retried" in result.grade.cause and "REFSECRET" not in result.grade.cause
    assert "REFSECRET" in result.judge_output  # kept for debugging, privileged


def test_malformed_body_is_kept_in_judge_output(judge_with):
    _, judge = judge_with(*['body:{"id": "resp_broken"'] * 3)
    assert grade(judge).judge_output == '{"id": "resp_broken"'


def test_error_classes_carry_their_kind():
    assert issubclass(JudgeRateLimited, JudgeStatusError) and issubclass(JudgeStatusError, JudgeError)
    err = JudgeRateLimited(retry_after=3.0)
    assert (err.kind, err.retryable, err.retry_after, err.status_code) == ("rate_limited", True, 3.0, 429)
    rejected = JudgeRejected(401, body="secret body")
    assert (rejected.kind, rejected.retryable) == ("rejected", False)
    assert "secret" not in str(rejected) and "api_key" in str(rejected)
    copied = pickle.loads(pickle.dumps(err))
    assert (type(copied), str(copied), copied.retry_after) == (JudgeRateLimited, str(err), 3.0)


# ------------------------------------------------------------------ backoff and deadline


def test_backoff_grows_exponentially_with_jitter(judge_with):
    fake, judge = judge_with("status:500", "status:500", "status:500", "score:3", max_retries=3, backoff_s=0.1)
    assert grade(judge).points == 3
    gaps = [b - a for a, b in zip(fake.times, fake.times[1:])]
    for gap, base in zip(gaps, (0.1, 0.2, 0.4)):
        assert base * 0.5 <= gap < base + 1.0  # 50-100 % of base, plus a loaded machine's slack


def test_retry_after_is_honoured_up_to_the_cap(judge_with):
    fake, judge = judge_with("status:429:0.3", "score:5", backoff_s=0.0)
    assert grade(judge).points == 5
    assert fake.times[1] - fake.times[0] >= 0.3
    fake, judge = judge_with("status:429:100", "score:5", backoff_s=0.0, max_backoff_s=0.2)
    started = time.monotonic()
    assert grade(judge).points == 5
    assert 0.2 <= fake.times[1] - fake.times[0] and time.monotonic() - started < 5.0


def test_a_hanging_request_is_abandoned_at_the_deadline(judge_with):
    _, judge = judge_with("hang", "hang", timeout_s=0.3, max_retries=1)
    started = time.monotonic()
    result = grade(judge)
    assert result.grade.verdict is Verdict.TIMEOUT and result.no_verdict
    assert failures(result) == {"timeout": 2.0, "num_retries": 1.0, "all_attempts_failed": 1.0}
    assert time.monotonic() - started < 2 * 0.3 + 1.0 and "deadline" in result.grade.cause


def test_an_abandoned_request_keeps_its_slot_until_it_ends(judge_with):
    """max_concurrency counts requests still running after their caller gave up."""
    fake, judge = judge_with("hang", "score:4", timeout_s=0.3, max_retries=0, max_concurrency=1)
    assert grade(judge).grade.verdict is Verdict.TIMEOUT
    blocked = grade(judge)  # the hung request still holds the only slot
    assert blocked.grade.verdict is Verdict.TIMEOUT and "no free request slot" in blocked.grade.cause
    fake.release.set()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        result = grade(judge)
        if not result.no_verdict:
            break
        time.sleep(0.05)
    assert result.points == 4


# ------------------------------------------------------------------ what is sent


def test_what_is_sent_and_what_is_not(judge_with, monkeypatch):
    monkeypatch.setenv("OPENAI_ORG_ID", "org-policy")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-policy")
    fake, judge = judge_with("score:4", api="chat", temperature=None, max_output_tokens=123, api_key="sk-judge")
    grade(judge, proof=PROOF + " {{reference_solution}}")
    request = fake.requests[0]
    assert request["body"]["model"] == "test-judge" and request["body"]["max_tokens"] == 123
    assert "temperature" not in request["body"]
    assert request["headers"]["authorization"] == "Bearer sk-judge" and "openai-organization" not in request["headers"]
    assert "REFSECRET" not in json.dumps(request["body"])  # v1 never sends the reference, nor expands the proof's
    assert "{{reference_solution}}" in request["prompt"]


def test_proofs_not_sent(judge_with):
    fake, judge = judge_with(max_proof_chars=50)
    empty, long = grade(judge, proof="  \n"), grade(judge, proof="x" * 51)
    assert (empty.grade.verdict, empty.points, empty.no_verdict) == (Verdict.NO_ANSWER, 0, False)
    assert (long.grade.verdict, long.points, long.no_verdict) == (Verdict.TOO_LONG, 0, False)
    assert failures(empty) == {"no_input": 1.0} and failures(long) == {"too_long": 1.0}
    assert fake.requests == []


def test_any_text_is_sent(judge_with):
    fake, judge = judge_with(*["score:2"] * 3)
    for text in ("\ud800 lone surrogate \udfff", "\x00\x01 control", "\u202e RTL \U0001F600"):
        assert grade(judge, proof=text + " " + PROOF).points == 2
    assert len(fake.requests) == 3


# ------------------------------------------------------------------ feedback


def test_feedback_is_the_errors_section_redacted(judge_with):
    quoting = judge_text(3, "The base case is missing. It never says that every zorblax of the kernel is bounded.")
    _, judge = judge_with("text:" + quoting)
    result = grade(judge)
    assert result.feedback.startswith("Judge score: 3/7.")
    assert "The base case is missing." in result.feedback and "[redacted]" in result.feedback
    assert "zorblax" not in result.feedback and "zorblax" in result.judge_output


_DISGUISED_QUOTES = {
    "zero_width_space": "It never says the zorblax of the ker\u200bnel.",
    "soft_hyphen": "It never says the zor\u00adblax of the kernel.",
    "word_joiner_between_words": "It never says the zorblax\u2060of\u2060the kernel.",
    "combining_mark": "It never says the zo\u0335rblax of the kernel.",
    "cyrillic_look_alike": "It never says the zorbl\u0430x of the kernel.",
    "html_entities": "It never says the&nbsp;zorblax&#32;of the kernel.",
    "html_numeric_letter": "It never says the &#122;orblax of the kernel.",
    "emphasis_inside_words": "It never says the z**orbl**ax of the kernel.",
    "latex_text_wrapper": "It never says the \\text{zorblax} of the kernel.",
    "letter_spacing": "It never says the z o r b l a x   o f   t h e   kernel.",
    "hyphenated_line_break": "It never says the zorb-\nlax of the kernel.",
    "crlf_hyphenated_line_break": "It never says the zorb-\r\nlax of the kernel.",
    "spaces_inside_words": "It never says the zor blax of the ker nel.",
    "dotted_letters": "It never says the z.o.r.b.l.a.x of the kernel.",
    "mixed_spelling": "It never says the z o r blax of the kernel.",
    "empty_braces_inside_a_word": "It never says the zor{}blax of the kernel.",
    "double_encoded_entity": "It never says the &amp;#122;orblax of the kernel.",
    "tag_inside_a_word": "It never says the zor<i></i>blax of the kernel.",
}


@pytest.mark.parametrize("name", sorted(_DISGUISED_QUOTES))
def test_a_quote_disguised_character_by_character_is_still_redacted(name):
    """A judge steered by a proof's prompt injection may spell a quote so word matching misses it (red team)."""
    from gym_integrity.services.judge.feedback import agent_feedback

    judge_output = f"<errors>The base case is missing.\n{_DISGUISED_QUOTES[name]}</errors><score>3</score>"
    feedback = agent_feedback(3, judge_output, [REFERENCE, GUIDELINES], PROBLEM)
    assert "The base case is missing." in feedback and feedback.endswith("[redacted]"), feedback

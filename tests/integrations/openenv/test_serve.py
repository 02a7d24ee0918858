"""gym-integrity serve: openenv-core's own server around the integrity stack, driven by openenv-core's own clients.

Every server here is ``build_app(...)`` under uvicorn in a thread on a free
127.0.0.1 port; every client is openenv-core's ``GenericEnvClient`` or
``MCPToolClient`` or our ``GymEnvClient`` (its ``EnvClient``), sync and async.
The only hand-written frames are the garbage ones no client can send. Local
"twin" envs (``gym_integrity.make`` with the same seed or problem id) give the
gold answers and the expected observations, so rewards over the wire are
checked against what the env itself says.

An autouse fixture taps ``EnvClient._receive`` (every frame any client gets)
and checks after each test that no frame holds a privileged key.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
import time
from importlib import resources
from typing import Any, Iterator

import pytest

if os.environ.get("GYM_INTEGRITY_REQUIRE_EXTRAS") == "1":
    import openenv  # noqa: F401  (the [serve] extra is installed: a missing openenv-core must fail, not skip)
else:
    openenv = pytest.importorskip("openenv")

from openenv.core import GenericEnvClient, MCPToolClient  # noqa: E402
from openenv.core.env_client import EnvClient  # noqa: E402
from pydantic import BaseModel, ConfigDict, Field  # noqa: E402
from websockets.exceptions import ConnectionClosed  # noqa: E402
from websockets.sync.client import connect as ws_connect  # noqa: E402

import gym_integrity  # noqa: E402
from gym_integrity.integrations.openenv import GymAction, GymEnvClient, RemoteEnv, build_app  # noqa: E402
from gym_integrity.protocol import TrainerAction  # noqa: E402
from gym_integrity.openai_stub.judge_server import JudgeServer, quoted_secrets  # noqa: E402
from served_app import Served, serving, wait_until  # noqa: E402  (tests/support)

pytestmark = pytest.mark.serve

RG = "ReasoningGym-v0"
RG_KWARGS = {"dataset": "leg_counting"}
RG_WRONG = "<answer>-1</answer>"  # never a leg count

QED = "QEDMath-v0"
QED_ANSWER_ID, QED_GOLD = "qed-ans-001", "1170"
QED_PROOF_ID = "qed-prf-001"
QED_MULTI_ID, QED_MULTI_GOLD = "qed-ms-002", "144"  # an answer problem with 3 attempts
PROOF = "</think>For every integer n, n^3 - n = (n-1) n (n+1) is a product of three consecutive integers. " * 2

FINQA = "FinQA-v0"
FQ_ID, FQ_COMPANY = "fq002", "northwind_foods"  # Northwind's 2024 gross margin: 38.2%
FQ_INCOME = "nwf_ConsolidatedStatementsOfIncomeTableTextBlock"
FQ_QUERY = (f"SELECT line_item, to_number(\"2024\") AS v FROM {FQ_INCOME} "
            "WHERE line_item IN ('gross_profit', 'net_revenue')")

#: Keys no payload may hold, at any depth (answer-bearing names and the stack's privileged info).
FORBIDDEN_KEYS = {"privileged", "answer", "answers", "gold", "gold_answer", "gold_answers", "reference_solution",
                  "solution", "judge_output"}
#: The only ``metadata`` content on the wire: submit_proof's public fields, an observation's verdict/no_verdict,
#: for an env with tools the public part of OpenEnv FinQA's metadata, and QEDMath's reset nesting our observation
#: (``gym_integrity``, itself checked key by key).
TOOL_METADATA_KEYS = {"problem_id", "verdict", "no_verdict", "frozen", "attempts_remaining", "question", "company",
                      "tool_result", "gym_integrity"}
UPSTREAM_TOOLS = {"get_problem", "submit_proof", "get_grading_guidelines"}


class UpstreamProblemObservation(BaseModel):
    """The upstream QED Math env's ``ProblemObservation`` fields (what ``get_problem`` may return)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    problem: str = ""
    reference_solution: str = ""
    grading_guidelines: str = ""
    problem_id: str = ""
    dataset_source: str = ""
    problem_type: str = "proof"
    max_attempts: int = 1


class UpstreamProofSubmissionObservation(BaseModel):
    """The upstream QED Math env's ``ProofSubmissionObservation`` fields (what ``submit_proof`` may return)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    proof: str = ""
    score: int = Field(default=0, ge=0, le=7)
    feedback: str = ""
    reward: float | None = None
    done: bool = False
    problem_type: str = "proof"
    attempt_number: int = 1
    attempts_remaining: int = 0
    is_correct: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)


# ---------------------------------------------------------------------------------------------- servers


def _capacity_refusal(exc: BaseException) -> bool:
    """A refused session: the CAPACITY_REACHED error frame, or (when the server's close overtook the client's
    first message) the closed socket that follows it."""
    return isinstance(exc, ConnectionClosed) or (isinstance(exc, RuntimeError) and "CAPACITY_REACHED" in str(exc))


def assert_refused_for_capacity(url: str) -> None:
    """A new session is refused with CAPACITY_REACHED.

    The server sends the refusal frame as soon as it accepts the socket and then closes it, so a client that
    sends first may see only the close (a race a loaded CI run lost 5 times in a row): the frame is read here
    from a raw socket that sends nothing.
    """
    with ws_connect(url.replace("http://", "ws://") + "/ws", open_timeout=10) as ws:
        frame = json.loads(ws.recv(timeout=30))
    assert (frame["type"], frame["data"]["code"]) == ("error", "CAPACITY_REACHED"), frame
    assert "capacity" in frame["data"]["message"].lower(), frame


def sync_session_when_free(url: str, timeout: float = 15.0) -> Any:
    """A connected sync ``GymEnvClient`` whose session was granted (a slot frees asynchronously after a close)."""
    deadline = time.monotonic() + timeout
    while True:
        client = GymEnvClient(base_url=url).sync()
        try:
            client.state()  # the first message: a refusal comes back here when the server is full
            return client
        except (RuntimeError, ConnectionClosed) as exc:
            client.close()
            assert _capacity_refusal(exc), exc
            assert time.monotonic() < deadline, "no session slot was freed"
            time.sleep(0.05)


async def async_session_when_free(url: str, timeout: float = 15.0) -> GymEnvClient:
    deadline = time.monotonic() + timeout
    while True:
        client = GymEnvClient(base_url=url)
        try:
            await client.state()
            return client
        except (RuntimeError, ConnectionClosed) as exc:
            await client.close()
            assert _capacity_refusal(exc), exc
            assert time.monotonic() < deadline, "no session slot was freed"
            await asyncio.sleep(0.05)


# ---------------------------------------------------------------------------------------------- payloads


def _walk(value: Any, path: str = "$") -> Iterator[tuple[str, Any, Any]]:
    """(path, key, value) for every dict entry at any depth, also inside strings that hold JSON."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield path, key, item
            yield from _walk(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _walk(item, f"{path}[{i}]")
    elif isinstance(value, str) and value[:1] in ("{", "["):
        try:
            parsed = json.loads(value)
        except ValueError:
            return
        yield from _walk(parsed, path + "<json>")


def strings(frames: list[Any]) -> list[str]:
    """Every string value (and key) in the frames, at any depth: the text a client can read."""
    out: list[str] = []

    def visit(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                out.append(str(key))
                visit(item)
        elif isinstance(value, list):
            for item in value:
                visit(item)
        elif isinstance(value, str):
            out.append(value)

    visit(frames)
    return out


def assert_no_privileged_keys(frames: list[Any]) -> None:
    for frame in frames:
        for path, key, value in _walk(frame):
            assert key not in FORBIDDEN_KEYS, f"privileged key {key!r} at {path} in {json.dumps(frame)[:500]}"
            if key == "metadata":
                assert isinstance(value, dict) and set(value) <= TOOL_METADATA_KEYS, \
                    f"metadata with content at {path}: {value!r}"
        text = json.dumps(frame)
        assert "privileged" not in text and "judge_output" not in text, text[:500]


def number_in(number: str, text: str) -> bool:
    """``number`` as a whole number in ``text`` (not as digits of a longer number, nor of an episode id)."""
    text = re.sub(r"[0-9a-f]{32}", "<episode id>", text)  # uuid4().hex ids: "...a324b..." is not the gold 324
    return re.search(rf"(?<![\d.]){re.escape(number)}(?![\d.])", text) is not None


@pytest.fixture(autouse=True)
def received(monkeypatch) -> Iterator[list[dict[str, Any]]]:
    """Every frame any openenv-core client receives during the test; checked for privileged keys at the end."""
    frames: list[dict[str, Any]] = []
    original = EnvClient._receive

    async def tapped(self):
        message = await original(self)
        frames.append(message)
        return message

    monkeypatch.setattr(EnvClient, "_receive", tapped)
    yield frames
    assert_no_privileged_keys(frames)


# ---------------------------------------------------------------------------------------------- fixtures


def judge_config(judge: JudgeServer) -> dict[str, Any]:
    # prompt v0 sends the reference solution to the judge, so a judge quoting it back tests the redaction.
    return {"base_url": judge.url, "model": "test-judge", "timeout_s": 10.0, "max_retries": 1, "backoff_s": 0.01,
            "prompt": "v0"}


def qed_row(problem_id: str) -> dict[str, Any]:
    text = resources.files("gym_integrity").joinpath("data/qed_problems.jsonl").read_text(encoding="utf-8")
    for line in text.splitlines():
        row = json.loads(line)
        if row.get("problem_id") == problem_id:
            return row
    raise KeyError(problem_id)


@pytest.fixture(scope="module")
def judge() -> Iterator[JudgeServer]:
    with JudgeServer("stub") as server:
        yield server


@pytest.fixture(scope="module")
def rg_server() -> Iterator[Served]:
    with serving(RG, RG_KWARGS, max_sessions=8) as served:
        yield served


@pytest.fixture(scope="module")
def qed_server() -> Iterator[Served]:
    with serving(QED, {"problem_types": ["answer", "multi_step"]}, max_sessions=8) as served:
        yield served


@pytest.fixture(scope="module")
def qed_proof_server(judge) -> Iterator[Served]:
    with serving(QED, {"problem_types": ["proof"], "judge": judge_config(judge)}, max_sessions=8) as served:
        yield served


@pytest.fixture(scope="module")
def finqa_server() -> Iterator[Served]:
    with serving(FINQA, {}, max_sessions=8) as served:
        yield served


@pytest.fixture(scope="module")
def rg_local():
    env = gym_integrity.make(RG, frozen_reward="zero", **RG_KWARGS)
    yield env
    env.close()


@pytest.fixture(scope="module")
def qed_local():
    env = gym_integrity.make(QED, frozen_reward="zero", problem_types=["answer", "multi_step"])
    yield env
    env.close()


@pytest.fixture(scope="module")
def finqa_local():
    env = gym_integrity.make(FINQA, frozen_reward="zero")
    yield env
    env.close()


def rg_problem(env, seed: int) -> tuple[str, str]:
    """The twin's prompt and gold for ``seed``."""
    obs, _ = env.reset(seed=seed)
    return obs, env.unwrapped.gold_answers()[0]


def rg_answer(gold: str) -> str:
    return f"<answer>{gold}</answer>"


def qed_problem(env, problem_id: str) -> tuple[str, str]:
    obs, _ = env.reset(seed=0, options={"problem_id": problem_id})
    return obs, env.unwrapped.gold_answers()[0]


# ============================================================================ 1. full episodes of the three families


def test_reasoning_gym_episodes_over_sync_async_and_generic_clients(rg_server, rg_local):
    with GymEnvClient(base_url=rg_server.url).sync() as env:
        for seed in (0, 1, 2):
            obs, gold = rg_problem(rg_local, seed)
            first = env.reset(seed=seed)
            assert (first.observation.text, first.reward, first.done) == (obs, None, False)
            assert first.observation.integrity == {"steps": 0, "step_budget": 1, "frozen": False, "ignored_steps": 0}
            result = env.step(GymAction(text=rg_answer(gold)))
            assert (result.reward, result.done, result.observation.verdict, result.observation.score) == \
                (1.0, True, "correct", 1.0)
            assert result.observation.text == "Graded: correct (score 1.00)."
            assert result.observation.integrity["steps"] == 1 and result.observation.integrity["frozen"] is False

    expected = {seed: rg_problem(rg_local, seed)[0] for seed in (3, 4)}

    async def play() -> list[tuple[Any, ...]]:
        out = []
        async with GymEnvClient(base_url=rg_server.url) as env:
            for seed in (3, 4):
                first = await env.reset(seed=seed)
                result = await env.step(GymAction(text=RG_WRONG))
                out.append((first.observation.text, result.reward, result.done, result.observation.verdict))
        return out

    assert asyncio.run(play()) == [(expected[s], 0.0, True, "incorrect") for s in (3, 4)]

    obs, gold = rg_problem(rg_local, 5)
    with GenericEnvClient(base_url=rg_server.url).sync() as env:
        first = env.reset(seed=5)
        assert first.observation["text"] == obs and first.reward is None
        result = env.step({"text": rg_answer(gold), "num_tokens": 7})
        assert (result.reward, result.done, result.observation["verdict"]) == (1.0, True, "correct")


def test_qed_answer_problem_over_text_and_mcp(qed_server, qed_local):
    obs, gold = qed_problem(qed_local, QED_ANSWER_ID)
    assert gold == QED_GOLD
    with GymEnvClient(base_url=qed_server.url).sync() as env:
        first = env.reset(seed=0, options={"problem_id": QED_ANSWER_ID})
        assert (first.observation.text, first.observation.problem_id) == (obs, QED_ANSWER_ID)
        result = env.step(GymAction(text=f"\\boxed{{{QED_GOLD}}}"))
        assert (result.reward, result.done, result.observation.verdict, result.observation.score) == \
            (1.0, True, "correct", 1.0)
    with MCPToolClient(base_url=qed_server.url).sync() as env:
        env.reset(problem_id=QED_ANSWER_ID)
        result = env.call_tool("submit_proof", proof=f"\\boxed{{{QED_GOLD}}}")
        assert (result["score"], result["reward"], result["done"]) == (7, 1.0, True)
        assert result["metadata"] == {"problem_id": QED_ANSWER_ID, "verdict": "correct", "no_verdict": False,
                                      "frozen": False, "attempts_remaining": 0}


def test_qed_proof_is_graded_by_the_judge_stub_as_locally(qed_proof_server, judge):
    judge.reset("stub")
    local = gym_integrity.make(QED, frozen_reward="zero", problem_types=["proof"], judge=judge_config(judge))
    try:
        local_first, _ = local.reset(seed=0, options={"problem_id": QED_PROOF_ID})
        local_obs, local_reward, terminated, _, local_info = local.step(PROOF)
    finally:
        local.close()
    assert terminated and 0.0 < local_reward < 1.0 and local_info["verdict"] == "partial"  # the stub's partial credit
    assert len(judge.requests) == 1

    with GymEnvClient(base_url=qed_proof_server.url).sync() as env:
        first = env.reset(seed=0, options={"problem_id": QED_PROOF_ID})
        assert first.observation.text == local_first
        result = env.step(GymAction(text=PROOF))
        assert result.observation.text == local_obs and "Judge score:" in result.observation.text
        assert result.reward == pytest.approx(local_reward) and result.done
        assert result.observation.verdict == local_info["verdict"]
    assert len(judge.requests) == 2  # the served env called the judge once

    with MCPToolClient(base_url=qed_proof_server.url).sync() as env:
        env.reset(problem_id=QED_PROOF_ID)
        assert env.call_tool("get_problem")["problem"] == local_first
        result = env.call_tool("submit_proof", proof=PROOF)
        UpstreamProofSubmissionObservation.model_validate(result)
        assert result["feedback"] == local_obs and result["reward"] == pytest.approx(local_reward)
        assert result["score"] == round(7 * local_info["score"]) and result["done"] is True
    assert len(judge.requests) == 3


def test_finqa_odd_tool_calls_are_graded_error_steps_as_in_process(finqa_server, finqa_local):
    # The model writes the tool call: an empty or long name, a lone surrogate (what a trainer's JSON parse makes
    # of "\ud800"), arguments that are not an object. In process each is an error step that uses a step of the
    # budget; over the wire the same, not a refused frame (and never a dead session).
    odd = [{"tool": ""}, {"tool": "t" * 201}, {"tool": "get_\ud800", "arguments": {}},
           {"tool": "sql_query", "arguments": [1]}, {"tool": "sql_query", "arguments": "{}"},
           {"tool": "sql_query", "arguments": 7}]
    finqa_local.reset(options={"question_id": FQ_ID})
    with GymEnvClient(base_url=finqa_server.url).sync() as env:
        env.reset(options={"question_id": FQ_ID})
        for n, payload in enumerate(odd, start=1):
            local_obs, local_reward, *_ = finqa_local.step(payload)
            result = env.step(GymAction(**payload))
            assert result.observation.text.startswith("Error") and result.reward == local_reward == 0.0, payload
            assert result.observation.text == local_obs.encode("utf-8", "surrogatepass").decode("utf-8", "replace") \
                or result.observation.text == local_obs, (payload, result.observation.text, local_obs)
            assert env.state().step_count == n and not result.done
    with GenericEnvClient(base_url=finqa_server.url).sync() as env:  # raw dicts, as another client sends them
        env.reset(options={"question_id": FQ_ID})
        for payload in odd:
            assert env.step(payload).observation["text"].startswith("Error"), payload


def test_finqa_multi_step_tool_episodes(finqa_server, finqa_local):
    # Episode 1: GymEnvClient with GymAction(tool=...) (and one text tool call), step for step like the twin.
    actions = [
        GymAction(text='<tool_call>{"name": "get_descriptions", "arguments": {"company_name": "%s"}}</tool_call>'
                  % FQ_COMPANY),
        GymAction(tool="get_table_info", arguments={"company_name": FQ_COMPANY, "table_name": FQ_INCOME}),
        GymAction(tool="sql_query", arguments={"company_name": FQ_COMPANY, "table_name": FQ_INCOME,
                                               "query": FQ_QUERY}),
    ]
    local_first, _ = finqa_local.reset(options={"question_id": FQ_ID})
    with GymEnvClient(base_url=finqa_server.url).sync() as env:
        first = env.reset(options={"question_id": FQ_ID})
        assert (first.observation.text, first.observation.problem_id) == (local_first, FQ_ID)
        for action in actions:
            lo, lr, lt, ltr, _ = finqa_local.step(action.to_env_action())
            result = env.step(action)
            assert (result.observation.text, result.reward, result.done) == (lo, lr, lt or ltr)
            assert result.done is False and result.observation.verdict == "pending"
        values = {row["line_item"]: row["v"] for row in json.loads(result.observation.text)}
        margin = 100 * values["gross_profit"] / values["net_revenue"]
        result = env.step(GymAction(tool="submit_answer", arguments={"answer": f"{margin:.1f}%"}))
        assert (result.reward, result.done, result.observation.verdict) == (1.0, True, "correct")
        assert result.observation.metrics["finqa/tool_calls"] == 4.0
        assert env.state().step_count == 4

    # Episode 2: GenericEnvClient with dict actions, the gold from the twin of the same seed.
    local_first, info = finqa_local.reset(seed=1)
    gold = finqa_local.unwrapped.gold_answers()[0]
    with GenericEnvClient(base_url=finqa_server.url).sync() as env:
        first = env.reset(seed=1)
        assert first.observation["text"] == local_first
        result = env.step({"tool": "get_descriptions", "arguments": {"company_name": info["company"]}})
        assert (result.reward, result.done, result.observation["details"]["tool_ok"]) == (0.0, False, True)
        result = env.step({"tool": "submit_answer", "arguments": {"answer": gold}})
        assert (result.reward, result.done, result.observation["verdict"]) == (1.0, True, "correct")
        assert env.state()["step_count"] == 2


def test_num_tokens_shapes_the_reward_as_the_local_env_does():
    """``num_tokens`` (the trainer's count, never read from the text) reaches the env's length shaping."""
    shaping = {"problem_types": ["answer"], "max_tokens": 100, "buffer_tokens": 50, "discount_factor": 0.99}
    local = gym_integrity.make(QED, frozen_reward="zero", **shaping)
    answer = f"\\boxed{{{QED_GOLD}}}"
    try:
        with serving(QED, shaping, max_sessions=1) as served, GymEnvClient(base_url=served.url).sync() as env:
            rewards = []
            for num_tokens in (None, 10, 80, 120):
                local.reset(seed=0, options={"problem_id": QED_ANSWER_ID})
                local_reward = local.step(answer if num_tokens is None else TrainerAction(answer, num_tokens))[1]
                env.reset(seed=0, options={"problem_id": QED_ANSWER_ID})
                result = env.step(GymAction(text=answer, num_tokens=num_tokens))
                assert result.reward == pytest.approx(local_reward), num_tokens
                rewards.append(result.reward)
    finally:
        local.close()
    assert rewards[0] == 1.0 and rewards[0] > rewards[1] > rewards[2] > rewards[3]  # discount, then overlong


# ============================================================================ 2. the exploit scores once


def test_wrong_then_revealed_answer_then_again_scores_once_over_twenty_seeds(rg_server, rg_local):
    golds = {seed: rg_problem(rg_local, seed)[1] for seed in range(20)}
    total = 0.0
    with GymEnvClient(base_url=rg_server.url).sync() as env:
        for seed, gold in golds.items():
            env.reset(seed=seed)
            first = env.step(GymAction(text=RG_WRONG))
            assert (first.reward, first.done, first.observation.verdict) == (0.0, True, "incorrect")
            assert first.observation.integrity["frozen"] is False
            rewards = [first.reward]
            for ignored in (1, 2):
                again = env.step(GymAction(text=rg_answer(gold)))
                assert (again.reward, again.done, again.observation.verdict) == (0.0, True, "incorrect"), seed
                assert again.observation.integrity["frozen"] is True
                assert again.observation.integrity["ignored_steps"] == ignored
                assert again.observation.text == first.observation.text
                rewards.append(again.reward)
            total += sum(rewards)
        state = env.state()
        assert (state.step_count, state.done) == (3, True)
    assert total == 0.0

    # Right first: paid once, every later step frozen at 0.
    with GymEnvClient(base_url=rg_server.url).sync() as env:
        for seed in (0, 1, 2):
            env.reset(seed=seed)
            rewards = [env.step(GymAction(text=rg_answer(golds[seed]))).reward for _ in range(3)]
            assert rewards == [1.0, 0.0, 0.0]


def test_qed_wrong_then_right_scores_once_over_mcp_and_text(qed_server):
    with MCPToolClient(base_url=qed_server.url).sync() as env:
        for _ in range(3):
            env.reset(problem_id=QED_ANSWER_ID)
            wrong = env.call_tool("submit_proof", proof="\\boxed{1169}")
            assert (wrong["score"], wrong["reward"], wrong["done"]) == (0, 0.0, True)
            assert wrong["metadata"]["frozen"] is False and wrong["metadata"]["verdict"] == "incorrect"
            right = env.call_tool("submit_proof", proof=f"\\boxed{{{QED_GOLD}}}")
            assert (right["score"], right["reward"], right["done"]) == (0, 0.0, True)
            assert right["metadata"]["frozen"] is True and right["feedback"] == wrong["feedback"]
    with GymEnvClient(base_url=qed_server.url).sync() as env:
        env.reset(options={"problem_id": QED_ANSWER_ID})
        rewards = [env.step(GymAction(text=t)).reward for t in ("\\boxed{1169}", f"\\boxed{{{QED_GOLD}}}")]
        assert rewards == [0.0, 0.0]


def test_finqa_wrong_then_gold_submission_scores_once(finqa_server, finqa_local):
    finqa_local.reset(seed=2)
    gold = finqa_local.unwrapped.gold_answers()[0]
    with GymEnvClient(base_url=finqa_server.url).sync() as env:
        env.reset(seed=2)
        first = env.step(GymAction(tool="submit_answer", arguments={"answer": "-12345"}))
        assert (first.reward, first.done, first.observation.verdict) == (0.0, True, "incorrect")
        again = env.step(GymAction(tool="submit_answer", arguments={"answer": gold}))
        assert (again.reward, again.observation.integrity["frozen"], again.observation.text) == \
            (0.0, True, first.observation.text)


# ============================================================================ 3. nothing privileged on the wire


def test_no_privileged_info_in_any_payload(rg_server, qed_server, qed_proof_server, finqa_server, judge,
                                           rg_local, finqa_local, received):
    # ReasoningGym: seeds whose gold the prompt itself does not show, played wrong by every client kind.
    problems = {seed: rg_problem(rg_local, seed) for seed in range(40, 60)}
    seeds = [seed for seed, (obs, gold) in problems.items() if not number_in(gold, obs)][:4]
    assert len(seeds) == 4
    golds = [problems[seed][1] for seed in seeds]
    start = len(received)
    with GymEnvClient(base_url=rg_server.url).sync() as env:
        for seed in seeds[:2]:
            env.reset(seed=seed)
            env.step(GymAction(text=RG_WRONG))
            env.step(GymAction(text=RG_WRONG))
            env.state()
    with GenericEnvClient(base_url=rg_server.url).sync() as env:
        env.reset(seed=seeds[2])
        env.step({"text": RG_WRONG})
        env.state()
    remote = RemoteEnv(rg_server.url)
    remote.reset(seed=seeds[3])
    remote.step(RG_WRONG)
    remote.close()
    rg_text = "\n".join(strings(received[start:]))
    assert len(received) - start >= 12
    for gold in golds:
        assert not number_in(gold, rg_text), gold

    # QEDMath answer problem: text and MCP; neither the gold nor the reference solution goes out.
    row = qed_row(QED_ANSWER_ID)
    start = len(received)
    with MCPToolClient(base_url=qed_server.url).sync() as env:
        env.reset(problem_id=QED_ANSWER_ID)
        env.list_tools()
        env.call_tool("get_problem")
        env.call_tool("get_grading_guidelines")
        env.call_tool("submit_proof", proof="\\boxed{1169}")
        env.call_tool("submit_proof", proof="\\boxed{1168}")
        env.state()
    with GymEnvClient(base_url=qed_server.url).sync() as env:
        env.reset(options={"problem_id": QED_ANSWER_ID})
        env.step(GymAction(text="\\boxed{1169}"))
        env.state()
    qed_text = "\n".join(strings(received[start:]))
    assert not number_in(QED_GOLD, qed_text)
    assert row["reference_solution"] not in qed_text
    assert quoted_secrets(qed_text, [row["reference_solution"]], row["problem"]) == []

    # QEDMath proof with a judge that quotes the reference solution and the hidden rubric back (prompt v0).
    proof_row = qed_row(QED_PROOF_ID)
    twin = gym_integrity.make(QED, problem_types=["proof"], show_guidelines=True)
    guidelines = twin.reset(options={"problem_id": QED_PROOF_ID})[1]["grading_guidelines"]
    twin.close()
    judge.reset("stub")
    start = len(received)
    with MCPToolClient(base_url=qed_proof_server.url).sync() as env:
        env.reset(problem_id=QED_PROOF_ID)
        env.call_tool("get_problem")
        env.call_tool("get_grading_guidelines")
        judge.script("leak")
        result = env.call_tool("submit_proof", proof=PROOF)
        env.call_tool("submit_proof", proof=PROOF)  # frozen: the same feedback again
    with GymEnvClient(base_url=qed_proof_server.url).sync() as env:
        env.reset(options={"problem_id": QED_PROOF_ID})
        judge.script("leak")
        env.step(GymAction(text=PROOF))
    assert len(judge.requests) == 2 and proof_row["reference_solution"].strip() in judge.requests[0].prompt
    assert "[redacted]" in result["feedback"]  # the judge did quote them; the feedback went out redacted
    proof_text = "\n".join(strings(received[start:]))
    assert proof_row["reference_solution"] not in proof_text and guidelines not in proof_text
    assert quoted_secrets(proof_text, [proof_row["reference_solution"], guidelines], proof_row["problem"]) == []

    # FinQA: the tools' results and a wrong submission.
    finqa_local.reset(options={"question_id": FQ_ID})
    fq_gold = finqa_local.unwrapped.gold_answers()[0]
    start = len(received)
    with GymEnvClient(base_url=finqa_server.url).sync() as env:
        env.reset(options={"question_id": FQ_ID})
        env.step(GymAction(tool="get_descriptions", arguments={"company_name": FQ_COMPANY}))
        env.step(GymAction(tool="get_table_info", arguments={"company_name": FQ_COMPANY, "table_name": FQ_INCOME}))
        env.step(GymAction(tool="submit_answer", arguments={"answer": "12%"}))
        env.step(GymAction(tool="submit_answer", arguments={"answer": fq_gold}))  # frozen: nothing graded or shown
        env.state()
    assert fq_gold not in "\n".join(strings(received[start:]))

    assert_no_privileged_keys(received)  # (the autouse fixture checks again, for every test)


# ============================================================================ 4. concurrent sessions


def test_four_concurrent_sessions_are_independent(rg_local):
    plan = {k: [(100 + 10 * k + j, (k + j) % 2 == 0) for j in range(3)] for k in range(4)}
    expected = {seed: rg_problem(rg_local, seed) for episodes in plan.values() for seed, _ in episodes}

    with serving(RG, RG_KWARGS, max_sessions=4) as served:
        async def session(k: int, barrier: asyncio.Barrier) -> tuple[list[tuple[Any, ...]], Any, int]:
            out = []
            peak = 0
            async with GymEnvClient(base_url=served.url) as env:
                for j, (seed, right) in enumerate(plan[k]):
                    first = await env.reset(seed=seed)
                    if j == 0:
                        await barrier.wait()  # all four sessions are open at once
                        peak = served.active_sessions
                    action = rg_answer(expected[seed][1]) if right else RG_WRONG
                    result = await env.step(GymAction(text=action))
                    out.append((seed, first.observation.text, result.reward, result.observation.verdict))
                state = await env.state()
            return out, state, peak

        async def main():
            barrier = asyncio.Barrier(4)
            return await asyncio.gather(*(session(k, barrier) for k in range(4)))

        results = asyncio.run(main())

    episode_ids = set()
    for k, (episodes, state, peak) in enumerate(results):
        assert peak == 4
        assert episodes == [(seed, expected[seed][0], 1.0 if right else 0.0, "correct" if right else "incorrect")
                            for seed, right in plan[k]]
        assert (state.step_count, state.done) == (1, True)
        episode_ids.add(state.episode_id)
    assert len(episode_ids) == 4


def test_concurrent_qed_sessions_with_different_problems(qed_server, qed_local):
    ids = ["qed-ans-001", "qed-ans-002", "qed-ans-003", "qed-ans-004"]
    expected = {pid: qed_problem(qed_local, pid) for pid in ids}

    async def session(k: int, pid: str, barrier: asyncio.Barrier) -> tuple[Any, ...]:
        async with MCPToolClient(base_url=qed_server.url) as env:
            await env.reset(problem_id=pid)
            await barrier.wait()
            problem = await env.call_tool("get_problem")
            right = k % 2 == 0
            result = await env.call_tool("submit_proof",
                                         proof=f"\\boxed{{{expected[pid][1]}}}" if right else "\\boxed{-7}")
            return problem["problem_id"], problem["problem"], result["reward"], result["metadata"]["verdict"], right

    async def main():
        barrier = asyncio.Barrier(len(ids))
        return await asyncio.gather(*(session(k, pid, barrier) for k, pid in enumerate(ids)))

    for pid, (got_id, text, reward, verdict, right) in zip(ids, asyncio.run(main())):
        assert (got_id, text) == (pid, expected[pid][0])
        assert (reward, verdict) == ((1.0, "correct") if right else (0.0, "incorrect")), pid


# ============================================================================ 5. capacity


def test_a_session_over_capacity_is_refused_until_one_closes(rg_local):
    _, gold = rg_problem(rg_local, 3)
    with serving(RG, RG_KWARGS, max_sessions=2) as served:
        first = GymEnvClient(base_url=served.url).sync()
        second = GymEnvClient(base_url=served.url).sync()
        try:
            first.reset(seed=1)
            second.reset(seed=2)
            assert served.active_sessions == 2
            assert_refused_for_capacity(served.url)
            assert served.active_sessions == 2
            assert second.step(GymAction(text=RG_WRONG)).reward == 0.0  # the refusal touched no open session
            first.close()
            fresh = sync_session_when_free(served.url)
            try:
                fresh.reset(seed=3)
                assert fresh.step(GymAction(text=rg_answer(gold))).reward == 1.0
            finally:
                fresh.close()
        finally:
            for client in (first, second):
                client.close()


# ============================================================================ 6. garbage


def test_garbage_frames_get_error_frames_and_the_session_lives_on(rg_server, rg_local):
    obs, gold = rg_problem(rg_local, 7)
    with ws_connect(rg_server.ws_url, open_timeout=10) as ws:
        def ask(frame: str) -> dict[str, Any]:
            ws.send(frame)
            return json.loads(ws.recv(timeout=30))

        error = ask("{not json")
        assert (error["type"], error["data"]["code"]) == ("error", "INVALID_JSON")
        error = ask(json.dumps({"type": "teleport", "data": {}}))
        assert (error["type"], error["data"]["code"]) == ("error", "UNKNOWN_TYPE")
        assert "teleport" in error["data"]["message"]
        error = ask(json.dumps({"type": "step", "data": {"text": "x"}}))  # before any reset
        assert error["data"]["code"] == "EXECUTION_ERROR" and "reset" in error["data"]["message"]
        first = ask(json.dumps({"type": "reset", "data": {"seed": 7}}))
        assert first["type"] == "observation" and first["data"]["observation"]["text"] == obs
        error = ask("\x00\xff")
        assert error["data"]["code"] == "INVALID_JSON"
        result = ask(json.dumps({"type": "step", "data": {"text": rg_answer(gold)}}))
        assert result["type"] == "observation" and (result["data"]["reward"], result["data"]["done"]) == (1.0, True)
        state = ask(json.dumps({"type": "state"}))
        assert state["data"]["step_count"] == 1

    # A frame that is JSON but not an object ends (at worst) its own session, never the server.
    with ws_connect(rg_server.ws_url, open_timeout=10) as ws:
        ws.send("[1, 2, 3]")
        assert json.loads(ws.recv(timeout=30))["type"] == "error"
    with GymEnvClient(base_url=rg_server.url).sync() as env:
        env.reset(seed=7)
        assert env.step(GymAction(text=rg_answer(gold))).reward == 1.0


#: (payload, the pydantic error type the server reports for it)
BAD_STEPS = [
    ({"text": 5}, "string_type"),
    ({"text": "x", "tool": "y"}, "one_kind"),
    ({"tool": "t", "num_tokens": 3}, "one_kind"),
    ({}, "one_kind"),
    ({"text": "a", "extra": 1}, "extra_forbidden"),
    ({"num_tokens": "5", "text": "a"}, "int_type"),
    ({"num_tokens": -1, "text": "a"}, "greater_than_equal"),
    ({"num_tokens": True, "text": "a"}, "int_type"),
    ({"num_tokens": 1.5, "text": "a"}, "int_type"),
    ({"text": "a", "arguments": {}}, "one_kind"),
    ({"tool": 5}, "string_type"),
    ({"text": None}, "one_kind"),
]


def test_invalid_step_payloads_are_validation_errors_and_the_session_lives_on(rg_server, rg_local, received):
    with GenericEnvClient(base_url=rg_server.url).sync() as env:
        for payload, error_type in BAD_STEPS:
            obs, gold = rg_problem(rg_local, 11)
            env.reset(seed=11)
            with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
                env.step(payload)
            frame = received[-1]
            assert frame["type"] == "error" and frame["data"]["code"] == "VALIDATION_ERROR", payload
            assert error_type in {e["type"] for e in frame["data"]["errors"]}, (payload, frame)
            # Nothing was stepped: the episode's one step is still there, and it is graded.
            assert env.state()["step_count"] == 0, payload
            result = env.step({"text": rg_answer(gold)})
            assert (result.reward, result.done) == (1.0, True), payload


def test_a_tool_action_on_a_text_env_is_refused_without_using_the_step(rg_server, rg_local):
    _, gold = rg_problem(rg_local, 12)
    with GymEnvClient(base_url=rg_server.url).sync() as env:
        env.reset(seed=12)
        with pytest.raises(RuntimeError, match=r"text actions.*EXECUTION_ERROR"):
            env.step(GymAction(tool="calculator", arguments={"x": 1}))
        assert env.state().step_count == 0
        assert env.step(GymAction(text=rg_answer(gold))).reward == 1.0
    # MCP calls to an env without tools are refused by openenv's server (its JSON-RPC error), grading nothing.
    with MCPToolClient(base_url=rg_server.url).sync() as env:
        env.reset(seed=12)
        with pytest.raises(RuntimeError, match="does not support MCP"):
            env.call_tool("submit_proof", proof=rg_answer(gold))
        assert env.state().step_count == 0


def test_step_before_reset_is_an_error_and_the_session_lives_on(rg_server, rg_local):
    _, gold = rg_problem(rg_local, 13)
    with GymEnvClient(base_url=rg_server.url).sync() as env:
        with pytest.raises(RuntimeError, match=r"reset\(\) before step\(\).*EXECUTION_ERROR"):
            env.step(GymAction(text=rg_answer(gold)))
        state = env.state()
        assert (state.env_id, state.step_count, state.done, state.episode_id) == (RG, 0, False, None)
        env.reset(seed=13)
        assert env.step(GymAction(text=rg_answer(gold))).reward == 1.0


def test_a_million_character_action_is_graded_like_the_local_env(rg_server, rg_local):
    cases = ["<answer>" + "9" * 1_000_001 + "</answer>",  # an overlong answer
             RG_WRONG + " " + "x" * 1_000_000]  # a wrong answer and a megabyte of padding
    with GymEnvClient(base_url=rg_server.url).sync() as env:
        for text, verdict in zip(cases, ("too_long", "incorrect")):
            rg_local.reset(seed=14)
            local_obs, local_reward, *_, local_info = rg_local.step(text)
            assert local_info["verdict"] == verdict
            env.reset(seed=14)
            result = env.step(GymAction(text=text))
            assert (result.observation.text, result.reward, result.done, result.observation.verdict) == \
                (local_obs, local_reward, True, verdict)


def test_reset_with_an_unknown_option_names_the_accepted_ones(rg_server, qed_server, finqa_server, rg_local):
    _, gold = rg_problem(rg_local, 15)
    with GymEnvClient(base_url=rg_server.url).sync() as env:
        with pytest.raises(RuntimeError, match=r"'bogus'.*\['index'\].*EXECUTION_ERROR"):
            env.reset(seed=15, options={"bogus": 1})
        with pytest.raises(RuntimeError, match=r"'colour'.*\['index'\]"):
            env.reset(seed=15, colour="red")  # a top-level key of the reset message is a reset option too
        env.reset(seed=15)
        assert env.step(GymAction(text=rg_answer(gold))).reward == 1.0
    with GenericEnvClient(base_url=rg_server.url).sync() as env:
        with pytest.raises(RuntimeError, match="JSON object"):
            env.reset(options=5)
        with pytest.raises(RuntimeError, match="EXECUTION_ERROR"):
            env.reset(seed="abc")
        assert env.reset(seed=15).observation["problem_id"].startswith("leg_counting/")
    with GymEnvClient(base_url=finqa_server.url).sync() as env:
        with pytest.raises(RuntimeError, match=r"'bogus'.*\['index', 'question_id'\]"):
            env.reset(options={"bogus": 1})
    with MCPToolClient(base_url=qed_server.url).sync() as env:
        with pytest.raises(RuntimeError, match=r"'nope'.*EXECUTION_ERROR"):
            env.reset(problem_id="nope")
        with pytest.raises(RuntimeError, match=r"'bogus'.*\['problem_id'\]"):
            env.reset(bogus=1)
        env.reset(problem_id=QED_ANSWER_ID)
        assert env.call_tool("get_problem")["problem_id"] == QED_ANSWER_ID
    with GymEnvClient(base_url=qed_server.url).sync() as env:
        with pytest.raises(RuntimeError, match="'nope'"):
            env.reset(options={"problem_id": "nope"})


# ============================================================================ 7. a client dropping mid-episode


@pytest.mark.parametrize("how", ["abort", "cancel"])
def test_a_client_dropping_mid_episode_frees_its_session(how, rg_local):
    _, gold = rg_problem(rg_local, 21)
    with serving(RG, RG_KWARGS, max_sessions=1) as served:
        async def scenario() -> float:
            if how == "abort":  # the TCP connection dies under the socket: no close frame, no close message
                client = GymEnvClient(base_url=served.url)
                await client.connect()
                await client.reset(seed=20)
                assert served.active_sessions == 1
                client._ws.transport.abort()
                await client.close()
            else:  # the task playing the episode is cancelled while it holds the session
                reset_done = asyncio.Event()

                async def play() -> None:
                    async with GymEnvClient(base_url=served.url) as env:
                        await env.reset(seed=20)
                        reset_done.set()
                        await asyncio.sleep(3600)

                task = asyncio.create_task(play())
                await asyncio.wait_for(reset_done.wait(), 30)
                assert served.active_sessions == 1
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            fresh = await async_session_when_free(served.url)
            try:
                await fresh.reset(seed=21)
                return (await fresh.step(GymAction(text=rg_answer(gold)))).reward
            finally:
                await fresh.close()

        assert asyncio.run(scenario()) == 1.0
        wait_until(lambda: served.active_sessions == 0, 10, "the last session to end")


# ============================================================================ 8. reaping (the one slow test)


def test_an_idle_session_is_reaped_and_its_open_socket_is_refused(rg_local):
    _, gold = rg_problem(rg_local, 22)
    with serving(RG, RG_KWARGS, max_sessions=1, session_timeout_s=1.0) as rg, \
            serving(QED, {"problem_types": ["answer"]}, max_sessions=1, session_timeout_s=1.0) as qed:
        text = GymEnvClient(base_url=rg.url).sync()
        tools = MCPToolClient(base_url=qed.url).sync()
        try:
            text.reset(seed=22)
            tools.reset(problem_id=QED_ANSWER_ID)
            assert (rg.active_sessions, qed.active_sessions) == (1, 1)
            # The reaper wakes every max(timeout / 4, 5) s (openenv's pace): one wake-up, ~5 s.
            wait_until(lambda: rg.active_sessions == 0 and qed.active_sessions == 0, 20, "the reaper")
            with pytest.raises(RuntimeError, match=r"session is closed.*EXECUTION_ERROR"):
                text.step(GymAction(text=rg_answer(gold)))
            with pytest.raises(RuntimeError, match="session is closed"):
                text.reset(seed=22)
            # openenv's MCPToolClient calls tools over HTTP by session id: the reaped session is gone there.
            with pytest.raises(RuntimeError, match="closed|Unknown session_id"):
                tools.call_tool("submit_proof", proof=f"\\boxed{{{QED_GOLD}}}")
            with pytest.raises(RuntimeError, match="closed|Unknown session_id"):
                tools.call_tool("get_problem")
            assert (rg.active_sessions, qed.active_sessions) == (0, 0)  # the refused calls took no slot
            with GymEnvClient(base_url=rg.url).sync() as fresh:
                fresh.reset(seed=22)
                assert fresh.step(GymAction(text=rg_answer(gold))).reward == 1.0
            fresh_tools = MCPToolClient(base_url=qed.url).sync()
            try:
                fresh_tools.reset(problem_id=QED_ANSWER_ID)
                assert fresh_tools.call_tool("submit_proof", proof=f"\\boxed{{{QED_GOLD}}}")["reward"] == 1.0
            finally:
                fresh_tools.close()
        finally:
            text.close()
            tools.close()


# ============================================================================ 9. MCP (QEDMath-v0)


def test_mcp_tools_match_the_upstream_qed_tool_set(qed_server, qed_local):
    obs, _ = qed_problem(qed_local, QED_ANSWER_ID)
    reference = qed_row(QED_ANSWER_ID)["reference_solution"]
    with MCPToolClient(base_url=qed_server.url).sync() as env:
        for name, arguments in (("get_problem", {}), ("get_grading_guidelines", {}),
                                ("submit_proof", {"proof": f"\\boxed{{{QED_GOLD}}}"})):
            with pytest.raises(RuntimeError, match="reset"):
                env.call_tool(name, **arguments)
        tools = env.list_tools()
        assert len(tools) == 3 and {t.name for t in tools} == UPSTREAM_TOOLS
        submit = next(t for t in tools if t.name == "submit_proof")
        assert submit.input_schema["properties"] == {"proof": {"type": "string"}}
        assert submit.input_schema["required"] == ["proof"]

        env.reset(problem_id=QED_ANSWER_ID)
        problem = env.call_tool("get_problem")
        UpstreamProblemObservation.model_validate(problem)
        assert (problem["problem"], problem["problem_id"]) == (obs, QED_ANSWER_ID)
        assert problem["dataset_source"] == "gym-integrity-builtin"
        assert not problem.get("reference_solution") and reference not in json.dumps(problem)
        assert env.call_tool("get_grading_guidelines")["grading_guidelines"] == ""
        with pytest.raises(RuntimeError, match="failed"):
            env.call_tool("submit_proof", proof=5)
        with pytest.raises(RuntimeError, match="failed"):
            env.call_tool("no_such_tool")
        result = env.call_tool("submit_proof", proof=f"\\boxed{{{QED_GOLD}}}")
        UpstreamProofSubmissionObservation.model_validate(result)
        # The calls before the reset and the refused ones graded nothing: the one attempt is still there.
        assert (result["score"], result["reward"], result["done"]) == (7, 1.0, True)


def test_mcp_grading_guidelines_only_when_the_env_shows_them(qed_proof_server, judge):
    twin = gym_integrity.make(QED, problem_types=["proof"], show_guidelines=True)
    shown_obs, info = twin.reset(options={"problem_id": QED_PROOF_ID})
    twin.close()
    guidelines = info["grading_guidelines"]
    assert guidelines and guidelines in shown_obs
    with serving(QED, {"problem_types": ["proof"], "judge": judge_config(judge), "show_guidelines": True},
                 max_sessions=2) as shown:
        with MCPToolClient(base_url=shown.url).sync() as env:
            env.reset(problem_id=QED_PROOF_ID)
            assert env.call_tool("get_grading_guidelines")["grading_guidelines"] == guidelines
            problem = env.call_tool("get_problem")
            assert problem["grading_guidelines"] == guidelines and problem["problem"] == shown_obs
    with MCPToolClient(base_url=qed_proof_server.url).sync() as env:
        env.reset(problem_id=QED_PROOF_ID)
        assert env.call_tool("get_grading_guidelines")["grading_guidelines"] == ""
        problem = env.call_tool("get_problem")
        assert problem["grading_guidelines"] == "" and guidelines not in problem["problem"]


def test_mcp_multi_step_problem_takes_several_submissions_until_done(qed_server):
    with MCPToolClient(base_url=qed_server.url).sync() as env:
        env.reset(problem_id=QED_MULTI_ID)
        first = env.call_tool("submit_proof", proof="\\boxed{143}")
        # A text step in the same session is an attempt of the same episode.
        text_step = env.step(GymAction(text="\\boxed{145}"))
        assert (text_step.reward, text_step.done) == (0.0, False)
        last = env.call_tool("submit_proof", proof=f"\\boxed{{{QED_MULTI_GOLD}}}")
        after = env.call_tool("submit_proof", proof=f"\\boxed{{{QED_MULTI_GOLD}}}")
        results = [first, last, after]
        assert [r["done"] for r in results] == [False, True, True]
        assert [r["reward"] for r in results] == [0.0, 1.0, 0.0]
        assert [r["score"] for r in results] == [0, 7, 7]
        assert [r["metadata"]["attempts_remaining"] for r in results] == [2, 0, 0]
        assert [r["metadata"]["frozen"] for r in results] == [False, False, True]
        assert "Try again" in first["feedback"] and after["feedback"] == last["feedback"]
        assert env.state().step_count == 4


def test_mcp_over_stateless_http_grades_nothing(qed_server):
    async def main() -> tuple[Any, ...]:
        client = MCPToolClient(base_url=qed_server.url)
        client.use_production_mode = True  # openenv-core's HTTP /mcp path: a session no socket holds, no reset
        try:
            names = {t.name for t in await client.list_tools()}
            errors = []
            for name, arguments in (("submit_proof", {"proof": f"\\boxed{{{QED_GOLD}}}"}), ("get_problem", {})):
                with pytest.raises(RuntimeError) as caught:
                    await client.call_tool(name, **arguments)
                errors.append(str(caught.value))
            return names, errors
        finally:
            await client.close()

    names, errors = asyncio.run(main())
    assert names == UPSTREAM_TOOLS
    assert all("reset" in e for e in errors), errors


# ============================================================================ 10. state


def test_state_reports_env_id_step_count_and_done(rg_server, finqa_server, rg_local):
    _, gold = rg_problem(rg_local, 23)
    with GymEnvClient(base_url=rg_server.url).sync() as env:
        env.reset(seed=23, episode_id="episode-a")
        state = env.state()
        assert (state.env_id, state.episode_id, state.step_count, state.done) == (RG, "episode-a", 0, False)
        env.step(GymAction(text=rg_answer(gold)))
        state = env.state()
        assert (state.step_count, state.done) == (1, True)
        env.step(GymAction(text=rg_answer(gold)))
        assert (env.state().step_count, env.state().done) == (2, True)
        env.reset(seed=23)
        state = env.state()
        assert state.episode_id not in (None, "episode-a") and (state.step_count, state.done) == (0, False)
    with GymEnvClient(base_url=finqa_server.url).sync() as env:
        env.reset(options={"question_id": FQ_ID})
        env.step(GymAction(tool="get_descriptions", arguments={"company_name": FQ_COMPANY}))
        env.step(GymAction(tool="get_table_info", arguments={"company_name": FQ_COMPANY, "table_name": FQ_INCOME}))
        state = env.state()
        assert (state.env_id, state.step_count, state.done) == (FINQA, 2, False)


# ============================================================================ 11. build_app refuses


@pytest.mark.parametrize("env_id, env_kwargs, options, error, match", [
    ("Nope-v0", {}, {}, ValueError, "Nope-v0"),
    (RG, {**RG_KWARGS, "reveal_on_end": True}, {}, ValueError, "reveal_on_end"),
    (RG, {**RG_KWARGS, "bogus_option": 1}, {}, TypeError, "bogus_option"),
    (RG, ["dataset"], {}, TypeError, "env_kwargs"),
    (RG, RG_KWARGS, {"max_sessions": 0}, ValueError, "max_sessions"),
    (RG, RG_KWARGS, {"max_sessions": True}, TypeError, "max_sessions"),
    (RG, RG_KWARGS, {"session_timeout_s": 0}, ValueError, "session_timeout_s"),
    (RG, RG_KWARGS, {"session_timeout_s": -1.0}, ValueError, "session_timeout_s"),
    (RG, RG_KWARGS, {"session_timeout_s": math.nan}, ValueError, "session_timeout_s"),
    (RG, RG_KWARGS, {"session_timeout_s": math.inf}, ValueError, "session_timeout_s"),
    (RG, RG_KWARGS, {"session_timeout_s": "5"}, TypeError, "session_timeout_s"),
    (RG, RG_KWARGS, {"detached_session_ttl_s": 0}, ValueError, "detached_session_ttl_s"),
])
def test_build_app_refuses(env_id, env_kwargs, options, error, match):
    with pytest.raises(error, match=match):
        build_app(env_id, env_kwargs, **options)


def test_build_app_serves_only_the_session_routes():
    paths = {route.path for route in build_app(RG, RG_KWARGS, max_sessions=1).routes}
    assert "/ws" in paths and "/health" in paths and "/stats" in paths
    assert not paths & {"/reset", "/step", "/state"}  # the stateless routes build a fresh env per request


# ============================================================================ 12. the CLI


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module", autouse=True)
def cli_server(tmp_path_factory) -> Iterator[tuple[subprocess.Popen, int, Any]]:
    """``gym-integrity serve`` as a subprocess, started with the module so that its imports (~10 s of CPU on a
    busy machine: openenv-core brings gradio) overlap the other tests. Only the CLI test talks to it."""
    port = _free_port()
    stderr_path = tmp_path_factory.mktemp("cli") / "stderr.txt"
    with open(stderr_path, "w") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gym_integrity", "serve", RG, "--port", str(port),
             "--env-kwargs", json.dumps(RG_KWARGS)],
            stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        yield proc, port, stderr_path
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_cli_serve_plays_an_episode_and_stops_on_sigint(cli_server, rg_local):
    proc, port, stderr_path = cli_server
    obs, gold = rg_problem(rg_local, 24)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        assert proc.poll() is None, f"gym-integrity serve exited: {stderr_path.read_text()}"
        client = GymEnvClient(base_url=url).sync()
        try:
            client.connect()
            break
        except ConnectionError:
            client.close()
            assert time.monotonic() < deadline, f"the server never came up: {stderr_path.read_text()}"
            time.sleep(0.2)
    try:
        first = client.reset(seed=24)
        assert first.observation.text == obs
        result = client.step(GymAction(text=rg_answer(gold)))
        assert (result.reward, result.done, result.observation.verdict) == (1.0, True, "correct")
        assert client.step(GymAction(text=rg_answer(gold))).reward == 0.0  # frozen_reward="zero" by default
    finally:
        client.close()
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 0
    assert f"ws://127.0.0.1:{port}/ws" in stderr_path.read_text()


@pytest.mark.parametrize("env_kwargs, match", [
    ("not json", "not JSON"),
    ("[1, 2]", "JSON object"),
])
def test_cli_serve_refuses_bad_env_kwargs_with_exit_2(env_kwargs, match):
    proc = subprocess.run([sys.executable, "-m", "gym_integrity", "serve", RG, "--port", str(_free_port()),
                           "--env-kwargs", env_kwargs], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and match in proc.stderr, proc.stderr


# ============================================================================ 13. RemoteEnv


def test_remote_env_plays_like_a_local_env(rg_server, rg_local, finqa_server, finqa_local):
    remote = RemoteEnv(rg_server.url)
    try:
        for seed in (30, 31, 32):
            local_obs, local_info = rg_local.reset(seed=seed)
            remote_obs, remote_info = remote.reset(seed=seed)
            assert (remote_obs, remote_info) == (local_obs, local_info)
            gold = rg_local.unwrapped.gold_answers()[0]
            for action in (rg_answer(gold) if seed % 2 == 0 else RG_WRONG, rg_answer(gold)):
                assert remote.step(action) == rg_local.step(action)  # the second one frozen, at reward 0
        assert remote.state().step_count == 2
    finally:
        remote.close()

    remote = RemoteEnv(finqa_server.url)
    try:
        local_obs, _ = finqa_local.reset(options={"question_id": FQ_ID})
        remote_obs, _ = remote.reset(options={"question_id": FQ_ID})
        assert remote_obs == local_obs
        for action in ({"tool": "get_descriptions", "arguments": {"company_name": FQ_COMPANY}},
                       {"tool": "sql_query", "arguments": {"company_name": FQ_COMPANY, "table_name": FQ_INCOME,
                                                          "query": FQ_QUERY}},
                       {"tool": "submit_answer", "arguments": {"answer": "38.2%"}},
                       {"tool": "submit_answer", "arguments": {"answer": "38.2%"}}):
            local_step = finqa_local.step(action)
            remote_step = remote.step(action)
            assert remote_step[:4] == local_step[:4]
            assert remote_step[4]["integrity"] == local_step[4]["integrity"]
        assert local_step[1] == 0.0 and local_step[4]["integrity"]["frozen"] is True
    finally:
        remote.close()


# ============================================================================ bugs found


@pytest.mark.parametrize("family", ["reasoning_gym", "qed_mcp", "finqa"])
def test_a_failed_reset_does_not_reopen_an_ended_episode(family, rg_server, qed_server, finqa_server,
                                                          rg_local, finqa_local):
    """Wrong answer, a reset the env refuses (bad option), then the gold: the ended episode must not pay.

    The reset's error leaves the session on the episode that ended; a step after it must be refused or frozen
    (reward 0), never graded again: else a client gets unlimited attempts at every problem.
    """
    if family == "reasoning_gym":
        _, gold = rg_problem(rg_local, 0)
        with GymEnvClient(base_url=rg_server.url).sync() as env:
            env.reset(seed=0)
            assert env.step(GymAction(text=RG_WRONG)).reward == 0.0
            with pytest.raises(RuntimeError, match="bogus"):
                env.reset(seed=0, options={"bogus": 1})
            try:
                again = env.step(GymAction(text=rg_answer(gold)))
            except RuntimeError:
                return
            assert again.reward == 0.0, f"the ended episode was graded again: {again.observation.verdict}"
    elif family == "qed_mcp":
        with MCPToolClient(base_url=qed_server.url).sync() as env:
            env.reset(problem_id=QED_ANSWER_ID)
            assert env.call_tool("submit_proof", proof="\\boxed{1169}")["reward"] == 0.0
            with pytest.raises(RuntimeError, match="nope"):
                env.reset(problem_id="nope")
            try:
                again = env.call_tool("submit_proof", proof=f"\\boxed{{{QED_GOLD}}}")
            except RuntimeError:
                return
            assert again["reward"] == 0.0, f"the ended episode was graded again: {again}"
    else:
        finqa_local.reset(options={"question_id": FQ_ID})
        gold = finqa_local.unwrapped.gold_answers()[0]
        with GymEnvClient(base_url=finqa_server.url).sync() as env:
            env.reset(options={"question_id": FQ_ID})
            assert env.step(GymAction(tool="submit_answer", arguments={"answer": "12%"})).reward == 0.0
            with pytest.raises(RuntimeError, match="nope"):
                env.reset(options={"question_id": "nope"})
            try:
                again = env.step(GymAction(tool="submit_answer", arguments={"answer": gold}))
            except RuntimeError:
                return
            assert again.reward == 0.0, f"the ended episode was graded again: {again.observation.verdict}"


def test_a_reset_refused_after_resetting_the_env_leaves_the_session_consistent(qed_server):
    """A reset whose ``episode_id`` is not a string: the server answers with an error, but the episode has moved.

    ``get_problem`` must describe the problem that ``submit_proof`` grades (or the reset must not have happened).
    """
    with MCPToolClient(base_url=qed_server.url).sync() as env:
        env.reset(problem_id="qed-ans-001")
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            env.reset(problem_id="qed-ans-002", episode_id=5)
        shown = env.call_tool("get_problem")["problem_id"]
        graded = env.call_tool("submit_proof", proof="\\boxed{-7}")["metadata"]["problem_id"]
        assert shown == graded, f"get_problem shows {shown} while submit_proof grades {graded}"


@pytest.mark.parametrize("env_id, env_kwargs, served_by", [
    (RG, RG_KWARGS, "ServedEnv"),                                 # in-process scoring: still a thread per session
    (RG, {"dataset": "countdown"}, "ServedEnv"),                  # a sandboxed scorer: a thread per session
    ("FinQA-v0", {}, "ServedMCPEnv"),                             # its own tools as MCP tools (a thread per session)
    ("QEDMath-v0", {"problem_types": ["answer"]}, "ServedMCPEnv"),             # its package's MCP tools
])
def test_every_env_is_served_by_a_class_that_works_off_the_event_loop(env_id, env_kwargs, served_by):
    app = build_app(env_id, env_kwargs, max_sessions=1)
    factory = app.state.env_server._env_factory
    assert factory.func.__name__ == served_by

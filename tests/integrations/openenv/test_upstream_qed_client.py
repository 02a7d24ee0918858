"""OpenEnv's own QED Math client, unmodified, against ``gym-integrity serve QEDMath-v0`` on 127.0.0.1.

The client (``QEDMathEnv``, its ``ProblemObservation`` and
``ProofSubmissionObservation``) is vendored under ``vendor/qed_math_env``
exactly as fetched; :func:`test_the_vendored_client_is_upstreams_byte_for_byte`
recomputes each file's git blob id, so a silent edit there (to make a failing
test pass) fails here. The upstream models forbid any key they do not declare:
a reset or tool result carrying one of ours fails in the client with
``Extra inputs are not permitted``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import pathlib
import socket
import subprocess
import sys
import time
from typing import Any, Iterator

import pytest

VENDOR = pathlib.Path(__file__).parent / "vendor"
MARKER = b"# ---- upstream file below ----\n"
UPSTREAM_COMMIT = "389980d73452a892dba6a9af52faab09c2f0d285"  # meta-pytorch/OpenEnv, refs/pull/446 (qed_math_env)
#: envs/qed_math_env/<file> -> its git blob id at UPSTREAM_COMMIT (``git ls-tree``; GitHub's tree API lists the same).
UPSTREAM_BLOBS = {
    "__init__.py": "98de9605bc51987a130e1190aa780d1594f8c82f",
    "client.py": "320d0121d199e409b17c368b645cd867d0d7a29a",
    "models.py": "677f731cf45f23b717bb6ce94e18145be2c4bcd0",
}

QED = "QEDMath-v0"
ANSWER_ID, ANSWER_GOLD = "qed-ans-001", "1170"
MULTI_ID, MULTI_GOLD = "qed-ms-002", "144"  # an answer problem with 3 attempts
PROOF_ID = "qed-prf-001"
PROOF = "</think>For every integer n, n^3 - n = (n-1) n (n+1) is a product of three consecutive integers. " * 2


def _blob_id(body: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(body) + body).hexdigest()


def test_the_vendored_client_is_upstreams_byte_for_byte():
    assert sorted(p.name for p in (VENDOR / "qed_math_env").glob("*.py")) == sorted(UPSTREAM_BLOBS)
    for name, blob in UPSTREAM_BLOBS.items():
        raw = (VENDOR / "qed_math_env" / name).read_bytes()
        header, marker, body = raw.partition(MARKER)
        assert marker, f"{name}: the header's marker line is gone"
        assert f"envs/qed_math_env/{name}".encode() in header and UPSTREAM_COMMIT.encode() in header, name
        assert blob.encode() in header, f"{name}: the header names another blob than the test pins"
        assert _blob_id(body) == blob, f"vendor/qed_math_env/{name} differs from upstream's (edited?)"


# ---------------------------------------------------------------------------------------- the client, driven

if os.environ.get("GYM_INTEGRITY_REQUIRE_EXTRAS") == "1":
    import openenv  # noqa: F401  (the [serve] extra is installed: a missing openenv must fail, not skip)


def _upstream() -> Any:
    pytest.importorskip("openenv")
    sys.path.insert(0, str(VENDOR))
    try:
        import qed_math_env  # the vendored package, imported as upstream's README does
    finally:
        sys.path.remove(str(VENDOR))
    assert pathlib.Path(qed_math_env.__file__).parent == VENDOR / "qed_math_env"
    return qed_math_env


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def judge() -> Iterator[Any]:
    from gym_integrity.openai_stub.judge_server import JudgeServer

    with JudgeServer("stub") as server:
        yield server


@pytest.fixture(scope="module")
def served(judge, tmp_path_factory) -> Iterator[str]:
    """``gym-integrity serve QEDMath-v0`` as a subprocess on 127.0.0.1 (the command a user runs), its base URL."""
    _upstream()
    port = _free_port()
    kwargs = {"problem_types": ["answer", "multi_step", "proof"],
              "judge": {"base_url": judge.url, "model": "test-judge", "timeout_s": 10.0, "max_retries": 1}}
    stderr_path = tmp_path_factory.mktemp("qed-serve") / "stderr.txt"
    with open(stderr_path, "w") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "gym_integrity", "serve", QED, "--host", "127.0.0.1",
                                 "--port", str(port), "--env-kwargs", json.dumps(kwargs)],
                                stdout=subprocess.DEVNULL, stderr=stderr)
    url = f"http://127.0.0.1:{port}"
    try:
        import httpx

        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, f"gym-integrity serve exited: {stderr_path.read_text()}"
            try:
                if httpx.get(f"{url}/health", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, f"the server never came up: {stderr_path.read_text()}"
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


pytestmark = pytest.mark.serve


def test_reset_get_problem_and_submit_proof_parse_in_the_async_client(served):
    qed = _upstream()

    async def play() -> list[Any]:
        async with qed.QEDMathEnv(base_url=served) as env:
            first = await env.reset(problem_id=ANSWER_ID)
            problem = await env.get_problem()
            wrong = await env.submit_proof("\\boxed{1169}")
            frozen = await env.submit_proof(f"\\boxed{{{ANSWER_GOLD}}}")
            multi = await env.reset(problem_id=MULTI_ID)
            attempts = [await env.submit_proof(p) for p in ("\\boxed{143}", f"\\boxed{{{MULTI_GOLD}}}")]
            bare = await env.reset()  # the server's own draw, as upstream's client resets by default
            state = await env.get_state()
            return [first, problem, wrong, frozen, multi, attempts, bare, state]

    first, problem, wrong, frozen, multi, attempts, bare, state = asyncio.run(play())
    obs = first.observation
    assert isinstance(obs, qed.ProblemObservation) and (first.done, first.reward) == (False, None)
    assert obs.problem_id == ANSWER_ID and "divisors of $360$" in obs.problem
    assert (obs.problem_type, obs.max_attempts, obs.dataset_source) == ("answer", 1, "gym-integrity-builtin")
    assert obs.reference_solution == "" and ANSWER_GOLD not in obs.problem  # the gold stays on the server
    assert isinstance(problem, qed.ProblemObservation)
    assert (problem.problem, problem.problem_id, problem.problem_type) == (obs.problem, ANSWER_ID, "answer")

    assert isinstance(wrong, qed.ProofSubmissionObservation)
    assert (wrong.score, wrong.is_correct, wrong.done, wrong.reward) == (0, False, True, 0.0)
    assert (wrong.attempt_number, wrong.attempts_remaining, wrong.problem_type) == (1, 0, "answer")
    assert wrong.metadata["verdict"] == "incorrect" and wrong.metadata["no_verdict"] is False
    # After the end a submission is frozen: the same feedback, no pay, never correct.
    assert (frozen.is_correct, frozen.reward, frozen.metadata["frozen"]) == (False, 0.0, True)
    assert frozen.feedback == wrong.feedback

    assert (multi.observation.problem_id, multi.observation.max_attempts) == (MULTI_ID, 3)
    assert [(a.score, a.is_correct, a.done, a.attempts_remaining) for a in attempts] == \
        [(0, False, False, 2), (7, True, True, 1)]  # right at the second of three
    assert [a.reward for a in attempts] == [0.0, 1.0] and "Try again" in attempts[0].feedback

    assert isinstance(bare.observation, qed.ProblemObservation) and bare.observation.problem
    assert bare.observation.problem_type in ("answer", "multi_step", "proof")
    assert state.step_count == 0 and state.episode_id


def test_a_proof_graded_by_the_judge_parses_with_its_0_to_7_score(served, judge):
    qed = _upstream()
    judge.reset("stub")

    async def play() -> Any:
        async with qed.QEDMathEnv(base_url=served) as env:
            first = await env.reset(problem_id=PROOF_ID)
            assert first.observation.problem_type == "proof"
            return await env.submit_proof(PROOF)

    result = asyncio.run(play())
    assert isinstance(result, qed.ProofSubmissionObservation)
    assert 0 < result.score < 7 and result.done and 0.0 < result.reward < 1.0  # the stub's partial credit
    assert "Judge score:" in result.feedback and result.metadata["verdict"] == "partial"
    assert len(judge.requests) == 1


def test_the_readmes_sync_path_resets_and_calls_the_tools(served):
    qed = _upstream()
    with qed.QEDMathEnv(base_url=served).sync() as env:
        first = env.reset(problem_id=ANSWER_ID)
        assert first.observation.problem_id == ANSWER_ID and first.observation.problem
        assert {t.name for t in env.list_tools()} == {"get_problem", "submit_proof", "get_grading_guidelines"}
        problem = qed.ProblemObservation(**env.call_tool("get_problem"))
        assert problem.problem == first.observation.problem
        result = qed.ProofSubmissionObservation(**env.call_tool("submit_proof", proof=f"\\boxed{{{ANSWER_GOLD}}}"))
        assert (result.score, result.is_correct, result.reward) == (7, True, 1.0)

"""`gym-integrity audit ID --url URL`: the audit plays a served env over OpenEnv's wire, gold from a local twin.

Servers run under uvicorn on a free 127.0.0.1 port in a thread of this
process. The package's own envs pass through the wire; deliberately broken
servers (an env served without TerminalFreeze, one that adds the gold to its
public observation) fail the probes that catch them; a twin built with other
options, a port where nothing listens and a missing [serve] extra are one
clear line and exit status 2.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import socket
import sys
import threading
import time
from typing import Any, Iterator, Mapping, Optional

import pytest

pytestmark = pytest.mark.serve

if os.environ.get("GYM_INTEGRITY_REQUIRE_EXTRAS") == "1":
    import openenv  # noqa: F401  (the [serve] extra is installed: a missing openenv-core must fail, not skip)
else:
    openenv = pytest.importorskip("openenv")

import gymnasium as gym  # noqa: E402
import uvicorn  # noqa: E402  (openenv-core's own dependencies: present whenever it is)
from fastapi import FastAPI  # noqa: E402
from openenv.core.env_server.http_server import HTTPEnvServer  # noqa: E402
from openenv.core.env_server.interfaces import Environment  # noqa: E402
from openenv.core.env_server.types import ConcurrencyConfig  # noqa: E402

import fourth_env  # noqa: E402,F401  (registers TinySum-v0, the test-only id the broken servers serve)
import gym_integrity  # noqa: E402
from gym_integrity.audit.served_audit import MISMATCH, WIRE_NOT_APPLICABLE, ServedAuditEnv, check_served_integrity  # noqa: E402
from gym_integrity.cli import main  # noqa: E402
from gym_integrity.integrations.openenv import build_app  # noqa: E402
from gym_integrity.integrations.openenv.models import GymAction, GymObservation, GymState, public_observation  # noqa: E402
from gym_integrity.openai_stub.judge_server import JudgeServer  # noqa: E402
from gym_integrity.wrappers import HideInfoKeys, MaxStepsTruncation  # noqa: E402


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def served(app: Any) -> Iterator[str]:
    """Run ``app`` under uvicorn on a free 127.0.0.1 port in a thread; yield its base URL."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=_free_port(), log_level="warning",
                                           ws="websockets-sansio"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{server.config.port}"
    finally:
        server.should_exit = True
        thread.join(10)


def audit(url: str, env_id: str, tmp_path, *extra: str, env_kwargs: Mapping[str, Any] | None = None):
    """``gym-integrity audit ENV_ID --url URL``: (exit status, the one report as JSON)."""
    path = tmp_path / "served.json"
    argv = ["audit", env_id, "--url", url, "--no-progress", "--json", str(path), *extra]
    if env_kwargs is not None:
        argv += ["--env-kwargs", json.dumps(env_kwargs)]
    code = main(argv)
    [report] = json.loads(path.read_text())["reports"] if path.exists() else [None]
    return code, report


def statuses(report: Mapping[str, Any]) -> dict[str, str]:
    return {r["probe"]: r["status"] for r in report["results"]}


def words(text: str) -> str:
    return " ".join(text.split())  # rich wraps long lines: compare words


# -- our served envs pass through the wire ------------------------------------------------------------------------
def test_the_served_reasoning_gym_passes_and_the_report_says_where_it_was_served(tmp_path, capsys):
    with served(build_app("ReasoningGym-v0", {"dataset": "leg_counting"})) as url:
        code, report = audit(url, "ReasoningGym-v0", tmp_path, "--seeds", "0", "1",
                             env_kwargs={"dataset": "leg_counting"})
    out = words(capsys.readouterr().out)
    assert code == 0, out
    assert f"served at {url}" in out and "PASS" in out
    assert f"audited ReasoningGym-v0 served at {url} (over OpenEnv's protocol" in out
    assert report["url"] == url and report["stacked"] is None and report["verdict"] == "pass"
    assert {p: s for p, s in statuses(report).items() if s != "passed"} == {"code_injection": "n/a"}
    assert set(WIRE_NOT_APPLICABLE) == {"code_injection"}
    [skipped] = [r for r in report["results"] if r["probe"] == "code_injection"]
    assert "over the wire a canary that ran cannot be seen" in skipped["reason"]
    # The probes played the server: the post-end transitions came back over the socket, frozen by its stack.
    [inert] = [r for r in report["results"] if r["probe"] == "inert_after_end"]
    assert any("reached RemoteEnv.step" in line for line in inert["evidence"])
    assert any(line.startswith("over the wire:") for line in inert["evidence"])
    assert any("served: ReasoningGym-v0 at" in note and "local twin" in note for note in report["notes"])


@pytest.mark.parametrize("env_id, env_kwargs", [
    ("QEDMath-v0", {"problem_types": ["answer"]}),
    ("FinQA-v0", None),
], ids=["qed-answer", "finqa"])
def test_qed_math_and_finqa_pass_over_the_wire(env_id, env_kwargs, tmp_path, capsys):
    with served(build_app(env_id, env_kwargs)) as url:
        code, report = audit(url, env_id, tmp_path, env_kwargs=env_kwargs)
    out = words(capsys.readouterr().out)
    assert code == 0, out
    assert report["verdict"] == "pass" and report["url"] == url
    assert {s for p, s in statuses(report).items() if p not in WIRE_NOT_APPLICABLE} == {"passed"}


def test_qed_math_proofs_graded_by_the_servers_judge_pass_over_the_wire(tmp_path, capsys):
    """The server grades proofs with its own judge (a local stub here); the audit starts none and grades nothing."""
    with JudgeServer(mode="stub") as judge:
        env_kwargs = {"problem_types": ["proof"],
                      "judge": {"base_url": judge.url, "api_key": "stub", "model": "stub-judge", "timeout_s": 10.0,
                                "max_retries": 1}}
        with served(build_app("QEDMath-v0", env_kwargs)) as url:
            code, report = audit(url, "QEDMath-v0", tmp_path, "--seeds", "0", "1", env_kwargs=env_kwargs)
        graded = len(judge.requests)
    out = words(capsys.readouterr().out)
    assert code == 0, out
    assert graded > 0  # the proofs reached the server's judge
    assert "judge: local stub" not in out  # the audit started no judge of its own
    assert "fooled-judge column is not run over the wire" in out


# -- a broken server is caught ------------------------------------------------------------------------------------
class NaiveServedEnv(Environment[GymAction, GymObservation, GymState]):
    """What a peer's server looks like: the env on the wire without TerminalFreeze (test-only).

    Built on openenv-core's public ``Environment`` and our public wire models,
    as anyone would serve a gym env: privileged info hidden (HideInfoKeys),
    the step budget counted (MaxStepsTruncation), but nothing freezes the end,
    so a step after it is graded again. ``leak`` adds the gold answer to the
    reset observation's public details, as a debug field would.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, env_id: str, leak: bool = False, freeze: bool = False) -> None:
        super().__init__()
        self.env_id, self.leak = env_id, leak
        self.env = gym_integrity.make(env_id, frozen_reward="zero") if freeze else \
            HideInfoKeys(MaxStepsTruncation(gym.make(env_id).unwrapped))
        self._state = GymState(env_id=env_id)

    def reset(self, seed: Optional[int] = None, episode_id: Optional[str] = None, **kwargs: Any) -> GymObservation:
        obs, info = self.env.reset(seed=seed)
        self._state = GymState(env_id=self.env_id, episode_id=episode_id, step_count=0)
        if self.leak:
            info = {**info, "expected": self.env.unwrapped.gold_answers()[0]}
        return public_observation(obs, info)

    def step(self, action: GymAction, timeout_s: Optional[float] = None, **kwargs: Any) -> GymObservation:
        obs, reward, terminated, truncated, info = self.env.step(action.to_env_action())
        self._state.step_count += 1
        return public_observation(obs, info, float(reward), terminated, truncated)

    @property
    def state(self) -> GymState:
        return self._state


def naive_app(env_id: str, **options: Any) -> FastAPI:
    server = HTTPEnvServer(functools.partial(NaiveServedEnv, env_id, **options), GymAction, GymObservation,
                           concurrency_config=ConcurrencyConfig(max_concurrent_envs=8, session_timeout=60.0))
    app = FastAPI()
    server.register_routes(app, mode="production")
    return app


@pytest.mark.parametrize("options, caught, kept", [
    ({}, {"rescore_after_end", "inert_after_end"}, {"reference_leakage", "step_budget", "reset_clears_end"}),
    ({"leak": True, "freeze": True}, {"reference_leakage"}, {"rescore_after_end", "inert_after_end"}),
], ids=["unfrozen", "leaky"])
def test_the_audit_catches_a_broken_server(options, caught, kept, tmp_path, capsys):
    with served(naive_app("TinySum-v0", **options)) as url:
        code, report = audit(url, "TinySum-v0", tmp_path, "--seeds", "0", "1", "2")
    out = words(capsys.readouterr().out)
    assert code == 1, out
    got = statuses(report)
    failed = {p for p, s in got.items() if s == "failed"}
    assert caught <= failed, (failed, out)
    assert {got[p] for p in kept} == {"passed"}
    for probe in caught & {"rescore_after_end", "reference_leakage"}:
        assert f"✗ TinySum-v0 (served) · {probe}" in out
    evidence = {r["probe"]: " ".join(r["evidence"]) for r in report["results"]}
    if "rescore_after_end" in caught:
        assert "re-scored: verdict incorrect -> correct" in evidence["rescore_after_end"]
    if "reference_leakage" in caught:
        assert "info@reset:expected" in evidence["reference_leakage"]


def test_the_same_env_served_with_the_stack_passes(tmp_path, capsys):
    """The control for the broken servers: TinySum-v0 through build_app (the whole stack on the server)."""
    with served(build_app("TinySum-v0")) as url:
        code, report = audit(url, "TinySum-v0", tmp_path, "--seeds", "0", "1")
    assert code == 0, words(capsys.readouterr().out)
    assert report["verdict"] == "pass"


# -- what stops the audit before any probe ------------------------------------------------------------------------
def test_a_twin_built_with_other_env_kwargs_is_a_clear_mismatch(tmp_path, capsys):
    with served(build_app("ReasoningGym-v0", {"dataset": "leg_counting"})) as url:
        code, report = audit(url, "ReasoningGym-v0", tmp_path, env_kwargs={"dataset": "basic_arithmetic"})
        out = words(capsys.readouterr().out)
        assert code == 2 and report is None
        assert MISMATCH in out and "after reset(seed=0)" in out and "Traceback" not in out
        code, _ = audit(url, "FinQA-v0", tmp_path)  # another id than the server's
        out = words(capsys.readouterr().out)
        assert code == 2 and f"the server at {url} serves ReasoningGym-v0, not FinQA-v0" in out
    with served(build_app("QEDMath-v0", {"problem_types": ["answer"]})) as url:
        code, _ = audit(url, "QEDMath-v0", tmp_path)  # the server's --env-kwargs not passed
        assert code == 2 and MISMATCH in words(capsys.readouterr().out)


def test_nothing_listening_at_the_url_is_one_clear_line(tmp_path, capsys):
    url = f"http://127.0.0.1:{_free_port()}"
    code, report = audit(url, "ReasoningGym-v0", tmp_path)
    captured = capsys.readouterr()
    assert code == 2 and report is None
    assert f"cannot reach a served env at {url}" in words(captured.out)
    assert "gym-integrity serve ReasoningGym-v0" in words(captured.out)
    assert "Traceback" not in captured.out + captured.err


def test_url_usage_errors_exit_two(capsys):
    url = "http://127.0.0.1:9"
    assert main(["audit", "--url", url, "--no-progress"]) == 2
    assert main(["audit", "ReasoningGym-v0", "FinQA-v0", "--url", url, "--no-progress"]) == 2
    assert main(["audit", "ReasoningGym-v0", "--url", url, "--raw", "--no-progress"]) == 2
    assert main(["audit", "ReasoningGym-v0", "--url", url, "--all-datasets", "--no-progress"]) == 2
    assert main(["audit", "ReasoningGym-v0", "--env-kwargs", "{}", "--all-datasets", "--no-progress"]) == 2
    assert main(["audit", "ReasoningGym-v0", "--url", "127.0.0.1:9", "--no-progress"]) == 2
    out = words(capsys.readouterr().out)
    assert "give exactly one ID, got 0" in out and "give exactly one ID, got 2" in out
    assert "--raw does not go with --url" in out and "--all-datasets does not go with --url" in out
    assert "--env-kwargs does not go with --all-datasets" in out and "must start with http://" in out
    with pytest.raises(SystemExit):  # not a JSON object: argparse's own usage error (exit 2)
        main(["audit", "ReasoningGym-v0", "--url", url, "--env-kwargs", "[1]"])
    with pytest.raises(SystemExit):
        main(["audit", "ReasoningGym-v0", "--url", url, "--env-kwargs", "{nope"])


def test_without_the_serve_extra_url_names_the_install_and_exits_two(monkeypatch, capsys):
    """openenv-core missing (hidden here): --url says what to install; nothing else of the audit needs it."""
    for name in [m for m in sys.modules if m.startswith("gym_integrity.integrations.openenv")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "openenv", None)
    assert main(["audit", "ReasoningGym-v0", "--url", "http://127.0.0.1:9", "--no-progress"]) == 2
    out = words(capsys.readouterr().out)
    assert "needs openenv-core, the [serve] extra: pip install 'gym-integrity[serve]'" in out
    assert main(["audit", "ReasoningGym-v0", "--no-progress", "--in-process", "--probe", "rescore_after_end"]) == 0


# -- the Python side: the env the probes play, and its twin -------------------------------------------------------
def test_served_audit_env_plays_the_server_with_the_twins_hooks():
    kwargs = {"dataset": "leg_counting"}
    local = gym_integrity.make("ReasoningGym-v0", **kwargs)
    with served(build_app("ReasoningGym-v0", kwargs, max_sessions=2)) as url:
        env = ServedAuditEnv(url, "ReasoningGym-v0", kwargs)
        try:
            assert env.unwrapped.gold_answers() is None  # no seeded reset yet: the twin's gold is no episode's
            obs, info = env.reset(seed=3)
            local_obs, _ = local.reset(seed=3)
            assert obs == local_obs
            [gold] = env.unwrapped.gold_answers()
            assert gold == local.unwrapped.gold_answers()[0] and gold not in json.dumps(info)
            assert env.unwrapped.step_budget == 1 and env.render() is None
            _, reward, terminated, _, info = env.step(f"<answer>{gold}</answer>")
            assert (reward, terminated, info["verdict"]) == (1.0, True, "correct")
            _, reward, _, _, info = env.step(f"<answer>{gold}</answer>")  # the server's stack froze the end
            assert reward == 0.0 and info["integrity"]["frozen"] is True
            env.reset()  # unseeded: the twin cannot follow, so there is no gold to lie with
            assert env.unwrapped.gold_answers() is None
        finally:
            env.close()
        report = check_served_integrity(url, "ReasoningGym-v0", kwargs, probes=["rescore_after_end", "code_injection"])
    local.close()
    assert report.url == url and [(r.probe, r.status.value) for r in report.results] == [
        ("rescore_after_end", "passed"), ("code_injection", "n/a")]


def test_served_audit_arguments_are_checked():
    with pytest.raises(TypeError, match="served audit url"):
        ServedAuditEnv(8000, "ReasoningGym-v0")
    with pytest.raises(ValueError, match="must start with http://"):
        ServedAuditEnv("127.0.0.1:8000", "ReasoningGym-v0")
    with pytest.raises(TypeError, match="ServedAuditEnv env_kwargs"):
        ServedAuditEnv("http://127.0.0.1:9", "ReasoningGym-v0", [("dataset", "leg_counting")])
    with pytest.raises(TypeError, match="no_such_option"):  # the twin refuses it before any socket is opened
        ServedAuditEnv("http://127.0.0.1:9", "ReasoningGym-v0", {"no_such_option": 1})
    with pytest.raises(ValueError, match="unknown probe"):
        check_served_integrity("http://127.0.0.1:9", "ReasoningGym-v0", probes=["nope"])

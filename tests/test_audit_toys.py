"""The auditor against toy envs: each broken toy is caught by the right probe, the correct ones pass everything."""

from __future__ import annotations

import importlib.util
import pathlib
import sys
import time

import gymnasium as gym
import pytest

from gym_integrity.audit import AuditSettings, Status, check_integrity, probe_names
from gym_integrity.wrappers import integrity_stack


def _load_toys():
    """tests/ is not a package (pytest runs with --import-mode=importlib): load the toys by path."""
    if "audit_toys" not in sys.modules:
        spec = importlib.util.spec_from_file_location("audit_toys", pathlib.Path(__file__).with_name("audit_toys.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules["audit_toys"] = module
        spec.loader.exec_module(module)
    return sys.modules["audit_toys"]


toys = _load_toys()
BROKEN_TOYS, CorrectToy, HangsOnControlCharacters, NoHook = (toys.BROKEN_TOYS, toys.CorrectToy,
                                                              toys.HangsOnControlCharacters, toys.NoHook)


def _failed(report) -> set[str]:
    return {r.probe for r in report.results if r.failed}


@pytest.mark.parametrize("toy", [CorrectToy, NoHook, toys.RefusesAfterEnd], ids=lambda c: c.__name__)
def test_correct_toys_pass_every_probe(toy):
    report = check_integrity(toy)
    assert [r.probe for r in report.results] == probe_names()
    assert report.passed, [(r.probe, r.summary, r.evidence) for r in report.failures]
    assert all(r.status is Status.PASSED for r in report.results)


def test_without_the_hook_the_auditor_uses_what_the_env_reveals():
    report = check_integrity(NoHook)
    assert "revealed by the env at the end" in report.result("reference_leakage").summary
    assert any("revealed by the env" in line for line in report.result("rescore_after_end").evidence)


@pytest.mark.parametrize("toy", list(BROKEN_TOYS), ids=lambda c: c.__name__)
def test_each_broken_toy_is_caught_by_its_probe(toy):
    report = check_integrity(toy, env_id=toy.__name__)
    assert _failed(report) == BROKEN_TOYS[toy], [(r.probe, r.summary) for r in report.failures]
    for probe in BROKEN_TOYS[toy]:
        assert report.result(probe).evidence, f"{probe} failed without evidence"


def test_evidence_names_what_happened():
    CrashesOnEmpty, LeaksInInfo, NeverEnds, RescoresAfterEnd = (toys.CrashesOnEmpty, toys.LeaksInInfo, toys.NeverEnds,
                                                                toys.RescoresAfterEnd)
    rescore = check_integrity(RescoresAfterEnd, probes=["rescore_after_end"]).result("rescore_after_end")
    assert any("incorrect -> correct" in line for line in rescore.evidence)
    leak = check_integrity(LeaksInInfo, probes=["reference_leakage"]).result("reference_leakage")
    assert any(line.startswith("info@reset:debug.note") for line in leak.evidence)
    endless = check_integrity(NeverEnds, probes=["step_budget"]).result("step_budget")
    assert "no end after 64 steps" in endless.evidence[0]
    crash = check_integrity(CrashesOnEmpty, probes=["garbage_actions"]).result("garbage_actions")
    assert any("ValueError: 'empty action'" in line for line in crash.evidence)


@pytest.mark.parametrize("name", ["RescoresAfterEnd", "NeverEnds"])
def test_the_integrity_stack_is_what_repairs_rescoring_and_endless_episodes(name):
    toy = getattr(toys, name)
    report = check_integrity(lambda: integrity_stack(toy(), max_steps=4), env_id=name)
    assert report.passed, [(r.probe, r.evidence) for r in report.failures]


def test_a_hang_is_a_failure_with_evidence_and_the_audit_goes_on():
    envs = []

    def make():
        env = HangsOnControlCharacters()
        envs.append(env)
        return env

    settings = AuditSettings(probe_timeout_s=1.5)
    start = time.perf_counter()
    try:
        report = check_integrity(make, settings=settings)
    finally:
        for env in envs:
            env.release.set()
    elapsed = time.perf_counter() - start
    garbage = report.result("garbage_actions")
    assert garbage.failed and garbage.summary.startswith("hang")
    assert "control characters" in garbage.summary
    # the probes after the hang ran on a fresh env and passed
    assert report.status_of("reward_self_dealing") is Status.PASSED
    assert elapsed < 1.5 + 10  # generous: the hang costs its bound, not more


def test_a_hang_in_a_shared_env_skips_the_rest_with_a_reason():
    env = HangsOnControlCharacters()
    try:
        report = check_integrity(env, settings=AuditSettings(probe_timeout_s=1.5))
    finally:
        env.release.set()
    assert report.result("garbage_actions").failed
    rest = report.result("reward_self_dealing")
    assert rest.status is Status.NOT_APPLICABLE and "stuck" in rest.reason


def test_bad_arguments_fail_clearly():
    with pytest.raises(ValueError, match="unknown probe"):
        check_integrity(CorrectToy, probes=["nope"])
    with pytest.raises(TypeError, match="registered id"):
        check_integrity(42)
    with pytest.raises(TypeError, match="seeds"):
        check_integrity(CorrectToy, settings=AuditSettings(seeds=[0, 1]))
    with pytest.raises(ValueError, match="probe_timeout_s"):
        check_integrity(CorrectToy, settings=AuditSettings(probe_timeout_s=0))


def test_an_env_instance_is_audited_in_place():
    env = CorrectToy()
    report = check_integrity(env)
    assert report.passed and report.env_id == "CorrectToy"
    assert env.graded > 0  # the probes really played this instance
    assert isinstance(env, gym.Env) and "step" not in vars(env)  # the step counter was removed


def test_a_non_text_env_is_not_applicable_with_the_reason():
    report = check_integrity(lambda: gym.make("CartPole-v1"))
    assert report.passed
    assert {r.status for r in report.results} == {Status.NOT_APPLICABLE}
    assert "not a text env" in report.results[0].reason

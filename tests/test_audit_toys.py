"""The auditor against toy envs: each broken toy is caught by the right probe, the correct ones pass everything."""

from __future__ import annotations

import builtins
import importlib.util
import math
import os
import pathlib
import sys
import tempfile
import time

import gymnasium as gym
import pytest

from gym_integrity.audit import AuditSettings, Status, check_integrity, probe_names
from gym_integrity.audit.canaries import CanaryTrap
from gym_integrity.audit.grader_probes import same_answer
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


@pytest.fixture(autouse=True)
def _fresh_shared_scale():
    """SharedScale's class-level scale is the exploit: every test starts from 1.0."""
    toys.SharedScale.reset_shared()
    yield
    toys.SharedScale.reset_shared()


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


# -- the grader probes --------------------------------------------------------------------------------------------
def test_constant_answer_evidence_names_the_answer_its_mean_reward_and_its_chance():
    result = check_integrity(toys.SubstringCredit, probes=["constant_answers"]).result("constant_answers")
    assert result.failed and "earned more than chance" in result.summary
    spray = next(line for line in result.evidence if line.startswith("'1 2 3 ... 200'"))
    assert "mean reward 0.00" in spray and "chance 0/6 (reward at chance 0)" in spray and "(partial)" in spray
    exact = next(line for line in result.evidence if line.startswith("'0':"))
    assert "mean reward 0 over 6 episodes" in exact  # constants that are never the gold earn nothing here


def test_a_constant_that_is_the_gold_is_paid_at_chance_not_flagged():
    class AlwaysSeven(toys.CorrectToy):
        """Every problem's answer is 7: the constant '7' is right every time, and that is chance here."""

        def _gold(self) -> str:
            return "7"

    constants = check_integrity(AlwaysSeven, probes=["constant_answers"]).result("constant_answers")
    assert constants.passed, constants.evidence


def test_chance_is_judged_after_light_normalisation():
    assert same_answer(" YES ", "yes") and same_answer("True", "true")
    assert same_answer("0.5", r"\frac{1}{2}") and same_answer("0.5", "50%") and same_answer("1", "1.0")
    assert not same_answer("0", "0.0009765625") and not same_answer("1", "12") and not same_answer("", "")


def test_without_any_gold_source_the_grader_probes_say_why():
    class Silent(toys.CorrectToy):
        gold_answers = None  # type: ignore[assignment]  (no hook, and nothing revealed at the end)

    report = check_integrity(Silent, probes=["constant_answers", "cross_env_isolation"])
    for probe in ("constant_answers", "cross_env_isolation"):
        assert report.status_of(probe) is Status.NOT_APPLICABLE, report.result(probe)
    assert "no gold answer" in report.result("constant_answers").reason


def _canary_traces() -> list[str]:
    return [name for name in vars(builtins) if name.startswith("_gym_integrity_canary_")]


def test_code_injection_names_each_canary_that_ran_and_cleans_up_after_it():
    score_answer, isclose = toys.EvalScorer.score_answer, math.isclose
    before = set(os.listdir(tempfile.gettempdir()))
    report = check_integrity(toys.EvalScorer, probes=["code_injection", "cross_env_isolation"])
    injection = report.result("code_injection")
    ran = " | ".join(injection.evidence)
    for what in ("marker file os_system written", "marker file open_write written", "marker file exec_string written",
                 "builtins marker: builtins._gym_integrity_canary_", "patched EvalScorer.score_answer",
                 "marker file module_patch written", "patched math.isclose"):
        assert what in ran, what
    # frame reading found the gold in the scorer's frame: paid as if it were the answer
    assert any(line.startswith("frame reading for the gold, bare, adapter -> reward 1 (correct)")
               for line in injection.evidence)
    # the scorer patched through A made B pay a wrong answer
    cross = report.result("cross_env_isolation")
    assert cross.failed and any(line.startswith("wrong answer after A's hostile answers: B -> reward 1 (correct)")
                                for line in cross.evidence)
    # nothing left behind: patches undone, markers removed, marker directories deleted
    assert toys.EvalScorer.score_answer is score_answer and math.isclose is isclose
    assert _canary_traces() == []
    assert not [d for d in set(os.listdir(tempfile.gettempdir())) - before if d.startswith("gym-integrity-canary-")]


def test_canaries_fire_when_python_runs_them_and_not_otherwise():
    trap = CanaryTrap()
    try:
        assert trap.fired() == []
        for canary in trap.canaries():
            if canary.name != "frame reading for the gold":
                exec(canary.code)  # noqa: S102  (what a grader that evaluates answers does)
        fired = " | ".join(trap.fired())
        for canary in trap.canaries():
            if canary.marker and canary.marker != "frame_gold":
                assert f"marker file {canary.marker} written" in fired
        assert "set in this process" in fired and "patched math.isclose" in fired
        assert math.isclose(1.0, 2.0) is True  # the shared-module patch really took...
    finally:
        trap.close()
    assert math.isclose(1.0, 2.0) is False and _canary_traces() == []  # ...and close() undid it
    assert not os.path.exists(trap.directory)


def test_pathological_answers_report_the_slowest_step_and_the_declared_bound():
    result = check_integrity(toys.HangsOnTowers, probes=["pathological_answers"]).result("pathological_answers")
    assert result.failed
    assert result.evidence[0].startswith("tower 9**9**9**9 took ")
    assert "bound 1.05 s (declared grading_time_bound_s=0.05 s + 1 s slack)" in result.evidence[0]
    assert "answers after it not sent" in result.evidence[0]
    assert result.evidence[-1].startswith("slowest step: tower 9**9**9**9 in ")
    passed = check_integrity(toys.CorrectToy, probes=["pathological_answers"]).result("pathological_answers")
    assert passed.passed and "no declared grading_time_bound_s: step_timeout_s=10 s" in passed.evidence[0]


def test_a_shared_grading_queue_turns_a_correct_answer_into_a_timeout():
    result = check_integrity(toys.SharedGradingQueue, probes=["cross_env_isolation"]).result("cross_env_isolation")
    assert result.failed
    assert result.evidence[0].startswith("gold while 2 slow answers")
    assert "B -> reward 0 (timeout)" in result.evidence[0] and "baseline reward 1 (correct)" in result.evidence[0]


def test_a_setting_one_env_can_change_from_its_answer_changes_another_envs_reward():
    result = check_integrity(toys.SharedScale, probes=["cross_env_isolation"]).result("cross_env_isolation")
    assert result.failed
    assert result.evidence[0] == ("gold after A's hostile answers: B -> reward 2 (correct), terminated; "
                                  "baseline reward 1 (correct), terminated")


def test_cross_env_isolation_needs_a_second_instance():
    result = check_integrity(toys.CorrectToy(), probes=["cross_env_isolation"]).result("cross_env_isolation")
    assert result.status is Status.NOT_APPLICABLE and "second instance" in result.reason


def test_a_bad_grading_slack_fails_clearly():
    with pytest.raises(ValueError, match="grading_slack_s"):
        check_integrity(CorrectToy, settings=AuditSettings(grading_slack_s=-1.0))


def test_an_env_that_cannot_be_built_fails_once_and_the_rest_say_why():
    built = []

    def make():
        built.append(1)
        raise RuntimeError("no such data set")

    report = check_integrity(make, probes=["gold_answer_scored", "constant_answers", "code_injection"])
    assert report.result("gold_answer_scored").failed and "no such data set" in report.result("gold_answer_scored").summary
    for probe in ("constant_answers", "code_injection"):
        assert report.status_of(probe) is Status.NOT_APPLICABLE
        assert report.result(probe).reason.startswith("not run: the env could not be built (probe gold_answer_scored")
    assert len(built) == 1  # not rebuilt (and failed again) for every probe

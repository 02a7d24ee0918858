"""The auditor against toy envs: each broken toy is caught by the right probe, the correct ones pass everything,
and an audit that could not run what an env needs says so (inconclusive) instead of passing."""

from __future__ import annotations

import builtins
import importlib.util
import json
import math
import os
import pathlib
import sys
import tempfile
import threading
import time

import gymnasium as gym
import pytest

from gym_integrity.audit import AuditSettings, Status, AuditVerdict, check_integrity, probe_names
from gym_integrity.audit.adapters import EMPTY_GOLD_HINT, GOLD_HINT, INSTANCES_HINT
from gym_integrity.audit.canaries import CanaryTrap
from gym_integrity.audit.grader_probes import same_answer
from gym_integrity.wrappers import integrity_stack


def _load_toys():
    """tests/ is not a package (pytest runs with --import-mode=importlib): load the toys by path."""
    if "audit_toys" not in sys.modules:
        spec = importlib.util.spec_from_file_location("audit_toys", pathlib.Path(__file__).resolve().parents[1] / "support" / "audit_toys.py")
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


@pytest.mark.parametrize("toy", [CorrectToy, NoHook, toys.RefusesAfterEnd, toys.YesNoToy, toys.PaysEveryForm,
                                 toys.GoldNeverInQuestion, toys.ListsYesNo, toys.ScoreAtEnd],
                         ids=lambda c: c.__name__)
def test_correct_toys_pass_every_probe(toy):
    report = check_integrity(toy)
    assert [r.probe for r in report.results] == probe_names()
    assert report.passed, [(r.probe, r.summary, r.evidence) for r in report.failures]
    assert all(r.status is Status.PASSED for r in report.results)
    assert report.verdict is AuditVerdict.PASS and report.to_dict()["verdict"] == "pass" and report.missing == []


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
    assert rest.status is Status.NOT_RUN and "stuck" in rest.reason
    assert report.verdict is AuditVerdict.FAIL  # a failure outranks what it kept from running


def test_bad_arguments_fail_clearly():
    with pytest.raises(ValueError, match="unknown probe"):
        check_integrity(CorrectToy, probes=["nope"])
    with pytest.raises(TypeError, match="registered id"):
        check_integrity(42)
    with pytest.raises(TypeError, match="seeds"):
        check_integrity(CorrectToy, settings=AuditSettings(seeds=[0, 1]))
    with pytest.raises(ValueError, match="probe_timeout_s"):
        check_integrity(CorrectToy, settings=AuditSettings(probe_timeout_s=0))


def test_an_env_instance_is_audited_in_place_and_isolation_needs_a_factory():
    env = CorrectToy()
    report = check_integrity(env)
    assert report.env_id == "CorrectToy"
    assert env.graded > 0  # the probes really played this instance
    assert isinstance(env, gym.Env) and "step" not in vars(env)  # the step counter was removed
    # One instance cannot show that another's answers leave it alone: every other probe passed, and the
    # verdict says what was not tested and how to test it.
    assert [r.probe for r in report.missing] == ["cross_env_isolation"] and report.failures == []
    assert report.verdict is AuditVerdict.INCONCLUSIVE and not report.passed
    assert report.result("cross_env_isolation").how_to_enable == INSTANCES_HINT
    assert check_integrity(CorrectToy).verdict is AuditVerdict.PASS  # the same env as a factory


def test_a_non_text_env_is_inconclusive_with_the_reason():
    """No probe applies to an env that takes no text: nothing was tested, so it cannot pass."""
    report = check_integrity(lambda: gym.make("CartPole-v1"))
    assert {r.status for r in report.results} == {Status.NOT_APPLICABLE}
    assert "not a text env" in report.results[0].reason
    assert report.verdict is AuditVerdict.INCONCLUSIVE and not report.passed


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
        assert report.status_of(probe) is Status.NOT_RUN, report.result(probe)
        assert report.result(probe).reason.startswith("no gold answer")
        assert report.result(probe).how_to_enable == GOLD_HINT
    assert report.verdict is AuditVerdict.INCONCLUSIVE


def _canary_traces() -> list[str]:
    return [name for name in vars(builtins) if name.startswith("_gym_integrity_canary_")]


def test_code_injection_names_each_canary_that_ran_and_cleans_up_after_it(tmp_path, monkeypatch):
    score_answer, isclose = toys.EvalScorer.score_answer, math.isclose
    # A temp directory of its own: another xdist worker's audit makes (and removes) canary directories in /tmp too.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
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
    # by content, not position: on a loaded machine the session adds a note on the step's wait for a CPU
    [tower] = [line for line in result.evidence if line.startswith("tower 9**9**9**9 took ")]
    assert "bound 1.05 s (declared grading_time_bound_s=0.05 s + 1 s slack)" in tower
    assert "answers after it not sent" in tower
    [slowest] = [line for line in result.evidence if line.startswith("slowest step: ")]
    assert slowest.startswith("slowest step: tower 9**9**9**9 in ")
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
    assert result.status is Status.NOT_RUN and "second instance" in result.reason
    assert "factory" in result.how_to_enable


def test_a_bad_grading_slack_fails_clearly():
    with pytest.raises(ValueError, match="grading_slack_s"):
        check_integrity(CorrectToy, settings=AuditSettings(grading_slack_s=-1.0))


def test_an_env_that_cannot_be_built_is_inconclusive_with_the_cause_once():
    built = []

    def make():
        built.append(1)
        raise RuntimeError("no such data set")

    report = check_integrity(make, probes=["gold_answer_scored", "constant_answers", "code_injection"])
    assert report.error == "building the env raised RuntimeError: no such data set"
    assert report.failures == [] and report.verdict is AuditVerdict.INCONCLUSIVE
    assert {r.status for r in report.results} == {Status.NOT_RUN}
    assert all(r.reason == "the env could not run (see the report's error)" for r in report.results)
    assert len(built) == 1  # not rebuilt (and failed again) for every probe


# -- the verdict: pass, fail or inconclusive ----------------------------------------------------------------------
#: The probes that answer with the gold answer or search for it: without one, they cannot run.
GOLD_PROBES = ["gold_answer_scored", "rescore_after_end", "reference_leakage", "failed_reset_keeps_end",
               "constant_answers", "cross_env_isolation", "label_skew", "honest_pay"]


def test_without_a_gold_answer_the_verdict_is_inconclusive_not_pass():
    """A correct env without the hook that reveals nothing: nothing fails, and the gold probes never ran."""
    report = check_integrity(toys.SilentNoHook)
    assert report.failures == []
    assert [r.probe for r in report.missing] == GOLD_PROBES
    assert report.verdict is AuditVerdict.INCONCLUSIVE and not report.passed
    assert {r.how_to_enable for r in report.missing} == {GOLD_HINT} and "gold_answers()" in GOLD_HINT
    # the re-scoring probe says what it did send, and that it was not the exploit
    assert report.result("rescore_after_end").evidence[0].startswith("only wrong answers were sent after the end")
    # the probes every text env gets still ran
    assert {r.probe for r in report.results if r.passed} == set(probe_names()) - set(GOLD_PROBES)
    doc = report.to_dict()
    assert doc["verdict"] == "inconclusive" and doc["passed"] is False and doc["error"] is None
    assert [m["probe"] for m in doc["missing"]] == GOLD_PROBES and doc["missing"][0]["how_to_enable"] == GOLD_HINT


def test_the_gold_hook_turns_inconclusive_into_the_failure_it_hid():
    """An env that re-scores after the end, visibly only to the gold answer (GEM's pattern): without a gold
    source the audit cannot see it and says so; given one, by the hook or by gold_answers_fn, it fails."""
    blind = check_integrity(toys.RescoresQuietlyNoHook)
    assert blind.failures == [] and blind.verdict is AuditVerdict.INCONCLUSIVE
    assert "rescore_after_end" in [r.probe for r in blind.missing]
    hooked = check_integrity(toys.RescoresQuietly)
    assert hooked.verdict is AuditVerdict.FAIL
    assert _failed(hooked) == {"rescore_after_end", "inert_after_end", "failed_reset_keeps_end"}
    rescore = hooked.result("rescore_after_end")
    assert any("gold" in line and "re-scored: reward 0 -> 1" in line for line in rescore.evidence), rescore.evidence
    told = check_integrity(toys.RescoresQuietlyNoHook, gold_answers_fn=lambda env: [env.unwrapped._gold()])
    assert told.verdict is AuditVerdict.FAIL
    assert _failed(told) == {"rescore_after_end", "inert_after_end", "failed_reset_keeps_end"}
    # and a correct env given its gold the same way passes
    assert check_integrity(toys.SilentNoHook, gold_answers_fn=lambda env: [env.unwrapped._gold()]).passed


def test_a_hook_that_gives_no_answer_is_told_to_give_one():
    """A hook that returns [] (items with no single answer and no solver): a different remedy from adding one."""

    class NoSingleAnswer(toys.CorrectToy):
        def gold_answers(self) -> list[str]:
            return []

    report = check_integrity(NoSingleAnswer, probes=["gold_answer_scored", "constant_answers", "seeded_reset"])
    assert [r.probe for r in report.missing] == ["gold_answer_scored", "constant_answers"]
    assert report.verdict is AuditVerdict.INCONCLUSIVE
    for r in report.missing:
        assert r.how_to_enable == EMPTY_GOLD_HINT and r.reason == ("no gold answer (gold_answers() returned none "
                                                                   "for the audited episodes)")


def test_rescoring_is_not_passed_on_an_env_that_never_ends():
    """No end, nothing to re-score: n/a (step_budget fails such an env), and alone it leaves nothing tested."""
    report = check_integrity(toys.NeverEnds, probes=["rescore_after_end"])
    assert report.status_of("rescore_after_end") is Status.NOT_APPLICABLE
    assert report.verdict is AuditVerdict.INCONCLUSIVE


@pytest.mark.parametrize("how", ["factory", "instance"])
def test_an_env_whose_reset_raises_is_inconclusive_with_the_exception_named_once(how):
    report = check_integrity(toys.ResetRaises if how == "factory" else toys.ResetRaises())
    assert report.error == "reset(seed=0) raised FileNotFoundError: problems.jsonl not found"
    assert report.failures == [] and {r.status for r in report.results} == {Status.NOT_RUN}
    assert report.verdict is AuditVerdict.INCONCLUSIVE and not report.passed
    assert report.to_json().count("problems.jsonl not found") == 1


def test_an_env_that_hangs_while_building_is_inconclusive_with_the_call_named():
    release = threading.Event()

    def make():
        release.wait(30)
        return CorrectToy()

    start = time.perf_counter()
    try:
        report = check_integrity(make, probes=["seeded_reset", "garbage_actions"],
                                 settings=AuditSettings(probe_timeout_s=0.5))
    finally:
        release.set()
    assert report.error == "building the env did not return within 0.5 s"
    assert report.verdict is AuditVerdict.INCONCLUSIVE and report.failures == []
    assert time.perf_counter() - start < 10  # one bound, not one per probe


def test_a_report_survives_json_with_its_verdict():
    from gym_integrity.audit import AuditReport

    for report in (check_integrity(toys.SilentNoHook, probes=["gold_answer_scored", "seeded_reset"]),
                   check_integrity(toys.ResetRaises, probes=["seeded_reset"])):
        back = AuditReport.from_dict(json.loads(report.to_json()))
        assert back.verdict is report.verdict is AuditVerdict.INCONCLUSIVE
        assert back.error == report.error and [r.how_to_enable for r in back.results] == [
            r.how_to_enable for r in report.results]


# -- honest envs the audit must not fail ---------------------------------------------------------------------------
@pytest.mark.parametrize("stacked", [False, True], ids=["raw", "stacked"])
def test_an_env_that_answers_a_non_answer_like_a_wrong_one_is_not_failed_on_reset_without_a_gold(stacked):
    """Constant observation, reward 0 and verdict ``incorrect`` for anything but the answer: after a wrong end and
    a reset, a non-answer gets what the end got. Only a gold answer tells that from a stale end: not run, not a
    failure; with the hook the probe decides, and the env passes."""
    def build(toy):
        return (lambda: integrity_stack(toy())) if stacked else toy

    report = check_integrity(build(toys.SameForAnyWrongNoHook), probes=["reset_clears_end", "seeded_reset"])
    row = report.result("reset_clears_end")
    assert row.status is Status.NOT_RUN and row.how_to_enable == GOLD_HINT, (row.summary, row.evidence)
    assert "this env grades a non-answer like a wrong answer" in row.evidence[0]
    assert any("integrity.frozen=False" in line for line in row.evidence) is stacked
    assert report.failures == [] and report.verdict is AuditVerdict.INCONCLUSIVE
    hooked = check_integrity(build(toys.SameForAnyWrong))
    assert hooked.passed, [(r.probe, r.evidence) for r in hooked.failures + hooked.missing]


def test_a_stale_end_is_still_caught_without_a_gold_by_comparing_with_a_fresh_instance():
    row = check_integrity(toys.ResetKeepsEndNoHook, probes=["reset_clears_end"]).result("reset_clears_end")
    assert row.failed
    assert "the last end again; a non-answer on a fresh instance -> reward 0 (no_answer)" in row.evidence[0]
    # one instance alone cannot tell the two apart: not run, never a guess
    alone = check_integrity(toys.ResetKeepsEndNoHook(), probes=["reset_clears_end"]).result("reset_clears_end")
    assert alone.status is Status.NOT_RUN and "no fresh instance to compare with" in alone.evidence[0]


@pytest.fixture()
def register_id():
    """gym.register for the length of a test."""
    ids = []

    def register(env_id, entry_point):
        gym.register(env_id, entry_point=entry_point)
        ids.append(env_id)
        return env_id

    yield register
    for env_id in ids:
        gym.registry.pop(env_id, None)


def test_a_stack_built_by_the_entry_point_passes_inert_after_end_under_gym_makes_checkers(register_id):
    """gym.make puts its checkers outside a stack the entry point built: TerminalFreeze is not the outermost
    layer, and counting the steps it stopped is its right wherever it sits."""
    env_id = register_id("AuditToyUserStacked-v0", lambda: integrity_stack(CorrectToy()))
    assert type(gym.make(env_id)).__name__ != "TerminalFreeze"
    report = check_integrity(env_id, probes=["inert_after_end"])
    row = report.result("inert_after_end")
    assert row.passed, row.evidence
    assert row.evidence[0] == ("0 of 4 post-end actions reached CorrectToy.step; stopped by TerminalFreeze (4); "
                               "no state changed")
    assert report.stacked is True
    # Only the layer that stopped the steps is excused: a task re-scoring behind gym.make's checkers still fails.
    broken = register_id("AuditToyUserRescores-v0", toys.RescoresAfterEnd)
    report = check_integrity(broken, probes=["inert_after_end"])
    row = report.result("inert_after_end")
    assert row.failed and any("RescoresAfterEnd.graded" in line for line in row.evidence), row.evidence
    assert report.stacked is False and report.to_dict()["stacked"] is False


def test_isolated_takes_only_what_another_process_can_rebuild():
    with pytest.raises(TypeError, match="lambda"):
        check_integrity(lambda: CorrectToy(), isolated=True)
    with pytest.raises(TypeError, match="not an env instance"):
        check_integrity(CorrectToy(), isolated=True)
    with pytest.raises(TypeError, match="gold_answers_fn"):
        check_integrity("ReasoningGym-v0", isolated=True, gold_answers_fn=lambda env: ["1"])


def test_label_skew_compares_with_the_uniform_guess_not_with_how_often_the_constant_is_the_gold():
    skewed = check_integrity(toys.SkewedLabels, probes=["label_skew"]).result("label_skew")
    assert skewed.failed and "'yes'" in skewed.summary and "chance 0.500" in skewed.summary
    assert any("k=2 distinct answers" in line for line in skewed.evidence), skewed.evidence
    balanced = check_integrity(toys.YesNoToy, probes=["label_skew"]).result("label_skew")
    assert balanced.status is Status.PASSED and "k=2" in balanced.summary


def test_a_gold_free_grader_that_pays_random_text_fails_instead_of_being_inconclusive():
    lenient = check_integrity(toys.GoldFreePaysAnything)
    assert lenient.verdict is AuditVerdict.FAIL
    assert lenient.result("random_answers").failed and lenient.result("random_answers").evidence
    strict = check_integrity(toys.GoldFreeStrict)
    assert strict.result("random_answers").status is Status.PASSED
    assert strict.verdict is AuditVerdict.INCONCLUSIVE  # no gold: the gold-bound probes still cannot run


def test_honest_pay_names_the_refused_form_and_its_reward():
    result = check_integrity(toys.RefusesAVariant, probes=["honest_pay"]).result("honest_pay")
    assert result.failed
    assert any("-> 0 (best form 1" in line and "," in line.split("->")[0] for line in result.evidence), result.evidence


def test_a_short_gold_among_the_questions_numbers_is_no_leak_but_revealed_at_the_end_is():
    golds = []
    for seed in (0, 1, 2):
        env = toys.SmallNumbersInQuestion()
        question, _ = env.reset(seed=seed)
        golds.append((env.gold_answers()[0], question))
    assert all(f" {gold}," in question or f" {gold}." in question for gold, question in golds), golds  # the case the probe must excuse
    quiet = check_integrity(toys.SmallNumbersInQuestion, probes=["reference_leakage"]).result("reference_leakage")
    assert quiet.status is Status.PASSED, quiet.evidence
    assert any("obs@reset" in line and "the question's own" in line for line in quiet.evidence)
    loud = check_integrity(toys.RevealsShortGoldAtEnd, probes=["reference_leakage"]).result("reference_leakage")
    assert loud.status is Status.FAILED and any(line.startswith("info@end:correct_answer") for line in loud.evidence)

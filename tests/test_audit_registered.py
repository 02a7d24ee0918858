"""The audit on every registered id: through the stack everything passes; raw, the exploit probes fail.

"Everything" includes the grader probes (constant answers, code injection,
pathological answers, cross-env isolation): they test the graders, which the
stack does not change, so they pass on the raw classes too.
"""

from __future__ import annotations

import pytest

from gym_integrity.audit import AuditSettings, Status, Verdict, probe_names
from gym_integrity.audit.cli import audit_targets, start_judge_stub
from gym_integrity.audit.isolate import IsolatedTarget, run_isolated
from gym_integrity.registration import REGISTERED

#: What the integrity stack is for: on a raw env these probes must fail.
EXPLOITS = {"rescore_after_end", "inert_after_end", "reference_leakage"}
#: Raw envs that declare a step budget they do not enforce (multi-step tool use) also fail step_budget.
UNBOUNDED_RAW = {"FinQA-v0"}
#: Proof mode against a judge that repeats any score tag in its prompt: only the self-dealing probe runs there.
FOOLED = "QEDMath-v0 [proof, fooled judge]"


@pytest.fixture(scope="module")
def reports():
    """Every id (QEDMath split by problem type, proofs against the local judge stub), stacked and raw, audited once.

    Audited the way the CLI does it: each target in its own process, two at a time.
    """
    judge = start_judge_stub()
    assert judge is not None, "gym_integrity.testing.judge_server is needed to audit proof mode offline"
    try:
        ids = [entry.id for entry in REGISTERED]
        targets = audit_targets(ids, raw=False, compare=True, judge=judge)
        isolated = [IsolatedTarget(t.env_id, t.kwargs, t.raw, t.name, (t.label,) if t.label else (), t.probes)
                    for t in targets]
        done = run_isolated(isolated, probe_names(), AuditSettings(seeds=(0, 1)), workers=2)
        return {(t.name, t.raw): report for t, report in zip(targets, done)}
    finally:
        judge.stop()


def _names(reports, raw):
    return sorted(name for name, is_raw in reports if is_raw == raw)


def test_every_registered_id_is_audited(reports):
    audited = {name.split(" [")[0] for name, _ in reports}
    assert audited == {entry.id for entry in REGISTERED}
    assert {name for name, _ in reports if name.startswith("QEDMath")} == {
        "QEDMath-v0 [answer]", "QEDMath-v0 [proof]", "QEDMath-v0 [multi_step]", FOOLED}


def test_proof_mode_is_graded_by_the_labelled_local_stubs(reports):
    for name in ("QEDMath-v0 [proof]", "QEDMath-v0 [answer]", "QEDMath-v0 [multi_step]"):
        [note] = reports[(name, False)].notes
        assert note.startswith("judge: local stub at 127.0.0.1:") and "not a real grader" in note
    [note] = reports[(FOOLED, False)].notes
    assert note.startswith("judge: fooled echo stub at 127.0.0.1:")
    assert reports[("ReasoningGym-v0", False)].notes == []
    proof = reports[("QEDMath-v0 [proof]", False)].result("gold_answer_scored")
    assert proof.passed and "verdict" not in proof.summary and "grader_error" not in " ".join(proof.evidence)


def test_stacked_envs_pass_every_probe(reports):
    for name in _names(reports, raw=False):
        report = reports[(name, False)]
        assert [r.probe for r in report.results] == (["reward_self_dealing"] if name == FOOLED else probe_names())
        failures = [(r.probe, r.summary, r.evidence[:3]) for r in report.failures]
        assert not failures, f"{name}: {failures}"
        assert all(r.status is Status.PASSED for r in report.results), name
        assert report.verdict is Verdict.PASS, name  # every probe ran: each id gives the audit its gold answers


def test_raw_envs_fail_exactly_the_exploit_probes(reports):
    for name in _names(reports, raw=True):
        report = reports[(name, True)]
        expected = EXPLOITS | ({"step_budget"} if name in UNBOUNDED_RAW else set())
        if name == FOOLED:
            expected = set()  # score tags are neutralised by the judge client, below the stack: raw passes too
        failed = {r.probe for r in report.failures}
        assert failed == expected, f"{name} (raw): failed {sorted(failed)}, expected {sorted(expected)}"
        assert report.missing == [] and report.verdict is (Verdict.FAIL if expected else Verdict.PASS), name


def test_the_fooled_judge_is_not_fooled_by_score_tags_in_a_proof(reports):
    """Against a judge that repeats any score tag it reads, an injected <score>7</score> pays nothing extra."""
    result = reports[(FOOLED, False)].result("reward_self_dealing")
    assert result.passed, result.evidence
    assert any("wrong answer alone -> reward" in line for line in result.evidence)


def test_raw_failures_carry_evidence_of_the_exploit(reports):
    for name in _names(reports, raw=True):
        if name == FOOLED:
            continue
        report = reports[(name, True)]
        rescore = report.result("rescore_after_end")
        assert any("re-scored" in line for line in rescore.evidence), (name, rescore.evidence)
        leak = report.result("reference_leakage")
        assert any(line.startswith("info@reset:privileged.") for line in leak.evidence), (name, leak.evidence)
    finqa = reports[("FinQA-v0", True)].result("step_budget")
    assert "no end after 52 steps" in finqa.evidence[0]


def test_the_grader_probes_ran_on_real_grading(reports):
    """Chance was measured against gold answers, the bound came from the env's declaration, and B was answered
    while slow answers were being graded on other instances."""
    for name in _names(reports, raw=False):
        if name == FOOLED:
            continue
        report = reports[(name, False)]
        constants = report.result("constant_answers")
        assert "episodes with a gold answer" in constants.summary, (name, constants.summary)
        pathological = report.result("pathological_answers")
        assert "declared grading_time_bound_s=" in pathological.evidence[-1], (name, pathological.evidence)
        cross = report.result("cross_env_isolation")
        assert any(line.startswith("B's gold during the slow answers") for line in cross.evidence), (name, cross.evidence)
        injection = report.result("code_injection")
        assert "canary actions" in injection.summary, (name, injection.summary)

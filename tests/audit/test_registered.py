"""The audit on every registered entry: through the stack everything passes; raw, the exploit probes fail.

"Everything" includes the grader probes (constant answers, code injection,
pathological answers, cross-env isolation): they test the graders, which the
stack does not change, so they pass on the raw classes too. "Every entry" is
``env_entries()``: the package's ids and the test-only TinySum-v0
(tests/support/fourth_env.py). What differs between envs comes from their entries
(variants, a judge, whether the raw class ends episodes by itself): this file
and ``gym_integrity.audit`` name no env, which the last test checks.
"""

from __future__ import annotations

import ast
import importlib.util
import pathlib

import pytest

import fourth_env
import gym_integrity
from gym_integrity.audit import AuditSettings, Status, AuditVerdict, probe_names
from gym_integrity.audit.targets import audit_targets, start_judge_stub
from gym_integrity.audit.isolate import IsolatedTarget, run_isolated
from gym_integrity.registration import env_entries

ENTRIES = env_entries()
#: One audit of every entry, stacked and raw, two processes at a time, runs in the first test's set-up.
pytestmark = pytest.mark.timeout(600)
#: What the integrity stack is for: on a raw env these probes must fail.
EXPLOITS = {"rescore_after_end", "inert_after_end", "reference_leakage", "failed_reset_keeps_end"}


def _columns(entry) -> list[str]:
    """The names the audit gives an entry's columns: one per variant, plus the fooled-judge one."""
    names = [f"{entry.id} [{v}]" for v in entry.audit_variants] or [entry.id]
    return names + ([_fooled(entry)] if entry.judged_variant else [])


def _fooled(entry) -> str:
    """Against a judge that repeats any score tag in its prompt: only the self-dealing probe runs there."""
    return f"{entry.id} [{entry.judged_variant}, fooled judge]"


FOOLED = {_fooled(e) for e in ENTRIES if e.judged_variant}


@pytest.fixture(scope="module")
def reports():
    """Every entry (split by its variants, judged ones against the local judge stub), stacked and raw, audited once.

    Audited the way the CLI does it: each target in its own process, two at a time.
    """
    judge = start_judge_stub()
    assert judge is not None, "gym_integrity.openai_stub.judge_server is needed to audit judged envs offline"
    try:
        targets = audit_targets([e.id for e in ENTRIES], raw=False, compare=True, judge=judge)
        isolated = [IsolatedTarget(t.env_id, t.kwargs, t.raw, t.name, (t.label,) if t.label else (), t.probes,
                                   t.entry) for t in targets]
        done = run_isolated(isolated, probe_names(), AuditSettings(seeds=(0, 1)), workers=2)
        return {(t.name, t.raw): report for t, report in zip(targets, done)}
    finally:
        judge.stop()


def _names(reports, raw):
    return sorted(name for name, is_raw in reports if is_raw == raw)


def test_every_entry_is_audited_in_its_variants_including_the_fourth_env(reports):
    assert fourth_env.ENTRY in ENTRIES and set(gym_integrity.REGISTERED) < set(ENTRIES)
    expected = {name for entry in ENTRIES for name in _columns(entry)}
    assert {name for name, _ in reports} == expected
    assert {raw for _, raw in reports} == {False, True}
    assert any(e.audit_variants for e in ENTRIES) and FOOLED, "the variant and judge paths are exercised"


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.id for e in ENTRIES])
def test_judged_entries_are_graded_by_the_labelled_local_stubs(reports, entry):
    for name in _columns(entry):
        notes = reports[(name, False)].notes
        if not entry.needs_judge:
            assert notes == [], name
        elif name in FOOLED:
            [note] = notes
            assert note.startswith("judge: fooled echo stub at 127.0.0.1:"), note
        else:
            [note] = notes
            assert note.startswith("judge: local stub at 127.0.0.1:") and "not a real grader" in note, note
    if entry.judged_variant:
        judged = reports[(f"{entry.id} [{entry.judged_variant}]", False)].result("gold_answer_scored")
        assert judged.passed and "verdict" not in judged.summary and "grader_error" not in " ".join(judged.evidence)


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.id for e in ENTRIES])
def test_stacked_envs_pass_every_probe(reports, entry):
    for name in _columns(entry):
        report = reports[(name, False)]
        # the stub judge is no grader: honest_pay is left out where it grades (the judged variant's column)
        stub_graded = entry.needs_judge and name in (entry.id, f"{entry.id} [{entry.judged_variant}]")
        expected = [p for p in probe_names() if p != "honest_pay"] if stub_graded else probe_names()
        assert [r.probe for r in report.results] == (["reward_self_dealing"] if name in FOOLED else expected)
        failures = [(r.probe, r.summary, r.evidence[:3]) for r in report.failures]
        assert not failures, f"{name}: {failures}"
        assert all(r.status is Status.PASSED for r in report.results), name
        assert report.verdict is AuditVerdict.PASS, name  # every probe ran: each id gives the audit its gold answers


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.id for e in ENTRIES])
def test_raw_envs_fail_exactly_the_exploit_probes(reports, entry):
    for name in _columns(entry):
        report = reports[(name, True)]
        # A raw tool env whose budget only the stack enforces never ends on non-answers: step_budget fails too.
        expected = EXPLOITS | (set() if entry.ends_by_itself else {"step_budget"})
        if name in FOOLED:
            expected = set()  # score tags are neutralised by the judge client, below the stack: raw passes too
        failed = {r.probe for r in report.failures}
        assert failed == expected, f"{name} (raw): failed {sorted(failed)}, expected {sorted(expected)}"
        assert report.missing == [] and report.verdict is (AuditVerdict.FAIL if expected else AuditVerdict.PASS), name


def test_the_fooled_judge_is_not_fooled_by_score_tags_in_a_proof(reports):
    """Against a judge that repeats any score tag it reads, an injected <score>7</score> pays nothing extra."""
    for name in FOOLED:
        result = reports[(name, False)].result("reward_self_dealing")
        assert result.passed, result.evidence
        assert any("wrong answer alone -> reward" in line for line in result.evidence)


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.id for e in ENTRIES])
def test_raw_failures_carry_evidence_of_the_exploit(reports, entry):
    for name in _columns(entry):
        if name in FOOLED:
            continue
        report = reports[(name, True)]
        rescore = report.result("rescore_after_end")
        assert any("re-scored" in line for line in rescore.evidence), (name, rescore.evidence)
        leak = report.result("reference_leakage")
        assert any(line.startswith("info@reset:privileged.") for line in leak.evidence), (name, leak.evidence)
        inert = report.result("inert_after_end")
        assert any(" post-end actions reached " in line and not line.startswith("0 of") for line in inert.evidence)
        if not entry.ends_by_itself:
            assert "no end after" in report.result("step_budget").evidence[0], name


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.id for e in ENTRIES])
def test_the_grader_probes_ran_on_real_grading(reports, entry):
    """Chance was measured against gold answers, the bound came from the env's declaration, and B was answered
    while slow answers were being graded on other instances."""
    for name in _columns(entry):
        if name in FOOLED:
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


# -- the auditor knows no env by name -----------------------------------------------------------------------------
def _env_names() -> set[str]:
    """Every way code could name a registered env: its id (with and without the version), class, and package."""
    names = set()
    for entry in ENTRIES:
        module, _, cls = entry.entry_point.partition(":")
        names |= {entry.id, entry.id.rsplit("-v", 1)[0], cls}
        package = module.split(".")[2] if module.startswith("gym_integrity.envs.") else ""
        # the env's package (finqa, ...), unless a third-party library has that name: the audit's rg: adapter
        # names the reasoning_gym library, whose scorers it audits, not our env
        if package and importlib.util.find_spec(package) is None:
            names.add(package)
    return {n.lower() for n in names}


def _code_words(path: pathlib.Path) -> list[tuple[int, str]]:
    """``(line, text)`` of every string constant, name, attribute and import in ``path``: code, not docstrings."""
    tree = ast.parse(path.read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    words = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            words.append((node.lineno, node.value))
        elif isinstance(node, ast.Name):
            words.append((node.lineno, node.id))
        elif isinstance(node, ast.Attribute):
            words.append((node.lineno, node.attr))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            words += [(node.lineno, alias.name) for alias in node.names]
            words += [(node.lineno, node.module)] if isinstance(node, ast.ImportFrom) and node.module else []
    return words


def test_the_auditor_and_this_file_name_no_env():
    """Env facts live in the registration entries; the audit package and this test read them there."""
    audit = pathlib.Path(gym_integrity.__file__).parent / "audit"
    names = _env_names()
    assert len(names) >= 3 * len(ENTRIES)  # ids, short names and classes at least
    found = [f"{path.name}:{line}: {text[:60]!r}" for path in [*sorted(audit.glob("*.py")), pathlib.Path(__file__)]
             for line, text in _code_words(path) for name in names if name in text.lower()]
    assert found == []

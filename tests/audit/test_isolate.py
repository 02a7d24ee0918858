"""Auditing in child processes: a hang that holds the GIL is killed and reported; reports come back whole, verdict
included; a target that cannot run is inconclusive, not failed."""

from __future__ import annotations

import importlib.util
import pathlib
import sys
import time

from gym_integrity.audit import AuditSettings, Status, AuditVerdict, probe_names
from gym_integrity.audit.adapters import GOLD_HINT
from gym_integrity.audit.isolate import IsolatedTarget, run_isolated

TOYS = pathlib.Path(__file__).resolve().parents[1] / "support" / "audit_toys.py"


def test_a_hang_holding_the_gil_is_killed_and_reported_while_other_targets_finish():
    targets = [
        IsolatedTarget(f"{TOYS}:HoldsTheGIL", {}, False, "HoldsTheGIL"),
        IsolatedTarget(f"{TOYS}:CorrectToy", {}, False, "CorrectToy", notes=("a note",)),
        IsolatedTarget("ReasoningGym-v0", {}, True, "ReasoningGym-v0", ),
    ]
    seen = []
    start = time.perf_counter()
    # The bound must leave room for real probes on a loaded machine (ReasoningGym's first probe builds the
    # env, importing reasoning_gym): 1 s made a slow but honest probe look like a hang.
    stuck, correct, raw = run_isolated(targets, probe_names(), AuditSettings(probe_timeout_s=8.0), workers=2,
                                       grace_s=1.0, on_probe_done=lambda t, r: seen.append((t.name, r.probe)))
    elapsed = time.perf_counter() - start
    garbage = stuck.result("garbage_actions")
    assert garbage.failed and garbage.summary.startswith("hang") and "killed" in garbage.summary
    assert "last call: step(control characters" in garbage.summary  # the parent names the call it hung in
    assert stuck.status_of("rescore_after_end") is Status.PASSED  # finished before the hang
    # a fresh child ran the probes the killed one never reached: one hang does not leave the rest "not run"
    assert not [r.probe for r in stuck.results if r.status is Status.NOT_RUN]
    assert [r.probe for r in stuck.results] == probe_names()
    assert stuck.verdict is AuditVerdict.FAIL
    assert correct.passed and correct.notes == ["a note"] and correct.env_id == "CorrectToy"
    assert {r.probe for r in raw.failures} == {"rescore_after_end", "inert_after_end", "reference_leakage",
                                               "failed_reset_keeps_end"}
    assert raw.raw is True
    # every probe of every target advanced the progress callback once
    assert len(seen) == 3 * len(probe_names()) and len(set(seen)) == len(seen)
    assert elapsed < 90  # generous: the kill comes at probe bound + grace, about 9 s after the hang


def test_a_target_that_cannot_be_built_is_an_inconclusive_report_not_a_crash():
    [report] = run_isolated([IsolatedTarget("ReasoningGym-v0", {"dataset": "no_such_task"}, False, "bad")],
                            ["seeded_reset", "garbage_actions"], AuditSettings(), workers=1)
    assert report.error.startswith("building the env raised") and "no_such_task" in report.error
    assert report.failures == [] and report.verdict is AuditVerdict.INCONCLUSIVE
    assert {r.status for r in report.results} == {Status.NOT_RUN}


def test_the_verdict_and_what_could_not_run_cross_the_process_boundary():
    silent, reset_raises, dies = run_isolated(
        [IsolatedTarget(f"{TOYS}:SilentNoHook", {}, False, "SilentNoHook"),
         IsolatedTarget(f"{TOYS}:ResetRaises", {}, False, "ResetRaises"),
         IsolatedTarget(f"{TOYS}:DiesWhenBuilt", {}, False, "DiesWhenBuilt")],
        ["gold_answer_scored", "seeded_reset"], AuditSettings(), workers=2)
    assert silent.verdict is AuditVerdict.INCONCLUSIVE and silent.failures == []
    assert [(r.probe, r.how_to_enable) for r in silent.missing] == [("gold_answer_scored", GOLD_HINT)]
    assert silent.status_of("seeded_reset") is Status.PASSED
    assert reset_raises.error == "reset(seed=0) raised FileNotFoundError: problems.jsonl not found"
    assert reset_raises.verdict is AuditVerdict.INCONCLUSIVE
    # a child that died before its first probe: the env never ran, so no probe failed
    assert dies.error == "the audit process died (exit code 3)"
    assert dies.verdict is AuditVerdict.INCONCLUSIVE and {r.status for r in dies.results} == {Status.NOT_RUN}


def test_an_env_class_from_a_file_may_use_dataclasses(tmp_path):
    """A file loaded by path is registered as a module first: dataclasses look their module up by name."""
    env_file = tmp_path / "my_env.py"
    env_file.write_text(
        "import dataclasses, importlib.util, pathlib, sys\n"
        f"spec = importlib.util.spec_from_file_location('toys_for_file', {str(TOYS)!r})\n"
        "toys = importlib.util.module_from_spec(spec); spec.loader.exec_module(toys)\n"
        "@dataclasses.dataclass\n"
        "class Settings:\n"
        "    bonus: int = 0\n"
        "class FileEnv(toys.CorrectToy):\n"
        "    settings = Settings()\n"
    )
    [report] = run_isolated([IsolatedTarget(f"{env_file}:FileEnv", {}, False, "FileEnv")], ["seeded_reset"],
                            AuditSettings(), workers=1)
    assert report.passed, report.results


QUADRATIC_ENV = '''
import re
import gymnasium as gym
from gym_integrity.spaces import UnicodeText


class Quadratic(gym.Env):
    """Parses answers with a lazy regex: quadratic in C, holding the GIL, on a megabyte of unclosed tags."""

    def __init__(self):
        self.observation_space = UnicodeText(10_000)
        self.action_space = UnicodeText(1_000_000, min_length=0)
        self.step_budget = 1
        self.a = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.a = int(self.np_random.integers(100, 1000))
        return f"What is {self.a} + 1?", {}

    def step(self, action):
        found = re.findall(r"<answer>(.*?)</answer>", action)
        right = bool(found) and found[-1].strip() == str(self.a + 1)
        return "done", float(right), True, False, {"verdict": "correct" if right else "incorrect"}

    def gold_answers(self):
        return [str(self.a + 1)]
'''


def test_check_integrity_isolated_bounds_a_step_that_holds_the_gil(tmp_path, monkeypatch):
    """In-process, nothing can interrupt the regex; isolated=True runs the audit in a child and kills it."""
    from gym_integrity.audit import check_integrity

    (tmp_path / "quadratic_env.py").write_text(QUADRATIC_ENV)
    monkeypatch.syspath_prepend(str(tmp_path))  # the child gets this path even from an older forkserver
    import quadratic_env

    start = time.perf_counter()
    report = check_integrity(quadratic_env.Quadratic, isolated=True, probes=["seeded_reset", "garbage_actions"],
                             settings=AuditSettings(probe_timeout_s=3.0, step_timeout_s=2.0))
    garbage = report.result("garbage_actions")
    assert garbage.failed and "killed" in garbage.summary and "1 MB of unbalanced tags" in garbage.summary
    assert report.status_of("seeded_reset") is Status.PASSED and report.env_id == "Quadratic"
    assert report.stacked is False  # told by the child before it was killed: no "(stacked)" for this env
    assert time.perf_counter() - start < 60  # the kill comes at the step bound + grace, about 7 s in


def test_check_integrity_isolated_audits_a_module_id(tmp_path, monkeypatch):
    """"module:Id" as gym.make takes it: the module registers the id, in the child too."""
    import gymnasium as gym

    from gym_integrity.audit import check_integrity

    spec = importlib.util.spec_from_file_location("audit_toys_for_isolate", TOYS)
    toys = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(toys)
    toys.write_user_module(tmp_path, "user_envs_isolated")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        stacked = check_integrity("user_envs_isolated:UserStacked-v0", isolated=True,
                                  probes=["inert_after_end", "reset_clears_end"])
        bare = check_integrity("user_envs_isolated:UserBare-v0", isolated=True, probes=["inert_after_end"])
    finally:
        for env_id in ("UserStacked-v0", "UserBare-v0"):
            gym.registry.pop(env_id, None)
        sys.modules.pop("user_envs_isolated", None)
    assert stacked.passed, [(r.probe, r.summary, r.evidence) for r in stacked.results]
    assert stacked.env_id == "user_envs_isolated:UserStacked-v0" and stacked.stacked is True
    assert bare.passed and bare.stacked is False


def test_a_script_that_audits_at_import_time_is_told_to_guard_it(tmp_path):
    """The child imports the caller's script again; auditing at its top level fails in the child's start-up, and
    the report says what to write instead of only that the process died."""
    import subprocess

    script = tmp_path / "audit_at_import.py"
    script.write_text(
        "from gym_integrity.audit import check_integrity\n"
        "report = check_integrity('ReasoningGym-v0', isolated=True, probes=['seeded_reset'])\n"
        "print('ERROR:', report.error)\n"
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert "ERROR: the audit process died" in out.stdout, (out.stdout, out.stderr[-2000:])
    assert "if __name__ == '__main__':" in out.stdout

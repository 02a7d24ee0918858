"""Auditing in child processes: a hang that holds the GIL is killed and reported; reports come back whole."""

from __future__ import annotations

import pathlib
import time

from gym_integrity.audit import AuditSettings, Status, probe_names
from gym_integrity.audit.isolate import IsolatedTarget, run_isolated

TOYS = pathlib.Path(__file__).with_name("audit_toys.py")


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
    assert stuck.status_of("reward_self_dealing") is Status.NOT_APPLICABLE
    assert correct.passed and correct.notes == ["a note"] and correct.env_id == "CorrectToy"
    assert {r.probe for r in raw.failures} == {"rescore_after_end", "inert_after_end", "reference_leakage"}
    assert raw.raw is True
    # every probe of every target advanced the progress callback once
    assert len(seen) == 3 * len(probe_names()) and len(set(seen)) == len(seen)
    assert elapsed < 90  # generous: the kill comes at probe bound + grace, about 9 s after the hang


def test_a_target_that_cannot_be_built_is_a_report_not_a_crash():
    [report] = run_isolated([IsolatedTarget("ReasoningGym-v0", {"dataset": "no_such_task"}, False, "bad")],
                            ["seeded_reset", "garbage_actions"], AuditSettings(), workers=1)
    assert report.result("seeded_reset").failed
    assert "no_such_task" in report.result("seeded_reset").summary


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

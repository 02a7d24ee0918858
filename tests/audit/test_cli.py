"""`gym-integrity audit`: exit codes (0 pass, 1 fail, 2 inconclusive or usage), the JSON report, the table, the judge
stub label, what could not run and how to run it."""

from __future__ import annotations

import importlib.util
import json
import pathlib
import re
import subprocess
import sys

import gymnasium as gym
import pytest

from gym_integrity.audit import probe_names
from gym_integrity.audit.adapters import GOLD_HINT
from gym_integrity.cli import main

TOYS = pathlib.Path(__file__).resolve().parents[1] / "support" / "audit_toys.py"


def test_audit_one_id_writes_json_and_exits_zero(tmp_path, capsys):
    path = tmp_path / "audit.json"
    code = main(["audit", "ReasoningGym-v0", "--json", str(path), "--no-progress", "--seeds", "0", "1"])
    out = capsys.readouterr().out
    assert code == 0
    assert "gym-integrity audit" in out and "rescore_after_end" in out and "PASS" in out
    doc = json.loads(path.read_text())
    assert doc["passed"] is True and doc["verdict"] == "pass" and doc["total_s"] > 0
    [report] = doc["reports"]
    assert report["env_id"] == "ReasoningGym-v0" and report["raw"] is False
    assert report["verdict"] == "pass" and report["missing"] == [] and report["error"] is None
    assert {r["status"] for r in report["results"]} == {"passed"}


def test_env_kwargs_audit_one_dataset_of_an_id(tmp_path, capsys):
    """--env-kwargs without --url makes every audited id with those kwargs: one reasoning-gym dataset from the CLI."""
    path = tmp_path / "audit.json"
    code = main(["audit", "ReasoningGym-v0", "--env-kwargs", '{"dataset": "spell_backward"}', "--probe", "gold_answer_scored",
                 "--json", str(path), "--no-progress", "--seeds", "0"])
    capsys.readouterr()
    assert code == 0
    [report] = json.loads(path.read_text())["reports"]
    [result] = report["results"]
    assert re.search(r"gold '[A-Za-z]+'", result["evidence"][0]), result["evidence"]  # a word, not leg_counting's count


def test_audit_raw_exits_non_zero_and_shows_the_exploits(tmp_path, capsys):
    path = tmp_path / "raw.json"
    code = main(["audit", "ReasoningGym-v0", "--raw", "--json", str(path), "--no-progress",
                 "--probe", "rescore_after_end", "--probe", "seeded_reset"])
    out = capsys.readouterr().out
    assert code == 1
    assert "FAIL" in out and "re-scored: verdict incorrect -> correct" in out
    statuses = {r["probe"]: r["status"] for r in json.loads(path.read_text())["reports"][0]["results"]}
    assert statuses == {"rescore_after_end": "failed", "seeded_reset": "passed"}


def test_compare_exit_status_follows_the_stacked_envs(capsys):
    code = main(["audit", "ReasoningGym-v0", "--compare", "--no-progress", "--probe", "rescore_after_end"])
    out = capsys.readouterr().out
    assert code == 0 and "raw" in out and "FAIL" in out


def test_unknown_id_or_probe_exits_two(capsys):
    assert main(["audit", "NoSuchEnv-v0", "--no-progress"]) == 2
    assert main(["audit", "ReasoningGym-v0", "--probe", "nope", "--no-progress"]) == 2
    assert "unknown" in capsys.readouterr().out


def test_an_unwritable_json_path_exits_two_before_the_audit_runs(tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    assert main(["audit", "ReasoningGym-v0", "--json", str(blocker / "report.json"), "--no-progress"]) == 2
    assert "is not a folder" in capsys.readouterr().out
    assert main(["audit", "ReasoningGym-v0", "--json", str(tmp_path), "--no-progress"]) == 2
    out = capsys.readouterr().out
    assert "not a file this process can write" in out and "audited" not in out
    nested = tmp_path / "new" / "dir" / "report.json"   # a missing folder is made, as eval's --out makes it
    assert main(["audit", "ReasoningGym-v0", "--json", str(nested), "--no-progress", "--probe", "rescore_after_end"]) == 0
    assert json.loads(nested.read_text())["passed"] is True


def test_the_console_script_runs_the_audit():
    proc = subprocess.run([sys.executable, "-m", "gym_integrity.cli", "audit", "FinQA-v0", "--no-progress",
                           "--probe", "inert_after_end"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "audited 1 id(s) (stacked)" in proc.stdout


def test_all_datasets_prints_one_row_per_dataset_and_exits_by_the_failures(tmp_path, capsys, monkeypatch):
    from gym_integrity.audit import targets as targets_module

    monkeypatch.setattr(targets_module, "_sweep_values", lambda entry: ["leg_counting", "basic_arithmetic"])
    path = tmp_path / "sweep.json"
    code = main(["audit", "ReasoningGym-v0", "--all-datasets", "--json", str(path), "--no-progress",
                 "--probe", "gold_answer_scored", "--probe", "pathological_answers"])
    out = capsys.readouterr().out
    doc = json.loads(path.read_text())
    assert [r["env_id"] for r in doc["reports"]] == ["ReasoningGym-v0 [leg_counting]",
                                                     "ReasoningGym-v0 [basic_arithmetic]"]
    assert all([x["probe"] for x in r["results"]] == ["gold_answer_scored", "pathological_answers"]
               for r in doc["reports"])
    assert code == (0 if doc["passed"] else 1)
    status, verdict = r"(pass|FAIL|n/a|not run)", r"(PASS|FAIL|INCONCLUSIVE)"
    for dataset in ("leg_counting", "basic_arithmetic"):  # a row: the dataset, a status per probe, time, verdict
        row = rf"│ {dataset}\s+│\s+{status}\s+│\s+{status}\s+│\s+[\d.]+ s │\s+{verdict}\s+│"
        assert re.search(row, out), out
    assert "pathological_answers" in out and "audited 2 ReasoningGym-v0 datasets (stacked)" in out


def test_all_datasets_defaults_to_the_grader_probes_and_refuses_other_ids(capsys, monkeypatch):
    from gym_integrity.audit import targets as targets_module
    from gym_integrity.audit.grader_probes import GRADER_PROBES
    from gym_integrity.audit.pay_probes import PAY_PROBES
    from gym_integrity.audit.search import SEARCH_PROBES

    assert main(["audit", "FinQA-v0", "--all-datasets", "--no-progress"]) == 2
    assert "--all-datasets sweeps ReasoningGym-v0" in capsys.readouterr().out
    seen = {}

    def fake_run_isolated(targets, probes, settings, **kwargs):
        seen["targets"], seen["probes"] = [t.kwargs for t in targets], list(probes)
        return []

    monkeypatch.setattr(targets_module, "_sweep_values", lambda entry: ["leg_counting", "countdown"])
    monkeypatch.setattr("gym_integrity.audit.isolate.run_isolated", fake_run_isolated)
    assert main(["audit", "--all-datasets", "--no-progress"]) == 2  # no report came back: nothing was audited
    # the sweep makes every dataset with the opt-in, so that those not made by default are audited too
    swept = [{"dataset": name, "allow_above_chance": True} for name in ("leg_counting", "countdown")]
    assert seen == {"targets": swept, "probes": [*GRADER_PROBES, *PAY_PROBES, *SEARCH_PROBES]}


# -- the verdict on envs that are not ours: toys registered for this process (so audited --in-process) -----------
@pytest.fixture()
def toy_ids():
    """Register toys under ids for the length of a test: the CLI audits ids."""
    spec = importlib.util.spec_from_file_location("audit_toys_for_cli", TOYS)
    toys = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(toys)
    ids = {"SilentNoHook": "AuditToySilent-v0", "RescoresQuietly": "AuditToyQuiet-v0",
           "ResetRaises": "AuditToyResetRaises-v0", "CrashesOnEmptyNoHook": "AuditToyCrashNoHook-v0"}
    for name, env_id in ids.items():
        gym.register(env_id, entry_point=getattr(toys, name))
    yield ids
    for env_id in ids.values():
        gym.registry.pop(env_id, None)


def test_an_env_without_a_gold_answer_exits_two_and_says_what_would_run_the_missing_probes(toy_ids, tmp_path, capsys):
    path = tmp_path / "silent.json"
    code = main(["audit", toy_ids["SilentNoHook"], "--in-process", "--no-progress", "--seeds", "0", "1",
                 "--json", str(path)])
    out = " ".join(capsys.readouterr().out.split())  # rich wraps long lines: compare words
    assert code == 2
    assert "INCONCLUSIVE" in out and "FAIL" not in out and "not run" in out
    assert ("not run: gold_answer_scored, rescore_after_end, reference_leakage, failed_reset_keeps_end, "
            "constant_answers, cross_env_isolation, label_skew, honest_pay: no gold answer") in out
    assert f"to run them: {GOLD_HINT}" in out
    # registered without the integrity stack: not called "stacked"
    assert re.search(r"audited 1 id\(s\) \(as made by gym.make; no integrity stack on AuditToySilent-v0\), "
                     rf"{len(probe_names())} probes each, in [\d.]+ s; 1 inconclusive", out)
    doc = json.loads(path.read_text())
    assert doc["verdict"] == "inconclusive" and doc["passed"] is False
    [report] = doc["reports"]
    assert report["verdict"] == "inconclusive"
    assert [m["probe"] for m in report["missing"]] == ["gold_answer_scored", "rescore_after_end", "reference_leakage",
                                                       "failed_reset_keeps_end", "constant_answers",
                                                       "cross_env_isolation", "label_skew", "honest_pay"]
    assert {m["how_to_enable"] for m in report["missing"]} == {GOLD_HINT}


def test_an_env_whose_reset_raises_exits_two_with_the_cause_printed_once(toy_ids, capsys):
    code = main(["audit", toy_ids["ResetRaises"], "--in-process", "--no-progress", "--seeds", "0"])
    out = capsys.readouterr().out
    assert code == 2
    assert out.count("problems.jsonl not found") == 1
    assert "the audit could not run: reset(seed=0) raised FileNotFoundError: problems.jsonl not found" in out


def test_a_failure_outranks_an_inconclusive_env_in_the_exit_status(toy_ids, capsys):
    code = main(["audit", toy_ids["RescoresQuietly"], toy_ids["SilentNoHook"], "--in-process", "--no-progress",
                 "--seeds", "0", "1", "--probe", "gold_answer_scored", "--probe", "rescore_after_end"])
    out = capsys.readouterr().out
    assert code == 1
    assert re.search(r"│ verdict\s+│\s+FAIL\s+│\s+INCONCLUSIVE\s+│", out), out


def test_a_failed_env_also_lists_the_probes_that_did_not_run(toy_ids, capsys):
    """A failure decides the exit status, but the gaps are still the next thing to close: they are printed too."""
    env_id = toy_ids["CrashesOnEmptyNoHook"]
    code = main(["audit", env_id, "--in-process", "--no-progress", "--seeds", "0",
                 "--probe", "garbage_actions", "--probe", "gold_answer_scored"])
    out = " ".join(capsys.readouterr().out.split())
    assert code == 1 and "FAIL" in out
    assert f"? {env_id} · not run: gold_answer_scored: no gold answer" in out
    assert f"to run it: {GOLD_HINT}" in out


# -- a user's env: "module:Id", as gym.make takes it ---------------------------------------------------------------
def _user_module(tmp_path, name):
    spec = importlib.util.spec_from_file_location(f"audit_toys_for_{name}", TOYS)
    toys = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(toys)
    return toys.write_user_module(tmp_path, name)


def test_the_console_script_audits_a_module_id_from_the_working_directory_in_child_processes(tmp_path):
    """The console script's sys.path does not hold the working directory; the module is found there anyway, and
    each child process imports it (so the id is registered there too). Only an env with the stack is "stacked"."""
    _user_module(tmp_path, "user_envs")
    script = pathlib.Path(sys.executable).with_name("gym-integrity")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "gym_integrity.cli"]
    path = tmp_path / "audit.json"
    proc = subprocess.run(command + ["audit", "user_envs:UserStacked-v0", "user_envs:UserBare-v0", "--no-progress",
                                     "--seeds", "0", "--probe", "inert_after_end", "--probe", "reset_clears_end",
                                     "--probe", "seeded_reset", "--json", str(path)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    out = " ".join(proc.stdout.split())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "audited 2 id(s) (as made by gym.make; no integrity stack on user_envs:UserBare-v0)" in out
    assert "no stack" in out  # the bare column's header
    doc = json.loads(path.read_text())
    assert [(r["env_id"], r["stacked"], r["verdict"]) for r in doc["reports"]] == [
        ("user_envs:UserStacked-v0", True, "pass"), ("user_envs:UserBare-v0", False, "pass")]


def test_a_module_id_in_process_and_what_a_bad_one_says(tmp_path, monkeypatch, capsys):
    _user_module(tmp_path, "user_envs_cli")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert main(["audit", "user_envs_cli:UserStacked-v0", "--in-process", "--no-progress", "--seeds", "0",
                     "--probe", "inert_after_end"]) == 0
        assert "audited 1 id(s) (stacked)" in capsys.readouterr().out
        assert main(["audit", "user_envs_cli:Nope-v0", "--no-progress"]) == 2
        assert "unknown id(s) ['user_envs_cli:Nope-v0']" in capsys.readouterr().out
        assert main(["audit", "no_such_user_module:X-v0", "--no-progress"]) == 2
        out = " ".join(capsys.readouterr().out.split())
        assert "no_such_user_module:X-v0: importing no_such_user_module raised ModuleNotFoundError" in out
    finally:
        for env_id in ("UserStacked-v0", "UserBare-v0"):
            gym.registry.pop(env_id, None)
        sys.modules.pop("user_envs_cli", None)

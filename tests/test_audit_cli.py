"""`gym-integrity audit`: exit codes, the JSON report, the table, the judge stub label."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from gym_integrity.cli import main


def test_audit_one_id_writes_json_and_exits_zero(tmp_path, capsys):
    path = tmp_path / "audit.json"
    code = main(["audit", "ReasoningGym-v0", "--json", str(path), "--no-progress", "--seeds", "0", "1"])
    out = capsys.readouterr().out
    assert code == 0
    assert "gym-integrity audit" in out and "rescore_after_end" in out and "PASS" in out
    doc = json.loads(path.read_text())
    assert doc["passed"] is True and doc["total_s"] > 0
    [report] = doc["reports"]
    assert report["env_id"] == "ReasoningGym-v0" and report["raw"] is False
    assert {r["status"] for r in report["results"]} == {"passed"}


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


def test_the_console_script_runs_the_audit():
    proc = subprocess.run([sys.executable, "-m", "gym_integrity.cli", "audit", "FinQA-v0", "--no-progress",
                           "--probe", "inert_after_end"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "audited 1 id(s) (stacked)" in proc.stdout


def test_all_datasets_prints_one_row_per_dataset_and_exits_by_the_failures(tmp_path, capsys, monkeypatch):
    from gym_integrity.audit import cli as audit_cli

    monkeypatch.setattr(audit_cli, "_reasoning_gym_datasets", lambda: ["leg_counting", "basic_arithmetic"])
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
    for dataset in ("leg_counting", "basic_arithmetic"):  # a row: the dataset, a status per probe, the time
        assert re.search(rf"│ {dataset}\s+│\s+(pass|FAIL|n/a)\s+│\s+(pass|FAIL|n/a)\s+│\s+[\d.]+ s │", out), out
    assert "pathological_answers" in out and "audited 2 ReasoningGym-v0 datasets (stacked)" in out


def test_all_datasets_defaults_to_the_grader_probes_and_refuses_other_ids(capsys, monkeypatch):
    from gym_integrity.audit import cli as audit_cli
    from gym_integrity.audit.grader_probes import GRADER_PROBES

    assert main(["audit", "FinQA-v0", "--all-datasets", "--no-progress"]) == 2
    assert "--all-datasets sweeps ReasoningGym-v0" in capsys.readouterr().out
    seen = {}

    def fake_run_isolated(targets, probes, settings, **kwargs):
        seen["targets"], seen["probes"] = [t.kwargs for t in targets], list(probes)
        return []

    monkeypatch.setattr(audit_cli, "_reasoning_gym_datasets", lambda: ["leg_counting", "countdown"])
    monkeypatch.setattr("gym_integrity.audit.isolate.run_isolated", fake_run_isolated)
    assert main(["audit", "--all-datasets", "--no-progress"]) == 0
    assert seen == {"targets": [{"dataset": "leg_counting"}, {"dataset": "countdown"}], "probes": list(GRADER_PROBES)}

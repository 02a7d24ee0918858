"""`gym-integrity check-data`: the shipped sets are clean, and a deliberately broken file has every bad row named."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gym_integrity.cli import main
from gym_integrity.envs.finqa.data import EMBEDDED_DATA_PATH

README = Path(__file__).resolve().parents[1] / "README.md"

#: A QEDMath file with one row for every reason a row is skipped, and the reason each must get.
BROKEN_QED = [
    ({"id": "ok-1", "problem": "What is $2+2$?", "answer": "4"}, None),
    ("{not json", "invalid_json"),
    (["a", "list"], "not_an_object"),
    ({"id": "no-text", "answer": "1"}, "missing_question"),
    ({"id": "no-gold", "problem": "What is $1+1$?"}, "empty_answer"),
    ({"id": "two-boxes", "problem": "Solve $(x-2)(x-3)=0$.", "solution": "$\\boxed{2}$ or $\\boxed{3}$"},
     "ambiguous_gold"),
    ({"id": "words", "problem": "Which is larger, $e^\\pi$ or $\\pi^e$?", "answer": "e^pi is larger"},
     "unparsable_gold"),
    ({"id": "bare-proof", "problem": "Prove that every prime above 2 is odd."}, "no_reference"),
    ({"id": "bad-type", "problem": "p", "answer": "1", "problem_type": "essay"}, "bad_field"),
    ({"id": "ok-1", "problem": "What is $3+3$?", "answer": "6"}, "duplicate_id"),
    ({"id": "proof-1", "problem": "Prove that $n^2 \\ge 0$.", "solution": "Squares are non-negative."}, None),
]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("gym-integrity", path=str(Path(sys.executable).parent))
    cmd = [exe, *args] if exe else [sys.executable, "-m", "gym_integrity.cli", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                          env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", "TERM": "dumb"})


@pytest.fixture()
def broken_qed(tmp_path: Path) -> Path:
    path = tmp_path / "broken.jsonl"
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r, _ in BROKEN_QED) + "\n",
                    encoding="utf-8")
    return path


def test_the_shipped_sets_are_clean_through_the_installed_command():
    out = run_cli("check-data")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "QEDMath: qed_problems.jsonl" in out.stdout and "FinQA:" in out.stdout
    assert "clean: every row loads" in out.stdout
    as_json = json.loads(run_cli("check-data", "--json").stdout)
    assert as_json["clean"] is True
    counts = [(s["kind"], s["loaded"], s["skipped"]) for s in as_json["sources"]]
    assert counts == [("QEDMath", 33, 0), ("FinQA", 37, 0)]


def test_shipped_sets_one_kind_at_a_time(capsys):
    assert main(["check-data", "qed", "--json"]) == 0
    assert main(["check-data", "finqa", str(EMBEDDED_DATA_PATH / "original_sample"), "--json"]) == 0
    first, second = capsys.readouterr().out.split("\n}\n", 1)
    assert json.loads(first + "}")["sources"][0]["loaded"] == 33
    assert json.loads(second)["sources"][0]["loaded"] == 3


def test_a_broken_qed_file_has_every_bad_row_named(broken_qed: Path, capsys):
    assert main(["check-data", "qed", str(broken_qed), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["clean"] is False
    (source,) = report["sources"]
    expected = {row: reason for row, (_, reason) in enumerate(BROKEN_QED, start=1) if reason}
    assert {r["row"]: r["reason"] for r in source["rows"]} == expected
    assert (source["loaded"], source["skipped"]) == (2, len(expected))
    assert source["by_reason"]["ambiguous_gold"] == {"count": 1, "rows": [6]}
    assert source["notes"] == {"proofs graded with the generic guidelines (no rubric)": 1}
    assert all(r["detail"] for r in source["rows"])

    # The table: one line per reason with its first rows, and the exit status says something was skipped.
    assert main(["check-data", "qed", str(broken_qed), "--rows", "2"]) == 1
    table = capsys.readouterr().out
    for row, reason in expected.items():
        assert reason in table
    assert f"{len(expected)} rows skipped" in table and "loaded" in table


def test_a_broken_finqa_root_has_every_bad_row_named(tmp_path: Path, capsys):
    root = tmp_path / "finqa"
    shutil.copytree(EMBEDDED_DATA_PATH, root, ignore=shutil.ignore_patterns("original_sample"))
    path = root / "benchmark_questions" / "finqa.csv"
    first = len(path.read_text(encoding="utf-8").splitlines()) + 1
    broken = [(["x1", "Q?", "northwind_foods", "Q?", "", "lookup", ""], "empty_answer"),
              (["x2", "Q?", "ghost_co", "Q?", "5", "lookup", ""], "no_tables"),
              (["x3", "", "northwind_foods", "", "5", "lookup", ""], "missing_question"),
              (["x4", "Q?", "northwind_foods", "Q?", "%", "lookup", ""], "unparsable_gold")]
    with open(path, "a", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(row for row, _ in broken)
    assert main(["check-data", "finqa", str(root), "--json"]) == 1
    (source,) = json.loads(capsys.readouterr().out)["sources"]
    expected = {first + i: reason for i, (_, reason) in enumerate(broken)}
    assert {r["row"]: r["reason"] for r in source["rows"]} == expected
    assert source["source"] == str(path) and source["loaded"] == 37


def test_finqa_without_a_source_checks_what_finqa_v0_loads_from_the_env_var(tmp_path: Path, capsys, monkeypatch):
    """A leftover of issue 10: `check-data finqa` checked the shipped set while FinQA-v0 read $FINQA_DATA_PATH."""
    root = tmp_path / "finqa"
    shutil.copytree(EMBEDDED_DATA_PATH, root, ignore=shutil.ignore_patterns("original_sample"))
    with open(root / "benchmark_questions" / "finqa.csv", "a", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerow(["x1", "Q?", "northwind_foods", "Q?", "", "lookup", ""])
    monkeypatch.setenv("FINQA_DATA_PATH", str(root))
    assert main(["check-data", "finqa", "--json"]) == 1
    (source,) = json.loads(capsys.readouterr().out)["sources"]
    assert source["source"] == str(root / "benchmark_questions" / "finqa.csv") and source["loaded"] == 37
    monkeypatch.delenv("FINQA_DATA_PATH")
    assert main(["check-data", "finqa", "--json"]) == 0


def test_a_hub_style_dataset_directory_is_read_through_datasets(tmp_path: Path, capsys, monkeypatch):
    pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    folder = tmp_path / "hub"
    folder.mkdir()
    rows = [{"id": "h1", "problem": "What is $5-1$?", "answer": "4"},
            {"id": "h2", "problem": "Solve it.", "answer": ""}]
    (folder / "train.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert main(["check-data", "qed", str(folder), "--split", "train", "--json"]) == 1
    (source,) = json.loads(capsys.readouterr().out)["sources"]
    (skipped,) = source["rows"]
    assert (skipped["row"], skipped["reason"]) == (2, "empty_answer") and "needs a gold answer" in skipped["detail"]


@pytest.mark.parametrize("argv, message", [
    (["check-data", "qed", "no/such/file.jsonl"], "QEDMathConfig.dataset"),
    (["check-data", "finqa", "/no/such/root"], "neither"),
    (["check-data", "yaml"], "invalid choice"),
    (["check-data", "qed", "--hub-id", "x/y"], "FinQA option"),
    (["check-data", "finqa", "--config", "main"], "QEDMath option"),
    (["check-data", "qed", "--rows", "0"], "must be an int >= 1"),
])
def test_usage_errors_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_the_readme_shows_check_data_next_to_the_loaders():
    text = README.read_text(encoding="utf-8")
    assert "gym-integrity check-data" in text
    qed, finqa = text.index("### QEDMath-v0"), text.index("### FinQA-v0")
    assert qed < text.index("gym-integrity check-data qed") < finqa
    assert finqa < text.index("gym-integrity check-data finqa")

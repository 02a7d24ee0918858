"""A slice of benchmarks/ecosystem_audit.py in the default suite: reasoning-gym's own scorer (a base dependency, no
extra) audited as it is and inside integrity_stack, end to end through the script, its JSON and its table.

reasoning-gym's ``game_of_life_halting`` scorer pays any non-empty answer: the audit must say so with the answer
that paid, raw and stacked alike (leniency: no wrapper closes it), while the end-of-episode probe passes in both.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

BENCH = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.mark.timeout(300)
def test_ecosystem_slice_reports_a_lenient_scorer_raw_and_stacked(tmp_path):
    out = tmp_path / "eco.json"
    result = subprocess.run(
        [sys.executable, str(BENCH / "ecosystem_audit.py"), "--group", "rg", "--rg", "game_of_life_halting",
         "--probe", "gold_answer_scored", "--probe", "constant_answers", "--probe", "rescore_after_end",
         "--workdir", str(tmp_path / "data"), "--out", str(out)],
        check=False, capture_output=True, text=True, timeout=280, cwd=BENCH.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = json.loads(out.read_text())
    raw, stacked = rows["reasoning-gym game_of_life_halting | raw"], rows["reasoning-gym game_of_life_halting | stacked"]
    for row in (raw, stacked):
        assert row["verdict"] == "fail", row
        assert row["probes"]["constant_answers"]["status"] == "failed"
        assert "mean reward 1 over" in row["probes"]["constant_answers"]["evidence"][0]
        assert row["probes"]["gold_answer_scored"]["status"] == "failed"  # a wrong answer is paid like the gold
        assert row["probes"]["rescore_after_end"]["status"] == "passed"
        assert row["version"] != "not installed"

    table = subprocess.run([sys.executable, str(BENCH / "ecosystem_table.py"), str(out)], capture_output=True,
                           text=True, timeout=60, check=True).stdout
    line = next(li for li in table.splitlines() if li.startswith("| reasoning-gym game_of_life_halting |")
                and "none" in li)  # the before/after row
    assert "constant_answers" in line and "gold_answer_scored" in line

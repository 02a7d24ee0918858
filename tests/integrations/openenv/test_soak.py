"""benchmarks/soak.py: a 60-second soak passes end to end, and its rules fail what they exist to fail.

The soak serves QEDMath-v0 (the [serve] extra), so this file runs in .ci/run's [serve] step. No timing is
asserted: the soak's own rules (growth, honest verdicts, kills, files left) are what the run checks.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import re
import subprocess
import sys
import time

import pytest

if os.environ.get("GYM_INTEGRITY_REQUIRE_EXTRAS") == "1":
    import openenv  # noqa: F401  (the [serve] extra is installed: a missing openenv must fail, not skip)
else:
    pytest.importorskip("openenv")

pytestmark = pytest.mark.serve

SOAK = pathlib.Path(__file__).resolve().parents[3] / "benchmarks" / "soak.py"


def _soak_module():
    spec = importlib.util.spec_from_file_location("soak", SOAK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.timeout(600)  # 60 s of soak, plus the serve subprocess's start and the close checks on a loaded machine
def test_a_minute_of_soak_passes_with_kills():
    result = subprocess.run([sys.executable, str(SOAK), "--seconds", "60", "--kill-every", "8"], capture_output=True,
                            text=True, timeout=560, cwd=SOAK.parents[1])
    out = result.stdout
    assert result.returncode == 0, out[-4000:] + result.stderr[-4000:]
    samples = [line for line in out.splitlines() if line.startswith("t=")]
    assert len(samples) >= 3, out
    assert "pool_workers" in samples[-1] and "serve" in samples[-1]
    done = re.search(r"^done: (\d+) steps, (\d+) kills", out, re.M)
    assert done and int(done.group(1)) > 0 and int(done.group(2)) > 0, out  # it played, and something was killed
    assert out.rstrip().splitlines()[-1].startswith("PASSED"), out


def test_the_rules_fail_a_wrong_honest_verdict_and_an_unexplained_no_verdict():
    soak = _soak_module()
    tally = soak.Tally()
    tally.record("t", "gold", {"verdict": "correct", "no_verdict": False})
    tally.record("t", "wrong", {"verdict": "incorrect", "no_verdict": False})
    tally.record("t", "hostile", {"verdict": "grader_error", "no_verdict": True, "cause": "x"})  # hostile: allowed
    assert tally.failures == []
    tally.record("t", "gold", {"verdict": "incorrect", "no_verdict": False})
    tally.record("t", "wrong", {"verdict": "correct", "no_verdict": False})
    tally.record("t", "gold", {"verdict": "grader_error", "no_verdict": True, "cause": "pool died"})
    assert len(tally.failures) == 3, tally.failures
    explained = soak.Tally()
    explained.kill("worker")
    explained.record("t", "gold", {"verdict": "grader_error", "no_verdict": True, "cause": "pool died"})
    assert explained.failures == []
    assert time.monotonic() - explained.kills[0][0] < soak._KILL_WINDOW_S


def test_the_growth_rule_names_what_grew():
    soak = _soak_module()
    first = {"procs": 10, "fds": 100, "rss_mb": {"driver": 200.0, "pool_workers": 400.0}}
    steady = {"procs": 11, "fds": 110, "rss_mb": {"driver": 230.0, "pool_workers": 450.0}}
    assert soak.grown(first, steady) == []
    leaking = {"procs": 20, "fds": 300, "rss_mb": {"driver": 200.0, "pool_workers": 900.0}}
    found = soak.grown(first, leaking)
    assert [f.split(" ")[0] for f in found] == ["procs", "fds", "rss_mb[pool_workers]"], found

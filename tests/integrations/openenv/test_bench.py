"""benchmarks/bench_serve.py runs end to end (``--quick``): its servers start, its client drives them, its table prints.

No timing is asserted: this machine's numbers are the benchmark's business.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

if os.environ.get("GYM_INTEGRITY_REQUIRE_EXTRAS") == "1":
    import openenv  # noqa: F401  (the [serve] extra is installed: a missing openenv-core must fail, not skip)
else:
    pytest.importorskip("openenv")

pytestmark = pytest.mark.serve

BENCH = pathlib.Path(__file__).resolve().parents[3] / "benchmarks" / "bench_serve.py"


@pytest.mark.timeout(300)  # two server processes import openenv-core (and gradio) before anything runs
def test_bench_serve_quick_prints_the_table():
    result = subprocess.run([sys.executable, str(BENCH), "--quick"], capture_output=True, text=True, timeout=280,
                            cwd=BENCH.parents[1])
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "episodes/s" in out and "reset p50/p99 ms" in out and "step p50/p99 ms" in out
    for row in ("ours, over the server (1 session)", "ours, over the server (4 sessions)", "ours, in process"):
        line = next((line for line in out.splitlines() if line.strip().startswith(row)), None)
        assert line is not None, f"no row {row!r} in:\n{out}"
        assert any(ch.isdigit() for ch in line[len(row) + 2:]), line
    assert "over the wire (1 session) vs in process:" in out
    assert "ours / OpenEnv >= 1.0x (1 session" in out
    if importlib.util.find_spec("reasoning_gym_env") is None:
        assert "OpenEnv's envs/reasoning_gym_env" in out and "not on PyPI" in out  # the install hint
        assert "n/a (OpenEnv's reasoning_gym_env not installed)" in out
    else:
        assert "OpenEnv reasoning_gym" in out and "(1 session)" in out

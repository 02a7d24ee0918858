"""A verifiers v1 taskset (tests/support/vf_sums.py, loaded by module name through verifiers' own loader) and its
@vf.reward scoring, untouched, under the audit: the lenient reward fails with evidence, the strict one passes."""

from __future__ import annotations

import json
import os

import pytest

from gym_integrity.audit import Status, check_integrity
from gym_integrity.audit.adapters_targets import adapt
from gym_integrity.cli import main

if os.environ.get("GYM_INTEGRITY_REQUIRE_EXTRAS") == "1":
    import verifiers  # noqa: F401  (the [verifiers] CI step must fail, not skip, on a broken install)
else:
    pytest.importorskip("verifiers")

pytestmark = [pytest.mark.verifiers, pytest.mark.timeout(300)]
LENIENCY = ["gold_answer_scored", "constant_answers", "covering_sprays"]


def test_a_taskset_reward_that_pays_any_reply_holding_the_answer_fails():
    env = adapt("verifiers:vf_sums", num_tasks=8)
    env.reset(seed=1)
    [gold] = env.gold_answers()
    assert env.step(f"maybe {gold}")[1:3] == (1.0, True)
    report = check_integrity(lambda: adapt("verifiers:vf_sums"), probes=LENIENCY)
    assert report.status_of("gold_answer_scored") is Status.PASSED
    assert report.status_of("covering_sprays") is Status.FAILED
    assert any("-> reward 1" in line for line in report.result("covering_sprays").evidence)


def test_the_strict_reward_passes_from_the_cli(tmp_path, capsys):
    """The leniency and end-of-episode probes (the full audit of this taskset passes too, but its timed probes
    are at the mercy of a loaded machine: one such run failed here among 42 other tests)."""
    path = tmp_path / "audit.json"
    code = main(["audit", "verifiers:vf_sums", "--env-kwargs", '{"task": {"strict": true}}', "--no-progress",
                 "--json", str(path), *sum((["--probe", p] for p in [*LENIENCY, "rescore_after_end",
                                                                     "alphabet_sprays", "question_echo"]), [])])
    out = capsys.readouterr().out
    [report] = json.loads(path.read_text())["reports"]
    assert code == 0 and report["verdict"] == "pass", out


def test_an_unknown_taskset_is_named(capsys):
    with pytest.raises(ModuleNotFoundError, match="no_such_taskset"):
        adapt("verifiers:no_such_taskset")
    assert main(["audit", "verifiers:no_such_taskset", "--no-progress"]) == 2
    assert "importing no_such_taskset raised ModuleNotFoundError" in capsys.readouterr().out


def test_a_reward_that_needs_a_runtime_runs_in_verifiers_subprocess_runtime():
    """Offline (no runtime) verifiers skips such a reward, so even the gold is paid 0; in its subprocess runtime the
    gold is paid and a wrong answer is not."""
    offline = adapt("verifiers:vf_runtime_sums", num_tasks=4)
    offline.reset(seed=0)
    [gold] = offline.gold_answers()
    assert offline.step(gold)[1] == 0.0
    live = adapt("verifiers:vf_runtime_sums", num_tasks=4, runtime="subprocess")
    live.reset(seed=0)
    assert live.step(gold)[1:3] == (1.0, True)
    live.reset(seed=0)
    assert live.step(f"{gold}0")[1] == 0.0
    with pytest.raises(ValueError, match="runtime must be None or 'subprocess'"):
        adapt("verifiers:vf_runtime_sums", runtime="docker")

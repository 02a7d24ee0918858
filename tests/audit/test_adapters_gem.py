"""GEM's envs (gem.make), untouched, audited for real through the GEM adapter: as they are, and inside the stack."""

from __future__ import annotations

import json
import os

import pytest

import reward_toys
from gym_integrity.audit import Status, check_integrity
from gym_integrity.audit.adapters_targets import adapt, build
from gym_integrity.cli import main

if os.environ.get("GYM_INTEGRITY_REQUIRE_EXTRAS") == "1":
    import gem  # noqa: F401  (the [gem] CI step must fail, not skip, on a broken install)
else:
    pytest.importorskip("gem")

pytestmark = [pytest.mark.gem, pytest.mark.timeout(300)]
END_PROBES = ["gold_answer_scored", "rescore_after_end", "inert_after_end"]


def test_gem_reasoning_gym_env_rescores_after_the_end_and_the_stack_closes_it():
    raw = check_integrity(lambda: adapt("gem:rg:leg_counting", size=16), probes=[*END_PROBES, "covering_sprays"])
    assert raw.status_of("gold_answer_scored") is Status.PASSED
    assert raw.status_of("rescore_after_end") is Status.FAILED
    assert any("re-scored: reward 0 -> 1" in line for line in raw.result("rescore_after_end").evidence)
    assert raw.status_of("covering_sprays") is Status.FAILED  # reasoning-gym's partial credit for containing the gold
    stacked = check_integrity(lambda: build("gem:rg:leg_counting", stacked=True, size=16),
                              probes=[*END_PROBES, "covering_sprays"])
    assert {p: stacked.status_of(p) for p in END_PROBES} == dict.fromkeys(END_PROBES, Status.PASSED)
    assert stacked.status_of("covering_sprays") is Status.FAILED  # leniency: only a stricter grader closes it


def test_gem_math_env_over_a_local_dataset_in_the_clis_child_processes(tmp_path, capsys):
    """GEM's MathEnv grades in a multiprocessing pool of its own; the audit's child builds it all the same."""
    rows = [{"problem": row["prompt"], "answer": row["answer"]} for row in reward_toys.rows(12)]
    data = reward_toys.write_jsonl(tmp_path / "sums.jsonl", rows)
    env = adapt("gem:math:GSM8K", dataset=str(data))
    try:
        env.reset(seed=0)
        [gold] = env.gold_answers()
        assert env.step(f"\\boxed{{{gold}}}")[1] == 1.0
    finally:
        env.close()
    path = tmp_path / "audit.json"
    code = main(["audit", "gem:math:GSM8K", "--dataset", str(data), "--no-progress", "--json", str(path),
                 *sum((["--probe", p] for p in END_PROBES), [])])
    out = capsys.readouterr().out
    [report] = json.loads(path.read_text())["reports"]
    statuses = {r["probe"]: r["status"] for r in report["results"]}
    assert code == 1, out
    assert statuses["rescore_after_end"] == "failed" and statuses["inert_after_end"] == "failed", out
    # GEM pays 0 for a check still running after 1 s (its pool's first one imports math_verify): on a loaded
    # machine even the gold's first grading can time out, which gold_answer_scored then reports.
    assert statuses["gold_answer_scored"] in {"passed", "failed"}

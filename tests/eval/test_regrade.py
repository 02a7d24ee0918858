"""gym-integrity regrade: records graded by one grader, the grader changed, graded again; what flipped is shown."""

from __future__ import annotations

import json

import pytest

import gym_integrity
from gym_integrity.cli import main
from gym_integrity.eval import read_records
from gym_integrity.eval.regrade import regrade
from gym_integrity.rollout import collect
from gym_integrity.openai_stub.judge_server import JudgeServer, write_policy

from first_golds import golds


@pytest.fixture
def grader():
    import regrade_env

    regrade_env.GRADER["lenient"] = True
    yield regrade_env.GRADER
    regrade_env.GRADER["lenient"] = True


def test_rollout_records_regraded_after_the_grader_is_fixed(grader, tmp_path, capsys):
    gold = golds("FlakySum-v0", range(6))

    asked = []

    def policy(chats):  # even seeds answer right; odd seeds pad the gold with digits (the lenient bug pays it)
        out = []
        for c in chats:
            g = gold[c[0]["content"]]
            out.append(f"<answer>{g}</answer>" if len(asked) % 2 == 0 else f"<answer>9{g}9</answer>")
            asked.append(g)
        return out

    env = gym_integrity.make("FlakySum-v0")
    try:
        episodes = collect(env, policy, seeds=list(range(6)))
    finally:
        env.close()
    assert [e.verdict for e in episodes] == ["correct"] * 6  # the lenient grader paid the sprays
    path = tmp_path / "rollouts.jsonl"
    path.write_text("".join(json.dumps(e.to_record()) + "\n" for e in episodes), encoding="utf-8")
    record = next(read_records(path))
    assert record["provenance"]["env_id"] == "FlakySum-v0" and record["provenance"]["seed"] == 0
    assert record["provenance"]["versions"]["gym-integrity"] and "math-verify" in record["provenance"]["versions"]
    assert len(record["provenance"]["env_kwargs_hash"]) == 16

    assert main(["regrade", str(path), "--json"]) == 0  # same grader: nothing flips
    assert json.loads(capsys.readouterr().out)["flipped"] == 0
    grader["lenient"] = False  # the bug is fixed
    assert main(["regrade", str(path), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["flipped"] == 3 and report["by_verdict"] == {"correct -> incorrect": 3}
    assert sorted(f["seed"] for f in report["flips"]) == [1, 3, 5]
    assert report["by_dataset"] == {"FlakySum-v0": {"records": 6, "regraded": 6, "flipped": 3}}
    assert main(["regrade", str(path)]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "flipped correct -> incorrect: 3" in out and "seed 3" in out


def test_trainer_shape_and_eval_records_regrade(grader, tmp_path, capsys):
    gold = golds("FlakySum-v0", [0, 1])
    (q0, g0), (q1, g1) = gold.items()
    trainer = [{"env_id": "FlakySum-v0", "seed": 0, "completion": f"<answer>1{g0}</answer>", "reward": 1.0,
                "verdict": "correct"},
               {"env_id": "FlakySum-v0", "seed": 1, "completions": [f"<answer>{g1}</answer>"], "num_tokens": [5],
                "reward": 1.0, "verdict": "correct"},
               {"env_id": "FlakySum-v0", "seed": 1, "problem_id": "not-this-item", "completion": "x", "reward": 0.0,
                "verdict": "no_answer"}]
    grader["lenient"] = False
    report = regrade(trainer)
    assert [r.flipped for r in report.rows] == [True, False, False] and report.rows[2].skipped == "item_mismatch"

    # eval records: graded with the lenient grader through `gym-integrity eval`, then regraded strictly
    grader["lenient"] = True
    write_policy(tmp_path / "p.json", {q0: f"<answer>{g0}0</answer>", q1: f"<answer>{g1}</answer>"})
    out = tmp_path / "eval.jsonl"
    with JudgeServer("policy", policy_file=tmp_path / "p.json") as server:
        assert main(["eval", "FlakySum-v0", "--base-url", server.url, "--model", "m", "-n", "2", "--json",
                     "--no-progress", "--out", str(out)]) == 0
    capsys.readouterr()
    records = list(read_records(out))
    assert [r["verdict"] for r in records] == ["correct", "correct"]
    assert all(r["provenance"]["env_id"] == "FlakySum-v0" and r["provenance"]["problem_id"] == r["item"]
               for r in records)
    grader["lenient"] = False
    report = regrade(records)
    assert [(r.seed, r.old_verdict, r.new_verdict) for r in report.flips] == [(0, "correct", "incorrect")]


def test_a_file_whose_records_are_all_skipped_says_so_and_exits_two(tmp_path, capsys):
    """Nothing regraded is not "nothing flipped": a record whose problem_id is not its seed's item is skipped."""
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"env_id": "ReasoningGym-v0", "env_kwargs": {"dataset": "leg_counting"}, "seed": 7,
                                "problem_id": "leg_counting-7", "completion": "<answer>12</answer>", "reward": 1.0,
                                "verdict": "correct"}) + "\n")
    assert main(["regrade", str(path)]) == 2
    out = capsys.readouterr().out
    assert "skipped (item_mismatch): 1" in out and "nothing was regraded" in out and "nothing flipped" not in out

"""skyrl-gym's text envs (skyrl_gym.make over dataset rows, as SkyRL builds them), untouched, under the audit."""

from __future__ import annotations

import json
import os

import pytest

import reward_toys
from gym_integrity.audit import Status, check_integrity
from gym_integrity.audit.adapters_targets import adapt, build
from gym_integrity.cli import main

if os.environ.get("GYM_INTEGRITY_REQUIRE_EXTRAS") == "1":
    import skyrl_gym  # noqa: F401  (the [skyrl] CI step must fail, not skip, on a broken install)
else:
    pytest.importorskip("skyrl_gym")

pytestmark = [pytest.mark.skyrl, pytest.mark.timeout(300)]
END_PROBES = ["gold_answer_scored", "rescore_after_end", "inert_after_end"]


def skyrl_rows(n: int = 12) -> list[dict]:
    """SkyRL's dataset layout: a chat prompt, the env class and the reward spec with the ground truth."""
    return [{"prompt": [{"role": "user", "content": row["prompt"].replace("in <answer></answer> tags",
                                                                         "after ####")}],
             "env_class": "gsm8k", "reward_spec": {"method": "rule", "ground_truth": row["answer"]},
             "extra_info": {"split": "test"}} for row in reward_toys.rows(n)]


def test_skyrl_gsm8k_answers_after_hashes_and_rescores_after_done_until_stacked(tmp_path):
    data = reward_toys.write_jsonl(tmp_path / "gsm8k.jsonl", skyrl_rows())
    env = adapt("skyrl:gsm8k", dataset=str(data))
    obs, _ = env.reset(seed=2)
    [gold] = env.gold_answers()
    assert "Add" in obs and gold not in obs
    assert env.step(f"#### {gold}")[1:3] == (1.0, True)
    raw = check_integrity(lambda: adapt("skyrl:gsm8k", dataset=str(data)), probes=END_PROBES)
    assert raw.status_of("gold_answer_scored") is Status.PASSED
    assert raw.status_of("rescore_after_end") is Status.FAILED  # skyrl-gym's env grades every step it is sent
    stacked = check_integrity(lambda: build("skyrl:gsm8k", stacked=True, dataset=str(data)), probes=END_PROBES)
    assert stacked.passed, (stacked.failures, stacked.missing)


def test_skyrl_from_the_cli_with_a_named_gold_column(tmp_path, capsys):
    rows = [{**row, "label": row["reward_spec"]["ground_truth"]} for row in skyrl_rows(8)]
    data = reward_toys.write_jsonl(tmp_path / "gsm8k.jsonl", rows)
    path = tmp_path / "audit.json"
    code = main(["audit", "skyrl:gsm8k", "--dataset", str(data), "--gold-column", "label", "--no-progress",
                 "--json", str(path), "--probe", "gold_answer_scored", "--probe", "constant_answers"])
    out = capsys.readouterr().out
    [report] = json.loads(path.read_text())["reports"]
    assert code == 0 and report["verdict"] == "pass", out
    assert main(["audit", "skyrl:gsm8kk", "--dataset", str(data), "--no-progress"]) == 2
    assert "'gsm8kk' is not a skyrl id (did you mean ['gsm8k'" in capsys.readouterr().out

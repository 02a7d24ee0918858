"""skyrl_gym's own registry, make and step on our envs: stack on, no-verdicts in metadata, group seeding."""

from __future__ import annotations

import os

import pytest

import gym_integrity

if os.environ.get("GYM_INTEGRITY_REQUIRE_EXTRAS") == "1":
    import skyrl_gym  # the [skyrl] CI step must fail, not skip, on a broken install
else:
    skyrl_gym = pytest.importorskip("skyrl_gym")

from gym_integrity.integrations import skyrl as gs  # noqa: E402

pytestmark = [pytest.mark.skyrl, pytest.mark.timeout(300)]
RG = {"dataset": "leg_counting"}


def gold_of(row):
    env = gym_integrity.make(row["env_class"], **row["extras"]["env_kwargs"])
    env.reset(seed=row["extras"]["seed"])
    gold = env.unwrapped.gold_answers()[0]
    env.close()
    return gold


def test_every_id_is_in_skyrl_gyms_registry():
    assert {e.id for e in gym_integrity.env_entries()} | {gs.GENERIC_ID} <= set(skyrl_gym.registry)


def test_single_turn_graded_through_the_stack_and_frozen_after_the_end():
    row = gs.make_rows("ReasoningGym-v0", 1, **RG)[0]
    env = skyrl_gym.make(row["env_class"], env_config={}, extras=row["extras"])
    prompt, meta = env.init(row["prompt"])
    assert prompt == row["prompt"] and meta["problem_id"] == row["extras"]["problem_id"]
    out = env.step(f"<answer>{gold_of(row)}</answer>")
    assert (out["reward"], out["done"], out["metadata"]["verdict"], out["metadata"]["no_verdict"]) == \
        (1.0, True, "correct", False)
    assert "privileged" not in out["metadata"] and env.get_metrics()["reward"] == 1.0
    again = env.step("<answer>-1</answer>")  # TerminalFreeze: nothing graded after the end
    assert again["metadata"]["integrity"]["frozen"] is True and env.get_metrics()["verdict/correct"] == 1.0
    env.close()


def test_a_group_shares_its_item_and_rows_hold_no_gold():
    rows = gs.make_rows("ReasoningGym-v0", 3, **RG)
    assert len({r["extras"]["problem_id"] for r in rows}) == 3
    firsts = set()
    for _ in range(4):  # a GRPO group: the same row four times
        env = skyrl_gym.make("gym_integrity", extras=rows[0]["extras"])
        firsts.add(env.init()[0][-1]["content"])
        env.close()
    assert len(firsts) == 1 and gold_of(rows[0]) not in str(rows)


def test_tool_env_is_multi_turn():
    row = gs.make_rows("FinQA-v0", 1)[0]
    env = skyrl_gym.make("FinQA-v0", extras=row["extras"])
    env.init(row["prompt"])
    company = gym_integrity.make("FinQA-v0").reset(seed=row["extras"]["seed"])[1]["company"]
    out = env.step('<tool_call>{"name": "get_descriptions", "arguments": {"company_name": "%s"}}</tool_call>' % company)
    assert out["done"] is False and out["observations"][0]["role"] == "user" and out["metadata"]["verdict"] == "pending"
    out = env.step('<tool_call>{"name": "submit_answer", "arguments": {"answer": "%s"}}</tool_call>' % gold_of(row))
    assert (out["reward"], out["done"], out["metadata"]["verdict"]) == (1.0, True, "correct")


def test_a_no_verdict_is_visible_in_metadata_and_metrics():
    closed_judge = {"base_url": "http://127.0.0.1:9/v1", "model": "j", "timeout_s": 0.5, "max_retries": 0}
    row = gs.make_rows("QEDMath-v0", 1, problem_types=["proof"], judge=closed_judge)[0]
    env = skyrl_gym.make("QEDMath-v0", extras=row["extras"])
    env.init(row["prompt"])
    out = env.step("A proof: trivially true.")
    assert out["done"] and out["metadata"]["no_verdict"] is True and out["metadata"]["verdict"] == "grader_error"
    assert env.get_metrics()["no_verdict"] == 1.0
    aggregated = type(env).aggregate_metrics([env.get_metrics(), {"reward": 1.0, "no_verdict": 0.0}])
    assert aggregated["no_verdict"] == 0.5


def test_a_users_env_through_the_generic_id_and_bad_rows():
    import fourth_env  # noqa: F401 - registers TinySum-v0 (tests/support)

    row = gs.make_rows("TinySum-v0", 1)[0]
    env = skyrl_gym.make(gs.GENERIC_ID, extras=row["extras"])
    env.init(row["prompt"])
    assert env.step(f"<answer>{gold_of(row)}</answer>")["reward"] == 1.0
    with pytest.raises(ValueError, match="'seed'"):
        skyrl_gym.make("ReasoningGym-v0", extras={})
    with pytest.raises(ValueError, match="seed 0 picks"):
        skyrl_gym.make("ReasoningGym-v0", extras={"seed": 0, "problem_id": "other/1"}).init()


def test_the_docs_block_runs(capsys):
    import pathlib
    import re

    text = (pathlib.Path(__file__).parents[3] / "docs" / "trainers.md").read_text()
    section = text.split("\n## SkyRL\n", 1)[1].split("\n## ", 1)[0]
    exec(re.search(r"```python\n(.*?)```", section, re.S).group(1), {})
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] in ("0.0 True incorrect False",) and "'no_verdict': 0.0" in lines[1]

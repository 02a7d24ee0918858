"""verifiers' own eval (``run_eval``, its rollouts, interception server and chat program) on our envs, against the test server."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

import gym_integrity
from gym_integrity.seeding import distinct_item_seeds

if os.environ.get("GYM_INTEGRITY_REQUIRE_EXTRAS") == "1":
    import verifiers.v1  # noqa: F401 - the [verifiers] CI step must fail, not skip, on a broken install
else:
    pytest.importorskip("verifiers.v1")

from verifiers.v1.cli.eval.runner import run_eval  # noqa: E402
from verifiers.v1.configs.cli.eval import EvalConfig  # noqa: E402

from gym_integrity.integrations import verifiers as gv  # noqa: E402

pytestmark = [pytest.mark.verifiers, pytest.mark.timeout(300)]
RG = {"dataset": "leg_counting"}


def items(env_id, n, **kwargs):
    """(first observation, gold, info) of the n items the taskset makes: what the scripted policy 'knows'."""
    env = gym_integrity.make(env_id, **kwargs)
    out = []
    for seed in distinct_item_seeds(env, n, 0):
        obs, info = env.reset(seed=seed)
        out.append((obs, env.unwrapped.gold_answers()[0], info))
    env.close()
    return out


def evaluate(tmp_path, url, env_id, n, rollouts=1, **env_kwargs):
    config = EvalConfig.model_validate({
        "env": {"taskset": {"id": gv.TASKSET_ID, "env_id": env_id, "env_kwargs": env_kwargs, "num_tasks": n}},
        "model": "m", "client": {"base_url": url}, "push": False, "rich": None,
        "output_dir": str(tmp_path / "out"), "num_rollouts": rollouts})
    episodes = asyncio.run(run_eval(config))
    traces = [t for e in episodes for t in e.traces]
    assert len(traces) == n * rollouts
    return episodes, traces


def test_single_turn_rewards_come_from_the_grader_and_groups_share_their_item(tmp_path, policy):
    rows = items("ReasoningGym-v0", 3, **RG)
    url, server = policy({obs: f"<answer>{gold if i != 1 else 'x'}</answer>" for i, (obs, gold, _) in enumerate(rows)})
    episodes, traces = evaluate(tmp_path, url, "ReasoningGym-v0", 3, rollouts=2, **RG)
    assert all(e.ok for e in episodes)
    by_item = {}
    for t in traces:
        by_item.setdefault(t.info["gym_integrity_problem_id"], []).append((t.rewards["gym_integrity"].score,
                                                                          t.info["gym_integrity_verdict"]))
    expected = {info["problem_id"]: [(0.0, "incorrect")] * 2 if i == 1 else [(1.0, "correct")] * 2
                for i, (_, _, info) in enumerate(rows)}
    assert by_item == expected
    # The prompt the model saw is the stacked env's first observation, and nothing of the gold rides the trace.
    assert {r.prompt for r in server.requests} == {obs for obs, _, _ in rows}
    record = (tmp_path / "out").rglob("traces.jsonl").__next__().read_text()
    assert all(f'"problem_id":"{info["problem_id"]}"' in record for _, _, info in rows)
    assert "privileged" not in record


def test_tool_env_plays_every_turn_through_the_stack(tmp_path, policy):
    rows = items("FinQA-v0", 2)
    script = {obs.splitlines()[0]: [{"tool": "get_descriptions", "arguments": {"company_name": info["company"]}},
                                    {"tool": "submit_answer", "arguments": {"answer": gold if i == 0 else "-1"}}]
              for i, (obs, gold, info) in enumerate(rows)}
    url, server = policy(script)
    episodes, traces = evaluate(tmp_path, url, "FinQA-v0", 2)
    got = {t.info["gym_integrity_problem_id"]: (t.rewards["gym_integrity"].score, t.info["gym_integrity_verdict"],
                                                t.num_turns) for t in traces}
    assert got == {rows[0][2]["problem_id"]: (1.0, "correct", 2), rows[1][2]["problem_id"]: (0.0, "incorrect", 2)}
    # The second model call carried the tool's result as the user turn: the env ran the tool.
    seconds = [r.body["messages"] for r in server.requests if len(r.body.get("messages", [])) == 3]
    assert len(seconds) == 2 and all("<tool_call>" in json.dumps(m[1]) and m[2]["role"] == "user" for m in seconds)


def test_a_no_verdict_is_a_failed_rollout_not_a_zero(tmp_path, policy):
    closed_judge = {"base_url": "http://127.0.0.1:9/v1", "model": "j", "timeout_s": 0.5, "max_retries": 0}
    kwargs = {"problem_types": ["proof"], "judge": closed_judge}
    url, _ = policy({"": "A proof: trivially true."})
    episodes, traces = evaluate(tmp_path, url, "QEDMath-v0", 1, rollouts=2, **kwargs)
    for episode, trace in zip(episodes, traces):
        assert not episode.ok and not trace.ok and trace.stop_condition == "noverdict_error"
        assert trace.errors[-1].type == "NoVerdict" and "grader_error" in trace.errors[-1].message
        assert "gym_integrity" not in trace.rewards and trace.info["gym_integrity_no_verdict"] is True
        assert episode.errors and episode.errors[-1].type == "NoVerdict"


def test_a_users_registered_env_runs_by_its_module_id(tmp_path, policy):
    import fourth_env  # noqa: F401 - registers TinySum-v0 (tests/support)

    rows = items("TinySum-v0", 2)
    url, _ = policy({obs: f"<answer>{gold}</answer>" for obs, gold, _ in rows})
    _, traces = evaluate(tmp_path, url, "fourth_env:TinySum-v0", 2)
    assert sorted(t.rewards["gym_integrity"].score for t in traces) == [1.0, 1.0]


def test_bad_ids_and_options_fail_when_the_tasks_are_made():
    with pytest.raises(ValueError, match="'Nope-v0' is not a registered id"):
        list(gv.GymTaskset(gv.GymTasksetConfig(id=gv.TASKSET_ID, env_id="Nope-v0")))
    with pytest.raises(TypeError, match="datset"):
        list(gv.GymTaskset(gv.GymTasksetConfig(id=gv.TASKSET_ID, env_id="ReasoningGym-v0", env_kwargs={"datset": 1})))
    with pytest.raises(ValueError, match="num_tasks"):
        list(gv.GymTaskset(gv.GymTasksetConfig(id=gv.TASKSET_ID, env_id="ReasoningGym-v0", num_tasks=0)))


def docs_block(heading):
    """The first python block under ``## heading`` of docs/trainers.md."""
    import pathlib
    import re

    text = (pathlib.Path(__file__).parents[3] / "docs" / "trainers.md").read_text()
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_docs_block_runs(tmp_path, policy, capsys):
    rows = items("ReasoningGym-v0", 4, **RG)
    url, _ = policy({obs: f"<answer>{gold}</answer>" for obs, gold, _ in rows})
    code = docs_block("verifiers")
    assert '"http://127.0.0.1:8002/v1"' in code and '"outputs"' in code
    exec(code.replace('"http://127.0.0.1:8002/v1"', repr(url)).replace('"outputs"', repr(str(tmp_path))), {})
    assert capsys.readouterr().out.splitlines() == ["True correct 1.0"] * 8


def test_verifiers_own_cli_through_python_dash_m(tmp_path, policy):
    import subprocess
    import sys

    rows = items("ReasoningGym-v0", 2, **RG)
    url, _ = policy({rows[0][0]: f"<answer>{rows[0][1]}</answer>"})
    done = subprocess.run(
        [sys.executable, "-m", "gym_integrity.integrations.verifiers", gv.TASKSET_ID, "--env.taskset.env-id",
         "ReasoningGym-v0", "--env.taskset.env-kwargs", json.dumps(RG), "-n", "2", "--model", "m",
         "--client.base-url", url, "--no-push", "--no-rich", "-o", str(tmp_path / "cli")],
        capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    traces = [json.loads(line) for f in (tmp_path / "cli").rglob("traces.jsonl") for line in f.read_text().splitlines()]
    got = sorted((t["traces"][0]["info"]["gym_integrity_verdict"], t["traces"][0]["rewards"]["gym_integrity"]["score"])
                 for t in traces)
    assert got == [("correct", 1.0), ("no_answer", 0.0)]


def test_a_failed_model_call_records_no_reward(tmp_path, policy):
    url, server = policy({})
    server.script("404")
    episodes, traces = evaluate(tmp_path, url, "ReasoningGym-v0", 1, **RG)
    trace = traces[0]
    assert not trace.ok and trace.stop_condition == "provider_error" and "gym_integrity" not in trace.rewards
    assert trace.info["gym_integrity_ended"] is False

"""``gym-integrity eval`` end to end over real HTTP: the test server plays the policy, every env family, faults, resume."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

import gym_integrity
from gym_integrity.cli import main
from gym_integrity.eval import read_records
from gym_integrity.seeding import distinct_item_seeds
from gym_integrity.openai_stub.judge_server import JudgeServer, write_policy

RG = {"dataset": "leg_counting"}


def episodes(env_id, n, seed=0, **kwargs):
    """(first observation, gold answer, env info) of the n problems the eval plays: what the scripted policy 'knows'."""
    env = gym_integrity.make(env_id, **kwargs)
    out = []
    for s in distinct_item_seeds(env, n, seed):
        obs, info = env.reset(seed=s)
        out.append((obs, env.unwrapped.gold_answers()[0], info))
    env.close()
    return out


def run_cli(capsys, *args):
    code = main(["eval", *args, "--json", "--no-progress"])
    return code, json.loads(capsys.readouterr().out)


def test_single_turn_accuracy_interval_verdicts_and_records(tmp_path, capsys):
    rows = episodes("ReasoningGym-v0", 12, **RG)
    policy = {obs: f"<answer>{gold if i % 3 == 0 else 'x'}</answer>" for i, (obs, gold, _) in enumerate(rows)}
    write_policy(tmp_path / "policy.json", policy)
    out = tmp_path / "results.jsonl"
    with JudgeServer("policy", policy_file=tmp_path / "policy.json") as server:
        code, summary = run_cli(capsys, "ReasoningGym-v0", "--base-url", server.url, "--model", "m", "-n", "12",
                                "--concurrency", "4", "--env-kwargs", json.dumps(RG), "--out", str(out))
    assert code == 0
    assert summary["episodes"] == summary["graded"] == 12
    assert summary["accuracy"] == pytest.approx(4 / 12) and summary["success_rate"] == pytest.approx(4 / 12)
    low, high = summary["accuracy_ci95"]
    assert 0.1 < low < 4 / 12 < high < 0.65
    assert summary["verdicts"] == {"correct": 4, "incorrect": 8}
    assert summary["pass_at_k"] == {"1": pytest.approx(4 / 12)}
    assert summary["completion_tokens"] > 0 and summary["latency_p50_s"] > 0
    records = list(read_records(out))
    assert sorted(r["item"] for r in records) == sorted(info["problem_id"] for _, _, info in rows)
    assert {r["sample"] for r in records} == {0}
    by_item = {info["problem_id"]: (obs, gold, info) for obs, gold, info in rows}
    for record in records:
        obs, gold, info = by_item[record["item"]]
        assert record["item"] == info["problem_id"] and record["env_id"] == "ReasoningGym-v0"
        assert record["messages"][0] == {"role": "user", "content": obs}
        assert record["messages"][1] == {"role": "assistant", "content": policy[obs]}
        assert "privileged" not in json.dumps(record) and "gold" not in record


def test_multi_turn_attempts_keep_the_conversation(tmp_path, capsys):
    kwargs = {"problem_types": ["answer"], "max_attempts": 2}
    rows = episodes("QEDMath-v0", 3, **kwargs)
    write_policy(tmp_path / "p.json", {obs: ["\\boxed{-99999}", f"</think>\\boxed{{{gold}}}"] for obs, gold, _ in rows})
    out = tmp_path / "r.jsonl"
    with JudgeServer("policy", policy_file=tmp_path / "p.json") as server:
        code, summary = run_cli(capsys, "QEDMath-v0", "--base-url", server.url, "--model", "m", "-n", "3",
                                "--env-kwargs", json.dumps(kwargs), "--out", str(out))
    assert code == 0 and summary["accuracy"] == 1.0 and summary["verdicts"] == {"correct": 3}
    for record in read_records(out):
        roles = [m["role"] for m in record["messages"]]
        assert roles == ["user", "assistant", "user", "assistant"] and record["steps"] == 2
        assert "Attempt 1 of 2: incorrect" in record["messages"][2]["content"]


@pytest.mark.parametrize("native", [True, False], ids=["native-tools", "tool-call-text"])
def test_tool_env_through_function_calling_or_its_text_fallback(tmp_path, capsys, native):
    rows = episodes("FinQA-v0", 2)
    script = {}
    for obs, gold, info in rows:
        script[obs.splitlines()[0]] = [{"tool": "get_descriptions", "arguments": {"company_name": info["company"]}},
                                       {"tool": "submit_answer", "arguments": {"answer": gold}}]
    write_policy(tmp_path / "p.json", script)
    out = tmp_path / "r.jsonl"
    with JudgeServer("policy", policy_file=tmp_path / "p.json", native_tools=native) as server:
        code, summary = run_cli(capsys, "FinQA-v0", "--base-url", server.url, "--model", "m", "-n", "2",
                                "--out", str(out))
        refused = [r for r in server.requests if r.behaviour == "400:tools"]
    assert code == 0 and summary["verdicts"] == {"correct": 2} and summary["accuracy"] == 1.0
    for record in read_records(out):
        roles = [m["role"] for m in record["messages"]]
        if native:
            assert roles == ["user", "assistant", "tool", "assistant", "tool"] and not refused
            assert record["messages"][1]["tool_calls"][0]["function"]["name"] == "get_descriptions"
        else:  # the server refused tools once; from then on the calls go as <tool_call> text
            assert roles == ["user", "assistant", "user", "assistant"] and len(refused) >= 1
            assert "<tool_call>" in record["messages"][1]["content"]


def test_pass_at_k_over_samples_and_no_verdicts_are_shown_not_scored(tmp_path, capsys):
    closed_judge = {"base_url": "http://127.0.0.1:9/v1", "model": "j", "timeout_s": 0.5, "max_retries": 0}
    kwargs = {"problem_types": ["proof"], "judge": closed_judge}
    with JudgeServer("wrong") as server:
        code, summary = run_cli(capsys, "QEDMath-v0", "--base-url", server.url, "--model", "m", "-n", "2",
                                "--samples", "3", "--env-kwargs", json.dumps(kwargs))
    assert code == 0 and summary["episodes"] == 6
    assert summary["no_verdict"] == 6 and summary["no_verdict_rate"] == 1.0
    assert summary["accuracy"] is None and summary["graded"] == 0 and summary["pass_at_k"] == {}
    rows = episodes("ReasoningGym-v0", 2, **RG)
    write_policy(tmp_path / "p.json", {rows[0][0]: f"<answer>{rows[0][1]}</answer>", rows[1][0]: "<answer>x</answer>"})
    with JudgeServer("policy", policy_file=tmp_path / "p.json") as server:
        code, summary = run_cli(capsys, "ReasoningGym-v0", "--base-url", server.url, "--model", "m", "-n", "2",
                                "--samples", "3", "--env-kwargs", json.dumps(RG))
    assert summary["pass_at_k"] == {"1": 0.5, "2": 0.5, "3": 0.5}


@pytest.mark.parametrize("fault", ["429", "500", "malformed", "drop"])
def test_policy_faults_are_retried_then_graded(tmp_path, capsys, fault):
    rows = episodes("ReasoningGym-v0", 3, **RG)
    write_policy(tmp_path / "p.json", {obs: f"<answer>{gold}</answer>" for obs, gold, _ in rows})
    with JudgeServer("policy", policy_file=tmp_path / "p.json") as server:
        server.script(fault, fault)
        code, summary = run_cli(capsys, "ReasoningGym-v0", "--base-url", server.url, "--model", "m", "-n", "3",
                                "--concurrency", "1", "--env-kwargs", json.dumps(RG), "--max-retries", "3")
        behaviours = [r.behaviour for r in server.requests]
    assert code == 0 and summary["accuracy"] == 1.0 and summary["policy_errors"] == 0
    assert behaviours.count(fault) == 2 and len(behaviours) == 5


def test_faults_past_the_retries_are_policy_errors_not_crashes(tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    with JudgeServer("500") as server:
        code, summary = run_cli(capsys, "ReasoningGym-v0", "--base-url", server.url, "--model", "m", "-n", "3",
                                "--env-kwargs", json.dumps(RG), "--max-retries", "1", "--out", str(out))
    # Nothing graded and every episode a policy error: exit 1, with the reason and the URL on stderr.
    assert code == 1 and summary["policy_errors"] == 3 and summary["accuracy"] is None
    assert summary["verdicts"] == {"policy_error": 3}
    assert {r["policy_error"] for r in read_records(out)} == {"server_error"}
    with JudgeServer("hang", hang_s=5.0) as server:
        code, summary = run_cli(capsys, "ReasoningGym-v0", "--base-url", server.url, "--model", "m", "-n", "1",
                                "--env-kwargs", json.dumps(RG), "--max-retries", "0", "--timeout", "0.3")
    assert summary["policy_errors"] == 1


def test_a_killed_run_resumes_losing_only_the_episodes_in_flight(tmp_path, capsys):
    rows = episodes("ReasoningGym-v0", 40, **RG)
    write_policy(tmp_path / "p.json", {obs: f"<answer>{gold}</answer>" for obs, gold, _ in rows})
    out = tmp_path / "r.jsonl"
    args = ["ReasoningGym-v0", "--model", "m", "-n", "40", "--concurrency", "2", "--env-kwargs", json.dumps(RG),
            "--out", str(out)]
    with JudgeServer("policy", policy_file=tmp_path / "p.json", latency_s=0.1) as server:
        child = subprocess.Popen([sys.executable, "-m", "gym_integrity", "eval", *args, "--base-url", server.url,
                                  "--no-progress", "--json"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not out.exists() or len(out.read_text().splitlines()) < 6):
            time.sleep(0.05)
        child.send_signal(signal.SIGKILL)
        child.wait()
        before = list(read_records(out))
        assert 6 <= len(before) < 40
        with open(out, "a", encoding="utf-8") as handle:
            handle.write('{"env_id": "ReasoningGym-v0", "seed": 39, "sam')  # the line being written at the kill
        requests_before = len(server.requests)
        code, summary = run_cli(capsys, *args, "--base-url", server.url, "--resume")
        asked = len(server.requests) - requests_before
    assert code == 0 and summary["episodes"] == 40 and summary["accuracy"] == 1.0
    records = list(read_records(out))
    assert len(records) == len({r["seed"] for r in records}) == 40  # each once: nothing lost, nothing repeated
    assert asked == 40 - len(before)
    assert out.read_text().endswith("\n") and all(line.startswith("{") for line in out.read_text().splitlines())


def test_plot_writes_a_png_with_per_dataset_panels_for_composites(tmp_path, capsys):
    composite = {"dataset": {"leg_counting": 1, "basic_arithmetic": 1}}
    with JudgeServer("wrong") as server:
        code, summary = run_cli(capsys, "ReasoningGym-v0", "--base-url", server.url, "--model", "m", "-n", "8",
                                "--env-kwargs", json.dumps(composite), "--plot", str(tmp_path / "r.png"))
    assert code == 0 and set(summary["per_dataset"]) == {"leg_counting", "basic_arithmetic"}
    assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_usage_errors_exit_2_and_say_what_is_wrong(tmp_path, capsys):
    base = ["eval", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]
    for extra, message in ((["Nope-v0"], "'Nope-v0' is not a registered id"),
                           (["ReasoningGym-v0", "--resume"], "--resume needs --out"),
                           (["ReasoningGym-v0", "--samples", "0"], "must be an int >= 1, got 0"),
                           (["ReasoningGym-v0", "--env-kwargs", "[1]"], "--env-kwargs must be a JSON object"),
                           (["ReasoningGym-v0", "--env-kwargs", '{"bogus": 1}'], "bogus is not an option")):
        with pytest.raises(SystemExit) as caught:
            main(base + extra)
        assert caught.value.code == 2
        assert message in capsys.readouterr().err
    (tmp_path / "r.jsonl").write_text('{"seed": 0}\n')
    with pytest.raises(SystemExit):
        main(base + ["ReasoningGym-v0", "--out", str(tmp_path / "r.jsonl")])
    assert "pass --resume" in capsys.readouterr().err


# ---------------------------------------------------------------- found by the hostile-policy review of issue 12


class _Hostile:
    """A policy server of our own for replies the test server does not script: ``answer(body) -> (status, bytes)``."""

    def __init__(self, answer):
        import http.server
        import threading

        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status, data = answer(body)
                if status is None:  # drip: a body that never ends within the client's deadline
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", "100000")
                    self.end_headers()
                    for _ in range(100):
                        self.wfile.write(b" ")
                        self.wfile.flush()
                        time.sleep(0.1)
                    return
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        outer.calls = 0

    def close(self):
        self.server.shutdown()


def _chat(content, usage=None):
    return 200, json.dumps({"id": "x", "object": "chat.completion", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        **({"usage": usage} if usage is not None else {})}).encode()


def test_failing_after_reading_the_feedback_does_not_escape_the_wrong_answers_score(capsys):
    kwargs = {"problem_types": ["answer"], "max_attempts": 2}

    def answer(body):
        if len(body["messages"]) > 1:  # it has seen "Attempt 1 of 2: incorrect": bail out
            return 400, b'{"error": {"message": "no", "type": "invalid_request_error"}}'
        return _chat("\\boxed{-99999}")

    server = _Hostile(answer)
    try:
        code, summary = run_cli(capsys, "QEDMath-v0", "--base-url", server.url, "--model", "m", "-n", "3",
                                "--env-kwargs", json.dumps(kwargs), "--max-retries", "0")
    finally:
        server.close()
    assert summary["graded"] == 3 and summary["accuracy"] == 0.0 and summary["policy_errors"] == 0
    assert summary["ended_by_policy_error"] == 3 and summary["verdicts"] == {"incorrect": 3}


def test_accuracy_is_the_final_steps_reward_never_a_sum_over_attempts(tmp_path, capsys):
    with JudgeServer("score:6") as judge, JudgeServer("policy", policy_file=tmp_path / "p.json") as policy:
        write_policy(tmp_path / "p.json", {"": "</think>A proof that is the same every time."})
        kwargs = {"problem_types": ["proof"], "max_attempts": 3,
                  "judge": {"base_url": judge.url, "model": "j", "max_retries": 0}}
        code, summary = run_cli(capsys, "QEDMath-v0", "--base-url", policy.url, "--model", "m", "-n", "2",
                                "--env-kwargs", json.dumps(kwargs), "--out", str(tmp_path / "r.jsonl"))
    assert summary["accuracy"] == pytest.approx(6 / 7) and summary["accuracy_ci95"][1] <= 1.0
    assert all(r["return"] == pytest.approx(3 * 6 / 7) for r in read_records(tmp_path / "r.jsonl"))


@pytest.mark.parametrize("reply", [
    _chat("<answer>1</answer>", {"prompt_tokens": 1, "completion_tokens": float("inf")}),
    _chat("<answer>1</answer>", {"prompt_tokens": 1, "completion_tokens": -5}),
    (200, b'{"choices": []}'),
    (200, b'{"choices": [{"message": ' * 50_000 + b"1" + b"}]" * 50_000 + b"}"),
    _chat("\ud800 lone surrogate <answer>1</answer>"),
    (None, b""),  # a body that drips past the deadline
], ids=["inf-tokens", "negative-tokens", "no-choices", "deep-nesting", "surrogate", "drip"])
def test_a_hostile_reply_is_one_episodes_fault_never_the_runs(tmp_path, capsys, reply):
    server = _Hostile(lambda body: reply)
    out = tmp_path / "r.jsonl"
    try:
        code, summary = run_cli(capsys, "ReasoningGym-v0", "--base-url", server.url, "--model", "m", "-n", "2",
                                "--env-kwargs", json.dumps(RG), "--max-retries", "0", "--timeout", "1",
                                "--out", str(out))
    finally:
        server.close()
    assert summary["episodes"] == 2 and summary["policy_errors"] + summary["graded"] == 2
    assert code == (1 if summary["graded"] == 0 else 0)  # 1: nothing graded (a finished run, not a crash)
    assert [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]  # every line reads back


def test_a_missing_token_count_is_estimated_so_length_shaping_still_applies(capsys, tmp_path):
    kwargs = {"problem_types": ["answer"], "discount_factor": 0.99}
    rows = episodes("QEDMath-v0", 1, **kwargs)
    long_right = "</think>" + "x " * 2000 + f"\\boxed{{{rows[0][1]}}}"
    server = _Hostile(lambda body: _chat(long_right))  # no usage at all
    try:
        code, summary = run_cli(capsys, "QEDMath-v0", "--base-url", server.url, "--model", "m", "-n", "1",
                                "--env-kwargs", json.dumps(kwargs), "--out", str(tmp_path / "r.jsonl"))
    finally:
        server.close()
    [record] = read_records(tmp_path / "r.jsonl")
    assert record["usage_estimated"] and record["verdict"] == "correct" and record["reward"] < 0.01


def test_resume_refuses_another_runs_file_and_reruns_episodes_left_out_for_a_fault(tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    with JudgeServer("500") as server:
        run_cli(capsys, "ReasoningGym-v0", "--base-url", server.url, "--model", "m", "-n", "3",
                "--env-kwargs", json.dumps(RG), "--max-retries", "0", "--out", str(out))
    with JudgeServer("wrong") as server:
        code, summary = run_cli(capsys, "ReasoningGym-v0", "--base-url", server.url, "--model", "m", "-n", "3",
                                "--env-kwargs", json.dumps(RG), "--out", str(out), "--resume")
        assert len(server.requests) == 3  # the three left out for the fault ran again
        assert summary["episodes"] == 3 and summary["policy_errors"] == 0 and summary["graded"] == 3
        with pytest.raises(SystemExit):
            main(["eval", "QEDMath-v0", "--base-url", server.url, "--model", "m", "-n", "3", "--out", str(out),
                  "--resume", "--json", "--no-progress"])
    assert "holds results of another run" in capsys.readouterr().err


def test_plot_without_matplotlib_names_the_extra_to_install(tmp_path):
    """Run where matplotlib cannot be imported (None in sys.modules blocks the import): a clear message, exit 2."""
    script = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "from gym_integrity.cli import main\n"
        "from gym_integrity.openai_stub.judge_server import JudgeServer\n"
        "with JudgeServer('wrong') as s:\n"
        # FinQA: reasoning-gym imports matplotlib itself (through cellpylib), so its env cannot run without it
        f"    sys.exit(main(['eval', 'FinQA-v0', '--base-url', s.url, '--model', 'm', '-n', '1',"
        f" '--no-progress', '--plot', {str(tmp_path / 'r.png')!r}]))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "pip install 'gym-integrity[plot]'" in result.stderr
    assert not (tmp_path / "r.png").exists()


def test_unreachable_servers_and_no_verdicts_say_what_to_fix(capsys):
    code = main(["eval", "ReasoningGym-v0", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "-n", "2",
                 "--env-kwargs", json.dumps(RG), "--max-retries", "0", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1
    assert "policy errors: connection x2 at http://127.0.0.1:9/v1 (is the server running" in err
    with JudgeServer("wrong") as server:
        code = main(["eval", "QEDMath-v0", "--base-url", server.url, "--model", "m", "-n", "2", "--no-progress",
                     "--env-kwargs", json.dumps({"problem_types": ["proof"]})])
    err = capsys.readouterr().err
    assert code == 0 and "no-verdict x2: " in err and "judge" in err
    flat = " ".join(err.split())  # rich wraps long lines at word boundaries
    assert """pass --env-kwargs '{"judge": {"base_url": "http://host:port/v1", "model": "..."}}'""" in flat
    assert "to gym.make" not in flat and flat.rstrip().endswith("see docs/judge.md")  # the whole cause, for a CLI user
    with pytest.raises(SystemExit):
        main(["eval", "ReasoningGym-v0", "--base-url", "http://x/v1", "--model", "m", "--resume"])
    assert "--resume needs --out" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["eval", "ReasoningGym-v0", "--base-url", "http://x/v1", "--model", "m", "-n", "0"])
    assert "must be an int >= 1, got 0" in capsys.readouterr().err


def test_the_table_names_the_interval_it_shows():
    from rich.console import Console

    from gym_integrity.eval.report import summary_table
    from gym_integrity.eval.summary import summarize

    def shown(rewards):
        records = [{"reward": r, "verdict": "correct" if r == 1 else "incorrect", "seed": i}
                   for i, r in enumerate(rewards)]
        summary = summarize("QEDMath-v0", records, 1.0, 1)
        console = Console(width=200, record=True)
        console.print(summary_table(summary))
        return summary, console.export_text()

    summary, text = shown([1.0, 0.0, 0.0, 1.0])
    assert summary.accuracy_ci_method == "wilson" and "(Wilson)" in text
    summary, text = shown([-0.5, -1.0, 1.0, -0.5])   # the base preset's rewards: not a proportion
    assert summary.accuracy_ci_method == "normal" and "Wilson" not in text and "(normal approx.)" in text
    # A shaped mean is named as one, never as an accuracy; a 0/1 mean is an accuracy.
    assert summary.accuracy_label == "mean shaped reward" and "accuracy" not in text
    assert re.search(r"mean shaped reward\s*│\s*-0\.250", text), text
    summary, text = shown([1.0, 0.5, 0.0, 1.0])
    assert summary.accuracy_label == "mean reward (partial credit)" and "accuracy" not in text
    summary, text = shown([1.0, 0.0])
    assert summary.accuracy_label == "accuracy" and "accuracy (mean reward)" in text

"""Canary sweep: code-execution and hang attempts against every reasoning-gym dataset, through the registered env.

For each dataset, in both scoring modes and every answer wrapping the env
accepts (tag, boxed, raw; bare and embedded in arithmetic), the answer tries
to write a file, mutate a global (builtins, reasoning_gym), read the
scorer's caller frame, or hang the scorer (power towers, huge exponents,
huge move counts, deep nesting). The sweep fails if any canary runs, in the
env's process or in a sandbox worker (each canary that runs leaves a file),
if any step exceeds its bound, or if a canary comes back a no-verdict.

The env runs in a child process (``python tests/envs/reasoning_gym/test_canaries.py``), one
for the whole module: an unsafe in-process scorer can hang it in C code,
where no in-process timeout reaches; the parent kills it and fails that
dataset. So which datasets need the sandbox is decided here, on the real
scorers: a reasoning-gym upgrade whose scorer evaluates answers in process
fails this sweep (``test_the_sweep_fails_*`` show it on a forced case).
"""

from __future__ import annotations

import builtins
import json
import os
import select
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

IN_PROCESS_BOUND_S = 2.0      # an in-process scorer call
SCORE_TIMEOUT_S = 3.0         # the sandbox's run budget in the sweep (score_timeout_s)
SANDBOX_SLACK_S = 10.0        # queueing and pickling on a loaded 2-core machine
SIZE, SEED, INDEX = 4, 1, 0   # one fixed item per dataset: slow generators run once
FRAME_DEPTHS = range(1, 12)   # how far up the stack the frame-reading answers look


def canaries(marks: str) -> dict[str, str]:
    """Hostile answers by name; each one that runs anywhere leaves a file in ``marks``."""
    write = f"__import__('pathlib').Path('{marks}/{{}}').write_text('ran')"
    return {
        "file_write": write.format("file_write"),
        "os_system": f"__import__('os').system('touch {marks}/os_system')",
        "global_builtins": f"setattr(__import__('builtins'),'RG_CANARY',1) or {write.format('global_builtins')}",
        "global_module": f"setattr(__import__('reasoning_gym'),'RG_CANARY',1) or {write.format('global_module')}",
        "frame_read": (f"__import__('pathlib').Path('{marks}/frame_read')"
                       ".write_text(repr(list(__import__('sys')._getframe(1).f_locals)))"),
        "frame_gold": "__import__('sys')._getframe(1).f_locals['entry']['answer']",
        "eval_string": f"eval(\"{write.format('eval_string')}\")",
        "tower": "9**9**9**9",
        "tower_caret": "9^9^9^9",
        "tower_grouped": "((9**99)**99)**99",
        "huge_exponent": "1e999999999",
        "huge_counts": "R99999999 A+99999999 U99999999",
        "deep_nesting": "(" * 400 + "1" + ")" * 400,
        "negation_chain": "\u00ac" * 3000 + "P",
    }


def wrappings(answer: str, answer_format: str) -> dict[str, str]:
    """The answer as the env accepts it: tagged or boxed (format "either"), or the raw reply; bare and embedded."""
    forms = {"bare": answer, "embedded": f"1+{answer}"}
    if answer_format == "raw":
        return {f"raw/{k}": v for k, v in forms.items()}
    out = {}
    for k, v in forms.items():
        out[f"tag/{k}"] = f"Let me think.\n<answer>{v}</answer>"
        out[f"boxed/{k}"] = f"So the answer is \\boxed{{{v}}}."
    return out


# --------------------------------------------------------------------------- child side (the env's process)


def _sweep_dataset(name: str, marks: str, only: list[str] | None) -> dict:
    import gymnasium as gym

    import gym_integrity  # noqa: F401
    import reasoning_gym
    from gym_integrity.envs.reasoning_gym.table import rule_for, sandbox_language

    steps = []
    for scoring in ("strict", "reasoning_gym"):
        sandboxed = sandbox_language(rule_for(name), scoring) is not None
        bound = SCORE_TIMEOUT_S + SANDBOX_SLACK_S if sandboxed else IN_PROCESS_BOUND_S
        for answer_format in ("either", "raw"):
            env = gym.make("ReasoningGym-v0", dataset=name, size=SIZE, seed=SEED, scoring=scoring,
                           answer_format=answer_format, score_timeout_s=SCORE_TIMEOUT_S,
                           allow_above_chance=True)
            for canary, answer in canaries(marks).items():
                if only and canary not in only:
                    continue
                for wrapping, text in wrappings(answer, answer_format).items():
                    env.reset(options={"index": INDEX})
                    start = time.perf_counter()
                    _, reward, _, _, info = env.step(text)
                    seconds = time.perf_counter() - start
                    steps.append({"scoring": scoring, "canary": canary, "wrapping": wrapping, "reward": reward,
                                  "verdict": info["verdict"], "no_verdict": info["no_verdict"],
                                  "seconds": round(seconds, 3), "bound": bound, "sandboxed": sandboxed})
            env.close()
    globals_set = [where for where, module in (("builtins", builtins), ("reasoning_gym", reasoning_gym))
                   if hasattr(module, "RG_CANARY")]
    return {"dataset": name, "steps": steps, "globals_set": globals_set}


def _runner() -> None:
    """Serve sweep requests, one JSON line in, one JSON line out; keeps the sandbox pool warm meanwhile."""
    from gym_integrity.envs.reasoning_gym import sandbox, table
    from gym_integrity.grading.rules import OwnScorer

    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # a library's prints go to stderr, never into the replies
    sys.stdout = sys.stderr
    pool = sandbox.acquire_pool()
    import reasoning_gym  # noqa: F401  (while the workers warm up: no request pays for imports)

    pool.wait_ready(120)
    replies.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        request = json.loads(line)
        for forced in request.get("force_in_process", []):  # simulate an upgrade that made a scorer in-process
            table.RULES[forced] = OwnScorer("forced in process by the test")
        replies.write(json.dumps(_sweep_dataset(request["dataset"], request["marks"], request.get("only"))) + "\n")


# --------------------------------------------------------------------------- parent side (the test)


class Runner:
    """The child process that holds the envs; restarted after a hang."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        root = Path(__file__).resolve().parents[3]
        self.proc = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, cwd=root)
        ready = self._read_line(180)
        assert ready == {"ready": True}, "the canary runner did not start"

    def _read_line(self, timeout: float) -> dict | None:
        assert self.proc is not None and self.proc.stdout is not None
        readable, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not readable:
            return None
        line = self.proc.stdout.readline()
        return json.loads(line) if line else None

    def ensure_started(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            self.start()

    def sweep(self, request: dict, timeout: float) -> dict | None:
        """The child's result, or None if it did not answer in time (it is killed and restarted next time)."""
        self.ensure_started()
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        result = self._read_line(timeout)
        if result is None:
            self.stop()
        return result

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


@pytest.fixture(scope="module")
def runner():
    runner = Runner()
    yield runner
    runner.stop()


def sweep_failures(result: dict | None, marks: Path) -> list[str]:
    """Everything the sweep forbids, as readable lines (empty: the dataset held)."""
    failures = [f"canary ran: {p.name}" for p in sorted(marks.iterdir())]
    if result is None:
        return failures + ["the env's process did not answer within its bound (hung or died)"]
    failures += [f"global mutated in the env's process: {where}" for where in result["globals_set"]]
    for step in result["steps"]:
        where = f"{step['scoring']} {step['canary']} {step['wrapping']}"
        if step["seconds"] > step["bound"]:
            failures.append(f"{where}: {step['seconds']} s > bound {step['bound']} s")
        if step["no_verdict"]:
            failures.append(f"{where}: came back a no-verdict ({step['verdict']})")
        if step["scoring"] == "strict" and step["reward"] > 0.0:  # the opt-in mode's lenient scorers may pay
            failures.append(f"{where}: paid {step['reward']}")
    return failures


def request_timeout(name: str, canary_count: int) -> float:
    from gym_integrity.envs.reasoning_gym.table import rule_for

    steps = 2 * 6 * canary_count  # modes x wrappings
    per_step = SCORE_TIMEOUT_S + SANDBOX_SLACK_S if rule_for(name).language else IN_PROCESS_BOUND_S
    return 120.0 + min(steps * per_step, 600.0)  # generation of a slow item, then every step at its bound


def all_datasets() -> list[str]:
    from gym_integrity.envs.reasoning_gym import available_datasets

    return available_datasets()


@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", all_datasets())
def test_no_canary_runs_and_every_step_is_bounded(name, runner, tmp_path):
    result = runner.sweep({"dataset": name, "marks": str(tmp_path)}, request_timeout(name, len(canaries(""))))
    failures = sweep_failures(result, tmp_path)
    assert not failures, f"{name}:\n" + "\n".join(failures[:20])
    assert len(result["steps"]) == 2 * 6 * len(canaries(""))


# --------------------------------------------------------------------------- the sweep can fail


@pytest.mark.timeout(600)
def test_the_sweep_fails_when_a_scorer_runs_in_process(runner, tmp_path):
    """countdown's scorer forced in process, as a careless upgrade would leave it: the file-write and global
    canaries run and are caught, and the power tower hangs the env's process past its bound. The same requests
    against the registered table (the control) pass within the same bound."""
    control = {"dataset": "countdown", "only": ["file_write", "global_builtins", "tower"]}
    (tmp_path / "control").mkdir()
    runner.ensure_started()
    started = time.monotonic()
    assert sweep_failures(runner.sweep({**control, "marks": str(tmp_path / "control")}, 60), tmp_path / "control") == []
    bound = 10.0 + 5 * (time.monotonic() - started)  # the control's own time, with ample slack
    (tmp_path / "forced").mkdir()
    forced = {"dataset": "countdown", "marks": str(tmp_path / "forced"), "force_in_process": ["countdown"],
              "only": ["file_write", "global_builtins"]}
    failures = sweep_failures(runner.sweep(forced, bound), tmp_path / "forced")
    assert "canary ran: file_write" in failures and "canary ran: global_builtins" in failures
    assert "global mutated in the env's process: builtins" in failures
    (tmp_path / "hang").mkdir()
    hang = runner.sweep({**forced, "marks": str(tmp_path / "hang"), "only": ["tower"]}, bound)
    runner.stop()  # killed already if it hung; its scoring table was patched either way
    assert sweep_failures(hang, tmp_path / "hang") == ["the env's process did not answer within its bound (hung or died)"]


# --------------------------------------------------------------------------- the exploits on the raw scorers


def run_raw_scorer(dataset: str, answers: list[str], timeout: float = 60) -> list[list[str]]:
    """reasoning-gym's own scorer called directly on item 0, in a subprocess: per answer, its score and
    whether builtins now carries the canary's marker."""
    code = textwrap.dedent(f"""
        import builtins, reasoning_gym
        ds = reasoning_gym.create_dataset({dataset!r}, size={SIZE}, seed={SEED})
        for answer in {answers!r}:
            try:
                score = ds.score_answer(answer, entry=ds[{INDEX}])
            except Exception as exc:
                score = type(exc).__name__
            print(score, hasattr(builtins, "RG_CANARY"), flush=True)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
    return [line.split() for line in out.stdout.splitlines()]


def test_raw_scorers_run_the_canaries(tmp_path):
    """The exploits exist: countdown's own scorer writes the file and mutates builtins; the sweep blocks both."""
    marks = canaries(str(tmp_path))
    before, after = run_raw_scorer("countdown", [marks["file_write"], marks["global_builtins"]])
    assert (tmp_path / "file_write").exists() and before[1] == "False"
    assert (tmp_path / "global_builtins").exists() and after[1] == "True"
    run_raw_scorer("binary_matrix", [f"1+{marks['frame_read']}"])
    assert "entry" in (tmp_path / "frame_read").read_text()  # the scorer's locals: the gold is one step away


def test_raw_scorer_pays_the_gold_read_from_its_frame():
    """polynomial_multiplication's own scorer pays 1.0 for an answer that reads the gold out of its caller's frame."""
    frame_gold = "__import__('sympy').parse_expr(__import__('sys')._getframe({}).f_locals['entry']['answer'])"
    scores = run_raw_scorer("polynomial_multiplication", [frame_gold.format(depth) for depth in FRAME_DEPTHS])
    assert ["1.0", "False"] in scores  # at the depth of score_answer's frame, seen from inside sympy's eval


def test_raw_scorer_hangs_on_a_tower():
    with pytest.raises(subprocess.TimeoutExpired):
        run_raw_scorer("countdown", ["9**9**9**9"], timeout=5)


def test_registered_env_refuses_the_gold_read_from_a_frame():
    import gymnasium as gym

    env = gym.make("ReasoningGym-v0", dataset="polynomial_multiplication", size=SIZE, seed=SEED)
    for depth in FRAME_DEPTHS:
        env.reset(options={"index": INDEX})
        answer = f"__import__('sympy').parse_expr(__import__('sys')._getframe({depth}).f_locals['entry']['answer'])"
        _, reward, _, _, info = env.step(f"<answer>{answer}</answer>")
        assert (reward, info["verdict"], info["no_verdict"]) == (0.0, "unparsable", False)
    env.close()


if __name__ == "__main__":
    _runner()

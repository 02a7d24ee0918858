"""The runnable examples in examples/ (GRPO loop, local-server eval, reward hacking, quickstart notebook), run as a user runs them.

Each script runs as a subprocess with its fast defaults (``--demo`` where it
needs a server), and the assertions read what it prints; the notebook runs
headless on the venv's ``python3`` kernel (nbclient, the ``[test]`` extra).
"""

from __future__ import annotations

import json
import math
import os
import pathlib
import re
import runpy
import shutil
import subprocess
import sys
import sysconfig
import types

import numpy as np
import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"

STEP_RE = re.compile(r"^step (\d+): mean reward (\S+) over (\d+) graded, dropped (\d+) no-verdicts")
GROUP_RE = re.compile(r"^  group seed=(\d+): rewards \[(.*?)\] advantages \[(.*?)\] sum (.+)$")
DONE_RE = re.compile(r"^done: (\d+) steps, (\d+) graded episodes, mean reward (\S+), dropped (\d+) no-verdicts$")


def run_example(name: str, *args: str, cwd: pathlib.Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUDGE_", "OPENAI_"))}  # no judge, no key
    result = subprocess.run([sys.executable, str(EXAMPLES / name), *args], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def parse_grpo(out: str) -> tuple[list[dict], re.Match]:
    """The step lines of grpo_loop.py's output, each with its groups (rewards and advantages, None for 'nv')."""
    steps: list[dict] = []
    done = None
    for line in out.splitlines():
        if m := STEP_RE.match(line):
            steps.append({"n": int(m[1]), "mean": m[2], "graded": int(m[3]), "dropped": int(m[4]), "groups": []})
        elif m := GROUP_RE.match(line):
            def values(text: str) -> list[float | None]:
                return [None if v == "nv" else float(v) for v in text.split()]

            steps[-1]["groups"].append({"seed": int(m[1]), "rewards": values(m[2]), "adv": values(m[3]),
                                        "sum": m[4]})
        elif m := DONE_RE.match(line):
            done = m
    assert done is not None, out
    return steps, done


def check_group(group: dict, size: int) -> None:
    """Advantages: none for no-verdicts; over the graded, sum ~0 and above 0 exactly where the reward beats the mean."""
    rewards, adv = group["rewards"], group["adv"]
    assert len(rewards) == len(adv) == size
    assert [r is None for r in rewards] == [a is None for a in adv]  # a no-verdict gets no advantage
    graded = [(r, a) for r, a in zip(rewards, adv) if r is not None]
    if not graded:
        assert group["sum"] == "n/a (all no-verdict)"
        return
    assert abs(float(group["sum"])) < 1e-3  # computed before rounding
    assert abs(sum(a for _, a in graded)) <= 0.005 * len(graded) + 1e-9  # each shown to 2 decimals
    mean = sum(r for r, _ in graded) / len(graded)
    for r, a in graded:
        assert (a > 0) == (r > mean + 1e-9) and (a < 0) == (r < mean - 1e-9), group


def test_grpo_loop_defaults_print_rewards_and_zero_sum_advantages(tmp_path):
    out = run_example("grpo_loop.py", cwd=tmp_path)
    assert "policy: STAND-IN (no model)" in out.splitlines()[0] and "vec sync" in out.splitlines()[0]
    steps, done = parse_grpo(out)
    assert [s["n"] for s in steps] == [1, 2, 3]
    assert [g["seed"] for s in steps for g in s["groups"]] == list(range(12))  # 4 groups a step, new seeds
    signal = False
    for step in steps:
        assert step["graded"] == 16 and step["dropped"] == 0
        rewards = []
        for group in step["groups"]:
            check_group(group, 4)
            rewards += group["rewards"]
            signal |= any(a != 0 for a in group["adv"])
        assert set(rewards) <= {0.0, 1.0}
        assert float(step["mean"]) == pytest.approx(np.mean(rewards), abs=5e-4)
    assert signal  # the stand-in's answers differ within a group
    assert (done[1], done[2], done[4]) == ("3", "48", "0")


def test_grpo_loop_drops_no_verdicts_from_group_statistics(tmp_path):
    # QEDMath-v0 with no judge configured: every proof is a no-verdict (grader_error), the answers go to math_verify.
    out = run_example("grpo_loop.py", "--env", "QEDMath-v0", "--steps", "1", "--groups", "4", "--group-size", "3",
                      cwd=tmp_path)
    assert "vec threaded" in out.splitlines()[0]
    (step,), done = parse_grpo(out)
    no_verdicts = [r is None for g in step["groups"] for r in g["rewards"]]
    assert step["dropped"] == sum(no_verdicts) > 0 and step["graded"] == 12 - step["dropped"]
    assert int(done[4]) == step["dropped"] and int(done[2]) == step["graded"]
    for group in step["groups"]:
        check_group(group, 3)
    graded = [r for g in step["groups"] for r in g["rewards"] if r is not None]
    assert float(step["mean"]) == pytest.approx(np.mean(graded), abs=5e-4)  # the mean leaves the no-verdicts out


def test_group_advantages_leave_no_verdicts_out():
    # run_path: the example's functions without importing it as a module (and no __pycache__ in examples/)
    module = types.SimpleNamespace(**runpy.run_path(str(EXAMPLES / "grpo_loop.py"), run_name="grpo_loop_example"))
    rewards = np.array([1.0, 0.0, 0.0, 1.0, 0.0])
    no_verdict = np.array([False, False, True, False, True])
    adv = module.group_advantages(rewards, no_verdict)
    assert np.isnan(adv[[2, 4]]).all()
    graded = np.array([1.0, 0.0, 1.0])  # the no-verdicts' 0.0 is not in the statistics
    assert adv[[0, 1, 3]] == pytest.approx((graded - graded.mean()) / (graded.std() + 1e-6))
    assert adv[[0, 1, 3]].sum() == pytest.approx(0.0, abs=1e-9)
    assert np.isnan(module.group_advantages(np.zeros(3), np.ones(3, dtype=bool))).all()  # all dropped
    assert module.group_advantages(np.ones(4), np.zeros(4, dtype=bool)).tolist() == [0.0] * 4  # no signal


def test_eval_local_server_demo_prints_the_summary(tmp_path):
    out = run_example("eval_local_server.py", "--demo", "-n", "10", "--out", "r.jsonl", cwd=tmp_path)
    first = out.splitlines()[0]
    assert first.startswith("demo: TEST SERVER at http://127.0.0.1:") and "not a model" in first
    expected = float(re.search(r"expect accuracy ([0-9.]+)", first)[1])
    correct = round(10 * expected)
    assert expected >= 0.5
    assert "gym-integrity eval: ReasoningGym-v0" in out
    for row in (r"episodes\s*│\s*10 \(10 graded\)", rf"accuracy \(mean reward\)\s*│\s*{expected:.3f}  95% CI",
                r"no-verdict\s*│\s*0 ", r"policy errors\s*│\s*0 ",
                rf"verdicts\s*│\s*correct {correct}, no_answer {10 - correct}\s"):
        assert re.search(row, out), (row, out)
    records = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert sorted(r["seed"] for r in records) == list(range(10))
    assert sum(r["reward"] for r in records) == pytest.approx(correct)
    assert "privileged" not in json.dumps(records)


def test_eval_local_server_needs_a_server_or_demo(tmp_path):
    result = subprocess.run([sys.executable, str(EXAMPLES / "eval_local_server.py")], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "--base-url and --model" in result.stderr


PAYOFF_RE = re.compile(r"^(raw|stacked): strategy payoffs over \d+ items: (.+)$", re.M)
TRAINED_RE = re.compile(r"^(raw|stacked): first reward (\S+), last reward (\S+), exploit share (\S+), policy (.+)$",
                        re.M)


def test_reward_hacking_learns_to_exploit_the_raw_env_and_not_the_stacked_one(tmp_path):
    out = run_example("reward_hacking.py", "--plot", "curves.png", cwd=tmp_path)
    payoffs = {name: {k: float(v) for k, v in (p.split() for p in rest.split(", "))}
               for name, rest in PAYOFF_RE.findall(out)}
    assert payoffs["raw"]["peek"] == 1.0 and payoffs["raw"]["rescore"] > 1.0  # leaked gold, paid twice
    assert payoffs["raw"]["lazy"] > 0.2  # the lenient scorer pays a constant
    # On the stacked env peek and rescore see no gold and answer "0", as lazy does: all three earn only what
    # the constant earns by chance on the draw (an arithmetic item whose value is 0), never more.
    stacked = payoffs["stacked"]
    assert stacked["peek"] == stacked["rescore"] == stacked["lazy"] <= 0.05
    assert payoffs["stacked"]["solve"] > 0.3
    trained = {m[0]: m for m in TRAINED_RE.findall(out)}
    raw, stacked = trained["raw"], trained["stacked"]
    assert float(raw[3]) > 0.9 and float(raw[2]) > 1.0  # it learned to exploit, and the raw env paid for it
    assert float(stacked[3]) < 0.1 and "solve 0.9" in stacked[4]  # the exploits earned nothing: it learned to solve
    assert float(stacked[2]) > float(stacked[1])  # and it learned
    png = (tmp_path / "curves.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000
    assert "plot written to curves.png" in out


def test_quickstart_notebook_is_committed_without_outputs():
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(EXAMPLES / "quickstart.ipynb", as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None


REPO = EXAMPLES.parent
#: Run in the throwaway venv: the notebook, executed headless on that venv's own ``python3`` kernel, saved back.
_EXECUTE = """
import sys, nbclient, nbformat
nb = nbformat.read(sys.argv[1], as_version=4)
nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": sys.argv[2]}}).execute()
nbformat.write(nb, sys.argv[1])
"""


def install_wheel(tmp_path: pathlib.Path) -> pathlib.Path:
    """The package built as a wheel and pip-installed into a fresh venv; that venv's python.

    The wheel is built from a copy of the sources (no build/ or egg-info left in
    the checkout); the venv gets only the wheel, and the test venv's
    site-packages as a plain path for the dependencies, whose editable hook
    for gym_integrity is a .pth file that a plain path never runs.
    """
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, src / name)
    shutil.copytree(REPO / "gym_integrity", src / "gym_integrity", ignore=shutil.ignore_patterns("__pycache__"))
    build = "import sys; from setuptools import build_meta; print(build_meta.build_wheel(sys.argv[1]))"
    built = subprocess.run([sys.executable, "-c", build, str(tmp_path / "dist")], cwd=src, capture_output=True,
                           text=True, timeout=180)
    assert built.returncode == 0, built.stderr
    wheel = tmp_path / "dist" / built.stdout.split()[-1]
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True, timeout=120)
    python = tmp_path / "venv" / "bin" / "python"
    installed = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
                                "--no-index", "-q", str(wheel)], capture_output=True, text=True, timeout=180)
    assert installed.returncode == 0, installed.stderr
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    pathlib.Path(site, "test-venv-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


@pytest.mark.timeout(600)
def test_quickstart_notebook_runs_from_an_installed_wheel(tmp_path):
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    python = install_wheel(tmp_path)
    where = subprocess.run([str(python), "-c", "import gym_integrity; print(gym_integrity.__file__)"], cwd=tmp_path,
                           capture_output=True, text=True, check=True).stdout.strip()
    assert pathlib.Path(where).is_relative_to(tmp_path / "venv"), where  # the wheel's copy, not the checkout
    run = tmp_path / "run"
    run.mkdir()  # the kernel's cwd: no examples/ beside it
    notebook = tmp_path / "quickstart.ipynb"
    shutil.copy(EXAMPLES / "quickstart.ipynb", notebook)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUDGE_", "OPENAI_"))}
    executed = subprocess.run([str(python), "-c", _EXECUTE, str(notebook), str(run)], cwd=run, env=env,
                              capture_output=True, text=True, timeout=540)
    assert executed.returncode == 0, executed.stderr[-3000:]
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(notebook, as_version=4)

    def text(cell) -> str:
        return "".join(o.get("text", "") + str(o.get("data", {}).get("text/plain", "")) for o in cell.outputs)

    outputs = {cell.source.splitlines()[0]: cell for cell in nb.cells if cell.cell_type == "code"}
    everything = "\n".join(text(cell) for cell in outputs.values())
    assert "'privileged' in info: False" in everything
    raw_keys = re.search(r"raw env's info keys: (\[.*\])", everything)[1]
    assert "'privileged'" in raw_keys  # the raw class has it; the stack took it away
    assert "'frozen': True, 'ignored_steps': 1" in everything  # a step after the end changed nothing
    assert "TEST SERVER (scripted test policy, not a model) at http://127.0.0.1:" in everything
    assert "episodes: 12, graded: 12, no-verdicts: 0" in everything
    plotted = [json.loads(x) for x in re.findall(r"rewards plotted: (\[.*\])", everything)]
    assert len(plotted) == 1 and len(plotted[0]) == 12 and set(plotted[0]) <= {-1.0, -0.5, 1.0}
    assert 1.0 in plotted[0] and -0.5 in plotted[0]
    assert any("image/png" in o.get("data", {}) for cell in outputs.values() for o in cell.outputs)
    # The base preset's rewards are shaped: the summary says so instead of calling their mean an accuracy.
    mean = float(re.search(r"mean shaped reward: (-?[0-9.]+)", everything)[1])
    assert math.isclose(mean, sum(plotted[0]) / 12, abs_tol=5e-4) and "accuracy:" not in everything
    hacked = dict(re.findall(r"^(raw|stacked): last reward [0-9.]+, exploit share ([0-9.]+)$", everything, re.M))
    assert float(hacked["raw"]) > 0.8 and float(hacked["stacked"]) < 0.2  # the reward-hacking section

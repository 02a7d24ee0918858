"""The README's Python examples run as written (the proof example against the test judge it names)."""

import ast
import pathlib
import re

import pytest

from gym_integrity.openai_stub.judge_server import JudgeServer

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
# Blocks that are fragments of a user's own code (their env class) are not runnable alone. The GRPOTrainer, serve-client and
# Ray blocks live on docs/trl.md, docs/serve.md (tests/integrations/openenv/test_readme.py runs it against a server) and
# docs/scaling.md (tests/integrations/ray/test_ray_vec.py runs it).
FRAGMENTS = ("MyEnv()",)


GRPO_MARK = "def policy(prompts):"   # the GRPO loop: run on its own, its output checked (below)
README_LINES = README.read_text(encoding="utf-8").splitlines()


def runnable():
    return [pytest.param(block, id=block.splitlines()[0][:50]) for block in BLOCKS
            if not any(marker in block for marker in (*FRAGMENTS, GRPO_MARK))]


def test_the_readme_has_examples_and_only_known_fragments_are_skipped():
    assert len(BLOCKS) >= 8
    assert len(BLOCKS) - len(runnable()) == len(FRAGMENTS) + 1   # + the GRPO loop, run by its own test
    assert len(README_LINES) <= 250


def test_the_readme_opens_with_install_then_a_grpo_loop_that_runs(capsys):
    headings = [line for line in README_LINES if line.startswith("## ")]
    assert headings[:3] == ["## Install into your project", "## A GRPO loop", "## Two commands"]
    first_make = next(i for i, line in enumerate(README_LINES) if "gym.make" in line)
    assert first_make < 50   # the first gym.make comes early
    (block,) = [b for b in BLOCKS if GRPO_MARK in b]
    assert 25 <= len(block.splitlines()) <= 40
    exec(compile(block, "README.md", "exec"), {"__name__": "readme_grpo"})   # as written: no prelude
    steps = re.findall(r"^step (\d): mean reward (\S+) over (\d+) graded, (\d+) no-verdicts dropped, "
                       r"advantages (\[.*\])$", capsys.readouterr().out, re.M)
    assert [s[0] for s in steps] == ["0", "1", "2"]
    signal = False
    for _, mean, graded, dropped, advantages in steps:
        assert (graded, dropped) == ("16", "0") and 0.0 < float(mean) < 1.0   # the stand-in is right, sometimes
        values = ast.literal_eval(advantages)
        for group in range(4):   # a group's advantages sum to 0 (each shown to 2 decimals)
            assert abs(sum(values[group * 4:group * 4 + 4])) <= 0.02
        signal |= any(v != 0 for v in values)
    assert signal


@pytest.mark.parametrize("block", runnable())
def test_readme_example_runs(block):
    # What the README's earlier blocks have set up by the time a reader gets here.
    prelude = "import gymnasium as gym\nimport gym_integrity\nenv = gym.make('ReasoningGym-v0')\n"
    if "127.0.0.1:8001" in block:  # the README starts the test judge on port 8001; here, on a free port
        with JudgeServer(mode="stub") as server:
            exec(compile(prelude + block.replace("http://127.0.0.1:8001/v1", server.url), "README.md", "exec"), {})
            assert len(server.requests) >= 17  # one proof, then a vector env of 16: every grading reached the judge
    else:
        exec(compile(prelude + block, "README.md", "exec"), {})

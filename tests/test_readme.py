"""The README's Python examples run as written (the proof example against the test judge it names)."""

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


def runnable():
    return [pytest.param(block, id=block.splitlines()[0][:50]) for block in BLOCKS
            if not any(marker in block for marker in FRAGMENTS)]


def test_the_readme_has_examples_and_only_known_fragments_are_skipped():
    assert len(BLOCKS) >= 8
    assert len(BLOCKS) - len(runnable()) == len(FRAGMENTS)


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

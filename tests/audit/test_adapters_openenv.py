"""An OpenEnv MCP env server this package did not build (tests/support/openenv_sums.py: openenv's MCPEnvironment,
FastMCP tools, create_app, under uvicorn here), audited over the wire through openenv's own MCPToolClient."""

from __future__ import annotations

import json
import os

import pytest

from gym_integrity.audit import Status, check_integrity
from gym_integrity.audit.adapters_targets import adapt, build
from gym_integrity.cli import main

if os.environ.get("GYM_INTEGRITY_REQUIRE_EXTRAS") == "1":
    import openenv  # noqa: F401  (the [serve] CI step must fail, not skip, on a broken install)
else:
    pytest.importorskip("openenv")

from served_app import Served  # noqa: E402

import openenv_sums  # noqa: E402

pytestmark = [pytest.mark.serve, pytest.mark.timeout(300)]
PROBES = ["gold_answer_scored", "rescore_after_end", "step_budget", "covering_sprays"]


@pytest.fixture(scope="module")
def server():
    served = Served(openenv_sums.app).start()
    yield served
    served.stop()


def test_the_adapter_plays_tools_reads_the_score_and_the_revealed_gold(server):
    env = adapt(f"openenv:{server.url}")
    try:
        assert [tool["function"]["name"] for tool in env.tools] == ["get_question", "submit_answer"]
        obs, _ = env.reset(seed=1)
        assert obs.startswith("Add ")
        call = '<tool_call>{"name": "submit_answer", "arguments": {"answer": "-1"}}</tool_call>'
        _, reward, terminated, _, info = env.step(call)
        assert (reward, terminated) == (0.0, True) and info["correct_answer"].isdigit()
    finally:
        env.close()


def test_raw_server_fails_and_the_stack_closes_all_but_the_leniency(server):
    raw = check_integrity(lambda: adapt(f"openenv:{server.url}"), probes=PROBES)
    assert raw.status_of("gold_answer_scored") is Status.PASSED
    assert "revealed by the env at the end" in raw.result("gold_answer_scored").evidence[0]
    failed = {r.probe for r in raw.failures}
    assert failed == {"rescore_after_end", "step_budget", "covering_sprays"}, raw.results
    stacked = check_integrity(lambda: build(f"openenv:{server.url}", stacked=True), probes=PROBES)
    assert {r.probe for r in stacked.failures} == {"covering_sprays"}, stacked.results


def test_openenv_from_the_cli(server, tmp_path, capsys):
    path = tmp_path / "audit.json"
    code = main(["audit", f"openenv:{server.url}", "--no-progress", "--json", str(path),
                 "--probe", "gold_answer_scored", "--probe", "rescore_after_end"])
    out = capsys.readouterr().out
    [report] = json.loads(path.read_text())["reports"]
    assert code == 1, out
    assert {r["probe"]: r["status"] for r in report["results"]} == {"gold_answer_scored": "passed",
                                                                   "rescore_after_end": "failed"}

"""A client's reset options are bounded by what the server was started with, and a reset has a time budget."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

if os.environ.get("GYM_INTEGRITY_REQUIRE_EXTRAS") == "1":
    import openenv  # noqa: F401  (the [serve] extra is installed: a missing openenv-core must fail, not skip)
else:
    pytest.importorskip("openenv")

from openenv.core import GenericEnvClient  # noqa: E402
from websockets.sync.client import connect as ws_connect  # noqa: E402

import gym_integrity  # noqa: E402
from gym_integrity.integrations.openenv.client_resets import ClientResets, check_bounded  # noqa: E402
from served_app import serving  # noqa: E402  (tests/support)

pytestmark = pytest.mark.serve

RG = "ReasoningGym-v0"
MAZE_260 = {"dataset_name": "maze", "dataset_config": {"min_grid_size": 260, "max_grid_size": 260}, "seed": 0,
            "size": 10}


def _resets(**served) -> ClientResets:
    env = gym_integrity.make(RG, **served)
    try:
        resets = ClientResets.for_env(env.unwrapped, ["leg_counting", "maze", "spiral_matrix"])
    finally:
        env.close()
    assert resets is not None
    return resets


def _reset(resets: ClientResets, name: str, config: dict) -> dict:
    return resets.make_kwargs({"dataset_name": name, "dataset_config": config, "size": 5}, 0)


def test_every_numeric_option_is_bounded_by_the_served_value_else_the_default():
    resets = _resets(dataset="maze", dataset_config={"max_grid_size": 12, "max_dist": 12})
    assert _reset(resets, "maze", {"max_grid_size": 12, "min_grid_size": 3})["dataset_config"] == \
        {"max_grid_size": 12, "min_grid_size": 3}  # less, or as much: fine
    with pytest.raises(ValueError, match=r"max_grid_size \(maze\) = 13 is above this server's bound 12"):
        _reset(resets, "maze", {"max_grid_size": 13})
    with pytest.raises(ValueError, match=r"min_grid_size \(maze\) = 260 is above this server's bound 12"):
        _reset(resets, "maze", MAZE_260["dataset_config"])  # a range's low end: its high end's bound
    with pytest.raises(ValueError, match=r"min_dist \(maze\) = 13 is above this server's bound 12"):
        _reset(resets, "maze", {"min_dist": 13})
    assert _reset(resets, "maze", {"min_dist": 12, "max_dist": 12})  # up to the served max_dist
    with pytest.raises(ValueError, match=r"max_grid_size \(maze\) = 11 is above this server's bound 10"):
        _reset(_resets(dataset="leg_counting"), "maze", {"max_grid_size": 11})  # the dataset's default (10)
    with pytest.raises(ValueError, match=r"max_n \(spiral_matrix\) = 1500 is above this server's bound 10"):
        _reset(resets, "spiral_matrix", {"max_n": 1500})
    with pytest.raises(ValueError, match=r"max_animals \(leg_counting\) = 10.5 is above"):
        _reset(resets, "leg_counting", {"max_animals": 10.5})
    composite = {"dataset_name": "composite", "size": 5,
                 "dataset_specs": [{"name": "maze", "weight": 1, "config": {"max_dist": 99}}]}
    with pytest.raises(ValueError, match=r"dataset_specs\[maze\].config.max_dist \(maze\) = 99 is above"):
        resets.make_kwargs(composite, 0)


def test_bounds_inside_lists_and_without_a_numeric_bound():
    check_bounded("x", [1, 2, [3]], [1, 3])
    with pytest.raises(ValueError, match=r"x\[2\] = 4 is above this server's bound 3"):
        check_bounded("x", [1, 2, 4], [1, 3])
    with pytest.raises(ValueError, match="no numeric bound"):
        check_bounded("x", 5, None)
    check_bounded("x", True, 0)  # a switch is no number
    check_bounded("x", "text", 0)


def test_the_issue_maze_reset_is_refused_over_the_wire_and_the_session_keeps_its_env():
    with serving(RG, {"dataset": "leg_counting"}, max_sessions=2, client_datasets=["leg_counting", "maze"]) as served, \
            ws_connect(served.ws_url, open_timeout=30) as ws:
        def send(kind: str, data: dict) -> dict:
            ws.send(json.dumps({"type": kind, "data": data}))
            return json.loads(ws.recv(timeout=60))

        assert send("reset", {"seed": 1})["type"] == "observation"
        refused = send("reset", MAZE_260)
        assert refused["type"] == "error" and refused["data"]["code"] == "EXECUTION_ERROR"
        assert "min_grid_size (maze) = 260 is above this server's bound 10" in refused["data"]["message"]
        step = send("step", {"text": "<answer>-1</answer>"})
        assert step["data"]["observation"]["verdict"] == "incorrect"  # the session's env, as before
        assert send("reset", {**MAZE_260, "dataset_config": {"max_grid_size": 8}})["type"] == "observation"


def test_a_reset_past_the_budget_fails_that_sessions_reset_only():
    """A server started with an expensive config: a reset past the budget is stopped with an error naming it; the
    session then resets a cheap dataset, and another session never noticed."""
    slow = {"dataset": "spiral_matrix", "dataset_config": {"min_n": 1500, "max_n": 1500}}
    with serving(RG, slow, max_sessions=2, client_datasets=["leg_counting", "spiral_matrix"],
                 reset_budget_s=0.5) as served:
        async def main() -> None:
            async with GenericEnvClient(base_url=served.url, message_timeout_s=120) as hog, \
                    GenericEnvClient(base_url=served.url, message_timeout_s=120) as other:
                await other.reset(dataset_name="leg_counting", dataset_config={}, seed=0, size=100)
                with pytest.raises(Exception, match=r"budget of 0.5 s per reset"):
                    await hog.reset(seed=3)
                with pytest.raises(Exception, match=r"reset\(\) before step\(\)"):
                    await hog.step({"text": "<answer>1</answer>"})
                first = await hog.reset(dataset_name="leg_counting", dataset_config={}, seed=0, size=100)
                assert first.observation["problem_id"] == "leg_counting/0"
                for _ in range(5):
                    await other.reset()
                    result = await other.step({"text": "<answer>-1</answer>"})
                    assert result.observation["verdict"] == "incorrect"

        asyncio.run(main())


def test_the_serve_command_passes_the_reset_budget(monkeypatch):
    import gym_integrity.integrations.openenv as served
    from gym_integrity import cli

    calls = []
    monkeypatch.setattr(served, "serve", lambda *args, **kwargs: calls.append(kwargs))
    assert cli.main(["serve", RG]) == 0 and cli.main(["serve", RG, "--reset-budget", "2.5"]) == 0
    assert cli.main(["serve", RG, "--reset-budget", "0"]) == 0
    assert [c["reset_budget_s"] for c in calls] == [10.0, 2.5, None]

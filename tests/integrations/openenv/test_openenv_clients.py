"""What OpenEnv's own env clients send, frame by frame, and what they read back; and session lifetimes.

The frames are the ones OpenEnv's ``reasoning_gym_env`` client (``EnvClient``:
``{"type": "reset", "data": {dataset_name, dataset_config, seed, size}}``,
``{"type": "step", "data": {"answer": ...}}``) and its ``qed_math_env``
client (``MCPToolClient``: HTTP ``openenv/session/create``, a ``/ws`` attached
by ``?session_id=``, ``tools/call`` over HTTP) put on the wire, written here
from reading that code. The gold never appears in any frame.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import pytest

if os.environ.get("GYM_INTEGRITY_REQUIRE_EXTRAS") == "1":
    import openenv  # noqa: F401  (the [serve] extra is installed: a missing openenv must fail, not skip)
else:
    openenv = pytest.importorskip("openenv")

import httpx  # noqa: E402  (comes with the [serve] extra)
from websockets.sync.client import connect as ws_connect  # noqa: E402

import gym_integrity  # noqa: E402
from served_app import serving, wait_until  # noqa: E402  (tests/support)

pytestmark = pytest.mark.serve

RG = "ReasoningGym-v0"
RG_KWARGS = {"dataset": "leg_counting"}
LEGS = {"dataset_name": "leg_counting", "dataset_config": {"min_animals": 5, "max_animals": 8}, "seed": 42,
        "size": 10}
QED = "QEDMath-v0"
QED_ANSWER_ID, QED_GOLD = "qed-ans-001", "1170"


def send(ws: Any, kind: str, data: Any = None) -> dict[str, Any]:
    ws.send(json.dumps({"type": kind, "data": {} if data is None else data}))
    return json.loads(ws.recv(timeout=60))


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    return [value]


def legs_gold(index: int) -> str:
    """The answer of item ``index`` of the LEGS dataset, from a local env built the same way."""
    env = gym_integrity.make(RG, dataset="leg_counting", dataset_config=LEGS["dataset_config"], size=10, seed=42)
    try:
        env.reset(options={"index": index})
        return env.unwrapped.gold_answers()[0]
    finally:
        env.close()


def test_reasoning_gym_clients_reset_arguments_answer_and_fields():
    golds = [legs_gold(0), legs_gold(1)]
    with serving(RG, RG_KWARGS, max_sessions=2, max_size=100) as served, \
            ws_connect(served.ws_url, open_timeout=30) as ws:
        frames = []
        first = send(ws, "reset", LEGS)
        frames.append(first)
        obs = first["data"]["observation"]
        assert obs["question"] and obs["question"] == obs["text"]
        assert obs["problem_id"] == "leg_counting/0"  # a new dataset starts at its first item, as OpenEnv's server
        assert "correct_answer" not in obs and obs["score"] is None
        step = send(ws, "step", {"answer": golds[0]})
        frames.append(step)
        obs = step["data"]["observation"]
        assert (step["data"]["reward"], step["data"]["done"], obs["score"], obs["is_correct"]) == (1.0, True, 1.0, True)
        assert obs["question"] is None and "correct_answer" not in obs
        assert obs["metadata"] == {"verdict": "correct", "no_verdict": False}
        frozen = send(ws, "step", {"answer": golds[0]})  # after the end: the final step again, paying nothing
        frames.append(frozen)
        assert frozen["data"]["reward"] == 0.0 and frozen["data"]["observation"]["integrity"]["frozen"] is True
        assert frozen["data"]["observation"]["is_correct"] is None
        second = send(ws, "reset", {})  # a bare reset takes the dataset's next item
        frames.append(second)
        assert second["data"]["observation"]["problem_id"] == "leg_counting/1"
        wrong = send(ws, "step", {"answer": "not a number"})
        frames.append(wrong)
        assert wrong["data"]["observation"]["is_correct"] is False and wrong["data"]["reward"] == 0.0
        # Refused resets: clear error frames naming the limit; the session goes on with its env.
        for data, match in (({**LEGS, "dataset_name": "sudoku"}, "not served here"),
                            ({**LEGS, "size": 101}, "reset size"),
                            ({"dataset_name": "leg_counting", "seed": 1}, "seed and size must be provided"),
                            ({**LEGS, "dataset_config": {"no_such_option": 1}}, "no_such_option"),
                            ({**LEGS, "dataset_config": {"max_animals": 11}}, "max_animals (leg_counting) = 11 is "
                                                                              "above this server's bound 10"),
                            ({**LEGS, "dataset_config": {"x": "y" * 5000}}, "at most 4096"),
                            ({**LEGS, "seed": -1}, "reset seed")):
            refused = send(ws, "reset", data)
            assert refused["type"] == "error" and refused["data"]["code"] == "EXECUTION_ERROR", refused
            assert match in refused["data"]["message"]
        again = send(ws, "reset", {})
        assert again["data"]["observation"]["problem_id"] == "leg_counting/2"
        # Our own protocol on the same server.
        own = send(ws, "step", {"text": "<answer>-1</answer>"})
        assert own["data"]["reward"] == 0.0 and own["data"]["observation"]["verdict"] == "incorrect"
        text = json.dumps(frames)
        assert "correct_answer" not in text and "privileged" not in text
        for frame in frames:  # no field carries a gold answer (the prompt text may hold any number)
            fields = {k: v for k, v in frame["data"]["observation"].items() if k not in ("text", "question")}
            assert not set(map(str, _leaves(fields))) & set(golds) - {"0", "1"}, fields


def test_dataset_arguments_are_refused_by_an_env_without_a_dataset():
    with serving(QED, {"problem_types": ["answer"]}, max_sessions=1) as served, \
            ws_connect(served.ws_url, open_timeout=30) as ws:
        refused = send(ws, "reset", LEGS)
        assert refused["data"]["code"] == "EXECUTION_ERROR" and "takes no dataset arguments" in refused["data"]["message"]


def test_qed_clients_tools_over_http_see_problem_type_attempts_and_is_correct():
    with serving(QED, {"problem_types": ["answer", "multi_step"]}, max_sessions=2) as served:
        mcp = f"{served.url}/mcp"

        def rpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
            return httpx.post(mcp, json={"jsonrpc": "2.0", "method": method, "params": params, "id": 1},
                              timeout=60).json()

        session_id = rpc("openenv/session/create", {})["result"]["session_id"]
        with ws_connect(f"{served.ws_url}?session_id={session_id}", open_timeout=30) as ws:
            send(ws, "reset", {"problem_id": QED_ANSWER_ID})
            problem = rpc("tools/call", {"name": "get_problem", "arguments": {}, "session_id": session_id})["result"]
            problem = problem.get("data", problem)
            assert (problem["problem_type"], problem["max_attempts"]) == ("answer", 1)
            assert not problem.get("reference_solution")
            result = rpc("tools/call", {"name": "submit_proof", "arguments": {"proof": f"\\boxed{{{QED_GOLD}}}"},
                                        "session_id": session_id})["result"]
            result = result.get("data", result)
            assert (result["score"], result["is_correct"], result["attempts_remaining"], result["done"]) == \
                (7, True, 0, True)
            after = rpc("tools/call", {"name": "submit_proof", "arguments": {"proof": f"\\boxed{{{QED_GOLD}}}"},
                                       "session_id": session_id})["result"]
            after = after.get("data", after)
            assert after["is_correct"] is False and after["reward"] == 0.0 and after["metadata"]["frozen"] is True
        rpc("openenv/session/close", {"session_id": session_id})


def test_a_refused_session_gets_capacity_reached_as_openenv_sends_it():
    with serving(RG, RG_KWARGS, max_sessions=1) as served, ws_connect(served.ws_url, open_timeout=30) as held:
        send(held, "reset", {"seed": 1})
        with ws_connect(served.ws_url, open_timeout=30) as refused:
            frame = json.loads(refused.recv(timeout=30))
        assert frame["type"] == "error"
        assert (frame["data"]["code"], frame["data"]["active_sessions"], frame["data"]["max_sessions"]) == \
            ("CAPACITY_REACHED", 1, 1)
        assert send(held, "step", {"text": "<answer>1</answer>"})["type"] == "observation"


def test_socket_sessions_are_never_reaped_by_default_and_http_sessions_expire_while_pinged():
    with serving(RG, RG_KWARGS, max_sessions=2, detached_session_ttl_s=1.0) as served:
        server = served.app.state.env_server
        assert server.socket_timeout_s is None
        with ws_connect(served.ws_url, open_timeout=30) as ws:
            send(ws, "reset", {"seed": 3})
            session_id = httpx.post(f"{served.url}/mcp", json={"jsonrpc": "2.0", "method": "openenv/session/create",
                                                               "params": {}, "id": 1}, timeout=30).json()
            assert "session_id" in session_id["result"]
            assert served.active_sessions == 2
            deadline = time.monotonic() + 20
            while served.active_sessions == 2:  # ping the HTTP session as a client holding a slot would
                httpx.post(f"{served.url}/mcp", json={"jsonrpc": "2.0", "method": "tools/list",
                                                      "params": {"session_id": session_id["result"]["session_id"]},
                                                      "id": 2}, timeout=30)
                assert time.monotonic() < deadline, "the pinged HTTP session was never closed"
                time.sleep(0.1)
            assert served.active_sessions == 1
            # The socket's session idled past the HTTP session's lifetime too, and is still there.
            assert (time.time() - server.get_session_info(next(iter(server._socket_owned))).last_activity_at) > 1.0
            assert send(ws, "step", {"text": "<answer>1</answer>"})["type"] == "observation"
        wait_until(lambda: served.active_sessions == 0, 10, "the socket's session to end with it")


def test_reaping_a_socket_session_is_opt_in():
    with serving(RG, RG_KWARGS, max_sessions=1, session_timeout_s=0.5) as served, \
            ws_connect(served.ws_url, open_timeout=30) as ws:
        send(ws, "reset", {"seed": 3})
        wait_until(lambda: served.active_sessions == 0, 10, "the opted-in reaper")
        closed = send(ws, "step", {"text": "<answer>1</answer>"})
        assert closed["data"]["code"] == "EXECUTION_ERROR" and "session is closed" in closed["data"]["message"]


FINQA = "FinQA-v0"
FQ_ID, FQ_COMPANY, FQ_GOLD = "fq002", "northwind_foods", "38.2%"  # Northwind's 2024 gross margin


def test_finqa_clients_call_tool_steps_carry_done_reward_and_its_metadata():
    with serving(FINQA, {}, max_sessions=2) as served:
        mcp = f"{served.url}/mcp"
        tools = httpx.post(mcp, json={"jsonrpc": "2.0", "method": "tools/list", "params": {}, "id": 1},
                           timeout=60).json()["result"]["tools"]
        assert {t["name"] for t in tools} == {"get_descriptions", "get_table_info", "sql_query", "submit_answer"}
        with ws_connect(served.ws_url, open_timeout=30) as ws:
            first = send(ws, "reset", {"options": {"question_id": FQ_ID}})["data"]
            meta = first["observation"]["metadata"]
            assert meta["company"] == FQ_COMPANY and meta["question"] and meta["tool_result"] == ""
            call = {"type": "call_tool", "tool_name": "get_descriptions", "arguments": {"company_name": FQ_COMPANY}}
            looked = send(ws, "step", call)["data"]
            assert looked["done"] is False and looked["observation"]["tool_name"] == "get_descriptions"
            assert "nwf_" in looked["observation"]["metadata"]["tool_result"]
            answered = send(ws, "step", {"type": "call_tool", "tool_name": "submit_answer",
                                         "arguments": {"answer": FQ_GOLD}})["data"]
            assert (answered["done"], answered["reward"]) == (True, 1.0)
            assert answered["observation"]["metadata"]["no_verdict"] is False
            again = send(ws, "step", {"type": "call_tool", "tool_name": "submit_answer",
                                      "arguments": {"answer": FQ_GOLD}})["data"]
            assert (again["done"], again["reward"]) == (True, 0.0)  # frozen after the end
            text = json.dumps([first, looked, answered, again])
            assert "ground_truth" not in text and "privileged" not in text


def test_the_serve_command_passes_the_reset_limits_and_no_idle_timeout_by_default(monkeypatch):
    import gym_integrity.integrations.openenv as served
    from gym_integrity import cli

    calls = []
    monkeypatch.setattr(served, "serve", lambda *args, **kwargs: calls.append((args, kwargs)))
    assert cli.main(["serve", RG, "--client-datasets", "leg_counting,word_sorting", "--max-size", "50"]) == 0
    (args, kwargs), = calls
    assert args == (RG, None)
    assert (kwargs["client_datasets"], kwargs["max_size"], kwargs["session_timeout_s"]) == \
        (["leg_counting", "word_sorting"], 50, None)


def test_a_size_inside_a_dataset_config_is_bounded_like_the_reset_size():
    """A composite member's config size reached reasoning-gym past --max-size (acre built 50,000 items: 25 s, 770 MB)."""
    from gym_integrity.integrations.openenv.client_resets import ClientResets

    resets = ClientResets(datasets=("acre", "leg_counting"), max_size=10)
    spec = {"dataset_name": "composite", "size": 5,
            "dataset_specs": [{"name": "acre", "weight": 1, "config": {"size": 50000}}]}
    with pytest.raises(ValueError, match="size"):
        resets.make_kwargs(spec, 0)
    with pytest.raises(ValueError, match="size"):
        resets.make_kwargs({"dataset_name": "leg_counting", "size": 5, "dataset_config": {"size": 11}}, 0)
    assert resets.make_kwargs({"dataset_name": "leg_counting", "size": 5, "dataset_config": {"size": 10}}, 0)["size"] == 5

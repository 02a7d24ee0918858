"""What sessions of one served app share, and what they must not: the event loop's time, and each other's counters.

Real servers (``build_app`` under uvicorn in a thread) and openenv-core's own
``GenericEnvClient``. One session's slow reset must not hold another's calls;
one session's hostile answers must not show in another's observations; the
machine-wide counters are served on ``GET /stats`` instead.
"""

from __future__ import annotations

import asyncio
import json
import os
import urllib.request
from typing import Any

import pytest

if os.environ.get("GYM_INTEGRITY_REQUIRE_EXTRAS") == "1":
    import openenv  # noqa: F401  (the [serve] extra is installed: a missing openenv-core must fail, not skip)
else:
    pytest.importorskip("openenv")

from openenv.core import GenericEnvClient  # noqa: E402

from served_app import serving  # noqa: E402  (tests/support)

pytestmark = pytest.mark.serve

RG = "ReasoningGym-v0"
#: A dataset whose item generation takes seconds (a 1500x1500 matrix to spiral through): a slow reset.
SLOW_DATASET = {"dataset_name": "spiral_matrix", "dataset_config": {"min_n": 1500, "max_n": 1500}, "seed": 0,
                "size": 10}
CHEAP_DATASET = {"dataset_name": "leg_counting", "dataset_config": {}, "seed": 0, "size": 100}
#: Round trips the other session must finish while the slow resets are still running.
PROMPT_TRIPS = 20
#: Answers that cost a grader its run budget, or that a static bound refuses (each in the env's answer format).
HOSTILE = ["9^{9^{9^{9}}}", "9**9**9**9", "(x+1)^{100000}", "(" * 2000 + "1" + ")" * 2000, "99999999!",
           "2**2**2**2**2**2"]


def test_a_session_resetting_a_slow_dataset_does_not_hold_another_sessions_calls():
    """While one session's resets generate huge items, another finishes many round trips (reset + answer).

    Ordering, not wall time: the other session's trips must complete before the slow resets do. Were item
    generation on the server's event loop, no other session's frame would be answered until each reset ended.
    """
    # The server is started with the slow config (a client may ask for no more than that); the other session
    # picks the cheap dataset.
    with serving(RG, {"dataset": "spiral_matrix", "dataset_config": SLOW_DATASET["dataset_config"]}, max_sessions=2,
                 client_datasets=["leg_counting", "spiral_matrix"], reset_budget_s=None) as served:
        async def main() -> tuple[int, bool]:
            async with GenericEnvClient(base_url=served.url, message_timeout_s=600) as slow, \
                    GenericEnvClient(base_url=served.url, message_timeout_s=600) as other:
                await slow.reset(**SLOW_DATASET)
                await other.reset(**CHEAP_DATASET)

                async def slow_resets() -> None:
                    for _ in range(2):
                        await slow.reset()  # the dataset's next item: seconds of generation each

                pending = asyncio.create_task(slow_resets())
                await asyncio.sleep(0.05)  # its first reset is on the server before the other session's calls
                trips = 0
                while trips < PROMPT_TRIPS and not pending.done():
                    await other.reset()  # the cheap dataset's next item
                    result = await other.step({"text": "<answer>-1</answer>"})
                    assert result.done and result.observation["verdict"] == "incorrect"
                    trips += 1
                still_running = not pending.done()
                await pending
                return trips, still_running

        trips, still_running = asyncio.run(main())
    assert trips == PROMPT_TRIPS and still_running, (
        f"the other session finished {trips} of {PROMPT_TRIPS} round trips before the slow resets ended")


def _get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=60) as response:
        return json.loads(response.read())


@pytest.mark.parametrize("env_id, env_kwargs, answer_format", [
    (RG, {"dataset": "countdown"}, "<answer>{}</answer>"),  # its scorer runs in the sandbox's worker pool
    ("QEDMath-v0", {"problem_types": ["answer"]}, "\\boxed{{{}}}"),
])
def test_one_sessions_hostile_answers_do_not_show_in_another_sessions_observations(env_id, env_kwargs,
                                                                                   answer_format):
    """Session B1 plays two rounds of the same episodes alone; then session B2 plays them too, with session A's
    hostile answers between its rounds. B2's second round must read exactly as B1's (their own timings and the
    verifier's cache, which is the process's by design, aside): nothing in it counts A's answers."""
    seeds = [11, 12]
    answer = answer_format.format("1 + 2")
    with serving(env_id, env_kwargs, max_sessions=3) as served:
        async def play(env: Any) -> list[dict[str, Any]]:
            out = []
            for seed in seeds:
                await env.reset(seed=seed)
                out.append((await env.step({"text": answer})).observation)
            return out

        async def flood(env: Any) -> list[str]:
            verdicts = []
            for k, text in enumerate(HOSTILE):
                await env.reset(seed=k)
                verdicts.append((await env.step({"text": answer_format.format(text)})).observation["verdict"])
            return verdicts

        async def main() -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
            async with GenericEnvClient(base_url=served.url, message_timeout_s=600) as b1:
                await play(b1)
                alone = await play(b1)
            async with GenericEnvClient(base_url=served.url, message_timeout_s=600) as a, \
                    GenericEnvClient(base_url=served.url, message_timeout_s=600) as b2:
                await play(b2)
                verdicts = await flood(a)
                beside = await play(b2)
            return alone, beside, verdicts

        alone, beside, verdicts = asyncio.run(main())
        stats = _get_json(served.url + "/stats")

    assert None not in verdicts and "correct" not in verdicts, verdicts  # every hostile answer was graded

    def own(observation: dict[str, Any]) -> dict[str, Any]:
        timing = ("_s", "_s_max")  # seconds: latency_s, run_s_max, queued_s_max, ...
        metrics = {k: v for k, v in observation["metrics"].items() if not k.endswith(timing) and "cache" not in k}
        return {**observation, "metrics": metrics}

    for b1, b2 in zip(alone, beside):
        assert own(b2) == own(b1), "session B2's observation counts session A's answers"
    # The machine-wide figures are on /stats: the grading pools the sessions used, with their counters.
    assert stats["active_sessions"] == 0 and stats["max_sessions"] == 3
    assert any(p["stats"].get("pool/requests", 0) >= 1 for p in stats["grading_pools"]), stats


def test_stats_is_served_beside_health_and_counts_sessions():
    with serving(RG, {"dataset": "leg_counting"}, max_sessions=3) as served:
        async def main() -> dict[str, Any]:
            async with GenericEnvClient(base_url=served.url) as env:
                await env.reset(seed=1)
                return await asyncio.to_thread(_get_json, served.url + "/stats")

        during = asyncio.run(main())
        assert _get_json(served.url + "/health") == {"status": "healthy"}
    assert during["active_sessions"] == 1 and during["max_sessions"] == 3
    assert isinstance(during["grading_pools"], list)
    for pool in during["grading_pools"]:
        assert set(pool) == {"handler", "scope", "stats"} and all(isinstance(v, float) for v in pool["stats"].values())

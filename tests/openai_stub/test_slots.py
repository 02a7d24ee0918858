"""The test judge's batch slots (``max_concurrent``): requests past them wait for a free one, none is refused."""

from __future__ import annotations

import concurrent.futures
import json
import urllib.request

import pytest

from gym_integrity.openai_stub.judge_server import JudgeServer


def ask(url: str) -> int:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "grade me"}]}).encode()
    request = urllib.request.Request(url + "/chat/completions", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return answer.status


def test_requests_past_the_slots_wait_and_are_all_answered():
    with JudgeServer("score:6", latency_s=0.3, max_concurrent=2) as server:
        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            statuses = list(pool.map(lambda _: ask(server.url), range(6)))
        assert statuses == [200] * 6
        assert server.max_in_flight == 2 and len(server.requests) == 6


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_slots_are_a_positive_int(bad):
    with pytest.raises(ValueError, match="max_concurrent"):
        JudgeServer(max_concurrent=bad)

"""The judge client at a training step's width (modest here: 128 at once): every request in flight together,
none hangs or waits for a connection, and the next step reuses the connections and the request threads instead
of opening new ones.

128 is past the ``openai`` package's own pool (100 connections kept alive),
so without the client's pool sized to ``max_concurrency`` a second step
reconnects 28 of its requests. The full width (1,024) is a benchmark:
benchmarks/bench_judge_width.py.
"""

from __future__ import annotations

import threading
import time

import pytest

from gym_integrity.openai_stub.judge_server import JudgeServer
from gym_integrity.services.judge import JudgeConfig
from gym_integrity.services.judge.client import JudgeClient

WIDTH = 128
LATENCY_S = 0.2


def client_ports(server_port: int) -> set[int]:
    """Local ports of this machine's established TCP connections to ``server_port`` (the client ends)."""
    ports = set()
    with open("/proc/net/tcp") as table:
        next(table)
        for line in table:
            local, remote, state = line.split()[1:4]
            if state == "01" and int(remote.rpartition(":")[2], 16) == server_port:
                ports.add(int(local.rpartition(":")[2], 16))
    return ports


def request_threads() -> set[int]:
    return {t.ident for t in threading.enumerate() if t.name == "gym-integrity-judge" and t.ident is not None}


def one_step(judge: JudgeClient) -> list:
    """``WIDTH`` gradings started together, as a vector env's step starts them; their results."""
    results: list = [None] * WIDTH
    start = threading.Barrier(WIDTH)

    def grade(i: int) -> None:
        start.wait()
        results[i] = judge.grade(problem="Show that n^3 - n is divisible by 6.", proof=f"proof {i}: (n-1)n(n+1)",
                                 reference_solution="three consecutive integers", grading_guidelines="")

    threads = [threading.Thread(target=grade, args=(i,)) for i in range(WIDTH)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not any(thread.is_alive() for thread in threads), "a grading hung"
    return results


@pytest.mark.timeout(180)
def test_a_step_of_128_proofs_is_in_flight_at_once_and_the_next_reuses_its_connections():
    # The server holds every answer until all WIDTH are in flight (gather): on a loaded machine sending 128 requests
    # took longer than a fixed latency, and the first answers came back before the last were sent (126 of 128).
    with JudgeServer("score:5", latency_s=LATENCY_S, gather=WIDTH, hang_s=30.0) as server:
        config = JudgeConfig.from_value({"base_url": server.url, "model": "test-judge", "timeout_s": 60.0,
                                         "max_retries": 0, "max_concurrency": WIDTH})
        others = request_threads()  # other clients' of this process
        judge = JudgeClient(config)
        try:
            for step in range(2):
                server.reset()
                results = one_step(judge)
                assert [r.no_verdict for r in results] == [False] * WIDTH, {r.grade.cause for r in results}
                assert {r.points for r in results} == {5}
                assert sum(r.metrics["judge/runtime/requests"] for r in results) == WIDTH  # no retry, no failure
                assert server.max_in_flight == WIDTH, f"step {step}: only {server.max_in_flight} at once"
                ports = client_ports(server.port)
                senders = request_threads() - others
                if step == 0:
                    first, first_senders = ports, senders
                    assert len(first) == WIDTH, f"{len(first)} connections kept alive after the first step"
                    assert WIDTH <= len(senders) <= WIDTH + 2, f"{len(senders)} request threads for {WIDTH} requests"
            assert ports == first, f"the second step opened {len(ports - first)} new connections"
            assert senders == first_senders, "the second step started request threads of its own"
        finally:
            judge.close()
        deadline = time.monotonic() + 10
        while request_threads() & senders and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not request_threads() & senders, "close() left request threads running"

"""``gym-integrity eval`` throughput against the policy's latency bound, side by side with ``vf-eval`` if installed.

The test server (gym_integrity.openai_stub.judge_server, a separate process, as a
real model server is) plays the policy with a fixed latency per request; the
eval runs ReasoningGym-v0 (leg_counting) episodes with ``--concurrency C``.
No client can beat ``C / latency`` episodes per second on single-turn
episodes; the target is >= 0.8 of that bound at C = 64 and 200 ms
on 2 cores. ``vf-eval`` (``pip install verifiers``) runs against the same
server when it is importable; it is skipped with that line otherwise. Nothing
is installed at run time.

    python benchmarks/bench_eval.py [--episodes 1280] [--concurrency 64] [--latency 0.2] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

from gym_integrity.eval import EvalConfig, evaluate

VF_INSTALL = "pip install verifiers"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(latency: float) -> tuple[subprocess.Popen, str]:
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "gym_integrity.openai_stub.judge_server", "--port", str(port),
                               "--mode", "wrong", "--latency", str(latency)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url + "/models", timeout=1).read()
            return server, url
        except OSError:
            time.sleep(0.1)
    server.kill()
    raise RuntimeError("the test server did not start")


def run_ours(url: str, episodes: int, concurrency: int) -> tuple[float, float]:
    """(episodes/s, CPU ms per episode) of one eval run."""
    config = EvalConfig("ReasoningGym-v0", url, "policy", num_problems=episodes, concurrency=concurrency,
                        env_kwargs={"dataset": "leg_counting"})
    before = resource.getrusage(resource.RUSAGE_SELF)
    summary, _ = asyncio.run(evaluate(config))
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    assert summary.episodes == episodes and summary.policy_errors == 0, summary
    return episodes / summary.wall_time_s, 1000 * cpu / episodes


def run_vf_eval(url: str, episodes: int, concurrency: int) -> float | str:
    if shutil.which("vf-eval") is None:
        return f"vf-eval not installed: {VF_INSTALL}"
    start = time.perf_counter()
    result = subprocess.run(["vf-eval", "reasoning-gym", "-b", url, "-m", "policy", "-n", str(episodes), "-r", "1",
                             "-c", str(concurrency), "-k", "EMPTY"], capture_output=True, text=True,
                            env={**os.environ, "OPENAI_API_KEY": "EMPTY"})
    if result.returncode != 0:
        return f"vf-eval failed ({result.returncode}): {result.stderr.strip().splitlines()[-1:]}"
    return episodes / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=1280)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    bound = args.concurrency / args.latency
    server, url = start_server(args.latency)
    try:
        run_ours(url, args.concurrency * 2, args.concurrency)  # warm-up: imports, the server's threads
        rates, cpus = [], []
        for _ in range(args.rounds):
            rate, cpu = run_ours(url, args.episodes, args.concurrency)
            rates.append(rate)
            cpus.append(cpu)
        vf = run_vf_eval(url, args.episodes, args.concurrency)
    finally:
        server.kill()
        server.wait()
    rate = statistics.median(rates)
    print(f"gym-integrity eval, ReasoningGym-v0 leg_counting, {args.episodes} episodes x {args.rounds} rounds, "
          f"concurrency {args.concurrency}, policy latency {args.latency * 1000:.0f} ms (test server, own process)")
    print(f"  {'contender':38s} {'episodes/s':>11s} {'of the bound':>13s}")
    print(f"  {'concurrency / latency (the bound)':38s} {bound:11.1f} {1.0:13.2f}")
    print(f"  {'gym-integrity eval (median)':38s} {rate:11.1f} {rate / bound:13.2f}   "
          f"(rounds: {', '.join(f'{r:.0f}' for r in rates)}; client CPU {statistics.median(cpus):.2f} ms/episode)")
    if isinstance(vf, str):
        print(f"  skipped: {vf}")
    else:
        print(f"  {'vf-eval':38s} {vf:11.1f} {vf / bound:13.2f}")
    print(f"  target: >= 0.80 of the bound: {'met' if rate / bound >= 0.8 else 'NOT met'} ({rate / bound:.2f})")


if __name__ == "__main__":
    main()

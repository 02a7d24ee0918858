"""Proof gradings per second of 16 QEDMath-v0 proof envs against a judge with 200 ms latency: threaded vector vs sequential.

Starts the test judge (gym_integrity.openai_stub.judge_server) on 127.0.0.1 with a
fixed latency per request and grades one proof per env per round through the
full stack and the real openai client:

* sequential: the same N envs (``gym.make``) stepped one after another;
* threaded:   ``gym_integrity.vector.make_threaded_vec`` (one vector env, sub-envs step concurrently);
* async:      ``gym.make_vec(..., vectorization_mode="async")`` (one process per env), unless ``--no-async``.

Rounds alternate between the modes so drift on a shared machine hits all
alike; the median rate of each is printed with the ratio to sequential.
Targets: threaded >= 0.8 * N / latency gradings/s (64/s for 16 envs at 0.2 s) and >= 10x sequential.

    python benchmarks/bench_judge.py [--envs 16] [--latency 0.2] [--rounds 3] [--no-async] [--in-process]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import sys
import time
from typing import Iterator

import gymnasium as gym
import numpy as np

import gym_integrity  # registers the ids
from gym_integrity.openai_stub.judge_server import JudgeServer
from gym_integrity.vector import make_threaded_vec

PROOF = "</think>n^3 - n = (n - 1) n (n + 1) is a product of three consecutive integers, so 2 and 3 divide it."


def sequential_rate(envs: list[gym.Env], seed: int) -> float:
    for i, env in enumerate(envs):
        env.reset(seed=seed)
    start = time.perf_counter()
    for env in envs:
        _, _, terminated, _, info = env.step(PROOF)
        assert terminated and not info["no_verdict"], info.get("cause")
    return len(envs) / (time.perf_counter() - start)


def vector_rate(envs: gym.vector.VectorEnv, seed: int) -> float:
    envs.reset(seed=seed)
    actions = np.array([PROOF] * envs.num_envs, dtype=object)
    start = time.perf_counter()
    _, _, terminated, _, infos = envs.step(actions)
    elapsed = time.perf_counter() - start
    assert terminated.all() and not infos["no_verdict"].any(), infos.get("cause")
    return envs.num_envs / elapsed


@contextlib.contextmanager
def judge_server(latency: float, in_process: bool, *options: str) -> Iterator[str]:
    """The test judge's URL: in its own process by default (a real judge does not share our GIL); ``options`` are
    more of its command-line options."""
    if in_process:
        with JudgeServer("score:5", latency_s=latency) as server:
            yield server.url
        return
    proc = subprocess.Popen(
        [sys.executable, "-m", "gym_integrity.openai_stub.judge_server", "--port", "0", "--mode", "score:5",
         "--latency", str(latency), *options],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        if "serving at " not in line:
            raise RuntimeError(f"the test judge did not start: {line!r}")
        yield line.split("serving at ", 1)[1].split()[0]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=16)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--in-process", action="store_true", help="run the judge in this process (shares the GIL)")
    parser.add_argument("--no-async", action="store_true", help="skip the async (one process per env) column")
    args = parser.parse_args()

    with judge_server(args.latency, args.in_process) as url:
        judge = {"base_url": url, "model": "test-judge", "timeout_s": 30.0}
        kwargs = {"judge": judge, "problem_types": ["proof"]}
        sequential = [gym.make("QEDMath-v0", **kwargs) for _ in range(args.envs)]
        threaded = make_threaded_vec("QEDMath-v0", args.envs, **kwargs)
        modes: dict[str, object] = {"sequential": sequential, "threaded": threaded}
        if not args.no_async:
            modes["async"] = gym.make_vec("QEDMath-v0", num_envs=args.envs, vectorization_mode="async",
                                          vector_kwargs=gym_integrity.ASYNC_VECTOR_KWARGS,
                                          **kwargs)
        # Warm-up: imports, connection pools, the judge client of every process.
        sequential_rate(sequential[:2], 0)
        for name, envs in modes.items():
            if name != "sequential":
                vector_rate(envs, 0)

        rates: dict[str, list[float]] = {name: [] for name in modes}
        for r in range(args.rounds):
            for name, envs in modes.items():
                rate = sequential_rate(envs, r) if name == "sequential" else vector_rate(envs, r)
                rates[name].append(rate)
        for name, envs in modes.items():
            if name == "sequential":
                for env in envs:
                    env.close()
            else:
                envs.close()

    target = 0.8 * args.envs / args.latency
    base = statistics.median(rates["sequential"])
    where = "in this process" if args.in_process else "in its own process"
    print(f"QEDMath-v0 proof gradings/s: {args.envs} envs, judge latency {args.latency * 1000:.0f} ms "
          f"(test judge {where}), median of {args.rounds} rounds")
    print(f"{'mode':<12}{'gradings/s':>12}{'x sequential':>14}   rounds")
    for name, values in rates.items():
        median = statistics.median(values)
        print(f"{name:<12}{median:>12.1f}{median / base:>14.1f}   {', '.join(f'{v:.1f}' for v in values)}")
    threaded_rate = statistics.median(rates["threaded"])
    print(f"target: threaded >= {target:.0f}/s -> {'met' if threaded_rate >= target else 'MISSED'}; "
          f">= 10x sequential -> {'met' if threaded_rate >= 10 * base else 'MISSED'}")


if __name__ == "__main__":
    main()

"""Episodes per second of ReasoningGym-v0 (leg_counting) through gym.make with the full stack vs the raw env.

Runs the two side by side in alternating rounds (so drift on a shared machine
hits both alike) and prints the median rate of each and the stack's overhead.
Target: the stack costs at most 10% over the raw env.

    python benchmarks/bench_reasoning_gym.py [--episodes 2000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import statistics
import time

import gymnasium as gym

import gym_integrity  # noqa: F401  (registers the ids)
from gym_integrity.envs.reasoning_gym import ReasoningGymEnv


def episodes_per_second(env: gym.Env, episodes: int, seed0: int) -> float:
    start = time.perf_counter()
    for i in range(episodes):
        env.reset(seed=seed0 + i)
        env.step("<answer>42</answer>")
    return episodes / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()

    stacked = gym.make("ReasoningGym-v0", dataset="leg_counting")
    raw = ReasoningGymEnv(dataset="leg_counting")
    episodes_per_second(stacked, 200, 0), episodes_per_second(raw, 200, 0)  # warm-up: imports, caches

    stacked_rates, raw_rates = [], []
    for r in range(args.rounds):
        seed0 = 10_000 * (r + 1)
        raw_rates.append(episodes_per_second(raw, args.episodes, seed0))
        stacked_rates.append(episodes_per_second(stacked, args.episodes, seed0))

    raw_median, stacked_median = statistics.median(raw_rates), statistics.median(stacked_rates)
    overhead = raw_median / stacked_median - 1.0
    print(f"ReasoningGym-v0 leg_counting, {args.episodes} episodes x {args.rounds} rounds (reset + step)")
    print(f"  raw env                 : {raw_median:10.0f} episodes/s  (median; min {min(raw_rates):.0f}, max {max(raw_rates):.0f})")
    print(f"  gym.make + full stack   : {stacked_median:10.0f} episodes/s  (median; min {min(stacked_rates):.0f}, max {max(stacked_rates):.0f})")
    print(f"  stacked / raw throughput: {stacked_median / raw_median:.3f}   stack overhead: {overhead * 100:+.1f}%  (target <= +10%)")


if __name__ == "__main__":
    main()

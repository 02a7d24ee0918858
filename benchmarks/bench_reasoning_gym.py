"""Episodes per second of ReasoningGym-v0 (leg_counting) through gym.make with the full stack vs the raw env.

Runs the two side by side in many short alternating rounds, so drift on a shared
machine hits both alike, and reports the median of the per-round ratios (each
round pairs a raw run with the stacked run right after it) besides each median
rate. Target: the stack costs at most 10% over the raw env.

    python benchmarks/bench_reasoning_gym.py [--episodes 500] [--rounds 31]
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
    parser.add_argument("--episodes", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=31)
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
    overheads = sorted(r / s - 1.0 for r, s in zip(raw_rates, stacked_rates))
    overhead = statistics.median(overheads)
    quartiles = statistics.quantiles(overheads, n=4)
    print(f"ReasoningGym-v0 leg_counting, {args.episodes} episodes x {args.rounds} paired rounds (reset + step)")
    print(f"  raw env                 : {raw_median:10.0f} episodes/s  ({1e6 / raw_median:6.1f} us/episode, median)")
    print(f"  gym.make + full stack   : {stacked_median:10.0f} episodes/s  ({1e6 / stacked_median:6.1f} us/episode, median)")
    print(f"  stack cost per episode  : {1e6 / stacked_median - 1e6 / raw_median:6.1f} us")
    print(f"  stack overhead          : {overhead * 100:+.1f}% (median of per-round ratios; quartiles "
          f"{quartiles[0] * 100:+.1f}% .. {quartiles[2] * 100:+.1f}%)  target <= +10%")


if __name__ == "__main__":
    main()

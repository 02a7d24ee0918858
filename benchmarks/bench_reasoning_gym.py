"""Episodes per second of ReasoningGym-v0 (leg_counting) through gym.make with the full stack vs the raw env.

Runs them side by side in many short alternating rounds, so drift on a shared
machine hits all alike, and reports the median of the per-round ratios (each
round pairs a raw run with the runs right after it) besides each median rate.
A third env gives the floor: as many pass-through wrappers as the stack has,
each returning a copy of ``info`` (what any wrapper that may not mutate the
inner env's dicts must do at least). Target: the stack costs at most 10% over
the raw env.

    python benchmarks/bench_reasoning_gym.py [--episodes 500] [--rounds 31]
"""

from __future__ import annotations

import argparse
import statistics
import time

import gymnasium as gym
from gymnasium.wrappers import OrderEnforcing, PassiveEnvChecker

import gym_integrity  # noqa: F401  (registers the ids)
from gym_integrity.envs.reasoning_gym import ReasoningGymEnv


class CopyInfo(gym.Wrapper):
    """A wrapper that does nothing but return a fresh top-level copy of info."""

    def reset(self, *, seed=None, options=None):
        obs, info = self.env.reset(seed=seed, options=options)
        return obs, dict(info)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated, truncated, dict(info)


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

    raw = ReasoningGymEnv(dataset="leg_counting")
    envs = {
        "gym.make + full stack": gym.make("ReasoningGym-v0", dataset="leg_counting"),
        "floor: 5 copy-info layers": CopyInfo(CopyInfo(CopyInfo(OrderEnforcing(PassiveEnvChecker(raw))))),
    }
    for env in (raw, *envs.values()):
        episodes_per_second(env, 200, 0)  # warm-up: imports, caches, the passive checker's first calls

    raw_rates: list[float] = []
    rates: dict[str, list[float]] = {name: [] for name in envs}
    for r in range(args.rounds):
        seed0 = 10_000 * (r + 1)
        raw_rates.append(episodes_per_second(raw, args.episodes, seed0))
        for name, env in envs.items():
            rates[name].append(episodes_per_second(env, args.episodes, seed0))

    raw_median = statistics.median(raw_rates)
    print(f"ReasoningGym-v0 leg_counting, {args.episodes} episodes x {args.rounds} paired rounds (reset + step)")
    print(f"  {'raw env':27s}: {raw_median:8.0f} episodes/s  ({1e6 / raw_median:6.1f} us/episode, median)")
    for name, values in rates.items():
        median = statistics.median(values)
        overheads = [r / s - 1.0 for r, s in zip(raw_rates, values)]
        q1, q2, q3 = statistics.quantiles(overheads, n=4)
        print(f"  {name:27s}: {median:8.0f} episodes/s  ({1e6 / median:6.1f} us/episode; "
              f"+{1e6 / median - 1e6 / raw_median:4.1f} us)  overhead {q2 * 100:+.1f}% "
              f"(quartiles {q1 * 100:+.1f}% .. {q3 * 100:+.1f}%)")
    print("  target: the stack's overhead <= +10%")


if __name__ == "__main__":
    main()

"""ReasoningGym-v0's first reset with the balanced draw on (the default): the plan shipped vs built at runtime.

The first seeded reset of a process needs its generator's draw plan
(``draw_plans.py``): the shipped one (a few probe items generated again) or one
built from 300 items (and up to 900 more for rare labels). Each figure is
measured in a fresh process (plans are kept per process): the CPU time of that
process's ``gym.make`` (mostly importing reasoning-gym) and of its first
``reset(seed=0)`` (CPU, not wall: on a shared machine wall time swings with other
jobs' load; the wall time of both is shown beside them).

Also: a composite's first reset (its plan is built from its mixture: its
members are seeded apart from their default configurations, so no shipped plan
applies), and the make-and-reset of every dataset with defaults in one process
(``tests/envs/reasoning_gym/test_defaults.py``'s sweep).

    nice python benchmarks/bench_first_reset.py [--datasets countdown,knight_swap,rotten_oranges] [--no-sweep]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = """
import json, sys, time
import gymnasium as gym
import gym_integrity
from gym_integrity.envs.reasoning_gym import draw_plans
dataset, shipped = json.loads(sys.argv[1]), sys.argv[2] == "shipped"
if not shipped:
    draw_plans.shipped_plan = lambda key, sample: None  # this process builds its plan, as with no file
wall, cpu = time.perf_counter(), time.process_time()
env = gym.make("ReasoningGym-v0", dataset=dataset)
made = time.process_time()
env.reset(seed=0)
print("RESULT", json.dumps({"make_cpu_s": made - cpu, "cpu_s": time.process_time() - made, "wall_s": time.perf_counter() - wall}))
"""

SWEEP = """
import json, time
import gymnasium as gym
import gym_integrity
from gym_integrity.envs.reasoning_gym.config import available_datasets
from gym_integrity.envs.reasoning_gym.draw import ABOVE_CHANCE
wall, cpu, slowest, envs = time.perf_counter(), time.process_time(), [], []
for name in available_datasets():
    start = time.process_time()
    env = gym.make("ReasoningGym-v0", dataset=name, allow_above_chance=name in ABOVE_CHANCE)
    env.reset(seed=0)
    envs.append(env)
    slowest.append((round(time.process_time() - start, 2), name))
for env in envs:
    env.close()
print("RESULT", json.dumps({"datasets": len(envs), "cpu_s": time.process_time() - cpu, "wall_s": time.perf_counter() - wall,
                  "slowest": sorted(slowest, reverse=True)[:5]}))
"""

COMPOSITES = ({"leg_counting": 2, "basic_arithmetic": 1}, {"gcd": 1, "rotten_oranges": 1, "syllogism": 1})


def run(code: str, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.rsplit("RESULT ", 1)[1])  # a generator may print (some print dots)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default="countdown,knight_swap,rotten_oranges")
    parser.add_argument("--no-sweep", action="store_true", help="skip the make-and-reset of every dataset")
    args = parser.parse_args()
    print("| first reset of | plan | gym.make, CPU s | reset(seed=0), CPU s | both, wall s |")
    print("|---|---|---|---|---|")
    for name in args.datasets.split(","):
        for mode in ("shipped", "built"):
            got = run(CHILD, json.dumps(name), mode)
            print(
                f"| {name} | {mode} | {got['make_cpu_s']:.2f} | {got['cpu_s']:.2f} | {got['wall_s']:.2f} |", flush=True
            )
    for composite in COMPOSITES:
        got = run(CHILD, json.dumps(composite), "built")
        print(
            f"| {composite} | built (mixture) | {got['make_cpu_s']:.2f} | {got['cpu_s']:.2f} | {got['wall_s']:.2f} |",
            flush=True,
        )
    if not args.no_sweep:
        got = run(SWEEP)
        print(
            f"\nmake + reset(seed=0) of every dataset ({got['datasets']}), shipped plans, one process: "
            f"{got['cpu_s']:.1f} CPU s, {got['wall_s']:.1f} s wall; slowest (CPU s): {got['slowest']}"
        )


if __name__ == "__main__":
    main()

"""ReasoningGym-v0 (leg_counting) episodes/s side by side with its peers, and what each layer of the stack costs.

One episode is ``reset(seed=i)`` and one answer, the way a GRPO trainer runs
a single-turn task. Every contender runs in the same process, in many short
rounds whose order rotates, so drift on a shared machine hits all alike; the
figures are medians over rounds, and the ratios are medians of per-round
ratios (each round's contenders ran seconds apart). Time is the CPU time of
the benchmark's thread (``--clock cpu``, the default): on a shared machine
the time a process waits descheduled is not its code's cost, and wall time
(``--clock wall``) swings with the load of other jobs.

Contenders:

* ``gym.make("ReasoningGym-v0")`` with the full stack (the 1.00 of the table);
* ``ReasoningGymEnv`` raw (the task logic alone);
* GEM's ``rg:leg_counting``, seeded (``reset(seed=i)``) and unseeded, if
  ``gem`` is importable: ``pip install --no-deps gem-llm msgspec nltk``;
* OpenEnv's ``ReasoningGymEnvironment`` in process (``reset()`` then
  ``step(ReasoningGymAction(answer=...))``; it takes no per-episode seed), if
  ``reasoning_gym_env`` is importable: ``pip install openenv`` and the env
  package from OpenEnv's ``envs/reasoning_gym_env`` (not on PyPI).

Nothing is installed at run time: a peer that is not importable is skipped
with the line that installs it.

Targets: the stacked env >= 1.0x GEM seeded and >= 1.3x OpenEnv in
process; the stack costs <= 25 µs per episode over the raw env (an episode
waits seconds on an LLM: the stack stays plain rather than fast). The
per-layer table builds the stack one layer at a time over its own raw env and
reports each layer's median marginal cost in µs per episode.

    python benchmarks/bench_reasoning_gym.py [--episodes 400] [--rounds 25]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
from collections.abc import Callable

import gymnasium as gym

import gym_integrity  # noqa: F401  (registers the ids)
from gym_integrity.envs.reasoning_gym import ReasoningGymEnv
from gym_integrity.wrappers import HideInfoKeys, MaxStepsTruncation, TerminalFreeze

DATASET = "leg_counting"
OURS_ANSWER = "<answer>42</answer>"
GEM_INSTALL = "pip install --no-deps gem-llm msgspec nltk"
OPENENV_INSTALL = ("pip install openenv-core, then OpenEnv's envs/reasoning_gym_env as the package "
                   "reasoning_gym_env (it is not on PyPI)")

#: A run of ``n`` episodes starting at seed ``seed0``; returns nothing (the caller times it).
Runner = Callable[[int, int], None]


def gym_runner(env: gym.Env, answer: str = OURS_ANSWER) -> Runner:
    def run(seed0: int, n: int) -> None:
        reset, step = env.reset, env.step
        for i in range(seed0, seed0 + n):
            reset(seed=i)
            step(answer)
    return run


def gem_runners() -> dict[str, Runner] | str:
    try:
        import gem
    except ImportError as exc:
        return f"GEM not importable ({exc}): {GEM_INSTALL}"
    seeded, unseeded = gem.make(f"rg:{DATASET}"), gem.make(f"rg:{DATASET}")

    def run_seeded(seed0: int, n: int) -> None:
        reset, step = seeded.reset, seeded.step
        for i in range(seed0, seed0 + n):
            reset(seed=i)
            step("\\boxed{42}")

    def run_unseeded(seed0: int, n: int) -> None:
        reset, step = unseeded.reset, unseeded.step
        for _ in range(n):
            reset()
            step("\\boxed{42}")

    return {"GEM rg:leg_counting reset(seed=i)": run_seeded, "GEM rg:leg_counting unseeded": run_unseeded}


def openenv_runners() -> dict[str, Runner] | str:
    try:
        from reasoning_gym_env.models import ReasoningGymAction
        from reasoning_gym_env.server.reasoning_gym_environment import ReasoningGymEnvironment
    except ImportError as exc:
        return f"OpenEnv's reasoning_gym_env not importable ({exc}): {OPENENV_INSTALL}"
    env = ReasoningGymEnvironment()
    try:
        env.reset(dataset_name=DATASET, dataset_config={}, seed=0, size=100_000)
    except TypeError:
        return "OpenEnv's reasoning_gym_env is the MCP-tool version (reset takes task_name); not measured"

    def run(seed0: int, n: int) -> None:
        reset, step = env.reset, env.step
        for _ in range(n):
            reset()
            step(ReasoningGymAction(answer="42"))

    return {"OpenEnv ReasoningGymEnvironment in process": run}


#: The stack built one layer at a time, innermost first: what gym.make builds for the registered id (no
#: PassiveEnvChecker or OrderEnforcing: the ids are registered without them, see registration.py).
LAYERS: tuple[tuple[str, Callable[[gym.Env], gym.Env]], ...] = (
    ("MaxStepsTruncation", MaxStepsTruncation),
    ("HideInfoKeys", HideInfoKeys),
    ("TerminalFreeze", TerminalFreeze),
)


def layer_runners() -> dict[str, Runner]:
    runners = {"raw": gym_runner(ReasoningGymEnv(dataset=DATASET))}
    for k in range(1, len(LAYERS) + 1):
        env: gym.Env = ReasoningGymEnv(dataset=DATASET)
        for _, wrap in LAYERS[:k]:
            env = wrap(env)
        runners[f"+ {LAYERS[k - 1][0]}"] = gym_runner(env)
    return runners


def measure(runners: dict[str, Runner], episodes: int, rounds: int,
            clock: Callable[[], float] = time.thread_time) -> dict[str, list[float]]:
    """Seconds per episode of every runner in every round (order rotated per round)."""
    for run in runners.values():
        run(0, 200)  # warm-up: imports, caches, the first calls of each contender
    names = list(runners)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        seed0 = 1_000 * (r + 1)
        for name in names[r % len(names):] + names[: r % len(names)]:
            start = clock()
            runners[name](seed0, episodes)
            times[name].append((clock() - start) / episodes)
    return times


def quartiles(values: list[float]) -> tuple[float, float, float]:
    q1, q2, q3 = statistics.quantiles(values, n=4)
    return q1, q2, q3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=400, help="episodes per contender per round")
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                        help="the thread's CPU time (default) or wall time")
    parser.add_argument("--skip-layers", action="store_true", help="only the side-by-side table")
    args = parser.parse_args()

    base = "gym.make(ReasoningGym-v0), full stack"
    runners: dict[str, Runner] = {
        base: gym_runner(gym.make("ReasoningGym-v0", dataset=DATASET)),
        "ReasoningGymEnv raw": gym_runner(ReasoningGymEnv(dataset=DATASET)),
    }
    notes = []
    for peers in (gem_runners(), openenv_runners()):
        if isinstance(peers, str):
            notes.append(peers)
        else:
            runners.update(peers)

    clock = time.thread_time if args.clock == "cpu" else time.perf_counter
    times = measure(runners, args.episodes, args.rounds, clock)
    print(f"ReasoningGym-v0 {DATASET}: reset(seed) + one answer, {args.episodes} episodes x {args.rounds} "
          f"rotated rounds, one process, {args.clock} time")
    print(f"  {'contender':45s} {'episodes/s':>10s} {'us/episode':>10s}  {'ratio to ours (quartiles)':s}")
    for name, values in times.items():
        median = statistics.median(values)
        ratios = [ours / other for ours, other in zip(times[base], values)]  # other's rate / ours
        q1, q2, q3 = quartiles(ratios)
        print(f"  {name:45s} {1 / median:10,.0f} {median * 1e6:10.1f}  {q2:5.2f} ({q1:.2f} .. {q3:.2f})")
    for note in notes:
        print(f"  skipped: {note}")

    def ours_over(name: str) -> str:
        if name not in times:
            return "n/a (not installed)"
        q1, q2, q3 = quartiles([other / ours for ours, other in zip(times[base], times[name])])
        return f"{q2:.2f}x (quartiles {q1:.2f} .. {q3:.2f})"

    raw = "ReasoningGymEnv raw"
    q1, q2, q3 = quartiles([(ours - r) * 1e6 for ours, r in zip(times[base], times[raw])])
    print("  targets:")
    print(f"    ours / GEM seeded      >= 1.0x: {ours_over('GEM rg:leg_counting reset(seed=i)')}")
    print(f"    ours / OpenEnv         >= 1.3x: {ours_over('OpenEnv ReasoningGymEnvironment in process')}")
    print(f"    stack's cost over raw  <= 25 us/episode: {q2:+.1f} us (quartiles {q1:+.1f} .. {q3:+.1f})")

    if args.skip_layers:
        return
    layer_times = measure(layer_runners(), args.episodes, args.rounds, clock)
    names = list(layer_times)
    print(f"\nPer-layer cost: each stack one layer deeper than the last, over its own raw env "
          f"({args.episodes} episodes x {args.rounds} rounds)")
    print(f"  {'stack':45s} {'us/episode':>10s} {'marginal us (quartiles)':s}")
    print(f"  {'raw':45s} {statistics.median(layer_times['raw']) * 1e6:10.1f}")
    for below, name in itertools.pairwise(names):
        q1, q2, q3 = quartiles([(a - b) * 1e6 for a, b in zip(layer_times[name], layer_times[below])])
        print(f"  {name:45s} {statistics.median(layer_times[name]) * 1e6:10.1f} {q2:+6.2f} ({q1:+.2f} .. {q3:+.2f})")
    total = [(a - b) * 1e6 for a, b in zip(layer_times[names[-1]], layer_times["raw"])]
    print(f"  the stack in all: {statistics.median(total):+.2f} us per episode")


if __name__ == "__main__":
    main()

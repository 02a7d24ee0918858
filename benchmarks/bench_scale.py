"""Benchmark of scaling out: grading workers through the machine pool and through Ray actors, and make_ray_vec's cost.

Prints three tables, all from one run:

1. graded episodes/s of QEDMath-v0 answer problems (reset + one boxed answer
   that math_verify must expand and simplify, 20-40 ms of its work, every
   answer a different string so no cache answers it) with 1 and with 2
   grading workers, through the machine-wide pool (a threaded vector env of
   ``--envs`` sub-envs) and through Ray actors (``make_ray_vec`` with the same
   sub-envs, one per actor and ``--envs-per-actor`` per actor; the actors reach
   the node's machine pool), and the ratio 2 workers / 1 worker (target >= 1.6x
   on 2 cores);
2. the per-step overhead of ``make_ray_vec`` against ``make_threaded_vec`` on
   the same work (ReasoningGym-v0 leg_counting, reset + one answer a batch);
3. memory per env: the RSS of the processes each vector env adds, divided by
   its number of sub-envs (the driver's own RSS for the threaded env's share).

Each measurement of table 1 has the machine to itself: its vector env is built,
warmed, measured and closed, and the machine-pool rows run before Ray starts.
Idle Ray actors are not free (16 of them with Ray's daemons took 0.3 of a
core here), and on 2 cores that CPU comes out of the graders'. Rounds alternate
between 1 and 2 workers and the medians are printed; the load average is
printed too (these 2-core machines are shared: ratios within one run are what
count).

Needs the ``[ray]`` extra for the Ray rows (``pip install -e ".[ray]"``);
without Ray they are skipped with that hint.

Run: ``python benchmarks/bench_scale.py [--envs 8] [--envs-per-actor 4] [--episodes 48] [--rounds 3] [--quick]``
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np

import gym_integrity  # noqa: F401  (registers the ids)
from gym_integrity.vector import make_threaded_vec

QED = "QEDMath-v0"
PROBLEM = "qed-ans-001"  # gold 1170
RG, RG_KW = "ReasoningGym-v0", {"dataset": "leg_counting"}
_fresh = itertools.count(1)


def _answers(n: int) -> np.ndarray:
    # 1170 as (2^3+7)(3^2+4)(5+1) * sqrt(36 k^2) / (6k): the same value, a different string each time (no verifier
    # cache hit), and 20-40 ms of math_verify (a product to expand, a root to simplify), the cost issue 14 names
    # for a real rollout's answer (10-50 ms).
    return np.array([f"\\boxed{{(2^3+7)(3^2+4)(5+1) \\cdot \\frac{{\\sqrt{{{36 * k * k}}}}}{{{6 * k}}}}}"
                     for k in (next(_fresh) for _ in range(n))], dtype=object)


def _qed_kwargs(workers: int) -> dict[str, Any]:
    # A config per worker count: each is its own machine pool (the socket name hashes the config).
    return {"problem_types": ["answer"], "verifier": {"num_workers": workers, "spare_workers": 0}}


def _graded_per_s(envs: Any, episodes: int) -> float:
    n = envs.num_envs
    rounds = max(1, episodes // n)
    # Warm: the pool's workers started and imported math_verify before the clock.
    envs.reset(seed=0, options={"problem_id": PROBLEM})
    envs.step(_answers(n))
    start = time.perf_counter()
    graded = 0
    for _ in range(rounds):
        envs.reset(seed=0, options={"problem_id": PROBLEM})
        _, _, _, _, infos = envs.step(_answers(n))
        graded += int(np.sum(infos["verdict"] == "correct"))
    took = time.perf_counter() - start
    if graded != rounds * n:
        print(f"  warning: {rounds * n - graded} of {rounds * n} answers not graded correct", file=sys.stderr)
    return rounds * n / took


def _rss_mib(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        return None
    if not ray.is_initialized():
        ray.init(num_cpus=os.cpu_count() or 2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    return ray


def _table(title: str, header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    print(f"\n{title}")
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)))


def _measure(make: Callable[[], Any], episodes: int) -> float:
    envs = make()
    try:
        return _graded_per_s(envs, episodes)
    finally:
        envs.close()


def _scaling(makers: dict[str, Callable[[int], Any]], episodes: int, rounds: int) -> list[list[str]]:
    """Each path's graded/s with 1 and 2 workers (medians over ``rounds``, the order alternating), as table rows."""
    rows = []
    for name, make in makers.items():
        results: dict[int, list[float]] = {1: [], 2: []}
        for r in range(rounds):
            for workers in ((1, 2) if r % 2 == 0 else (2, 1)):
                results[workers].append(_measure(lambda: make(workers), episodes))
        one, two = statistics.median(results[1]), statistics.median(results[2])
        rows.append([name, f"{one:.1f}", f"{two:.1f}", f"{two / one:.2f}x"])
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=8)
    parser.add_argument("--envs-per-actor", type=int, default=None,
                        help="sub-envs per Ray actor in the grouped Ray row (default: envs / cores)")
    parser.add_argument("--episodes", type=int, default=48, help="graded episodes per measurement")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="a smoke run: few episodes, one round")
    args = parser.parse_args(argv)
    if args.quick:
        args.envs, args.episodes, args.rounds = 2, 4, 1
    cores = os.cpu_count() or 2
    per_actor = args.envs_per_actor or max(2, args.envs // cores)
    print(f"bench_scale: {cores} cores, load average {os.getloadavg()[0]:.1f}; {args.envs} sub-envs, "
          f"{args.episodes} graded episodes per measurement, {args.rounds} rounds")

    # 1. The machine pool first, with no Ray on the machine; then Ray's rows.
    rows = _scaling({"machine pool (threaded vector env)":
                     lambda k: make_threaded_vec(QED, args.envs, **_qed_kwargs(k))}, args.episodes, args.rounds)
    ray = _ray()
    if ray is None:
        print("Ray is not installed: the Ray rows are skipped (pip install -e \".[ray]\")")
    else:
        from gym_integrity.ray import make_ray_vec

        rows += _scaling({
            "Ray actors (make_ray_vec), 1 env per actor":
                lambda k: make_ray_vec(QED, args.envs, **_qed_kwargs(k)),
            f"Ray actors (make_ray_vec), {per_actor} envs per actor":
                lambda k: make_ray_vec(QED, args.envs, envs_per_actor=per_actor, **_qed_kwargs(k)),
        }, args.episodes, args.rounds)
    _table("1. graded QEDMath answers/s by grading workers (target 2/1 >= 1.6x on 2 cores)",
           ["path", "1 worker", "2 workers", "2 / 1"], rows)

    # 2. make_ray_vec's own cost per batch step, on work that grades in microseconds.
    step_makers: dict[str, Callable[[], Any]] = {"make_threaded_vec": lambda: make_threaded_vec(RG, args.envs, **RG_KW)}
    if ray is not None:
        step_makers["make_ray_vec, 1 env per actor"] = lambda: make_ray_vec(RG, args.envs, **RG_KW)
        step_makers[f"make_ray_vec, {per_actor} envs per actor"] = \
            lambda: make_ray_vec(RG, args.envs, envs_per_actor=per_actor, **RG_KW)
    step_ms: dict[str, list[float]] = {name: [] for name in step_makers}
    memory: dict[str, float] = {}
    batches = 5 if args.quick else 40
    for name, make in step_makers.items():
        env = make()
        try:
            for _ in range(args.rounds):
                env.reset(seed=0)
                start = time.perf_counter()
                for i in range(batches):
                    env.reset(seed=i)
                    env.step(np.array(["<answer>0</answer>"] * args.envs, dtype=object))
                step_ms[name].append((time.perf_counter() - start) / batches * 1000)
            pids = sorted({e.actor_pid for e in env.envs}) if hasattr(env.envs[0], "actor_pid") else [os.getpid()]
            memory[name] = _rss_mib(pids) / args.envs
        finally:
            env.close()
    base = statistics.median(step_ms["make_threaded_vec"])
    rows = [[name, f"{statistics.median(v):.2f}", f"{statistics.median(v) - base:+.2f}",
             f"{statistics.median(v) / base:.2f}x"] for name, v in step_ms.items()]
    _table(f"2. one batch (reset + step of {args.envs} ReasoningGym-v0 sub-envs), ms",
           ["vector env", "ms / batch", "vs threaded", "ratio"], rows)
    _table("3. memory per env (MiB): the threaded env's share of the driver's RSS; the actors' RSS per sub-env",
           ["vector env", "MiB / env"], [[name, f"{mib:.0f}"] for name, mib in memory.items()])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

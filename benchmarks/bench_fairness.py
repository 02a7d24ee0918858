"""Benchmark of fairness on the machine grading pool: one process's correct answers while another floods the pool.

Two processes share the machine's QEDMath-v0 grading pool (the default scope):

- the **flooder** (a child process) steps a threaded vector env of 8 QEDMath-v0
  envs as fast as it can, every answer hostile;
- the **neighbour** (this process) answers one problem at a time with its gold
  and times each ``step``.

Floods:

- ``tower``: ``\\boxed{9^{9^{9^{9}}}}``, refused unrun by the static check
  (``gym_integrity.grading.cost``): it should cost the neighbour nothing;
- ``slow``: ``\\boxed{\\sin(x)^{16}\\cos(x)^{16}+...}`` in three variables, each
  power at the static check's bound, which math_verify runs for about 0.3 s
  of CPU (a multiple of that in wall time on a loaded machine): eight at a
  time hold every worker of the pool. (Until issue 26's hostile search this
  was ``\\sin(x)^{999}\\cos(x)^{999}``, which ran to the 5 s budget; the check
  now refuses it.)

The neighbour's latency is printed for each flood (and with no flood, the
baseline), with p50 and max over ``--answers`` answers. Targets (issue 26):
during a tower flood within 1 s; during a slow flood, one run budget at most
(a fair pool serves the neighbour at the next free worker; first come, first
served makes it wait behind the whole queue).

Run: ``python benchmarks/bench_fairness.py [--answers 10] [--floods none tower slow]``
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import time

import gymnasium as gym

FLOODS = {
    "tower": r"\boxed{9^{9^{9^{9}}}}",
    "slow": r"\boxed{\sin(x)^{16}\cos(x)^{16}+\sin(y)^{16}\cos(y)^{16}+\sin(z)^{16}\cos(z)^{16}}",
}
FLOOD_ENVS = 8


def flood(kind: str, ready, stop) -> None:
    import gym_integrity  # noqa: F401  (registers the envs)
    from gym_integrity.vector import make_threaded_vec

    envs = make_threaded_vec("QEDMath-v0", FLOOD_ENVS, problem_types=["answer"])
    envs.reset(seed=0)
    ready.set()
    answers = [f"The answer is {FLOODS[kind]}."] * FLOOD_ENVS
    while not stop.is_set():
        envs.step(answers)
    envs.close()


def neighbour_latencies(env: gym.Env, answers: int) -> list[float]:
    out = []
    for seed in range(answers):
        env.reset(seed=seed)
        gold = env.unwrapped.gold_answers()[0]
        start = time.perf_counter()
        _, _, _, _, info = env.step(f"The answer is \\boxed{{{gold}}}.")
        out.append(time.perf_counter() - start)
        if info["verdict"] != "correct":
            raise SystemExit(f"the neighbour's gold was graded {info['verdict']!r} ({info.get('cause')})")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=10)
    parser.add_argument("--floods", nargs="+", default=["none", "tower", "slow"], choices=["none", *FLOODS])
    args = parser.parse_args(argv)

    import gym_integrity  # noqa: F401

    env = gym.make("QEDMath-v0", problem_types=["answer"])
    env.unwrapped._verifier.wait_ready(120)  # time the grading, not the pool's start
    neighbour_latencies(env, 2)  # warm
    context = multiprocessing.get_context("spawn")
    print(f"neighbour: {args.answers} golds, one at a time; flooder: {FLOOD_ENVS} envs stepping hostile answers")
    print(f"{'flood':<8} {'p50 ms':>9} {'max ms':>9}")
    for kind in args.floods:
        child = None
        if kind != "none":
            ready, stop = context.Event(), context.Event()
            child = context.Process(target=flood, args=(kind, ready, stop), daemon=True)
            child.start()
            if not ready.wait(120):
                raise SystemExit("the flooder did not start within 120 s")
            time.sleep(1.0)  # its first batch is in the pool
        try:
            latencies = neighbour_latencies(env, args.answers)
        finally:
            if child is not None:
                stop.set()
                child.join(60)
                if child.is_alive():
                    child.kill()
        print(f"{kind:<8} {statistics.median(latencies) * 1e3:9.1f} {max(latencies) * 1e3:9.1f}", flush=True)
    env.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A training step's width of proof gradings at once: 1,024 QEDMath-v0 proof envs in one threaded vector env, one
step each, against the test judge answering every request in 2 s.

The judge is ``gym_integrity.openai_stub.judge_server`` in its own process (a
real judge does not share our GIL), with ``--latency`` seconds per answer and
at most ``--judge-slots`` answers in progress at once (later requests wait, as
at a judge server with that many batch slots). Every env's proof is graded
through the full stack and the real ``openai`` client
(``gym_integrity.vector.make_threaded_vec``: one vector ``step`` over all envs).

**The bound.** A request takes ``latency`` seconds once it holds a slot, so
the judge finishes at most ``slots / latency`` gradings per second; ``width``
gradings need at least ``ceil(width / slots)`` rounds of ``latency`` seconds.
Bound = ``width / (ceil(width / slots) * latency)`` gradings/s. By default
256 slots (vLLM's default ``max_num_seqs``): 1,024 gradings take at least
4 x 2 s, a bound of 128/s. With ``--judge-slots 1024`` every grading is
answered at once: 2 s, 512/s, and what is measured is how fast this one
process (one GIL) puts 1,024 requests on the wire. Target: the measured rate
(width / the step's wall time) >= 0.8 of the bound.

**Failures.** The judge answers HTTP 500 to every ``--fail-every``-th request
(its script, taken in order of arrival) and the judge config makes no retry,
so exactly that many gradings must come back as no-verdicts (``grader_error``
naming HTTP 500), and no grading may fail any other way (connection errors,
timeouts, slot waits).

Two steps run one after the other: the first opens the connections and the
judge client's request threads, the second (a training run's steady state,
both kept) is the one the target is read on. Printed per step: the rate, the
ratio to the bound, the no-verdicts by cause against the injected count, the
client's CPU per grading, the peak client threads and the load average; then
this process's RSS (before the envs, after building them, peak).

    python benchmarks/bench_judge_width.py [--width 1024] [--latency 2] [--judge-slots 256] [--fail-every 20]
"""

from __future__ import annotations

import argparse
import collections
import math
import os
import resource
import threading
import time

import numpy as np
from bench_judge import judge_server

PROOF = "</think>n^3 - n = (n - 1) n (n + 1) is a product of three consecutive integers, so 2 and 3 divide it."
WARMUP = 4  # gradings before the measured steps (imports, the judge client); the script answers them first


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class PeakThreads:
    """Samples this process's thread count every 10 ms while running."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, threading.active_count())

    def __enter__(self) -> "PeakThreads":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def one_step(envs: object, width: int, failing: int, seed: int) -> dict:
    """One vector step of every env (after a reset): its wall and CPU time, peak threads and no-verdicts."""
    envs.reset(seed=seed)
    actions = np.array([PROOF] * width, dtype=object)
    load = os.getloadavg()[0]
    with PeakThreads() as threads:
        start, cpu = time.perf_counter(), time.process_time()
        _, _, terminated, _, infos = envs.step(actions)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    no_verdict = np.asarray(infos["no_verdict"], dtype=bool)
    causes: collections.Counter = collections.Counter()
    for i in np.flatnonzero(no_verdict):
        cause = str(infos["cause"][i])
        causes["HTTP 500" if "HTTP 500" in cause else cause[:120]] += 1
    return {"elapsed": elapsed, "cpu": cpu, "threads": threads.peak, "terminated": int(np.sum(terminated)),
            "no_verdicts": int(no_verdict.sum()), "causes": dict(causes), "load": load,
            "ok": int(no_verdict.sum()) == failing and set(causes) <= {"HTTP 500"} and bool(terminated.all())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=1024, help="proof envs stepped at once")
    parser.add_argument("--latency", type=float, default=2.0, help="the judge's seconds per answer")
    parser.add_argument("--judge-slots", type=int, default=256,
                        help="answers the judge works on at once (256: vLLM's default max_num_seqs)")
    parser.add_argument("--fail-every", type=int, default=20, help="every N-th request answers HTTP 500 (0: none)")
    args = parser.parse_args(argv)
    width = args.width
    step_script = ["500" if args.fail_every and i % args.fail_every == args.fail_every - 1 else "score:5"
                   for i in range(width)]
    failing = step_script.count("500")
    script = ["score:5"] * WARMUP + step_script * 2

    import gym_integrity  # noqa: F401  (registers the ids)
    import gymnasium as gym
    from gym_integrity.vector import make_threaded_vec

    rss_start = _rss_mb()
    with judge_server(args.latency, False, "--max-concurrent", str(args.judge_slots), "--script", ",".join(script)) \
            as url:
        # No retries: each injected 500 is one no-verdict. max_concurrency: the client may keep every env's
        # request in flight (its default, 64, would be the bound instead). The deadline is far above the bound.
        judge = {"base_url": url, "model": "test-judge", "timeout_s": 60.0, "max_retries": 0,
                 "max_concurrency": width}
        kwargs = {"judge": judge, "problem_types": ["proof"]}
        warm = gym.make("QEDMath-v0", **kwargs)
        for seed in range(WARMUP):
            warm.reset(seed=seed)
            assert not warm.step(PROOF)[4]["no_verdict"], "the warm-up grading failed"
        warm.close()
        built = time.perf_counter()
        envs = make_threaded_vec("QEDMath-v0", width, **kwargs)
        envs.reset(seed=0)
        build_s = time.perf_counter() - built
        rss_built = _rss_mb()
        # The first step opens the connections and the client's threads; the second is a training run's steady
        # state (both kept by the judge client), which the target is read on.
        steps = [one_step(envs, width, failing, seed) for seed in (1, 2)]
        rss_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        envs.close()

    rounds = math.ceil(width / args.judge_slots)
    bound = width / (rounds * args.latency)
    print(f"{width} QEDMath-v0 proof gradings in one threaded vector step; test judge in its own process: "
          f"{args.latency:g} s per answer, {args.judge_slots} slots; every {args.fail_every}th request HTTP 500")
    print(f"bound {bound:.0f} gradings/s ({width} / ({rounds} x {args.latency:g} s)); envs built and reset in "
          f"{build_s:.1f} s")
    for name, step in zip(("first step", "second step"), steps):
        rate = width / step["elapsed"]
        verdict = f"target >= 0.80: {'met' if rate >= 0.8 * bound else 'MISSED'}" if name == "second step" else \
            "connections and threads opened here"
        print(f"{name:<12} {step['elapsed']:.2f} s, {rate:.0f} gradings/s, ratio {rate / bound:.2f} ({verdict}); "
              f"terminated {step['terminated']}; no-verdicts {step['no_verdicts']} of {failing} injected "
              f"({'match' if step['ok'] else 'MISMATCH'}) {step['causes']}; client CPU {step['cpu']:.2f} s "
              f"({step['cpu'] / width * 1000:.1f} ms a grading); peak threads {step['threads']}; "
              f"load average {step['load']:.2f}")
    print(f"RSS (this process) start {rss_start:.0f} MB, envs built {rss_built:.0f} MB, peak {rss_peak:.0f} MB "
          f"({(rss_peak - rss_start) * 1024 / width:.0f} KB per env)")
    rate = width / steps[1]["elapsed"]
    return 0 if rate >= 0.8 * bound and all(step["ok"] for step in steps) else 1


if __name__ == "__main__":
    raise SystemExit(main())

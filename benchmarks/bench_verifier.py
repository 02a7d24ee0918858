"""Benchmark of the answer verifier and QEDMath-v0 construction: throughput, latency under hostile answers, make time.

Prints four tables:

1. verifications per second with 1 worker and with N workers side by side,
   and the ratio against the target ``0.8 x N`` (N = 2 by default);
2. the latency distribution (p50, p99, max) over a mix of normal and hostile
   answers, the longest run on a worker and the longest queueing, with the
   count of timeouts and of hung requests (answered later than queue bound +
   run budget + 1 s, or never); targets: longest run <= run budget, no normal
   answer timed out;
3. the mixed batch: a threaded vector env of 8 QEDMath-v0 answer
   envs (default verifier: 2 workers, 5 s run budget), 2 hostile answers and
   6 correct ones per batch over several rounds; verdict counts and latency
   p50/p99/max for the correct and the hostile answers side by side, and what
   the old rule (deadline counted from submission, queueing included) would
   have said: a timeout for every answer whose latency passed the deadline;
4. ``gym.make("QEDMath-v0")`` time on the built-in set, cold (first in the
   process) and warm.

Run: ``python benchmarks/bench_verifier.py [--requests 240] [--repeats 3] [--workers 2] [--deadline 2] [--rounds 5]``
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import sys
import threading
import time
from typing import Any

from gym_integrity.services.verifier import VerifierConfig, VerifierService

# (gold, submission): equivalent forms that make math_verify simplify, not just compare strings.
NORMAL = [
    (r"\frac{1}{2}", "0.5"),
    (r"\sqrt{2}", r"\frac{\sqrt{8}}{2}"),
    (r"\frac{1+\sqrt{5}}{2}", r"(1+\sqrt{5})/2"),
    (r"(2,3)", r"x \in (2, 3)"),
    (r"\{-1, 0, 1\}", r"\{1, -1, 0\}"),
    (r"x^2 - 1", r"(x-1)(x+1)"),
    (r"\frac{16}{3}", r"5\frac{1}{3}"),
    (r"\pi", "3.14159265"),
    (r"2\sqrt{3}", r"\sqrt{12}"),
    (r"\frac{\pi}{4}", r"\arctan(1)"),
    (r"e^{2}", r"e \cdot e"),
    (r"1170", r"1170"),
]
HOSTILE = [
    r"9^{9^{9^{9}}}",
    "(" * 300 + "1" + ")" * 300,
    "{" * 500 + "1" + "}" * 500,
]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def _workload(n: int, distinct_golds: bool) -> tuple[str, str, str]:
    """(problem id, gold, submission) number ``n``: every submission text is new, as from a sampling policy,
    so math_verify's own per-process parse caches do not flatter the figures."""
    k = n % 24 + 1
    m = n // 24 + 2
    kind = n % 4
    if kind == 0:
        gold, answer = f"\\frac{{{k}}}{{{k + 1}}}", f"\\frac{{{m * k}}}{{{m * (k + 1)}}}"
    elif kind == 1:
        gold, answer = f"x^2 - {k * k}", f"(x - {k})(x + {k}) + {m} - {m}"
    elif kind == 2:
        gold, answer = f"{k}\\sqrt{{2}}", f"\\sqrt{{{2 * k * k}}} + 0 \\cdot {m}"
    else:
        gold, answer = f"\\{{{k}, {k + 1}\\}}", f"\\{{{k + 1}, \\frac{{{m * k}}}{{{m}}}\\}}"
    pid = f"p{n}" if distinct_golds else f"p{n % 24}-{kind}"
    return pid, gold, answer


def throughput(workers: int, requests: int, distinct_golds: bool) -> float:
    """Verifications per second with ``workers`` busy processes, all requests in flight at once."""
    svc = VerifierService(VerifierConfig(num_workers=workers, deadline_s=60.0, max_in_flight=requests + 1))
    svc.start()
    assert svc.wait_ready(120), "workers did not start"
    if not distinct_golds:
        # Warm every worker's gold cache outside the clock (requests spread over idle workers).
        warm = []
        for n in range(96):
            pid, gold, answer = _workload(n, False)
            warm += [svc.submit(answer, gold, problem_id=pid) for _ in range(workers + 1)]
        for future in warm:
            future.result()
    offset = 10_000  # fresh submission texts
    jobs = [_workload(offset + n, distinct_golds) for n in range(requests)]
    start = time.perf_counter()
    futures = [svc.submit(answer, gold, problem_id=pid) for pid, gold, answer in jobs]
    grades = [f.result() for f in futures]
    elapsed = time.perf_counter() - start
    svc.close()
    wrong = sum(g.verdict.value != "correct" for g in grades)
    if wrong:
        print(f"  warning: {wrong} of {requests} requests not graded correct", file=sys.stderr)
    return requests / elapsed


def latency_under_hostile_mix(workers: int, requests: int, deadline: float, clients: int,
                              hostile_every: int) -> dict[str, float]:
    """Closed-loop clients, one hostile answer every ``hostile_every`` requests; per-request latency."""
    svc = VerifierService(VerifierConfig(num_workers=workers, deadline_s=deadline))
    svc.start()
    assert svc.wait_ready(120)
    latencies: list[float] = []
    verdicts: list[str] = []
    lock = threading.Lock()
    counter = iter(range(requests))

    def client() -> None:
        for n in counter:
            if n % hostile_every == 0:
                gold, text = "3", r"\boxed{" + HOSTILE[(n // hostile_every) % len(HOSTILE)] + "}"
            else:
                gold, answer = NORMAL[n % len(NORMAL)]
                text = r"\boxed{" + answer + "}"
            start = time.perf_counter()
            outcome = svc.verify(text, gold, problem_id=f"mix{n % len(NORMAL)}")
            with lock:
                latencies.append(time.perf_counter() - start)
                verdicts.append(outcome.grade.verdict.value)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    wall = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=requests * (deadline + 2))
    wall = time.perf_counter() - wall
    stats = svc.stats()
    svc.close()
    # Hung: never answered, or later than the worst honest wait (queue bound + run budget + 1 s).
    bound = svc.config.queue_timeout_s + deadline + 1.0
    hung = (requests - len(latencies)) + sum(lat > bound for lat in latencies)
    hostile = len(range(0, requests, hostile_every))
    return {
        "requests": float(requests),
        "hostile": float(hostile),
        "p50": statistics.median(latencies),
        "p99": _percentile(latencies, 0.99),
        "max": max(latencies),
        "timeouts": float(verdicts.count("timeout")),
        "normal_timeouts": float(verdicts.count("timeout") - hostile),
        "incorrect": float(verdicts.count("incorrect")),
        "hung": float(hung),
        "restarts": stats["verifier/worker_restarts"],
        "run_max": stats["verifier/run_s_max"],
        "queued_max": stats["verifier/queued_s_max"],
        "wall": wall,
    }


def mixed_batch(rounds: int, hostile: int = 2, batch: int = 8) -> dict[str, Any]:
    """Rounds of one threaded vector step: ``hostile`` towers and ``batch - hostile`` correct answers, one problem."""
    import numpy as np

    import gym_integrity  # noqa: F401
    from gym_integrity.vector import make_threaded_vec

    envs = make_threaded_vec("QEDMath-v0", batch, problem_types=["answer"], reward_preset="base")
    service = envs.envs[0].unwrapped._verifier
    assert service.wait_ready(120)
    out: dict[str, Any] = {"deadline": service.config.deadline_s, "workers": service.config.workers,
                           "correct": collections.Counter(), "hostile": collections.Counter(),
                           "correct_lat": [], "hostile_lat": [], "rewards": collections.Counter(), "wall": []}
    for r in range(rounds):
        service.wait_ready(120)  # killed workers' replacements warm up, as during the next generation
        envs.reset(seed=[r] * batch)
        gold = envs.envs[0].unwrapped.gold_answers()[0]
        actions = np.array([r"\boxed{9^{9^{9^{9}}}}" if i < hostile else f"\\boxed{{{gold}}}"
                            for i in range(batch)], dtype=object)
        start = time.perf_counter()
        _, rewards, _, _, infos = envs.step(actions)
        out["wall"].append(time.perf_counter() - start)
        for i in range(batch):
            side = "hostile" if i < hostile else "correct"
            no_verdict = " (no-verdict)" if infos["no_verdict"][i] else ""
            out[side][f"{infos['verdict'][i]}{no_verdict}"] += 1
            out[f"{side}_lat"].append(float(infos["metrics"]["verifier/latency_s"][i]))
            if side == "hostile":
                out["rewards"][float(rewards[i])] += 1
    envs.close()
    return out


def _mixed_row(label: str, verdicts: collections.Counter, latencies: list[float], deadline: float) -> str:
    counts = ", ".join(f"{v} {n}" for v, n in sorted(verdicts.items()))
    old = sum(lat > deadline for lat in latencies)
    return (f"{label:<10}{counts:<34}{statistics.median(latencies) * 1000:>9.0f}{_percentile(latencies, 0.99) * 1000:>9.0f}"
            f"{max(latencies) * 1000:>9.0f}   {old} of {len(latencies)}")


def make_time() -> tuple[float, float]:
    import gymnasium as gym

    import gym_integrity  # noqa: F401

    start = time.perf_counter()
    env = gym.make("QEDMath-v0")
    cold = time.perf_counter() - start
    start = time.perf_counter()
    env2 = gym.make("QEDMath-v0")
    warm = time.perf_counter() - start
    env2.close()
    env.close()
    return cold, warm


def print_throughput_and_latency(args: argparse.Namespace) -> None:
    """Tables 1 and 2: throughput with 1 and N workers, then latency under a hostile mix."""
    n = args.workers
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"== throughput: {args.requests} requests all in flight, median of {args.repeats} alternating runs "
          f"(target: {n} workers >= 0.8 x {n} x 1 worker; {os.cpu_count()} cores, load average {load:.1f})")
    print(f"{'workload':<28}{'1 worker/s':>12}{f'{n} workers/s':>14}{'ratio':>8}{'target':>8}")
    for label, distinct in (("warm gold cache", False), ("cold gold (parse each)", True)):
        ones, manys = [], []
        for _ in range(args.repeats):  # alternate, so load from elsewhere hits both sides alike
            ones.append(throughput(1, args.requests, distinct))
            manys.append(throughput(n, args.requests, distinct))
        one, many = statistics.median(ones), statistics.median(manys)
        print(f"{label:<28}{one:>12.1f}{many:>14.1f}{many / one:>8.2f}{0.8 * n:>8.2f}")

    print(f"\n== latency: {args.mix_requests} requests, 1 hostile in {args.hostile_every}, {n} workers, "
          f"4 clients, run budget {args.deadline:g}s (target: run max <= {args.deadline:g}s, 0 normal timeouts, "
          "0 hung)")
    r = latency_under_hostile_mix(n, args.mix_requests, args.deadline, clients=4, hostile_every=args.hostile_every)
    print(f"p50 {r['p50'] * 1000:.1f} ms | p99 {r['p99'] * 1000:.1f} ms | max {r['max'] * 1000:.1f} ms | "
          f"run max {r['run_max'] * 1000:.1f} ms | queued max {r['queued_max'] * 1000:.1f} ms | "
          f"timeouts {r['timeouts']:.0f} (hostile {r['hostile']:.0f}, normal {r['normal_timeouts']:.0f}) | "
          f"hung {r['hung']:.0f} | worker restarts {r['restarts']:.0f} | wall {r['wall']:.1f}s")


def print_mixed_batch(rounds: int) -> None:
    """Table 3: issue 9's batch of 2 hostile + 6 correct answers, correct and hostile side by side."""
    print(f"\n== mixed batch (issue 9): threaded vector env of 8 QEDMath-v0 answer envs, 2 hostile "
          f"(\\boxed{{9^{{9^{{9^{{9}}}}}}}}) + 6 correct per step, {rounds} rounds, default verifier")
    m = mixed_batch(rounds)
    print(f"   ({m['workers']} workers, {m['deadline']:g} s run budget; latency = the step's verifier/latency_s, "
          "queueing included; old rule = a timeout whenever latency > budget)")
    print(f"{'answers':<10}{'verdicts (new rule)':<34}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}   old rule: timeouts")
    print(_mixed_row("correct", m["correct"], m["correct_lat"], m["deadline"]))
    print(_mixed_row("hostile", m["hostile"], m["hostile_lat"], m["deadline"]))
    print(f"hostile rewards (base preset): {dict(m['rewards'])}; batch step wall: median "
          f"{statistics.median(m['wall']):.2f} s, max {max(m['wall']):.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=240)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--deadline", type=float, default=2.0)
    parser.add_argument("--mix-requests", type=int, default=120)
    parser.add_argument("--hostile-every", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5, help="mixed-batch rounds")
    parser.add_argument("--only-mixed", action="store_true", help="run the mixed-batch table only")
    args = parser.parse_args()
    if not args.only_mixed:
        print_throughput_and_latency(args)
    cold, warm = make_time()  # before the mixed batch, which would warm the process
    print_mixed_batch(args.rounds)
    print(f"\n== gym.make('QEDMath-v0') on the built-in set: cold {cold * 1000:.1f} ms, warm {warm * 1000:.1f} ms "
          "(workers start in the background; not waited for)")


if __name__ == "__main__":
    main()

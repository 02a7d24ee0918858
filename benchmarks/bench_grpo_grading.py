r"""A GRPO step's answer grading: 512 completions (64 prompts x 8 samples) through our verifier pool, side by side
with a plain ``math_verify`` loop in one process.

The step is what a GRPO trainer grades at once: 64 prompts with golds of the
usual kinds (integers, fractions, roots, multiples of pi, polynomials,
intervals, sets), 8 sampled completions each, a few sentences of reasoning
ending in a ``\boxed{}``. The samples of one prompt agree as a policy's do:
most repeat the gold in its own form, some write an equivalent form, some
share one wrong answer, a few another, and some box nothing, so a step holds
many identical boxed answers (the count of distinct (prompt, answer) pairs is
printed). Seeded: every run grades the same step.

* **verifier pool**: ``VerifierService.verify`` (the service every env of a
  process shares, workers of the machine's pool, math_verify in worker
  processes with each worker's parsed golds kept), called from 8 threads as
  ``gym_integrity.integrations.trl.reward_function`` grades a batch;
* **verifier pool, distinct once**: the same through
  ``gym_integrity.services.verifier_batch.verify_many``, which sends each
  distinct (prompt, boxed answer) once and gives its grade to every copy;
* **plain loop**: one process, one completion after another:
  ``verify(parse(gold), parse(completion))``, as TRL's ``accuracy_reward``
  and most GRPO scripts write it (the gold parsed per completion);
* **plain loop, gold parsed once**: the same with each prompt's gold parsed
  once, for a plain loop written with care.

The two must agree on every verdict (asserted). Printed: each one's seconds
for the step and CPU milliseconds a completion (medians of ``--rounds``, pool
warmed first), the ratio (target: pool >= 1.5x the plain loop), the worker
count and the load average.

    python benchmarks/bench_grpo_grading.py [--prompts 64] [--samples 8] [--rounds 3] [--workers 2]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import logging
import os
import random
import statistics
import time

THREADS = 8  # as the TRL reward function's grading threads

# (gold, equivalent forms, wrong answers) of the kinds a math set's golds take.
KINDS = [
    (lambda k: (f"{k * 7 + 3}", [f"{k * 7 + 3}.0"], [f"{k * 7 + 2}", f"{k * 7 + 4}", f"{-(k * 7 + 3)}"])),
    (lambda k: (f"\\frac{{{k}}}{{{k + 2}}}", [f"{k}/{k + 2}", f"\\dfrac{{{2 * k}}}{{{2 * k + 4}}}"],
                [f"\\frac{{{k + 2}}}{{{k}}}", f"\\frac{{{k}}}{{{k + 3}}}"])),
    (lambda k: (f"{k + 1}\\sqrt{{2}}", [f"\\sqrt{{{2 * (k + 1) ** 2}}}"],
                [f"{k + 1}\\sqrt{{3}}", f"{k + 2}\\sqrt{{2}}"])),
    (lambda k: (f"\\frac{{{k}\\pi}}{{4}}", [f"{k}\\pi/4", f"\\frac{{{k}}}{{4}}\\pi"],
                [f"\\frac{{{k}\\pi}}{{2}}", f"{k}\\pi"])),
    (lambda k: (f"x^2 - {k * k}", [f"(x - {k})(x + {k})"], [f"x^2 + {k * k}", f"(x - {k})^2"])),
    (lambda k: (f"({k}, {k + 5})", [f"x \\in ({k}, {k + 5})"], [f"[{k}, {k + 5}]", f"({k}, {k + 4})"])),
    (lambda k: (f"\\{{{k}, {k + 1}, {k + 3}\\}}", [f"\\{{{k + 3}, {k}, {k + 1}\\}}"], [f"\\{{{k}, {k + 1}\\}}"])),
    (lambda k: (f"{k + 10}", [f"{k + 10}"], [f"{k + 9}", f"{2 * (k + 10)}"])),
]
REASONING = ("Let us set up the problem carefully. Substituting the given values and simplifying step by step, "
             "we collect the terms and check the boundary cases. ")


def make_step(prompts: int, samples: int, seed: int = 0) -> list[tuple[str, str, str]]:
    """``prompts * samples`` (problem id, gold, completion) triples, a prompt's samples agreeing as a policy's do.

    Each seed is a step of its own (other golds, other texts): no round is graded from caches an earlier round
    filled (math_verify's and sympy's in this process, the parsed golds in the workers). Every completion's text
    is its own, as sampled reasoning is; the boxed answers repeat."""
    rng = random.Random(seed)
    rows = []
    for p in range(prompts):
        gold, equivalent, wrong = KINDS[p % len(KINDS)](p // len(KINDS) + 1 + 1000 * seed)
        favourite_wrong = rng.choice(wrong)
        for s in range(samples):
            roll = rng.random()
            if roll < 0.45:
                answer = gold
            elif roll < 0.60:
                answer = rng.choice(equivalent)
            elif roll < 0.85:
                answer = favourite_wrong
            elif roll < 0.93:
                answer = rng.choice(wrong)
            else:
                answer = None
            text = f"Sample {s} of step {seed}. " + REASONING * (1 + s % 3)
            text += f"So the answer is $\\boxed{{{answer}}}$." if answer is not None else "I could not finish."
            rows.append((f"p{p}", gold, text))
    return rows


def boxed(text: str) -> str | None:
    from gym_integrity.extract import last_boxed

    return last_boxed(text).answer


def plain_loop(rows: list[tuple[str, str, str]], gold_once: bool) -> tuple[float, list[bool]]:
    from math_verify import parse, verify

    start = time.perf_counter()
    golds: dict[str, object] = {}
    out = []
    for problem_id, gold, text in rows:
        if gold_once:
            if problem_id not in golds:
                golds[problem_id] = parse(f"\\boxed{{{gold}}}")
            parsed_gold = golds[problem_id]
        else:
            parsed_gold = parse(f"\\boxed{{{gold}}}")
        out.append(bool(verify(parsed_gold, parse(text))))
    return time.perf_counter() - start, out


def cpu_s(pids: list[int]) -> float:
    """CPU seconds (user + system) the processes ``pids`` have used so far."""
    ticks = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def pool_step(service: object, rows: list[tuple[str, str, str]],
              distinct_once: bool = False) -> tuple[float, list[bool], float]:
    """The step's wall time, verdicts, and CPU seconds of this process and the workers (not the pool server's)."""
    from gym_integrity.services.verifier_batch import verify_many

    workers = service.worker_pids()
    cpu = time.process_time() + cpu_s(workers)
    start = time.perf_counter()
    if distinct_once:
        outcomes = verify_many(service, rows, threads=THREADS)
    else:
        with concurrent.futures.ThreadPoolExecutor(THREADS) as threads:
            outcomes = list(threads.map(lambda row: service.verify(row[2], row[1], problem_id=row[0]), rows))
    elapsed = time.perf_counter() - start
    cpu = time.process_time() + cpu_s(workers) - cpu
    return elapsed, [o.grade.verdict.value == "correct" for o in outcomes], cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=64)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2, help="verifier workers (the machine has %d cores)"
                        % (os.cpu_count() or 1))
    args = parser.parse_args(argv)
    logging.disable(logging.CRITICAL)  # math_verify warns per unparsable answer

    from gym_integrity.services.verifier import VerifierConfig, get_verifier

    steps = [make_step(args.prompts, args.samples, seed) for seed in range(1 + args.rounds)]
    distinct = [len({(p, boxed(t)) for p, _, t in rows}) for rows in steps[1:]]
    service = get_verifier(VerifierConfig(num_workers=args.workers))
    service.acquire()
    try:
        assert service.wait_ready(120), "the verifier workers did not start"
        pool_step(service, steps[0])  # warm: imports, each worker's sympy
        plain_loop(steps[0][:64], False)
        loads, times = [], {"pool": [], "pool, distinct once": [], "plain": [], "plain, gold once": []}
        cpus: dict[str, list[float]] = {name: [] for name in times}
        verdicts: dict[str, list[bool]] = {}
        disagree = correct = 0
        names = list(times)
        for r, rows in enumerate(steps[1:]):
            loads.append(os.getloadavg()[0])
            # Interleaved, so the machine's drift hits each alike, and in turn first (the plain loops share this
            # process's math_verify and sympy caches: the second of them on a step finds some of the first's).
            for name in names[r % len(names):] + names[:r % len(names)]:
                if name.startswith("pool"):
                    elapsed, verdicts[name], cpu = pool_step(service, rows, distinct_once=name != "pool")
                else:
                    cpu = time.process_time()
                    elapsed, verdicts[name] = plain_loop(rows, gold_once=name != "plain")
                    cpu = time.process_time() - cpu
                times[name].append(elapsed)
                cpus[name].append(cpu)
            disagree += sum(verdicts[name] != verdicts["plain"] for name in names)
            correct += sum(verdicts["plain"])
    finally:
        service.release()
    n = len(steps[1])
    print(f"GRPO step: {args.prompts} prompts x {args.samples} samples = {n} completions, "
          f"{'/'.join(map(str, distinct))} distinct (prompt, boxed answer) pairs, {correct / args.rounds:.0f} "
          f"correct (per step: each round grades a step of its own); "
          f"verifier: {args.workers} workers, {THREADS} calling threads; median of {args.rounds} rounds")
    print(f"{'grader':<22}{'s/step':>8}{'completions/s':>15}{'CPU ms each':>13}   rounds (s)")
    for name, values in times.items():
        median = statistics.median(values)
        cpu_ms = statistics.median(cpus[name]) / n * 1000
        print(f"{name:<22}{median:>8.2f}{n / median:>15.0f}{cpu_ms:>13.1f}   {', '.join(f'{v:.2f}' for v in values)}")
    print("(CPU: the pool's is this process's and its workers', without the machine pool server's)")
    for pool in ("pool", "pool, distinct once"):
        for name in ("plain", "plain, gold once"):
            ratio = statistics.median(times[name]) / statistics.median(times[pool])
            print(f"{pool} vs {name}: {ratio:.2f}x" + (f" (target >= 1.5x: {'met' if ratio >= 1.5 else 'MISSED'})"
                                                       if name == "plain" else ""))
    print(f"graders x rounds whose verdicts differ from the plain loop's: {disagree}")
    print(f"load average (1 min) at each round: {', '.join(f'{v:.2f}' for v in loads)}")
    return 0 if disagree == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())

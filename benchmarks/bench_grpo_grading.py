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
* **plain loop**: one process, one completion after another:
  ``verify(parse(gold), parse(completion))``, as TRL's ``accuracy_reward``
  and most GRPO scripts write it (the gold parsed per completion);
* **plain loop, gold parsed once**: the same with each prompt's gold parsed
  once, for a plain loop written with care.

The two must agree on every verdict (asserted). Printed: each one's seconds
for the step (median of ``--rounds``, pool warmed first), the ratio (target:
pool >= 1.5x the plain loop), the worker count and the load average.

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
    """``prompts * samples`` (problem id, gold, completion) triples, a prompt's samples agreeing as a policy's do."""
    rng = random.Random(seed)
    rows = []
    for p in range(prompts):
        gold, equivalent, wrong = KINDS[p % len(KINDS)](p // len(KINDS) + 1)
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
            text = REASONING * (1 + s % 3)
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


def pool_step(service: object, rows: list[tuple[str, str, str]]) -> tuple[float, list[bool]]:
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(THREADS) as threads:
        outcomes = list(threads.map(lambda row: service.verify(row[2], row[1], problem_id=row[0]), rows))
    elapsed = time.perf_counter() - start
    return elapsed, [o.grade.verdict.value == "correct" for o in outcomes]


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

    rows = make_step(args.prompts, args.samples)
    distinct = len({(p, boxed(t)) for p, _, t in rows})
    service = get_verifier(VerifierConfig(num_workers=args.workers))
    service.acquire()
    try:
        assert service.wait_ready(120), "the verifier workers did not start"
        pool_step(service, make_step(args.prompts, args.samples, seed=99))  # warm: imports, each worker's sympy
        plain_loop(rows[:16], False)
        loads, times = [], {"pool": [], "plain": [], "plain, gold once": []}
        verdicts = {}
        for _ in range(args.rounds):  # interleaved, so the machine's drift hits each alike
            loads.append(os.getloadavg()[0])
            elapsed, verdicts["pool"] = pool_step(service, rows)
            times["pool"].append(elapsed)
            elapsed, verdicts["plain"] = plain_loop(rows, False)
            times["plain"].append(elapsed)
            elapsed, verdicts["plain, gold once"] = plain_loop(rows, True)
            times["plain, gold once"].append(elapsed)
    finally:
        service.release()
    disagree = [i for i, (a, b) in enumerate(zip(verdicts["pool"], verdicts["plain"])) if a != b]
    n = len(rows)
    print(f"GRPO step: {args.prompts} prompts x {args.samples} samples = {n} completions, "
          f"{distinct} distinct (prompt, boxed answer) pairs, {sum(verdicts['plain'])} correct; "
          f"verifier: {args.workers} workers, {THREADS} calling threads; median of {args.rounds} rounds")
    print(f"{'grader':<20}{'s/step':>8}{'completions/s':>15}   rounds (s)")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:<20}{median:>8.2f}{n / median:>15.0f}   {', '.join(f'{v:.2f}' for v in values)}")
    pool = statistics.median(times["pool"])
    for name in ("plain", "plain, gold once"):
        ratio = statistics.median(times[name]) / pool
        print(f"pool vs {name}: {ratio:.2f}x" + (f" (target >= 1.5x: {'met' if ratio >= 1.5 else 'MISSED'})"
                                                 if name == "plain" else ""))
    print(f"verdicts that differ between pool and plain loop: {len(disagree)}")
    print(f"load average (1 min) at each round: {', '.join(f'{v:.2f}' for v in loads)}")
    return 0 if not disagree else 1


if __name__ == "__main__":
    raise SystemExit(main())

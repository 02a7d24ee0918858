r"""QEDMath's honest side: every shipped answer problem's gold and its honest forms, through the real env's step.

For each problem math_verify grades (``answer`` and verifier-graded ``multi_step`` rows of the built-in set), the
gold and every form :func:`gym_integrity.envs.qed_math.variants.honest_variants` generates from it (the same value
written another way: ``a/b``, the exact decimal, ``3\sqrt{2}``, ``$...$``, units text, ``x = v``, the statement's
formula ``= v``...) are each answered in a fresh episode, boxed, plus the gold as ``$\boxed{g}$`` and inside a
sentence. A form is paid when the verdict is ``correct``. The final-answer rule and math_verify both run for real
(math_verify on the verifier's worker processes).

Run: ``python benchmarks/qed_honest_variants.py [--show-refused]``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

THRESHOLD = 0.99


def forms(gold: str, statement: str) -> list[str]:
    """The step texts for one problem: each honest form boxed, and the gold in two sentence wrappers."""
    from gym_integrity.envs.qed_math.variants import honest_variants

    boxed = [f"\\boxed{{{form}}}" for form in honest_variants(gold, statement)]
    return [*boxed, f"$\\boxed{{{gold}}}$", f"</think>Therefore the answer is $\\boxed{{{gold}}}$."]


def measure() -> list[tuple[str, int, list[tuple[str, str]]]]:
    """``(problem id, forms answered, [(refused form, cause)])`` per problem."""
    from gym_integrity.envs.qed_math import QEDMathEnv

    with warnings.catch_warnings():  # the judge-graded multi-step problem is skipped below: no judge is needed
        warnings.simplefilter("ignore")
        env = QEDMathEnv(verifier={"deadline_s": 10.0}, problem_types=["answer", "multi_step"])
    rows = []
    try:
        for problem in env._problems.problems:
            if problem.grader != "verifier":
                continue
            refused = []
            texts = forms(problem.gold_answer, problem.problem)
            for text in texts:
                env.reset(options={"problem_id": problem.problem_id})
                info = env.step(text)[4]
                if info["verdict"] != "correct":
                    refused.append((text, f"{info['verdict']}: {info.get('cause') or ''}".strip()))
            rows.append((problem.problem_id, len(texts), refused))
    finally:
        env.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show-refused", action="store_true", help="print every refused form and its cause")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows = measure()
    print(f"{'problem':<14}{'forms':>6}{'paid':>6}")
    for problem_id, count, refused in rows:
        print(f"{problem_id:<14}{count:>6}{count - len(refused):>6}")
        if args.show_refused:
            for text, cause in refused:
                print(f"    refused {text!r}: {cause}")
    total = sum(count for _, count, _ in rows)
    paid = total - sum(len(refused) for _, _, refused in rows)
    rate = paid / total
    print(f"{'all':<14}{total:>6}{paid:>6}  paid {rate:.4f} ({'>=' if rate >= THRESHOLD else '<'} {THRESHOLD})")
    print(f"{len(rows)} problems in {time.perf_counter() - start:.1f} s")
    return 0 if rate >= THRESHOLD else 1


if __name__ == "__main__":
    sys.exit(main())

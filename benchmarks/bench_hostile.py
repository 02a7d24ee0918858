r"""Benchmark of hostile answers side by side: QEDMath-v0 against GEM's MathEnv, and ReasoningGym-v0 against its own scorer.

The mix of issue 26: 60 QEDMath answers, half equivalent forms of the gold and
half wrong, every k-th replaced by ``\boxed{9^{9^{9^{9}}}}`` (k = 12, 4, 50;
and none: all honest), graded one at a time by one env with default settings.
Printed per system and mix: honest-verdict accuracy (the verdicts of the
answers that are not towers), wall time, p50/p99 per answer, the towers'
median cost, and the throughput ratios (ours with towers / ours all-honest,
ours / GEM's). ``--no-check`` grades without the static cost bound (``gym_integrity.grading.cost``)
(the run budget alone, as before it), for the before/after table.

GEM (``pip install gem-llm``): ``gem.envs.math_env.MathEnv`` with its default
process pool and 1 s grading timeout. OpenEnv's math_verify service (its QED
env's ``server/math_verify_service.py``, not on the package registries) is run
unmodified when ``--openenv-qed`` (or ``OPENENV_QED_SERVICE``) names that file,
with its defaults (2 worker processes, 1 s math_verify timeout, 5 s request
timeout), one answer at a time like the others. ReasoningGym-v0: simple_integration
golds and wrong answers, every k-th replaced by ``(x+1)**999*(x-1)**999``,
through the env (sandboxed scorer) and through reasoning-gym's ``score_answer``
called directly (honest answers only: a hostile one would run unbounded in
the caller's process).

Run: ``python benchmarks/bench_hostile.py [--answers 60] [--mixes 0,50,12,4] [--no-check] [--no-gem] [--no-qed]
[--openenv-qed PATH/math_verify_service.py]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any, Callable

import gymnasium as gym

import gym_integrity  # noqa: F401  (registers the envs)

TOWER = r"\boxed{9^{9^{9^{9}}}}"
RG_HOSTILE = "({v}+1)**999*({v}-1)**999"  # in the item's own variable, or the answer language refuses it

# gold -> (equivalent forms, a wrong answer), for the built-in answer problems
_FORMS = {
    r"\frac{1}{2}": ([r"0.5", r"\dfrac{2}{4}"], "3"),
    "(2,3)": ([r"x \in (2, 3)", "(2, 3)"], "(1,3)"),
    r"\{-1, 0, 1\}": ([r"\{1, -1, 0\}", r"\{0, 1, -1\}"], r"\{0, 1\}"),
    r"\frac{16}{3}": ([r"5\frac{1}{3}", r"\frac{32}{6}"], r"\frac{16}{5}"),
    r"\frac{1}{4}": (["0.25", r"\frac{2}{8}"], r"\frac{1}{3}"),
    r"\pi": ([r"\frac{2\pi}{2}", r"\pi \cdot 1"], r"2\pi"),
    r"\frac{1+\sqrt{5}}{2}": ([r"(1+\sqrt{5})/2", r"\frac{1}{2}+\frac{\sqrt{5}}{2}"], r"\frac{1-\sqrt{5}}{2}"),
}


def _forms(gold: str) -> tuple[list[str], str]:
    if gold.isdigit():
        n = int(gold)
        return [f"\\frac{{{2 * n}}}{{2}}", f"{n}.0"], str(n + 1)
    return _FORMS[gold]


def qed_workload(n: int, every: int) -> list[tuple[str, str, str, bool | None]]:
    """(problem id, gold, answer text, expected correct or None for a tower), answer problems round robin."""
    from gym_integrity.envs.qed_math.problems import load_problems

    problems = [p for p in load_problems(None).problems
                if p.problem_type != "proof" and (p.gold_answer.isdigit() or p.gold_answer in _FORMS)]
    out = []
    for i in range(n):
        p = problems[i % len(problems)]
        right, wrong = _forms(p.gold_answer)
        if every and (i + 1) % every == 0:
            out.append((p.problem_id, p.gold_answer, TOWER, None))
        elif i % 2 == 0:
            out.append((p.problem_id, p.gold_answer, f"The answer is \\boxed{{{right[(i // 2) % 2]}}}.", True))
        else:
            out.append((p.problem_id, p.gold_answer, f"The answer is \\boxed{{{wrong}}}.", False))
    return out


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))] if ordered else float("nan")


class Row:
    """One system on one mix: per-answer latencies and verdicts."""

    def __init__(self, system: str, mix: str):
        self.system, self.mix = system, mix
        self.latencies: list[float] = []
        self.hostile: list[float] = []
        self.right = self.honest = 0
        self.wall = 0.0

    def add(self, latency: float, expected: bool | None, correct: bool) -> None:
        self.latencies.append(latency)
        if expected is None:
            self.hostile.append(latency)
        else:
            self.honest += 1
            self.right += int(correct == expected)

    @property
    def throughput(self) -> float:
        return len(self.latencies) / self.wall if self.wall else 0.0

    def line(self) -> str:
        hostile = f"{statistics.median(self.hostile) * 1e3:9.1f}" if self.hostile else f"{'-':>9}"
        return (f"{self.system:<28} {self.mix:<10} {self.right:>3}/{self.honest:<3} {self.wall:8.2f} "
                f"{_percentile(self.latencies, 0.5) * 1e3:8.1f} {_percentile(self.latencies, 0.99) * 1e3:9.1f} "
                f"{hostile} {self.throughput:8.1f}")


def run_ours(workload: list[tuple[str, str, str, bool | None]], mix: str, system: str) -> Row:
    env = gym.make("QEDMath-v0", problem_types=["answer", "multi_step"])
    env.unwrapped._verifier.wait_ready(120)  # time the grading, not the pool's interpreter start
    row = Row(system, mix)
    start = time.perf_counter()
    for pid, _gold, text, expected in workload:
        env.reset(options={"problem_id": pid})
        t = time.perf_counter()
        _, _, _, _, info = env.step(text)
        row.add(time.perf_counter() - t, expected, info["verdict"] == "correct")
    row.wall = time.perf_counter() - start
    env.close()
    return row


def run_gem(workload: list[tuple[str, str, str, bool | None]], mix: str) -> Row:
    import logging

    from datasets import Dataset
    from gem.envs.math_env import MathEnv

    logging.disable(logging.WARNING)  # GEM logs every reset and timeout

    rows = [{"problem": pid, "answer": gold} for pid, gold, _, _ in workload]
    env = MathEnv(dataset=Dataset.from_list(rows), eval=True)
    env.mp_pool.apply(int, ("1",))  # the pool's process is up
    row = Row("GEM MathEnv (1 s timeout)", mix)
    start = time.perf_counter()
    for i, (_pid, _gold, text, expected) in enumerate(workload):
        env.reset(idx=i)
        t = time.perf_counter()
        _, reward, _, _, _ = env.step(text)
        row.add(time.perf_counter() - t, expected, reward == 1.0)
    row.wall = time.perf_counter() - start
    env.mp_pool.terminate()
    return row


def run_openenv(workload: list[tuple[str, str, str, bool | None]], mix: str, service_file: str) -> Row:
    import asyncio
    import importlib

    # by module name from its own directory: its spawned workers import it again to unpickle the task
    folder, name = os.path.split(os.path.abspath(service_file))
    if not name.endswith(".py") or not os.path.isfile(service_file):
        raise SystemExit(f"--openenv-qed: expected the path of math_verify_service.py, got {service_file!r}")
    sys.path.insert(0, folder)
    module = importlib.import_module(name[:-3])

    async def grade_all() -> Row:
        service = module.MathVerifierService()
        await service.start()
        await service.verify_answer(prediction=r"\boxed{1}", gold="1")  # the pool's processes are up
        row = Row("OpenEnv math_verify service", mix)
        start = time.perf_counter()
        for _pid, gold, text, expected in workload:
            t = time.perf_counter()
            response = await service.verify_answer(prediction=text, gold=gold)
            row.add(time.perf_counter() - t, expected, response.status == "correct")
        row.wall = time.perf_counter() - start
        await service.stop()
        return row

    return asyncio.run(grade_all())


def run_reasoning_gym(n: int, every: int, mix: str) -> list[Row]:
    import reasoning_gym

    dataset = reasoning_gym.create_dataset("simple_integration", seed=5, size=n)
    items = [dataset[i] for i in range(n)]
    work = []
    for i, item in enumerate(items):
        v = item["metadata"]["variable"]
        if every and (i + 1) % every == 0:
            work.append((i, RG_HOSTILE.format(v=v), None))
        elif i % 2 == 0:
            work.append((i, item["answer"], True))
        else:
            work.append((i, f"({item['answer']})*{v}", False))  # +1 would be another antiderivative
    env = gym.make("ReasoningGym-v0", dataset="simple_integration", seed=5, size=n)
    env.reset(options={"index": 0})
    env.step(f"<answer>{items[0]['answer']}</answer>")  # the sandbox pool is up
    ours = Row("ours ReasoningGym-v0", mix)
    start = time.perf_counter()
    for index, answer, expected in work:
        env.reset(options={"index": index})
        t = time.perf_counter()
        _, reward, _, _, _ = env.step(f"<answer>{answer}</answer>")
        ours.add(time.perf_counter() - t, expected, reward == 1.0)
    ours.wall = time.perf_counter() - start
    env.close()
    direct = Row("rg score_answer, honest only", mix)
    start = time.perf_counter()
    for index, answer, expected in work:
        if expected is None:
            continue  # in process and unbounded: not run
        t = time.perf_counter()
        score = dataset.score_answer(answer, items[index])
        direct.add(time.perf_counter() - t, expected, score == 1.0)
    direct.wall = time.perf_counter() - start
    return [ours, direct]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=60)
    parser.add_argument("--mixes", default="0,50,12,4", help="towers every k-th answer; 0: all honest")
    parser.add_argument("--no-check", action="store_true", help="grade without the static cost bound's check (grading.cost)")
    parser.add_argument("--no-gem", action="store_true")
    parser.add_argument("--no-reasoning-gym", action="store_true")
    parser.add_argument("--no-qed", action="store_true", help="only the ReasoningGym-v0 rows")
    parser.add_argument("--openenv-qed", default=os.environ.get("OPENENV_QED_SERVICE"), metavar="FILE",
                        help="OpenEnv's envs/qed_math_env/server/math_verify_service.py, run as a third system")
    args = parser.parse_args(argv)
    if args.no_check:
        import gym_integrity.envs.reasoning_gym.sandbox as sandbox
        import gym_integrity.services.verifier as verifier

        verifier.refusal = lambda text, **kwargs: None  # type: ignore[assignment]
        sandbox.cost = type("NoCheck", (), {"refusal": staticmethod(lambda text, **kwargs: None)})
    system = "ours QEDMath-v0" + (" (no check)" if args.no_check else "")
    mixes = [int(k) for k in args.mixes.split(",")]
    rows: list[Row] = []
    header = (f"{'system':<28} {'mix':<10} {'honest':>7} {'wall s':>8} {'p50 ms':>8} {'p99 ms':>9} "
              f"{'tower p50':>9} {'answers/s':>8}")
    print(f"{args.answers} answers per mix, one env, default settings; pool dir {os.environ.get('GYM_INTEGRITY_POOL_DIR')}")
    print(header)
    by_mix: dict[int, dict[str, Row]] = {}
    for every in [] if args.no_qed else mixes:
        mix = f"1-in-{every}" if every else "honest"
        workload = qed_workload(args.answers, every)
        runners: list[tuple[str, Callable[[], Row]]] = [("ours", lambda: run_ours(workload, mix, system))]
        if not args.no_gem:
            runners.append(("gem", lambda: run_gem(workload, mix)))
        if args.openenv_qed:
            runners.append(("openenv", lambda: run_openenv(workload, mix, args.openenv_qed)))
        for key, run in runners:
            row = run()
            by_mix.setdefault(every, {})[key] = row
            rows.append(row)
            print(row.line(), flush=True)
    if not args.no_reasoning_gym:
        for every in mixes:
            for row in run_reasoning_gym(args.answers, every, f"1-in-{every}" if every else "honest"):
                print(row.line(), flush=True)
    if not args.openenv_qed:
        print("OpenEnv's math_verify service: no --openenv-qed file given, skipped")
    honest = by_mix.get(0, {}).get("ours")
    print("\nratios (throughput)")
    for every, row in by_mix.items():
        ours = row["ours"]
        parts = [f"{'1-in-' + str(every) if every else 'honest':<10}"]
        if honest is not None:
            parts.append(f"ours / ours all-honest {ours.throughput / honest.throughput:5.2f}")
        if "gem" in row:
            parts.append(f"ours / GEM {ours.throughput / row['gem'].throughput:5.2f}")
        if "openenv" in row:
            parts.append(f"ours / OpenEnv {ours.throughput / row['openenv'].throughput:5.2f}")
        print("  ".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())

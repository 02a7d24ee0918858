"""FinQA-v0 speed: tool steps per second of a scripted policy, and gym.make cost on a 10,000-question data set.

Part 1, steps/s: a scripted policy (get_descriptions, get_table_info,
sql_query, submit_answer) on the shipped data, through gym.make with the full
stack vs the raw env, side by side in alternating rounds; also the cost of one
sandboxed SQL query alone.

Part 2, make: a generated FinQA-benchmark root (10,000 questions, 200
companies x 5 tables) on disk. Reports the cold load (the first make in the
process), then the make time and the traced memory per instance as the number
of live instances grows (target: flat, not growing with the instance count),
against a baseline that reloads the data for every instance.

    python benchmarks/bench_finqa.py [--episodes 300] [--rounds 5] [--instances 1000]
"""

from __future__ import annotations

import argparse
import csv
import gc
import json
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path

import gymnasium as gym

import gym_integrity  # noqa: F401  (registers the ids)
from gym_integrity.envs.finqa import FinQAEnv
from gym_integrity.envs.finqa.data import clear_dataset_cache, load_dataset_cached
from gym_integrity.envs.finqa.sql_engine import SQLSandbox
from gym_integrity.envs.finqa.sql_sandbox import PooledSQLSandbox, acquire_sql_pool

# ---------------------------------------------------------------- part 1: steps per second


def scripted_episode(env: gym.Env, seed: int) -> int:
    _, info = env.reset(seed=seed)
    company = info["company"]
    tables = json.loads(env.step({"tool": "get_descriptions", "arguments": {"company_name": company}})[0])
    table = tables[0]
    info_text = env.step({"tool": "get_table_info", "arguments": {"company_name": company, "table_name": table}})[0]
    first = json.loads(info_text)["column_names"]
    query = f'SELECT "{first[0]}", "{first[-1]}" FROM {table} WHERE "{first[0]}" IS NOT NULL'
    env.step({"tool": "sql_query", "arguments": {"company_name": company, "table_name": table, "query": query}})
    answer = env.unwrapped.gold_answers()[0]
    env.step(env.unwrapped.format_submission(answer))
    return 4


def steps_per_second(env: gym.Env, episodes: int, seed0: int) -> float:
    start = time.perf_counter()
    steps = sum(scripted_episode(env, seed0 + i) for i in range(episodes))
    return steps / (time.perf_counter() - start)


def bench_steps(episodes: int, rounds: int) -> None:
    stacked, raw = gym.make("FinQA-v0"), FinQAEnv()
    steps_per_second(stacked, 30, 0), steps_per_second(raw, 30, 0)   # warm-up
    raw_rates, stacked_rates = [], []
    for r in range(rounds):
        raw_rates.append(steps_per_second(raw, episodes, 1000 * (r + 1)))
        stacked_rates.append(steps_per_second(stacked, episodes, 1000 * (r + 1)))
    raw_median, stacked_median = statistics.median(raw_rates), statistics.median(stacked_rates)
    print(f"FinQA-v0 scripted policy (describe, inspect, query, submit), {episodes} episodes x {rounds} rounds")
    print(f"  raw env               : {raw_median:9.0f} steps/s  (median; min {min(raw_rates):.0f}, max {max(raw_rates):.0f})")
    print(f"  gym.make + full stack : {stacked_median:9.0f} steps/s  (median; min {min(stacked_rates):.0f}, max {max(stacked_rates):.0f})")
    print(f"  stacked / raw         : {stacked_median / raw_median:.3f}")

    dataset = load_dataset_cached(None)
    table = dataset.tables[("northwind_foods", "nwf_ConsolidatedStatementsOfIncomeTableTextBlock")]
    query = f"SELECT \"2024\" FROM {table.name} WHERE line_item = 'net_revenue'"
    pool = acquire_sql_pool()
    pool.wait_ready()
    for label, box in (("in process (layers 1-4)", SQLSandbox()), ("on a pool worker (the env's)", PooledSQLSandbox())):
        n = 2000
        box.run(table, query)
        start = time.perf_counter()
        for _ in range(n):
            box.run(table, query)
        per_query = (time.perf_counter() - start) / n
        print(f"  one sandboxed query, {label} (fresh :memory: db, 9x4 table): {per_query * 1e6:.0f} us")
    pool.release()


# ---------------------------------------------------------------- part 2: make time and memory


def generate_dataset(root: Path, questions: int = 10_000, companies: int = 200, tables_per_company: int = 5) -> None:
    """A FinQA-benchmark root with synthetic companies, tables and questions."""
    years = ["2024", "2023", "2022"]
    cleaned = {}
    (root / "benchmark_questions").mkdir(parents=True)
    for c in range(companies):
        company = f"company_{c:04d}"
        (root / "input_companies" / company).mkdir(parents=True)
        for t in range(tables_per_company):
            name = f"gen_Table{t}TextBlock"
            table = {"line_item": {str(i): f"item_{i}" for i in range(10)}}
            for k, y in enumerate(years):
                table[y] = {str(i): f"${(c + 1) * (t + 1) * (i + 1) * (k + 3):,}" for i in range(10)}
            text = json.dumps(table)
            (root / "input_companies" / company / f"{name}.json").write_text(text)
            cleaned[f"{company}/{name}"] = {"table": text, "description": f"generated table {t} of {company}",
                                            "column_names": list(table), "unique_vals_per_col": {}, "company": company}
    (root / "input_companies" / "tables_cleaned_all_companies.json").write_text(json.dumps(cleaned))
    with open(root / "benchmark_questions" / "finqa.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "user_query", "company", "question", "answer", "question_type", "explanation"])
        for q in range(questions):
            company = f"company_{q % companies:04d}"
            writer.writerow([f"g{q}", f"What was item_{q % 10} in 2024 for {company}?", company,
                             f"item_{q % 10} 2024", str(q), "lookup", "generated"])


def bench_make(instances: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "finqa10k"
        start = time.perf_counter()
        generate_dataset(root)
        print(f"\nFinQA-v0 gym.make on a generated data set: 10,000 questions, 200 companies x 5 tables "
              f"(generated in {time.perf_counter() - start:.2f} s)")
        clear_dataset_cache()
        gc.collect()
        tracemalloc.start()
        start = time.perf_counter()
        first = gym.make("FinQA-v0", data_path=str(root))
        cold = time.perf_counter() - start
        dataset_bytes = tracemalloc.get_traced_memory()[0]
        print(f"  cold: first make (loads and indexes the data)   {cold * 1e3:8.1f} ms, {dataset_bytes / 2**20:6.1f} MiB traced")

        envs = [first]
        checkpoints = sorted({10, 100, instances})
        last_n, last_mem, last_time = 1, tracemalloc.get_traced_memory()[0], 0.0
        print(f"  {'instances':>10} {'make ms/instance (window)':>26} {'KiB/instance (window)':>22}")
        for target in checkpoints:
            start = time.perf_counter()
            while len(envs) < target:
                env = gym.make("FinQA-v0", data_path=str(root))
                env.reset(seed=len(envs))
                envs.append(env)
            elapsed = time.perf_counter() - start
            mem = tracemalloc.get_traced_memory()[0]
            added = target - last_n
            print(f"  {target:>10} {elapsed / added * 1e3:26.3f} {(mem - last_mem) / added / 1024:22.1f}")
            last_n, last_mem = target, mem
        shared = len({id(e.unwrapped.dataset) for e in envs})
        print(f"  {len(envs)} live instances share {shared} dataset object(s)")
        tracemalloc.stop()

        # Baseline: what per-instance loading (no process cache) would cost.
        del envs
        gc.collect()
        n_base, start = 5, time.perf_counter()
        for _ in range(n_base):
            clear_dataset_cache()
            gym.make("FinQA-v0", data_path=str(root))
        baseline = (time.perf_counter() - start) / n_base
        start = time.perf_counter()
        for _ in range(50):
            gym.make("FinQA-v0", data_path=str(root))
        warm = (time.perf_counter() - start) / 50
        print(f"  baseline: reload per instance {baseline * 1e3:.1f} ms/make vs cached {warm * 1e3:.3f} ms/make "
              f"(x{baseline / warm:.0f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--instances", type=int, default=1000)
    args = parser.parse_args()
    bench_steps(args.episodes, args.rounds)
    bench_make(args.instances)


if __name__ == "__main__":
    main()

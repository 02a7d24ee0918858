"""Benchmark of the machine grading pool: an async vector env of 8 QEDMath-v0 envs beside the threaded vector env.

For each pool scope (``process``: a pool per process, the opt-out of the machine
pool; ``machine``: one pool server per machine, the default), each vector env
runs in a fresh Python process:

- async: ``gym.make_vec("QEDMath-v0", 8, vectorization_mode="async",
  vector_kwargs=ASYNC_VECTOR_KWARGS, problem_types=["answer"])``;
- threaded: ``make_threaded_vec("QEDMath-v0", 8, problem_types=["answer"])``;

and the table gives, on the same work (8 correct boxed answers per step, one
problem per batch):

- processes: the env sub-processes, the pool servers and the workers (the
  trainer's own process is counted apart, as ``+1``);
- RSS: the sum over every one of them, the trainer's process and the pool
  server included (PSS beside it: RSS counts the pages forked sub-processes
  share with their parent once per process);
- first step: from the ``make_vec`` call to the return of the first step whose
  8 answers are all graded, with the pool already warm (another client holds
  the machine's pool ready, as a trainer's earlier batches would; a pool per
  process cannot be warm for sub-processes that do not exist yet);
- graded steps/s: answers graded per second over ``--rounds`` reset+step rounds.

Then the bounds, for the async env on the machine pool:
processes <= 8 + the pool's processes (server + workers), RSS <= 1 GB in all,
first graded step <= 2 s from a warm pool.

Run: ``python benchmarks/bench_pool_machine.py [--rounds 20] [--scopes process machine] [--repeats 1]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

NUM_ENVS = 8
MB = 1 << 20


# --------------------------------------------------------------------------- process accounting


def _children(pid: int) -> list[int]:
    """Every descendant of ``pid`` (psutil if installed, else /proc)."""
    try:
        import psutil

        try:
            return [p.pid for p in psutil.Process(pid).children(recursive=True)]
        except psutil.NoSuchProcess:
            return []
    except ImportError:
        parents: dict[int, list[int]] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as handle:
                        ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue
                parents.setdefault(ppid, []).append(int(entry))
        out, todo = [], [pid]
        while todo:
            kids = parents.get(todo.pop(), [])
            out += kids
            todo += kids
        return out


def _memory(pid: int) -> tuple[float, float]:
    """``(rss, pss)`` of ``pid`` in bytes (pss from /proc/<pid>/smaps_rollup; rss if unreadable)."""
    rss = pss = 0.0
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    rss = float(line.split()[1]) * 1024
        pss = rss
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    pss = float(line.split()[1]) * 1024
    except OSError:
        pass
    return rss, pss


def _pool_pids(pools: list[Any]) -> tuple[set[int], set[int]]:
    """``(servers, workers)`` of the given pools (a machine pool's server and its workers, or in-process workers)."""
    servers, workers = set(), set()
    for pool in pools:
        server = getattr(pool, "server_pid", lambda: None)()
        if server:
            servers.add(server)
            workers |= set(_children(server))
        else:
            workers |= set(pool.worker_pids())
    return servers, workers


# --------------------------------------------------------------------------- one measurement (in a fresh process)


def _answers(envs: Any, kind: str) -> Any:
    import numpy as np

    if kind == "threaded":
        gold = envs.envs[0].unwrapped.gold_answers()[0]
    else:
        gold = envs.call("gold_answers")[0][0]
    return np.array([f"\\boxed{{{gold}}}"] * NUM_ENVS, dtype=object)


def measure(kind: str, rounds: int) -> dict[str, Any]:
    """Make the vector env, time its first graded step, count its processes and memory, then its steps/s."""
    import gymnasium as gym

    import gym_integrity
    from gym_integrity.workers import pool_scope
    from gym_integrity.services.verifier import VerifierConfig, get_verifier
    from gym_integrity.vector import make_threaded_vec

    scope = pool_scope()
    # Warm the pool first: on the machine scope this client keeps the server and its workers up and warm; the
    # threaded env's sub-envs share this process's service either way. A pool per process cannot be warmed for
    # async sub-processes (each starts its own), so none is held there: it would only add 3 idle workers.
    warm = None
    if scope == "machine" or kind == "threaded":
        warm = get_verifier(VerifierConfig()).acquire()
        assert warm.wait_ready(120), "the verifier's workers did not start"

    start = time.perf_counter()
    if kind == "async":
        envs = gym.make_vec("QEDMath-v0", NUM_ENVS, vectorization_mode="async",
                            vector_kwargs=gym_integrity.ASYNC_VECTOR_KWARGS, problem_types=["answer"])
    else:
        envs = make_threaded_vec("QEDMath-v0", NUM_ENVS, problem_types=["answer"])
    made = time.perf_counter() - start
    envs.reset(seed=[0] * NUM_ENVS)
    _, rewards, _, _, infos = envs.step(_answers(envs, kind))
    first = time.perf_counter() - start
    graded = [v for v, nv in zip(infos["verdict"], infos["no_verdict"]) if not nv]
    assert len(graded) == NUM_ENVS and list(rewards) == [1.0] * NUM_ENVS, (infos["verdict"], infos.get("cause"))

    # Processes and memory now, with every sub-env built and graded once.
    me = os.getpid()
    if kind == "async":
        env_pids = {p.pid for p in envs.processes}
    else:
        env_pids = set()
    pools = [warm._pool] if warm is not None else []
    if kind == "threaded":
        pools += [e.unwrapped._verifier._pool for e in envs.envs]
    servers, workers = _pool_pids(pools)
    if kind == "async" and scope == "process":  # each sub-process's own pool: its children
        for pid in env_pids:
            workers |= set(_children(pid))
    counted = env_pids | servers | workers
    rss = pss = 0.0
    for pid in counted | {me}:
        r, p = _memory(pid)
        rss, pss = rss + r, pss + p
    main_rss = _memory(me)[0]

    # Throughput: graded answers per second over reset+step rounds.
    step_start = time.perf_counter()
    for r in range(rounds):
        envs.reset(seed=[r + 1] * NUM_ENVS)
        _, rewards, _, _, infos = envs.step(_answers(envs, kind))
        assert not any(infos["no_verdict"]), infos.get("cause")
    per_second = rounds * NUM_ENVS / (time.perf_counter() - step_start)
    envs.close()
    config = VerifierConfig()
    if warm is not None:
        warm.release()
    return {"kind": kind, "scope": scope, "env_processes": len(env_pids), "servers": len(servers),
            "workers": len(workers), "processes": len(counted), "rss_mb": rss / MB, "pss_mb": pss / MB,
            "main_rss_mb": main_rss / MB, "make_s": made, "first_step_s": first, "graded_per_s": per_second,
            "pool_processes": (1 if scope == "machine" else 0) + config.processes}


def _run_one(kind: str, scope: str, rounds: int, pool_dir: str) -> dict[str, Any]:
    env = dict(os.environ, GYM_INTEGRITY_POOL_SCOPE=scope, GYM_INTEGRITY_POOL_DIR=pool_dir)
    result = subprocess.run([sys.executable, __file__, "--one", kind, "--rounds", str(rounds)], env=env,
                            capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise RuntimeError(f"{kind}/{scope} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def report(args: argparse.Namespace, pool_dir: str) -> None:
    """Every row, each in a fresh process, then the bounds."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"== {NUM_ENVS} QEDMath-v0 answer envs, async vs threaded vector env, per pool scope "
          f"({os.cpu_count()} cores, load average {load:.1f}; medians of {args.repeats})")
    print(f"{'vector env':<12}{'scope':<9}{'processes':>10}{'(env+server+workers)':>22}{'RSS MB':>9}{'PSS MB':>9}"
          f"{'first step s':>14}{'graded/s':>10}")
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for scope in args.scopes:
        for kind in ("async", "threaded"):
            runs = [_run_one(kind, scope, args.rounds, pool_dir) for _ in range(args.repeats)]
            row = {k: (statistics.median(r[k] for r in runs) if isinstance(runs[0][k], (int, float)) else runs[0][k])
                   for k in runs[0]}
            rows[(kind, scope)] = row
            split = f"{row['env_processes']:.0f}+{row['servers']:.0f}+{row['workers']:.0f} (+1)"
            print(f"{kind:<12}{scope:<9}{row['processes']:>10.0f}{split:>22}{row['rss_mb']:>9.0f}"
                  f"{row['pss_mb']:>9.0f}{row['first_step_s']:>14.2f}{row['graded_per_s']:>10.1f}")
    if ("async", "machine") in rows:
        row = rows[("async", "machine")]
        bound = NUM_ENVS + row["pool_processes"]
        checks = [
            (f"processes {row['processes']:.0f} <= {NUM_ENVS} + {row['pool_processes']:.0f} (the pool: server and "
             f"workers)", row["processes"] <= bound),
            (f"RSS {row['rss_mb']:.0f} MB <= 1024 MB in all (trainer process included)", row["rss_mb"] <= 1024),
            (f"first graded step {row['first_step_s']:.2f} s <= 2 s from a warm pool", row["first_step_s"] <= 2.0),
        ]
        print("\n== bounds (async vector env, machine pool)")
        for text, ok in checks:
            print(f"  {'ok  ' if ok else 'FAIL'} {text}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="reset+step rounds for graded steps/s")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each row (medians shown)")
    parser.add_argument("--scopes", nargs="+", default=["process", "machine"], choices=["process", "machine"])
    parser.add_argument("--one", choices=["async", "threaded"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.rounds)))
        return

    pool_dir = tempfile.mkdtemp(prefix="gi-bench-")  # a pool directory of the benchmark's own
    try:
        report(args, pool_dir)
    finally:
        shutil.rmtree(pool_dir, ignore_errors=True)  # removing a server's socket file stops it at once


if __name__ == "__main__":
    main()

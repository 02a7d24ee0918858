"""Builds ``draw_plans.json``: the draw plan of every dataset's default configuration (see ``draw_plans.py``).

Run nice'd; each dataset is built in a process of its own (``--jobs`` at a time), and the file is written after
each, so an interrupted build resumes where it stopped::

    nice python -m gym_integrity.envs.reasoning_gym.plan_builder --jobs 2            # every dataset not yet built
    nice python -m gym_integrity.envs.reasoning_gym.plan_builder --jobs 2 --force    # every dataset
    nice python -m gym_integrity.envs.reasoning_gym.plan_builder gcd maze            # those, built again
    nice python -m gym_integrity.envs.reasoning_gym.plan_builder --reprobe           # only probe them again

Plans are built with ``PYTHONHASHSEED=0``; then each new plan's probe is taken again in processes with other hash
seeds, and a generator whose items differ there ships unprobed (``draw_plans.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from gym_integrity.envs.reasoning_gym.draw_plans import (
    PLANS_FILE,
    PROBE_ITEMS,
    build,
    fingerprint,
    from_json,
    probe,
    sample_indices,
    to_json,
)

__all__ = ["build_entry", "main"]

_MODULE = "gym_integrity.envs.reasoning_gym.plan_builder"
#: The hash seed plans are built with (knight_swap's items depend on it: a build is then repeatable), and those the
#: plans are probed again with (each in a process of its own).
BUILD_HASH_SEED = "0"
PROBE_HASH_SEEDS = ("1", "2", "3", "4", "5")


def _env(name: str) -> Any:
    from gym_integrity.envs.reasoning_gym.env import ReasoningGymEnv

    return ReasoningGymEnv(dataset=name, allow_above_chance=True)  # the raw env gym.make("ReasoningGym-v0") wraps


def build_entry(name: str) -> dict[str, Any]:
    """The shipped entry of one dataset: its generator key, plan and probe (built here, in this process)."""
    env = _env(name)
    try:
        plan = build(env._sample_item, env.size, env._pays)
        indices = sample_indices(env.size)[:PROBE_ITEMS]
        return {
            "key": env._key,
            "plan": to_json(plan),
            "probe": [[i, *probe(plan, env._sample_item, i)] for i in indices],
        }
    finally:
        env.close()


def probe_entries(entries: dict[str, dict[str, Any]]) -> dict[str, list[list[Any]]]:
    """Each entry's probe, taken again in this process (not the one that built it)."""
    probes = {}
    for name, entry in entries.items():
        env = _env(name)
        try:
            plan = from_json(entry["plan"])
            probes[name] = [[i, *probe(plan, env._sample_item, i)] for i, _, _ in entry["probe"]]
        finally:
            env.close()
    return probes


def _child(mode: str, hash_seed: str, timeout_s: float, payload: Any) -> tuple[Any, str]:
    """Runs ``--build-one NAME`` or ``--probe-all`` in a child process with this ``PYTHONHASHSEED`` (the payload and
    the result go through a file): its result, or None and why not."""
    with tempfile.TemporaryDirectory(prefix="draw-plan-") as tmp:
        path = Path(tmp) / "payload.json"
        path.write_text(json.dumps(payload), encoding="utf-8")
        try:
            done = subprocess.run(
                [sys.executable, "-m", _MODULE, mode, "--to", str(path)],
                capture_output=True,
                text=True,
                timeout=timeout_s,
                env={**os.environ, "PYTHONHASHSEED": hash_seed},
            )
        except subprocess.TimeoutExpired:
            return None, f"over {timeout_s:.0f} s"
        if done.returncode != 0:
            return None, f"{done.stderr.strip().splitlines()[-1:] or done.returncode}"
        return json.loads(path.read_text(encoding="utf-8")), ""


def _build_in_child(name: str, timeout_s: float) -> tuple[str, dict[str, Any] | None, str]:
    start = time.monotonic()
    entry, why = _child("--build-one", BUILD_HASH_SEED, timeout_s, name)
    return name, entry, why or f"{time.monotonic() - start:.1f} s"


def reprobe(plans: dict[str, dict[str, Any]], names: list[str], jobs: int, timeout_s: float) -> list[str]:
    """Probes these entries again in one process per hash seed of ``PROBE_HASH_SEEDS``; an entry any of them sees
    otherwise is a generator whose items are not a function of their index (codeio's; knight_swap's with the hash
    seed): its probe is dropped and it is marked ``"reproducible": false``. Returns those names."""
    entries = {name: plans[name] for name in names if plans[name]["probe"]}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        seen = list(pool.map(lambda seed: _child("--probe-all", seed, timeout_s, entries), PROBE_HASH_SEEDS))
    if any(probes is None for probes, _ in seen):
        sys.exit(f"probing again failed: {[why for probes, why in seen if probes is None]}")
    unstable = sorted(name for name in entries if any(probes[name] != entries[name]["probe"] for probes, _ in seen))
    for name in unstable:
        plans[name] = {**plans[name], "probe": [], "reproducible": False}
    return unstable


def write(path: Path, plans: dict[str, dict[str, Any]]) -> None:
    """The file: the fingerprint, then one line per dataset (small diffs when one plan changes)."""
    lines = [
        f"  {json.dumps(name)}: {json.dumps(plans[name], sort_keys=True, ensure_ascii=False)}" for name in sorted(plans)
    ]
    text = '{\n "fingerprint": ' + json.dumps(fingerprint(), sort_keys=True) + ',\n "plans": {\n'
    path.write_text(text + ",\n".join(lines) + "\n }\n}\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="datasets to build again (default: every dataset not yet built)")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--force", action="store_true", help="build every dataset again")
    parser.add_argument("--out", type=Path, default=PLANS_FILE)
    parser.add_argument("--timeout-s", type=float, default=3600.0, help="per dataset")
    parser.add_argument("--reprobe", action="store_true", help="only probe the file's plans again (no build)")
    parser.add_argument("--build-one", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--probe-all", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--to", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.build_one or args.probe_all:  # a child: reads its payload from the file and writes its result there
        payload = json.loads(args.to.read_text(encoding="utf-8"))
        result = build_entry(payload) if args.build_one else probe_entries(payload)
        args.to.write_text(json.dumps(result), encoding="utf-8")
        return
    from gym_integrity.envs.reasoning_gym.config import available_datasets

    plans: dict[str, dict[str, Any]] = {}
    if args.out.exists() and not args.force:
        data = json.loads(args.out.read_text(encoding="utf-8"))
        if data.get("fingerprint") == fingerprint():
            plans = dict(data["plans"])
    if args.reprobe:
        unstable = reprobe(plans, args.names or sorted(plans), args.jobs, args.timeout_s)
        write(args.out, plans)
        print(f"items differ by process (shipped unprobed): {unstable}")
        return
    todo = args.names or [name for name in available_datasets() if args.force or name not in plans]
    print(f"building {len(todo)} plans, {args.jobs} at a time, into {args.out}", flush=True)
    failed = []
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(_build_in_child, name, args.timeout_s) for name in todo]
        for future in as_completed(futures):
            name, entry, note = future.result()
            print(f"{name}: {'ok' if entry else 'FAILED'} ({note})", flush=True)
            if entry is None:
                failed.append(name)
                continue
            plans[name] = entry
            write(args.out, plans)
    built = [name for name in todo if name not in failed]
    print(f"items differ by process (shipped unprobed): {reprobe(plans, built, args.jobs, args.timeout_s)}")
    write(args.out, plans)
    if failed:
        sys.exit(f"not built (their plans are built at first reset): {', '.join(failed)}")


if __name__ == "__main__":
    main()

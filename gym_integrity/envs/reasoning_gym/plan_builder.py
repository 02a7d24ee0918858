"""Builds ``draw_plans.json``: the draw plan of every dataset's default configuration (see ``draw_plans.py``).

Run nice'd; each dataset is built in a process of its own (``--jobs`` at a time), and the file is written after
each, so an interrupted build resumes where it stopped::

    nice python -m gym_integrity.envs.reasoning_gym.plan_builder --jobs 2            # every dataset not yet built
    nice python -m gym_integrity.envs.reasoning_gym.plan_builder --jobs 2 --force    # every dataset
    nice python -m gym_integrity.envs.reasoning_gym.plan_builder gcd maze            # those, built again
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


def _env(name: str) -> Any:
    from gym_integrity.envs.reasoning_gym.env import ReasoningGymEnv

    return ReasoningGymEnv(dataset=name, allow_above_chance=True)  # the raw env gym.make("ReasoningGym-v0") wraps


def build_entry(name: str) -> dict[str, Any]:
    """The shipped entry of one dataset: its generator key, plan and probe (built here, in this process)."""
    env = _env(name)
    try:
        plan = build(env._sample_item, env.size)
        indices = sample_indices(env.size)[:PROBE_ITEMS]
        return {
            "key": env._key,
            "plan": to_json(plan),
            "probe": [[i, *probe(plan, env._sample_item, i)] for i in indices],
        }
    finally:
        env.close()


def probe_entry(name: str, entry: dict[str, Any]) -> list[list[Any]]:
    """The entry's probe, taken again in this process (another process than the one that built it)."""
    env = _env(name)
    try:
        plan = from_json(entry["plan"])
        return [[i, *probe(plan, env._sample_item, i)] for i, _, _ in entry["probe"]]
    finally:
        env.close()


def _child(mode: str, name: str, hash_seed: str, timeout_s: float, entry: Any = None) -> tuple[Any, str]:
    """Runs ``--build``/``--probe`` of one dataset in a child process (with this ``PYTHONHASHSEED``): its result, or
    None and why not."""
    with tempfile.TemporaryDirectory(prefix="draw-plan-") as tmp:
        out = Path(tmp) / "out.json"
        if entry is not None:
            out.write_text(json.dumps(entry), encoding="utf-8")
        try:
            done = subprocess.run(
                [sys.executable, "-m", _MODULE, mode, name, "--to", str(out)],
                capture_output=True,
                text=True,
                timeout=timeout_s,
                env={**os.environ, "PYTHONHASHSEED": hash_seed},
            )
        except subprocess.TimeoutExpired:
            return None, f"over {timeout_s:.0f} s"
        if done.returncode != 0:
            return None, f"{done.stderr.strip().splitlines()[-1:] or done.returncode}"
        return json.loads(out.read_text(encoding="utf-8")), ""


def _build_in_child(name: str, timeout_s: float) -> tuple[str, dict[str, Any] | None, str]:
    """One dataset's entry, built in one child and probed again in another with another hash seed: a generator
    whose items differ between processes (codeio's; knight_swap's with the hash seed) gets no probe, marked."""
    start = time.monotonic()
    entry, why = _child("--build-one", name, "0", timeout_s)
    if entry is None:
        return name, None, why
    again, why = _child("--probe-one", name, "1", timeout_s, entry)
    if again is None:
        return name, None, f"probe: {why}"
    if again != entry["probe"]:  # the items are not a function of the index alone: nothing to probe
        entry = {**entry, "probe": [], "reproducible": False}
    return name, entry, f"{time.monotonic() - start:.1f} s{'' if entry['probe'] else ', items differ by process'}"


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
    parser.add_argument("--build-one", help=argparse.SUPPRESS)
    parser.add_argument("--probe-one", help=argparse.SUPPRESS)
    parser.add_argument("--to", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.build_one:  # a child: one dataset, written where the parent reads it
        args.to.write_text(json.dumps(build_entry(args.build_one)), encoding="utf-8")
        return
    if args.probe_one:
        entry = json.loads(args.to.read_text(encoding="utf-8"))
        args.to.write_text(json.dumps(probe_entry(args.probe_one, entry)), encoding="utf-8")
        return
    from gym_integrity.envs.reasoning_gym.config import available_datasets

    plans: dict[str, dict[str, Any]] = {}
    if args.out.exists() and not args.force:
        data = json.loads(args.out.read_text(encoding="utf-8"))
        if data.get("fingerprint") == fingerprint():
            plans = dict(data["plans"])
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
    if failed:
        sys.exit(f"not built (their plans are built at first reset): {', '.join(failed)}")


if __name__ == "__main__":
    main()

"""Benchmark: the full `gym-integrity audit` of every registered id, stacked and raw, isolated vs in-process.

Prints the wall-clock time of each run, per-target times, and the ratio of the
default mode (each target in its own process, one per core) to the baseline
(every target one after another in this process). Target: the full stacked
audit in under 60 s on 2 cores. ``--sweep`` instead times
``gym-integrity audit ReasoningGym-v0 --all-datasets`` (the grader probes on
every reasoning-gym dataset) and lists the slowest datasets.

    python benchmarks/bench_audit.py [--seeds 0 1 2] [--workers N] [--sweep]
"""

from __future__ import annotations

import argparse
import os
import time

import gym_integrity  # noqa: F401  (registers the ids)
from gym_integrity.audit import AuditSettings, check_integrity, probe_names
from gym_integrity.audit.grader_probes import GRADER_PROBES
from gym_integrity.audit.isolate import IsolatedTarget, run_isolated
from gym_integrity.audit.targets import audit_targets, dataset_targets, start_judge_stub
from gym_integrity.registration import REGISTERED


def _isolated(targets, settings, workers, probes=None):
    start = time.perf_counter()
    reports = run_isolated([IsolatedTarget(t.env_id, t.kwargs, t.raw, t.name, probes=t.probes) for t in targets],
                           probes or probe_names(), settings, workers=workers)
    return time.perf_counter() - start, reports


def _sweep(settings, workers) -> None:
    """Every reasoning-gym dataset, the grader probes, as `--all-datasets` runs them."""
    targets = dataset_targets(raw=False, compare=False)
    seconds, reports = _isolated(targets, settings, workers, list(GRADER_PROBES))
    _summary(f"sweep of {len(targets)} datasets", seconds, reports)
    failed = [r for r in reports if r.verdict.value == "fail"]
    inconclusive = [r.env_id for r in reports if r.verdict.value == "inconclusive"]
    print(f"\n{len(failed)} of {len(reports)} datasets failed a probe, {len(inconclusive)} inconclusive "
          f"{inconclusive}; probe failures: "
          + ", ".join(f"{p} {sum(1 for r in reports for x in r.results if x.probe == p and x.failed)}"
                      for p in GRADER_PROBES))
    print("slowest datasets:")
    for report in sorted(reports, key=lambda r: -r.duration_s)[:8]:
        slowest = max(report.results, key=lambda r: r.duration_s)
        print(f"  {report.env_id:<48} {report.duration_s:6.2f} s  (slowest probe: {slowest.probe} "
              f"{slowest.duration_s:.2f} s)")


def _in_process(targets, settings):
    start = time.perf_counter()
    reports = [check_integrity(t.factory(), probes=t.probes, settings=settings, raw=t.raw, env_id=t.name)
               for t in targets]
    return time.perf_counter() - start, reports


def _summary(label, seconds, reports):
    failed = sum(1 for r in reports for x in r.results if x.failed)
    episodes = sum(x.episodes for r in reports for x in r.results)
    steps = sum(x.steps for r in reports for x in r.results)
    print(f"{label:<34} {seconds:7.2f} s   {len(reports):2d} targets  {episodes:5d} episodes  {steps:5d} steps  "
          f"{failed:2d} failed probes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--sweep", action="store_true", help="time the --all-datasets sweep instead")
    args = parser.parse_args()
    settings = AuditSettings(seeds=tuple(args.seeds))
    if args.sweep:
        print(f"cores: {os.cpu_count()}; seeds: {args.seeds}; load average: {os.getloadavg()[0]:.2f}")
        _sweep(settings, args.workers)
        return
    ids = [entry.id for entry in REGISTERED]
    print(f"ids: {ids}; cores: {os.cpu_count()}; seeds: {args.seeds}; load average: {os.getloadavg()[0]:.2f}")
    judge = start_judge_stub()
    print(judge.label if judge else "no judge stub: proof mode graded as no-verdicts")
    try:
        stacked = audit_targets(ids, raw=False, compare=False, judge=judge)
        raw = audit_targets(ids, raw=True, compare=False, judge=judge)
        t_iso, r_iso = _isolated(stacked, settings, args.workers)
        t_raw, r_raw = _isolated(raw, settings, args.workers)
        t_seq, r_seq = _in_process(stacked, settings)
    finally:
        if judge:
            judge.stop()
    print()
    _summary("stacked, isolated (the default)", t_iso, r_iso)
    _summary("raw, isolated", t_raw, r_raw)
    _summary("stacked, in-process (baseline)", t_seq, r_seq)
    print(f"\nfull stacked audit: {t_iso:.2f} s (target < 60 s); isolated / in-process = {t_iso / t_seq:.2f}x "
          f"(in-process / isolated speed-up {t_seq / t_iso:.2f}x)")
    print("\nper target (stacked, in-process):")
    for report in r_seq:
        slowest = max(report.results, key=lambda r: r.duration_s)
        print(f"  {report.env_id:<34} {report.duration_s:6.2f} s  (slowest probe: {slowest.probe} "
              f"{slowest.duration_s:.2f} s)")


if __name__ == "__main__":
    main()

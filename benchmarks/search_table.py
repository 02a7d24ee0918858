"""The search probes on every reasoning-gym dataset, before and after strict scoring: the best content-free reward each finds.

Runs ``gym-integrity audit ReasoningGym-v0 --all-datasets`` with the four
search probes twice, side by side in one run: ``scoring="reasoning_gym"``
(every task's own ``score_answer``, what a user gets without strict scoring)
and the default ``scoring="strict"``. For each dataset it prints the best
reward an answer earned above its chance, the probe and answer that earned
it, and how many right guesses the env's ``is_right_answer`` hook vouched for
(counted at chance), then the datasets each mode fails and the wall times.

    python benchmarks/search_table.py [--deep] [--datasets a b ...]
"""

from __future__ import annotations

import argparse
import re
import time
from dataclasses import replace

from gym_integrity.audit import SEARCH_PROBES, AuditSettings, Status
from gym_integrity.audit.isolate import run_isolated
from gym_integrity.audit.search import DEEP_PROBE_TIMEOUT_S
from gym_integrity.audit.targets import dataset_targets

_PAID = re.compile(r"^(?P<family>.+?): (?P<answer>['\"].*?) on seed \d+ .*-> reward (?P<reward>[-0-9.e]+)")
_RIGHT = re.compile(r"^(\d+) paid answer\(s\) the env's is_right_answer\(\)")


def run(scoring: str, deep: bool, datasets: list[str]) -> tuple[dict[str, dict], float]:
    """One sweep (isolated, one process per core, as ``--all-datasets`` runs): per dataset, the best answer paid
    above chance and the right guesses the hook vouched for."""
    targets = [replace(t, kwargs={**t.kwargs, "scoring": scoring})
               for t in dataset_targets(raw=False, compare=False, datasets=datasets or None)]
    settings = AuditSettings(deep=deep, probe_timeout_s=DEEP_PROBE_TIMEOUT_S if deep else 30.0)
    started = time.perf_counter()
    reports = run_isolated([t.isolated(SEARCH_PROBES) for t in targets], list(SEARCH_PROBES), settings)
    elapsed = time.perf_counter() - started
    rows: dict[str, dict] = {}
    for target, report in zip(targets, reports):
        best, right = None, 0
        for result in report.results:
            for line in result.evidence:
                paid = _PAID.match(line) if result.status is Status.FAILED and "; chance" in line else None
                if paid and (best is None or float(paid["reward"]) > best[0]):
                    best = (float(paid["reward"]), result.probe, f"{paid['family']}: {paid['answer'][:40]}")
                vouched = _RIGHT.match(line)
                right += int(vouched.group(1)) if vouched else 0
        rows[str(target.variant)] = {"best": best, "right": right}
    return rows, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deep", action="store_true", help="the probes' --deep budget")
    parser.add_argument("--datasets", nargs="*", default=[], help="only these rows")
    args = parser.parse_args()
    before, before_s = run("reasoning_gym", args.deep, args.datasets)
    after, after_s = run("strict", args.deep, args.datasets)
    print("| dataset | reasoning_gym: best reward above chance (probe, answer) | strict | right guesses (strict) |")
    print("|---|---|---|---|")
    for name in sorted(set(before) | set(after)):
        cells = []
        for rows in (before, after):
            best = rows.get(name, {}).get("best")
            cells.append("none" if best is None else f"{best[0]:g} ({best[1]}, `{best[2]}`)")
        print(f"| {name} | {cells[0]} | {cells[1]} | {after.get(name, {}).get('right', 0)} |")
    for label, rows, seconds in (("reasoning_gym", before, before_s), ("strict", after, after_s)):
        failed = sorted(name for name, row in rows.items() if row["best"] is not None)
        print(f"{label}: {len(failed)} of {len(rows)} datasets paid a content-free answer above chance, "
              f"sweep {seconds:.1f} s")


if __name__ == "__main__":
    main()

"""Running the columns of a `gym-integrity audit`: settings from the arguments, the progress bar, each column
isolated (or in this process), and the JSON file; shared by every kind of target the command audits."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

__all__ = ["audit_columns", "settings_from_args", "write_json"]


def audit_columns(targets: list, probes: list[str], settings: Any, args: argparse.Namespace) -> list:
    """Audit each column under a progress bar: each in its own process, or one after another with --in-process."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
        disable=args.no_progress,
    ) as progress:
        task = progress.add_task(
            "auditing", total=sum(len([p for p in probes if not t.probes or p in t.probes]) for t in targets)
        )
        if args.in_process:
            return _audit_in_process(targets, probes, settings, progress, task)
        from gym_integrity.audit.isolate import run_isolated

        return run_isolated(
            [t.isolated(probes) for t in targets],
            probes,
            settings,
            workers=args.workers,
            on_probe_start=lambda t, p: progress.update(task, description=f"{_shown(t)}: {p}"),
            on_probe_done=lambda t, r: progress.advance(task),
        )


def write_json(args: argparse.Namespace, console: Any, reports: list, total: float, notes: Sequence[str] = ()) -> None:
    """``--json FILE``: the reports, the run's time and notes."""
    from gym_integrity.audit.report import reports_to_json

    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            fh.write(reports_to_json(reports, total_s=total, notes=list(notes)))
        console.print(f"JSON report written to {args.json}")


def settings_from_args(args: argparse.Namespace, console: Any, probes: list[str]) -> Any:
    """The run's settings from the arguments, or None after printing why the probes or workers are wrong."""
    from gym_integrity.audit.probes import PROBES
    from gym_integrity.audit.search import DEEP_PROBE_TIMEOUT_S
    from gym_integrity.audit.session import AuditSettings

    bad_probes = [p for p in probes if p not in PROBES]
    if bad_probes:
        console.print(f"[red]unknown probe(s) {bad_probes}[/]; valid: {list(PROBES)}")
        return None
    if args.workers is not None and args.workers < 1:
        console.print(f"[red]--workers must be >= 1, got {args.workers}[/]")
        return None
    defaults = AuditSettings()
    settings = AuditSettings(
        seeds=tuple(args.seeds) if args.seeds else defaults.seeds,
        probe_timeout_s=args.probe_timeout or (DEEP_PROBE_TIMEOUT_S if args.deep else defaults.probe_timeout_s),
        deep=args.deep,
    )
    settings.validate()
    return settings


def _shown(target: Any) -> str:
    return f"{target.name}{' (raw)' if target.raw else ''}"


def _audit_in_process(targets: list, probes: list[str], settings: Any, progress: Any, task: Any) -> list:
    from gym_integrity.audit.runner import check_integrity

    reports = []
    for target in targets:
        progress.update(task, description=f"{_shown(target)}: building")
        report = check_integrity(
            target.factory(),
            probes=[p for p in probes if not target.probes or p in target.probes],
            settings=settings,
            raw=target.raw,
            env_id=target.name,
            on_probe_start=lambda p, t=target: progress.update(task, description=f"{_shown(t)}: {p}"),  # type: ignore[misc]  # t binds the loop's target
            on_probe_done=lambda r: progress.advance(task),
        )
        if target.label:
            report.notes.append(target.label)
        reports.append(report)
    return reports

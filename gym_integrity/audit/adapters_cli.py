"""`gym-integrity audit reward:... gem:... skyrl:... verifiers:... rg:...`: third-party targets on the command line."""

from __future__ import annotations

import argparse
import time
from typing import Any

__all__ = ["run_adapted", "adapter_options"]


def adapter_options(args: argparse.Namespace) -> dict[str, Any]:
    """The adapter options the arguments give: --dataset, --gold-column, --prompt-column, --split, --env-kwargs."""
    options = {
        name: getattr(args, name)
        for name in ("dataset", "gold_column", "prompt_column", "split")
        if getattr(args, name, None) is not None
    }
    return {**options, **(args.env_kwargs or {})}


def _usage_error(args: argparse.Namespace) -> str | None:
    from gym_integrity.audit.adapters_targets import is_adapter_target

    ours = [i for i in args.ids if not is_adapter_target(i)]
    if ours:
        return (
            f"audit third-party targets (reward:, rg:, gem:, skyrl:, verifiers:, openenv:) apart from registered ids: "
            f"got {ours} with them"
        )
    for flag, why in (
        ("url", "a server this package did not build is openenv:URL; --url audits our ids where they are served"),
        ("all_datasets", "a sweep is over a registered id's datasets: list rg:DATASET targets"),
    ):
        if getattr(args, flag):
            return f"--{flag.replace('_', '-')} does not go with third-party targets: {why}"
    return None


def run_adapted(args: argparse.Namespace, console: Any) -> int:
    """Audit ``args.ids`` (all third-party specs) as they are, and with --compare also inside the stack."""
    from rich.markup import escape

    from gym_integrity.audit.adapters_targets import adapted_targets, annotate, preflight
    from gym_integrity.audit.columns import audit_columns, settings_from_args, write_json
    from gym_integrity.audit.probes import PROBES
    from gym_integrity.audit.report import AuditVerdict, exit_status, render_reports

    options = adapter_options(args)
    problems = [_usage_error(args)] + [preflight(spec, options) for spec in args.ids]
    for problem in filter(None, problems):
        console.print(f"[red]{escape(problem)}[/]")
    if any(problems):
        return 2
    probes = args.probe or list(PROBES)
    settings = settings_from_args(args, console, probes)
    if settings is None:
        return 2
    start = time.perf_counter()
    targets = adapted_targets(args.ids, options, compare=args.compare)
    reports = [annotate(report) for report in audit_columns(targets, probes, settings, args)]
    total = time.perf_counter() - start
    render_reports(reports, console, max_evidence=args.evidence)
    for report in reports:
        for note in report.notes:
            console.print(f"{escape(report.env_id)}: {escape(note)}")
    inconclusive = sum(1 for r in reports if r.verdict is AuditVerdict.INCONCLUSIVE)
    unsure = f"; {inconclusive} inconclusive" if inconclusive else ""
    mode = "as they are, and inside integrity_stack" if args.compare else "as they are, raw: no integrity stack"
    console.print(
        f"audited {len(args.ids)} target(s) ({mode}), {len(probes)} probes each, in [bold]{total:.1f} s[/]{unsure}"
    )
    write_json(args, console, reports, total)
    return exit_status([r for r in reports if not r.raw] if args.compare else reports)

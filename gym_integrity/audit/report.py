"""Audit reports: one row per probe (passed, failed with evidence, not applicable with a reason), JSON and a rich table."""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

__all__ = ["Status", "ProbeResult", "AuditReport", "reports_to_json", "render_reports", "render_sweep"]


class Status(str, enum.Enum):
    """The outcome of one probe on one env."""

    PASSED = "passed"
    FAILED = "failed"
    NOT_APPLICABLE = "n/a"

    def __str__(self) -> str:
        return self.value


@dataclass
class ProbeResult:
    """One row of a report.

    ``summary`` is one line; ``evidence`` holds what a failure looked like (the
    actions sent and what came back) or, for a pass, what was checked.
    ``reason`` says why a probe did not apply.
    """

    probe: str
    status: Status
    summary: str = ""
    evidence: list[str] = field(default_factory=list)
    reason: str | None = None
    duration_s: float = 0.0
    episodes: int = 0
    steps: int = 0

    @property
    def passed(self) -> bool:
        return self.status is Status.PASSED

    @property
    def failed(self) -> bool:
        return self.status is Status.FAILED

    def to_dict(self) -> dict[str, Any]:
        return {
            "probe": self.probe,
            "status": self.status.value,
            "summary": self.summary,
            "evidence": list(self.evidence),
            "reason": self.reason,
            "duration_s": round(self.duration_s, 4),
            "episodes": self.episodes,
            "steps": self.steps,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ProbeResult":
        """The inverse of :meth:`to_dict` (reports cross process boundaries as dicts)."""
        return cls(data["probe"], Status(data["status"]), data.get("summary", ""), list(data.get("evidence", [])),
                   data.get("reason"), float(data.get("duration_s", 0.0)), int(data.get("episodes", 0)),
                   int(data.get("steps", 0)))


@dataclass
class AuditReport:
    """Every probe's result for one env.

    Example:
        >>> report = AuditReport("Toy-v0", results=[ProbeResult("rescore_after_end", Status.PASSED)])
        >>> report.passed, report.status_of("rescore_after_end")
        (True, <Status.PASSED: 'passed'>)
        >>> report.to_dict()["results"][0]["status"]
        'passed'
    """

    env_id: str
    results: list[ProbeResult] = field(default_factory=list)
    raw: bool = False
    duration_s: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """True when no probe failed (not-applicable rows do not fail a report)."""
        return not any(r.failed for r in self.results)

    @property
    def failures(self) -> list[ProbeResult]:
        return [r for r in self.results if r.failed]

    def result(self, probe: str) -> ProbeResult:
        for r in self.results:
            if r.probe == probe:
                return r
        raise KeyError(f"no probe {probe!r} in this report; probes: {[r.probe for r in self.results]}")

    def status_of(self, probe: str) -> Status:
        return self.result(probe).status

    def to_dict(self) -> dict[str, Any]:
        return {
            "env_id": self.env_id,
            "raw": self.raw,
            "passed": self.passed,
            "duration_s": round(self.duration_s, 4),
            "notes": list(self.notes),
            "results": [r.to_dict() for r in self.results],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "AuditReport":
        """The inverse of :meth:`to_dict`."""
        return cls(data["env_id"], [ProbeResult.from_dict(r) for r in data.get("results", [])], bool(data.get("raw")),
                   float(data.get("duration_s", 0.0)), list(data.get("notes", [])))

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), **kwargs)


def reports_to_json(reports: Sequence[AuditReport], *, total_s: float | None = None, notes: Iterable[str] = ()) -> str:
    """Several reports as one JSON document: ``{"passed", "total_s", "notes", "reports": [...]}``."""
    doc = {
        "passed": all(r.passed for r in reports),
        "total_s": None if total_s is None else round(total_s, 3),
        "notes": list(notes),
        "reports": [r.to_dict() for r in reports],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False)


_MARK = {
    Status.PASSED: "[bold green]pass[/]",
    Status.FAILED: "[bold red]FAIL[/]",
    Status.NOT_APPLICABLE: "[dim]n/a[/]",
}


def _label(report: AuditReport) -> str:
    return f"{report.env_id} (raw)" if report.raw else report.env_id


def _header(report: AuditReport) -> str:
    """A two-line column header: the id, then the mode and whether the stack is on."""
    env_id, _, variant = report.env_id.partition(" [")
    second = " ".join(x for x in (f"[{variant}" if variant else "", "raw" if report.raw else "") if x)
    return f"{env_id}\n{second}" if second else env_id


def render_reports(reports: Sequence[AuditReport], console: Any = None, *, max_evidence: int = 3) -> None:
    """Print a probe-by-env matrix, then each failure's evidence and each n/a reason.

    ``console`` is a :class:`rich.console.Console` (a new one on stdout if None).
    ``max_evidence`` lines are shown per failure; 0 prints the table only.
    """
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = console or Console()
    probes = _probe_order(reports)
    table = Table(title="gym-integrity audit", title_style="bold", show_lines=False)
    table.add_column("probe", style="bold cyan", no_wrap=True)
    for report in reports:
        table.add_column(escape(_header(report)), justify="center", no_wrap=True)
    for probe in probes:
        cells = []
        for report in reports:
            try:
                cells.append(_MARK[report.status_of(probe)])
            except KeyError:
                cells.append("[dim]·[/]")  # not run on this column
        table.add_row(probe, *cells)
    table.add_section()
    table.add_row("[bold]time[/]", *[f"{r.duration_s:.1f} s" for r in reports])
    table.add_row("[bold]verdict[/]", *["[bold green]PASS[/]" if r.passed else "[bold red]FAIL[/]" for r in reports])
    console.print(table)
    _render_details(reports, console, max_evidence)


def _probe_order(reports: Sequence[AuditReport]) -> list[str]:
    """Every probe that ran on any report, in first-seen order."""
    probes: list[str] = []
    for report in reports:
        for r in report.results:
            if r.probe not in probes:
                probes.append(r.probe)
    return probes


def render_sweep(reports: Sequence[AuditReport], console: Any = None, *, max_evidence: int = 3) -> None:
    """Print one row per report (a dataset of a sweep) with the probes as columns, then failures and n/a reasons.

    The row is the report's mode in brackets (``ReasoningGym-v0 [countdown]`` -> ``countdown``).
    """
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = console or Console()
    probes = _probe_order(reports)
    table = Table(title="gym-integrity audit", title_style="bold")
    table.add_column("dataset", style="bold cyan", no_wrap=True)
    for probe in probes:
        table.add_column(probe, justify="center", no_wrap=True)
    table.add_column("time", justify="right", no_wrap=True)
    for report in reports:
        env_id, _, variant = report.env_id.partition(" [")
        row = (variant.rstrip("]") or env_id) + (" (raw)" if report.raw else "")
        cells = []
        for probe in probes:
            try:
                cells.append(_MARK[report.status_of(probe)])
            except KeyError:
                cells.append("[dim]·[/]")
        table.add_row(escape(row), *cells, f"{report.duration_s:.1f} s")
    console.print(table)
    _render_details(reports, console, max_evidence)


def _render_details(reports: Sequence[AuditReport], console: Any, max_evidence: int) -> None:
    """Notes, then each failure's first evidence lines and each n/a reason."""
    from rich.markup import escape

    notes: dict[str, None] = {}
    for report in reports:
        notes.update(dict.fromkeys(report.notes))
    for note in notes:
        console.print(f"[dim]{escape(note)}[/]")
    if max_evidence <= 0:
        return
    for report in reports:
        for r in report.results:
            if r.failed:
                console.print(f"[red]✗ {escape(_label(report))} · {r.probe}[/]: {escape(r.summary)}")
                for line in r.evidence[:max_evidence]:
                    console.print(f"    [dim]{escape(line)}[/]")
                if len(r.evidence) > max_evidence:
                    console.print(f"    [dim]... {len(r.evidence) - max_evidence} more (see --json)[/]")
            elif r.status is Status.NOT_APPLICABLE:
                console.print(f"[dim]– {escape(_label(report))} · {r.probe}: {escape(r.reason or r.summary)}[/]")

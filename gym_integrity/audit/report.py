"""Audit reports: one row per probe (passed, failed with evidence, n/a with a reason, not run with how to run it), a verdict per env, JSON and a rich table."""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Status",
    "AuditVerdict",
    "ProbeResult",
    "AuditReport",
    "overall_verdict",
    "exit_status",
    "EXIT_STATUS",
    "reports_to_json",
    "render_reports",
    "render_sweep",
]


class Status(str, enum.Enum):
    """The outcome of one probe on one env.

    ``n/a`` and ``not run`` differ in whose the gap is. ``n/a``: the probe does
    not apply to this env (it is not a text env; its episodes never end, which
    ``step_budget`` fails). ``not run``: the probe applies but the audit lacked
    what it needed (a gold answer, a second instance, an env that resets), so
    nothing is known about what it checks; its row says how to run it.
    """

    PASSED = "passed"
    FAILED = "failed"
    NOT_APPLICABLE = "n/a"
    NOT_RUN = "not run"

    def __str__(self) -> str:
        return self.value


class AuditVerdict(str, enum.Enum):
    """One env's audit outcome: ``pass``, ``fail`` or ``inconclusive`` (see :attr:`AuditReport.verdict`)."""

    PASS = "pass"
    FAIL = "fail"
    INCONCLUSIVE = "inconclusive"

    def __str__(self) -> str:
        return self.value


@dataclass
class ProbeResult:
    """One row of a report.

    ``summary`` is one line; ``evidence`` holds what a failure looked like (the
    actions sent and what came back) or, for a pass, what was checked.
    ``reason`` says why a probe did not apply or did not run; ``how_to_enable``
    (``not run`` rows) what to give the audit so that it runs.
    """

    probe: str
    status: Status
    summary: str = ""
    evidence: list[str] = field(default_factory=list)
    reason: str | None = None
    duration_s: float = 0.0
    episodes: int = 0
    steps: int = 0
    how_to_enable: str | None = None

    @property
    def passed(self) -> bool:
        return self.status is Status.PASSED

    @property
    def failed(self) -> bool:
        return self.status is Status.FAILED

    @property
    def not_run(self) -> bool:
        return self.status is Status.NOT_RUN

    def to_dict(self) -> dict[str, Any]:
        return {
            "probe": self.probe,
            "status": self.status.value,
            "summary": self.summary,
            "evidence": list(self.evidence),
            "reason": self.reason,
            "how_to_enable": self.how_to_enable,
            "duration_s": round(self.duration_s, 4),
            "episodes": self.episodes,
            "steps": self.steps,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProbeResult:
        """The inverse of :meth:`to_dict` (reports cross process boundaries as dicts)."""
        return cls(
            data["probe"],
            Status(data["status"]),
            data.get("summary", ""),
            list(data.get("evidence", [])),
            data.get("reason"),
            float(data.get("duration_s", 0.0)),
            int(data.get("episodes", 0)),
            int(data.get("steps", 0)),
            data.get("how_to_enable"),
        )


@dataclass
class AuditReport:
    """Every probe's result for one env, and its verdict.

    ``error`` is set when the env could not run at all (it could not be built,
    or its first ``reset`` raised or hung): every probe is then ``not run`` and
    the cause is named here, once. ``stacked`` says whether the audited env had
    the integrity stack (TerminalFreeze, HideInfoKeys, MaxStepsTruncation) among
    its wrappers, read from the env as made (None: it was never built, or it is
    served: its stack, if any, is on the server). ``url`` is set for an env
    audited where it is served (``gym-integrity audit ID --url URL``).

    Example:
        >>> report = AuditReport("Toy-v0", results=[ProbeResult("rescore_after_end", Status.PASSED)])
        >>> report.verdict.value, report.passed, report.status_of("rescore_after_end")
        ('pass', True, <Status.PASSED: 'passed'>)
        >>> report.results.append(ProbeResult("constant_answers", Status.NOT_RUN, reason="no gold answer"))
        >>> report.verdict.value, report.passed, [r.probe for r in report.missing]
        ('inconclusive', False, ['constant_answers'])
    """

    env_id: str
    results: list[ProbeResult] = field(default_factory=list)
    raw: bool = False
    duration_s: float = 0.0
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    stacked: bool | None = None
    url: str | None = None

    @property
    def verdict(self) -> AuditVerdict:
        """``fail`` if any probe failed; else ``inconclusive`` if the env could not run, a probe could not run,
        or no probe applied (nothing was tested); else ``pass``."""
        if any(r.failed for r in self.results):
            return AuditVerdict.FAIL
        if self.error is not None or self.missing or not any(r.passed for r in self.results):
            return AuditVerdict.INCONCLUSIVE
        return AuditVerdict.PASS

    @property
    def passed(self) -> bool:
        """True only for the ``pass`` verdict: no probe failed, and every probe this env needs ran."""
        return self.verdict is AuditVerdict.PASS

    @property
    def failures(self) -> list[ProbeResult]:
        return [r for r in self.results if r.failed]

    @property
    def missing(self) -> list[ProbeResult]:
        """The probes that apply to this env but could not run (each says why and how to run it)."""
        return [r for r in self.results if r.not_run]

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
            "verdict": self.verdict.value,
            "passed": self.passed,
            "error": self.error,
            "stacked": self.stacked,
            "url": self.url,
            "missing": [{"probe": r.probe, "reason": r.reason, "how_to_enable": r.how_to_enable} for r in self.missing],
            "duration_s": round(self.duration_s, 4),
            "notes": list(self.notes),
            "results": [r.to_dict() for r in self.results],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AuditReport:
        """The inverse of :meth:`to_dict` (the verdict and ``missing`` are derived, not read)."""
        return cls(
            data["env_id"],
            [ProbeResult.from_dict(r) for r in data.get("results", [])],
            bool(data.get("raw")),
            float(data.get("duration_s", 0.0)),
            list(data.get("notes", [])),
            data.get("error"),
            data.get("stacked"),
            data.get("url"),
        )

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), **kwargs)


def overall_verdict(reports: Sequence[AuditReport]) -> AuditVerdict:
    """Several envs' verdict: ``fail`` if any failed (a finding outranks a gap), else ``inconclusive`` if any
    was, else ``pass`` (no reports at all: ``inconclusive``, nothing was audited)."""
    verdicts = {r.verdict for r in reports}
    if AuditVerdict.FAIL in verdicts:
        return AuditVerdict.FAIL
    if AuditVerdict.INCONCLUSIVE in verdicts or not reports:
        return AuditVerdict.INCONCLUSIVE
    return AuditVerdict.PASS


#: The command's exit status per verdict (2 is also its status for a usage error: no verdict either way).
EXIT_STATUS = {AuditVerdict.PASS: 0, AuditVerdict.FAIL: 1, AuditVerdict.INCONCLUSIVE: 2}


def exit_status(reports: Sequence[AuditReport]) -> int:
    """0 if every report passed, 1 if any failed, else 2 (some could not be fully audited).

    >>> exit_status([AuditReport("A", [ProbeResult("p", Status.PASSED)])])
    0
    >>> gap, failure = ProbeResult("p", Status.NOT_RUN), ProbeResult("p", Status.FAILED)
    >>> exit_status([AuditReport("A", [gap])]), exit_status([AuditReport("A", [gap]), AuditReport("B", [failure])])
    (2, 1)
    """
    return EXIT_STATUS[overall_verdict(reports)]


def reports_to_json(reports: Sequence[AuditReport], *, total_s: float | None = None, notes: Iterable[str] = ()) -> str:
    """Several reports as one JSON document: ``{"verdict", "passed", "total_s", "notes", "reports": [...]}``."""
    verdict = overall_verdict(reports)
    doc = {
        "verdict": verdict.value,
        "passed": verdict is AuditVerdict.PASS,
        "total_s": None if total_s is None else round(total_s, 3),
        "notes": list(notes),
        "reports": [r.to_dict() for r in reports],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False)


_MARK = {
    Status.PASSED: "[bold green]pass[/]",
    Status.FAILED: "[bold red]FAIL[/]",
    Status.NOT_APPLICABLE: "[dim]n/a[/]",
    Status.NOT_RUN: "[bold yellow]not run[/]",
}
_VERDICT_MARK = {
    AuditVerdict.PASS: "[bold green]PASS[/]",
    AuditVerdict.FAIL: "[bold red]FAIL[/]",
    AuditVerdict.INCONCLUSIVE: "[bold yellow]INCONCLUSIVE[/]",
}


def _label(report: AuditReport) -> str:
    return f"{report.env_id} (raw)" if report.raw else f"{report.env_id} (served)" if report.url else report.env_id


def _header(report: AuditReport) -> str:
    """A two-line column header: the id, then the mode (raw, served where) and whether the stack is on."""
    env_id, _, variant = report.env_id.partition(" [")
    bare = (
        "raw"
        if report.raw
        else f"served at {report.url}"
        if report.url
        else "no stack"
        if report.stacked is False
        else ""
    )
    second = " ".join(x for x in (f"[{variant}" if variant else "", bare) if x)
    return f"{env_id}\n{second}" if second else env_id


def render_reports(reports: Sequence[AuditReport], console: Any = None, *, max_evidence: int = 3) -> None:
    """Print a probe-by-env matrix with each env's verdict, what kept a verdict inconclusive, then each
    failure's evidence and each n/a reason.

    ``console`` is a :class:`rich.console.Console` (a new one on stdout if None).
    ``max_evidence`` lines are shown per failure; 0 prints the table and the gaps only.
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
    table.add_row("[bold]verdict[/]", *[_VERDICT_MARK[r.verdict] for r in reports])
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
    """Print one row per report (a dataset of a sweep) with the probes and the verdict as columns, then the
    gaps, failures and n/a reasons.

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
    table.add_column("verdict", justify="center", no_wrap=True)
    for report in reports:
        env_id, _, variant = report.env_id.partition(" [")
        row = (variant.rstrip("]") or env_id) + (" (raw)" if report.raw else "")
        cells = []
        for probe in probes:
            try:
                cells.append(_MARK[report.status_of(probe)])
            except KeyError:
                cells.append("[dim]·[/]")
        table.add_row(escape(row), *cells, f"{report.duration_s:.1f} s", _VERDICT_MARK[report.verdict])
    console.print(table)
    _render_details(reports, console, max_evidence)


def _render_gaps(report: AuditReport, console: Any) -> None:
    """Why a report is inconclusive: the env could not run (its cause, once), or which probes could not run and
    what would run them, one line per remedy."""
    from rich.markup import escape

    label = escape(_label(report))
    if report.error is not None:
        console.print(f"[yellow]? {label}: the audit could not run: {escape(report.error)}[/]")
        return
    by_remedy: dict[str | None, list[ProbeResult]] = {}
    for r in report.missing:
        by_remedy.setdefault(r.how_to_enable, []).append(r)
    for remedy, results in by_remedy.items():
        names = ", ".join(r.probe for r in results)
        console.print(f"[yellow]? {label} · not run: {names}: {escape(results[0].reason or results[0].summary)}[/]")
        if remedy:
            console.print(f"    to run {'it' if len(results) == 1 else 'them'}: {escape(remedy)}")
    if not report.missing and report.verdict is AuditVerdict.INCONCLUSIVE:
        console.print(f"[yellow]? {label}: no probe applied to this env, so nothing was tested[/]")


def _render_details(reports: Sequence[AuditReport], console: Any, max_evidence: int) -> None:
    """Notes; for every report with a gap, what could not run (always: it is an inconclusive verdict's reason,
    and a failed env's next gap to close); then each failure's first evidence lines and each n/a reason."""
    from rich.markup import escape

    notes: dict[str, None] = {}
    for report in reports:
        notes.update(dict.fromkeys(report.notes))
    for note in notes:
        console.print(f"[dim]{escape(note)}[/]")
    for report in reports:
        if report.verdict is AuditVerdict.INCONCLUSIVE or report.missing:
            _render_gaps(report, console)
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

"""How an eval shows itself: a rich progress bar with running accuracy, the final table, and the optional plot."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from gym_integrity.eval.summary import EvalSummary, mean_label, wilson_interval

__all__ = ["Progress", "summary_table", "problem_lines", "plot"]


class Progress:
    """A rich progress bar whose description shows the running accuracy and no-verdict count."""

    def __init__(self, total: int, done: Sequence[dict[str, Any]] = (), *, enabled: bool = True) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as RichProgress

        self._rewards = [float(r["reward"]) for r in done if not r.get("policy_error") and not r.get("no_verdict")]
        self._no_verdict = sum(1 for r in done if r.get("no_verdict"))
        self._errors = sum(1 for r in done if r.get("policy_error"))
        self._bar = RichProgress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            disable=not enabled,
            transient=False,
            console=Console(stderr=True),
        )  # stdout stays the table's (or --json's)
        self._task = self._bar.add_task(self._text(), total=total, completed=len(done))

    def _text(self) -> str:
        mean = f"{sum(self._rewards) / len(self._rewards):.3f}" if self._rewards else "-"
        return f"{mean_label(self._rewards)} {mean}  no-verdict {self._no_verdict}  policy errors {self._errors}"

    def __enter__(self) -> Progress:
        self._bar.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._bar.__exit__(*exc)

    def update(self, record: dict[str, Any]) -> None:
        if record.get("policy_error"):
            self._errors += 1
        elif record.get("no_verdict"):
            self._no_verdict += 1
        else:
            self._rewards.append(float(record["reward"]))
        self._bar.update(self._task, advance=1, description=self._text())


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


_CI_METHOD = {"wilson": "Wilson", "normal": "normal approx."}  # docs/eval.md: rewards outside [0, 1]


def summary_table(summary: EvalSummary) -> Any:
    """The final table as a rich ``Table``."""
    from rich.table import Table

    table = Table(title=f"gym-integrity eval: {summary.env_id}", show_header=False)
    table.add_column("metric", style="bold")
    table.add_column("value")
    ci, method = summary.accuracy_ci95, _CI_METHOD.get(summary.accuracy_ci_method or "wilson", "Wilson")
    table.add_row("episodes", f"{summary.episodes} ({summary.graded} graded)")
    label = "accuracy (mean reward)" if summary.accuracy_label == "accuracy" else summary.accuracy_label
    table.add_row(
        label, f"{_fmt(summary.accuracy)}" + (f"  95% CI [{ci[0]:.3f}, {ci[1]:.3f}] ({method})" if ci else "")
    )
    table.add_row("success rate", _fmt(summary.success_rate))
    for k, value in summary.pass_at_k.items():
        table.add_row(f"pass@{k}", _fmt(value))
    table.add_row("no-verdict", f"{summary.no_verdict} ({summary.no_verdict_rate:.1%}, excluded from the mean)")
    table.add_row(
        "policy errors",
        f"{summary.policy_errors} (excluded)"
        + (
            f"; {summary.ended_by_policy_error} more after a graded step (scored as they stood)"
            if summary.ended_by_policy_error
            else ""
        ),
    )
    table.add_row("verdicts", ", ".join(f"{name} {count}" for name, count in summary.verdicts.items()) or "-")
    table.add_row("tokens", f"{summary.prompt_tokens} prompt, {summary.completion_tokens} completion")
    table.add_row("policy latency", f"p50 {_fmt(summary.latency_p50_s)} s, p99 {_fmt(summary.latency_p99_s)} s")
    table.add_row("wall time", f"{summary.wall_time_s:.1f} s")
    for name, row in summary.per_dataset.items():
        low, high = row["ci95"]
        table.add_row(f"  {name}", f"{row['accuracy']:.3f} [{low:.3f}, {high:.3f}] over {row['episodes']}")
    return table


def problem_lines(summary: EvalSummary, records: Sequence[dict[str, Any]], base_url: str) -> list[str]:
    """Why episodes were not graded, one line per kind with a sample message: what a user must fix."""
    lines = []
    errors: dict[str, list[str]] = {}
    for record in records:
        if record.get("policy_error"):
            errors.setdefault(record["policy_error"], []).append(record.get("policy_error_message") or "")
    for kind, messages in sorted(errors.items()):
        hint = {
            "connection": " (is the server running, and is the URL right?)",
            "rejected": " (is the model name right? the server refused the request)",
        }.get(kind, "")
        lines.append(f"policy errors: {kind} x{len(messages)} at {base_url}{hint}: {messages[0][:200]}")
    causes: dict[str, int] = {}
    for record in records:
        if record.get("no_verdict") and not record.get("policy_error"):
            cause = record.get("cause") or "no cause given"
            causes[cause] = causes.get(cause, 0) + 1
    for cause, count in sorted(causes.items(), key=lambda item: -item[1]):
        lines.append(f"no-verdict x{count}: {cli_cause(cause)}")  # whole: a cut cause hides what to do
    return lines


#: The env's advice to Python users (``judge={...}`` to ``gym.make``), and what a command-line user types instead.
_PYTHON_JUDGE_ADVICE = re.compile(r"pass judge=\{[^}]*\} to\s+gym\.make\([^)]*\)")
_PYTHON_JUDGE_MODEL = re.compile(r"set judge=\{'model': \.\.\.\}")
_CLI_JUDGE = """pass --env-kwargs '{"judge": {"base_url": "http://host:port/v1", "model": "..."}}'"""


def cli_cause(cause: str) -> str:
    """A no-verdict cause as a command-line user acts on it: the ``gym.make`` advice becomes ``--env-kwargs``.

    >>> print(cli_cause("no judge endpoint configured: pass judge={'model': 'm'} to gym.make('QEDMath-v0', ...)."))
    no judge endpoint configured: pass --env-kwargs '{"judge": {"base_url": "http://host:port/v1", "model": "..."}}'.
    """
    cause = _PYTHON_JUDGE_ADVICE.sub(lambda _: _CLI_JUDGE, cause)
    return _PYTHON_JUDGE_MODEL.sub(lambda _: """add "model" to the judge in --env-kwargs '{"judge": {...}}'""", cause)


def plot(summary: EvalSummary, records: Sequence[dict[str, Any]], path: str) -> None:
    """A PNG: the reward histogram and, for composites, per-dataset accuracy with 95% intervals."""
    try:
        # The Figure API, not pyplot: no global backend switch (a notebook's inline plots keep working).
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError("--plot needs matplotlib: pip install 'gym-integrity[plot]'") from exc
    graded = [r for r in records if not r.get("policy_error") and not r.get("no_verdict")]
    panels = 2 if summary.per_dataset else 1
    figure = Figure(figsize=(6 * panels, 4))
    axes = figure.subplots(1, panels, squeeze=False)
    ax = axes[0][0]
    ax.hist([float(r["reward"]) for r in graded], bins=20)
    ax.set_title(f"{summary.env_id}: reward ({len(graded)} graded episodes)")
    ax.set_xlabel("reward")
    ax.set_ylabel("episodes")
    if summary.per_dataset:
        ax = axes[0][1]
        names = list(summary.per_dataset)
        means = [summary.per_dataset[n]["accuracy"] for n in names]
        intervals = [wilson_interval(m, summary.per_dataset[n]["episodes"]) for m, n in zip(means, names)]
        # max(0, ...): at a mean of exactly 0 or 1 rounding can put the bound a hair past it
        errors = [
            [max(0.0, m - lo) for m, (lo, _) in zip(means, intervals)],
            [max(0.0, hi - m) for m, (_, hi) in zip(means, intervals)],
        ]
        ax.bar(names, means, yerr=errors, capsize=4)
        ax.set_ylim(0, 1)
        ax.set_title("accuracy per dataset (95% Wilson)")
        ax.tick_params(axis="x", rotation=30)
    figure.tight_layout()
    figure.savefig(path, dpi=100)

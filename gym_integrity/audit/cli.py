"""`gym-integrity audit`: audit registered ids (all by default), stacked or raw, or one where it is served (--url), with a progress bar, a table and JSON."""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from typing import Any

from gym_integrity.audit.targets import (
    _all_entries,
    _entry,
    _noun,
    audit_targets,
    dataset_targets,
    resolve_ids,
    split_id,
    start_judge_stub,
    swept_entries,
)
from gym_integrity.checks import json_object_arg
from gym_integrity.openai_stub import STUB_JUDGE_MODEL

__all__ = ["HELP", "add_arguments", "run"]

HELP = (
    "audit env ids for reward exploits (all registered ids by default); exit 0 if every env passed, 1 if any "
    "failed, 2 if any was inconclusive (a probe it needs could not run) or for a usage error"
)

_EPILOG = """\
examples:
  gym-integrity audit                      every registered id, through the integrity stack
  gym-integrity audit --raw                the raw task classes: shows what the stack prevents
  gym-integrity audit --compare            both, side by side
  gym-integrity audit {example} --json audit.json --seeds 0 1 2 3
  gym-integrity audit {swept} --all-datasets   every one of its {noun}, the grader probes, a row each
  gym-integrity audit mymod:MyEnv-v0       your env: imports mymod (from here too), which registers MyEnv-v0
  gym-integrity audit reward:mymod:accuracy --dataset rows.jsonl
                                           a TRL reward function (or verl compute_score) over a dataset
  gym-integrity audit gem:rg:leg_counting skyrl:gsm8k verifiers:MODULE rg:leg_counting openenv:URL
                                           third-party envs and scorers, as they are (--compare: and stacked)
  gym-integrity audit {example} --url http://127.0.0.1:8000
                                           the env `gym-integrity serve {example}` serves there, over the wire
                                           (the [serve] extra; --env-kwargs: the server's, for the local twin)

Proof-mode grading is audited offline against a judge stub this command starts
on 127.0.0.1 (labelled in the output); no network and no key are needed.

exit status: 0 every env passed; 1 an env failed a probe; 2 no failure, but an
env is inconclusive: a probe it needs could not run (the output names the
probes and what would run them, e.g. a gold_answers() hook) or the env could
not be built or reset. 2 also for a usage error (unknown id or probe), and with
--url when the served env cannot be audited (nothing at the URL, another id, a
local twin that does not match: pass the server's --env-kwargs).
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = HELP
    swept = swept_entries()
    # Examples with real ids, read from the registry: the auditor itself names no env.
    parser.epilog = _EPILOG.format(
        example=(swept or _all_entries())[0].id,
        swept=swept[0].id if swept else "ID",
        noun=_noun(swept[0]) if swept else "datasets",
    )
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("ids", nargs="*", metavar="ID", help="env ids to audit (default: every registered id)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--raw",
        action="store_true",
        help="audit the raw task classes without the integrity stack (exploit probes are expected to fail)",
    )
    mode.add_argument(
        "--compare",
        action="store_true",
        help="audit stacked and raw side by side; exit status follows the stacked envs only",
    )
    parser.add_argument("--json", metavar="FILE", default=None, help="also write the full report as JSON to FILE")
    parser.add_argument(
        "--all-datasets",
        action="store_true",
        help=f"with {' or '.join(e.id for e in swept) or 'an id whose entry has a sweep'} (or no "
        "id): audit every value of its swept option (every dataset), one row each; default "
        "probes: the grader probes and the search probes",
    )
    parser.add_argument(
        "--probe",
        action="append",
        default=None,
        metavar="NAME",
        help="run only this probe (repeatable); default: all (with --all-datasets: the grader, pay and search probes)",
    )
    parser.add_argument(
        "--deep",
        action="store_true",
        help="run the search probes longer: 24 items, hundreds of episodes each (up to 90 s a probe; "
        "the default plays 6 items, about 1.5 s a probe)",
    )
    parser.add_argument(
        "--seeds", type=int, nargs="+", default=None, help="reset seeds the probes play (default 0 1 2)"
    )
    parser.add_argument(
        "--probe-timeout", type=float, default=None, help="seconds before a probe counts as hung (default 30)"
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="envs audited at once, each in its own process (default: the number of cores)",
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="audit in this process, one env after another (a hang that holds the GIL is then unbounded)",
    )
    parser.add_argument(
        "--evidence",
        type=int,
        default=3,
        metavar="N",
        help="evidence lines shown per failure (default 3; 0: the table only; all of it is in --json)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    served = parser.add_argument_group("a served env (gym-integrity serve; needs the [serve] extra)")
    served.add_argument(
        "--url",
        default=None,
        metavar="URL",
        help="audit the one ID where `gym-integrity serve ID` serves it (e.g. http://127.0.0.1:8000): "
        "the probes play it over OpenEnv's protocol, as a remote user does; gold answers come "
        "from a local twin (ID built here with --env-kwargs, reset with the same seeds)",
    )
    third = parser.add_argument_group(
        "third-party targets (reward:MODULE:FUNCTION, rg:DATASET, gem:ID, skyrl:ID, verifiers:MODULE, openenv:URL)",
        "audited as they are (--compare: also inside integrity_stack); --env-kwargs go to their adapter",
    )
    third.add_argument(
        "--dataset",
        default=None,
        metavar="PATH|ID",
        help="the rows a reward: or skyrl: target is audited over (and a gem: math or QA env's, instead "
        "of the hub's): a .jsonl/.json/.parquet file or a datasets id",
    )
    third.add_argument(
        "--gold-column",
        default=None,
        metavar="COL",
        help="the dataset column holding an answer the reward accepts (a.b reaches into a dict "
        "column); default: answer, solution, ground_truth, ... whichever the rows have",
    )
    third.add_argument("--prompt-column", default=None, metavar="COL", help="the dataset column holding the prompt")
    third.add_argument(
        "--split", default=None, help="the split of a datasets id (default: its only one; an id with several needs it)"
    )
    parser.add_argument(
        "--env-kwargs",
        type=json_object_arg,
        default=None,
        metavar="JSON",
        help='kwargs for every audited id (JSON object), e.g. \'{"dataset": "sokoban"}\' for one '
        "reasoning-gym dataset; with --url: the server's --env-kwargs, so that the local twin "
        "draws the server's problems",
    )


def _served_usage_error(args: argparse.Namespace) -> str | None:
    """Why the --url/--env-kwargs arguments cannot run together with the others, or None."""
    if args.url is None:
        if args.env_kwargs is not None and args.all_datasets:
            return "--env-kwargs does not go with --all-datasets: the sweep sets the swept option itself"
        return None
    if len(args.ids) != 1:
        return f"--url audits the one id served there: give exactly one ID, got {len(args.ids)}"
    for flag, why in (
        ("raw", "the wire carries what the server's stack lets out: there is no raw class to reach"),
        ("compare", "the raw class is not served: audit the id locally with --compare"),
        ("all_datasets", "a server serves one configuration: serve each dataset to audit it"),
    ):
        if getattr(args, flag):
            return f"--{flag.replace('_', '-')} does not go with --url: {why}"
    return None


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.markup import escape

    import gym_integrity  # noqa: F401  (registers the ids)
    from gym_integrity.audit.columns import audit_columns, settings_from_args, write_json
    from gym_integrity.audit.grader_probes import GRADER_PROBES
    from gym_integrity.audit.pay_probes import PAY_PROBES
    from gym_integrity.audit.probes import PROBES
    from gym_integrity.audit.report import AuditVerdict, exit_status, render_reports, render_sweep
    from gym_integrity.audit.search import SEARCH_PROBES

    console = Console()
    if not console.is_terminal:  # logs, files: evidence lines (and a sweep's 155-column table) stay whole
        console = Console(width=160 if args.all_datasets else 140)
    usage_error = _served_usage_error(args) or _json_path_error(args.json)
    if usage_error:
        console.print(f"[red]{escape(usage_error)}[/]")
        return 2
    from gym_integrity.audit.adapters_targets import is_adapter_target

    if any(is_adapter_target(i) for i in args.ids):
        from gym_integrity.audit.adapters_cli import run_adapted

        return run_adapted(args, console)
    swept = {entry.id: entry for entry in swept_entries()}
    ids = list(args.ids) or (list(swept) if args.all_datasets else [entry.id for entry in _all_entries()])
    unknown, import_errors = resolve_ids(ids)
    for error in import_errors:
        console.print(f"[red]{escape(error)}[/]")
    if unknown:
        console.print(
            f"[red]unknown id(s) {escape(str(unknown))}[/]; registered: {[e.id for e in _all_entries()]}"
            + (
                ""
                if all(":" in i for i in unknown)
                else "; for your own env: MODULE:ID, whose import registers ID (as gym.make takes it)"
            )
        )
    if unknown or import_errors:
        return 2
    swept = {entry.id: entry for entry in swept_entries()}  # again: an imported module may have registered one
    swept_ids = {i: split_id(i)[1] for i in ids}
    not_swept = [i for i in ids if swept_ids[i] not in swept]
    if args.all_datasets and (not_swept or not ids):
        sweeps = ", ".join(f"{e.id}'s {_noun(e)}" for e in swept.values()) or "nothing (no entry has a sweep)"
        console.print(f"[red]--all-datasets sweeps {sweeps}; got id(s) {ids}[/]")
        return 2
    probes = args.probe or ([*GRADER_PROBES, *PAY_PROBES, *SEARCH_PROBES] if args.all_datasets else list(PROBES))
    checked = settings_from_args(args, console, probes)
    if checked is None:
        return 2
    settings = checked
    if args.url is not None:
        return _run_served(args, console, ids[0], probes, settings)

    start = time.perf_counter()
    judge = start_judge_stub() if any((e := _entry(i)) is not None and e.needs_judge for i in ids) else None
    notes = [judge.label] if judge else []
    if args.all_datasets:
        targets = [t for i in ids for t in dataset_targets(raw=args.raw, compare=args.compare, env_id=swept_ids[i])]
    else:
        targets = audit_targets(ids, raw=args.raw, compare=args.compare, judge=judge)
        if args.env_kwargs:  # e.g. one dataset: ReasoningGym-v0 --env-kwargs '{"dataset": "sokoban"}'
            targets = [replace(t, kwargs={**t.kwargs, **args.env_kwargs}) for t in targets]
    targets = [t for t in targets if not t.probes or set(t.probes) & set(probes)]
    try:
        reports = audit_columns(targets, probes, settings, args)
    finally:
        if judge is not None:
            judge.stop()
    total = time.perf_counter() - start

    mode = _mode(reports, raw=args.raw, compare=args.compare)
    failed = sum(1 for r in reports if r.verdict is AuditVerdict.FAIL)
    inconclusive = sum(1 for r in reports if r.verdict is AuditVerdict.INCONCLUSIVE)
    # An inconclusive env is named in the last line: unlike a FAIL, it is easy to miss in a wide table.
    unsure = f"; {inconclusive} inconclusive" if inconclusive else ""
    if args.all_datasets:
        render_sweep(reports, console, max_evidence=args.evidence)
        what = " and ".join(f"{i} {_noun(swept[swept_ids[i]])}" for i in ids)
        console.print(
            f"audited {len({(t.env_id, t.variant) for t in targets})} {what} ({mode}), {len(probes)} probes "
            f"each, in [bold]{total:.1f} s[/]; {failed} failed{unsure}"
        )
    else:
        render_reports(reports, console, max_evidence=args.evidence)
        console.print(
            f"audited {len(ids)} id(s) ({mode}), {len(probes)} probes each, in [bold]{total:.1f} s[/]{unsure}"
        )
    write_json(args, console, reports, total, notes)
    judged = [r for r in reports if not r.raw] if args.compare else reports
    return exit_status(judged)


def _run_served(args: argparse.Namespace, console: Any, env_id: str, probes: list[str], settings: Any) -> int:
    """``--url``: audit the env served there, in this process (it grades on the server), with its local twin.

    Errors before any probe (no [serve] extra, nothing at the URL, a twin that
    does not match, options the env refuses) are one red line and exit 2:
    there is no verdict to give.
    """
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from gym_integrity.audit.columns import write_json
    from gym_integrity.audit.report import exit_status, render_reports
    from gym_integrity.audit.served_audit import WIRE_NOT_APPLICABLE, check_served_integrity

    start = time.perf_counter()
    judge = (args.env_kwargs or {}).get("judge")
    if isinstance(judge, dict) and judge.get("model") == STUB_JUDGE_MODEL:
        # the package's stub judge grades the proofs: whether it pays an honest one says nothing of the env
        probes = [p for p in probes if p != "honest_pay"]
    try:
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
            task = progress.add_task(f"{env_id} at {args.url}: connecting", total=len(probes))
            report = check_served_integrity(
                args.url,
                env_id,
                args.env_kwargs,
                probes=probes,
                settings=settings,
                on_probe_start=lambda p: progress.update(task, description=f"{env_id} (served): {p}"),
                on_probe_done=lambda r: progress.advance(task),
            )
    except ImportError as exc:
        console.print(f"[red]gym-integrity audit --url: {escape(str(exc))}[/]")
        return 2
    except (OSError, RuntimeError, TypeError, ValueError) as exc:
        # Before any probe ran: unreachable, another id, a twin that does not match, refused options.
        console.print(f"[red]gym-integrity audit --url: {escape(str(exc))}[/]")
        return 2
    total = time.perf_counter() - start
    render_reports([report], console, max_evidence=args.evidence)
    wire = [p for p in probes if p in WIRE_NOT_APPLICABLE]
    unsure = "; 1 inconclusive" if report.verdict.value == "inconclusive" else ""
    console.print(
        f"audited {escape(env_id)} served at {escape(report.url or args.url)} (over OpenEnv's protocol, "
        f"gold from a local twin), {len(probes)} probes ({len(wire)} n/a over the wire), in "
        f"[bold]{total:.1f} s[/]{unsure}"
    )
    write_json(args, console, [report], total)
    return exit_status([report])


def _json_path_error(path: str | None) -> str | None:
    """Why ``--json PATH`` cannot be written (its folder made as eval's --out makes it), checked before the audit runs
    rather than after, when a failed write would lose the report."""
    if not path:
        return None
    import os
    import pathlib

    target = pathlib.Path(path)
    if target.parent.exists() and not target.parent.is_dir():
        return f"--json {path}: {target.parent} is not a folder"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"--json {path}: cannot make its folder ({exc.strerror or exc})"
    if target.is_dir() or not os.access(target if target.exists() else target.parent, os.W_OK):
        return f"--json {path}: not a file this process can write"
    return None


def _mode(reports: list, *, raw: bool, compare: bool) -> str:
    """How the envs were audited, for the last line: "stacked" only for envs that had the integrity stack."""
    if raw and not compare:
        return "raw, without the integrity stack"
    bare = list(dict.fromkeys(r.env_id for r in reports if not r.raw and r.stacked is False))
    made = "stacked" if not bare else "as made by gym.make"
    mode = f"{made} and raw" if compare else made
    return f"{mode}; no integrity stack on {', '.join(bare)}" if bare else mode


def main_for_tests(argv: list[str]) -> int:
    """Parse ``argv`` as the audit subcommand's arguments and run it (used by tests and benchmarks)."""
    parser = argparse.ArgumentParser(prog="gym-integrity audit")
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":  # pragma: no cover
    import sys

    raise SystemExit(main_for_tests(sys.argv[1:]))

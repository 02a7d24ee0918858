"""``gym-integrity regrade``: its arguments and what it prints (the engine is eval/regrade.py)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from gym_integrity.checks import json_object_arg

HELP = "grade stored completions (eval or trainer JSONL) again with today's graders and show what flipped"

EPILOG = """\
examples:
  gym-integrity regrade results.jsonl
  gym-integrity regrade rollouts.jsonl --env-kwargs '{"judge": {"api_key": "..."}}' --json

Each record is replayed through the registered stack with its stored env id,
options and seed (docs/regrade.md has the record shapes). A flip is a record
whose verdict or reward differs today: a grader changed, or was fixed.
exit status: 0 nothing flipped; 1 some record flipped (each is listed); 2 usage
error, or no record could be regraded.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description, parser.epilog = HELP, EPILOG
    parser.add_argument("records", metavar="RECORDS.jsonl", help="eval --out records, or trainer records")
    parser.add_argument(
        "--env-kwargs",
        type=json_object_arg,
        default={},
        help="JSON object over each record's stored options (e.g. a judge's api_key, which records never hold)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    parser.add_argument("--show", type=int, default=20, help="flipped records listed (default 20)")


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from gym_integrity.eval.regrade import regrade_file

    try:
        report = regrade_file(args.records, args.env_kwargs)
    except OSError as exc:
        args.parser.error(f"cannot read {args.records}: {exc}")
    summary: dict[str, Any] = report.to_dict()
    if args.json:
        print(json.dumps(summary, indent=2, default=str))
        return 1 if report.flips else 2 if summary["regraded"] == 0 else 0
    console = Console()
    table = Table(title=f"gym-integrity regrade: {args.records}")
    for column in ("dataset", "records", "regraded", "flipped"):
        table.add_column(column)
    for name, counts in report.by_dataset().items():
        table.add_row(name, str(counts["records"]), str(counts["regraded"]), str(counts["flipped"]))
    console.print(table)
    for change, count in summary["by_verdict"].items():
        console.print(f"flipped {change}: {count}", markup=False)
    for reason, count in summary["skipped"].items():
        console.print(f"skipped ({reason}): {count}", markup=False)
    for row in report.flips[: args.show]:
        console.print(
            f"  line {row.line}: {row.env_id} seed {row.seed} {row.problem_id}: {row.old_verdict} "
            f"{row.old_reward} -> {row.new_verdict} {row.new_reward}",
            markup=False,
        )
    regraded = summary["regraded"]
    if not report.flips and regraded == 0:
        console.print("nothing was regraded: every record was skipped (reasons above)", markup=False)
        return 2
    if not report.flips:
        agree = "every stored grade" if regraded == summary["records"] else f"the {regraded} regraded record(s)"
        console.print(f"nothing flipped: today's graders agree with {agree}", markup=False)
    return 1 if report.flips else 0

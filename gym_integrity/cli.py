"""The `gym-integrity` command: list the ids, play one by hand, audit them, evaluate a model, regrade, serve one, check data."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from gym_integrity.checks import json_object_arg, positive_int_arg

__all__ = ["main", "build_parser"]

MULTILINE_FENCE = '"""'


def _cmd_list(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from gym_integrity.registration import REGISTERED

    table = Table(title="gym-integrity environments", show_lines=False)
    table.add_column("id", style="bold cyan", no_wrap=True)
    table.add_column("description")
    for entry in REGISTERED:
        table.add_row(entry.id, entry.description)
    console = Console()
    if getattr(args, "datasets", False):
        from gym_integrity.envs.reasoning_gym import available_datasets

        names = available_datasets()
        print(f"# ReasoningGym-v0 datasets ({len(names)}): dataset=NAME; without it, leg_counting")
        print("\n".join(names))
        return 0
    console.print(table)
    console.print(
        "ReasoningGym-v0 without dataset= plays leg_counting; gym-integrity list --datasets names the others.",
        markup=False,
    )
    return 0


def _read_action(console: Any, stream: TextIO) -> str | None:
    """One reply from the person: a line, or several between two ``\"\"\"`` lines. None at end of input."""
    console.print(f"[bold]your answer[/] (one line, or several between {MULTILINE_FENCE} lines)> ", end="")
    line = stream.readline()
    if not line:
        return None
    if line.strip() != MULTILINE_FENCE:
        return line.rstrip("\n")
    lines = []
    for more in stream:
        if more.strip() == MULTILINE_FENCE:
            break
        lines.append(more.rstrip("\n"))
    return "\n".join(lines)


def _cmd_play(args: argparse.Namespace, stream: TextIO | None = None) -> int:
    import gymnasium as gym
    from rich.console import Console
    from rich.panel import Panel

    import gym_integrity  # noqa: F401  (registers the ids)

    stream = stream or sys.stdin
    console = Console()
    try:
        env = gym.make(args.id, **(args.env_kwargs or {}))
    except (gym.error.Error, TypeError, ValueError) as exc:  # an unknown id, a bad option: a usage error
        args.parser.error(str(exc))  # exits 2
    try:
        obs, info = env.reset(seed=args.seed)
        console.print(Panel(obs, title=f"{args.id}  {info.get('problem_id', '')}", border_style="cyan"))
        total = 0.0
        while True:
            action = _read_action(console, stream)
            if action is None:
                console.print("\n[yellow]end of input: episode left unfinished[/]")
                return 0
            obs, reward, terminated, truncated, info = env.step(action)
            total += float(reward)
            verdict = info.get("verdict", "?")
            colour = {"correct": "green", "partial": "yellow", "pending": "blue"}.get(verdict, "red")
            console.print(
                Panel(obs, title=f"reward {float(reward):.3f}  verdict [{colour}]{verdict}[/]", border_style=colour)
            )
            if terminated or truncated:
                end = "terminated" if terminated else "truncated (step budget used up)"
                console.print(f"[bold]episode {end}[/]: return {total:.3f}")
                return 0
    finally:
        env.close()


SERVE_HELP = (
    "serve a registered id over OpenEnv's protocol (the openenv package's server; the [serve] extra), one "
    "integrity-stacked env per session"
)

_SERVE_EPILOG = """\
examples:
  gym-integrity serve ReasoningGym-v0                       ws://127.0.0.1:8000/ws
  gym-integrity serve FinQA-v0 --port 8100 --max-sessions 32
  gym-integrity serve QEDMath-v0 --env-kwargs '{"judge": {"base_url": "http://127.0.0.1:9000/v1"}}'

Clients: openenv's EnvClient/GenericEnvClient (and MCPToolClient for
QEDMath-v0's get_problem/submit_proof tools), or
gym_integrity.integrations.openenv.RemoteEnv. It binds to 127.0.0.1 unless
--host says otherwise; there is no authentication (docs/serve.md).
"""


def _cmd_serve(args: argparse.Namespace) -> int:
    try:
        from gym_integrity.integrations.openenv import serve
    except ImportError as exc:
        args.parser.error(str(exc))  # exits 2
    try:
        serve(
            args.id,
            args.env_kwargs,
            host=args.host,
            port=args.port,
            max_sessions=args.max_sessions,
            session_timeout_s=args.session_timeout,
            client_datasets=args.client_datasets,
            max_size=args.max_size,
            reset_budget_s=args.reset_budget or None,
        )
    except (TypeError, ValueError) as exc:
        args.parser.error(str(exc))
    return 0


CHECK_DATA_HELP = (
    "check a QEDMath or FinQA data set as the loaders will (the shipped sets by default): rows "
    "loaded, skipped and why; exit 0 clean, 1 if any row was skipped, 2 for a usage error"
)

_CHECK_DATA_EPILOG = """\
examples:
  gym-integrity check-data                         both shipped sets
  gym-integrity check-data qed my_problems.jsonl   a .jsonl/.json file, a dataset directory or a hub id
  gym-integrity check-data qed owner/name --config main --split test
  gym-integrity check-data finqa /data/finqa       a FinQA-benchmark root, or an original-FinQA JSON file/dir
  gym-integrity check-data finqa /data/finqa --hub-id owner/questions   hub questions, tables from the root
  gym-integrity check-data qed my.jsonl --json     machine-readable: every skipped row with its reason

exit status: 0 every row loads; 1 some row was skipped (each is listed); 2 usage
error or a source that cannot be read at all.
"""


def _check_reports(args: argparse.Namespace) -> list[Any]:
    """The DataReports the arguments name (raises ValueError/TypeError/OSError for unreadable sources)."""
    from gym_integrity.envs.finqa.data import check_finqa
    from gym_integrity.envs.qed_math.problems import check_problems

    if args.kind is None:
        if args.source is not None:
            raise ValueError("name the kind before the source: check-data qed SOURCE or check-data finqa SOURCE")
        return [check_problems(None), check_finqa()]
    if args.kind == "qed":
        if args.hub_id is not None or args.questions_file is not None:
            raise ValueError("--hub-id and --questions-file are FinQA options")
        source: Any = args.source
        if source is not None and (args.config is not None or args.split is not None):
            source = {"path": source, "config": args.config, "split": args.split or "train"}
        elif args.config is not None or args.split is not None:
            raise ValueError("--config and --split need a hub id or dataset directory as SOURCE")
        return [check_problems(source)]
    if args.config is not None:
        raise ValueError("--config is a QEDMath option")
    if args.hub_id is not None and args.source is None:
        raise ValueError("--hub-id needs SOURCE: the FinQA-benchmark root holding input_companies/")
    from gym_integrity.envs.finqa.config import DATA_PATH_ENV

    # No SOURCE: what FinQA-v0 would load, $FINQA_DATA_PATH if set, else the shipped set.
    source = args.source if args.source is not None else (os.environ.get(DATA_PATH_ENV) or None)
    return [
        check_finqa(
            source, split=args.split or "test", questions_file=args.questions_file or "finqa.csv", hub_id=args.hub_id
        )
    ]


def _check_table(reports: list[Any], rows_shown: int) -> Any:
    from rich.table import Table

    from gym_integrity.datacheck import REASONS

    skipped = sum(len(r.skipped) for r in reports)
    caption = (
        "clean: every row loads"
        if not skipped
        else f"{skipped} row{'s' if skipped != 1 else ''} skipped: they will not be trained on; fix or drop them"
    )
    table = Table(title="gym-integrity check-data", caption=caption, show_lines=False)
    table.add_column("data set", style="bold cyan", overflow="fold")
    table.add_column("rows", no_wrap=True)
    table.add_column("count", justify="right", no_wrap=True)
    table.add_column(f"first rows (of {rows_shown})", no_wrap=True)
    table.add_column("what is wrong (first row's reason)", overflow="fold")
    for i, report in enumerate(reports):
        if i:
            table.add_section()
        table.add_row(f"{report.kind}: {report.source}", "[green]loaded[/]", str(report.loaded), "", "")
        colour = "red" if report.skipped else "green"
        table.add_row("", f"[{colour}]skipped[/]", str(len(report.skipped)), "", "")
        for reason, rows in report.by_reason().items():
            first = next(s for s in report.skipped if s.reason == reason)
            shown = ", ".join(map(str, rows[:rows_shown])) + (", ..." if len(rows) > rows_shown else "")
            table.add_row("", f"  [red]{reason}[/]", str(len(rows)), shown, first.detail or REASONS[reason])
        for note, count in report.notes.items():
            table.add_row("", "  [yellow]note[/]", str(count), "", note)
    return table


def _cmd_check_data(args: argparse.Namespace) -> int:
    import warnings

    from gym_integrity.datacheck import DataWarning

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)  # the table says it all, once
            reports = _check_reports(args)
    except (ValueError, TypeError, OSError) as exc:
        args.parser.error(str(exc))  # exits 2
    except Exception as exc:  # noqa: BLE001  (a hub loader's own errors: the source cannot be read)
        args.parser.error(f"cannot read the source: {type(exc).__name__}: {exc}")
    clean = all(report.clean for report in reports)
    if args.json:
        print(json.dumps({"clean": clean, "sources": [report.as_dict() for report in reports]}, indent=2))
    else:
        from rich.console import Console

        console = Console()
        if console.width < 120 and not console.is_terminal:
            console = Console(width=120)  # pipes and logs: do not squeeze the reasons into 80 columns
        console.print(_check_table(reports, args.rows))
    return 0 if clean else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gym-integrity", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p_list = sub.add_parser("list", help="list the registered env ids")
    p_list.add_argument("--datasets", action="store_true", help="list ReasoningGym-v0's dataset names instead")
    p_list.set_defaults(run=_cmd_list)

    p_play = sub.add_parser("play", help="play one episode of an env by hand in the terminal")
    p_play.add_argument("id", help="a registered id, e.g. ReasoningGym-v0")
    p_play.add_argument("--seed", type=int, default=None, help="reset seed (picks the problem)")
    p_play.add_argument(
        "--env-kwargs",
        type=json_object_arg,
        default=None,
        help='JSON object passed to gym.make, e.g. \'{"dataset": "basic_arithmetic"}\'',
    )
    p_play.set_defaults(run=_cmd_play, parser=p_play)

    from gym_integrity.audit import cli as audit_cli  # light: the audit imports what it needs when it runs

    p_audit = sub.add_parser("audit", help=audit_cli.HELP)
    audit_cli.add_arguments(p_audit)
    p_audit.set_defaults(run=audit_cli.run)

    from gym_integrity.eval import cli as eval_cli  # light: the engine and openai load when it runs

    p_eval = sub.add_parser("eval", help=eval_cli.HELP)
    eval_cli.add_arguments(p_eval)
    p_eval.set_defaults(run=eval_cli.run, parser=p_eval)

    from gym_integrity.eval import regrade_cli

    p_regrade = sub.add_parser("regrade", help=regrade_cli.HELP)
    regrade_cli.add_arguments(p_regrade)
    p_regrade.set_defaults(run=regrade_cli.run, parser=p_regrade)

    p_serve = sub.add_parser(
        "serve",
        help=SERVE_HELP,
        description=SERVE_HELP,
        epilog=_SERVE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p_serve.add_argument("id", help="a registered id, e.g. ReasoningGym-v0")
    p_serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p_serve.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p_serve.add_argument(
        "--max-sessions",
        type=positive_int_arg,
        default=8,
        help="sessions (envs) open at once; one more is refused with CAPACITY_REACHED (default 8)",
    )
    p_serve.add_argument(
        "--session-timeout",
        type=float,
        default=None,
        help="seconds a WebSocket session may stay idle before its env is closed (default: never)",
    )
    p_serve.add_argument(
        "--client-datasets",
        type=lambda text: [n for n in text.split(",") if n],
        default=None,
        help="comma-separated datasets a client's reset may pick (OpenEnv's reasoning_gym_env "
        "dataset_name; default: the served one's)",
    )
    p_serve.add_argument(
        "--max-size",
        type=positive_int_arg,
        default=None,
        help="largest dataset size a client's reset may ask for (default: the served size)",
    )
    p_serve.add_argument(
        "--reset-budget",
        type=float,
        default=10.0,
        help="seconds one reset (item generation) may take before it is stopped and fails that "
        "session's reset (default 10; 0: no budget)",
    )
    p_serve.add_argument(
        "--env-kwargs",
        type=json_object_arg,
        default=None,
        help='JSON object of gym_integrity.make keyword arguments, e.g. \'{"dataset": "leg_counting"}\'',
    )
    p_serve.set_defaults(run=_cmd_serve, parser=p_serve)

    p_check = sub.add_parser(
        "check-data",
        help=CHECK_DATA_HELP,
        description=CHECK_DATA_HELP,
        epilog=_CHECK_DATA_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p_check.add_argument(
        "kind", nargs="?", choices=("qed", "finqa"), help="which loader checks SOURCE; omitted: both shipped sets"
    )
    p_check.add_argument(
        "source",
        nargs="?",
        default=None,
        help="qed: a .jsonl/.json file, a dataset directory or a hub id; finqa: a FinQA-benchmark "
        "root or an original-FinQA JSON file/dir. Omitted: the shipped set (finqa: "
        "$FINQA_DATA_PATH if set, as FinQA-v0 loads)",
    )
    p_check.add_argument(
        "--split",
        default=None,
        help="qed: the hub split (default train); finqa: the original-FinQA split or hub split (default test)",
    )
    p_check.add_argument("--config", default=None, help="qed: the hub dataset config")
    p_check.add_argument(
        "--questions-file", default=None, help="finqa: the CSV under benchmark_questions/ (default finqa.csv)"
    )
    p_check.add_argument(
        "--hub-id",
        default=None,
        help="finqa: questions from this hub id (or local dataset directory); SOURCE is the root holding the tables",
    )
    p_check.add_argument("--rows", type=positive_int_arg, default=5, help="row numbers shown per reason (default 5)")
    p_check.add_argument("--json", action="store_true", help="print JSON (every skipped row) instead of the table")
    p_check.set_defaults(run=_cmd_check_data, parser=p_check)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.run(args) or 0)


if __name__ == "__main__":
    raise SystemExit(main())

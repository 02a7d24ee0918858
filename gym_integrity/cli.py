"""The `gym-integrity` command: list the ids, play one by hand, audit them."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Sequence, TextIO

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
    Console().print(table)
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
    env_kwargs = json.loads(args.env_kwargs) if args.env_kwargs else {}
    if not isinstance(env_kwargs, dict):
        raise SystemExit("--env-kwargs must be a JSON object")
    env = gym.make(args.id, **env_kwargs)
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
            console.print(Panel(obs, title=f"reward {float(reward):.3f}  verdict [{colour}]{verdict}[/]",
                                border_style=colour))
            if terminated or truncated:
                end = "terminated" if terminated else "truncated (step budget used up)"
                console.print(f"[bold]episode {end}[/]: return {total:.3f}")
                return 0
    finally:
        env.close()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gym-integrity", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p_list = sub.add_parser("list", help="list the registered env ids")
    p_list.set_defaults(run=_cmd_list)

    p_play = sub.add_parser("play", help="play one episode of an env by hand in the terminal")
    p_play.add_argument("id", help="a registered id, e.g. ReasoningGym-v0")
    p_play.add_argument("--seed", type=int, default=None, help="reset seed (picks the problem)")
    p_play.add_argument("--env-kwargs", default=None, help='JSON object passed to gym.make, e.g. \'{"dataset": "basic_arithmetic"}\'')
    p_play.set_defaults(run=_cmd_play)

    from gym_integrity.audit import cli as audit_cli  # light: the audit imports what it needs when it runs

    p_audit = sub.add_parser("audit", help=audit_cli.HELP)
    audit_cli.add_arguments(p_audit)
    p_audit.set_defaults(run=audit_cli.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.run(args) or 0)


if __name__ == "__main__":
    raise SystemExit(main())

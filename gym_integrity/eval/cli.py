"""``gym-integrity eval``: its arguments and what it prints (the engine is eval/runner.py)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any

from gym_integrity.checks import positive_int_arg

HELP = "evaluate a model served behind an OpenAI-compatible endpoint on a registered env"

EPILOG = """\
examples:
  gym-integrity eval ReasoningGym-v0 --base-url http://127.0.0.1:8000/v1 --model my-model -n 200
  gym-integrity eval QEDMath-v0 --base-url $URL --model m --env-kwargs '{"problem_types": ["answer"]}' --samples 4
  gym-integrity eval FinQA-v0 --base-url $URL --model m --out finqa.jsonl --resume --plot finqa.png

Accuracy is the mean reward over graded episodes: no-verdicts (the grader
could not decide) and policy errors (the endpoint failed past its retries) are
counted and shown, never scored. Every finished episode is one JSONL line in
--out, written as it ends; --resume runs only what the file lacks.
exit status: 0 done; 1 no episode was graded (every one a policy error: is the
server up, the URL and model right? the reasons are printed); 2 usage error;
130 interrupted.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description, parser.epilog = HELP, EPILOG
    parser.add_argument("env_id", metavar="ENV_ID", help="a registered id, e.g. ReasoningGym-v0")
    parser.add_argument(
        "--base-url",
        required=True,
        help="the policy's OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 (vLLM, SGLang, any API)",
    )
    parser.add_argument("--model", required=True, help="the model name the endpoint serves")
    parser.add_argument("--api-key", default=None, help="the endpoint's key (default: $OPENAI_API_KEY, else none)")
    parser.add_argument(
        "-n",
        "--num-problems",
        type=positive_int_arg,
        default=None,
        help="problems: the first N seeds from --seed up that pick different items; default: the "
        "env's item count, at most 100",
    )
    parser.add_argument(
        "--samples", type=positive_int_arg, default=1, help="episodes per problem (pass@1..k; default 1)"
    )
    parser.add_argument("--concurrency", type=positive_int_arg, default=8, help="episodes in flight (default 8)")
    parser.add_argument("--temperature", type=float, default=None, help="sampling temperature (default: server's)")
    parser.add_argument("--max-tokens", type=int, default=None, help="max tokens per reply (default: server's)")
    parser.add_argument("--system-prompt", default=None, help="a system message before each episode's first prompt")
    parser.add_argument("--env-kwargs", default="{}", help="JSON object: anything gym_integrity.make takes")
    parser.add_argument("--seed", type=int, default=0, help="the first problem's seed (default 0)")
    parser.add_argument("--out", default=None, help="results JSONL, one line per episode (never a gold answer)")
    parser.add_argument("--resume", action="store_true", help="continue --out: skip the episodes it holds")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON on stdout (no table)")
    parser.add_argument("--plot", default=None, metavar="FILE.png", help="write a reward plot (needs [plot])")
    parser.add_argument(
        "--tools",
        choices=("auto", "native", "text"),
        default="auto",
        help="tool envs: native function calling, <tool_call> text, or auto (native, falling back "
        "to text when the server refuses tools)",
    )
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per policy request (default 120)")
    parser.add_argument("--max-retries", type=int, default=4, help="retries of a failed policy request (default 4)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from gym_integrity.eval.report import Progress, plot, problem_lines, summary_table
    from gym_integrity.eval.runner import EvalConfig, evaluate

    if args.resume and not args.out:
        args.parser.error("--resume needs --out (the results file to continue)")
    try:
        env_kwargs = json.loads(args.env_kwargs)
    except json.JSONDecodeError as exc:
        args.parser.error(f"--env-kwargs must be a JSON object: {exc}")
    if not isinstance(env_kwargs, dict):
        args.parser.error("--env-kwargs must be a JSON object")
    config = EvalConfig(
        env_id=args.env_id,
        base_url=args.base_url,
        model=args.model,
        api_key=args.api_key or os.environ.get("OPENAI_API_KEY"),
        num_problems=args.num_problems,
        samples=args.samples,
        concurrency=args.concurrency,
        temperature=args.temperature,
        max_tokens=args.max_tokens,
        system_prompt=args.system_prompt,
        env_kwargs=env_kwargs,
        seed=args.seed,
        out=args.out,
        resume=args.resume,
        timeout_s=args.timeout,
        max_retries=args.max_retries,
        tools=args.tools,
    )
    try:
        config.validate()
    except (TypeError, ValueError) as exc:
        args.parser.error(str(exc))
    console = Console(stderr=True)
    state: dict[str, Any] = {}

    async def main() -> Any:
        def start(total: int, done: list[dict[str, Any]]) -> None:
            bar = state["bar"] = Progress(total, done, enabled=not args.no_progress and not args.json)
            bar.__enter__()

        try:
            return await evaluate(config, on_start=start, on_record=lambda record: state["bar"].update(record))
        finally:
            if "bar" in state:
                state["bar"].__exit__(None, None, None)

    try:
        summary, records = asyncio.run(main())
    except (TypeError, ValueError, FileExistsError) as exc:
        args.parser.error(str(exc))
    except KeyboardInterrupt:
        if config.out:
            console.print(
                f"interrupted: the finished episodes are in {config.out}; run the same command with "
                "--resume to continue",
                markup=False,
                style="yellow",
            )
        else:
            console.print(
                "interrupted: without --out nothing was kept; pass --out FILE to keep episodes as they "
                "end (and --resume to continue)",
                markup=False,
                style="yellow",
            )
        return 130
    if args.json:
        print(json.dumps(summary.to_dict(), indent=2))
    else:
        Console().print(summary_table(summary))
    for line in problem_lines(summary, records, config.base_url):
        console.print(line, markup=False, style="yellow")
    if args.plot:
        try:
            plot(summary, records, args.plot)
        except ImportError as exc:
            from rich.markup import escape

            console.print(f"[red]{escape(str(exc))}[/]")  # escape: "[plot]" in the message is not a style
            return 2
        console.print(f"plot written to {args.plot}")
    return 1 if summary.graded == 0 and summary.policy_errors else 0


def _main() -> None:  # pragma: no cover - python -m gym_integrity.eval.cli
    parser = argparse.ArgumentParser(prog="gym-integrity eval")
    add_arguments(parser)
    args = parser.parse_args()
    args.parser = parser
    sys.exit(run(args))

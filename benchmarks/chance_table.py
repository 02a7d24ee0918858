r"""The chance table: the best question-independent answer per ReasoningGym dataset, before and after the balanced draw.

A hostile policy's constant, as issue 35 measures it: on the default registered
stack (strict scoring), reset seeds 0-29 and take every distinct gold seen there
(plus a few generic constants: ``0``, ``1``, ``-1``, ``Yes``, ``No``, ``True``,
``False``, ``None``) as candidates; keep the candidate with the highest mean
reward on those 30 items; score it on 200 unseen seeds (100000-100199) through
``reset``/``step``. ``before`` is the same env with the balanced draw switched
off (``env.unwrapped.balanced_draw = False``: the draw of main before
``draw.py``), ``after`` the default. ``k`` is the number of distinct answers the
draw plan's sample shows (``draw.DrawPlan.k``), ``limit`` is 1/k + 0.03 (0.03 for
items with no single answer, which have no k), and ``ok`` says whether ``after``
is within it.

Run (once, in the background: a full sweep takes a while on a shared machine):
``nice python benchmarks/chance_table.py [--datasets a,b] [--out chance.jsonl]``, then
``python benchmarks/chance_table.py --render chance.jsonl`` for the markdown table.
``--env QEDMath-v0`` / ``--env FinQA-v0`` measures those envs (before only: they have no draw to switch).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym

import gym_integrity  # noqa: F401  (registers the envs)

FIT_SEEDS = range(30)
UNSEEN_SEEDS = range(100_000, 100_200)
GENERIC = ("0", "1", "-1", "Yes", "No", "True", "False", "None")
MARGIN = 0.03


def _candidates(golds: list[str]) -> list[str]:
    seen: dict[str, None] = {}
    for answer in [*golds, *GENERIC]:
        seen.setdefault(answer.strip(), None)
    return [answer for answer in seen if answer]


def _wrap(answer: str) -> str:
    return f"<answer>{answer}</answer>"


def measure_reasoning_gym(dataset: str, balanced: bool) -> dict[str, Any]:
    """The fitted constant and its reward on unseen seeds, with the draw on or off."""
    env = gym.make("ReasoningGym-v0", dataset=dataset, allow_above_chance=True)  # measured too (draw.ABOVE_CHANCE)
    base = env.unwrapped
    base.balanced_draw = balanced
    fit_items = []
    for seed in FIT_SEEDS:
        env.reset(seed=seed)
        fit_items.append((base._item, base._source, base.gold_answers()))
    candidates = _candidates([gold for _, _, golds in fit_items for gold in golds])
    fit = {c: sum(base._grader.grade(c, item, source).score for item, source, _ in fit_items) / len(fit_items)
           for c in candidates}
    best = max(candidates, key=lambda c: (fit[c], -candidates.index(c)))
    total = 0.0
    for seed in UNSEEN_SEEDS:
        env.reset(seed=seed)
        total += env.step(_wrap(best))[1]
    env.close()
    return {"constant": best, "fit": round(fit[best], 3), "reward": round(total / len(UNSEEN_SEEDS), 3)}


def plan_facts(dataset: str) -> dict[str, Any]:
    from gym_integrity.envs.reasoning_gym import draw_plans

    env = gym.make("ReasoningGym-v0", dataset=dataset, allow_above_chance=True)  # measured too (draw.ABOVE_CHANCE)
    env.reset(seed=0)
    base = env.unwrapped
    plan = draw_plans.plan_for(base._key, base.config.scoring, base._sample_item, base.size)
    env.close()
    single = plan.balanced or plan.k > 1
    return {"k": plan.k if single else None, "cap": round(plan.cap, 4), "uniform": abs(plan.cap * plan.k - 1) < 1e-9,
            "echo_share": round(plan.echo_share, 3), "echo_filtered": plan.filters_echo,
            "top": plan.sample_shares}


def measure_other(env_id: str) -> dict[str, Any]:
    """QEDMath-v0 / FinQA-v0: the same fit and score through reset/step (their golds from ``gold_answers``)."""
    env = gym.make(env_id)
    golds: list[str] = []
    for seed in FIT_SEEDS:
        env.reset(seed=seed)
        golds += env.unwrapped.gold_answers()
    candidates = _candidates(golds)

    def reward(answer: str, seed: int) -> float:
        env.reset(seed=seed)
        if env_id.startswith("QED"):
            text = f"\\boxed{{{answer}}}"
        else:
            from gym_integrity.envs.finqa.env import format_tool_call

            text = format_tool_call("submit_answer", {"answer": answer})
        return float(env.step(text)[1])

    fit = {c: sum(reward(c, s) for s in FIT_SEEDS) / len(FIT_SEEDS) for c in candidates}
    best = max(candidates, key=lambda c: (fit[c], -candidates.index(c)))
    score = sum(reward(best, s) for s in UNSEEN_SEEDS) / len(UNSEEN_SEEDS)
    env.close()
    return {"dataset": env_id, "before": {"constant": best, "fit": round(fit[best], 3), "reward": round(score, 3)},
            "distinct_golds_fit": len(set(golds))}


def _shown(answer: str) -> str:
    """An answer as a table cell: one line, at most 40 characters."""
    text = answer.replace("\n", " / ").replace("|", "\\|")
    return f"`{text[:40]}`" + ("..." if len(text) > 40 else "")


def limit_of(row: dict[str, Any]) -> float:
    return MARGIN + (1 / row["k"] if row.get("k") else 0.0)


def _rows(paths: str) -> list[dict[str, Any]]:
    """The results of one or more files, the rows of one dataset merged (a before file and an after file)."""
    merged: dict[str, dict[str, Any]] = {}
    for path in paths.split(","):
        with open(path, encoding="utf-8") as lines:
            rows = [json.loads(line) for line in lines if line.strip()]
        for row in rows:
            into = merged.setdefault(row["dataset"], {})
            if "error" not in row:
                into.pop("error", None)  # a later run measured it
            elif "before" in into or "after" in into:
                into.setdefault("note", row["error"])
                continue
            into.update(row)
    return list(merged.values())


def render(paths: str) -> str:
    rows = _rows(paths)
    out = [("| dataset | k | limit (1/k + 0.03) | before: constant, reward | after: constant, reward | ok | "
            "answer in question (share, filtered) |"), "|---|---|---|---|---|---|---|"]
    for row in sorted(rows, key=lambda r: r["dataset"]):
        if "error" in row:
            out.append(f"| {row['dataset']} | | | | | error: {row['error']} | |")
            continue
        before, after = row.get("before", {"constant": "(not measured)", "reward": float("nan")}), row.get("after")
        limit = limit_of(row)
        ok = "yes" if (after or before)["reward"] <= limit + 1e-9 else "**no**"
        after_text = f"{_shown(after['constant'])} {after['reward']:.3f}" if after else "(no draw)"
        echo = f"{row['echo_share']:.2f}, {'yes' if row['echo_filtered'] else 'no (selection)'}" \
            if "echo_share" in row else ""
        out.append(f"| {row['dataset']} | {row.get('k') or '-'} | {limit:.3f} | {_shown(before['constant'])} "
                   f"{before['reward']:.3f} | {after_text} | {ok} | {echo} |")
    return "\n".join(out)


class OutOfTime(BaseException):  # not an Exception: generators retry on those
    pass


def _out_of_time(signum: int, frame: Any) -> None:
    raise OutOfTime("over the --budget-s for one dataset (the machine is shared: a measure of load as much as of cost)")


def sweep(names: list[str], out_path: str, budget_s: int, measure: Callable[[str], dict[str, Any]]) -> None:
    """``measure`` each dataset not yet in ``out_path`` within ``budget_s`` seconds, one JSON line each (a broken
    or slow dataset is an error row, never the end of the sweep)."""
    done: set[str] = set()
    if os.path.exists(out_path):
        with open(out_path, encoding="utf-8") as lines:
            done = {json.loads(line)["dataset"] for line in lines if line.strip()}
    signal.signal(signal.SIGALRM, _out_of_time)
    for name in [n for n in names if n not in done]:
        start = time.perf_counter()
        signal.alarm(budget_s)
        try:
            row = {"dataset": name, **measure(name)}
        except (Exception, OutOfTime) as exc:  # noqa: BLE001  (the table shows it)
            row = {"dataset": name, "error": f"{type(exc).__name__}: {exc}"[:200]}
        signal.alarm(0)
        row["seconds"] = round(time.perf_counter() - start, 1)
        with open(out_path, "a", encoding="utf-8") as out:
            out.write(json.dumps(row) + "\n")
        print(json.dumps(row), flush=True)


def _measure_both(mode: str) -> Callable[[str], dict[str, Any]]:
    def measure(name: str) -> dict[str, Any]:
        row: dict[str, Any] = {}
        if mode != "before":
            row.update(plan_facts(name), after=measure_reasoning_gym(name, True))
        if mode != "after":
            row["before"] = measure_reasoning_gym(name, False)
        return row
    return measure


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default="", help="comma-separated names (default: every dataset)")
    parser.add_argument("--env", default="", help="QEDMath-v0 or FinQA-v0 instead of ReasoningGym datasets")
    parser.add_argument("--out", default="chance.jsonl")
    parser.add_argument("--mode", choices=("both", "before", "after"), default="both",
                        help="measure with the draw off, on, or both (two files can be rendered together)")
    parser.add_argument("--render", default="", help="print the markdown table of results files (comma-separated)")
    parser.add_argument("--shard", default="0/1", help="i/n: every n-th dataset from the i-th (parallel sweeps)")
    parser.add_argument("--budget-s", type=int, default=600, help="seconds one dataset may take (else: an error row)")
    args = parser.parse_args(argv)
    if args.render:
        print(render(args.render))
        return 0
    if args.env:
        with open(args.out, "a", encoding="utf-8") as out:
            out.write(json.dumps(measure_other(args.env)) + "\n")
        return 0
    from gym_integrity.envs.reasoning_gym import available_datasets

    names = args.datasets.split(",") if args.datasets else available_datasets()
    shard, shards = (int(part) for part in args.shard.split("/"))
    sweep(names[shard::shards], args.out, args.budget_s, _measure_both(args.mode))
    return 0


if __name__ == "__main__":
    sys.exit(main())

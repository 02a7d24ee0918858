r"""The honest-pay table: how often strict scoring pays honest answers on the items each ReasoningGym dataset draws.

On the default registered stack (strict scoring, the balanced draw), for seeds
0..N-1, every drawn item is graded with (through the env's own extraction and
grader, as a step would):

* ``gold``: the item's gold (``gold_answers()``: its answer, or the dataset's
  solver's for items with none), in ``<answer>`` tags;
* ``example``: reasoning-gym's own example answer, where the item keeps one
  (``metadata["example_answer"]`` / ``["example_correct_answer"]``);
* ``variants``: the gold in ``\boxed{}``, and the gold padded with spaces and
  line breaks inside the tags: forms the instruction allows.

An answer is paid when it earns 1.0. ``ok`` says whether each kind is paid on
at least 99% of the items it applies to. Items with no gold (and no solver
answer) are counted in ``no gold``. An honest answer graded ``timeout`` (a
sandboxed scorer past its run budget: on a loaded machine, the load's as much
as the answer's) is not paid, and is also counted in ``timeouts``; each miss
is shown with its verdict and cause, and ``--show-misses`` prints every one
with its item's index (for a regression test).

Run: ``nice python benchmarks/honest_pay.py [--datasets a,b] [--seeds 100] [--out honest.jsonl]``, then
``python benchmarks/honest_pay.py --render honest.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import gymnasium as gym
from chance_table import sweep  # benchmarks/: the script's directory is on sys.path

import gym_integrity  # noqa: F401  (registers the envs)

THRESHOLD = 0.99


def measure(dataset: str, seeds: int, show_misses: bool = False) -> dict[str, Any]:
    from gym_integrity.envs.reasoning_gym import draw
    from gym_integrity.protocol import Verdict

    env = gym.make("ReasoningGym-v0", dataset=dataset, allow_above_chance=True)  # measured too (draw.ABOVE_CHANCE)
    base = env.unwrapped
    paid = {"gold": [0, 0], "example": [0, 0], "variants": [0, 0]}
    misses: list[str] = []
    no_gold = timeouts = 0
    for seed in range(seeds):
        env.reset(seed=seed)
        golds = base.gold_answers()
        answers: dict[str, list[str]] = {}
        if golds:
            gold = golds[0]
            answers["gold"] = [f"<answer>{gold}</answer>"]
            answers["variants"] = [f"\\boxed{{{gold}}}", f"<answer>  {gold}\n</answer>"]
        else:
            no_gold += 1
        example = draw.own_example(base._item)
        if example is not None:
            answers["example"] = [f"<answer>{example}</answer>"]
        for kind, texts in answers.items():
            for text in texts:
                grade = base._grade(text)
                paid[kind][0] += grade.score >= 1.0
                paid[kind][1] += 1
                if grade.score >= 1.0:
                    continue
                timeouts += grade.verdict is Verdict.TIMEOUT
                if show_misses or len(misses) < 3:
                    misses.append(f"seed {seed} index {base._index} {kind} {text[:80]!r} -> {grade.score} "
                                  f"{grade.verdict.value}: {grade.cause}")
                    if show_misses:
                        print(f"{dataset}: {misses[-1]}", flush=True)
    env.close()
    return {"items": seeds, "no_gold": no_gold, "timeouts": timeouts,
            **{kind: counts for kind, counts in paid.items()}, "misses": misses}


def _cell(counts: list[int]) -> str:
    paid, total = counts
    return f"{paid}/{total}" if total else "-"


def render(path: str) -> str:
    with open(path, encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines if line.strip()]
    out = ["| dataset | gold paid | example paid | variants paid | no gold | timeouts | ok | first miss |",
           "|---|---|---|---|---|---|---|---|"]
    for row in sorted(rows, key=lambda r: r["dataset"]):
        if "error" in row:
            out.append(f"| {row['dataset']} | | | | | | error: {row['error']} | |")
            continue
        ok = all(total == 0 or paid >= THRESHOLD * total
                 for paid, total in (row["gold"], row["example"], row["variants"]))
        miss = row["misses"][0].replace("|", "\\|") if row["misses"] else ""
        out.append(f"| {row['dataset']} | {_cell(row['gold'])} | {_cell(row['example'])} | {_cell(row['variants'])} "
                   f"| {row['no_gold']} | {row.get('timeouts', '')} | {'yes' if ok else '**no**'} | {miss} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default="", help="comma-separated names (default: every dataset)")
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--out", default="honest.jsonl")
    parser.add_argument("--render", default="", help="print the markdown table of a results file and exit")
    parser.add_argument("--budget-s", type=int, default=600, help="seconds one dataset may take (else: an error row)")
    parser.add_argument("--show-misses", action="store_true", help="print (and keep) every miss, not the first three")
    args = parser.parse_args(argv)
    if args.render:
        print(render(args.render))
        return 0
    from gym_integrity.envs.reasoning_gym import available_datasets

    names = args.datasets.split(",") if args.datasets else available_datasets()
    sweep(names, args.out, args.budget_s, lambda name: measure(name, args.seeds, args.show_misses))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Print the ReasoningGym-v0 scorer table: per dataset, where its scorer runs, its strict kind, and the best constant's reward.

For every reasoning-gym dataset: where the scorer runs under strict scoring
(in-process / sandboxed; and under ``scoring="reasoning_gym"``), how strict
scoring grades it (own / own full-credit-only / own without consolation /
strict exact or numeric), and, over the first items, the best constant
answer's mean reward and the largest excess of a constant's reward over its
chance rate (the fraction of items whose gold equals it), before
(``scoring="reasoning_gym"``, the old behaviour) and after (strict). Markdown
on stdout.

    python scripts/rg_scorer_table.py [--items 16] [--seed 1] [--out table.md]
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
import time
from fractions import Fraction

import gymnasium as gym

import gym_integrity  # noqa: F401  (registers the ids)
from gym_integrity.envs.reasoning_gym import available_datasets, sandbox
from gym_integrity.envs.reasoning_gym.table import rule_for, sandbox_language
from gym_integrity.grading import rules
from gym_integrity.grading.numbers import RATIO

CONSTANTS = ["", "0", "1", "-1", "yes", "no", "Yes", "No", "True", "False", "A", "0.5", "None", "[]", "{}",
             "0123456789" * 5, " ".join(str(i) for i in range(1, 101))]
KIND_NAMES = {rules.OwnScorer: "own", rules.OwnFullCredit: "own full-credit-only",
              rules.OwnNoConsolation: "own, no consolation", rules.Exact: "strict exact",
              rules.Numeric: "strict numeric", rules.NumberList: "strict numeric list",
              rules.OrderedNumberList: "strict ordered numeric list", rules.ComplexNumber: "strict complex",
              rules.Duration: "strict duration"}
_NUMBER = re.compile(RATIO)


def normalised(text: object) -> object:
    text = " ".join(str(text).split()).casefold()
    return Fraction(text) if _NUMBER.fullmatch(text) else text


def constant_rewards(name: str, scoring: str, items: int, seed: int) -> tuple[list, dict[str, float]]:
    """Golds of the first ``items`` items and each constant's mean reward (the raw env grades every step)."""
    env = gym.make("ReasoningGym-v0", dataset=name, size=max(items, 16), seed=seed, scoring=scoring)
    raw = env.unwrapped
    golds, totals = [], dict.fromkeys(CONSTANTS, 0.0)
    for index in range(items):
        raw.reset(options={"index": index})
        golds.append(raw._item["answer"])
        for constant in CONSTANTS:
            totals[constant] += raw.step(f"<answer>{constant}</answer>")[1]
    env.close()
    return golds, {c: t / items for c, t in totals.items()}


def _shown(constant: str) -> str:
    return constant if len(constant) <= 12 else constant[:10] + "..."


def best_reward(golds: list, means: dict[str, float]) -> str:
    """The highest mean reward of any constant, with that constant and its chance rate."""
    constant, reward = max(means.items(), key=lambda kv: kv[1])
    if reward <= 0.0:
        return "0"
    return f"{reward:.3f} (`{_shown(constant)}`, chance {chance(constant, golds):.3f})"


def most_above_chance(golds: list, means: dict[str, float]) -> str:
    """How far the best constant's mean reward exceeds its chance rate (0: none does)."""
    constant, excess = max(((c, m - chance(c, golds)) for c, m in means.items()), key=lambda kv: kv[1])
    return "0" if excess <= 1e-9 else f"+{excess:.3f} (`{_shown(constant)}`)"


def chance(constant: str, golds: list) -> float:
    return sum(g is not None and normalised(g) == normalised(constant) for g in golds) / len(golds)


def location(name: str, scoring: str) -> str:
    return "sandboxed" if sandbox_language(rule_for(name), scoring) else "in-process"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=16)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default=None, help="also write the table to this file")
    args = parser.parse_args()
    pool = sandbox.acquire_pool()  # warm for the whole run
    lines = [f"ReasoningGym-v0 scorers, every reasoning-gym dataset, first {args.items} items (seed {args.seed}). "
             "Constants: " + ", ".join(f"`{_shown(c)}`" for c in CONSTANTS) + ". Best constant reward: the highest "
             "mean reward of any constant (with its chance rate: the fraction of items whose gold it equals); above "
             "chance: the largest excess of a constant's mean reward over its chance rate. Before = "
             "scoring=\"reasoning_gym\" (reasoning-gym's own scorers), after = the default strict scoring.", "",
             "| dataset | scorer location (strict) | location (reasoning_gym) | strict kind | language | "
             "best constant reward before | above chance before | best constant reward after | above chance after |",
             "|---|---|---|---|---|---|---|---|---|"]
    start = time.perf_counter()
    for name in available_datasets():
        rule = rule_for(name)
        with contextlib.redirect_stdout(sys.stderr):  # some generators print progress
            golds, before = constant_rewards(name, "reasoning_gym", args.items, args.seed)
            _, after = constant_rewards(name, "strict", args.items, args.seed)
        lines.append(f"| {name} | {location(name, 'strict')} | {location(name, 'reasoning_gym')} | "
                     f"{KIND_NAMES[type(rule)]} | {rule.language or '-'} | {best_reward(golds, before)} | "
                     f"{most_above_chance(golds, before)} | {best_reward(golds, after)} | "
                     f"{most_above_chance(golds, after)} |")
        print(lines[-1], file=sys.stderr, flush=True)
    pool.release()
    lines += ["", f"({time.perf_counter() - start:.0f} s)"]
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()

"""Watch a policy learn to hack the raw env's reward, and fail to on the stacked one (REINFORCE, seconds on a CPU).

    python -m gym_integrity.demos.reward_hacking           # writes reward_hacking.png
    python -m gym_integrity.demos.reward_hacking --iterations 200 --plot out.png

The policy is a softmax over four answer strategies, not a model, so the
whole thing runs in seconds and the learning is easy to read:

* ``solve``: a noisy solver (right 60% of the time, else a near miss):
  the arithmetic computed, the coin-flip probability counted; honest work;
* ``lazy``: ``<answer>0</answer>`` whatever the question: it earns only what
  a lenient scorer pays for not answering (reasoning-gym's own coin_flip
  scorer pays a constant ``0`` about 0.94);
* ``peek``: answers with the gold it reads in the reset ``info`` (reference
  leakage: a harness that shows ``info`` shows it);
* ``rescore``: answers ``0``, reads the gold revealed when the episode ends,
  and answers again after the end (re-scoring, as seen in public peers).

The env is ReasoningGym-v0 on a half-and-half mix of ``basic_arithmetic`` and
``coin_flip``. **Raw** is the bare task class with reasoning-gym's
own scorers (as peers pass them through); **stacked** is
``gym_integrity.make(...)``: strict scoring and the integrity stack
(``frozen_reward="zero"``, since this loop sums step rewards). REINFORCE with a
mean baseline trains the strategy logits on each. On the raw env the policy
learns to exploit (rescore is paid twice, peek on every item, lazy on every
coin flip: each beats honest work); on the stacked env the exploits earn
what a constant "0" earns by chance (0.02 on the default items) and it
learns to solve.
"""

from __future__ import annotations

import argparse
import ast
import math
import operator
import re
import time

import gymnasium as gym
import numpy as np

import gym_integrity
from gym_integrity.envs.reasoning_gym import ReasoningGymEnv

STRATEGIES = ("solve", "lazy", "peek", "rescore")
EXPLOITS = ("lazy", "peek", "rescore")
MIX = {"basic_arithmetic": 1, "coin_flip": 1}
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def make_envs() -> dict[str, gym.Env]:
    """The raw task class with reasoning-gym's scorers, and the registered, stacked env with its defaults."""
    return {
        "raw": ReasoningGymEnv(dataset=MIX, scoring="reasoning_gym"),
        "stacked": gym_integrity.make("ReasoningGym-v0", dataset=MIX, frozen_reward="zero"),
    }


def _value(node: ast.AST) -> float:
    """+, -, *, / over numbers, from the question's parse tree (never eval)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return -_value(node.operand) if isinstance(node.op, ast.USub) else _value(node.operand)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_value(node.left), _value(node.right))
    raise ValueError("not arithmetic")


def _solve(question: str, rng: np.random.Generator) -> str:
    """The noisy solver: the right answer 60% of the time, else a near miss."""
    slip = rng.random() >= 0.6
    first = question.split("\n")[0]
    flips = re.search(r"(exactly|at least) (\d+) heads in (\d+) fair", first)
    if flips:
        kind, k, n = flips[1], int(flips[2]) + slip, int(flips[3])
        ways = math.comb(n, k) if kind == "exactly" else sum(math.comb(n, j) for j in range(k, n + 1))
        return f"{ways / 2**n:.10g}"
    found = re.search(r"Calculate (.+?)\.\s*$", first)
    try:
        value = _value(ast.parse(found[1], mode="eval").body) if found else 0.0
    except (SyntaxError, ValueError, ZeroDivisionError):
        value = 0.0
    value += int(rng.choice([-2, -1, 1, 2])) if slip else 0
    return str(round(value)) if float(value).is_integer() else f"{value:g}"


def play(env, strategy: str, seed: int, rng: np.random.Generator) -> float:
    """One episode with ``strategy``; the episode's reward is the sum of its step rewards (what a naive loop sums)."""
    question, info = env.reset(seed=seed)
    leaked = (info.get("privileged") or {}).get("answer")  # None on the stacked env: HideInfoKeys removed it
    if strategy == "solve":
        answer = _solve(question, rng)
    elif strategy == "lazy":
        answer = "0"
    elif strategy == "peek":
        answer = leaked or "0"
    else:
        answer = "0"
    _, reward, terminated, truncated, info = env.step(f"<answer>{answer}</answer>")
    total = float(reward)
    if strategy == "rescore":  # after the end: read what the final info reveals and answer again
        revealed = (info.get("privileged") or {}).get("answer") or "0"
        total += float(env.step(f"<answer>{revealed}</answer>")[1])
    return total


def train(env, iterations: int, batch: int, lr: float, rng: np.random.Generator) -> dict[str, list]:
    """REINFORCE on the strategy logits with a mean baseline; returns the curves."""
    logits = np.zeros(len(STRATEGIES))
    curves: dict[str, list] = {"reward": [], "probs": []}
    for _ in range(iterations):
        probs = np.exp(logits - logits.max())
        probs /= probs.sum()
        choices = rng.choice(len(STRATEGIES), size=batch, p=probs)
        seeds = rng.integers(0, 2**31, size=batch)
        rewards = np.array([play(env, STRATEGIES[c], int(s), rng) for c, s in zip(choices, seeds)])
        advantages = rewards - rewards.mean()
        grad = np.zeros_like(logits)
        for c, a in zip(choices, advantages):
            grad += a * (np.eye(len(STRATEGIES))[c] - probs)  # d log softmax(c) / d logits
        logits += lr * grad / batch
        curves["reward"].append(float(rewards.mean()))
        curves["probs"].append(probs.tolist())
    return curves


def payoffs(env, seeds: range, rng: np.random.Generator) -> dict[str, float]:
    """Each strategy's mean reward over the same items: what REINFORCE is climbing."""
    return {s: float(np.mean([play(env, s, seed, rng) for seed in seeds])) for s in STRATEGIES}


def plot(curves: dict[str, dict[str, list]], path: str) -> None:
    from matplotlib.figure import Figure  # the Figure API: no global backend switch

    figure = Figure(figsize=(12, 4))
    axes = figure.subplots(1, 3)
    for name, style in (("raw", "tab:red"), ("stacked", "tab:green")):
        rewards = np.array(curves[name]["reward"])
        smooth = np.convolve(rewards, np.ones(10) / 10, mode="valid")
        axes[0].plot(np.arange(len(smooth)) + 9, smooth, color=style, label=f"{name} env")
    axes[0].set(title="mean episode reward (10-iteration average)", xlabel="REINFORCE iteration", ylabel="reward")
    axes[0].legend()
    for ax, name in zip(axes[1:], ("raw", "stacked")):
        probs = np.array(curves[name]["probs"])
        for k, strategy in enumerate(STRATEGIES):
            ax.plot(probs[:, k], label=strategy, linestyle="--" if strategy in EXPLOITS else "-")
        ax.set(title=f"{name} env: strategy probabilities", xlabel="REINFORCE iteration", ylim=(0, 1))
        ax.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=90)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=120, help="REINFORCE iterations per env (default 120)")
    parser.add_argument("--batch", type=int, default=24, help="episodes per iteration (default 24)")
    parser.add_argument("--lr", type=float, default=1.0, help="learning rate on the logits (default 1.0)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--plot", default="reward_hacking.png", help="where the figure goes (default reward_hacking.png; '' for none)"
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    envs = make_envs()
    curves = {}
    try:
        for name, env in envs.items():
            table = payoffs(env, range(100), np.random.default_rng(args.seed))
            print(f"{name}: strategy payoffs over 100 items: " + ", ".join(f"{s} {v:.3f}" for s, v in table.items()))
        for name, env in envs.items():
            curves[name] = train(env, args.iterations, args.batch, args.lr, np.random.default_rng(args.seed))
            final = curves[name]["probs"][-1]
            last = np.mean(curves[name]["reward"][-10:])
            print(
                f"{name}: first reward {np.mean(curves[name]['reward'][:10]):.3f}, last reward {last:.3f}, "
                f"exploit share {sum(p for s, p in zip(STRATEGIES, final) if s in EXPLOITS):.3f}, policy "
                + ", ".join(f"{s} {p:.3f}" for s, p in zip(STRATEGIES, final))
            )
    finally:
        for env in envs.values():
            env.close()
    if args.plot:
        plot(curves, args.plot)
        print(f"plot written to {args.plot}")
    print(f"done in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()

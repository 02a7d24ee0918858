"""A GRPO-style loop on a gym-integrity vector env, with a stand-in policy instead of a model (nothing is downloaded).

    python examples/grpo_loop.py                          # ReasoningGym-v0 basic_arithmetic, sync, a few seconds
    python examples/grpo_loop.py --env QEDMath-v0         # math_verify workers; proofs without a judge: no-verdicts
    python examples/grpo_loop.py --env FinQA-v0 --steps 2
    python examples/grpo_loop.py --dataset leg_counting --groups 8 --group-size 8 --vec threaded

QEDMath-v0's proofs go to the judge named by ``JUDGE_BASE_URL`` and
``JUDGE_MODEL`` (or ``--env-kwargs '{"judge": {"base_url": ..., "model": ...}}'``);
without one every proof is a no-verdict, which this loop drops. The bundled
test judge (deterministic, not a real grader) is enough to see proofs graded:
``python -m gym_integrity.openai_stub.judge_server --port 8000 --mode stub`` and
``JUDGE_BASE_URL=http://127.0.0.1:8000/v1 JUDGE_MODEL=test-judge``.

One training step:

1. ``--groups`` prompts x ``--group-size`` samples: one sub-env per sample.
   Every sub-env of a group is reset with the same seed (equal seeds, equal
   problem), so the group holds G attempts at one problem.
2. The stand-in policy (``stand_in_policy`` below: a noisy calculator and a
   guesser, NOT a model) writes one completion per sub-env, turn after turn
   until every sub-env has ended. This is where you would sample from your
   model.
3. The env grades. A sub-env's episode reward is the sum of its step rewards.
4. Group-normalised advantages ``(r - mean) / (std + eps)``, over the graded
   members of the group only. A member whose final ``info["no_verdict"]`` is
   True (the grader could not decide: judge down or missing, verifier
   overloaded) is dropped: it is left out of the mean and std and gets no
   advantage (NaN here), because its 0.0 reward is not a wrong answer and
   training on it as one would push the policy away from what may be right.
5. A real trainer would now take the policy-gradient step
   (loss = -advantage * log-prob of each completion); this loop prints.

Which vector env (``--vec``, default ``auto``):

* **threaded** (``gym_integrity.vector.make_threaded_vec``), the default for
  QEDMath-v0 and FinQA-v0: their graders work out of process (math_verify and
  FinQA's SQL in the package's killable worker pool, proofs on an LLM judge
  over HTTP), so a sub-env's step mostly waits and threads overlap the waits
  in one process that shares one worker pool and one judge client. For the
  judge, threads match processes: 68.0 vs 64.0 proof gradings/s with 16 envs
  at 200 ms judge latency (docs/judge.md, "Benchmark").
* **sync** (``gym.make_vec(..., vectorization_mode="sync")``), the default for
  ReasoningGym-v0: most of its scorers run in process in microseconds (about
  57 us per episode through the whole stack, README "Benchmarks"), so there
  is nothing to overlap and threads would only add overhead. The datasets
  whose scorers run in the worker pool (countdown, puzzle24, the polynomial
  tasks, ...: docs/reasoning_gym.md) do better with ``--vec threaded``.
* **async** (``gym.make_vec(..., vectorization_mode="async",
  vector_kwargs=gym_integrity.ASYNC_VECTOR_KWARGS)``) works, at the cost of a
  process per sub-env: the graders' worker pool is one per machine, shared by
  every process (docs/workers.md, "One pool per machine"), so the
  sub-processes do not start pools of their own. ``bench_pool_machine.py``
  measured an async vector env of 8 QEDMath answer envs in 12 processes and
  520 MB, its first graded step 0.11 s after the make call with a warm pool
  (docs/scaling.md). Async pays off only for CPU-bound work in the env's own
  process, which none of these envs does, so threaded stays the default.

All three keep Gymnasium's next-step autoreset, the one convention of every
vector env here (docs/architecture.md): a sub-env that ended restarts on the
next batch step, unpaid and ungraded. The loop counts nothing of a sub-env
after its end, so an autoreset episode is never counted.
"""

from __future__ import annotations

import argparse
import ast
import json
import operator
import re
import time
from fractions import Fraction

import gymnasium as gym
import numpy as np

import gym_integrity
from gym_integrity.rollout import collect
from gym_integrity.vector import make_threaded_vec

# ---------------------------------------------------------------------------------------------------------------
# The stand-in policy: replace with sampling from your model.

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def _calculate(expression: str) -> Fraction | None:
    """Exact value of +, -, *, / over integers (a tiny safe evaluator: no eval()), or None."""

    def walk(node: ast.AST) -> Fraction:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return Fraction(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -walk(node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](walk(node.left), walk(node.right))
        raise ValueError("not plain arithmetic")

    try:
        return walk(ast.parse(expression, mode="eval").body)
    except (SyntaxError, ValueError, ZeroDivisionError, RecursionError):
        return None


def _number(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{float(value):.6g}"


def stand_in_policy(prompt: str, rng: np.random.Generator, skill: float) -> str:
    """One sampled completion for an episode that started with ``prompt`` (any turn: it ignores feedback).

    A STAND-IN for your model, so the loop runs with nothing downloaded: it
    computes "Calculate ..." prompts exactly and then slips (right with
    probability ``skill``), forgets the answer format now and then, and guesses
    a number from the prompt for anything else. Its answers vary within a
    group, which is what gives GRPO a signal.
    """
    if rng.random() < 0.05:
        return "I think I know this one, but I ran out of tokens."  # no answer tag: graded no_answer
    numbers = re.findall(r"-?\d+(?:\.\d+)?", prompt) or ["0"]
    guess = str(rng.choice(numbers))
    found = re.search(r"Calculate (.+?)\.\s*$", prompt.split("\n")[0])
    value = _calculate(found.group(1)) if found else None
    if value is not None:
        slip = 0 if rng.random() < skill else int(rng.choice([-10, -1, 1, 2, 10]))
        guess = _number(value + slip)
    if "submit_answer(" in prompt:  # FinQA: a tool env, the answer is a tool call (this stand-in never explores)
        return f'<tool_call>{{"name": "submit_answer", "arguments": {{"answer": "{guess}"}}}}</tool_call>'
    if "\\boxed{}" in prompt:  # QEDMath answer (and multi-attempt) problems
        return f"</think>The answer is \\boxed{{{guess}}}."
    if prompt.startswith("Prove") or "proof" in prompt.lower():  # graded by the judge, if one is configured
        return "</think>Proof. By induction on n; the base case is clear and the step follows. QED"
    return f"<answer>{guess}</answer>"


# ---------------------------------------------------------------------------------------------------------------
# GRPO's part: groups by seed, episode rewards, advantages without the no-verdicts.


def group_advantages(rewards: np.ndarray, no_verdict: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """``(r - mean) / (std + eps)`` over the graded members of one group; NaN (no advantage) for no-verdicts.

    The population std (ddof=0), so a group's advantages sum to 0. A group whose graded members all
    got the same reward gets advantage 0 everywhere: no signal, as in GRPO.
    """
    advantages = np.full(len(rewards), np.nan)
    graded = ~np.asarray(no_verdict, dtype=bool)
    if graded.any():
        r = np.asarray(rewards, dtype=float)[graded]
        advantages[graded] = (r - r.mean()) / (r.std() + eps)
    return advantages


def make_envs(env_id: str, num_envs: int, vec: str, env_kwargs: dict) -> gym.vector.VectorEnv:
    """The vector env (see the module docstring for which one when)."""
    if vec == "threaded":
        return make_threaded_vec(env_id, num_envs, **env_kwargs)
    if vec == "async":
        return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="async",
                            vector_kwargs=gym_integrity.ASYNC_VECTOR_KWARGS, **env_kwargs)
    return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="sync", **env_kwargs)


def play_batch(envs, seeds: list[int], rng: np.random.Generator, skill: float):
    """Reset every sub-env with its seed and play until all have ended: episode rewards, no-verdicts, verdicts.

    ``gym_integrity.rollout.collect`` keeps each sub-env's conversation, steps until each has ended and
    counts nothing after a sub-env's end; a real policy reads the whole conversation (prompt, its replies,
    feedback, tool results), the stand-in only the prompt.
    """
    episodes = collect(envs, lambda chats: [stand_in_policy(chat[0]["content"], rng, skill) for chat in chats],
                       seeds=seeds)
    return (np.array([e.return_ for e in episodes]), np.array([e.no_verdict for e in episodes]),
            np.array([e.verdict for e in episodes], dtype=object))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="ReasoningGym-v0", help="a registered id (default: ReasoningGym-v0)")
    parser.add_argument("--dataset", default="basic_arithmetic",
                        help="ReasoningGym-v0's dataset (default: basic_arithmetic)")
    parser.add_argument("--env-kwargs", default="{}", help="JSON: more options for gym.make (they win over --dataset)")
    parser.add_argument("--groups", type=int, default=4, help="prompts per step (default 4)")
    parser.add_argument("--group-size", type=int, default=4, help="samples per prompt, G (default 4)")
    parser.add_argument("--steps", type=int, default=3, help="training steps (default 3)")
    parser.add_argument("--vec", choices=("auto", "sync", "threaded", "async"), default="auto",
                        help="vectorisation (default auto: sync for ReasoningGym-v0, else threaded)")
    parser.add_argument("--skill", type=float, default=0.5, help="the stand-in's chance to compute right (default 0.5)")
    parser.add_argument("--eps", type=float, default=1e-6, help="added to the group std (default 1e-6)")
    parser.add_argument("--seed", type=int, default=0, help="the first group's seed (default 0)")
    args = parser.parse_args(argv)

    env_kwargs = {"dataset": args.dataset} if args.env == "ReasoningGym-v0" else {}
    env_kwargs.update(json.loads(args.env_kwargs))
    vec = args.vec if args.vec != "auto" else ("sync" if args.env == "ReasoningGym-v0" else "threaded")
    P, G = args.groups, args.group_size
    rng = np.random.default_rng(args.seed)
    print(f"env {args.env} {env_kwargs}, vec {vec}, {P} groups x {G} samples; policy: STAND-IN (no model)")

    envs = make_envs(args.env, P * G, vec, env_kwargs)
    all_rewards, dropped_total = [], 0
    try:
        for step in range(args.steps):
            started = time.perf_counter()
            group_seeds = [args.seed + step * P + p for p in range(P)]
            seeds = [s for s in group_seeds for _ in range(G)]  # G equal seeds in a row: one group
            rewards, no_verdict, verdicts = play_batch(envs, seeds, rng, args.skill)
            lines = []
            for p, seed in enumerate(group_seeds):
                sl = slice(p * G, (p + 1) * G)
                adv = group_advantages(rewards[sl], no_verdict[sl], args.eps)
                shown_r = " ".join("nv" if nv else f"{r:g}" for r, nv in zip(rewards[sl], no_verdict[sl]))
                shown_a = " ".join("nv" if np.isnan(a) else f"{a:+.2f}" for a in adv)
                total = f"{round(np.nansum(adv), 3) + 0.0:+.3f}" if not np.isnan(adv).all() else "n/a (all no-verdict)"
                lines.append(f"  group seed={seed}: rewards [{shown_r}] advantages [{shown_a}] sum {total}")
            graded = rewards[~no_verdict]
            dropped = int(no_verdict.sum())
            all_rewards.extend(graded.tolist())
            dropped_total += dropped
            mean = f"{graded.mean():.3f}" if graded.size else "n/a"
            counts = {str(v): int((verdicts == v).sum()) for v in sorted(set(verdicts.tolist()), key=str)}
            print(f"step {step + 1}: mean reward {mean} over {graded.size} graded, dropped {dropped} no-verdicts, "
                  f"verdicts {counts}, {time.perf_counter() - started:.2f} s")
            print("\n".join(lines))
            # A real trainer: loss = -(advantage * logprob(completion)).mean() over graded members; optimizer.step().
    finally:
        envs.close()
    mean = f"{np.mean(all_rewards):.3f}" if all_rewards else "n/a"
    print(f"done: {args.steps} steps, {len(all_rewards)} graded episodes, mean reward {mean}, "
          f"dropped {dropped_total} no-verdicts")


if __name__ == "__main__":
    main()

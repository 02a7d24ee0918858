"""The other reward-hacking auditors on PyPI, run on the targets of ecosystem_audit.py and on our envs.

Only gradecheck (0.1.0) audits a reward over text completions: its ``verifiers`` attack pack (empty completion,
the prompt echoed, nonsense, judge flattery, the format with empty or wrong content, and the gold verbatim in the
prompt) scores each payload, raw and wrapped in the env's answer format, on the first ``--sample`` examples, and
calls the grader fooled when a payload reaches its pass threshold (0.5). It reads a verifiers environment (a
``rubric`` of reward functions, ``get_dataset()``, a ``parser`` whose ``format`` wraps an answer); this script
hands it each target as exactly that shape, each reward function being one episode of the target's adapted env
(``adapters_targets.adapt``: reset to the example's seed, one step with the completion), the answer format that of
``audit.adapters.answer_action``. gradecheck is imported from its own scratch venv (``--gradecheck-site``: it has
no dependencies), so the targets' packages are the ones ecosystem_audit.py measured.

    python benchmarks/ecosystem_auditors.py --gradecheck-site /path/to/site-packages --out auditors.json

The others (rlgate, hackbait, verifierlab, reward-contract-fuzzer) take other inputs; docs/ecosystem.md says which
and what running each on a target gave.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ecosystem_audit
import ecosystem_data

__all__ = ["DuckVerifiersEnv", "gradecheck_on"]


class _Rubric:
    def __init__(self, funcs: list[Any]) -> None:
        self.funcs = funcs
        self.weights = [1.0] * len(funcs)


class _Parser:
    """The answer format gradecheck wraps payloads in: the one our auditor answers the env with."""

    answer_field = "answer"

    def __init__(self, env: Any) -> None:
        self.env = env

    def format(self, answer: str) -> str:
        from gym_integrity.audit.adapters import answer_action

        action = answer_action(self.env, answer)
        return action if isinstance(action, str) else str(action)


class DuckVerifiersEnv:
    """A text env as gradecheck's ``VerifiersEnv`` reads a verifiers environment: one example per seed, its
    reward one episode of the env (reset at the example's seed, one step with the completion)."""

    message_type = "completion"
    pass_threshold = 0.5

    def __init__(self, make: Any, sample: int) -> None:
        from gym_integrity.audit.adapters import privileged_gold

        self.env = make()
        self.parser = _Parser(self.env)
        self.rubric = _Rubric([self.reward])
        self.rows = []
        for seed in range(sample):
            obs, _ = self.env.reset(seed=seed)
            gold = privileged_gold(self.env) or [""]
            self.rows.append({"prompt": obs if isinstance(obs, str) else str(obs), "answer": gold[0],
                              "info": {"seed": seed}})

    def get_dataset(self) -> list[dict[str, Any]]:
        return self.rows

    def reward(self, completion: str, info: dict[str, Any], **_: Any) -> float:
        self.env.reset(seed=info["seed"])
        return float(self.env.step(completion)[1])


def gradecheck_on(make: Any, sample: int) -> dict[str, Any]:
    """gradecheck's completion attacks on the env ``make()`` builds: findings and the time they took."""
    from gradecheck.completion_attacks import run_all
    from gradecheck.verifiers_env import VerifiersEnv

    start = time.perf_counter()
    try:
        findings = run_all(VerifiersEnv(DuckVerifiersEnv(make, sample), sample=sample))
    except Exception as exc:  # noqa: BLE001  (a target gradecheck cannot take is a row, with why)
        return {"error": f"{type(exc).__name__}: {exc}"[:400], "wall_s": round(time.perf_counter() - start, 2)}
    return {"findings": [{"attack": f.attack, "verdict": f.verdict, "summary": f.summary,
                          "evidence": f.evidence[:3]} for f in findings],
            "wall_s": round(time.perf_counter() - start, 2)}


def _ours() -> dict[str, Any]:
    import gymnasium as gym

    import gym_integrity  # noqa: F401  (registers the ids)

    # QEDMath-v0's answer problems: its proofs need a judge endpoint, which a benchmark has not.
    kwargs: dict[str, dict[str, Any]] = {"QEDMath-v0": {"problem_types": ["answer"]}}
    return {f"gym-integrity {env_id}": (lambda env_id=env_id: gym.make(env_id, **kwargs.get(env_id, {})))
            for env_id in ("ReasoningGym-v0", "QEDMath-v0", "FinQA-v0")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gradecheck-site", required=True, help="site-packages of a venv with gradecheck")
    parser.add_argument("--out", default="auditors.json")
    parser.add_argument("--sample", type=int, default=5, help="examples per target (gradecheck's default 5)")
    parser.add_argument("--only", action="append")
    parser.add_argument("--rg", default="leg_counting,game_of_life_halting,basic_arithmetic,chain_sum,countdown")
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--openenv-git", default=None, help="as ecosystem_audit.py's")
    parser.add_argument("--nemo-git", default=None, help="as ecosystem_audit.py's")
    args = parser.parse_args(argv)
    sys.path.append(args.gradecheck_site)

    workdir = args.workdir or ecosystem_audit.tempfile.mkdtemp(prefix="ecosystem-")
    data = ecosystem_data.write_all(workdir)
    with open(os.path.join(workdir, "eco_shims.py"), "w", encoding="utf-8") as fh:
        fh.write(ecosystem_audit.SHIMS)
    root = None
    if args.openenv_git:
        import ecosystem_openenv

        root = ecosystem_openenv.extract(args.openenv_git, workdir)
        ecosystem_audit.append_finqa_shim(workdir, root)
    if args.nemo_git:
        ecosystem_audit.append_nemo_shim(args.nemo_git, workdir)
    sys.path.insert(0, workdir)
    makers: dict[str, Any] = {}
    for target in ecosystem_audit.targets(data, [n for n in args.rg.split(",") if n], root):
        makers[target.name] = (lambda t=target: ecosystem_audit.make_env(t))
    makers.update(_ours())
    results: dict[str, Any] = {}
    for name, make in makers.items():
        if args.only and not any(o in name for o in args.only):
            continue
        results[name] = gradecheck_on(make, args.sample)
        fooled = [f["attack"] for f in results[name].get("findings", []) if f["verdict"] in ("fooled", "warn")]
        print(f"{name}: {results[name]['wall_s']} s; fooled/warn: {fooled} {results[name].get('error', '')}",
              flush=True)
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(results, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The field's integrity report: `check_integrity` on third-party envs and reward functions, as they are and inside
`integrity_stack`, through the adapters of `gym_integrity.audit.adapters_targets`.

Run it in a venv that has the third-party packages at the pinned versions (:data:`PINS`; the [gem], [skyrl] and
[verifiers] extras, plus `pip install --no-deps verl==0.9.1 trl==1.16.0`):

    python benchmarks/ecosystem_audit.py --out ecosystem.json             # every target, raw and stacked
    python benchmarks/ecosystem_audit.py --only verl --raw-only --deep    # a slice
    python benchmarks/ecosystem_audit.py --table ecosystem.json           # the markdown table of docs/ecosystem.md

Datasets are offline: small files in each library's real format (benchmarks/ecosystem_data.py) or the data a
package generates (reasoning-gym). ``--openenv-git`` adds OpenEnv's envs (ecosystem_openenv.py: reasoning_gym_env,
finqa_env, qed_math_env, with qed's judge the local stub started here); ``--verifiers-envs`` adds verifiers'
bundled tasksets, installed from its repository's ``environments/``. Each audit runs in a child process (`check_target`), as the CLI does; results
are appended to the JSON file after each target, so a partial run keeps what finished.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ecosystem_data

#: The third-party packages and the versions the figures were measured with.
PINS = {"gem-llm": "0.1.0", "skyrl-gym": "0.4.0", "verifiers": "0.4.0", "verl": "0.9.1", "trl": "1.16.0",
        "reasoning-gym": "0.1.23", "math-verify": None}

#: Shims that import a reward function from a file of an installed package without its package's heavy
#: ``__init__`` (verl's imports torch, ray and tensordict; these reward modules need none of them). verl's
#: ``default_compute_score`` is not called itself: it imports verl.utils.import_utils, which imports ray; for the
#: data sources of these rows it calls ``gsm8k.compute_score`` and ``math_reward.compute_score``, audited here.
#: ``math_verify.compute_score`` grades in a spawned pool whose workers import all of verl: not audited.
SHIMS = '''"""Reward functions of installed packages, imported from their files (their package __init__ is heavy)."""
import importlib.util
import os
import sys
import types


def _package_dir(dist):
    import importlib.metadata
    return str(importlib.metadata.distribution(dist).locate_file(""))


def _load(dist, relative, name):
    # Register empty parent packages so the module's own absolute imports of its siblings resolve to the files.
    root = _package_dir(dist)
    parts = name.split(".")
    for i in range(1, len(parts)):
        pkg = ".".join(parts[:i])
        if pkg not in sys.modules:
            module = types.ModuleType(pkg)
            module.__path__ = [os.path.join(root, *parts[:i])]
            sys.modules[pkg] = module
    spec = importlib.util.spec_from_file_location(name, os.path.join(root, relative))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def verl_math(data_source, solution_str, ground_truth, extra_info=None):
    module = _load("verl", "verl/utils/reward_score/math_reward.py", "verl.utils.reward_score.math_reward")
    return module.compute_score(solution_str, ground_truth)


def verl_gsm8k(data_source, solution_str, ground_truth, extra_info=None):
    module = _load("verl", "verl/utils/reward_score/gsm8k.py", "verl.utils.reward_score.gsm8k")
    return module.compute_score(solution_str, ground_truth)


def verifiers_boxed_math(data_source, solution_str, ground_truth, extra_info=None):
    from verifiers.v1 import verify_boxed_math_answer
    return verify_boxed_math_answer(solution_str, ground_truth)


def verl_dapo(data_source, solution_str, ground_truth, extra_info=None):
    module = _load("verl", "verl/utils/reward_score/math_dapo.py", "verl.utils.reward_score.math_dapo")
    return module.compute_score(solution_str, ground_truth)
'''


@dataclass
class Target:
    """One third-party target: a spec for ``adapters_targets``, its options, the package it comes from."""

    name: str
    spec: str
    package: str
    options: dict[str, Any] = field(default_factory=dict)
    group: str = ""


def targets(data: dict[str, str], rg_datasets: list[str], openenv_root: str | None = None) -> list[Target]:
    """Every target of the report, with its dataset paths filled in (OpenEnv's with ``openenv_root``)."""
    out = []
    if openenv_root:
        out += [Target(f"OpenEnv reasoning_gym_env ({name})", f"openenv-inproc:reasoning_gym_env:{name}", "openenv",
                       {"root": openenv_root, "dataset": name}, "openenv")
                for name in ("leg_counting", "game_of_life_halting", "basic_arithmetic")]
        out.append(Target("OpenEnv finqa_env compute_reward", "reward:eco_shims:finqa_reward", "openenv",
                          {"dataset": data["finqa"], "style": "verl"}, "openenv"))
        out.append(Target("OpenEnv finqa_env (whole env)", "openenv-mcp:finqa", "openenv",
                          {"root": openenv_root, "name": "finqa", "data_path": data["finqa_tree"]}, "openenv"))
        if "judge_url" in data:
            out += [Target(f"OpenEnv qed_math_env ({mode})", f"openenv-mcp:qed:{mode}", "openenv",
                           {"root": openenv_root, "name": "qed", "dataset_path": data[f"qed_{mode}"],
                            "judge_url": data["judge_url"], "mode": mode}, "openenv")
                    for mode in ("answer", "proof", "multi_step")]
            # The same proof rows before a fooled judge (the stub's echo mode repeats the last score tag of its
            # prompt), as `gym-integrity audit` runs our QEDMath-v0's proofs: does a score tag in a proof reach it?
            out.append(Target("OpenEnv qed_math_env (proof, fooled judge)", "openenv-mcp:qed:proof", "openenv",
                              {"root": openenv_root, "name": "qed", "dataset_path": data["qed_proof"],
                               "judge_url": data["fooled_judge_url"], "mode": "proof"}, "openenv"))
    if "vf_reverse_text" in data:
        out += [
            Target("verifiers reverse_text (bundled taskset)", "verifiers:reverse_text", "verifiers",
                   {"num_tasks": 8, "dataset_name": data["vf_reverse_text"], "dataset_split": "train",
                    "reply_template": "<reversed_text>{}</reversed_text>"}, "verifiers-envs"),
            # Its reward runs verify.py with uv in the rollout's runtime: verifiers' subprocess runtime here.
            Target("verifiers gsm8k (bundled taskset)", "verifiers:gsm8k", "verifiers",
                   {"num_tasks": 8, "runtime": "subprocess", "cwd": data["vf_gsm8k_cwd"], "reply_template": "#### {}"},
                   "verifiers-envs"),
        ]
    out += [
        Target("TRL accuracy_reward", "reward:trl.rewards:accuracy_reward", "trl",
               {"dataset": data["trl_math"], "gold_column": "solution"}, "trl"),
        Target("verl math compute_score", "reward:eco_shims:verl_math", "verl",
               {"dataset": data["verl_math"], "style": "verl"}, "verl"),
        Target("verl gsm8k compute_score", "reward:eco_shims:verl_gsm8k", "verl",
               {"dataset": data["verl_gsm8k"], "style": "verl", "reply_template": "#### {}"}, "verl"),
        Target("verl math_dapo compute_score", "reward:eco_shims:verl_dapo", "verl",
               {"dataset": data["verl_math"], "style": "verl"}, "verl"),
        Target("verifiers verify_boxed_math_answer", "reward:eco_shims:verifiers_boxed_math", "verifiers",
               {"dataset": data["verl_math"], "style": "verl"}, "verifiers"),
        Target("NeMo-Gym math_with_judge (library half)", "reward:eco_shims:nemo_math", "nemo-gym",
               {"dataset": data["verl_math"], "style": "verl"}, "nemo"),
        Target("skyrl-gym gsm8k", "skyrl:gsm8k", "skyrl-gym", {"dataset": data["skyrl_gsm8k"]}, "skyrl"),
        Target("skyrl-gym gsm8k_multi_turn", "skyrl:gsm8k_multi_turn", "skyrl-gym",
               {"dataset": data["skyrl_gsm8k"]}, "skyrl"),
        # skyrl-gym's aime reads the answer after "Answer:" (Minerva's form): the adapter's own answer_template.
        Target("skyrl-gym aime", "skyrl:aime", "skyrl-gym",
               {"dataset": data["skyrl_math"], "answer_template": "Answer: {answer}"}, "skyrl"),
        Target("GEM math:GSM8K", "gem:math:GSM8K", "gem-llm", {"dataset": data["math"]}, "gem"),
        Target("GEM math:Math12K", "gem:math:Math12K", "gem-llm", {"dataset": data["math"]}, "gem"),
        Target("GEM qa:NaturalQuestions", "gem:qa:NaturalQuestions", "gem-llm", {"dataset": data["gem_qa"]}, "gem"),
        Target("GEM rg:leg_counting", "gem:rg:leg_counting", "gem-llm", {}, "gem"),
        Target("GEM rg:game_of_life_halting", "gem:rg:game_of_life_halting", "gem-llm", {}, "gem"),
    ]
    out += [Target(f"reasoning-gym {name}", f"rg:{name}", "reasoning-gym", {"size": 16}, "rg")
            for name in rg_datasets]
    return out


def version_of(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def summarize(report: Any) -> dict[str, Any]:
    """A report as the table needs it: verdict, and per probe its status, summary and first evidence line."""
    return {"verdict": str(report.verdict), "error": report.error, "duration_s": round(report.duration_s, 1),
            "notes": list(report.notes),
            "probes": {r.probe: {"status": str(r.status), "summary": r.summary, "evidence": r.evidence[:2],
                                 "reason": r.reason} for r in report.results}}


def build_templated(spec: str, reply_template: str, stacked: bool = False, **options: Any) -> Any:
    """``adapters_targets.adapt(spec)`` answered in ``reply_template``'s form (``"#### {answer}"``: verl's gsm8k
    reads the answer after ``####``), the hook the skyrl adapter sets for its gsm8k; inside the stack if asked."""
    from gym_integrity.audit.adapters_targets import adapt

    if "cwd" in options:  # a taskset that loads its dataset by a hub name read from a local directory of that name
        os.chdir(options.pop("cwd"))
    env = adapt(spec, **options)
    env.audit_answer_action = reply_template.format  # type: ignore[attr-defined]
    if stacked:
        from gym_integrity.wrappers import integrity_stack

        return integrity_stack(env)
    return env


def append_finqa_shim(workdir: str, root: str) -> None:
    """eco_shims.finqa_reward: OpenEnv finqa_env's grader, its sources found at ``root`` in every process."""
    with open(os.path.join(workdir, "eco_shims.py"), "a", encoding="utf-8") as fh:
        fh.write(f"\n\ndef finqa_reward(*args, **kwargs):\n    os.environ['ECOSYSTEM_OPENENV_ROOT'] = {root!r}\n"
                 f"    import ecosystem_openenv\n    return ecosystem_openenv.finqa_reward(*args, **kwargs)\n")


#: NeMo-Gym's math verifier: resources_servers/math_with_judge/app.py at this tag (PyPI's nemo-gym 0.4.0 ships
#: no resources servers), its library half (math_verify in a forked, killable child per answer, 10 s) as the
#: server's verify calls it with the judge off (the judge half needs a model server).
NEMO_TAG = "v0.4.0"
NEMO_SHIM = '''

def nemo_math(data_source, solution_str, ground_truth, extra_info=None):
    import asyncio
    import importlib.util
    import multiprocessing
    import types
    # The audit's children are daemons, which multiprocessing forbids to fork; the verifier forks one per answer
    # (adapters_gem lifts the flag the same way for GEM's pool).
    multiprocessing.current_process().daemon = False
    spec = importlib.util.spec_from_file_location("nemo_math_with_judge_app", {path!r})
    app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app)
    server = app.LibraryJudgeMathResourcesServer

    async def verify():
        this = types.SimpleNamespace(_library_verifier_semaphore=asyncio.Semaphore(32),
                                     config=types.SimpleNamespace(library_verifier_timeout_seconds=10.0),
                                     _wait_for_library_verifier_process=server._wait_for_library_verifier_process)
        return await server._verify_answer_with_library_async(this, str(ground_truth), solution_str)

    return asyncio.run(verify())[0]
'''


def append_nemo_shim(git_dir: str, workdir: str) -> None:
    """eco_shims.nemo_math: NeMo-Gym's math verifier from its repository at :data:`NEMO_TAG`."""
    import subprocess

    path = os.path.join(workdir, "nemo_math_with_judge_app.py")
    source = subprocess.run(["git", "--git-dir", git_dir, "show", f"{NEMO_TAG}:resources_servers/math_with_judge/app.py"],
                            check=True, capture_output=True, text=True).stdout
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(source)
    with open(os.path.join(workdir, "eco_shims.py"), "a", encoding="utf-8") as fh:
        fh.write(NEMO_SHIM.format(path=path))


def start_qed_judge(workdir: str) -> dict[str, str]:
    """The qed_math env's data files and its judges, started in this process for the run: the local stub in policy
    mode (ecosystem_openenv's exact judge of the proof rows) and in echo mode (a fooled judge). Returns
    ``{"qed_answer", "qed_proof", "qed_multi_step", "judge_url", "fooled_judge_url"}``; the OpenEnv sources must be
    extracted first (``ecosystem_openenv.extract``)."""
    import ecosystem_openenv

    from gym_integrity.openai_stub.judge_server import JudgeServer, write_policy

    rows = ecosystem_data.write_qed_rows(workdir)
    policy = os.path.join(workdir, "qed_judge_policy.json")
    write_policy(policy, ecosystem_openenv.qed_judge_policy(rows["proof"]))
    judge = JudgeServer(mode="policy", policy_file=policy).start()
    fooled = JudgeServer(mode="echo").start()
    return {"qed_answer": rows["answer"], "qed_proof": rows["proof"], "qed_multi_step": rows["multi_step"],
            "judge_url": judge.url, "fooled_judge_url": fooled.url}


def make_env(target: Target, stacked: bool = False) -> Any:
    """The target's env in this process (what each audit child builds)."""
    if target.spec.startswith("openenv-inproc:"):
        import ecosystem_openenv

        return ecosystem_openenv.build(stacked=stacked, **target.options)
    if target.spec.startswith("openenv-mcp:"):
        import ecosystem_openenv

        return ecosystem_openenv.build_mcp(stacked=stacked, **target.options)
    if "reply_template" in target.options:
        return build_templated(target.spec, stacked=stacked, **target.options)
    from gym_integrity.audit.adapters_targets import build

    return build(target.spec, stacked=stacked, **target.options)


def _check_isolated(target: Target, stacked: bool, probes: list[str] | None, settings: Any) -> Any:
    """A target built by this script's own entry (an OpenEnv server env, a reward answered in a fixed form),
    audited in a child process as check_target does."""
    from gym_integrity.audit.in_process import probe_list
    from gym_integrity.audit.isolate import IsolatedTarget, run_isolated

    names = probe_list(probes)
    if target.spec.startswith("openenv-inproc:"):
        entry, kwargs = "ecosystem_openenv:build", {"stacked": stacked, **target.options}
    elif target.spec.startswith("openenv-mcp:"):
        entry, kwargs = "ecosystem_openenv:build_mcp", {"stacked": stacked, **target.options}
    else:
        entry, kwargs = "ecosystem_audit:build_templated", {"spec": target.spec, "stacked": stacked, **target.options}
    isolated = IsolatedTarget(entry, kwargs, not stacked, target.spec, sys_path=tuple(sys.path))
    [report] = run_isolated([isolated], names, settings, workers=1)
    return report


def run_target(target: Target, *, stacked: bool, deep: bool, probes: list[str] | None,
               probe_timeout_s: float = 30.0) -> dict[str, Any]:
    from gym_integrity.audit.adapters_targets import check_target
    from gym_integrity.audit.session import AuditSettings

    start = time.perf_counter()
    try:
        if target.spec.startswith(("openenv-inproc:", "openenv-mcp:")):
            # Importing openenv-core (fastapi, gradio, fastmcp) in a fresh child took over 100 s on the loaded
            # benchmark machine: past the default 30 s bound on building an env, which is a probe's bound.
            report = _check_isolated(target, stacked, probes, AuditSettings(deep=deep, probe_timeout_s=max(240.0, probe_timeout_s)))
        elif "reply_template" in target.options:
            report = _check_isolated(target, stacked, probes, AuditSettings(deep=deep, probe_timeout_s=probe_timeout_s))
        else:
            report = check_target(target.spec, stacked=stacked, probes=probes,
                                  settings=AuditSettings(deep=deep, probe_timeout_s=probe_timeout_s), **target.options)
        result = summarize(report)
    except Exception as exc:  # noqa: BLE001  (a target that cannot be built is a row of the table, with why)
        result = {"verdict": "not run", "error": f"{type(exc).__name__}: {exc}"[:600], "probes": {}}
    result["wall_s"] = round(time.perf_counter() - start, 1)
    return result


def trl_main_thread() -> None:
    """TRL's accuracy_reward on the main thread (where GRPOTrainer calls it and math_verify's alarms work), timed on
    the answers that hung the audit's probe thread."""
    from trl.rewards import accuracy_reward

    for label, text in [("tower \\boxed{9^{9^{9^{9}}}}", "\\boxed{9^{9^{9^{9}}}}"), ("1 MB of text", "x" * 1_000_000),
                        ("every integer 0..999", " ".join(map(str, range(1000))))]:
        start = time.perf_counter()
        reward = accuracy_reward([[{"role": "assistant", "content": text}]], ["$13$"])
        print(f"TRL accuracy_reward, main thread, {label}: reward {reward} in {time.perf_counter() - start:.1f} s")


def verifiers_threads() -> None:
    """verifiers' verify_boxed_math_answer on the gold, on the main thread and on another one (math_verify's
    signal-based timeout raises off the main thread, and the scorer's ``except Exception`` pays that 0.0)."""
    import threading

    from verifiers.v1 import verify_boxed_math_answer

    out: list[float] = []
    print("verifiers verify_boxed_math_answer('so \\boxed{13}', '13'), main thread:",
          verify_boxed_math_answer("so \\boxed{13}", "13"))
    thread = threading.Thread(target=lambda: out.append(verify_boxed_math_answer("so \\boxed{13}", "13")))
    thread.start()
    thread.join()
    print("verifiers verify_boxed_math_answer('so \\boxed{13}', '13'), another thread:", out[0])


def reasoning_gym_datasets() -> list[str]:
    import reasoning_gym

    return sorted(reasoning_gym.factory.DATASETS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="ecosystem.json", help="JSON results (appended to, per target)")
    parser.add_argument("--only", action="append", help="run targets whose name contains this (repeatable)")
    parser.add_argument("--group", action="append", help="run targets of this group: trl verl verifiers verifiers-envs nemo skyrl gem rg openenv")
    parser.add_argument("--rg", default="leg_counting,game_of_life_halting,basic_arithmetic,chain_sum,countdown",
                        help="reasoning-gym datasets as targets (comma list, or 'all')")
    parser.add_argument("--raw-only", action="store_true", help="skip the stacked column")
    parser.add_argument("--stacked-only", action="store_true", help="skip the raw column")
    parser.add_argument("--deep", action="store_true", help="the audit's --deep search")
    parser.add_argument("--probe", action="append", help="run only these probes")
    parser.add_argument("--probe-timeout", type=float, default=30.0,
                        help="AuditSettings.probe_timeout_s (also the bound on building an env and its first step)")
    parser.add_argument("--workdir", default=None, help="where the dataset files and shims go")
    parser.add_argument("--openenv-git", default=None,
                        help="a clone of OpenEnv's repository (git dir) holding ecosystem_openenv.COMMIT")
    parser.add_argument("--nemo-git", default=None, help="a clone of NeMo-Gym's repository (git dir) holding NEMO_TAG")
    parser.add_argument("--verifiers-envs", action="store_true",
                        help="verifiers' bundled example tasksets (reverse_text, gsm8k: installed from its repository's "
                             "environments/ with pip --no-deps; gsm8k's verifier needs uv on PATH)")
    parser.add_argument("--list", action="store_true", help="list the targets and exit")
    parser.add_argument("--threads", action="store_true",
                        help="TRL's and verifiers' math scorers on and off the main thread (what the audit's probe "
                             "thread changes), and exit")
    args = parser.parse_args(argv)
    if args.threads:
        import importlib.util

        for check, module in ((trl_main_thread, "trl"), (verifiers_threads, "verifiers")):
            if importlib.util.find_spec(module) is not None:
                check()
        return 0

    workdir = args.workdir or tempfile.mkdtemp(prefix="ecosystem-")
    data = ecosystem_data.write_all(workdir)
    with open(os.path.join(workdir, "eco_shims.py"), "w", encoding="utf-8") as fh:
        fh.write(SHIMS)
    root = None
    if args.openenv_git:
        import ecosystem_openenv

        root = ecosystem_openenv.extract(args.openenv_git, workdir)
        append_finqa_shim(workdir, root)
        data.update(start_qed_judge(workdir))
    if args.nemo_git:
        append_nemo_shim(args.nemo_git, workdir)
    if args.verifiers_envs:
        data.update({f"vf_{k}": v for k, v in ecosystem_data.write_verifiers_data(workdir).items()})
    sys.path.insert(0, workdir)  # the audit's child processes get this sys.path
    rg = reasoning_gym_datasets() if args.rg == "all" else [n for n in args.rg.split(",") if n]
    chosen = [t for t in targets(data, rg, root)
              if (not args.only or any(o in t.name for o in args.only)) and (not args.group or t.group in args.group)]
    if args.list:
        for t in chosen:
            print(f"{t.name:45s} {t.spec}")
        return 0
    results: dict[str, Any] = {}
    if os.path.exists(args.out):
        with open(args.out, encoding="utf-8") as fh:
            results = json.load(fh)
    for target in chosen:
        for stacked in ([False] if args.raw_only else [True] if args.stacked_only else [False, True]):
            key = f"{target.name} | {'stacked' if stacked else 'raw'}{' | deep' if args.deep else ''}"
            row = run_target(target, stacked=stacked, deep=args.deep, probes=args.probe,
                             probe_timeout_s=args.probe_timeout)
            row.update(spec=target.spec, package=target.package, version=version_of(target.package),
                       stacked=stacked, deep=args.deep, group=target.group)
            results[key] = row
            failed = [p for p, r in row["probes"].items() if r["status"] == "failed"]
            print(f"{key}: {row['verdict']} in {row['wall_s']} s; failed: {failed} {row.get('error') or ''}",
                  flush=True)
            with open(args.out, "w", encoding="utf-8") as fh:
                json.dump(results, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Markdown tables of docs/ecosystem.md from the JSON that ecosystem_audit.py writes.

    python benchmarks/ecosystem_table.py results.json [more.json ...] [--gradecheck auditors.json] > table.md
"""

from __future__ import annotations

import json
import sys
from typing import Any

__all__ = ["COST", "ENV_CLASS", "LENIENCY", "STACK_CLASS", "render", "render_gradecheck", "render_sweep"]

#: Probes whose failure is a property of the episode (what happens after the end, what is shown, how long an
#: episode lasts, what a reset does): the integrity stack's wrappers are meant to close these.
STACK_CLASS = ("rescore_after_end", "inert_after_end", "reference_leakage", "step_budget", "reset_clears_end",
               "failed_reset_keeps_end")
#: Probes whose failure is the grader paying what it should not: no wrapper fixes it, a stricter grader does.
LENIENCY = ("gold_answer_scored", "constant_answers", "question_echo", "alphabet_sprays", "covering_sprays",
            "adaptive_search", "reward_self_dealing", "code_injection", "label_skew", "random_answers", "honest_pay")
#: Probes whose failure is the grader's cost (a hang, a step past its bound): a grader with a bound closes it.
COST = ("garbage_actions", "pathological_answers", "cross_env_isolation")
#: Probes whose failure is the env's own behaviour that no wrapper changes and that is not its grader's (a seeded
#: reset that does not pick the same item): shown with the grader's column, marked "the env's".
ENV_CLASS = ("seeded_reset",)


def _cell(text: str, limit: int = 160) -> str:
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _failed(row: dict[str, Any]) -> list[str]:
    return [p for p, r in row.get("probes", {}).items() if r["status"] == "failed"]


def _evidence(row: dict[str, Any], probe: str) -> str:
    result = row["probes"][probe]
    return _cell(result["evidence"][0] if result["evidence"] else result["summary"])


def _pairs(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``{target name: {"raw": row, "stacked": row}}`` (deep runs keyed apart)."""
    out: dict[str, dict[str, Any]] = {}
    for key, row in results.items():
        name, mode, *deep = key.split(" | ")
        out.setdefault(name + (" (deep)" if deep else ""), {})[mode] = row
    return out


def render(results: dict[str, Any]) -> str:
    lines = ["| target | version | probes | verdict | failed probes: the answer that paid, its reward | time |",
             "|---|---|---|---|---|---|"]
    pairs = _pairs(results)
    for name, modes in pairs.items():
        row = modes.get("raw") or modes["stacked"]
        failed = _failed(row)
        if row.get("error") and not row.get("probes"):
            detail = f"not run: {_cell(row['error'])}"
        else:
            detail = "<br>".join(f"`{p}`: {_evidence(row, p)}" for p in failed) or "none"
            missing = [p for p, r in row["probes"].items() if r["status"] == "not run"]
            if missing:
                detail += f"<br>not run: {', '.join(missing)}"
        lines.append(f"| {name} | {row['package']} {row['version']} | {len(row.get('probes', {})) or '-'} | "
                     f"{row['verdict']} | {detail} | {row['wall_s']} s |")
    lines += ["", ("| target | raw: failed | stacked: failed | the stack closed | left to the grader: what it pays "
                   "(leniency, fake zeros) | left to a bounded grader (cost) | time raw / stacked |"),
              "|---|---|---|---|---|---|---|"]
    for name, modes in pairs.items():
        if "raw" not in modes or "stacked" not in modes or not modes["raw"].get("probes"):
            continue
        if modes["stacked"].get("error"):
            lines.append(f"| {name} | {', '.join(_failed(modes['raw'])) or 'none'} | stacked audit did not run: "
                         f"{_cell(modes['stacked']['error'], 100)} | | | | {modes['raw']['wall_s']} s / "
                         f"{modes['stacked']['wall_s']} s |")
            continue
        raw, stacked = _failed(modes["raw"]), _failed(modes["stacked"])
        closed = [p for p in raw if p in STACK_CLASS and modes["stacked"]["probes"].get(p, {}).get("status")
                  == "passed"]
        flipped = [p for p in raw if p not in closed
                   and modes["stacked"]["probes"].get(p, {}).get("status") == "passed"]
        lenient = [p for p in stacked if p in LENIENCY or (p in STACK_CLASS and p in raw)]
        lenient += [f"{p} (the env's)" for p in stacked if p in ENV_CLASS]
        cost = [p for p in stacked if p in COST]
        closed_text = ", ".join(closed) or "none"
        if flipped:
            closed_text += f" (passed stacked, not a stack property: {', '.join(flipped)})"
        lines.append(f"| {name} | {', '.join(raw) or 'none'} | {', '.join(stacked) or 'none'} | {closed_text} | "
                     f"{', '.join(lenient) or 'none'} | {', '.join(cost) or 'none'} | {modes['raw']['wall_s']} s / "
                     f"{modes['stacked']['wall_s']} s |")
    return "\n".join(lines) + "\n"


def render_sweep(results: dict[str, Any]) -> str:
    """One line per target of a one-column run (the reasoning-gym sweep): failed probes and one answer that paid."""
    lines = ["| dataset | verdict | failed | e.g. | time |", "|---|---|---|---|---|"]
    for key, row in sorted(results.items()):
        failed = _failed(row)
        example = _evidence(row, failed[-1]) if failed else _cell(row.get("error") or "", 120)
        lines.append(f"| {key.split(' | ')[0].removeprefix('reasoning-gym ')} | {row['verdict']} | "
                     f"{', '.join(failed) or 'none'} | {example} | {row['wall_s']} s |")
    return "\n".join(lines) + "\n"


def render_gradecheck(gradecheck: dict[str, Any], ours: dict[str, Any]) -> str:
    """gradecheck's findings beside ours per target: what each flags, and how long each took."""
    lines = ["| target | gradecheck: fooled / warn | gradecheck time | ours (raw): failed | ours time |",
             "|---|---|---|---|---|"]
    pairs = _pairs(ours)
    for name, result in gradecheck.items():
        if "error" in result:
            flagged = f"could not run: {_cell(result['error'], 100)}"
        else:
            flagged = ", ".join(f"{f['attack']} ({f['verdict']})" for f in result["findings"]
                                if f["verdict"] in ("fooled", "warn")) or "none"
        row = pairs.get(name, {}).get("raw")
        mine = (", ".join(_failed(row)) or "none") if row else "(audited apart: `gym-integrity audit`)"
        took = f"{row['wall_s']} s" if row else ""
        lines.append(f"| {name} | {flagged} | {result['wall_s']} s | {mine} | {took} |")
    return "\n".join(lines) + "\n"


def main(paths: list[str]) -> int:
    """Tables of the audit JSON files given; ``--gradecheck FILE`` adds the auditor comparison; ``--sweep FILE``
    prints the one-line-per-dataset table of a sweep instead."""
    if paths and paths[0] == "--sweep":
        with open(paths[1], encoding="utf-8") as fh:
            sys.stdout.write(render_sweep(json.load(fh)))
        return 0
    gradecheck: dict[str, Any] = {}
    results: dict[str, Any] = {}
    args = iter(paths)
    for path in args:
        target = gradecheck if path == "--gradecheck" else results
        if path == "--gradecheck":
            path = next(args)
        with open(path, encoding="utf-8") as fh:
            target.update(json.load(fh))
    sys.stdout.write(render(results))
    if gradecheck:
        sys.stdout.write("\n" + render_gradecheck(gradecheck, results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

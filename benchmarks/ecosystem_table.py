"""Markdown tables of docs/ecosystem.md from the JSON that ecosystem_audit.py writes.

    python benchmarks/ecosystem_table.py results.json [more.json ...] > table.md
"""

from __future__ import annotations

import json
import sys
from typing import Any

__all__ = ["LENIENCY", "STACK_CLASS", "render"]

#: Probes whose failure is a property of the episode (what happens after the end, what is shown, how long an
#: episode lasts, what a reset does): the integrity stack's wrappers are meant to close these.
STACK_CLASS = ("rescore_after_end", "inert_after_end", "reference_leakage", "step_budget", "reset_clears_end",
               "failed_reset_keeps_end")
#: Probes whose failure is the grader paying what it should not: no wrapper fixes it, a stricter grader does.
LENIENCY = ("gold_answer_scored", "constant_answers", "question_echo", "alphabet_sprays", "covering_sprays",
            "adaptive_search", "reward_self_dealing", "code_injection", "pathological_answers", "garbage_actions",
            "cross_env_isolation", "seeded_reset")


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
    lines = ["| target | version | verdict | failed probes: the answer that paid, its reward | time |",
             "|---|---|---|---|---|"]
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
        lines.append(f"| {name} | {row['package']} {row['version']} | {row['verdict']} | {detail} | "
                     f"{row['wall_s']} s |")
    lines += ["", ("| target | raw: failed | stacked: failed | the stack closed | only a stricter grader closes "
              "| time raw / stacked |"), "|---|---|---|---|---|---|"]
    for name, modes in pairs.items():
        if "raw" not in modes or "stacked" not in modes:
            continue
        raw, stacked = _failed(modes["raw"]), _failed(modes["stacked"])
        closed = [p for p in raw if p not in stacked and modes["stacked"]["probes"].get(p, {}).get("status")
                  == "passed"]
        left = [p for p in stacked if p in raw]
        new = [p for p in stacked if p not in raw]
        left_text = ", ".join(left) or "none"
        if new:
            left_text += f"; failed only stacked: {', '.join(new)}"
        lines.append(f"| {name} | {', '.join(raw) or 'none'} | {', '.join(stacked) or 'none'} | "
                     f"{', '.join(closed) or 'none'} | {left_text} | {modes['raw']['wall_s']} s / "
                     f"{modes['stacked']['wall_s']} s |")
    return "\n".join(lines) + "\n"


def main(paths: list[str]) -> int:
    results: dict[str, Any] = {}
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            results.update(json.load(fh))
    sys.stdout.write(render(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

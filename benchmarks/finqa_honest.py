r"""FinQA's honest side: every shipped question's gold written the ways an honest analyst writes it, through a step.

For each question (the 37 embedded ones, and the original-FinQA sample with ``--original``), the gold is split
into its values (year-keyed or in order) and each value written in every form that states the same amount under
the rules the agent is shown (the submit tool's text): as written, without thousands commas, ``.0``, an
accounting ``(x)`` or ``-$x`` or a unicode minus for a negative, a percent as its fraction or ``x percent``, the
question's scale word (``$x million``, ``x mn``) where the question asks in one, a point unit where it asks in
points (``-160 bps``), a direction word whose sign agrees (``a decrease of 24``) where it asks for a change, a
unit word the question names (``GWh``); a year as ``In 2023`` / ``fiscal 2023`` / ``FY2023``; a text gold
capitalised, in bold or with a full stop. Several values are joined by ``; ``, ``, ``, `` and `` or a line break,
year-keyed by ``:`` or ``=`` (also where the question names one year per value of an unkeyed gold). Each form is
then sent raw, boxed, in a sentence around the box, and in bold.

Every answer goes through the real env's step as a ``submit_answer`` tool call (a fresh episode per answer) and
is paid when the step's reward is 1.0. The forms are built from the gold's text, not from the scorer's reader.

Run: ``python benchmarks/finqa_honest.py [--original] [--show-refused]``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable

THRESHOLD = 0.99
_BOX = re.compile(r"\\boxed\{((?:[^{}]|\{[^{}]*\})*)\}")
_KEYED = re.compile(r"(\d{4})\s*:\s*([^,;]+)")


def values(gold: str) -> tuple[list[str | None], list[str]]:
    """``(keys, values)`` of a gold: year keys (or None) and the value texts, boxes and ``\\%`` undone."""
    text = _BOX.sub(r"\1", gold).replace("\\%", "%").strip()
    keyed = _KEYED.findall(text)
    if keyed:
        return [k for k, _ in keyed], [v.strip() for _, v in keyed]
    parts = [p.strip() for p in re.split(r";|,\s", text) if p.strip()]
    return [None] * len(parts), parts


def _number(value: str) -> tuple[str, bool, bool] | None:
    """``(digits as written without sign or $ or scale, negative, percent)`` of a numeric value, else None."""
    m = re.fullmatch(r"(-|\()?\$?([\d,]*\.?\d+(?:/\d+)?)(%)?\)?(?: million)?", value)
    return None if m is None else (m.group(2), m.group(1) is not None, m.group(3) is not None)


def value_forms(value: str, question: str) -> list[str]:
    """The honest ways to write one value for ``question``."""
    q = question.lower()
    if re.fullmatch(r"\d{4}", value) and "which year" in q:
        return [value, f"In {value}", f"fiscal {value}", f"FY{value}", f"FY {value}", f"{value}."]
    parsed = _number(value)
    if parsed is None:  # a text gold
        return [value, value.capitalize(), f"**{value.capitalize()}**", f"{value.capitalize()}."]
    digits, negative, percent = parsed
    sign, pct = "-" if negative else "", "%" if percent else ""
    plain = digits.replace(",", "")
    forms = [value, sign + plain + pct]
    if "/" in digits:
        num, den = (int(x) for x in plain.split("/"))
        return [*forms, f"{num / den:.4f}", f"{num / den:.6f}"]
    if "." not in digits and not percent:
        forms.append(f"{sign}{digits}.0")
    if negative:
        forms += [f"({digits}{pct})", f"\u2212{digits}{pct}"]
        if "dollars" in q or "$" in value:
            forms.append(f"-${digits}")
    if percent:
        decimals = len(plain.partition(".")[2]) + 2
        forms += [f"{sign}{float(plain) / 100:.{decimals}f}", f"{sign}{digits} percent"]
    scales = re.findall(r"\b(thousands|millions)\b", q)  # the last: the asked unit ends a question
    if scales and not percent:
        word = scales[-1][:-1]
        forms += [f"{sign}{digits} {word}", f"{sign}{digits} {'mn' if word == 'million' else 'k'}"]
        if "dollars" in q or "$" in value or word == "million":
            forms.append(f"{sign}${digits} {word}")
    if "percentage points" in q:
        forms += [f"{sign}{digits} percentage points", f"{sign}{digits} pp", f"{sign}{float(plain) * 100:g} bps"]
    if "gigawatt-hours" in q:
        forms += [f"{sign}{digits} GWh", f"{sign}{digits} gigawatt-hours"]
    if re.search(r"\bunits\b", q) and not percent:
        forms.append(f"{sign}{digits} units")
    if re.search(r"\bchange|grow|increase|decrease", q) and "each" not in q and plain.strip("0.") != "":
        forms += (
            [f"a decrease of {digits}{pct}", f"down {digits}{pct}", f"down by {digits}{pct}"]
            if negative
            else [f"an increase of {digits}{pct}", f"up {digits}{pct}"]
        )
    return list(dict.fromkeys(forms))


def answers(gold: str, question: str) -> list[str]:
    """Every honest answer text for one gold: value forms joined, then wrapped."""
    keys, vals = values(gold)
    per_value = [value_forms(v, question) for v in vals]
    width = max(len(f) for f in per_value)
    joined: list[str] = []
    for i in range(width):  # the i-th form of each value (a value with fewer forms keeps its first)
        parts = [forms[i] if i < len(forms) else forms[0] for forms in per_value]
        if keys[0] is None:
            seps = ["; ", ", ", " and ", "\n"] if len(parts) > 1 else [""]
            joined += [sep.join(parts) for sep in seps]
            years = list(dict.fromkeys(re.findall(r"\b20\d\d\b", question)))
            if len(parts) > 1 and len(years) == len(parts):  # one year named per value, in the gold's order
                joined.append(", ".join(f"{y}: {p}" for y, p in zip(years, parts, strict=True)))
        else:
            joined += [", ".join(f"{k}: {p}" for k, p in zip(keys, parts, strict=True)),
                       "; ".join(f"{k} = {p}" for k, p in zip(keys, parts, strict=True)),
                       "\n".join(f"- {k}: {p}" for k, p in zip(keys, parts, strict=True))]
    wrap: list[Callable[[str], str]] = [
        lambda a: a, lambda a: f"\\boxed{{{a}}}", lambda a: f"The answer is \\boxed{{{a}}}.", lambda a: f"**{a}**"
    ]
    return list(dict.fromkeys(w(a) for a in dict.fromkeys(joined) for w in wrap))


def measure(original: bool) -> list[tuple[str, int, list[str]]]:
    """``(question id, answers sent, [refused answers])`` per question."""
    import gymnasium as gym

    import gym_integrity  # noqa: F401  (registers the envs)
    from gym_integrity.envs.finqa.data import EMBEDDED_DATA_PATH

    kwargs = {"data_path": str(EMBEDDED_DATA_PATH / "original_sample")} if original else {}
    env = gym.make("FinQA-v0", **kwargs)
    rows = []
    try:
        for q in env.unwrapped.dataset.questions:
            refused: list[str] = []
            texts = [a for gold in q.answers for a in answers(gold, q.user_query)]
            for text in texts:
                env.reset(options={"question_id": q.id})
                call = json.dumps({"name": "submit_answer", "arguments": {"answer": text}})
                _, reward, *_ = env.step(call)
                if reward < 1.0:
                    refused.append(text)
            rows.append((q.id, len(texts), refused))
    finally:
        env.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--original", action="store_true", help="the original-FinQA sample, not the embedded set")
    parser.add_argument("--show-refused", action="store_true", help="list every refused answer")
    args = parser.parse_args(argv)
    rows = measure(args.original)
    print("| question | answers | paid | refused (first) |\n|---|---|---|---|")
    for qid, sent, refused in rows:
        first = repr(refused[0]).replace("|", "\\|") if refused else ""
        print(f"| {qid} | {sent} | {sent - len(refused)} | {first} |")
    sent = sum(r[1] for r in rows)
    paid = sent - sum(len(r[2]) for r in rows)
    ok = all(n - len(bad) >= THRESHOLD * n for _, n, bad in rows)
    print(f"\n{paid}/{sent} honest answers paid over {len(rows)} questions; every question >= 99%: {ok}")
    if args.show_refused:
        for qid, _, refused in rows:
            for text in refused:
                print(f"{qid}: {text!r}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""propositional_logic: what the raw scorer and strict scoring pay for conclusions built without inference, and for honest ones.

Prints, per config: the share of items strict does not draw, the solver's
answers paid, the task's example answers paid (and why the rest are refused),
fixed content-free templates before (raw scorer) and after (raw scorer and
``propositional_logic.concludes``, bare variables paid in full), and a template
search: every template of a small grammar over premise texts, variables,
negation and connectives, scored on training items, the best one scored on
unseen items.

    python benchmarks/propositional_templates.py [--items 300]
"""

from __future__ import annotations

import argparse
import itertools
import re

import reasoning_gym

from gym_integrity.envs.reasoning_gym.tasks.propositional_logic import Tables, concludes, solve

CONFIGS = {"default": {}, "harder": {"min_vars": 3, "max_vars": 6, "min_statements": 3, "max_statements": 6,
                                      "min_complexity": 2, "max_complexity": 4}}


def raw(ds, answer: str, item) -> float:
    return ds.score_answer(answer, entry=item)


def strict(ds, answer: str, item) -> float:
    score = raw(ds, answer, item)
    return 1.0 if score in (1.0, 0.25) and concludes(answer, item) else 0.0


def wrap(text: str) -> str:
    return text if re.fullmatch(r"¬?[A-Z]", text) or (text.startswith("(") and text.endswith(")")) else f"({text})"


def templates() -> dict[str, callable]:
    """Question-independent templates over an item's premises (by position) and variables (by letter)."""
    out = {}
    out["premise 1"] = lambda p, v: p[0]
    out["premise last"] = lambda p, v: p[-1]
    out["all premises ∧"] = lambda p, v: " ∧ ".join(wrap(x) for x in p)
    for letter in "PQRS":
        for neg in ("", "¬"):
            out[f"premise 1 ∨ {neg}{letter}"] = lambda p, v, l=letter, n=neg: f"{wrap(p[0])} ∨ {n}{l}"
            out[f"all premises ∧, ∨ {neg}{letter}"] = lambda p, v, l=letter, n=neg: \
                f"({' ∧ '.join(wrap(x) for x in p)}) ∨ {n}{l}"
            out[f"constant {neg}{letter}"] = lambda p, v, l=letter, n=neg: f"{n}{l}"
    for op in ("↔", "→", "∨"):
        out[f"(P1) {op} (P2)"] = lambda p, v, o=op: f"{wrap(p[0])} {o} {wrap(p[1])}"
        out[f"(Plast) {op} (P1)"] = lambda p, v, o=op: f"{wrap(p[-1])} {o} {wrap(p[0])}"
    return out


def search_templates(train, test, ds, score) -> tuple[str, float, float]:
    """Exhaustive search over a grammar: A ∘ B with A, B among premises 1..3 and last, literals over P..S, and
    their negations; the best template on ``train``, scored on ``test``."""
    atoms = [(f"P{i + 1}", lambda p, v, i=i: wrap(p[i]) if i < len(p) else None) for i in range(3)]
    atoms.append(("Plast", lambda p, v: wrap(p[-1])))
    atoms += [(f"{n}{l}", lambda p, v, t=f"{n}{l}": t) for l in "PQRS" for n in ("", "¬")]
    atoms += [(f"¬{name}", lambda p, v, f=f: (None if f(p, v) is None else f"¬{f(p, v)}"))
              for name, f in atoms[:4]]
    grammar = dict(atoms)
    for (a, fa), (b, fb) in itertools.product(atoms, repeat=2):
        if a == b:
            continue
        for op in ("∨", "→", "↔", "∧"):
            grammar[f"{a} {op} {b}"] = (lambda p, v, fa=fa, fb=fb, op=op:
                                        None if fa(p, v) is None or fb(p, v) is None else f"{fa(p, v)} {op} {fb(p, v)}")

    def mean(f, items):
        total = 0.0
        for item in items:
            text = f(item["metadata"]["premises"], item["metadata"]["variables"])
            total += score(ds, text, item) if text else 0.0
        return total / len(items)

    best = max(grammar.items(), key=lambda kv: mean(kv[1], train))
    return best[0], mean(best[1], train), mean(best[1], test), len(grammar)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=300)
    args = parser.parse_args()
    for name, config in CONFIGS.items():
        ds = reasoning_gym.create_dataset("propositional_logic", size=args.items, seed=1, **config)
        items = [ds[i] for i in range(args.items)]
        solved = [solve(item) for item in items]
        drawn = [item for item, s in zip(items, solved) if s is not None]
        print(f"== {name} {config}: {len(items)} items; not drawn under strict (no conclusion found): "
              f"{len(items) - len(drawn)} ({(len(items) - len(drawn)) / len(items):.1%})")
        paid = sum(strict(ds, s, item) == 1.0 for item, s in zip(items, solved) if s)
        bare = sum(bool(re.fullmatch(r"[A-Z]", s)) for s in solved if s)
        print(f"solver: {paid}/{len(drawn)} paid 1.0 under strict ({bare} of them a bare variable, raw pays those 0.25)")
        reasons = {"paid": 0, "truth function of the premises": 0, "idle variable": 0, "a redundant disjunct": 0}
        for item in drawn:
            example = item["metadata"]["example_answer"]
            if strict(ds, example, item) == 1.0:
                reasons["paid"] += 1
                continue
            tables = Tables(item)
            mask, names = tables.of(example)
            if all(c & mask in (0, c) for c in tables.classes):
                reasons["truth function of the premises"] += 1
            elif not all(tables.models & tables.flipped(~mask & tables.full, n) for n in names):
                reasons["idle variable"] += 1
            else:
                reasons["a redundant disjunct"] += 1
        print(f"task's example_answer on drawn items: {reasons}")
        print(f"{'template':32} {'raw mean':>8} {'raw paid':>8} {'strict mean':>11}")
        for label, f in templates().items():
            r = [raw(ds, f(i['metadata']['premises'], i['metadata']['variables']), i) for i in drawn]
            s = [strict(ds, f(i['metadata']['premises'], i['metadata']['variables']), i) for i in drawn]
            print(f"{label:32} {sum(r) / len(r):8.3f} {sum(x >= 1.0 for x in r):8d} {sum(s) / len(s):11.3f}")
        half = len(drawn) // 2
        for label, score in (("raw", raw), ("strict", strict)):
            found, train, test, size = search_templates(drawn[:half], drawn[half:], ds, score)
            print(f"template search ({size} templates, {half} train / {len(drawn) - half} unseen items), {label}: "
                  f"best {found!r}: train {train:.3f}, unseen {test:.3f}")


if __name__ == "__main__":
    main()

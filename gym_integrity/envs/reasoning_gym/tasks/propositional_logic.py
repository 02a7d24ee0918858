"""propositional_logic under strict scoring: truth tables of the task's formulas, a conclusion's rule, a solver.

The task asks "What can we conclude?" and its scorer pays any conclusion the
premises entail that is not a tautology. Text built from the question alone
is such a conclusion: a premise, a conjunction of premises, ``P1 ↔ P2``, or a
premise weakened by a variable it never needed (``(S ∧ R) ∨ ¬R``). Strict
scoring pays a conclusion only if it meets :func:`concludes`:

1. the premises entail it and it is not a tautology (the task's own rule);
2. it is not a truth function of the premises: two assignments that give
   every premise the same value may give it different values (else it is
   true by the premises' values alone, with no inference);
3. no variable in it is idle: for each, some model of the premises becomes a
   counter-model of the conclusion when that variable is flipped;
4. no disjunct of it is redundant: written as a disjunction (``∨``, ``→``
   as ``¬A ∨ B``, a negated ``∧`` by De Morgan, in each conjunct), the
   premises entail no disjunction of all parts but one (``(P ∧ Q ∧ R) ∨ P``:
   the premises' conjunction or-ed with a variable bound inside it is a
   weakening that rule 3 misses).

Formulas are read by the task's own parser (``parse_expr``), so the rule sees
exactly the formula the scorer paid. A truth table is a bit mask over every
assignment of the item's variables (one bit a row).

>>> item = {"metadata": {"variables": ["P", "Q", "R"], "premises": ["P", "(P → Q)"]}}
>>> [concludes(a, item) for a in ("Q", "P", "(P → Q) ∧ P", "Q ∨ ¬R", "P ∨ Q", "¬Q", "¬(¬Q ∧ ¬(P ∧ R))")]
[True, False, False, False, False, False, False]
>>> solve(item)
'Q'
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

__all__ = ["Tables", "concludes", "has_conclusion", "solve"]


class Tables:
    """The truth tables of one item: a mask per variable, per premise, and of their models."""

    def __init__(self, item: Mapping[str, Any]) -> None:
        metadata = item["metadata"]
        self.variables = sorted(set(metadata["variables"]))
        self.rows = 1 << len(self.variables)
        self.full = (1 << self.rows) - 1
        self.columns = {
            name: sum(1 << row for row in range(self.rows) if row >> i & 1) for i, name in enumerate(self.variables)
        }
        premises = [self.of(premise) for premise in metadata["premises"]]
        if any(p is None for p in premises):
            raise ValueError(f"propositional_logic premises not over the item's variables: {metadata['premises']}")
        self.premises = [mask for mask, _ in premises]  # type: ignore[misc]  # no None left: raised just above
        self.models = self.full
        for mask in self.premises:
            self.models &= mask
        classes = [self.full]  # the assignments grouped by the value of every premise
        for mask in self.premises:
            classes = [part for c in classes for part in (c & mask, c & ~mask) if part]
        self.classes = classes

    def of(self, text: str) -> tuple[int, frozenset[str]] | None:
        """The formula's mask and the variables written in it, as the task's parser reads it; None if the task
        cannot read it over these variables."""
        node = self.parse(text)
        return None if node is None else self._mask(node)

    def pays(self, text: str) -> bool:
        """Whether the conclusion meets rules 1-4 (the module docstring)."""
        node = self.parse(text)
        return node is not None and self.meets_rule(*self._mask(node)) and not self.padded(node)

    def parse(self, text: str) -> Any:
        """The task's parse tree of the formula, or None if the task cannot read it over these variables."""
        from reasoning_gym.logic.propositional_logic import parse_expr

        try:
            node = parse_expr(text)
            self._mask(node)
        except (ValueError, KeyError, AttributeError, RecursionError):
            return None
        return node

    def _flat(self, node: Any, positive: bool, joint: str) -> list[tuple[Any, bool]]:
        """The formula as parts joined by ``joint`` ("∨" or "∧"), negations pushed inward (De Morgan, ``→``)."""
        operator = node.operator.value if node.operator is not None else None
        if operator == "¬":
            return self._flat(node.left, not positive, joint)
        splits: dict[tuple[str | None, bool], str] = {
            ("∨", True): "∨",
            ("∧", False): "∨",
            ("→", True): "∨",
            ("∧", True): "∧",
            ("∨", False): "∧",
            ("→", False): "∧",
        }
        if splits.get((operator, positive)) == joint:
            left_positive = positive if operator != "→" else not positive
            return self._flat(node.left, left_positive, joint) + self._flat(node.right, positive, joint)
        return [(node, positive)]

    def padded(self, node: Any, positive: bool = True) -> bool:
        """Whether some conjunct is a disjunction with a redundant part: the others already follow (rule 4)."""
        for conjunct, sign in self._flat(node, positive, "∧"):
            parts = [
                self._mask(part)[0] if part_sign else ~self._mask(part)[0] & self.full
                for part, part_sign in self._flat(conjunct, sign, "∨")
            ]
            for i in range(len(parts) if len(parts) > 1 else 0):
                rest = 0
                for j, mask in enumerate(parts):
                    rest |= mask if j != i else 0
                if not self.models & ~rest:
                    return True
        return False

    def _mask(self, node: Any) -> tuple[int, frozenset[str]]:
        operator = node.operator.value if node.operator is not None else None
        if operator is None:
            return self.columns[node.left], frozenset({node.left})
        left, names = self._mask(node.left)
        if operator == "¬":
            return ~left & self.full, names
        right, more = self._mask(node.right)
        names |= more
        if operator == "∧":
            return left & right, names
        if operator == "∨":
            return left | right, names
        if operator == "→":
            return (~left | right) & self.full, names
        return ~(left ^ right) & self.full, names  # ↔

    def flipped(self, mask: int, name: str) -> int:
        """The rows whose assignment, with ``name`` flipped, is in ``mask``."""
        column, shift = self.columns[name], 1 << self.variables.index(name)
        return ((mask & column) >> shift) | ((mask & ~column & self.full) << shift)

    def meets_rule(self, mask: int, names: frozenset[str]) -> bool:
        """Rules 1-3 of the module docstring (semantic: the truth table) for a conclusion's mask and the variables
        written in it."""
        if self.models & ~mask or mask == self.full:
            return False  # not entailed, or a tautology
        if all(c & mask in (0, c) for c in self.classes):
            return False  # a truth function of the premises
        false = ~mask & self.full
        return all(self.models & self.flipped(false, name) for name in names)


def concludes(answer: str, item: Mapping[str, Any]) -> bool:
    """Whether ``answer`` is a conclusion strict scoring pays: entailed, not a tautology, not a truth function of
    the premises, no idle variable, no disjunct that already follows (module docstring)."""
    return Tables(item).pays(answer)


def _literals(variables: list[str]) -> list[str]:
    return [f"{sign}{v}" for v in variables for sign in ("", "¬")]


def _candidates(variables: list[str]) -> Any:
    """Conclusions in a fixed order, simplest first: literals, then clauses of two and three literals, then
    conjunctions of two literals, each over distinct variables."""
    literals = _literals(variables)
    yield from literals
    for size in (2, 3):
        for combo in itertools.combinations(variables, size):
            for signs in itertools.product(("", "¬"), repeat=size):
                yield " ∨ ".join(f"{s}{v}" for s, v in zip(signs, combo))
    for a, b in itertools.combinations(variables, 2):
        for sa, sb in itertools.product(("", "¬"), repeat=2):
            yield f"{sa}{a} ∧ {sb}{b}"


def solve(item: Mapping[str, Any]) -> str | None:
    """A conclusion of the item that strict scoring pays (the first of a fixed, bounded order: literals, clauses of
    up to three literals, conjunctions of two), or None if none of those meets the rule."""
    tables = Tables(item)
    return next((text for text in _candidates(tables.variables) if tables.pays(text)), None)


def has_conclusion(item: Mapping[str, Any]) -> bool:
    """Whether the solver finds a conclusion strict scoring pays (items without one are not drawn under strict)."""
    return solve(item) is not None

"""Chance in the search probes: what a grader paying only the answer gives an answer, the gold's reward when the answer is the gold (or a spelling of it), else a wrong answer's capped at 0.

An answer the search probes play is paid above chance only if it earns more
than this. The gold's own forms count as the gold: its number without its unit
(``11`` for ``11 days``), its value rounded within 1% (``5`` for ``4.97%``),
and its clauses joined by "and" in another order. Without a gold, chance is 0.

>>> chance_of("11", "11 days", 1.0, 0.0), chance_of("12", "11 days", 1.0, 0.5), chance_of("7", None, 1.0, -1.0)
(1.0, 0.0, -1.0)
"""

from __future__ import annotations

import re

from gym_integrity.audit.grader_probes import same_answer
from gym_integrity.audit.leaks import numeric_value

__all__ = ["chance_of"]


_WITH_UNIT = re.compile(r"\s*([-+]?\d+(?:\.\d+)?)\s*[A-Za-z%][A-Za-z. ]{0,20}")


def _bare_number_of(answer: str, gold: str) -> bool:
    """``11`` for the gold ``11 days``: a gold's number without its unit is the same answer, not a lucky one."""
    match = _WITH_UNIT.fullmatch(gold)
    return match is not None and same_answer(answer, match.group(1))


#: A number this close to a numeric gold is the gold rounded (``5`` for ``4.97%``), not a lucky answer.
_ROUNDING = 0.01


def _rounded(answer: str, gold: str) -> bool:
    a, g = numeric_value(answer), numeric_value(gold.strip().rstrip("%"))
    return a is not None and g is not None and g != 0 and abs(a - g) <= _ROUNDING * abs(g)


_AND = re.compile(r",?\s+and\s+", re.IGNORECASE)


def _clauses(text: str) -> frozenset[str]:
    return frozenset(" ".join(part.lower().strip(" .;,").split()) for part in _AND.split(text.strip()))


def _same_clauses(answer: str, gold: str) -> bool:
    """``B is a knave and A is a knight`` for the gold ``A is a knight, and B is a knave``: the same clauses joined
    by "and" in another order are the gold itself (a quoted statement that happens to be the solution). Commas alone
    never split, so a list in another order (word_sorting's question echoed) is not the gold."""
    return _AND.search(gold) is not None and _clauses(answer) == _clauses(gold)


def chance_of(answer: str, gold: str | None, gold_reward: float, wrong_reward: float) -> float:
    """What a grader paying only the answer gives ``answer``: the gold's reward if it is the gold (or the gold's
    number without its unit, or rounded within 1%, or its "and"-joined clauses in another order), else a wrong
    answer's capped at 0; 0 without a gold."""
    if gold is not None and (
        same_answer(answer, gold)
        or _bare_number_of(answer, gold)
        or _rounded(answer, gold)
        or _same_clauses(answer, gold)
    ):
        return gold_reward
    return min(wrong_reward, 0.0)

r"""Finding a gold answer in text the agent can see: normalised forms, numeric matching, recursive info walks.

A gold answer leaks if it appears in what the agent (or a harness that shows
``info``) can read. Models read through formatting, so the search compares
normalised forms: whitespace removed and case folded, LaTeX stripped
(``\frac{1}{2}`` -> ``1/2``, ``\text{}`` unwrapped, ``$`` dropped), and for
numbers the numeric value (``14``, ``14.0`` and ``1.4e1`` are the same leak).
Long references (proofs) are also searched as overlapping runs of words,
so that a partial quotation is found.

Example:
    >>> from gym_integrity.audit.leaks import find_in_text
    >>> [m.form for m in find_in_text("The total is 358 legs.", "358")]
    ['number']
    >>> [m.form for m in find_in_text(r"hint: $\frac{ 1 }{ 2 }$", r"\dfrac{1}{2}")]
    ['latex-stripped']
    >>> find_in_text("3 ducks and 2 cows", "14")
    []
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from gym_integrity.grading.numbers import EXPONENT, FRACTION_PART

__all__ = [
    "LeakMatch",
    "squash",
    "strip_latex",
    "numeric_value",
    "find_in_text",
    "walk_strings",
    "question_text",
    "numbers_in",
    "STRONG_LENGTH",
]

#: A matched form at least this long (after squashing) is evidence on its own;
#: shorter ones (small numbers, "yes") must recur across episodes to count,
#: since a question can mention its answer's digits by coincidence.
STRONG_LENGTH = 12
#: A long reference is also searched as overlapping runs of this many words.
_WINDOW = 12
#: Text longer than this is searched only in its first part (1 MB haystacks
#: would make the audit slow, and no env puts a leak after a megabyte).
_HAYSTACK_CAP = 200_000

_WS = re.compile(r"\s+")
_PLAIN_NUMBER = re.compile(r"[-+$]?[\d.,]+%?")
# Any run of digits and commas: a leak may be written with its thousands grouped or not, and grouped badly.
_NUMBER = re.compile(rf"(?<![\w.])-?\d[\d,]*{FRACTION_PART}?{EXPONENT}?(?![\w])|(?<![\w.])-?{FRACTION_PART}(?![\w])")
_FRAC = re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")
_WRAPPERS = re.compile(r"\\(?:text|textbf|mathrm|mathbf|operatorname|boxed|fbox|mbox)\s*\{([^{}]*)\}")
_SPACING = re.compile(r"\\(?:left|right|[,;:! ]|quad|qquad|displaystyle)")
_COMMAND = re.compile(r"\\([A-Za-z]+)")


def squash(text: str) -> str:
    """Case-folded, with every whitespace character removed."""
    return _WS.sub("", text).casefold()


def strip_latex(text: str) -> str:
    r"""LaTeX markup removed, keeping what a reader sees.

    >>> strip_latex(r"$\dfrac{3}{4}\,\text{ m}$")
    '3/4 m'
    """
    out = text.replace("$", "")
    for _ in range(4):  # nested \frac{\frac{..}{..}}{..}: a few passes reach real inputs
        new = _FRAC.sub(r"\1/\2", _WRAPPERS.sub(r"\1", out))
        if new == out:
            break
        out = new
    out = _SPACING.sub("", out)
    out = _COMMAND.sub(r"\1", out)
    return out.replace("{", "").replace("}", "")


def numeric_value(text: str) -> float | None:
    r"""The number ``text`` writes (commas, ``$``, ``%`` and LaTeX allowed), or None.

    >>> numeric_value("$1,234.5"), numeric_value(r"\frac{1}{2}"), numeric_value("x=3")
    (1234.5, 0.5, None)
    """
    plain = strip_latex(text).strip().replace(",", "").replace("%", "").strip()
    if len(plain) > 64:
        return None
    match = re.fullmatch(r"(-?\d+(?:\.\d+)?)\s*/\s*(-?\d+(?:\.\d+)?)", plain)
    try:
        if match:
            value = float(match.group(1)) / float(match.group(2))
        else:
            value = float(plain)
    except (ValueError, ZeroDivisionError):
        return None
    return value if math.isfinite(value) else None


def numbers_in(text: str) -> list[float]:
    values = []
    for token in _NUMBER.findall(text):
        try:
            values.append(float(token.replace(",", "")))
        except ValueError:
            continue
    return values


def _same_number(a: float, b: float) -> bool:
    return a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b))


@dataclass(frozen=True)
class LeakMatch:
    """One form of a gold answer found in a haystack."""

    form: str  # "exact", "squashed", "latex-stripped", "number", "sentence"
    needle: str
    strong: bool


def _windows(gold: str) -> list[str]:
    """Overlapping runs of ``_WINDOW`` words of a long reference, squashed and LaTeX-stripped."""
    words = gold.split()
    if len(words) < _WINDOW:
        return []
    starts = range(0, len(words) - _WINDOW + 1, _WINDOW // 2)
    return [squash(strip_latex(" ".join(words[i : i + _WINDOW]))) for i in starts]


def find_in_text(haystack: str, gold: str, context: str | None = None) -> list[LeakMatch]:
    """Every normalised form of ``gold`` found in ``haystack`` (empty list: no leak).

    A long reference (a proof) is also searched as overlapping runs of words.
    ``context`` is text the agent legitimately has, the problem as first shown:
    runs found there (a reference restating its problem) do not count, and any
    other run found is a quotation. Without a context, half the runs must be
    found (a reference reproduced, not a restated problem).
    """
    gold = gold.strip()
    if not gold or not haystack:
        return []
    haystack = haystack[:_HAYSTACK_CAP]
    found: list[LeakMatch] = []
    value = numeric_value(gold)
    if value is not None:
        plain = strip_latex(haystack)
        if any(_same_number(value, v) for v in numbers_in(plain)):
            digits = len(re.sub(r"[^0-9]", "", strip_latex(gold)))
            found.append(LeakMatch("number", gold, strong=digits >= STRONG_LENGTH))
            return found
        if _PLAIN_NUMBER.fullmatch(gold):
            return found  # as text, "358" would match inside "358123": a plain number matches as a number only
    squashed_gold = squash(gold)
    if len(squashed_gold) < 3:
        return found
    if gold in haystack:
        found.append(LeakMatch("exact", gold, strong=len(squashed_gold) >= STRONG_LENGTH))
        return found
    if squashed_gold in squash(haystack):
        found.append(LeakMatch("squashed", gold, strong=len(squashed_gold) >= STRONG_LENGTH))
        return found
    stripped_gold = squash(strip_latex(gold))
    stripped_hay = squash(strip_latex(haystack))
    if len(stripped_gold) >= 3 and stripped_gold in stripped_hay:
        found.append(LeakMatch("latex-stripped", gold, strong=len(stripped_gold) >= STRONG_LENGTH))
        return found
    windows = _windows(gold)
    hits = [w for w in windows if w in stripped_hay]
    if context is not None:
        known = squash(strip_latex(context))
        hits = [w for w in hits if w not in known]
        quoted = bool(hits)
    else:
        quoted = len(hits) * 2 >= len(windows) > 0
    if quoted:
        found.append(
            LeakMatch("passage", f"{len(hits)} of {len(windows)} {_WINDOW}-word runs, e.g. {hits[0]!r}", strong=True)
        )
    return found


def walk_strings(value: Any, path: str = "", depth: int = 0) -> Iterator[tuple[str, str]]:
    """``(path, text)`` for every string and number leaf of nested dicts, lists and tuples.

    List indices are written ``[]`` so that the same place has the same path in
    every episode.

    >>> list(walk_strings({"a": {"b": [1, "x"]}, "ok": True}))
    [('a.b[]', '1'), ('a.b[]', 'x')]
    """
    if depth > 20:
        return
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, (int, float)):
        yield path, repr(value) if isinstance(value, float) else str(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from walk_strings(item, f"{path}.{key}" if path else str(key), depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value[:1000]:
            yield from walk_strings(item, f"{path}[]", depth + 1)
    elif hasattr(value, "item") and hasattr(value, "dtype") and getattr(value, "ndim", 1) == 0:
        yield path, str(value.item())  # numpy scalar
    elif isinstance(value, (bytes, bytearray)):
        yield path, bytes(value[:_HAYSTACK_CAP]).decode("utf-8", "replace")


def question_text(obs: Any) -> str:
    """What a policy reads of an observation: the text itself, or every string leaf of a structured one."""
    if isinstance(obs, str):
        return obs
    return "\n".join(text for _, text in walk_strings(obs))

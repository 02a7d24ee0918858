r"""Honest forms of a QEDMath gold: the equivalent final answers a strong model writes, generated from the gold.

The honest side of the final-answer rule is measured on these (``benchmarks/qed_honest_variants.py``): each form
states the gold's value as a final value, so the rule must let it through and math_verify must pay it. The forms
come from rewrites that apply to any gold, never from a list per problem:

* layout: ``$...$``, spaces, ``\displaystyle``, ``\left(``/``\right)`` around brackets;
* fractions: ``\dfrac``, ``\tfrac``, ``a/b``, the exact decimal, a mixed number, ``\frac12``;
* integers: ``n.0``, grouped thousands (``1,170``, ``1{,}170``, ``1\,170``);
* radicals: ``3\sqrt{2}`` for ``\sqrt{18}`` and back, a numerator's terms commuted or split over the denominator;
* sets and tuples: spacing, the elements of a set reversed, ``x \in ...``;
* units text after a scalar, an assignment ``x = v``, and the statement's own formula ``= v`` when the statement
  asks for one formula's value ("Compute $\sum_{k=1}^{100} k^2$.");
* ``\pi`` as ``π``.
"""

from __future__ import annotations

import re
from fractions import Fraction

__all__ = ["honest_variants"]

_INTEGER = re.compile(r"-?\d+")
_DECIMAL = re.compile(r"-?\d+\.\d+")
_FRACTION = re.compile(r"(-?)\\frac\{(-?\d+)\}\{(\d+)\}")
_SQRT = re.compile(r"(\d*)\\sqrt\{(\d+)\}")
#: A numerator of two terms over a number: ``\frac{1+\sqrt{5}}{2}``.
_TWO_TERM_FRACTION = re.compile(r"^\\frac\{([^{}+]*(?:\{[^{}]*\})?)\s*\+\s*([^{}+]*(?:\{[^{}]*\})?)\}\{(\d+)\}$")
#: A statement asking for one formula's value: "Compute $...$.", "Evaluate $...$", "Find $...$.".
_ASKS_FOR_FORMULA = re.compile(
    r"(?:^|[.?!]\s+)(?:Compute|Evaluate|Find|Simplify|What is)(?: the (?:exact )?value of)?\s+\$([^$]+)\$\s*[.?]?\s*$"
)
_UNITS = (r"\text{ units}", r"\ \text{ways}", r"\text{ square units}")


def _value(gold: str) -> Fraction | None:
    """The exact rational value of a gold that is a plain number or ``\\frac{p}{q}``, else None."""
    text = gold.strip()
    if _INTEGER.fullmatch(text) or _DECIMAL.fullmatch(text):
        return Fraction(text)
    match = _FRACTION.fullmatch(text)
    if match:
        sign, p, q = match.groups()
        return Fraction(int(p), int(q)) * (-1 if sign else 1)
    return None


def _terminating(value: Fraction) -> str | None:
    """``value`` as an exact decimal, if it has one."""
    q = value.denominator
    for prime in (2, 5):
        while q % prime == 0:
            q //= prime
    if q != 1 or value.denominator == 1:
        return None
    digits = 0
    while (value * 10**digits).denominator != 1:
        digits += 1
    return f"{float(value):.{digits}f}"


def _number_forms(value: Fraction) -> list[str]:
    sign = "-" if value < 0 else ""
    p, q = abs(value.numerator), value.denominator
    if q == 1:
        forms = [f"{sign}{p}.0"]
        if p >= 1000:
            grouped = f"{p:,}"
            forms += [sign + grouped, sign + grouped.replace(",", "{,}"), sign + grouped.replace(",", r"\,")]
        return forms
    forms = [f"{sign}{p}/{q}", rf"\frac{{{sign}{p}}}{{{q}}}", rf"{sign}\dfrac{{{p}}}{{{q}}}"]
    if p < 10 and q < 10:
        forms.append(rf"{sign}\frac{p}{q}")
    decimal = _terminating(value)
    if decimal is not None:
        forms.append(decimal)
    if p > q:
        forms.append(rf"{sign}{p // q}\frac{{{p % q}}}{{{q}}}")
    return forms


def _square_free(n: int) -> tuple[int, int]:
    """``(k, m)`` with ``n = k^2 m`` and ``m`` square-free."""
    k, m, f = 1, n, 2
    while f * f <= m:
        while m % (f * f) == 0:
            k, m = k * f, m // (f * f)
        f += 1
    return k, m


def _radical_forms(gold: str) -> list[str]:
    """``\\sqrt{18}`` as ``3\\sqrt{2}`` and ``3\\sqrt{2}`` as ``\\sqrt{18}``; a two-term numerator commuted or split."""

    def other_form(match: re.Match[str]) -> str:
        coefficient, n = int(match.group(1) or 1), int(match.group(2))
        k, m = _square_free(n)
        if k == 1 and coefficient == 1:
            return match.group()
        if k > 1:
            return f"{coefficient * k}\\sqrt{{{m}}}"
        return f"\\sqrt{{{coefficient * coefficient * n}}}"

    forms = [_SQRT.sub(other_form, gold)] if _SQRT.search(gold) else []
    match = _TWO_TERM_FRACTION.match(gold.strip())
    if match:
        a, b, c = (part.strip() for part in match.groups())
        forms += [rf"\frac{{{b}+{a}}}{{{c}}}", rf"\frac{{{a}}}{{{c}}}+\frac{{{b}}}{{{c}}}"]
    return forms


def _bracket_forms(gold: str) -> list[str]:
    text = gold.strip()
    forms = [re.sub(r",\s*", ", ", text), re.sub(r",\s*", ",", text)]
    if text.startswith("\\{") and text.endswith("\\}"):
        elements = [e.strip() for e in text[2:-2].split(",")]
        forms += ["\\{" + ", ".join(reversed(elements)) + "\\}", r"\left\{" + text[2:-2] + r"\right\}"]
    elif text[:1] in "([" and text[-1:] in ")]":
        forms.append(rf"\left{text[0]}{text[1:-1]}\right{text[-1]}")
    forms.append(rf"x \in {text}")
    return forms


def honest_variants(gold: str, statement: str = "") -> list[str]:
    r"""Equivalent final forms of ``gold`` (the gold first, no repeats), for the problem ``statement``.

    The forms that write the value another way come first, then equations and units, then layout (a caller that
    plays only the first few, such as the audit's ``honest_pay``, gets the most different ones).

    >>> honest_variants(r"\frac{1}{2}")[:6]
    ['\\frac{1}{2}', '\\dfrac{1}{2}', '\\tfrac{1}{2}', '1/2', '\\frac12', '0.5']
    >>> "3\\sqrt{2}" in honest_variants(r"\sqrt{18}"), honest_variants("7")[-1]
    (True, '\\displaystyle 7')
    >>> r"\sum_{k=1}^{100} k^2 = 338350" in honest_variants("338350", r"Compute $\sum_{k=1}^{100} k^2$.")
    True
    """
    g = gold.strip()
    forms = [gold]
    if "\\frac" in g:
        forms += [g.replace("\\frac", "\\dfrac"), g.replace("\\frac", "\\tfrac")]
    value = _value(g)
    if value is not None:
        forms += _number_forms(value)
    forms += _radical_forms(g)
    if "\\pi" in g:
        forms.append(g.replace("\\pi", "\u03c0"))
    scalar = not re.search(r"[,;]|\\\{|^[(\[]", g)
    if scalar:
        asked = _ASKS_FOR_FORMULA.search(statement.strip())
        if asked and "=" not in re.sub(r"\{[^{}]*\}", "", asked.group(1)):  # an equation is no formula to equal
            forms.append(f"{asked.group(1).strip()} = {g}")
        forms.append(f"x = {g}")
        forms += [f"{g} {unit}" for unit in _UNITS]
    else:
        forms += _bracket_forms(g)
    forms += [f"${g}$", f" {g} ", rf"\displaystyle {g}"]
    return list(dict.fromkeys(f for f in forms if f.strip()))

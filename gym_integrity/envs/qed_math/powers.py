r"""Powers read by value: ``2^{5\cdot 2}``, ``2.0^{10}``, ``2^{(10)}``, ``4^5`` and ``(2^5)^2`` are all ``2^{10}``.

The final-answer rule refuses a power the statement writes (``2^{10}`` for "Compute $2^{10}$"); a spelling rule
would miss the exponent or base in another form. Here a power is its value: the base and exponent of every power
in a text are evaluated exactly (a small grammar of closed arithmetic: numbers, ``+ - \cdot \times /``,
``\frac``, ``\sqrt`` of a square, brackets, powers) and reduced to one key, the smallest base and its exponent
(``4^5`` and ``2^{10}`` are both ``(2, 10)``). Every value is bounded (:data:`MAX_BITS`): a tower such as
``9^{9^{9}}`` is not evaluated, so the rule runs in microseconds on any text.
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import partial

__all__ = ["MAX_BITS", "closed_value", "neutral_value", "power_keys"]

#: The largest numerator or denominator, in bits, the evaluator computes (``7^{2026}`` is 5,688 bits).
MAX_BITS = 20_000
#: Bases up to this many bits are reduced to their smallest root (``4`` is ``2^2``); larger ones are kept as read.
_ROOT_BITS = 512
#: How many characters of bases and exponents :func:`power_keys` reads in one text, shortest first.
_SITE_BUDGET = 6_000
_TOKEN = re.compile(r"\s+|\\[,;:! ]|(\d+(?:\.\d*)?|\.\d+)|\\(cdot|times|frac|sqrt)(?![A-Za-z])|([-+*/^(){}\[\]])")
_OPEN = {"(": ")", "{": "}", "[": "]"}


class _NotClosed(Exception):
    """The text is not closed arithmetic, or its value is out of bounds."""


def _tokens(text: str) -> list[str]:
    out, i = [], 0
    while i < len(text):
        match = _TOKEN.match(text, i)
        if match is None:
            raise _NotClosed
        token = match.group(1) or (match.group(2) and "\\" + match.group(2)) or match.group(3)
        if token:
            out.append(token)
        i = match.end()
    return out


def _bounded(value: Fraction) -> Fraction:
    if value.numerator.bit_length() > MAX_BITS or value.denominator.bit_length() > MAX_BITS:
        raise _NotClosed
    return value


def _power(base: Fraction, exponent: Fraction) -> Fraction:
    if exponent.denominator != 1 or (base == 0 and exponent < 0):
        raise _NotClosed
    size = max(base.numerator.bit_length(), base.denominator.bit_length())
    if size * abs(exponent.numerator) > MAX_BITS:
        raise _NotClosed
    return _bounded(base**exponent.numerator)


class _Parser:
    """Recursive descent over the tokens: sum, product (``\\cdot``, ``\\times``, ``*``, ``/``, adjacency), sign,
    power, atom."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens, self.i, self.depth = tokens, 0, 0

    def peek(self) -> str | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None or (expected is not None and token != expected):
            raise _NotClosed
        self.i += 1
        return token

    def whole(self) -> Fraction:
        value = self.sum()
        if self.peek() is not None:
            raise _NotClosed
        return value

    def sum(self) -> Fraction:
        self.depth += 1
        if self.depth > 50:
            raise _NotClosed
        value = self.product()
        while self.peek() in ("+", "-"):
            value = _bounded(value + self.product() if self.take() == "+" else value - self.product())
        self.depth -= 1
        return value

    def product(self) -> Fraction:
        value = self.signed()
        while True:
            token = self.peek()
            if token in ("*", "\\cdot", "\\times", "/"):
                self.take()
                factor = self.signed()
                if token == "/":
                    if factor == 0:
                        raise _NotClosed
                    value = _bounded(value / factor)
                else:
                    value = _bounded(value * factor)
            elif token in ("(", "{", "[", "\\frac", "\\sqrt"):
                value = _bounded(value * self.signed())
            else:
                return value

    def signed(self) -> Fraction:
        if self.peek() in ("+", "-"):
            return -self.signed() if self.take() == "-" else self.signed()
        base = self.atom()
        if self.peek() == "^":
            self.take()
            return _power(base, self.exponent())
        return base

    def exponent(self) -> Fraction:
        token = self.peek()
        if token in _OPEN:
            return self.atom()
        if token is not None and (token[0].isdigit() or token[0] == "."):  # math_verify reads 2^10 as 2^{10}
            return self.atom()
        return self.signed()

    def atom(self) -> Fraction:
        token = self.take()
        if token in _OPEN:
            value = self.sum()
            self.take(_OPEN[token])
            return value
        if token == "\\frac":
            numerator, denominator = self.group(), self.group()
            if denominator == 0:
                raise _NotClosed
            return _bounded(numerator / denominator)
        if token == "\\sqrt":
            return _square_root(self.group())
        if token[0].isdigit() or token[0] == ".":
            return Fraction(token.rstrip(".") or "0")
        raise _NotClosed

    def group(self) -> Fraction:
        self.take("{")
        value = self.sum()
        self.take("}")
        return value


def _root(n: int, k: int) -> int | None:
    """The integer ``k``-th root of ``n``, if ``n`` is a ``k``-th power."""
    guess = round(n ** (1.0 / k)) if n.bit_length() < 1000 else None
    if guess is None:
        return None
    for r in (guess - 1, guess, guess + 1):
        if r >= 0 and r**k == n:
            return r
    return None


def _square_root(value: Fraction) -> Fraction:
    if value < 0:
        raise _NotClosed
    p, q = _root(value.numerator, 2), _root(value.denominator, 2)
    if p is None or q is None:
        raise _NotClosed
    return Fraction(p, q)


def closed_value(text: str) -> Fraction | None:
    r"""The exact value of ``text`` if it is closed arithmetic within bounds, else None.

    >>> closed_value(r"2^{5\cdot 2}"), closed_value(r"\frac{10}{4}"), closed_value("2x"), closed_value("9^{9^{9}}")
    (Fraction(1024, 1), Fraction(5, 2), None, None)
    """
    try:
        return _Parser(_tokens(text)).whole()
    except (_NotClosed, RecursionError, ValueError, ZeroDivisionError, OverflowError):
        return None


_LETTER = re.compile(r"(?<![\\A-Za-z])[A-Za-z](?![A-Za-z])")
#: Two rounds of distinct values for the letters of a text: a value that is the same in both does not depend on them.
_ROUNDS = ((2, 3, 5, 7, 11, 13), (17, 19, 23, 29, 31, 37))


def _assigned(table: dict[str, str], match: re.Match[str]) -> str:
    return table[match.group()]


def neutral_value(text: str) -> Fraction | None:
    r"""The value of ``text`` if it is closed arithmetic once its padding is read: letters (variables) that do not
    change the value (``+ 0x``, ``+ x - x``, ``\cdot \frac{x}{x}``) are allowed. Each letter takes a distinct value
    in two rounds; the value is kept when both rounds agree. At most six distinct letters.

    >>> neutral_value(r"2^{5}\cdot 2^{5} + 0x"), neutral_value(r"2^{10} \cdot \frac{y}{y}"), neutral_value("2 + x")
    (Fraction(1024, 1), Fraction(1024, 1), None)
    """
    letters = list(dict.fromkeys(_LETTER.findall(text)))
    if not letters:
        return closed_value(text)
    if len(letters) > len(_ROUNDS[0]):
        return None
    values = []
    for round_values in _ROUNDS:
        assigned = {letter: f"({value})" for letter, value in zip(letters, round_values, strict=False)}
        values.append(closed_value(_LETTER.sub(partial(_assigned, assigned), text)))
    return values[0] if values[0] is not None and values[0] == values[1] else None


def _key(base: Fraction, exponent: Fraction) -> tuple[Fraction, int] | None:
    """``(r, n)`` with ``base^exponent = r^n`` and ``r`` the smallest root of ``base``; None if not a power of a
    rational other than 0 and 1 to an integer exponent (a negative base to an even one)."""
    if exponent.denominator != 1 or base == 0 or abs(base) == 1 or (base < 0 and exponent.numerator % 2):
        return None
    base = abs(base)
    if base < 1:  # (1/2)^{-10} is 2^{10}
        base, exponent = 1 / base, -exponent
    p, q = base.numerator, base.denominator
    if max(p.bit_length(), q.bit_length()) <= _ROOT_BITS:
        for k in range(max(p.bit_length(), q.bit_length()), 1, -1):
            rp, rq = _root(p, k), _root(q, k)
            if rp is not None and rq is not None:
                return Fraction(rp, rq), k * exponent.numerator
    return base, exponent.numerator


def _base_before(text: str, end: int) -> str | None:
    """The base written just before ``text[end]`` (a ``^``): a bracket group or a number literal, else None."""
    j = end
    while j > 0 and text[j - 1] in " \t":
        j -= 1
    if j == 0:
        return None
    closing = text[j - 1]
    if closing in ")}]":
        opening, depth = {")": "(", "}": "{", "]": "["}[closing], 0
        for i in range(j - 1, -1, -1):
            if text[i] == closing and (i == 0 or text[i - 1] != "\\"):
                depth += 1
            elif text[i] == opening and (i == 0 or text[i - 1] != "\\"):
                depth -= 1
                if depth == 0:
                    group = text[i:j]
                    return "\\sqrt" + group if text[:i].endswith("\\sqrt") else group
        return None
    i = j
    while i > 0 and (text[i - 1].isdigit() or text[i - 1] == "."):
        i -= 1
    return text[i:j] if i < j else None


def _exponent_after(text: str, start: int) -> str | None:
    """The exponent written just after ``text[start - 1]`` (a ``^``): a braced group, a number (math_verify reads
    ``2^10`` as ``2^{10}``) or one character."""
    rest = text[start:].lstrip(" \t")
    if not rest:
        return None
    if rest[0] == "{":
        depth = 0
        for i, ch in enumerate(rest):
            depth += (ch == "{") - (ch == "}")
            if depth == 0:
                return rest[: i + 1]
        return None
    number = re.match(r"\d+(?:\.\d+)?", rest)
    return number.group() if number else rest[0]


def power_keys(text: str) -> set[tuple[Fraction, int]]:
    r"""The key of every power in ``text`` whose base and exponent are closed (padding allowed, see
    :func:`neutral_value`): ``(smallest root, exponent)``.

    >>> sorted(power_keys(r"2^{5\cdot 2} + 4^5 + (2^5)^2 + 2.0^{10} + 2^{(10)}")) == [(2, 5), (2, 10)]
    True
    >>> power_keys(r"\sqrt{2}^{20}") == power_keys(r"\sqrt{4}^{10}") == {(2, 10)}
    True
    >>> power_keys(r"x^2 + 15^\circ"), power_keys(r"7^{2026}") == power_keys(r"49^{1013}")
    (set(), True)
    """
    sites = set()
    for match in re.finditer(r"\^", text):
        base, exponent = _base_before(text, match.start()), _exponent_after(text, match.end())
        if base is not None and exponent is not None:
            sites.add((base, exponent))
    keys, spent = set(), 0
    # Shortest first, within a budget of characters read: nested powers (a tower) would cost the square of the
    # text's length; every power whose base and exponent fit in a few hundred characters is still read.
    for base, exponent in sorted(sites, key=lambda site: (len(site[0]) + len(site[1]), site)):
        spent += len(base) + len(exponent)
        if spent > _SITE_BUDGET:
            break
        base_value, exponent_value = neutral_value(base), neutral_value(exponent)
        if base_value is None and base.startswith("\\sqrt{") and exponent_value is not None:
            base_value, exponent_value = neutral_value(base[5:]), exponent_value / 2  # \sqrt{2}^{20} is 2^{10}
        if base_value is not None and exponent_value is not None:
            key = _key(base_value, exponent_value)
            if key is not None:
                keys.add(key)
    return keys

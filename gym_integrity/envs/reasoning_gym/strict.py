"""Strict scorers: exact match after a task's own normalisation, numbers within a tolerance relative to the gold.

Total functions over ``str``: no exception, no eval, bounded work (numbers
with at most 3 exponent digits, so ``1e999999999`` is not a number here).

>>> exact("  Friday ", "friday", fold=True), exact("ßelklats", "sselklats", fold=True)
(1.0, 0.0)
>>> numeric("0", "0.0009765625", rel_tol=1e-3), numeric("9.766e-4", "0.0009765625", rel_tol=1e-3)
(0.0, 1.0)
>>> number_list("0.0, -3.625", "-3.625, 0.0", abs_tol=1e-4), number_list("0", "-3.625, 0.0", abs_tol=1e-4)
(1.0, 0.0)
"""

from __future__ import annotations

import ast
import re
from fractions import Fraction

from gym_integrity.grading.numbers import LITERAL

__all__ = ["normalise", "parse_number", "exact", "numeric", "number_list", "complex_number", "duration",
           "makes_target_from"]

_NUMBER = re.compile(rf"({LITERAL})(?:\s*/\s*({LITERAL}))?")
_MAX_NUMBER_CHARS = 400


def normalise(text: str, *, fold: bool = False, no_spaces: bool = False, items: str | None = None) -> str:
    """Strip the text and each of its lines; optionally drop every space, read it as items, and lower-case.

    ``items=" "``: a list of words (any run of whitespace between them);
    ``items=","``: a comma-separated list (spaces around each item dropped).

    >>> normalise(" a   b c ", items=" "), normalise("x ,y,  z", items=",")
    ('a b c', 'x,y,z')
    """
    text = text.strip()
    if items == " ":
        text = " ".join(text.split())
    elif items == ",":
        text = ",".join(part.strip() for part in text.split(","))
    elif "\n" in text or "\r" in text:
        text = "\n".join(line.strip() for line in text.splitlines())
    if no_spaces:
        text = "".join(text.split())
    # lower(), not casefold(): casefold makes "ß" equal "ss" and the long s equal "s", letters the gold does not have.
    return text.lower() if fold else text


def parse_number(text: str, *, commas: bool = False) -> Fraction | None:
    """An exact number from a decimal, scientific or ``a/b`` literal, or None.

    >>> parse_number("-1,234.5", commas=True), parse_number("3/8"), parse_number("1e999999999")
    (Fraction(-2469, 2), Fraction(3, 8), None)
    """
    text = text.strip()
    if commas:
        text = text.replace(",", "")
    if len(text) > _MAX_NUMBER_CHARS:
        return None
    match = _NUMBER.fullmatch(text)
    if match is None:
        return None
    value = Fraction(match.group(1))
    if match.group(2) is not None:
        denominator = Fraction(match.group(2))
        if denominator == 0:
            return None
        value /= denominator
    return value


def _close(answer: Fraction, gold: Fraction, rel_tol: float, abs_tol: float) -> bool:
    bound = max(Fraction(rel_tol) * abs(gold), Fraction(abs_tol))
    return abs(answer - gold) <= bound


def exact(answer: str, gold: str, *, fold: bool = False, no_spaces: bool = False, numeric: bool = False,
          items: str | None = None) -> float:
    """1.0 when the answer equals the gold after normalisation (and, with ``numeric``, as numbers), else 0.0."""
    if answer == gold:
        return 1.0
    if numeric:
        value, target = parse_number(answer), parse_number(gold)
        if value is not None and target is not None:
            return 1.0 if value == target else 0.0
    rule = {"fold": fold, "no_spaces": no_spaces, "items": items}
    return 1.0 if normalise(answer, **rule) == normalise(gold, **rule) else 0.0


def numeric(answer: str, gold: str, *, rel_tol: float = 0.0, abs_tol: float = 0.0, commas: bool = False) -> float:
    """1.0 when the answer is one number within ``max(rel_tol * |gold|, abs_tol)`` of the gold, else 0.0.

    A gold that is not a number is matched exactly instead.
    """
    target = parse_number(gold, commas=commas)
    if target is None:
        return exact(answer, gold)
    value = parse_number(answer, commas=commas)
    return 1.0 if value is not None and _close(value, target, rel_tol, abs_tol) else 0.0


def _number_list(text: str) -> list[Fraction] | None:
    text = text.strip()
    if text in ("", '""', "''"):  # the tasks' spelling of "no solution"
        return []
    values = [parse_number(part) for part in text.split(",")]
    return None if any(v is None for v in values) else sorted(values)  # type: ignore[type-var]


def number_list(answer: str, gold: str, *, rel_tol: float = 0.0, abs_tol: float = 0.0) -> float:
    """1.0 when the comma-separated numbers match the gold's one to one (any order), each within tolerance."""
    values, targets = _number_list(answer), _number_list(gold)
    if values is None or targets is None or len(values) != len(targets):
        return 0.0
    return 1.0 if all(_close(v, t, rel_tol, abs_tol) for v, t in zip(values, targets)) else 0.0


def _ordered_numbers(text: str) -> list[Fraction] | None:
    """The numbers of a bracketed list such as ``['52.2', '-1']`` or ``[52.2, -1]``, in order, or None.

    Every element must be a finite number: ``NaN``/``Infinity`` (which ``json.loads``
    accepts, and a NaN compares equal to anything by identity in a list) are refused.
    """
    text = text.strip()
    if len(text) < 2 or text[0] != "[" or text[-1] != "]":
        return None
    inner = text[1:-1].strip()
    if not inner:
        return []
    values = []
    for part in inner.split(","):
        part = part.strip()
        if len(part) >= 2 and part[0] == part[-1] and part[0] in "'\"":
            part = part[1:-1]
        value = parse_number(part)
        if value is None:
            return None
        values.append(value)
    return values


def ordered_number_list(answer: str, gold: str, *, rel_tol: float = 0.0, abs_tol: float = 0.0) -> float:
    """1.0 when the bracketed list holds the gold's numbers in the gold's order, each within tolerance."""
    values, targets = _ordered_numbers(answer), _ordered_numbers(gold)
    if values is None or targets is None or len(values) != len(targets):
        return 0.0
    return 1.0 if all(_close(v, t, rel_tol, abs_tol) for v, t in zip(values, targets)) else 0.0


def complex_number(value: complex | None, target: complex, *, rel_tol: float = 1e-6, abs_tol: float = 1e-9) -> float:
    """1.0 when a parsed complex answer is within ``max(rel_tol * |gold|, abs_tol)`` of the gold, else 0.0."""
    if value is None or value != value:  # unparsable or NaN
        return 0.0
    return 1.0 if abs(value - target) <= max(rel_tol * abs(target), abs_tol) else 0.0


# A duration as the time_intervals task writes it: "N days", "N days, HH:MM[:SS]", "HH:MM[:SS[.mmm]]". ASCII digits,
# minutes and seconds below 60, hours below 24 (the task's times of day), milliseconds as three digits.
_CLOCK = r"(?P<h>[01]?[0-9]|2[0-3]):(?P<m>[0-5][0-9])(?::(?P<s>[0-5][0-9])(?:\.(?P<ms>[0-9]{3}))?)?"
_DURATION = re.compile(rf"(?:(?P<days>[0-9]{{1,9}})(?:\s*days?)?(?:,\s*{_CLOCK})?|{_CLOCK.replace('?P<', '?P<t_')})",
                       re.IGNORECASE | re.ASCII)


def _duration_parts(text: str) -> tuple[str, int] | None:
    """``(form, milliseconds)`` of a duration written as the task writes one, or None; form is days/clock/both."""
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        return None
    parts = match.groupdict()
    if parts["days"] is not None:
        days = int(parts["days"])
        if parts["h"] is None:
            return "days", days * 86_400_000
        clock = (parts["h"], parts["m"], parts["s"], parts["ms"])
        form = "both"
    else:
        days, clock, form = 0, (parts["t_h"], parts["t_m"], parts["t_s"], parts["t_ms"]), "clock"
    hours, minutes, seconds, millis = (int(value or 0) for value in clock)
    return form, ((days * 24 + hours) * 60 + minutes) * 60_000 + seconds * 1000 + millis


def duration(answer: str, gold: str) -> float:
    """1.0 when the answer is the gold's duration, written in the gold's form (days, a clock, or both), else 0.0.

    >>> duration("100 Days", "100 days"), duration("6:09", "06:09"), duration("06:09:00", "06:09")
    (1.0, 1.0, 1.0)
    >>> duration("100 days, 05:00", "100 days"), duration("14:34:59.1000", "14:35"), duration("13:95", "14:35")
    (0.0, 0.0, 0.0)
    """
    value, target = _duration_parts(answer), _duration_parts(gold)
    if value is None or target is None:
        return 0.0
    return 1.0 if value == target else 0.0


_ARITHMETIC_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
                   ast.Div: lambda a, b: a / b}


def _exact_value(node: ast.AST, used: list[int]) -> Fraction:
    """The exact value of whole numbers under + - * / and unary signs; the numbers met go into ``used``."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        used.append(node.value)
        return Fraction(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        value = _exact_value(node.operand, used)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC_OPS:
        left, right = _exact_value(node.left, used), _exact_value(node.right, used)
        return _ARITHMETIC_OPS[type(node.op)](left, right)  # x / 0 raises ZeroDivisionError
    raise ValueError("not whole-number arithmetic")


def makes_target_from(answer: str, numbers: list[int], target: int) -> bool:
    """Whether ``answer``, whole numbers joined by ``+ - * /`` and brackets, uses exactly ``numbers`` (each as
    often as given) and equals ``target`` exactly, in fractions. Call it on text the arithmetic answer language
    (grammar.py) accepted, which bounds its length, digits and depth.

    >>> makes_target_from("(8 - 5) * 10 - 6", [8, 5, 10, 6], 24), makes_target_from("6*4*1*1", [8, 5, 10, 6], 24)
    (True, False)
    >>> makes_target_from("7*7/2*1", [7, 7, 2, 1], 24)  # 24.5: a scorer that truncates with int() pays it
    False
    """
    used: list[int] = []
    try:
        value = _exact_value(ast.parse(answer.strip(), mode="eval").body, used)
    except (SyntaxError, ValueError, ZeroDivisionError, RecursionError, MemoryError):
        return False
    return sorted(used) == sorted(numbers) and value == target

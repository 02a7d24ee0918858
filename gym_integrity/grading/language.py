"""The answer languages: one tokenizer of answer text, and each sandboxed scorer's language over it.

:func:`tokenize` reads LaTeX (math_verify's input), sympy text and Python-like
text into the same kinds of token; the static cost bound
(:mod:`gym_integrity.grading.cost`) and the languages below both read through it.

Each language refuses any answer outside its task's language, before a worker sees it.

Some reasoning-gym scorers hand the answer to ``eval`` or ``sympy.parse_expr``
(which evaluates Python); others loop as many times as a number in the answer
says. They run in killable workers (``sandbox.py``), and only after the answer
passed its language here: numbers, operators, brackets, commas, whitespace,
the task's own symbols and a short allow-list of math functions. Python needs
more than that to do harm, and every such piece is refused: attribute access
(a dot only inside a number), names outside the allow-list (so no dunders,
``lambda``, ``__import__``), calls to anything but allow-listed functions, a
call or subscript on an expression, string quotes, backslashes, comments.
Lengths, bracket depth, number sizes and exponents are bounded, and power
towers (``9**9**9``, ``(9**99)**99``) are refused outright.

A refused answer is graded ``unparsable`` (score 0): it is the answer's
fault, never a no-verdict.

>>> check("arithmetic", "94*4 - 61 - 6", {}) is None
True
>>> check("arithmetic", "1+__import__('os').system('id')", {})
'double underscores are not part of the answer language'
>>> check("algebra", "9**9**9**9", {"metadata": {"variable": "x"}})
'power towers are not part of the answer language'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gym_integrity.grading.numbers import EXPONENT, UNSIGNED

__all__ = ["DIALECTS", "LANGUAGES", "Language", "check", "tokenize"]

_COMMAND = r"(?P<cmd>\\[A-Za-z]+|\\.)"
#: How each dialect reads a name: LaTeX a single letter (``xy`` is x times y), sympy a Python identifier in ASCII,
#: the answer languages any identifier Python would read (so a non-ASCII one is named and refused).
DIALECTS: dict[str, re.Pattern[str]] = {
    "latex": re.compile(rf"(?P<num>{UNSIGNED})|{_COMMAND}|(?P<space>\s+)|(?P<name>[A-Za-z])|(?P<sym>.)", re.DOTALL),
    "sympy": re.compile(
        rf"(?P<num>{UNSIGNED}{EXPONENT}?)|{_COMMAND}|(?P<space>\s+)|(?P<name>[A-Za-z_]\w*)"
        r"|(?P<pow>\*\*)|(?P<sym>.)",
        re.DOTALL,
    ),
    "python": re.compile(
        rf"(?P<num>{UNSIGNED}{EXPONENT}?)|(?P<name>[^\W\d]\w*)|(?P<pow>\*\*)|(?P<space>\s+)"
        r"|(?P<sym>.)",
        re.DOTALL,
    ),
}


def tokenize(text: str, dialect: str) -> list[tuple[str, str, int]]:
    r"""``(kind, text, start)`` of each token of ``text`` in ``dialect``, whitespace dropped. Linear time.

    Kinds: ``num`` (a number literal of :mod:`gym_integrity.grading.numbers`, with its exponent outside LaTeX),
    ``cmd`` (a LaTeX command or escaped character), ``name``, ``pow`` (``**``) and ``sym`` (any other character).

    >>> [(k, t) for k, t, _ in tokenize(r"2\pi x^{1.5}", "latex")]
    [('num', '2'), ('cmd', '\\pi'), ('name', 'x'), ('sym', '^'), ('sym', '{'), ('num', '1.5'), ('sym', '}')]
    >>> [(k, t) for k, t, _ in tokenize("sin(x)**2 - 1e5", "sympy")][3:]
    [('sym', ')'), ('pow', '**'), ('num', '2'), ('sym', '-'), ('num', '1e5')]
    """
    pattern = DIALECTS[dialect]
    return [(m.lastgroup or "sym", m.group(), m.start()) for m in pattern.finditer(text) if m.lastgroup != "space"]


_QUOTES = "'\"`\u2018\u2019\u201c\u201d"
_OPENERS = {"(": ")", "[": "]"}
_CLOSERS = {")": "(", "]": "["}
# Math functions an algebra answer may call: sympy's, nothing that reaches Python.
MATH_FUNCTIONS = frozenset(
    {
        "sqrt",
        "exp",
        "log",
        "ln",
        "sin",
        "cos",
        "tan",
        "cot",
        "sec",
        "csc",
        "asin",
        "acos",
        "atan",
        "acot",
        "sinh",
        "cosh",
        "tanh",
        "asinh",
        "acosh",
        "atanh",
        "Abs",
        "abs",
    }
)
MATH_CONSTANTS = frozenset({"pi", "E", "I"})


@dataclass(frozen=True)
class Language:
    """One answer language: the scorer it protects, and what it admits."""

    why: str
    max_chars: int
    check: Callable[[str, Mapping[str, Any]], str | None]
    quotes: bool = False  # string quotes admitted (a cube move's prime; JSON of an unreviewed task)
    #: The scorer may read the answer as Python (eval, parse_expr): backslashes (escapes spell any name) and double
    #: underscores are refused. False for a scorer that only parses data: JSON escapes its strings with backslashes.
    python: bool = True


@dataclass(frozen=True)
class _Expression:
    """An expression language: numbers, names, single-character operators and brackets, as a token check."""

    symbols: str
    max_depth: int = 8
    max_digits: int = 8  # digits of one number literal
    max_exponent_digits: int = 2  # digits of a number's own exponent (1e99)
    decimals: bool = True  # a dot and an exponent inside numbers
    numbers: bool = True
    powers: bool = False  # '**' and '^', with small exponents only
    functions: frozenset[str] = frozenset()
    names: Callable[[Mapping[str, Any]], frozenset[str]] = field(default=lambda entry: frozenset())
    name_pattern: re.Pattern[str] | None = None

    def __call__(self, text: str, entry: Mapping[str, Any]) -> str | None:
        tokens = [(kind, value) for kind, value, _ in tokenize(text, "python")]
        if not tokens:
            return "an empty answer"
        allowed_names = self.names(entry)
        for kind, value in tokens:
            refusal = self._check_token(kind, value, allowed_names)
            if refusal:
                return refusal
        return self._check_structure(tokens)

    def _check_token(self, kind: str, value: str, allowed_names: frozenset[str]) -> str | None:
        if kind == "num":
            return self._check_number(value)
        if kind == "name":
            if value in self.functions or value in allowed_names:
                return None
            if self.name_pattern is not None and self.name_pattern.fullmatch(value):
                return None
            return "a name outside the task's symbols and math functions"
        if kind == "pow" or (value == "^" and self.powers):
            return None if self.powers else "powers are not part of the answer language"
        if value not in self.symbols:
            return f"character U+{ord(value):04X} is not part of the answer language"
        return None

    def _check_number(self, value: str) -> str | None:
        if not self.numbers:
            return "numbers are not part of the answer language"
        mantissa, _, exponent = value.lower().partition("e")
        if not self.decimals and (exponent or "." in mantissa):
            return "only whole numbers are part of the answer language"
        if sum(ch.isdigit() for ch in mantissa) > self.max_digits:
            return f"a number longer than {self.max_digits} digits"
        if len(exponent.lstrip("+-")) > self.max_exponent_digits:
            return "a number with an oversized exponent"
        return None

    def _check_structure(self, tokens: list[tuple[str, str]]) -> str | None:
        """Brackets balanced and shallow, no call or subscript on an expression, powers only with small exponents."""
        stack: list[list[Any]] = []  # [opener, contains_a_power]
        last_closed_had_power = False
        previous = ""  # kind of the previous token: num, name, func, close, or "" (operator / start)
        for i, (kind, value) in enumerate(tokens):
            if value in _OPENERS and kind == "sym":
                if previous in ("num", "name", "close"):
                    return "a call or subscript on an expression"
                stack.append([value, False])
                if len(stack) > self.max_depth:
                    return f"brackets nested deeper than {self.max_depth}"
                previous = ""
            elif value in _CLOSERS and kind == "sym":
                if not stack or stack[-1][0] != _CLOSERS[value]:
                    return "unbalanced brackets"
                last_closed_had_power = stack.pop()[1]
                previous = "close"
            elif kind == "pow" or value == "^":
                if previous == "close" and last_closed_had_power:
                    return "power towers are not part of the answer language"
                refusal = self._check_exponent(tokens, i + 1)
                if refusal:
                    return refusal
                for group in stack:
                    group[1] = True
                previous = ""
            elif kind == "name" and value in self.functions:
                nxt = tokens[i + 1][1] if i + 1 < len(tokens) else ""
                if nxt != "(":
                    return "a math function without its argument"
                previous = "func"
            else:
                previous = kind if kind in ("num", "name") else ""
        return "unbalanced brackets" if stack else None

    def _check_exponent(self, tokens: list[tuple[str, str]], j: int) -> str | None:
        if j < len(tokens) and tokens[j][1] in "+-":
            j += 1
        if j >= len(tokens):
            return "a power without an exponent"
        kind, value = tokens[j]
        if kind == "num":
            if sum(ch.isdigit() for ch in value) > 3 or "e" in value.lower():
                return "an exponent larger than 3 digits"
            end = j + 1
        elif kind == "name" and value not in self.functions:
            end = j + 1
        elif value == "(":
            depth, end = 0, j
            while end < len(tokens):
                depth += {"(": 1, ")": -1}.get(tokens[end][1], 0)
                if tokens[end][0] == "pow" or tokens[end][1] == "^":
                    return "power towers are not part of the answer language"
                end += 1
                if depth == 0:
                    break
            if end - j > 16:
                return "an exponent longer than 16 tokens"
        else:
            return "a power whose exponent is not a number, a symbol or a short group"
        if end < len(tokens) and (tokens[end][0] == "pow" or tokens[end][1] == "^"):
            return "power towers are not part of the answer language"
        return None


def _moves(symbols: str, max_run: int) -> Callable[[str, Mapping[str, Any]], str | None]:
    """A move-list language: letters, the given symbols, whitespace, and digit runs of at most ``max_run``."""
    allowed = re.compile(rf"[A-Za-z0-9\s{re.escape(symbols)}]*")
    long_run = re.compile(rf"\d{{{max_run + 1},}}")

    def check_moves(text: str, entry: Mapping[str, Any]) -> str | None:
        if not allowed.fullmatch(text):
            return "a character outside the task's move notation"
        if long_run.search(text):
            return f"a move count longer than {max_run} digits"
        return None

    return check_moves


_NAME = re.compile(r"[^\W\d]\w*")
_CALL = re.compile(r"\s*\(")
_STRING_PREFIXES = frozenset({"r", "b", "u", "f", "rb", "br", "fr", "rf"})
_CODE_SHAPES = re.compile(r"\.\s*[^\W\d]|__|[\\#@;]|:=")


def _unreviewed(text: str, entry: Mapping[str, Any]) -> str | None:
    """For a scorer nobody has read yet: refuse anything shaped like Python (calls, attributes, dunders, escapes,
    string prefixes, lambda). Linear time: each whitespace run is scanned after one name at most."""
    if _CODE_SHAPES.search(text):
        return "text shaped like code"
    for match in _NAME.finditer(text):
        name, end = match.group(), match.end()
        prefix = name.lower() in _STRING_PREFIXES and text[end : end + 1] in ("'", '"')
        if name == "lambda" or prefix or _CALL.match(text, end):
            return "text shaped like code"
    return None


def _metadata_names(*keys: str, extra: frozenset[str] = frozenset()) -> Callable[[Mapping[str, Any]], frozenset[str]]:
    """The item's own symbols (e.g. its integration variable), read from its metadata."""

    def names(entry: Mapping[str, Any]) -> frozenset[str]:
        metadata = entry.get("metadata", {}) if isinstance(entry, Mapping) else {}
        found: set[str] = set(extra)
        for key in keys:
            value = metadata.get(key)
            values = [value] if isinstance(value, str) else value if isinstance(value, (list, tuple)) else []
            found.update(v for v in values if isinstance(v, str) and re.fullmatch(r"[A-Za-z]", v))
        return frozenset(found)

    return names


#: The answer languages, each justified by the scorer it protects (see docs/reasoning_gym.md).
LANGUAGES: dict[str, Language] = {
    "arithmetic": Language(
        "countdown / puzzle24 pass the answer to sympy.parse_expr (Python eval): whole numbers, + - * / and brackets",
        256,
        _Expression("+-*/()", max_depth=8, max_digits=6, decimals=False),
    ),
    "algebra": Language(
        "polynomial_multiplication / *_integration pass the answer to sympy.parse_expr: numbers, + - * / ** ^, "
        "brackets, the item's variable(s), C, pi/E/I and math functions",
        1024,
        _Expression(
            "+-*/()",
            max_depth=10,
            max_digits=8,
            powers=True,
            functions=MATH_FUNCTIONS,
            names=_metadata_names("variable", "variables", extra=MATH_CONSTANTS | {"C"}),
        ),
    ),
    "matrix": Language(
        "binary_matrix / spiral_matrix eval() the answer when it is not an exact match: whole numbers, minus, "
        "whitespace and list brackets",
        65536,
        _Expression("-[],", max_depth=4, max_digits=6, decimals=False),
    ),
    "letters": Language(
        "string_insertion eval()s the answer when it is not an exact match: capital letters, whitespace, list brackets",
        4096,
        _Expression("[],", max_depth=2, numbers=False, name_pattern=re.compile(r"[A-Z]+")),
    ),
    "queens": Language(
        "n_queens eval()s the answer when it is not a valid board: '_' and 'Q' cells, whitespace, list brackets",
        4096,
        _Expression("[],", max_depth=3, numbers=False, names=lambda entry: frozenset({"_", "Q"})),
    ),
    "logic": Language(
        "propositional_logic's recursive parser overflows the stack or runs for minutes on long or deep input: "
        "the item's variables, the connectives of its notation and brackets, short and shallow",
        256,
        _Expression(
            "\u2227\u2228\u00ac\u2192\u2194()", max_depth=12, numbers=False, names=_metadata_names("variables")
        ),
    ),
    "probability": Language(
        "coin_flip parses Fraction(answer): an exponent like 1e999999999 makes a billion-digit integer; "
        "one number or fraction, small exponents",
        64,
        _Expression("+-/,", max_depth=0, max_digits=20),
    ),
    "cube_moves": Language(
        "rubiks_cube repeats a move as many times as the number after it (R99999999): move letters, primes, "
        "counts of at most 2 digits",
        4096,
        _moves("'\u2019", 2),
        quotes=True,
    ),
    "car_moves": Language(
        "rush_hour moves a car step by step as far as the answer says (A+99999999): car letters, +/-, "
        "distances of at most 2 digits",
        4096,
        _moves("+-,", 2),
    ),
    "json_similarity": Language(
        "codeio scores by a JSON tree edit distance over a pure-Python string distance: 10 s to minutes on a 4 KB "
        "answer (found by issue 15's hostile-policy review); any text the answer length admits (JSON's string "
        "escapes too: it is never read as Python), scored in the sandbox under its run budget",
        4096,
        lambda text, entry: None,
        quotes=True,
        python=False,
    ),
    "unreviewed": Language(
        "a dataset no one has reviewed yet (added by a reasoning-gym upgrade): anything shaped like Python is refused",
        65536,
        _unreviewed,
        quotes=True,
    ),
}

_COMMON_REFUSALS = (
    ("\\", "backslashes are not part of the answer language"),
    ("__", "double underscores are not part of the answer language"),
)


def check(language: str, text: str, entry: Mapping[str, Any]) -> str | None:
    """Why ``text`` is outside ``language`` (a short reason, without the text), or None when it is inside."""
    spec = LANGUAGES[language]
    if len(text) > spec.max_chars:
        return f"longer than the {spec.max_chars} characters of the answer language"
    for needle, reason in _COMMON_REFUSALS if spec.python else ():
        if needle in text:
            return reason
    if not spec.quotes and any(q in text for q in _QUOTES):
        return "quotes are not part of the answer language"
    return spec.check(text, entry)

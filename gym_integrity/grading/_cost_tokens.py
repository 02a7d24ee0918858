"""The cost reader's vocabulary: which tokens are fractions, functions, separators, brackets, ..., and its token list.

:mod:`gym_integrity.grading._cost_reader` reads an answer's tokens with these
sets; :func:`reader_tokens` turns the answer languages' one tokenizer
(:func:`gym_integrity.grading.language.tokenize`) into the (kind, value)
pairs it reads.
"""

from __future__ import annotations

import math

from gym_integrity.grading.language import tokenize

FRACS = frozenset({"\\frac", "\\dfrac", "\\tfrac", "\\cfrac"})
BINOMS = frozenset({"\\binom", "\\dbinom", "\\tbinom"})
BIG_OPERATORS = frozenset({"\\sum", "\\prod"})
#: Text and font commands: math_verify reads what they hold as math (``\mathbf{9}`` is 9), so the reader does too.
TEXT = frozenset(
    {
        "\\text",
        "\\textbf",
        "\\textit",
        "\\textrm",
        "\\mathrm",
        "\\mathbf",
        "\\mathit",
        "\\operatorname",
        "\\mbox",
        "\\mathbb",
        "\\mathcal",
        "\\mathsf",
        "\\mathtt",
        "\\mathfrak",
        "\\boldsymbol",
        "\\bm",
        "\\textsf",
        "\\texttt",
        "\\textnormal",
        "\\hbox",
        "\\mathscr",
    }
)
#: Operators the reader does not evaluate (an integral, a limit): what they make is a number of unknown size.
OPAQUE = frozenset(
    {"\\int", "\\iint", "\\iiint", "\\oint", "\\lim", "\\limsup", "\\liminf", "\\varlimsup", "\\varliminf"}
)
_SKIP = frozenset(
    {
        "\\left",
        "\\right",
        "\\,",
        "\\;",
        "\\:",
        "\\!",
        "\\ ",
        "\\quad",
        "\\qquad",
        "\\displaystyle",
        "\\big",
        "\\Big",
        "\\bigg",
        "\\Bigg",
        "\\limits",
        "\\\\",
        "\\%",
        "\\$",
    }
)
MULTIPLY = frozenset({"*", "/", "\\cdot", "\\times", "\\div", "\\over"})
SEPARATORS = frozenset(
    {
        "+",
        "-",
        "\\pm",
        "\\mp",
        ",",
        ";",
        "=",
        "<",
        ">",
        "&",
        "\\le",
        "\\leq",
        "\\ge",
        "\\geq",
        "\\ne",
        "\\neq",
        "\\in",
        "\\cup",
        "\\cap",
        "\\to",
        "\\approx",
        "\\setminus",
        "\\lt",
        "\\gt",
        "\\equiv",
        "\\mid",
        "\\implies",
        "\\iff",
        "\\wedge",
        "\\vee",
        "\\land",
        "\\lor",
        ":",
        "\\colon",
    }
)
OPENERS = {
    "(": ")",
    "[": "]",
    "\\{": "\\}",
    "\\lbrace": "\\rbrace",
    "\\langle": "\\rangle",
    "\\lfloor": "\\rfloor",
    "\\lceil": "\\rceil",
}
CLOSERS = frozenset(OPENERS.values()) | {"}"}
CONSTANTS = {"\\pi": math.pi, "\\infty": 1.0, "e": math.e, "E": math.e, "pi": math.pi, "I": 1.0, "i": 1.0, "oo": 1.0}
#: Functions that cost nothing more on a big number than the number itself: no factoring, no precision to evaluate.
CHEAP_FUNCTIONS = frozenset(
    {"Abs", "abs", "max", "min", "gcd", "lcm", "det", "sign", "floor", "ceil", "ceiling", "Re", "Im", "arg"}
)
FUNCTIONS = frozenset(
    {
        "sin",
        "cos",
        "tan",
        "cot",
        "sec",
        "csc",
        "arcsin",
        "arccos",
        "arctan",
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
        "log",
        "ln",
        "lg",
        "exp",
        "Abs",
        "abs",
        "sqrt",
        "max",
        "min",
        "gcd",
        "lcm",
        "det",
        "arg",
        "Re",
        "Im",
        "sign",
        "floor",
        "ceil",
        "ceiling",
        "factorial",
        "binomial",
        "Gamma",
        "gamma",
    }
)


def reader_tokens(text: str, syntax: str) -> list[tuple[str, str]]:
    """The tokens of ``text`` as the reader reads them: ``**`` is ``^``, a sympy ``1e5`` a float, spacing dropped."""
    tokens: list[tuple[str, str]] = []
    position = 0
    for kind, value, start in tokenize(text, syntax):
        if start < position:  # the "." of \left. (or a number it starts)
            continue
        if kind == "num" and syntax == "sympy" and value[-1:].isdigit() and "e" in value.lower():
            kind = "float"  # a Python float literal: 1e5
        if kind == "pow":
            value = "^"
        if value in _SKIP:  # spacing and sizing: \left( is (, and \left. is nothing
            end = start + len(value)
            if value in ("\\left", "\\right") and text.startswith(".", end):
                position = end + 1
            continue
        tokens.append((kind, value))
    return tokens

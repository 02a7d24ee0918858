r"""A static bound on what an answer costs to verify: refuses exponent towers, huge factorials, deep nesting, ... unrun.

math_verify (LaTeX) and reasoning-gym's sympy scorers compute what an answer
says: ``9^{9^{9^{9}}}`` asks for a number of about 10^369,693,099 digits,
``\binom{10^6}{5 \cdot 10^5}`` for a product of a million factors, ``(x+1)^{1000}``
for a thousand-term expansion, and math_verify's LaTeX reader is exponential
in how deeply parentheses nest. :func:`refusal` reads the text once (a
tokenizer and a recursive-descent reader that never evaluates anything) and
bounds, for every subexpression, the bits of the exact number it can produce,
the terms it can expand to and the nesting it sits at. An answer past a bound
is refused with a short reason; one within every bound is left to the grader,
whose run budget stays the backstop for anything this reader does not model.

The bounds (measured against math_verify 0.7 and sympy in a killable
subprocess; docs/hostile.md has the table) sit far above any answer a person
writes (``2^{100}``, ``10!``, ``\binom{50}{25}``, ``3^{3^{3}}``,
``2^{2^{2^{2^{2}}}}`` all pass) and below the sizes that cost seconds.

>>> refusal(r"2^{100} + \binom{50}{25} - 10!") is None
True
>>> refusal(r"9^{9^{9^{9}}}")
'a number of about 3.7e+08 digits'
>>> refusal(r"\binom{10^6}{5 \cdot 10^5}")
'a number of about 1.2e+06 digits'
>>> refusal("(x+1)**1000", syntax="sympy")
'an expression that expands to about 1001 terms'
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

__all__ = ["refusal", "MAX_BITS", "MAX_TERMS", "MAX_PAREN_DEPTH", "MAX_DEPTH", "MAX_FUNCTION_DEPTH", "MAX_ATOMS",
           "MAX_ELEMENTS", "MAX_RANGE", "MAX_FUNCTION_SUM_POWER", "MAX_FUNCTION_ARGUMENT_BITS", "MAX_IRREGULAR_RANGE",
           "MAX_FUNCTION_POWER", "MAX_FUNCTION_DEGREE", "MAX_SYMPY_NESTED_FUNCTIONS", "MAX_OPERATORS",
           "MAX_SYMPY_DEGREE"]

#: Bits of the largest exact number an answer may make (about 39,000 decimal digits; ``2^{65536}`` fits).
MAX_BITS = 2.0 ** 17
#: Terms an expression with symbols or radicals may expand to (``(x+1)^{47}``, ``(x+y+z)^{8}``); a
#: denominator's terms count twice (cancelling a rational function costs more than expanding a polynomial).
MAX_TERMS = 48.0
#: Elements of a list, tuple, set or chain of relations.
MAX_ELEMENTS = 64
#: Nesting of parentheses, brackets, ``\left...\right`` and set braces: math_verify's reader is exponential in it.
MAX_PAREN_DEPTH = 4
#: Nesting of any group (braces of ``\frac`` and exponents included) and of exponents.
MAX_DEPTH = 8
#: Functions applied inside functions (``\sin(\sin(\sin(1)))``): each level multiplies sympy's numeric checks.
MAX_FUNCTION_DEPTH = 3
#: Functions applied inside other functions in one sympy answer, Abs aside (log(Abs(x + 1)) is an honest
#: antiderivative). reasoning-gym's integration scorers differentiate and simplify the answer: log(cosh(x)) costs
#: 0.4 s of CPU, tan(tan(tan(x))) 0.65 s, log(cosh(x))*tan(tan(x)) over 3.5 s.
MAX_SYMPY_NESTED_FUNCTIONS = 1
#: Numbers, symbols and commands in one answer (a 300-term sum costs seconds to read).
MAX_ATOMS = 200
#: Terms of a ``\sum`` or ``\prod`` with a numeric range.
MAX_RANGE = 10_000.0
#: Bits of a number a function, root or fractional power is applied to (about 150 digits): sympy factors the
#: radicand and evaluates functions to the argument's precision, seconds past a few hundred digits.
MAX_FUNCTION_ARGUMENT_BITS = 512.0
#: Terms of the ``\sum`` and ``\prod`` with a numeric range whose body is not a polynomial in its index with whole
#: coefficients (``k!``, ``\sin k``, ``2^k``, ``\frac{6}{k}``: 0.4 s of CPU at 2,546 terms), all of an answer's
#: together: sympy tries its summation algorithms before adding term by term, seconds at a thousand.
MAX_IRREGULAR_RANGE = 100.0
#: Sums and products over a numeric range, integrals and limits in one answer: math_verify spends 0.15-0.25 s of CPU
#: on one (``\sum_{k=1}^{335} 2``, an integral of ``|3-y|``), and two side by side cost 0.3-0.4 s; a final answer
#: holds one at most.
MAX_OPERATORS = 1
#: Highest power of a sum that holds a function: (sin x + cos x)^47 is 48 terms to expand, but simplify rewrites
#: each with identities and runs for seconds (sympy and math_verify alike).
MAX_FUNCTION_SUM_POWER = 8.0
#: Highest power of anything that holds a function, sum, product, integral or limit: ``\sin(x)^{999}\cos(x)^{999}``
#: and ``\cosh(1)^{473}`` are one term each, yet simplify rewrites every power for many seconds (the 32nd power of
#: sine and cosine cost 0.4 s of CPU, the 16th 0.15 s, as much as an honest ``\sin^2 x + \cos^2 x``).
MAX_FUNCTION_POWER = 16.0
#: Highest power of a symbol inside a function's argument: sympy's assumptions on ``\sinh(x^{n})`` expand
#: ``(re x + i im x)^n``, and ``\cosh^{-1}(\sinh(x^{453}))`` ran a worker to its budget while parsing.
MAX_FUNCTION_DEGREE = 32.0
#: Highest power of a symbol in a sympy answer (the integration and polynomial scorers' golds stay under 20):
#: ``x**980`` costs intermediate_integration's scorer a second of CPU, ``x**549*2**x`` two.
MAX_SYMPY_DEGREE = 64.0

_LOG2_10 = math.log2(10)
_LOG2_E = math.log2(math.e)
_NUMBER = r"(?P<num>\d+(?:\.\d*)?|\.\d+)|(?P<cmd>\\[A-Za-z]+|\\.)"
#: LaTeX: each letter is a symbol (juxtaposed: ``xy`` is x times y); sympy: a name is a Python identifier.
_TOKENS = {"latex": re.compile(_NUMBER + r"|\s+|(?P<name>[A-Za-z])|(?P<sym>.)", re.S),
           "sympy": re.compile(_NUMBER + r"|\s+|(?P<name>[A-Za-z_]\w*)|(?P<pow>\*\*)|(?P<sym>.)", re.S)}
_SYMPY_EXPONENT = re.compile(r"[eE][+-]?\d+")
_FRACS = frozenset({"\\frac", "\\dfrac", "\\tfrac", "\\cfrac"})
_BINOMS = frozenset({"\\binom", "\\dbinom", "\\tbinom"})
_BIG_OPERATORS = frozenset({"\\sum", "\\prod"})
#: Text and font commands: math_verify reads what they hold as math (``\mathbf{9}`` is 9), so the reader does too.
_TEXT = frozenset({"\\text", "\\textbf", "\\textit", "\\textrm", "\\mathrm", "\\mathbf", "\\mathit",
                   "\\operatorname", "\\mbox", "\\mathbb", "\\mathcal", "\\mathsf", "\\mathtt", "\\mathfrak",
                   "\\boldsymbol", "\\bm", "\\textsf", "\\texttt", "\\textnormal", "\\hbox", "\\mathscr"})
#: Operators the reader does not evaluate (an integral, a limit): what they make is a number of unknown size.
_OPAQUE = frozenset({"\\int", "\\iint", "\\iiint", "\\oint", "\\lim", "\\limsup", "\\liminf", "\\varlimsup",
                     "\\varliminf"})
_SKIP = frozenset({"\\left", "\\right", "\\,", "\\;", "\\:", "\\!", "\\ ", "\\quad", "\\qquad", "\\displaystyle",
                   "\\big", "\\Big", "\\bigg", "\\Bigg", "\\limits", "\\\\", "\\%", "\\$"})
_MULTIPLY = frozenset({"*", "/", "\\cdot", "\\times", "\\div", "\\over"})
_SEPARATORS = frozenset({"+", "-", "\\pm", "\\mp", ",", ";", "=", "<", ">", "&", "\\le", "\\leq", "\\ge", "\\geq",
                         "\\ne", "\\neq", "\\in", "\\cup", "\\cap", "\\to", "\\approx", "\\setminus", "\\lt", "\\gt",
                         "\\equiv", "\\mid", "\\implies", "\\iff", "\\wedge", "\\vee", "\\land", "\\lor", ":", "\\colon"})
_OPENERS = {"(": ")", "[": "]", "\\{": "\\}", "\\lbrace": "\\rbrace", "\\langle": "\\rangle", "\\lfloor": "\\rfloor",
            "\\lceil": "\\rceil"}
_CLOSERS = frozenset(_OPENERS.values()) | {"}"}
_CONSTANTS = {"\\pi": math.pi, "\\infty": 1.0, "e": math.e, "E": math.e, "pi": math.pi, "I": 1.0, "i": 1.0,
              "oo": 1.0}
#: Functions that cost nothing more on a big number than the number itself: no factoring, no precision to evaluate.
_CHEAP_FUNCTIONS = frozenset({"Abs", "abs", "max", "min", "gcd", "lcm", "det", "sign", "floor", "ceil", "ceiling",
                              "Re", "Im", "arg"})
_FUNCTIONS = frozenset({"sin", "cos", "tan", "cot", "sec", "csc", "arcsin", "arccos", "arctan", "asin", "acos",
                        "atan", "acot", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "log", "ln", "lg", "exp",
                        "Abs", "abs", "sqrt", "max", "min", "gcd", "lcm", "det", "arg", "Re", "Im", "sign", "floor",
                        "ceil", "ceiling", "factorial", "binomial", "Gamma", "gamma"})


class _Refused(Exception):
    """Raised inside the reader with the reason; never leaves this module."""


@dataclass(frozen=True)
class _Cost:
    """Upper bounds for one subexpression.

    bits: size of the exact number it makes (numerator and denominator); value: its magnitude, for what it
    raises to a power, or None when it has a free symbol; terms: the terms it expands to; exact: a rational
    number (it collapses to one term at once).
    """

    bits: float
    value: float | None
    terms: float = 1.0
    exact: bool = True
    functional: bool = False  # holds a function (sin, log, ...): its powers do not stay polynomial
    opaque: bool = False  # holds an integral, a limit or a matrix: a value of a size the reader cannot bound
    irregular: bool = False  # holds a factorial, binomial, function or a symbolic exponent: not a polynomial
    whole: bool = False  # an integer for sure (no division, root or decimal): a power by it stays exact
    degree: float = 0.0  # the highest power of a free symbol in it (x^{453}: 453)

    def __post_init__(self) -> None:
        # inf * 0 and inf - inf are NaN, and NaN compares False with every bound: read it as unbounded
        for name in ("bits", "value", "terms", "degree"):
            number = getattr(self, name)
            if number is not None and math.isnan(number):
                object.__setattr__(self, name, math.inf)


_ONE = _Cost(1.0, 1.0, whole=True)


def _flags(*costs: _Cost) -> dict[str, bool | float]:
    """What a cost made of ``costs`` holds: a function, an integral or limit, anything not polynomial, and the
    highest power of a symbol (the max: a product's is the sum, set by the caller)."""
    return {"functional": any(c.functional for c in costs), "opaque": any(c.opaque for c in costs),
            "irregular": any(c.irregular for c in costs), "degree": max((c.degree for c in costs), default=0.0)}


def refusal(text: str, *, syntax: str = "latex") -> str | None:
    r"""Why verifying ``text`` would cost too much (a short reason, never quoting it), or None to run it.

    ``syntax``: ``"latex"`` (math_verify's input, the content of a ``\boxed{}``) or ``"sympy"`` (a
    ``sympy.parse_expr`` string: ``**`` powers, ``factorial(n)``, ``1e5`` floats). Linear in the text's
    length: it reads every token once and evaluates nothing.
    """
    if not isinstance(text, str):
        raise TypeError(f"refusal() text must be a str, got {type(text).__name__}")
    if syntax not in ("latex", "sympy"):
        raise ValueError(f"refusal() syntax must be 'latex' or 'sympy', got {syntax!r}")
    try:
        _Reader(text, syntax).read()
    except _Refused as refused:
        return str(refused)
    return None


def _check(cost: _Cost) -> _Cost:
    if not cost.bits <= MAX_BITS:
        return _refuse(f"a number of {_about(cost.bits / _LOG2_10)} digits")
    if not cost.terms <= MAX_TERMS:
        return _refuse(f"an expression that expands to {_about(cost.terms)} terms")
    return cost


def _refuse(reason: str) -> _Cost:
    raise _Refused(reason)


def _about(x: float) -> str:
    if not math.isfinite(x) or x >= 1e300:
        return "more than 10^300"
    return f"about {int(x)}" if x < 1e6 else f"about {x:.3g}"


def _power_value(bits: float) -> float:
    return 2.0 ** bits if bits < 1000 else math.inf


def _expansion(terms: float, exponent: float) -> float:
    """Terms of (a_1 + ... + a_t)^n: C(n + t - 1, t - 1), in logs so a huge n costs nothing."""
    if terms <= 1 or exponent <= 1:
        return terms
    if not math.isfinite(exponent) or exponent > 1e12:
        return math.inf
    n = math.floor(exponent)
    log = math.lgamma(n + terms) - math.lgamma(terms) - math.lgamma(n + 1)
    return round(math.exp(log), 6) if log < 700 else math.inf


class _Reader:
    """One pass over the tokens: expression := term (separator term)*, term := power (product power)*."""

    def __init__(self, text: str, syntax: str):
        self.sympy = syntax == "sympy"
        self.tokens = self._tokens(text, _TOKENS[syntax])
        self.i = 0
        self.depth = 0
        self.parens = 0
        self.functions = 0
        self.callers: list[str] = []  # the functions whose argument is being read, outermost first
        self.nested = 0  # functions applied inside another function (Abs aside), in the whole answer
        self.atoms = 0
        self.operators = 0  # \sum, \prod, \int and \lim read so far
        self.bars = 0  # |...| groups (Abs) the cursor is inside
        self.irregular_terms = 0.0  # terms of every \sum and \prod with an irregular body, in the whole answer
        self.bound: dict[str, _Cost] = {}  # the index of an enclosing \sum or \prod, bound to its largest value

    def _tokens(self, text: str, pattern: re.Pattern[str]) -> list[tuple[str, str]]:
        tokens: list[tuple[str, str]] = []
        position = 0
        for match in pattern.finditer(text):
            kind = match.lastgroup
            if kind is None or match.start() < position:
                continue
            value = match.group()
            if kind == "num" and self.sympy:
                exponent = _SYMPY_EXPONENT.match(text, match.end())
                if exponent:  # a Python float literal: 1e5
                    position = exponent.end()
                    tokens.append(("float", value + exponent.group()))
                    continue
            if kind == "pow":
                value = "^"
            if value in _SKIP:  # spacing and sizing: \left( is (, and \left. is nothing
                if value in ("\\left", "\\right") and text.startswith(".", match.end()):
                    position = match.end() + 1
                continue
            tokens.append((kind, value))
        return tokens

    def peek(self) -> str:
        return self.tokens[self.i][1] if self.i < len(self.tokens) else ""

    def read(self) -> None:
        while self.i < len(self.tokens):
            self.expression(closer=None)
            if self.i < len(self.tokens):  # a stray closer: skip it and read on
                self.i += 1

    # ---------------------------------------------------------------- grammar

    def expression(self, closer: str | None) -> _Cost:
        total: _Cost | None = None  # the current element: a sum of terms
        listed: _Cost | None = None  # the elements before it (a list, or a chain of relations)
        elements = 1
        while self.i < len(self.tokens):
            token = self.peek()
            if token == closer or token in _CLOSERS:
                break
            if token in _SEPARATORS:
                self.i += 1
                if token not in ("+", "-", "\\pm", "\\mp") and total is not None:
                    elements += 1
                    if elements > MAX_ELEMENTS:
                        _refuse(f"more than {MAX_ELEMENTS} elements in a list or chain")
                    listed = total if listed is None else _joined(listed, total)
                    total = None
                continue
            if token == "\\choose":  # {n \choose k}: the rest of the group is k
                self.i += 1
                total = _binomial(total or _ONE, self.expression(closer))
                continue
            term = self.term(closer)
            total = term if total is None else _add(total, term)
        if listed is None:
            return total or _ONE
        return _joined(listed, total or _ONE)

    def term(self, closer: str | None) -> _Cost:
        cost = self.power()
        while self.i < len(self.tokens):
            token = self.peek()
            if token in _MULTIPLY:
                self.i += 1
                divide = token in ("/", "\\div", "\\over")
            elif token and token not in _SEPARATORS and token not in _CLOSERS and token != closer \
                    and token not in ("^", "!", "_", "'", "\\choose"):
                divide = False  # juxtaposition: 2x, 2\pi
            else:
                break
            other = self.power()
            cost = _multiply(cost, other, divide)
        return cost

    def power(self) -> _Cost:
        base = self.postfix(self.atom())
        if self.peek() != "^":
            return base
        self.i += 1
        braced = self.peek() == "{"  # the group counts its own level
        if not braced:
            self.enter()
        exponent = self.power_operand()
        if not braced:
            self.depth -= 1
        if self.sympy and exponent.value is None and base.value is not None and base.value != math.e \
                and not base.functional:
            _refuse("an exponential of a number other than E")  # 220614**(x+1): seconds in the integration scorers
        raised = _raise(base, exponent)
        if self.sympy and not raised.degree <= MAX_SYMPY_DEGREE:
            _refuse(f"a power over {int(MAX_SYMPY_DEGREE)} of a symbol")
        return self.postfix(raised)

    def power_operand(self) -> _Cost:
        """The exponent: a group, or one signed atom with its own exponent (a^b^c is a^(b^c))."""
        while self.peek() in ("-", "+"):
            self.i += 1
        return self.power()

    def postfix(self, cost: _Cost) -> _Cost:
        while self.i < len(self.tokens):
            token = self.peek()
            if token == "!":
                self.i += 1
                cost = _factorial(cost)
            elif token in ("'", "\\prime", "\\%", "\\circ"):
                self.i += 1
            elif token == "_":
                self.i += 1
                self.atom()  # a subscript names a symbol; its value does not count
                cost = _Cost(cost.bits, None, cost.terms, False, **_flags(cost))
            else:
                break
        return cost

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            _refuse(f"groups or exponents nested deeper than {MAX_DEPTH}")

    def group(self, closer: str, paren: bool) -> _Cost:
        self.enter()
        if paren:
            self.parens += 1
            if self.parens > MAX_PAREN_DEPTH:
                _refuse(f"brackets nested deeper than {MAX_PAREN_DEPTH}")
        cost = self.expression(closer)
        if self.peek() == closer or (closer == ")" and self.peek() == "]") or (closer == "]" and self.peek() == ")"):
            self.i += 1  # intervals close either way: [0, 1)
        self.depth -= 1
        if paren:
            self.parens -= 1
        return cost

    def argument(self) -> _Cost:
        """A command's argument: a braced group, or the next single atom (\\frac12)."""
        if self.peek() == "{":
            self.i += 1
            return self.group("}", paren=False)
        self.enter()  # \\sqrt\\sqrt\\sqrt... nests without braces
        cost = self.atom()
        self.depth -= 1
        return cost

    def atom(self) -> _Cost:
        while self.peek() in ("-", "+", "\\pm", "\\mp"):
            self.i += 1
        if self.i >= len(self.tokens):
            return _ONE
        kind, token = self.tokens[self.i]
        self.i += 1
        self.atoms += 1
        if self.atoms > MAX_ATOMS:
            _refuse(f"more than {MAX_ATOMS} numbers, symbols and commands")
        if kind == "num":
            return _number(token)
        if kind == "float":
            mantissa, _, exponent = token.lower().partition("e")
            magnitude = abs(int(exponent)) * _LOG2_10 if len(exponent) < 12 else math.inf
            return _check(_Cost(magnitude + 64, _power_value(magnitude + 4), 1.0, False,
                                whole=not exponent.startswith("-") and not mantissa.count(".")))
        if token == "{":
            return self.group("}", paren=self.previous_is_operator())
        if token in _OPENERS:
            return self.group(_OPENERS[token], paren=True)
        if token == "|":  # Abs: a function to sympy
            self.bars += 1
            cost = self.group("|", paren=True)
            self.bars -= 1
            return replace(cost, functional=True, irregular=True)
        if token in _FRACS:
            numerator = self.argument()
            return _multiply(numerator, self.argument(), True)
        if token in _BINOMS:
            top = self.argument()
            return _binomial(top, self.argument())
        if token == "\\sqrt":
            if self.peek() == "[":
                self.i += 1
                self.group("]", paren=False)
            return _root(self.argument())
        if token in _BIG_OPERATORS:
            return self.big_operator(token)
        if token in _TEXT:  # \mathbf{9} is 9 to math_verify: read what it holds, unless it is only words
            if self.peek() == "{":
                if self.holds_math():
                    self.i += 1
                    return self.group("}", paren=False)
                self.skip_braces()
            return _Cost(2.0, None, 1.0, False, degree=1.0)
        if token == "\\begin":  # a matrix (or another environment): what it makes has no size the reader bounds
            if self.peek() == "{":
                self.skip_braces()
            self.enter()
            content = self.expression("\\end")
            self.depth -= 1
            if self.peek() == "\\end":
                self.i += 1
                if self.peek() == "{":
                    self.skip_braces()
            return _Cost(content.bits, None, content.terms, False, **{**_flags(content), "functional": True,
                                                                     "opaque": True, "irregular": True})
        if token in _OPAQUE:  # its bounds (read, not powers) and then its body as factors
            self.operator()
            while self.peek() in ("_", "^"):
                self.i += 1
                self.argument()
            return _Cost(2.0, None, 1.0, False, functional=True, opaque=True, irregular=True)
        if token in self.bound and kind == "name":
            return self.bound[token]
        if kind == "cmd" and token[1:] in _FUNCTIONS or (kind == "name" and self.sympy and token in _FUNCTIONS
                                                          and self.peek() == "("):
            return self.function(token.lstrip("\\"))
        if token in _CONSTANTS and (kind == "cmd" or token in ("e", "E", "pi", "I", "i", "oo")):
            return _Cost(2.0, _CONSTANTS[token], 1.0, False)
        return _Cost(2.0, None, 1.0, False, degree=1.0)  # a free symbol, or a command read as one

    def previous_is_operator(self) -> bool:
        """A brace right after an operator or at the start is a set (math_verify reads {1,2} as one), not a group."""
        if self.i < 2:
            return True
        before = self.tokens[self.i - 2][1]
        return before in _SEPARATORS or before in _MULTIPLY or before in _OPENERS or before in ("{", "|")

    def holds_math(self) -> bool:
        """Whether the braces at the cursor hold a number, a command or an operator (not only words)."""
        depth = 0
        for kind, token in self.tokens[self.i:]:
            depth += {"{": 1, "}": -1}.get(token, 0)
            if depth == 0:
                return False
            if kind in ("num", "float", "cmd") or token in ("^", "!", "*", "/", "(", "["):
                return True
        return False

    def skip_braces(self) -> None:
        depth = 0
        while self.i < len(self.tokens):
            token = self.peek()
            self.i += 1
            depth += {"{": 1, "}": -1}.get(token, 0)
            if depth == 0:
                return

    def function(self, name: str) -> _Cost:
        self.functions += 1
        if self.functions > MAX_FUNCTION_DEPTH:
            _refuse(f"functions nested deeper than {MAX_FUNCTION_DEPTH}")
        if self.sympy and self.callers and name not in ("Abs", "abs") and self.callers[-1] not in ("Abs", "abs"):
            self.nested += 1
            if self.nested > MAX_SYMPY_NESTED_FUNCTIONS:
                _refuse(f"more than {MAX_SYMPY_NESTED_FUNCTIONS} function applied inside another function")
        power: _Cost | None = None
        while self.peek() == "^" or self.peek() == "_":  # \sin^2 x, \log_2 x
            exponent = self.peek() == "^"
            self.i += 1
            operand = self.power_operand()
            if exponent:
                power = operand
        if power is not None:
            return _raise(self.function_value(name), power)
        return self.function_value(name)

    def function_value(self, name: str) -> _Cost:
        self.callers.append(name)
        if self.sympy or self.peek() in ("(", "{", "\\left", "["):
            argument = self.postfix(self.atom())  # sin(x)^2 and sin(x)**2 square the sine: the caller raises it
        else:
            argument = self.term(None)  # \sin 2x
        self.callers.pop()
        self.functions -= 1
        _check_argument(argument, bits=name not in _CHEAP_FUNCTIONS)
        if argument.opaque:  # \sec(\lim_{x\to 8} 5744768 a): past 4 s of CPU
            _refuse("a function of an integral, a limit or a matrix")
        if name in ("factorial",):
            return _factorial(argument)
        if name in ("binomial",):
            return _binomial(argument)
        if name in ("sqrt",):
            return _root(argument)
        if name == "exp":
            return replace(_raise(_Cost(2.0, math.e, 1.0, False), argument), functional=True)
        if name in ("Gamma", "gamma"):
            return _factorial(argument)
        value = None if argument.value is None else (1.0 if name[:3] in ("sin", "cos", "tan", "arc", "asi", "aco",
                                                                          "ata") else argument.value)
        if name in ("sinh", "cosh") and argument.value is not None:  # e^x / 2: cosh(93972830) is no small number
            value = _power_value(argument.value * _LOG2_E)
        if name in ("log", "ln", "lg") and argument.value is not None:
            value = argument.bits + 1.0
        return _Cost(argument.bits, value, argument.terms, False, **{**_flags(argument), "functional": True,
                                                                    "irregular": True})

    def operator(self) -> None:
        self.operators += 1
        if self.operators > MAX_OPERATORS:
            _refuse(f"more than {MAX_OPERATORS} sum or product over a range, integral or limit")

    def big_operator(self, token: str) -> _Cost:
        upper: _Cost | None = None
        lower: _Cost | None = None
        index = ""
        for _ in range(2):
            if self.peek() == "_":
                self.i += 1
                if self.peek() == "{" and self.i + 3 < len(self.tokens) and self.tokens[self.i + 1][0] == "name" \
                        and self.tokens[self.i + 2][1] == "=":
                    index = self.tokens[self.i + 1][1]  # \sum_{k=1}: k, and the lower bound is what follows =
                    self.i += 3
                    lower = self.group("}", paren=False)
                else:
                    lower = self.argument()
            elif self.peek() == "^":
                self.i += 1
                upper = self.argument()
        bounds = [b for b in (upper, lower) if b is not None]
        if any(b.opaque for b in bounds):
            _refuse("a sum or product over a range the check cannot bound")
        numeric = upper is not None and all(b.value is not None for b in bounds)
        span = max(b.value if b.value is not None else 0.0 for b in (upper or _ONE, lower or _ONE))
        if span > MAX_RANGE:
            _refuse(f"a sum or product over more than {int(MAX_RANGE)} terms")
        if numeric:  # evaluated; a symbolic one (\sum_v d(v)^2 in a proof) stays a symbol
            self.operator()
            if (self.functions or self.bars) and span > MAX_IRREGULAR_RANGE:  # |\sum_{k=1}^{6100} c|: 4 s of CPU
                _refuse(f"a sum or product over {int(MAX_IRREGULAR_RANGE)} terms inside a function")
        saved = self.bound.get(index)
        if index and numeric:  # the body is read with its index at its largest value
            self.bound[index] = _Cost(max(math.log2(span + 1), 1.0), span, 1.0, True, whole=True)
        try:
            body = self.power()
        finally:
            if saved is None:
                self.bound.pop(index, None)
            else:
                self.bound[index] = saved
        if numeric and (body.irregular or not body.whole):  # k!, sin k, 6/k: summed term by term
            self.irregular_terms += span
        if self.irregular_terms > MAX_IRREGULAR_RANGE:  # two sums of 100 factorials, multiplied: seconds
            _refuse(f"a sum or product of factorials, fractions or functions over {int(MAX_IRREGULAR_RANGE)} terms")
        flags = {**_flags(body), "irregular": True, "functional": True}  # sympy's Sum and Product, evaluated late
        if token == "\\prod":
            bits = body.bits * max(span, 1.0)
            return _check(_Cost(bits, _power_value(bits) if numeric and body.value is not None else None,
                                body.terms, False, **flags))
        value = body.value * max(span, 1.0) if numeric and body.value is not None else None
        return _check(_Cost(body.bits + math.log2(span + 2), value, body.terms, False, **flags))


def _check_argument(argument: _Cost, bits: bool = True) -> None:
    """A function's argument (or an integrand): a number of at most MAX_FUNCTION_ARGUMENT_BITS, a symbol to at most
    the MAX_FUNCTION_DEGREE-th power."""
    if bits and not argument.bits <= MAX_FUNCTION_ARGUMENT_BITS:
        _refuse(f"a function of a number of {_about(argument.bits / _LOG2_10)} digits")
    if not argument.degree <= MAX_FUNCTION_DEGREE:  # its assumptions expand (re + i im)^n: acosh(sinh(x^453))
        _refuse(f"a function of a power over {int(MAX_FUNCTION_DEGREE)} of a symbol")


def _joined(listed: _Cost, element: _Cost) -> _Cost:
    """A list or chain of relations: its elements side by side (no value of its own)."""
    return _Cost(listed.bits + element.bits, None, max(listed.terms, element.terms), False, **_flags(listed, element))


def _number(token: str) -> _Cost:
    digits = token.replace(".", "")
    if "." in token:  # a decimal: a float in sympy, an exact rational at worst
        return _check(_Cost(len(digits) * _LOG2_10 * 2, float(token) if len(token) < 300 else math.inf))
    if len(digits) <= 300:
        number = int(digits)
        return _check(_Cost(max(math.log2(number), 1.0) if number else 1.0, float(number), whole=True))
    return _check(_Cost(len(digits) * _LOG2_10, math.inf, whole=True))


def _add(a: _Cost, b: _Cost) -> _Cost:
    value = None if a.value is None or b.value is None else a.value + b.value
    exact = a.exact and b.exact
    return _check(_Cost(max(a.bits, b.bits) + 1 if exact and a.bits < 64 and b.bits < 64 else a.bits + b.bits,
                        value, 1.0 if exact else a.terms + b.terms, exact, whole=a.whole and b.whole, **_flags(a, b)))


def _multiply(a: _Cost, b: _Cost, divide: bool) -> _Cost:
    if a.value is None or b.value is None:
        value = None
    elif divide:
        value = a.value if b.exact and b.value >= 1 else a.value * _power_value(b.bits)
    else:
        value = a.value * b.value
    exact = a.exact and b.exact
    if divide and b.terms > 1 and not b.degree <= MAX_FUNCTION_DEGREE:  # 1/(5/a + (5/a)^{977}): cancel for seconds
        _refuse(f"a sum over a power over {int(MAX_FUNCTION_DEGREE)} of a symbol in a denominator")
    if a.opaque or b.opaque:  # an integrand (or what a limit is taken of) is bounded like a function's argument
        _check_argument(_Cost(a.bits + b.bits, None, degree=a.degree + b.degree))
    terms = 1.0 if exact else a.terms * b.terms * (2.0 if divide and b.terms > 1 else 1.0)
    return _check(_Cost(a.bits + b.bits, value, terms, exact, whole=a.whole and b.whole and not divide,
                        **{**_flags(a, b), "degree": a.degree + b.degree}))


def _raise(base: _Cost, exponent: _Cost) -> _Cost:
    flags = _flags(base, exponent)
    if exponent.opaque:  # 9^{\int_0^{9^9} 1\,dx}: an integral or limit may be any number
        return _refuse("an exponent the check cannot bound (an integral, a limit or a matrix)")
    if exponent.value is None:  # a symbolic exponent stays unevaluated: 2^x, an exponential (a function) to sympy
        if base.functional:  # sin(6)**x, acosh(cot(4*x))**x: seconds in the integration scorers
            return _refuse("a function raised to a symbolic power")
        # 2^{x+1000000} is 2^x times a number sympy computes: the exponent's numbers are below 2^(its bits)
        bits = base.bits * 2.0 ** min(exponent.bits, 1000.0) if base.value is not None else base.bits + exponent.bits
        return _check(_Cost(bits, None, base.terms, False,
                            **{**flags, "irregular": True, "functional": True, "degree": flags["degree"] + 1}))
    n = exponent.value
    if base.functional and base.terms > 1 and n > MAX_FUNCTION_SUM_POWER:
        return _refuse(f"a sum holding a function raised to a power over {int(MAX_FUNCTION_SUM_POWER)}")
    if base.functional and n > MAX_FUNCTION_POWER:
        return _refuse(f"a function raised to a power over {int(MAX_FUNCTION_POWER)}")
    if base.exact and base.value is not None and base.value <= 1 and base.bits <= 1:
        return _Cost(1.0, 1.0, whole=base.whole)  # 0, 1 (and -1) to any power
    if not exponent.whole and base.value is not None and not base.bits <= MAX_FUNCTION_ARGUMENT_BITS:
        return _refuse(f"a root of a number of {_about(base.bits / _LOG2_10)} digits")
    if not exponent.whole or exponent.functional:
        flags["irregular"] = True
    flags["degree"] = base.degree * max(n, 1.0) + exponent.degree
    if base.value is None:  # x^n stays one term; (x+1)^n expands
        return _check(_Cost(base.bits + exponent.bits, None, _expansion(base.terms, n), False, **flags))
    bits = base.bits * max(n, 1.0)
    terms = 1.0 if base.exact else _expansion(base.terms, n)
    value = base.value ** n if bits < 1000 and base.value > 0 else _power_value(bits)
    return _check(_Cost(bits, value, terms, base.exact and exponent.exact, whole=base.whole and exponent.whole,
                        **flags))


def _factorial(n: _Cost) -> _Cost:
    if n.opaque:
        return _refuse("a factorial of a number the check cannot bound (an integral, limit or matrix)")
    flags = {**_flags(n), "irregular": True}
    if n.value is None:
        if n.functional:  # (e^{6\sqrt{x}} - 1744045)!: gamma of an expression, seconds of assumptions
            return _refuse("a factorial of an expression holding a function")
        return _Cost(n.bits, None, n.terms, False, **flags)
    v = n.value
    bits = v * (math.log2(v) - 1.4427) + math.log2(v) + 2 if v > 2 else 1.0  # Stirling, rounded up
    return _check(_Cost(bits, _power_value(bits), 1.0, n.exact, whole=n.whole, **flags))


def _binomial(n: _Cost, k: _Cost | None = None) -> _Cost:
    if n.opaque or (k is not None and k.opaque):
        return _refuse("a binomial of a number the check cannot bound (an integral, limit or matrix)")
    flags = {**_flags(n, *(k,) if k is not None else ()), "irregular": True}
    if n.value is None:  # binomial(x, k) is a polynomial of degree k in x
        if k is not None and k.value is not None and not k.value <= MAX_FUNCTION_DEGREE:
            return _refuse(f"a binomial of a symbol over more than {int(MAX_FUNCTION_DEGREE)}")
        return _Cost(n.bits, None, n.terms, False, **flags)
    # sympy builds C(n, k) from min(k, n - k) factors (all n when k is unknown): 8 bits a factor (16384 at the bound);
    # when n is not a whole number (338.3377, i) it multiplies k factors, however small n is
    if k is not None and k.value is None and not n.value <= MAX_FUNCTION_DEGREE:  # binomial(1896, y): 3.8 s
        return _refuse(f"a binomial of a number over {int(MAX_FUNCTION_DEGREE)} choose a symbol")
    if k is None or k.value is None or not k.exact:
        factors = n.value
    elif not n.whole:
        factors = max(k.value, 1.0)
    else:
        factors = max(min(k.value, n.value - k.value), 1.0)
    return _check(_Cost(8.0 * factors, _power_value(8.0 * factors), 1.0, n.exact, whole=n.whole, **flags))


def _root(a: _Cost) -> _Cost:
    if not a.bits <= MAX_FUNCTION_ARGUMENT_BITS:  # sympy pulls square factors out of the radicand by trial division
        return _refuse(f"a root of a number of {_about(a.bits / _LOG2_10)} digits")
    return _Cost(a.bits, None if a.value is None else math.sqrt(a.value), a.terms, False,
                 **{**_flags(a), "irregular": True})

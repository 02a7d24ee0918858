"""The reader of :mod:`gym_integrity.grading.cost`: one recursive-descent pass over an answer's tokens.

It evaluates nothing.

Tokens and what each kind of token is come from :mod:`gym_integrity.grading._cost_tokens`
(over the answer languages' one tokenizer, :func:`gym_integrity.grading.language.tokenize`);
what each subexpression costs, and the bounds, from :mod:`gym_integrity.grading._cost_bounds`.
"""

from __future__ import annotations

import math
from dataclasses import replace

from gym_integrity.grading._cost_bounds import (
    LOG2_10,
    LOG2_E,
    MAX_ATOMS,
    MAX_DEPTH,
    MAX_ELEMENTS,
    MAX_FUNCTION_DEPTH,
    MAX_IRREGULAR_RANGE,
    MAX_OPERATORS,
    MAX_PAREN_DEPTH,
    MAX_RANGE,
    MAX_SYMPY_DEGREE,
    MAX_SYMPY_NESTED_FUNCTIONS,
    ONE,
    Cost,
    add,
    binomial,
    check,
    check_argument,
    factorial,
    flags_of,
    joined,
    multiply,
    number,
    power_of,
    power_value,
    refuse,
    root,
)
from gym_integrity.grading._cost_tokens import (
    BIG_OPERATORS,
    BINOMS,
    CHEAP_FUNCTIONS,
    CLOSERS,
    CONSTANTS,
    FRACS,
    FUNCTIONS,
    MULTIPLY,
    OPAQUE,
    OPENERS,
    SEPARATORS,
    TEXT,
    reader_tokens,
)


class Reader:
    """One pass over the tokens: expression := term (separator term)*, term := power (product power)*."""

    def __init__(self, text: str, syntax: str):
        self.sympy = syntax == "sympy"
        self.tokens = reader_tokens(text, syntax)
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
        self.bound: dict[str, Cost] = {}  # the index of an enclosing \sum or \prod, bound to its largest value

    def peek(self) -> str:
        return self.tokens[self.i][1] if self.i < len(self.tokens) else ""

    def read(self) -> None:
        while self.i < len(self.tokens):
            self.expression(closer=None)
            if self.i < len(self.tokens):  # a stray closer: skip it and read on
                self.i += 1

    # ---------------------------------------------------------------- grammar

    def expression(self, closer: str | None) -> Cost:
        total: Cost | None = None  # the current element: a sum of terms
        listed: Cost | None = None  # the elements before it (a list, or a chain of relations)
        elements = 1
        while self.i < len(self.tokens):
            token = self.peek()
            if token == closer or token in CLOSERS:
                break
            if token in SEPARATORS:
                self.i += 1
                if token not in ("+", "-", "\\pm", "\\mp") and total is not None:
                    elements += 1
                    if elements > MAX_ELEMENTS:
                        refuse(f"more than {MAX_ELEMENTS} elements in a list or chain")
                    listed = total if listed is None else joined(listed, total)
                    total = None
                continue
            if token == "\\choose":  # {n \choose k}: the rest of the group is k
                self.i += 1
                total = binomial(total or ONE, self.expression(closer))
                continue
            term = self.term(closer)
            total = term if total is None else add(total, term)
        if listed is None:
            return total or ONE
        return joined(listed, total or ONE)

    def term(self, closer: str | None) -> Cost:
        cost = self.power()
        while self.i < len(self.tokens):
            token = self.peek()
            if token in MULTIPLY:
                self.i += 1
                divide = token in ("/", "\\div", "\\over")
            elif (
                token
                and token not in SEPARATORS
                and token not in CLOSERS
                and token != closer
                and token not in ("^", "!", "_", "'", "\\choose")
            ):
                divide = False  # juxtaposition: 2x, 2\pi
            else:
                break
            other = self.power()
            cost = multiply(cost, other, divide)
        return cost

    def power(self) -> Cost:
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
        if (
            self.sympy
            and exponent.value is None
            and base.value is not None
            and base.value != math.e
            and not base.functional
        ):
            refuse("an exponential of a number other than E")  # 220614**(x+1): seconds in the integration scorers
        raised = power_of(base, exponent)
        if self.sympy and not raised.degree <= MAX_SYMPY_DEGREE:
            refuse(f"a power over {int(MAX_SYMPY_DEGREE)} of a symbol")
        return self.postfix(raised)

    def power_operand(self) -> Cost:
        """The exponent: a group, or one signed atom with its own exponent (a^b^c is a^(b^c))."""
        while self.peek() in ("-", "+"):
            self.i += 1
        return self.power()

    def postfix(self, cost: Cost) -> Cost:
        while self.i < len(self.tokens):
            token = self.peek()
            if token == "!":
                self.i += 1
                cost = factorial(cost)
            elif token in ("'", "\\prime", "\\%", "\\circ"):
                self.i += 1
            elif token == "_":
                self.i += 1
                self.atom()  # a subscript names a symbol; its value does not count
                cost = Cost(cost.bits, None, cost.terms, False, **flags_of(cost))
            else:
                break
        return cost

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            refuse(f"groups or exponents nested deeper than {MAX_DEPTH}")

    def group(self, closer: str, paren: bool) -> Cost:
        self.enter()
        if paren:
            self.parens += 1
            if self.parens > MAX_PAREN_DEPTH:
                refuse(f"brackets nested deeper than {MAX_PAREN_DEPTH}")
        cost = self.expression(closer)
        if self.peek() == closer or (closer == ")" and self.peek() == "]") or (closer == "]" and self.peek() == ")"):
            self.i += 1  # intervals close either way: [0, 1)
        self.depth -= 1
        if paren:
            self.parens -= 1
        return cost

    def argument(self) -> Cost:
        """A command's argument: a braced group, or the next single atom (\\frac12)."""
        if self.peek() == "{":
            self.i += 1
            return self.group("}", paren=False)
        self.enter()  # \\sqrt\\sqrt\\sqrt... nests without braces
        cost = self.atom()
        self.depth -= 1
        return cost

    def atom(self) -> Cost:
        while self.peek() in ("-", "+", "\\pm", "\\mp"):
            self.i += 1
        if self.i >= len(self.tokens):
            return ONE
        kind, token = self.tokens[self.i]
        self.i += 1
        self.atoms += 1
        if self.atoms > MAX_ATOMS:
            refuse(f"more than {MAX_ATOMS} numbers, symbols and commands")
        if kind == "num":
            return number(token)
        if kind == "float":
            mantissa, _, exponent = token.lower().partition("e")
            magnitude = abs(int(exponent)) * LOG2_10 if len(exponent) < 12 else math.inf
            return check(
                Cost(
                    magnitude + 64,
                    power_value(magnitude + 4),
                    1.0,
                    False,
                    whole=not exponent.startswith("-") and not mantissa.count("."),
                )
            )
        if token == "{":
            return self.group("}", paren=self.previous_is_operator())
        if token in OPENERS:
            return self.group(OPENERS[token], paren=True)
        if token == "|":  # Abs: a function to sympy
            self.bars += 1
            cost = self.group("|", paren=True)
            self.bars -= 1
            return replace(cost, functional=True, irregular=True)
        if token in FRACS:
            numerator = self.argument()
            return multiply(numerator, self.argument(), True)
        if token in BINOMS:
            top = self.argument()
            return binomial(top, self.argument())
        if token == "\\sqrt":
            if self.peek() == "[":
                self.i += 1
                self.group("]", paren=False)
            return root(self.argument())
        if token in BIG_OPERATORS:
            return self.big_operator(token)
        if token in TEXT:  # \mathbf{9} is 9 to math_verify: read what it holds, unless it is only words
            if self.peek() == "{":
                if self.holds_math():
                    self.i += 1
                    return self.group("}", paren=False)
                self.skip_braces()
            return Cost(2.0, None, 1.0, False, degree=1.0)
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
            return Cost(
                content.bits,
                None,
                content.terms,
                False,
                **{**flags_of(content), "functional": True, "opaque": True, "irregular": True},
            )
        if token in OPAQUE:  # its bounds (read, not powers) and then its body as factors
            self.operator()
            while self.peek() in ("_", "^"):
                self.i += 1
                self.argument()
            return Cost(2.0, None, 1.0, False, functional=True, opaque=True, irregular=True)
        if token in self.bound and kind == "name":
            return self.bound[token]
        if (
            kind == "cmd"
            and token[1:] in FUNCTIONS
            or (kind == "name" and self.sympy and token in FUNCTIONS and self.peek() == "(")
        ):
            return self.function(token.lstrip("\\"))
        if token in CONSTANTS and (kind == "cmd" or token in ("e", "E", "pi", "I", "i", "oo")):
            return Cost(2.0, CONSTANTS[token], 1.0, False)
        return Cost(2.0, None, 1.0, False, degree=1.0)  # a free symbol, or a command read as one

    def previous_is_operator(self) -> bool:
        """A brace right after an operator or at the start is a set (math_verify reads {1,2} as one), not a group."""
        if self.i < 2:
            return True
        before = self.tokens[self.i - 2][1]
        return before in SEPARATORS or before in MULTIPLY or before in OPENERS or before in ("{", "|")

    def holds_math(self) -> bool:
        """Whether the braces at the cursor hold a number, a command or an operator (not only words)."""
        depth = 0
        for kind, token in self.tokens[self.i :]:
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

    def function(self, name: str) -> Cost:
        self.functions += 1
        if self.functions > MAX_FUNCTION_DEPTH:
            refuse(f"functions nested deeper than {MAX_FUNCTION_DEPTH}")
        if self.sympy and self.callers and name not in ("Abs", "abs") and self.callers[-1] not in ("Abs", "abs"):
            self.nested += 1
            if self.nested > MAX_SYMPY_NESTED_FUNCTIONS:
                refuse(f"more than {MAX_SYMPY_NESTED_FUNCTIONS} function applied inside another function")
        power: Cost | None = None
        while self.peek() == "^" or self.peek() == "_":  # \sin^2 x, \log_2 x
            exponent = self.peek() == "^"
            self.i += 1
            operand = self.power_operand()
            if exponent:
                power = operand
        if power is not None:
            return power_of(self.function_value(name), power)
        return self.function_value(name)

    def function_value(self, name: str) -> Cost:
        self.callers.append(name)
        if self.sympy or self.peek() in ("(", "{", "\\left", "["):
            argument = self.postfix(self.atom())  # sin(x)^2 and sin(x)**2 square the sine: the caller raises it
        else:
            argument = self.term(None)  # \sin 2x
        self.callers.pop()
        self.functions -= 1
        check_argument(argument, bits=name not in CHEAP_FUNCTIONS)
        if argument.opaque:  # \sec(\lim_{x\to 8} 5744768 a): past 4 s of CPU
            refuse("a function of an integral, a limit or a matrix")
        if name in ("factorial",):
            return factorial(argument)
        if name in ("binomial",):
            return binomial(argument)
        if name in ("sqrt",):
            return root(argument)
        if name == "exp":
            return replace(power_of(Cost(2.0, math.e, 1.0, False), argument), functional=True)
        if name in ("Gamma", "gamma"):
            return factorial(argument)
        value = (
            None
            if argument.value is None
            else (1.0 if name[:3] in ("sin", "cos", "tan", "arc", "asi", "aco", "ata") else argument.value)
        )
        if name in ("sinh", "cosh") and argument.value is not None:  # e^x / 2: cosh(93972830) is no small number
            value = power_value(argument.value * LOG2_E)
        if name in ("log", "ln", "lg") and argument.value is not None:
            value = argument.bits + 1.0
        return Cost(
            argument.bits, value, argument.terms, False, **{**flags_of(argument), "functional": True, "irregular": True}
        )

    def operator(self) -> None:
        self.operators += 1
        if self.operators > MAX_OPERATORS:
            refuse(f"more than {MAX_OPERATORS} sum or product over a range, integral or limit")

    def big_operator(self, token: str) -> Cost:
        upper: Cost | None = None
        lower: Cost | None = None
        index = ""
        for _ in range(2):
            if self.peek() == "_":
                self.i += 1
                if (
                    self.peek() == "{"
                    and self.i + 3 < len(self.tokens)
                    and self.tokens[self.i + 1][0] == "name"
                    and self.tokens[self.i + 2][1] == "="
                ):
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
            refuse("a sum or product over a range the check cannot bound")
        numeric = upper is not None and all(b.value is not None for b in bounds)
        span = max(b.value if b.value is not None else 0.0 for b in (upper or ONE, lower or ONE))
        if span > MAX_RANGE:
            refuse(f"a sum or product over more than {int(MAX_RANGE)} terms")
        if numeric:  # evaluated; a symbolic one (\sum_v d(v)^2 in a proof) stays a symbol
            self.operator()
            if (self.functions or self.bars) and span > MAX_IRREGULAR_RANGE:  # |\sum_{k=1}^{6100} c|: 4 s of CPU
                refuse(f"a sum or product over {int(MAX_IRREGULAR_RANGE)} terms inside a function")
        saved = self.bound.get(index)
        if index and numeric:  # the body is read with its index at its largest value
            self.bound[index] = Cost(max(math.log2(span + 1), 1.0), span, 1.0, True, whole=True)
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
            refuse(f"a sum or product of factorials, fractions or functions over {int(MAX_IRREGULAR_RANGE)} terms")
        flags = {**flags_of(body), "irregular": True, "functional": True}  # sympy's Sum and Product, evaluated late
        if token == "\\prod":
            bits = body.bits * max(span, 1.0)
            return check(
                Cost(
                    bits, power_value(bits) if numeric and body.value is not None else None, body.terms, False, **flags
                )
            )
        value = body.value * max(span, 1.0) if numeric and body.value is not None else None
        return check(Cost(body.bits + math.log2(span + 2), value, body.terms, False, **flags))

"""The cost arithmetic of :mod:`gym_integrity.grading.cost`: the bounds, a subexpression's cost, and how costs combine.

Each function takes the costs of the parts and returns the cost of the whole,
raising :class:`_Refused` with a short reason the moment a bound is passed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

#: Bits of the largest exact number an answer may make (about 39,000 decimal digits; ``2^{65536}`` fits).
MAX_BITS = 2.0**17
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


LOG2_10 = math.log2(10)
LOG2_E = math.log2(math.e)


class _Refused(Exception):
    """Raised inside the reader with the reason; never leaves this module."""


@dataclass(frozen=True)
class Cost:
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


ONE = Cost(1.0, 1.0, whole=True)


def flags_of(*costs: Cost) -> dict[str, Any]:  # Cost keywords: bools and the float degree
    """What a cost made of ``costs`` holds: a function, an integral or limit, anything not polynomial, and the
    highest power of a symbol (the max: a product's is the sum, set by the caller)."""
    return {
        "functional": any(c.functional for c in costs),
        "opaque": any(c.opaque for c in costs),
        "irregular": any(c.irregular for c in costs),
        "degree": max((c.degree for c in costs), default=0.0),
    }


def check(cost: Cost) -> Cost:
    if not cost.bits <= MAX_BITS:
        return refuse(f"a number of {about(cost.bits / LOG2_10)} digits")
    if not cost.terms <= MAX_TERMS:
        return refuse(f"an expression that expands to {about(cost.terms)} terms")
    return cost


def refuse(reason: str) -> Cost:
    raise _Refused(reason)


def about(x: float) -> str:
    if not math.isfinite(x) or x >= 1e300:
        return "more than 10^300"
    return f"about {int(x)}" if x < 1e6 else f"about {x:.3g}"


def power_value(bits: float) -> float:
    return 2.0**bits if bits < 1000 else math.inf


def expansion(terms: float, exponent: float) -> float:
    """Terms of (a_1 + ... + a_t)^n: C(n + t - 1, t - 1), in logs so a huge n costs nothing."""
    if terms <= 1 or exponent <= 1:
        return terms
    if not math.isfinite(exponent) or exponent > 1e12:
        return math.inf
    n = math.floor(exponent)
    log = math.lgamma(n + terms) - math.lgamma(terms) - math.lgamma(n + 1)
    return round(math.exp(log), 6) if log < 700 else math.inf


def check_argument(argument: Cost, bits: bool = True) -> None:
    """A function's argument (or an integrand): a number of at most MAX_FUNCTION_ARGUMENT_BITS, a symbol to at most
    the MAX_FUNCTION_DEGREE-th power."""
    if bits and not argument.bits <= MAX_FUNCTION_ARGUMENT_BITS:
        refuse(f"a function of a number of {about(argument.bits / LOG2_10)} digits")
    if not argument.degree <= MAX_FUNCTION_DEGREE:  # its assumptions expand (re + i im)^n: acosh(sinh(x^453))
        refuse(f"a function of a power over {int(MAX_FUNCTION_DEGREE)} of a symbol")


def joined(listed: Cost, element: Cost) -> Cost:
    """A list or chain of relations: its elements side by side (no value of its own)."""
    return Cost(listed.bits + element.bits, None, max(listed.terms, element.terms), False, **flags_of(listed, element))


def number(token: str) -> Cost:
    digits = token.replace(".", "")
    if "." in token:  # a decimal: a float in sympy, an exact rational at worst
        return check(Cost(len(digits) * LOG2_10 * 2, float(token) if len(token) < 300 else math.inf))
    if len(digits) <= 300:
        number = int(digits)
        return check(Cost(max(math.log2(number), 1.0) if number else 1.0, float(number), whole=True))
    return check(Cost(len(digits) * LOG2_10, math.inf, whole=True))


def add(a: Cost, b: Cost) -> Cost:
    value = None if a.value is None or b.value is None else a.value + b.value
    exact = a.exact and b.exact
    return check(
        Cost(
            max(a.bits, b.bits) + 1 if exact and a.bits < 64 and b.bits < 64 else a.bits + b.bits,
            value,
            1.0 if exact else a.terms + b.terms,
            exact,
            whole=a.whole and b.whole,
            **flags_of(a, b),
        )
    )


def multiply(a: Cost, b: Cost, divide: bool) -> Cost:
    if a.value is None or b.value is None:
        value = None
    elif divide:
        value = a.value if b.exact and b.value >= 1 else a.value * power_value(b.bits)
    else:
        value = a.value * b.value
    exact = a.exact and b.exact
    if divide and b.terms > 1 and not b.degree <= MAX_FUNCTION_DEGREE:  # 1/(5/a + (5/a)^{977}): cancel for seconds
        refuse(f"a sum over a power over {int(MAX_FUNCTION_DEGREE)} of a symbol in a denominator")
    if a.opaque or b.opaque:  # an integrand (or what a limit is taken of) is bounded like a function's argument
        check_argument(Cost(a.bits + b.bits, None, degree=a.degree + b.degree))
    terms = 1.0 if exact else a.terms * b.terms * (2.0 if divide and b.terms > 1 else 1.0)
    return check(
        Cost(
            a.bits + b.bits,
            value,
            terms,
            exact,
            whole=a.whole and b.whole and not divide,
            **{**flags_of(a, b), "degree": a.degree + b.degree},
        )
    )


def power_of(base: Cost, exponent: Cost) -> Cost:
    flags = flags_of(base, exponent)
    if exponent.opaque:  # 9^{\int_0^{9^9} 1\,dx}: an integral or limit may be any number
        return refuse("an exponent the check cannot bound (an integral, a limit or a matrix)")
    if exponent.value is None:  # a symbolic exponent stays unevaluated: 2^x, an exponential (a function) to sympy
        if base.functional:  # sin(6)**x, acosh(cot(4*x))**x: seconds in the integration scorers
            return refuse("a function raised to a symbolic power")
        # 2^{x+1000000} is 2^x times a number sympy computes: the exponent's numbers are below 2^(its bits)
        bits = base.bits * 2.0 ** min(exponent.bits, 1000.0) if base.value is not None else base.bits + exponent.bits
        return check(
            Cost(
                bits,
                None,
                base.terms,
                False,
                **{**flags, "irregular": True, "functional": True, "degree": flags["degree"] + 1},
            )
        )
    n = exponent.value
    if base.functional and base.terms > 1 and n > MAX_FUNCTION_SUM_POWER:
        return refuse(f"a sum holding a function raised to a power over {int(MAX_FUNCTION_SUM_POWER)}")
    if base.functional and n > MAX_FUNCTION_POWER:
        return refuse(f"a function raised to a power over {int(MAX_FUNCTION_POWER)}")
    if base.exact and base.value is not None and base.value <= 1 and base.bits <= 1:
        return Cost(1.0, 1.0, whole=base.whole)  # 0, 1 (and -1) to any power
    if not exponent.whole and base.value is not None and not base.bits <= MAX_FUNCTION_ARGUMENT_BITS:
        return refuse(f"a root of a number of {about(base.bits / LOG2_10)} digits")
    if not exponent.whole or exponent.functional:
        flags["irregular"] = True
    flags["degree"] = base.degree * max(n, 1.0) + exponent.degree
    if base.value is None:  # x^n stays one term; (x+1)^n expands
        return check(Cost(base.bits + exponent.bits, None, expansion(base.terms, n), False, **flags))
    bits = base.bits * max(n, 1.0)
    terms = 1.0 if base.exact else expansion(base.terms, n)
    value = base.value**n if bits < 1000 and base.value > 0 else power_value(bits)
    return check(Cost(bits, value, terms, base.exact and exponent.exact, whole=base.whole and exponent.whole, **flags))


def factorial(n: Cost) -> Cost:
    if n.opaque:
        return refuse("a factorial of a number the check cannot bound (an integral, limit or matrix)")
    flags = {**flags_of(n), "irregular": True}
    if n.value is None:
        if n.functional:  # (e^{6\sqrt{x}} - 1744045)!: gamma of an expression, seconds of assumptions
            return refuse("a factorial of an expression holding a function")
        return Cost(n.bits, None, n.terms, False, **flags)
    v = n.value
    bits = v * (math.log2(v) - 1.4427) + math.log2(v) + 2 if v > 2 else 1.0  # Stirling, rounded up
    return check(Cost(bits, power_value(bits), 1.0, n.exact, whole=n.whole, **flags))


def binomial(n: Cost, k: Cost | None = None) -> Cost:
    if n.opaque or (k is not None and k.opaque):
        return refuse("a binomial of a number the check cannot bound (an integral, limit or matrix)")
    flags = {**flags_of(n, *(k,) if k is not None else ()), "irregular": True}
    if n.value is None:  # binomial(x, k) is a polynomial of degree k in x
        if k is not None and k.value is not None and not k.value <= MAX_FUNCTION_DEGREE:
            return refuse(f"a binomial of a symbol over more than {int(MAX_FUNCTION_DEGREE)}")
        return Cost(n.bits, None, n.terms, False, **flags)
    # sympy builds C(n, k) from min(k, n - k) factors (all n when k is unknown): 8 bits a factor (16384 at the bound);
    # when n is not a whole number (338.3377, i) it multiplies k factors, however small n is
    if k is not None and k.value is None and not n.value <= MAX_FUNCTION_DEGREE:  # binomial(1896, y): 3.8 s
        return refuse(f"a binomial of a number over {int(MAX_FUNCTION_DEGREE)} choose a symbol")
    if k is None or k.value is None or not k.exact:
        factors = n.value
    elif not n.whole:
        factors = max(k.value, 1.0)
    else:
        factors = max(min(k.value, n.value - k.value), 1.0)
    return check(Cost(8.0 * factors, power_value(8.0 * factors), 1.0, n.exact, whole=n.whole, **flags))


def root(a: Cost) -> Cost:
    if not a.bits <= MAX_FUNCTION_ARGUMENT_BITS:  # sympy pulls square factors out of the radicand by trial division
        return refuse(f"a root of a number of {about(a.bits / LOG2_10)} digits")
    return Cost(
        a.bits, None if a.value is None else math.sqrt(a.value), a.terms, False, **{**flags_of(a), "irregular": True}
    )

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

from gym_integrity.grading._cost_bounds import (
    MAX_ATOMS,
    MAX_BITS,
    MAX_DEPTH,
    MAX_ELEMENTS,
    MAX_FUNCTION_ARGUMENT_BITS,
    MAX_FUNCTION_DEGREE,
    MAX_FUNCTION_DEPTH,
    MAX_FUNCTION_POWER,
    MAX_FUNCTION_SUM_POWER,
    MAX_IRREGULAR_RANGE,
    MAX_OPERATORS,
    MAX_PAREN_DEPTH,
    MAX_RANGE,
    MAX_SYMPY_DEGREE,
    MAX_SYMPY_NESTED_FUNCTIONS,
    MAX_TERMS,
    _Refused,
)
from gym_integrity.grading._cost_reader import Reader

__all__ = [
    "MAX_ATOMS",
    "MAX_BITS",
    "MAX_DEPTH",
    "MAX_ELEMENTS",
    "MAX_FUNCTION_ARGUMENT_BITS",
    "MAX_FUNCTION_DEGREE",
    "MAX_FUNCTION_DEPTH",
    "MAX_FUNCTION_POWER",
    "MAX_FUNCTION_SUM_POWER",
    "MAX_IRREGULAR_RANGE",
    "MAX_OPERATORS",
    "MAX_PAREN_DEPTH",
    "MAX_RANGE",
    "MAX_SYMPY_DEGREE",
    "MAX_SYMPY_NESTED_FUNCTIONS",
    "MAX_TERMS",
    "refusal",
]


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
        Reader(text, syntax).read()
    except _Refused as refused:
        return str(refused)
    return None

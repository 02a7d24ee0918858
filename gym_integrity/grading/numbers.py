r"""The one number grammar: the pieces every reader of a number in an answer composes its pattern from.

A number literal is digits with an optional fraction part (``12``, ``12.``,
``12.5``, ``.5``: :data:`UNSIGNED`), optionally an exponent (``1e5``,
``2.5E-3``: :data:`EXPONENT`). Money and reports group thousands with commas
(``12,480``: :data:`GROUPED`); a sign, a ratio (``3/8``) or a percent sign is
each reader's to allow. Each reader (the tokenizer of the answer languages,
strict scoring, FinQA's amounts, the auditor's number probes) builds its own
regular expression out of these strings, so that a number is the same thing
everywhere.

>>> import re
>>> [bool(re.fullmatch(UNSIGNED, t)) for t in ("12", "12.", ".5", "1.2.3", "")]
[True, True, True, False, False]
>>> [bool(re.fullmatch(LITERAL, t)) for t in ("-1.5e10", "+.5", "1e1000", "e5")]
[True, True, False, False]
>>> re.fullmatch(GROUPED_DECIMAL, "12,480.5") is not None, re.fullmatch(GROUPED_DECIMAL, "12,48") is not None
(True, False)
"""

from __future__ import annotations

__all__ = [
    "EXPONENT",
    "FRACTION_PART",
    "GROUPED",
    "GROUPED_DECIMAL",
    "LITERAL",
    "RATIO",
    "SHORT_EXPONENT",
    "SIGN",
    "UNSIGNED",
]

#: Digits with an optional fraction part; Python's and sympy's float mantissa: ``12``, ``12.``, ``12.5``, ``.5``.
UNSIGNED = r"(?:\d+(?:\.\d*)?|\.\d+)"
#: A dot and the digits after it, where a reader wants them written out: ``.5`` in ``12.5`` (``12.`` is not one).
FRACTION_PART = r"(?:\.\d+)"
#: A power of ten after a mantissa: ``e5``, ``E-3``.
EXPONENT = r"(?:[eE][+-]?\d+)"
#: An exponent of at most three digits: a literal with a longer one (``1e999999999``) is not read as a number.
SHORT_EXPONENT = r"(?:[eE][+-]?\d{1,3})"
#: A sign.
SIGN = r"[+-]"
#: A whole number with its thousands grouped by commas (``12,480``), or plain digits.
GROUPED = r"(?:\d{1,3}(?:,\d{3})+|\d+)"
#: A grouped number with an optional fraction part, or a bare fraction part: ``12,480.5``, ``0.25``, ``.5``.
GROUPED_DECIMAL = rf"(?:{GROUPED}{FRACTION_PART}?|{FRACTION_PART})"
#: A signed literal with a short exponent: ``-1.5e10``.
LITERAL = rf"(?:{SIGN}?{UNSIGNED}{SHORT_EXPONENT}?)"
#: A literal over an optional whole denominator: ``3/8``, ``-0.5``.
RATIO = rf"(?:{LITERAL}(?:/\d+)?)"

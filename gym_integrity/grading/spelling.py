r"""One spelling of a LaTeX answer: operator spellings normalised before any rule or grader reads them.

LaTeX writes one operator many ways: ``\dfrac``, ``\tfrac`` and ``\cfrac`` are
``\frac``; ``\operatorname{lim}``, ``\mathrm{lim}``, ``\text{lim}`` and
``\mathop{\rm lim}`` are ``\lim``; ``\displaystyle``, ``\limits``, ``\left``
and ``\right`` change only the look; a space between a command and its braces
is no space at all, and ``\frac d{dx}`` is ``\frac{d}{dx}``. math_verify reads
most of these as their canonical form (it pays ``\dfrac{d}{dx}(x^3)`` for
``3x^2``), so a rule that matches the canonical spelling alone (QEDMath's
"poses a computation") is open to every other spelling. The reader hands the
answer on in this one spelling, and every rule and the grader receive it.

Math delimiters inside the answer (``$``, ``\(``, ``\)``, ``\[``, ``\]``) and
``~`` are spaces in the one spelling, so that a rule and math_verify read the
same text: math_verify evaluates a box's text outside its ``$...$`` too.

Every rewrite keeps the value math_verify reads but two: digits grouped in
thousands by a thin space (``1\,170``, which math_verify reads as 171) are
written as one number, as ``1{,}170`` already reads; and a sentence's full
stop after the value (``505.``, which math_verify reads as nothing) is dropped. :func:`normal_spelling` is
total over ``str`` and runs in linear time (regular expressions without nested
quantifiers, and one scan).

>>> normal_spelling(r"\dfrac {d} {d x}\left( x^3 \right)")
'\\frac{d}{d x}( x^3 )'
>>> normal_spelling(r"\displaystyle\operatorname*{lim}\limits_{x \to 0} \tfrac12")
'\\lim_{x \\to 0} \\frac{1}{2}'
>>> normal_spelling(r"\mathop{\rm sum} _{k=1} ^{n} k"), normal_spelling(r"\frac{\mathrm{d}}{\text{d}x}")
('\\sum_{k=1}^{n} k', '\\frac{d}{dx}')
"""

from __future__ import annotations

import re

from gym_integrity.grading.braces import braced_group

__all__ = ["OPERATOR_NAMES", "normal_spelling", "normal_text"]

#: Operator names that a font or ``\operatorname`` wrapper may spell out in letters (``\mathrm{lim}`` is ``\lim``).
OPERATOR_NAMES = (
    "lim",
    "limsup",
    "liminf",
    "sum",
    "prod",
    "int",
    "iint",
    "iiint",
    "oint",
    "det",
    "gcd",
    "lcm",
    "mod",
    "bmod",
    "pmod",
    "binom",
    "partial",
)
_NAMES = "|".join(sorted(OPERATOR_NAMES, key=len, reverse=True))
_FONT = r"\\(?:operatorname\*?|mathrm|textrm|text|mathop|mathit|mathsf|textnormal|rm)"

# Commands that change only how the formula looks.
_LOOK = re.compile(r"\\(?:displaystyle|textstyle|scriptstyle|scriptscriptstyle|limits|nolimits)(?![A-Za-z])")
# Delimiter sizes: \left( is (; \left. and \right. are no delimiter at all.
_SIZED_NONE = re.compile(r"\\(?:left|right|[bB]igg?[lrm]?)\s*\.")
_SIZED = re.compile(r"\\(?:left|right|[bB]igg?[lrm]?)(?![A-Za-z])\s*")
_FRAC = re.compile(r"\\[dtc]frac(?![A-Za-z])")
_BINOM = re.compile(r"\\[dt]binom(?![A-Za-z])")
# An operator spelled out in a font: \operatorname{lim}, \mathrm{ lim }, \mathop{\rm lim}, \mathop{\lim}, {\rm lim}.
_SPELLED = re.compile(rf"(?:{_FONT}\s*\{{\s*(?:\\rm\s*)?\\?|\{{\s*\\rm\s+)({_NAMES})\s*\}}")
_RM_NAME = re.compile(rf"\\rm\s+({_NAMES})(?![A-Za-z])")
# The differential d in a font: \mathrm{d}, \text{d}, {\rm d}, \mathrm d.
_FONT_D = re.compile(rf"(?:{_FONT}\s*\{{d\}}|\{{\\rm\s+d\}}|\\mathrm\s+d)")
_UNICODE = {
    "\u222b": "\\int ",
    "\u222c": "\\iint ",
    "\u222d": "\\iiint ",
    "\u222e": "\\oint ",
    "\u2211": "\\sum ",
    "\u220f": "\\prod ",
    "\u2202": "\\partial ",
    "\u00f7": "/",
    "\u00d7": "\\times ",
    "\u22c5": "\\cdot ",
    "\u222a": "\\cup ",
    "\u2229": "\\cap ",
    "\u2216": "\\setminus ",
    "\u2228": "\\lor ",
    "\u2227": "\\land ",
    # Commas and semicolons of other scripts and widths separate values as ',' and ';' do.
    "\uff0c": ",",
    "\u3001": ",",
    "\u060c": ",",
    "\ufe50": ",",
    "\ufe51": ",",
    "\uff1b": ";",
    "\u061b": ";",
    "\ufe54": ";",
}
_UNICODE_RE = re.compile("|".join(_UNICODE))
# Spaces of other widths are a space (math_verify read ``84\u3000\frac{1}{2}`` as two values, ``84 \frac{1}{2}`` as
# the mixed number); zero-width characters are nothing.
_UNICODE_SPACE = re.compile("[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]")
_ZERO_WIDTH = re.compile("[\u200b-\u200d\u2060\ufeff]")
# Space that LaTeX ignores: after a control word before its argument or script, and around _ and ^.
_COMMAND_SPACE = re.compile(r"(\\[A-Za-z]+)\s+(?=[{_^\[])")
_SCRIPT_SPACE = re.compile(r"\s*([_^])\s*")
_GROUP_SPACE = re.compile(r"\}\s+(?=[{_^])")
# Commands whose arguments may be written without braces: \frac12, \frac d{dx}, \binom n2, \sqrt2.
_TWO_ARGS = ("\\frac", "\\binom")
_ARGUMENT_COMMANDS = re.compile(r"\\(?:frac|binom|sqrt)(?![A-Za-z])")
_COMMAND_TOKEN = re.compile(r"\\(?:[A-Za-z]+|.)", re.DOTALL)
# Thousands grouped by a thin space or a braced comma: 1\,170 and 1{,}170 are 1170.
_THOUSANDS = re.compile(r"(?<![\d.])\d{1,3}(?:(?:\\,|\{,\})\d{3})+(?!\d)")
_THOUSANDS_MARK = re.compile(r"\\,|\{,\}")
# Math delimiters inside a box (``\boxed{$49$}``, ``\boxed{\(49\)}``) are layout; an escaped dollar (``\$``) is a
# currency sign and stays. One spelling without them: math_verify evaluated ``\lfloor 999/7 \rfloor $ $`` whole while
# a rule that read only the ``$...$`` formulas saw none. ``~`` is a space that math_verify cannot read.
_MATH_DELIMITER = re.compile(r"(?<!\\)\$|(?<!\\)\\[()\[\]]|~")
# A sentence's full stop after the value (``\boxed{505.}``), which math_verify reads as no number at all.
_FULL_STOP = re.compile(r"(?<![.\\])\.\s*$")


def _one_argument(text: str, i: int) -> tuple[str, int]:
    """The argument at ``text[i]`` braced, and the index after it: a group kept, one token or command wrapped."""
    while i < len(text) and text[i].isspace():
        i += 1
    if i >= len(text):
        return "", i
    ch = text[i]
    if ch == "{":
        content, end = braced_group(text, i)
        return ("{" + content + "}" if content is not None else text[i:]), end
    if ch == "\\":
        match = _COMMAND_TOKEN.match(text, i)
        end = match.end() if match else i + 1
        return "{" + text[i:end] + "}", end
    if ch in "}[]^_&" or ch.isspace():
        return "", i
    return "{" + ch + "}", i + 1


def _braced_arguments(text: str) -> str:
    r"""``\frac12`` -> ``\frac{1}{2}``, ``\frac d{dx}`` -> ``\frac{d}{dx}``: every argument of these commands braced."""
    if _ARGUMENT_COMMANDS.search(text) is None:
        return text
    out: list[str] = []
    position = 0
    for match in _ARGUMENT_COMMANDS.finditer(text):
        if match.start() < position:
            continue
        out.append(text[position : match.end()])
        i = match.end()
        if match.group() == "\\sqrt" and text.startswith("[", i):
            position = i
            continue
        for _ in range(2 if match.group() in _TWO_ARGS else 1):
            argument, end = _one_argument(text, i)
            if not argument.startswith("{") or text[end - len(argument) : end] == argument:
                break  # no argument, or a braced group: left in place, and the scan reads inside it
            out.append(argument)
            i = end
        position = i
    out.append(text[position:])
    return "".join(out)


def normal_spelling(latex: str) -> str:
    r"""``latex`` with its operators in one spelling (see the module's docstring); idempotent.

    >>> normal_spelling(normal_spelling(r"\dfrac d{dx}")) == normal_spelling(r"\dfrac d{dx}") == r"\frac{d}{dx}"
    True
    """
    text = _UNICODE_RE.sub(lambda m: _UNICODE[m.group()], latex)
    text = _ZERO_WIDTH.sub("", _UNICODE_SPACE.sub(" ", text))
    text = _MATH_DELIMITER.sub(" ", text)
    text = _THOUSANDS.sub(lambda m: _THOUSANDS_MARK.sub("", m.group()), text)
    text = _LOOK.sub(" ", text)
    text = _SIZED_NONE.sub(" ", text)
    text = _SIZED.sub("", text)
    text = _FRAC.sub(r"\\frac", text)
    text = _BINOM.sub(r"\\binom", text)
    text = _SPELLED.sub(lambda m: "\\" + m.group(1) + " ", text)
    text = _RM_NAME.sub(lambda m: "\\" + m.group(1) + " ", text)
    text = _FONT_D.sub("d", text)
    text = _braced_arguments(text)
    text = _COMMAND_SPACE.sub(r"\1", text)
    text = _SCRIPT_SPACE.sub(r"\1", text)
    text = _GROUP_SPACE.sub("}", text).strip()
    return _FULL_STOP.sub("", text).rstrip()


_TEXT_WRAPPER = re.compile(
    r"\\(?:text|textbf|textit|textrm|textsf|texttt|mathrm|mathbf|mathit|mathsf|operatorname"
    r"|mbox|emph)\s*\{([^{}]*)\}"
)
_EDGE_PUNCTUATION = "\"'`.,;:!?()[]{}<>$ \t\n"


def normal_text(text: str) -> str:
    r"""A text answer as compared with a text gold: wrappers (``\text{}``...) dropped, case folded, spacing
    collapsed, punctuation around it stripped.

    >>> normal_text(r"\text{ Alice. }"), normal_text("(B)"), normal_text(r"\textbf{New  York}")
    ('alice', 'b', 'new york')
    """
    previous = None
    while previous != text:  # nested wrappers: \text{\textbf{x}}; each pass removes a layer, so at most len passes
        previous, text = text, _TEXT_WRAPPER.sub(r"\1", text)
    text = re.sub(r"\\[,;:! ]|~", " ", text)
    return " ".join(text.split()).strip(_EDGE_PUNCTUATION).casefold()

r"""QEDMath's final-answer rule: what makes a boxed answer wrong whatever value math_verify gives it.

math_verify evaluates what a question poses: ``\int_0^{\pi} x \sin x \, dx`` equals the gold ``\pi``, and
``7^{2026} \mod 100`` equals 49. QEDMath pays a final value, so an answer that poses a computation, restates the
question, writes numbers side by side or gives several values for one gold is graded ``incorrect`` before any worker
runs. The rule reads the answer in the one spelling the grading layer's reader hands on
(:func:`~gym_integrity.grading.spelling.normal_spelling`), the string math_verify grades.
"""

from __future__ import annotations

import re

from gym_integrity.grading.numbers import UNSIGNED
from gym_integrity.grading.spelling import normal_spelling

__all__ = ["not_an_answer", "restates", "several_values"]

#: Operators that pose a computation (math_verify evaluates them: ``\lim_{x\to 0}\frac{\sin 2x}{x}`` equals 2); read
#: in the one spelling the reader hands on (:func:`~gym_integrity.grading.spelling.normal_spelling`).
#: math_verify takes a limit under any subscript with an arrow (``_{x \to 0} f``, ``\foo_{x -> 0} f``), whatever
#: the operator's name; a derivative's numerator may hold braces (``\frac{d x^{3}}{dx}``) and its denominator
#: spacing (``d\!x``).
_POSING = re.compile(
    r"\\(?:i+nt|oint|lim(?:sup|inf)?|sum|prod|partial)(?![A-Za-z])"
    r"|\\(?:to|rightarrow|longrightarrow|mapsto|Rightarrow)(?![A-Za-z])|\u2192|->"
    r"|\\frac\{d(?![A-Za-z]{2})(?:[^{}]|\{(?:[^{}]|\{[^{}]*\})*\})*\}\{d(?:\s|\\[!,;: ])*[A-Za-z]"
)
#: Two numbers side by side: math_verify reads ``3 7`` as 10 (as if a mixed number) and ``1 000`` as 0.
_JUXTAPOSED = re.compile(r"\d\s+\d")
#: Operations a statement poses on its numbers that math_verify evaluates when boxed: a remainder, a determinant
#: (a matrix environment or ``\det``), a binomial coefficient, a gcd or lcm.
_STATEMENT_OPERATIONS = {
    "a remainder (mod)": re.compile(r"\\[bp]?mod(?![A-Za-z])|\bmod\b|\\equiv(?![A-Za-z])"),
    "a matrix or determinant": re.compile(r"\\begin\{[A-Za-z]*(?:matrix|array)\*?\}|\\det(?![A-Za-z])"),
    "a binomial coefficient": re.compile(r"\\binom(?![A-Za-z])|\\choose(?![A-Za-z])"),
    "a gcd or lcm": re.compile(r"\\(?:gcd|lcm)(?![A-Za-z])"),
    # a - b\lfloor a/b \rfloor is a remainder in other signs (paid 49 for the remainder of 7^{2026} by 10^2)
    "a floor or ceiling": re.compile(r"\\(?:[lr]floor|[lr]ceil|floor|ceil)(?![A-Za-z])"),
}
#: Functions math_verify evaluates (``\sin``, ``\mathrm{cos}``, ``arctan``, ``\log``).
_FUNCTIONS = re.compile(r"(?<![A-Za-z])(?:arc)?(sinh?|cosh?|tanh?|cot|sec|csc|log|ln|exp)(?![A-Za-z])")
_NUMBER = re.compile(UNSIGNED)
#: A power of two numbers: ``7^{2026}``, ``2^10``, ``(2)^{10}``.
_POWER = re.compile(rf"({UNSIGNED})\s*[)}}]?\^(?:\{{\s*({UNSIGNED})\s*\}}|(\d))")
#: Words and signs that give a choice of values: ``3 \text{ or } 4``, ``1 \pm \sqrt{2}``.
_ALTERNATIVES = re.compile(r"\\(?:pm|mp|lor|vee)(?![A-Za-z])|\b(?:or|and)\b")
_GROUPED_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?!\d)")


def _numbers(text: str) -> set[str]:
    """The number literals of ``text``, each in one form (``2026``, ``0.5``; ``12.`` is ``12``)."""
    out = set()
    for literal in _NUMBER.findall(text):
        whole, _, fraction = literal.partition(".")
        whole, fraction = whole.lstrip("0") or "0", fraction.rstrip("0")
        out.add(f"{whole}.{fraction}" if fraction else whole)
    return out


def _powers(text: str) -> set[tuple[str, str]]:
    return {(base, exponent or digit) for base, exponent, digit in _POWER.findall(text)}


def restates(answer: str, statement: str, gold: str) -> str | None:
    r"""The statement's own operation, if ``answer`` is that, else None.

    The class: the answer holds an operation math_verify evaluates that the gold does not hold (a remainder, a
    determinant or matrix, a binomial coefficient, a gcd or lcm) on any numbers, since a number is easily written
    in another form (``10^2`` for 100); a function the statement applies (``\sin``, ``\log``) that the gold does
    not hold; or a power of two numbers that the statement writes itself, every number of the answer being one of
    the statement's. A number of the statement alone is not enough: ``a+b+c=12`` for "Find $a+b+c$" and
    ``3\sqrt{2}`` reuse one and are answers.

    >>> statement = "Find the remainder when $7^{2026}$ is divided by $100$."
    >>> restates(r"7^{2026} \mod 100", statement, "49"), restates("7^{2026}", statement, "49")
    ('a remainder (mod)', 'a power the statement writes (7^2026)')
    >>> restates("49", statement, "49"), restates("7^2", statement, "49"), restates("a+b+c=12", "12", "12")
    (None, None, None)
    >>> restates(r"49^{1013} \mod 10^2", statement, "49"), restates(r"\sin\frac{\pi}{12}", r"$\sin 15^\circ$", "x")
    ('a remainder (mod)', 'a function the statement applies (sin)')
    """
    # An operation the gold does not hold is refused whatever numbers it is applied to: they are easily written in
    # another form (7^{2026} \mod 10^2, 49^{1013} \mod 100, \binom{9+1}{3}, \gcd(12, 2 \cdot 9) were all paid).
    # A box of prose with several formulas (a worked solution boxed whole) is held to this formula by formula, on
    # its closed formulas only (no variable: \gcd(a, 2026 - a) is a step of a solution, 49^{1013} \mod 100 a value).
    formulas = answer.split("$")[1::2] if answer.count("$") >= 4 else [answer]
    for formula in formulas:
        if len(formulas) > 1 and re.search(r"[A-Za-z]", re.sub(r"\\[A-Za-z]+", "", formula)):
            continue
        for name, operation in _STATEMENT_OPERATIONS.items():
            if operation.search(formula) and not operation.search(gold):
                return name
    # A function the statement applies, applied again, is the question in another form (\sin 15^\circ \cos 15^\circ
    # asked, \sin\frac{\pi}{12}\cos\frac{\pi}{12} paid for 1/4).
    applied = (set(_FUNCTIONS.findall(answer)) & set(_FUNCTIONS.findall(statement))) - set(_FUNCTIONS.findall(gold))
    if applied:
        return f"a function the statement applies ({sorted(applied)[0]})"
    numbers = _numbers(answer)
    if not numbers or not numbers <= _numbers(statement):
        return None
    for name, operation in _STATEMENT_OPERATIONS.items():
        if operation.search(answer) and not operation.search(gold):
            return name
    if not _POWER.search(gold):
        shared = _powers(answer) & _powers(statement)
        if shared:
            base, exponent = sorted(shared)[0]
            return f"a power the statement writes ({base}^{exponent})"
    return None


def _depth_zero(text: str) -> str:
    r"""``text`` with every bracketed part dropped (escaped braces count as brackets: ``\{1, 2\}`` is a group)."""
    out, depth, i = [], 0, 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] in "{}":
            ch, i = text[i + 1], i + 1
        elif ch == "\\":
            out.append(text[i : i + 2] if depth == 0 else "")
            i += 2
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
        i += 1
    return "".join(out)


def several_values(text: str) -> bool:
    r"""True if ``text`` gives more than one value: alternatives (``a \text{ or } b``, ``a \pm 1``), a list
    (``a, b``), or a set of several (``\{a, b\}``); a number with grouped thousands (``1,000``) is one value.

    >>> [several_values(t) for t in (r"3 \text{ or } 4", "3, 4", r"\{3, 4\}", r"1 \pm \sqrt{2}", "1,000", "(1, 2)")]
    [True, True, True, True, False, False]
    """
    text = _GROUPED_NUMBER.sub("0", text)
    if _ALTERNATIVES.search(text):
        return True
    stripped = text.strip()
    if stripped.startswith("\\{") and stripped.endswith("\\}"):
        stripped = stripped[2:-2]
    return any(sep in _depth_zero(stripped) for sep in ",;")


def _single_valued(gold: str) -> bool:
    """A scalar gold: no list, tuple, set or alternatives anywhere in it."""
    return not (_ALTERNATIVES.search(gold) or re.search(r"[,;]", _GROUPED_NUMBER.sub("0", gold)))


def not_an_answer(answer: str, gold: str, statement: str = "") -> str | None:
    r"""Why a boxed ``answer`` is wrong whatever value its grader gives it, or None. QEDMath pays a final value:

    ``answer`` is the string the grader grades (the grading layer's one reading of the step:
    :func:`~gym_integrity.grading.boxed_answer` of the text without percent signs, in its one spelling), never a
    reading of its own. ``gold`` and ``statement`` are read in that spelling here.

    * an answer that holds an integral, limit, sum, product or derivative poses a computation (the gold holds
      none): math_verify evaluates ``\int_0^{\pi} x \sin x \, dx`` to the gold ``\pi``, so the question itself,
      echoed, was paid;
    * an answer that restates the question (:func:`restates`: the statement's own operation on the statement's
      own numbers) is not its value: math_verify evaluates ``7^{2026} \mod 100`` to 49;
    * numbers written side by side are not one number (``3 7`` was read as 10; ``3 \frac{1}{2}`` stays 7/2);
    * several values (``3 \text{ or } 4``, ``3, 4``, ``\{3, 4\}``, ``3 \pm 1``) do not answer a single-valued gold
      (a box of prose with ``$...$`` is left to math_verify, which reads ``$3$ or $4$`` as the set {3, 4}).

    >>> not_an_answer(r"\int_0^{\pi} x \sin x \, dx", r"\pi")
    'it poses a computation (an integral, limit, sum, product or derivative) instead of its value'
    >>> not_an_answer("a+b+c=12", "12", "Find $a+b+c$ if ... $12$"), not_an_answer("3 7", "10")
    (None, 'it writes numbers side by side (3 7), which is not one number')
    >>> not_an_answer(r"\frac{7}{2}", r"\frac{7}{2}"), not_an_answer(r"3 \frac{1}{2}", "3.5")
    (None, None)
    >>> not_an_answer(r"\binom{10}{3}", "120", r"In how many ways can $3$ of $10$ people be chosen?")
    "it restates the question (a binomial coefficient of the statement's numbers) instead of its value"
    >>> not_an_answer(r"3 \text{ or } 4", "3")
    'it gives several values for a question with one answer'
    """
    gold = normal_spelling(gold)
    if _POSING.search(answer) and not _POSING.search(gold):
        return "it poses a computation (an integral, limit, sum, product or derivative) instead of its value"
    restated = restates(answer, normal_spelling(statement), gold) if statement else None
    if restated is not None:
        return f"it restates the question ({restated} of the statement's numbers) instead of its value"
    juxtaposed = _JUXTAPOSED.search(answer)
    if juxtaposed and not _JUXTAPOSED.search(gold):
        return f"it writes numbers side by side ({juxtaposed.group()}), which is not one number"
    # A box of prose with inline math ($...$, a worked solution boxed whole) is read by math_verify as the set of
    # its formulas, which a single-valued gold never equals: its commas and words are not a list of values.
    if "$" not in answer and _single_valued(gold) and several_values(answer):
        return "it gives several values for a question with one answer"
    return None

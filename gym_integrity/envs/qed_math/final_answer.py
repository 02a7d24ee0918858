r"""QEDMath's final-answer rule: what makes a boxed answer wrong whatever value math_verify gives it.

math_verify evaluates what a question poses: ``\int_0^{\pi} x \sin x \, dx`` equals the gold ``\pi``, and
``7^{2026} \mod 100`` equals 49. QEDMath pays a final value, so an answer that poses a computation, restates the
question, writes numbers side by side or gives several values for one gold is graded ``incorrect`` before any worker
runs. The rule reads the answer in the one spelling the grading layer's reader hands on
(:func:`~gym_integrity.grading.spelling.normal_spelling`), the string math_verify grades.
"""

from __future__ import annotations

import re
from fractions import Fraction

from gym_integrity.envs.qed_math.powers import MAX_BITS, neutral_value, power_keys
from gym_integrity.grading.spelling import normal_spelling

__all__ = ["graded_side", "not_an_answer", "restates", "several_values"]

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
#: Two numbers side by side, by a space or a spacing command: math_verify reads ``3 7`` as 10 (as if a mixed
#: number), ``1 000`` as 0 and ``3\,4`` as 7 (a thousands group, ``1\,170``, is one number in the one spelling).
_JUXTAPOSED = re.compile(r"\d(?:\s|\\[,;:! ])+\d")
_FACTORIAL_PATTERN = r"(?:(?<=[\d})\]])|(?<=(?<![A-Za-z\\])[A-Za-z]))\s*!(?!=)"
#: Operations a statement poses on its numbers that math_verify evaluates when boxed: a remainder, a determinant
#: (a matrix environment or ``\det``), a binomial coefficient (or the factorials that write one: ``10!/(3!7!)``),
#: a gcd or lcm, a floor or ceiling. A factorial is ``10!``, ``n!``, ``(n+1)!``; ``\!`` is a space, ``!=`` not
#: equal, and a word's ``!`` (``\text{Alice!}``, for a text gold) punctuation. ``\Gamma`` is the factorial in
#: another spelling (math_verify paid ``\Gamma(6)`` for 120).
_STATEMENT_OPERATIONS = {
    "a remainder (mod)": re.compile(r"\\[bp]?mod(?![A-Za-z])|\bmod\b|\\equiv(?![A-Za-z])"),
    "a matrix or determinant": re.compile(r"\\begin\{[A-Za-z]*(?:matrix|array)\*?\}|\\det(?![A-Za-z])"),
    "a binomial coefficient or factorial": re.compile(
        r"\\binom(?![A-Za-z])|\\choose(?![A-Za-z])|\\Gamma(?![A-Za-z])|" + _FACTORIAL_PATTERN
    ),
    "a gcd or lcm": re.compile(r"\\(?:gcd|lcm)(?![A-Za-z])"),
    # a - b\lfloor a/b \rfloor is a remainder in other signs (paid 49 for the remainder of 7^{2026} by 10^2)
    "a floor or ceiling": re.compile(r"\\(?:[lr]floor|[lr]ceil|floor|ceil)(?![A-Za-z])"),
}
#: Functions math_verify evaluates (``\sin``, ``\mathrm{cos}``, ``arctan``, ``\log``).
_FUNCTIONS = re.compile(r"(?<![A-Za-z])(?:arc)?(sinh?|cosh?|tanh?|cot|sec|csc|log|ln|exp)(?![A-Za-z])")
#: An equals sign at any depth that is not part of ``<=``, ``>=``, ``!=``, ``:=`` or ``==``.
_EQUALS = re.compile(r"(?<![<>!:=\\])=(?!=)")
#: Words and signs that give a choice of values: ``3 \text{ or } 4``, ``1 \pm \sqrt{2}``.
_ALTERNATIVES = re.compile(r"\\(?:pm|mp|lor|vee)(?![A-Za-z])|\b(?:or|and)\b")
_GROUPED_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?!\d)")


def graded_side(answer: str, gold: str) -> str:
    r"""The part of ``answer`` math_verify compares with ``gold``: for an equation answer and a gold that is no
    equation, the right-hand side of the last ``=`` at the top level (math_verify pays ``7 = 6`` for the gold 6:
    it compares that side only); else the whole answer (one enclosing ``$...$`` dropped).

    >>> graded_side(r"\sum_{k=1}^{100} k^2 = 338350", "338350"), graded_side("x = 3", "x = 3")
    ('338350', 'x = 3')
    >>> graded_side(r"$f(5) = \frac{16}{3}$", "5"), graded_side(r"7^{2026} \bmod 100 =", "49")
    ('\\frac{16}{3}', '7^{2026} \\bmod 100 =')
    """
    text = answer.strip()
    if len(text) > 1 and text[0] == text[-1] == "$" and text.count("$") == 2:
        text = text[1:-1].strip()
    if "$" in text or _top_level_equals(gold) >= 0:
        return answer
    at = _top_level_equals(text)
    right = text[at + 1 :].strip() if at >= 0 else ""
    return right or text


def _top_level_equals(text: str) -> int:
    """The index of the last ``=`` outside every bracket of ``text``, or -1."""
    depth, last = 0, -1
    for match in re.finditer(r"\\[{}]|[{}()\[\]]|" + _EQUALS.pattern, text):
        token = match.group()
        if token in ("{", "(", "[", "\\{"):
            depth += 1
        elif token in ("}", ")", "]", "\\}"):
            depth = max(0, depth - 1)
        elif depth == 0:
            last = match.start()
    return last


def _statement_power(answer: str, statement: str) -> str | None:
    r"""A power the statement writes, if ``answer`` holds it in any form, else None. Powers are compared by value
    (:mod:`.powers`): a power of the answer, or a formula of it that holds a power (the whole answer, each
    ``$...$`` formula of a box of prose), evaluated with its padding (``2^5 \cdot 2^5 + 0x``, ``4^5``,
    ``2^{5\cdot 2}`` are all ``2^{10}``)."""
    written = power_keys(statement)
    if not written or "^" not in answer:
        return None
    shared = power_keys(answer) & written
    if not shared:
        formulas = [answer, *answer.split("$")[1::2]]
        values = {neutral_value(f) for f in formulas if "^" in f} - {None}
        shared = {(root, n) for root, n in written if _bits(root) * abs(n) <= MAX_BITS and root**n in values}
    if not shared:
        return None
    root, n = min(shared)
    return f"a power the statement writes ({root}^{n})"


def _bits(value: Fraction) -> int:
    return max(value.numerator.bit_length(), value.denominator.bit_length())


def restates(answer: str, statement: str, gold: str) -> str | None:
    r"""The statement's own operation, if ``answer`` is that, else None.

    The class: the answer holds an operation math_verify evaluates that the gold does not hold (a remainder, a
    determinant or matrix, a binomial coefficient or factorial, a gcd or lcm, a floor or ceiling) on any numbers,
    since a number is easily written in another form (``10^2`` for 100) and padded (``+ 0x``); a function the
    statement applies (``\sin``, ``\log``) that the gold does not hold; or a power the statement writes, read by
    value (``2^{5\cdot 2}``, ``2.0^{10}``, ``4^5`` for ``2^{10}``), when the gold holds no power. A number of the
    statement alone is not enough: ``a+b+c=12`` for "Find $a+b+c$" and ``3\sqrt{2}`` reuse one and are answers.

    >>> statement = "Find the remainder when $7^{2026}$ is divided by $100$."
    >>> restates(r"7^{2026} \mod 100", statement, "49"), restates("49^{1013}", statement, "49")
    ('a remainder (mod)', 'a power the statement writes (7^2026)')
    >>> restates("49", statement, "49"), restates("7^2", statement, "49"), restates("a+b+c=12", "12", "12")
    (None, None, None)
    >>> restates(r"\frac{10!}{3!\,7!}", "Choose $3$ of $10$.", "120"), restates(r"\sin\frac{\pi}{12}", r"$\sin 15^\circ$", "x")
    ('a binomial coefficient or factorial', 'a function the statement applies (sin)')
    """
    # An operation the gold does not hold is refused whatever numbers it is applied to and wherever it stands
    # (a box of prose too): the numbers are easily written in another form and the formula padded
    # (7^{2026} \mod 10^2, \binom{9+1}{3}, $49^{1013} \mod 100 + 0x$ were all paid).
    for name, operation in _STATEMENT_OPERATIONS.items():
        if operation.search(answer) and not operation.search(gold):
            return name
    # A function the statement applies, applied again, is the question in another form (\sin 15^\circ \cos 15^\circ
    # asked, \sin\frac{\pi}{12}\cos\frac{\pi}{12} paid for 1/4).
    applied = (set(_FUNCTIONS.findall(answer)) & set(_FUNCTIONS.findall(statement))) - set(_FUNCTIONS.findall(gold))
    if applied:
        return f"a function the statement applies ({sorted(applied)[0]})"
    return None if "^" in gold else _statement_power(answer, statement)


def _depth_zero(text: str) -> str:
    r"""``text`` with every bracketed part dropped (escaped braces count as brackets: ``\{1, 2\}`` is a group)."""
    out, depth, i = [], 0, 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] in "{}":
            ch, i = text[i + 1], i + 1
        elif ch == "\\":  # a spacing command (\, \;) is a space, not a separator
            if depth == 0:
                out.append(" " if text[i + 1 : i + 2] in tuple(",;:! ") else text[i : i + 2])
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
      echoed, was paid. This and the next rule read the side math_verify grades (:func:`graded_side`): in
      ``\sum_{k=1}^{100} k^2 = 338350`` the value after the last ``=``;
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
    'it restates the question (a binomial coefficient or factorial) instead of its value'
    >>> not_an_answer(r"3 \text{ or } 4", "3")
    'it gives several values for a question with one answer'
    """
    gold = normal_spelling(gold)
    graded = graded_side(answer, gold)
    if _POSING.search(graded) and not _POSING.search(gold):
        return "it poses a computation (an integral, limit, sum, product or derivative) instead of its value"
    restated = restates(graded, normal_spelling(statement), gold) if statement else None
    if restated is not None:
        return f"it restates the question ({restated}) instead of its value"
    juxtaposed = _JUXTAPOSED.search(answer)
    if juxtaposed and not _JUXTAPOSED.search(gold):
        return f"it writes numbers side by side ({juxtaposed.group()}), which is not one number"
    # A box of prose with inline math ($...$, a worked solution boxed whole) is read by math_verify as the set of
    # its formulas, which a single-valued gold never equals: its commas and words are not a list of values.
    if "$" not in answer and _single_valued(gold) and several_values(answer):
        return "it gives several values for a question with one answer"
    return None

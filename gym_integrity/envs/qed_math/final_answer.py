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
from gym_integrity.grading.braces import braced_group
from gym_integrity.grading.spelling import normal_spelling

__all__ = ["graded_side", "not_an_answer", "operations", "restates", "several_values", "unread_tail"]

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
#: Commands that write a value rather than compute one: fractions, roots, constants, arithmetic signs, spacing,
#: membership, relations, escaped braces and percent or dollar signs. Any other command (``\bmod``, ``\lfloor``,
#: ``\max``, ``\csc``, ``\ln``, ``\Gamma``, ``\binom``, ``\det``, ``\begin``, and set operations ``\cup``,
#: ``\cap``, ``\setminus``: ``7 \cup 84`` was paid for 84) computes: math_verify evaluates it.
_VALUE_COMMANDS = frozenset(
    "frac over sqrt pi infty cdot times div pm mp circ degree in notin le ge leq geq lt gt ne neq "
    "emptyset varnothing mathbb quad qquad".split()
) | frozenset(r"{}%$,;:! ")
#: Font and text wrappers: their content is words (``\text{ square units}``), unless the wrapper is
#: ``\operatorname`` or the group is applied to an argument (``\mathrm{floor}(3.5)``), when it names an operation.
_WRAPPERS = frozenset("text textrm textbf textit textsf textnormal mathrm mathbf mathit mathsf mbox emph".split())
_COMMAND = re.compile(r"\\([A-Za-z]+\*?|.)", re.DOTALL)
#: What follows an operation's name when it is applied: a bracket, a group, a command or a number.
_APPLIED = re.compile(r"(?:\s|\\[,;:! ]|\\q?quad)*(?:[(\[{\d]|\\(?![,;:! ]|q?quad))")
#: A name written in letters (``max``, ``floor``, ``ln``): math_verify reads some as the function.
_NAME = re.compile(r"(?<![A-Za-z])[A-Za-z]{2,}")
#: A factorial (``10!``, ``10\,!``; ``!=`` is not equal, ``\!`` a space), a bar (``|x|``, ``f|_{x=2}``) and a
#: falling factorial (``(9)_{2}``: math_verify rewrites it as ``\frac{(9)!}{((9)-(2))!}``).
_MARKS = re.compile(r"(?<!\\)!(?!=)|\||\)\s*_")


def operations(text: str) -> set[str]:
    r"""The operations ``text`` writes (in the one spelling): every command that is not one of a value's
    (:data:`_VALUE_COMMANDS`), every name written in letters outside a text wrapper, ``!`` and ``|``.

    >>> sorted(operations(r"\operatorname{floor}(999/7) - \max(1, 2) + 10\,! + \text{ units}"))
    ['!', '\\max', '\\operatorname{floor}']
    >>> sorted(operations(r"e^{2026 \ln 7} + |x| + \frac{\sqrt{3}}{2} + \mathrm{ceil}(x)")), operations("x = 3")
    (['\\ln', '\\mathrm{ceil}', '|'], set())
    """
    found: set[str] = set()
    letters: list[str] = []
    position = 0
    for match in _COMMAND.finditer(text):
        if match.start() < position:
            continue
        letters.append(text[position : match.start()])
        name, position = match.group(1), match.end()
        if name in _WRAPPERS or name.rstrip("*") == "operatorname":
            content, end = braced_group(text, position)
            if content is None:
                continue
            # a function's name is one word, tight in its group (``\text{ or }`` is prose between values)
            applied = content.isalpha() and _APPLIED.match(text, end) is not None
            if name.startswith("operatorname") or applied:
                found.add(f"\\{name}{{{content.strip()}}}")
            elif "\\" in content:  # words are text; a command in a wrapper is still read (\text{\lfloor 3.5\rfloor})
                found |= operations(content)
            position = end
        elif name not in _VALUE_COMMANDS:
            found.add("\\" + name)
    letters.append(text[position:])
    bare = " ".join(letters)
    found.update(_NAME.findall(bare))
    found.update("(a)_{b}" if mark.group()[0] == ")" else mark.group() for mark in _MARKS.finditer(bare))
    return found


#: An equals sign at any depth that is not part of ``<=``, ``>=``, ``!=``, ``:=`` or ``==``.
_EQUALS = re.compile(r"(?<![<>!:=\\])=(?!=)")
#: Words and signs that give a choice of values: ``3 \text{ or } 4``, ``1 \pm \sqrt{2}``.
_ALTERNATIVES = re.compile(r"\\(?:pm|mp|lor|vee)(?![A-Za-z])|\b(?:or|and)\b")
_GROUPED_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?!\d)")
#: A separator anywhere (``7 \text{,} 84``, ``{;}``, an alignment ``&``): a single-valued gold takes none.
_SEPARATOR = re.compile(r"(?<!\\)[,;&]")
#: ``x \in (2, 3)`` names the interval; ``7 \in 84`` was paid for 84 (math_verify compares the right side).
_MEMBERSHIP = re.compile(r"\\(?:not)?in(?![A-Za-z])")


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
    r"""A power the statement writes, if ``answer`` holds it and the gold holds no power, else None.

    Powers are read by value (``2^{5\cdot 2}``, ``2.0^{10}``, ``4^5`` for ``2^{10}``; :mod:`.powers`). A number of
    the statement alone is not enough: ``a+b+c=12`` for "Find $a+b+c$" and ``7^2`` for 49 reuse its numbers and
    are answers. The statement's other operations (a remainder, a binomial, ``\sin``) are operations the gold
    does not hold (:func:`operations`), refused whatever they are applied to.

    >>> statement = "Find the remainder when $7^{2026}$ is divided by $100$."
    >>> restates("49^{1013}", statement, "49"), restates("7^2", statement, "49"), restates("49", statement, "49")
    ('a power the statement writes (7^2026)', None, None)
    """
    return None if "^" in gold else _statement_power(answer, statement)


def computes(answer: str, gold: str) -> str | None:
    r"""The computation ``answer`` poses instead of a value, if any, else None: an integral, limit, sum, product,
    derivative or arrow (:data:`_POSING`), or an operation the gold does not hold (:func:`operations`), on any
    numbers and anywhere in the box, since a number is easily written in another form and a formula padded.

    >>> computes(r"\operatorname{floor}(999/7) - \operatorname{floor}(999/77)", "130")
    'an operation the expected answer does not hold: \\operatorname{floor}'
    >>> computes(r"\int_0^{\pi} x \sin x \, dx", r"\pi"), computes(r"\binom{10}{3}", r"\binom{10}{3}")
    ('an integral, limit, sum, product or derivative', None)
    """
    if _POSING.search(answer) and not _POSING.search(gold):
        return "an integral, limit, sum, product or derivative"
    # The whole box, as math_verify evaluates it (the one spelling has no $: a box of prose shows its words).
    foreign = operations(answer) - operations(gold)
    return f"an operation the expected answer does not hold: {min(foreign)}" if foreign else None


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
    return _listed(stripped)


def _listed(text: str) -> bool:
    """Values separated by ``,`` or ``;`` outside every bracket (a number with grouped thousands is one value)."""
    return any(sep in _depth_zero(_GROUPED_NUMBER.sub("0", text)) for sep in ",;")


def _separators(text: str) -> set[str]:
    """The separators ``text`` writes anywhere, at any depth (``\\,`` is a space; grouped thousands are one number)."""
    return set(_SEPARATOR.findall(_GROUPED_NUMBER.sub("0", text)))


#: A text group as math_verify reads one: it turns ``\mathrm``/``\mathit``/``\mathbf`` and ``\textrm``... into
#: ``\text``, then drops everything from the first ``\text{`` or ``\mbox{`` to the end as a unit when the answer
#: ends with a brace (``(\\(?:text|mbox){.*?})(\^\d|\{\^\d\})?$``), if anything is left before it.
_TEXT_GROUP = re.compile(r"\\(?:text(?:normal|bf|it|rm)?|math(?:rm|it|bf)|mbox)\s*\{")
#: What math_verify deletes before it looks for a unit (latex2sympy2_extended's ``to_remove_regex``): ``\mathrm{th}``,
#: ``\!``, an empty ``\text{}``, dollar signs, quotes, ``\displaystyle``; and the fonts it reads as letters.
_VERIFIER_REMOVES = re.compile(r"\\mathrm\{th\}|\\!\s*|\\text\s*\{\s*\}|\\\$|\$|(?<!\\)[\"']|\\displaystyle")
_VERIFIER_LETTERS = re.compile(r"\\mathrm\{([Td])\}")
_ENDS_IN_A_GROUP = re.compile(r"\}(?:\^\d|\{\^\d\})?\s*$")
#: A unit: one text group of words (``\text{ cm}^2``, ``\text{ square units}``, ``\mathrm{m/s}``).
_UNIT = re.compile(r"\\\w+\s*\{[A-Za-z\s./\-]*[A-Za-z][A-Za-z\s./\-]*\}(?:\^\d|\^\{\d\}|\{\^\d\})?\s*")


def unread_tail(answer: str) -> str | None:
    r"""The end of ``answer`` that math_verify drops unread as a unit, when it is more than a unit, else None.

    math_verify drops ``\text{;} = \frac{1}{2}`` from ``\sum_{k=1}^{100} k^2 \text{;} = \frac{1}{2}`` and evaluates
    the sum, while a rule reading the side after ``=`` saw ``\frac{1}{2}``: what it drops must be a unit.

    >>> unread_tail(r"\sum_{k=1}^{100} k^2 \text{;} = \frac{1}{2}"), unread_tail(r"84 \text{ or } \frac{1}{7}")
    ('\\text{;} = \\frac{1}{2}', '\\text{ or } \\frac{1}{7}')
    >>> unread_tail(r"84 \text{;} \frac{1}{7}'"), unread_tail(r"\mathrm{th} 84 \text{;} \frac{1}{7}")
    ('\\text{;} \\frac{1}{7}', '\\text{;} \\frac{1}{7}')
    >>> unread_tail(r"12 \text{ cm}^2"), unread_tail(r"\text{ units}"), unread_tail(r"3 \text{ or } 4")
    (None, None, None)
    """
    text = _VERIFIER_REMOVES.sub("", _VERIFIER_LETTERS.sub(r"\1", answer)).strip()
    group = _TEXT_GROUP.search(text)
    if group is None or not text[: group.start()].strip() or not _ENDS_IN_A_GROUP.search(text):
        return None
    tail = text[group.start() :]
    return None if _UNIT.fullmatch(tail) else tail


def _kind(text: str) -> str:
    r"""``"set"`` (``\{-1, 0, 1\}``), ``"bracketed"`` (an interval or tuple, ``(2,3)``, ``[0, 1)``), ``"list"``
    (values at the top level, ``2, 3``) or ``"value"``: math_verify paid ``\{2, 3\}`` for the interval ``(2,3)``."""
    t = text.strip()
    if t.startswith("\\{") and t.endswith("\\}") and not _depth_zero(t):
        return "set"
    if t[:1] in "([" and t[-1:] in ")]" and not _depth_zero(t) and "," in t:
        return "bracketed"
    return "list" if _listed(t) else "value"


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
    * an answer that writes an operation the gold does not hold poses a computation too (:func:`computes`): a
      value is written with numbers, arithmetic, fractions, roots, powers and constants; math_verify evaluates
      ``7^{2026} \mod 100`` to 49 and ``\operatorname{floor}(999/7)`` to 142;
    * a power the statement writes, read by value, restates the question when the gold holds no power
      (:func:`restates`);
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
    'it poses a computation (an operation the expected answer does not hold: \\binom) instead of its value'
    >>> not_an_answer(r"3 \text{ or } 4", "3")
    'it gives several values for a question with one answer'
    """
    gold = normal_spelling(gold)
    graded = graded_side(answer, gold)
    computed = computes(graded, gold)
    if computed is not None:
        return f"it poses a computation ({computed}) instead of its value"
    restated = restates(graded, normal_spelling(statement), gold) if statement else None
    if restated is not None:
        return f"it restates the question ({restated}) instead of its value"
    juxtaposed = _JUXTAPOSED.search(answer)
    if juxtaposed and not _JUXTAPOSED.search(gold):
        return f"it writes numbers side by side ({juxtaposed.group()}), which is not one number"
    if _single_valued(gold) and (several_values(answer) or _separators(answer) - _separators(gold)):
        return "it gives several values for a question with one answer"
    kinds = _kind(gold), _kind(answer)
    if kinds[0] == "bracketed" and kinds[1] in ("set", "list"):
        return "it gives a set or a list of values where the answer is an interval or a tuple"
    if kinds[0] in ("set", "list") and kinds[1] == "bracketed":
        return "it gives an interval or a tuple where the answer is a set of values"
    at = _top_level_equals(answer)
    if at >= 0 and _top_level_equals(gold) < 0 and _TEXT_GROUP.search(answer[:at]):
        # math_verify drops from the first words to the end as a unit and grades what is before them
        return "it writes words before the = of its equation (a unit may only end the answer)"
    member = _MEMBERSHIP.search(answer)
    if member and not _MEMBERSHIP.search(gold) and _kind(answer[member.end() :]) not in ("set", "bracketed"):
        return "it states a membership in something that is not a set or an interval, not a value"
    tail = unread_tail(answer)
    if tail is not None:
        return f"it ends in more than a unit after words ({tail[:40]}), which the grader does not read"
    return None

r"""QEDMath gold answers checked at load: boxed answers of a reference, and whether math_verify can use a gold.

A gold answer the verifier cannot use marks every answer wrong, the correct
one included, so the loader skips its row (:mod:`gym_integrity.envs.qed_math.problems`).
A gold is usable when math_verify reads it, the way the verifier's workers do
(:func:`gym_integrity.services.math_worker.gold_as_boxed`, then ``parse``), as
a math expression that is not made of plain words: math_verify reads
``e^pi is larger`` as the product ``E*a*g*i*i*l*r*r*s*exp(p)``, which no answer
equals, and ``???`` as nothing at all.

Reading a gold costs math_verify's import (a second or more) and can hang on
deep nesting (twenty nested brackets take seconds), so:

* golds in a small grammar of plain math (numbers, one-letter variables,
  ``\frac``, ``\sqrt``, ``\pi``, ``\infty``, powers, percent, tuples, intervals
  and sets, nested at most :data:`MAX_PLAIN_DEPTH` deep) are known readable
  without math_verify (:func:`is_plain_math`; the tests check every grammar
  shape against math_verify). The built-in set is all such golds, so it loads
  without importing math_verify;
* the others are read by math_verify on a pool of killable worker processes
  held for the call (:mod:`gym_integrity.workers`; the machine's, by
  default), each with a run budget of
  :data:`GOLD_READ_BUDGET_S`; a gold that runs past it is skipped, since at
  grading it would eat every answer's budget. Results are cached per gold for
  the process.

Example:
    >>> distinct_boxed(r"so \boxed{2}, and then \boxed{ 3 }; again \boxed{2}")
    ['2', '3']
    >>> is_plain_math(r"\frac{1+\sqrt{5}}{2}"), is_plain_math(r"(2, \infty)"), is_plain_math("e^pi is larger")
    (True, True, False)
    >>> plain_words(r"e^\pi \text{ is larger}")
    ['is', 'larger']
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from gym_integrity.grading.reader import all_boxed
from gym_integrity.grading.spelling import normal_spelling, normal_text
from gym_integrity.workers import ProcessCache

__all__ = [
    "GOLD_READ_BUDGET_S",
    "MAX_GOLD_CHARS",
    "MAX_PLAIN_DEPTH",
    "MAX_TEXT_GOLD_CHARS",
    "check_golds",
    "distinct_boxed",
    "is_option_gold",
    "is_plain_math",
    "is_text_gold",
    "plain_words",
    "read_gold",
    "warm",
]

#: A gold longer than this is not read (the verifier caps answers at 1024 characters too).
MAX_GOLD_CHARS = 1024
#: math_verify's run budget for reading one gold, on a worker of its own.
GOLD_READ_BUDGET_S = 3.0
#: Bracket nesting the plain-math grammar accepts without asking math_verify.
MAX_PLAIN_DEPTH = 4

_HANDLER = "gym_integrity.envs.qed_math.golds:read_gold"
#: A text gold longer than this is not matched exactly (a sentence is not an answer to match character by character).
MAX_TEXT_GOLD_CHARS = 200
#: An option letter as a gold: ``B``, ``(B)``, ``B.``; a text gold when the statement lists that option.
_OPTION_GOLD = re.compile(r"\(?([A-J])\)?\.?")
#: Words (letters and digits) joined by single spaces, hyphens, apostrophes, ampersands or dots: a text gold.
_WORDS = re.compile(r"[^\W_]+(?:[ '\-.&][^\W_]+)*")


# ----------------------------------------------------------------------------- boxed answers of a reference


def _same_answer_key(content: str) -> str:
    # Spacing and spellings (\left/\right, \dfrac/\tfrac...) do not make two boxed answers different.
    return re.sub(r"\s+", "", re.sub(r"\\[,;:! ]", "", normal_spelling(content)))


def distinct_boxed(text: str) -> list[str]:
    """The boxed answers of ``text`` that differ (after spacing), first spelling of each, in order."""
    seen: dict[str, str] = {}
    for content in all_boxed(text):
        seen.setdefault(_same_answer_key(content), content)
    return [c for c in seen.values() if c]


# ----------------------------------------------------------------------------- plain math (no math_verify needed)

_TOKEN = re.compile(r"\s*(\d+(?:\.\d+)?|\.\d+|\\[A-Za-z]+|\\[{}%]|\\[,;:! ]|[A-Za-z]+|[-+*/^(){}\[\],])")
_PLAIN_COMMANDS = {
    "\\frac",
    "\\dfrac",
    "\\tfrac",
    "\\sqrt",
    "\\pi",
    "\\infty",
    "\\cdot",
    "\\times",
    "\\left",
    "\\right",
    "\\circ",
}
_OPENERS = {"(": (")", "]"), "[": (")", "]"), "\\{": ("\\}",), "{": ("}",)}


class _NotPlain(Exception):
    pass


class _PlainParser:
    """Recursive descent over the plain-math grammar; raises _NotPlain on anything else."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.i = 0
        self.depth = 0

    def peek(self) -> str | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self, *expected: str) -> str:
        token = self.peek()
        if token is None or (expected and token not in expected):
            raise _NotPlain
        self.i += 1
        return token

    def sequence(self) -> int:
        count = 1
        self.expr()
        while self.peek() == ",":
            self.take(",")
            self.expr()
            count += 1
        return count

    def expr(self) -> None:
        if self.peek() in ("+", "-"):
            self.take()
        self.product()
        while self.peek() in ("+", "-"):
            self.take()
            self.product()

    def product(self) -> None:
        self.power()
        while True:
            token = self.peek()
            if token in ("*", "/", "\\cdot", "\\times"):
                self.take()
                if self.peek() == "-":
                    self.take()
                self.power()
            elif token is not None and not token[0].isdigit() and token[0] != "." and self.starts_atom(token):
                self.power()  # implicit product: 2x, 3\sqrt{2}, x(x+1); never two numbers side by side
            else:
                return

    @staticmethod
    def starts_atom(token: str) -> bool:
        return token in (
            "(",
            "[",
            "\\{",
            "{",
            "\\frac",
            "\\dfrac",
            "\\tfrac",
            "\\sqrt",
            "\\pi",
            "\\infty",
            "\\left",
        ) or (token.isalpha() and len(token) == 1)

    def power(self) -> None:
        self.atom()
        if self.peek() == "^":
            self.take()
            token = self.peek()
            if token == "\\circ":
                self.take()
            elif token is not None and token.isdigit() and len(token) == 1:
                self.take()
            elif token == "{":
                self.group("{", lambda: self.circ_or_expr())
            else:
                raise _NotPlain
        if self.peek() == "\\%":
            self.take()

    def circ_or_expr(self) -> int:
        if self.peek() == "\\circ":
            self.take()
            return 1
        self.expr()
        return 1

    def group(self, opener: str, inner, closers: tuple[str, ...] | None = None) -> int:
        self.take(opener)
        self.depth += 1
        if self.depth > MAX_PLAIN_DEPTH:
            raise _NotPlain
        count = inner()
        self.take(*(closers or _OPENERS[opener]))
        self.depth -= 1
        return count

    def atom(self) -> None:
        token = self.peek()
        if token is None:
            raise _NotPlain
        if token[0].isdigit() or token[0] == "." or token in ("\\pi", "\\infty"):
            self.take()
        elif token.isalpha():
            if len(token) != 1:
                raise _NotPlain  # a word: math_verify would multiply its letters
            self.take()
        elif token in ("\\frac", "\\dfrac", "\\tfrac"):
            self.take()
            self.group("{", self.expr_count)
            self.group("{", self.expr_count)
        elif token == "\\sqrt":
            self.take()
            if self.peek() == "[":
                self.take("[")
                if not (self.peek() or "").isdigit():
                    raise _NotPlain
                self.take()
                self.take("]")
            self.group("{", self.expr_count)
        elif token == "\\left":
            self.take()
            opener = self.take("(", "[", "\\{")
            self.depth += 1
            if self.depth > MAX_PLAIN_DEPTH:
                raise _NotPlain
            self.sequence()
            self.take("\\right")
            self.take(*_OPENERS[opener])
            self.depth -= 1
        elif token in ("(", "[", "\\{"):
            self.group(token, self.sequence)
        elif token == "{":
            self.group("{", self.expr_count)
        else:
            raise _NotPlain

    def expr_count(self) -> int:
        self.expr()
        return 1


def is_plain_math(gold: str) -> bool:
    r"""True if ``gold`` is in the plain-math grammar, which math_verify always reads as math.

    Numbers, one-letter variables, ``\pi``, ``\infty``, ``+ - * / \cdot \times``,
    implicit products, ``^`` (one digit, ``{...}`` or ``\circ``), ``\%``,
    ``\frac``/``\dfrac``/``\tfrac``, ``\sqrt`` (with an index), brackets,
    tuples, intervals and ``\{...\}`` sets, at most :data:`MAX_PLAIN_DEPTH` deep.

    >>> [is_plain_math(g) for g in ("1170", r"\{-1, 0, 1\}", "[2, 3)", r"x^2 - 1", "sin(x)", "1/0 ?")]
    [True, True, True, True, False, False]
    """
    text = gold.strip()
    if len(text) >= 2 and text[0] == "$" and text[-1] == "$":
        text = text.strip("$").strip()
    if not text or len(text) > 200:
        return False
    tokens: list[str] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            if text[position:].strip():
                return False
            break
        token = match.group(1)
        if token.startswith("\\") and token[1:].isalpha() and token not in _PLAIN_COMMANDS:
            return False
        if token not in ("\\,", "\\;", "\\:", "\\!", "\\ "):  # LaTeX spacing
            tokens.append(token)
        position = match.end()
    parser = _PlainParser(tokens)
    try:
        parser.sequence()
    except _NotPlain:
        return False
    return parser.peek() is None


def plain_words(text: str) -> list[str]:
    r"""Runs of two or more letters outside LaTeX command names: words math_verify would read as letter products.

    >>> plain_words(r"\frac{\pi}{2}"), plain_words("pi/2"), plain_words(r"\text{no solution}")
    ([], ['pi'], ['no', 'solution'])
    """
    return re.findall(r"[A-Za-z]{2,}", re.sub(r"\\[A-Za-z]+", " ", text))


# ----------------------------------------------------------------------------- text golds


def is_option_gold(gold: str, statement: str) -> bool:
    """True if ``gold`` is an option letter (``B``, ``(B)``) that ``statement`` lists: ``(B)``, or ``B)`` on a line.

    >>> is_option_gold("B", "Which is prime? (A) 4 (B) 5"), is_option_gold("x", "Solve for (x)")
    (True, False)
    """
    match = _OPTION_GOLD.fullmatch(gold.strip())
    if match is None:
        return False
    letter = re.escape(match.group(1))
    return re.search(rf"\({letter}\)|(?:^|\n)\s*{letter}[.):]", statement) is not None


def is_text_gold(gold: str, verdict: tuple[str, str] | None) -> bool:
    r"""True if a gold math_verify cannot use (``verdict``, from :func:`check_golds`) is short words: a name, a word.

    Such a gold is matched exactly (:func:`~gym_integrity.grading.spelling.normal_text`) instead of skipped. Words
    mixed with math (``e^pi is larger``) are not: no exact match would pay ``e^{\pi}`` for ``e^pi``.

    >>> [is_text_gold(g, ("unparsable_gold", "")) for g in (r"\text{Alice}", "New York", "e^pi is larger", "???")]
    [True, True, False, False]
    """
    return (
        verdict is not None
        and verdict[0] == "unparsable_gold"
        and len(gold) <= MAX_TEXT_GOLD_CHARS
        and bool(plain_words(gold))
        and _WORDS.fullmatch(normal_text(gold)) is not None
    )


# ----------------------------------------------------------------------------- reading a gold with math_verify


def warm() -> None:
    """Run by each pool worker before it says ready: math_verify imported and its grammar loaded."""
    from gym_integrity.services.math_worker import warm as warm_math_verify

    warm_math_verify()


def read_gold(gold: str) -> tuple[str, str]:
    """The worker handler: ``("", "")`` if math_verify reads ``gold`` as usable math, else ``(reason, detail)``.

    Runs in a pool worker (it imports math_verify). Details never quote the gold.
    """
    from math_verify import parse

    from gym_integrity.services.math_worker import gold_as_boxed

    parsed = parse(gold_as_boxed(gold), parsing_timeout=None)
    expressions = [p for p in parsed if not isinstance(p, str)]
    if not expressions:
        return "unparsable_gold", "math_verify finds no math expression in the gold answer"
    read_as = next((p for p in parsed if isinstance(p, str)), gold)
    words = plain_words(read_as)
    if words and not getattr(expressions[0], "is_number", False):
        return "unparsable_gold", (
            f"math_verify reads the gold answer's {len(words)} plain word(s) as algebra "
            "(letters as variables), which no answer equals"
        )
    return "", ""


#: Each gold's check, done once per process (a gold read by math_verify costs a worker's time).
_CHECKED: ProcessCache[str, tuple[str, str] | None] = ProcessCache("QEDMath gold checks")


_NEEDS_MATH_VERIFY = ("", "")


def _quick_check(gold: str) -> tuple[str, str] | None:
    """``(reason, detail)`` if ``gold`` fails a check that needs no math_verify, None if it is plain math,
    :data:`_NEEDS_MATH_VERIFY` if math_verify must read it."""
    text = gold.strip()
    if not text:
        return "empty_answer", "the gold answer is empty"
    if len(text) > MAX_GOLD_CHARS:
        return "unparsable_gold", f"the gold answer is longer than {MAX_GOLD_CHARS} characters"
    return None if is_plain_math(text) else _NEEDS_MATH_VERIFY


def check_golds(golds: Iterable[str]) -> dict[str, tuple[str, str] | None]:
    """For each distinct gold, None (usable) or ``(reason, detail)``; ``("unchecked", cause)`` if the pool failed.

    Golds that are plain math or already checked in this process cost nothing;
    the others are read by math_verify on a pool held for the call and released after it.
    """
    results: dict[str, tuple[str, str] | None] = {}
    pending: list[str] = []
    for gold in dict.fromkeys(golds):
        if gold in _CHECKED:
            results[gold] = _CHECKED.get(gold)
            continue
        quick = _quick_check(gold)
        if quick is _NEEDS_MATH_VERIFY:
            pending.append(gold)
        else:
            results[gold] = _CHECKED.setdefault(gold, quick)
    if pending:
        results.update(_read_in_pool(pending))
    return results


def _read_in_pool(golds: list[str]) -> dict[str, tuple[str, str] | None]:
    from gym_integrity.workers import PoolConfig, PoolStatus, get_pool

    # One config for every call, so every process of the machine (an async vector env's sub-processes loading
    # the same set) reads golds on one pool (services/machine_pool.py) instead of each starting its own.
    config = PoolConfig(
        num_workers=max(1, min(4, os.cpu_count() or 1)),
        spare_workers=0,
        run_timeout_s=GOLD_READ_BUDGET_S,
        queue_timeout_s=120.0,
        max_in_flight=1 << 20,
        max_retries=1,
    )
    pool = get_pool(_HANDLER, config)
    pool.acquire()
    try:
        futures = {gold: pool.submit(gold) for gold in golds}
        outcomes = {gold: future.result() for gold, future in futures.items()}
    finally:
        pool.release()
    results: dict[str, tuple[str, str] | None] = {}
    for gold, outcome in outcomes.items():
        status = outcome.status
        if status is PoolStatus.OK:
            reason, detail = outcome.value
            result = (reason, detail) if reason else None
        elif status is PoolStatus.TIMEOUT:
            result = (
                "unparsable_gold",
                f"math_verify ran past {GOLD_READ_BUDGET_S:g} s reading the gold answer "
                "(at grading it would use up every answer's budget)",
            )
        elif status is PoolStatus.CRASHED:
            result = ("unparsable_gold", "math_verify crashed reading the gold answer")
        elif status is PoolStatus.ERROR:
            result = ("unparsable_gold", f"math_verify raised {outcome.detail or 'an error'} reading the gold answer")
        else:  # the pool's fault, not the gold's: the row loads, unchecked, and the report says so
            results[gold] = ("unchecked", f"the gold check could not run ({outcome.detail or status.value})")
            continue
        results[gold] = _CHECKED.setdefault(gold, result)
    return results

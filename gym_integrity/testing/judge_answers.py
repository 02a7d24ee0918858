"""What the test judge answers: the stub's grade, the leaking judge's quotes, and the tests' check for quotes.

These are the texts behind :mod:`gym_integrity.testing.judge_server`'s modes,
apart from its HTTP plumbing: the server imports them, and tests and the audit
use them (through the server module, which re-exports them, or from here).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Iterable

from gym_integrity.extract import last_tag_body

__all__ = ["stub_points", "leak_text", "quoted_secrets", "answer_text", "LEAK_KINDS", "HARMLESS_ERROR"]

#: What ``leak:K`` quotes (see the module docstring).
LEAK_KINDS = ("all", "whole", "sentences", "words", "formulas")

#: The first line of every leaking answer: quotes nothing, so redaction must leave it alone.
HARMLESS_ERROR = "The write-up skips a justification of its second step."

_LEAK_SOURCES = ("reference_solution", "marking_scheme")
_MATH_SPAN_RE = re.compile(r"\$\$.+?\$\$|\$.+?\$|\\\(.+?\\\)|\\\[.+?\\\]", re.DOTALL)
_SENTENCE_END_RE = re.compile(r"\n+|(?<=[.!?])\s+")
_WORD_RE = re.compile(r"[A-Za-z]{5,}")
_TOKEN_RE = re.compile(r"\\?[A-Za-z]+|[0-9]+")


def stub_points(prompt: str) -> tuple[int, str]:
    """The stub's deterministic grade of a prompt built from our templates, and its (content-free) note.

    With a reference solution in the prompt (``v0``): the share of the
    reference's distinct tokens (words, numbers, LaTeX commands) that the proof
    uses, scaled to 0-7, so the reference itself earns 7. Without one (``v1``,
    ``v2``): the share of the marking scheme's keywords (words of 5+ letters
    not in the problem statement) that the proof uses. A proof under 5 words
    earns 0. The note gives counts only, never words.

    >>> stub_points("<reference_solution>a b c d e</reference_solution><proof>a b c d e</proof>")[0]
    7
    >>> stub_points("<problem>x</problem><marking_scheme>induction invariant</marking_scheme><proof>hi</proof>")[0]
    0
    """
    proof = last_tag_body(prompt, "proof", ignore_case=True)
    proof = prompt if proof is None else proof
    if len(proof.split()) < 5:
        return 0, "the proof is under 5 words"
    reference = last_tag_body(prompt, "reference_solution", ignore_case=True)
    if reference and reference.strip():
        wanted = {t.lower() for t in _TOKEN_RE.findall(reference)}
        used = wanted & {t.lower() for t in _TOKEN_RE.findall(proof)}
        kind = "reference-solution tokens"
    else:
        stated = {w.lower() for w in _WORD_RE.findall(last_tag_body(prompt, "problem", ignore_case=True) or "")}
        wanted = {w.lower() for w in _WORD_RE.findall(last_tag_body(prompt, "marking_scheme", ignore_case=True) or "")} - stated
        used = wanted & {w.lower() for w in _WORD_RE.findall(proof)}
        kind = "marking-scheme keywords"
    if not wanted:
        return min(7, len(proof.split()) // 40), "nothing to compare with; graded by length"
    points = min(7, 7 * len(used) // len(wanted))  # floor: only a full match earns 7
    return points, f"the proof uses {len(used)} of {len(wanted)} {kind}"


def leak_text(prompt: str, kind: str = "all") -> str:
    """The answer of a judge that quotes what it was told to keep secret (``leak:K``).

    Its ``<errors>`` hold :data:`HARMLESS_ERROR`, then one line per quoted piece
    of the prompt's ``<reference_solution>`` and ``<marking_scheme>`` blocks.

    >>> text = leak_text("<reference_solution>Use $a = b$. Done now.</reference_solution>", "formulas")
    >>> last_tag_body(text, "errors").splitlines()
    ['The write-up skips a justification of its second step.', 'Key formula: $a = b$']
    >>> leak_text("<reference_solution>one two three four</reference_solution>", "words").count("Gap near")
    2
    """
    if kind not in LEAK_KINDS:
        raise ValueError(f"leak kind must be one of {LEAK_KINDS}, got {kind!r}")
    lines = [HARMLESS_ERROR]
    for tag in _LEAK_SOURCES:
        text = (last_tag_body(prompt, tag, ignore_case=True) or "").strip()
        if not text:
            continue
        if kind in ("all", "whole"):
            lines.append(f"Compare with the reference: {text}")
        if kind in ("all", "sentences"):
            lines.extend(s.strip() for s in _SENTENCE_END_RE.split(text) if s.strip())
        if kind in ("all", "words"):
            words = text.split()
            lines.extend(f"Gap near {' '.join(words[i:i + 3])} in the write-up." for i in range(len(words) - 2))
        if kind in ("all", "formulas"):
            lines.extend(f"Key formula: {span}" for span in _MATH_SPAN_RE.findall(text))
    errors = "\n".join(lines)
    return (f"<assessment>Test judge (misbehaving on purpose): it quotes the texts it was told to keep "
            f"secret.</assessment>\n<errors>{errors}</errors>\n<score>3</score>")


def quoted_secrets(feedback: str, hidden: Iterable[str], shown: str = "") -> list[str]:
    r"""The pieces of ``hidden`` that ``feedback`` repeats, by the rule of docs/judge.md: the tests' check.

    A piece is a run of 3 consecutive words (case and Unicode look-alikes
    folded, punctuation ignored) that is neither made of function words only
    nor in ``shown`` (the problem statement), or a math span (``$...$``,
    ``\(...\)``, ``\[...\]``) of 3+ symbols that ``shown`` does not hold,
    compared without spacing, braces and ``$``. Written apart from the
    redactor, more simply, so that it checks it rather than repeats it.

    >>> quoted_secrets("It uses the zorblax bound, and $a=b$.", ["the zorblax bound holds when $a = b$"])
    ['the zorblax bound', 'a = b']
    """
    from gym_integrity.services.judge import FUNCTION_WORDS, LEAK_RUN, MIN_FORMULA_SYMBOLS

    def words(text: str) -> list[str]:
        return re.findall(r"[^\W\d_]+|\d+", unicodedata.normalize("NFKC", text).casefold())

    def runs(text: str) -> set[tuple[str, ...]]:
        w = words(text)
        return {tuple(w[i:i + LEAK_RUN]) for i in range(len(w) - LEAK_RUN + 1)}

    def compact(text: str) -> str:
        return re.sub(r"[\s{}$]", "", unicodedata.normalize("NFKC", text).casefold())

    said, seen, found = runs(feedback), runs(shown), []
    for text in hidden:
        for run in sorted(runs(text) & said - seen, key=" ".join):
            if not set(run) <= FUNCTION_WORDS:
                found.append(" ".join(run))
        for span in _MATH_SPAN_RE.findall(text):
            inner = span.strip("$")
            if inner.startswith(("\\(", "\\[")):
                inner = inner[2:-2]
            if (len(re.findall(r"\\[A-Za-z]+|[^\s{}$\\]", inner)) >= MIN_FORMULA_SYMBOLS
                    and compact(inner) in compact(feedback) and compact(inner) not in compact(shown)):
                found.append(inner.strip())
    return found


def answer_text(points: int | None, note: str) -> str:
    """A well-formed answer of the test judge: a content-free note, and the score tag unless ``points`` is None."""
    tail = f"\n<score>{points}</score>" if points is not None else ""
    return (
        f"<assessment>Test judge (deterministic, not a real grader): {note}.</assessment>\n"
        f"<errors>none reported by the test judge</errors>{tail}"
    )

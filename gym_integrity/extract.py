r"""Pulling the final answer out of a model's text: ``<answer>`` tags and ``\boxed{}``, with brace matching.

Every function here is total over ``str``: a megabyte of noise, control
characters or unbalanced braces give a verdict, never an exception, and run in
linear time.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from gym_integrity.protocol import Verdict

__all__ = ["Extraction", "braced_group", "last_boxed", "last_tag_body", "last_tagged", "extract_answer", "ANSWER_FORMATS"]

ANSWER_FORMATS = ("tag", "boxed", "either", "raw")
_BOX_COMMANDS = ("\\boxed", "\\fbox")


class Extraction(NamedTuple):
    """Either ``answer`` (the extracted text) or ``failure`` (why there is none).

    A named tuple (immutable, like the frozen dataclass it replaced, and about
    three times cheaper to build): one is made on every graded step.
    """

    answer: str | None = None
    failure: Verdict | None = None


_NO_ANSWER = Extraction(failure=Verdict.NO_ANSWER)
_UNPARSABLE = Extraction(failure=Verdict.UNPARSABLE)
_TOO_LONG = Extraction(failure=Verdict.TOO_LONG)


def _check(answer: str, max_chars: int) -> Extraction:
    answer = answer.strip()
    if not answer:
        return _UNPARSABLE
    if len(answer) > max_chars:
        return _TOO_LONG
    return Extraction(answer)


def braced_group(text: str, i: int) -> tuple[str | None, int]:
    r"""The content of the ``{...}`` group at ``text[i]`` (after spaces), braces matched, and the index after it.

    ``(None, i)`` when no ``{`` stands there; ``(None, len(text))`` when the group
    never closes. Escaped braces (``\{``, ``\}``) neither open nor close.

    >>> braced_group(r"\boxed {a{b}\}c}!", 6)
    ('a{b}\\}c', 16)
    """
    while i < len(text) and text[i] in " \t":
        i += 1
    if i >= len(text) or text[i] != "{":
        return None, i
    depth, j = 0, i
    while j < len(text):
        ch = text[j]
        if ch == "\\":
            j += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1 : j], j + 1
        j += 1
    return None, len(text)


def last_boxed(text: str, max_chars: int = 4096) -> Extraction:
    r"""The content of the last ``\boxed{...}`` (or ``\fbox{...}``), braces matched.

    >>> last_boxed(r"so \boxed{1} then \boxed{\frac{1}{2}}").answer
    '\\frac{1}{2}'
    >>> last_boxed("no box").failure, last_boxed(r"\boxed{}").failure, last_boxed(r"\boxed{\frac{1}{2}").failure
    (<Verdict.NO_ANSWER: 'no_answer'>, <Verdict.UNPARSABLE: 'unparsable'>, <Verdict.UNPARSABLE: 'unparsable'>)
    """
    start = max(text.rfind(cmd) for cmd in _BOX_COMMANDS)
    if start < 0:
        return _NO_ANSWER
    cmd_len = len("\\boxed") if text.startswith("\\boxed", start) else len("\\fbox")
    content, _ = braced_group(text, start + cmd_len)
    if content is None:
        return _UNPARSABLE
    return _check(content, max_chars)


def last_tag_body(text: str, tag: str, *, ignore_case: bool = False) -> str | None:
    """The raw body of the last complete ``<tag>...</tag>`` pair, or None.

    Searching from the last closing tag backwards skips prose that merely
    names ``<tag>`` earlier on.

    >>> last_tag_body("say <score> then <SCORE>5</Score>", "score", ignore_case=True)
    '5'
    >>> last_tag_body("İİ<Proof>x</proof>", "proof", ignore_case=True), last_tag_body("<a>1</a><a>", "a")
    ('x', '1')
    """
    if not ignore_case:
        opening, closing = ("<answer>", "</answer>") if tag == "answer" else (f"<{tag}>", f"</{tag}>")
        end = text.rfind(closing)
        start = text.rfind(opening, 0, max(end, 0))
        return None if end < 0 or start < 0 else text[start + len(opening) : end]
    # Regex, not text.lower(): lowering can change the length (e.g. "İ") and shift every index.
    last_close = None
    for last_close in re.finditer(re.escape(f"</{tag}>"), text, re.IGNORECASE):
        pass
    if last_close is None:
        return None
    last_open = None
    for last_open in re.finditer(re.escape(f"<{tag}>"), text[: last_close.start()], re.IGNORECASE):
        pass
    return None if last_open is None else text[last_open.end() : last_close.start()]


def last_tagged(text: str, tag: str = "answer", max_chars: int = 4096) -> Extraction:
    """The content of the last complete ``<tag>...</tag>`` pair.

    >>> last_tagged("<answer>3</answer> or <answer> 4 </answer>").answer
    '4'
    >>> last_tagged("<answer>4").failure
    <Verdict.UNPARSABLE: 'unparsable'>
    """
    body = last_tag_body(text, tag)
    if body is None:
        stray = f"<{tag}>" in text or f"</{tag}>" in text
        return _UNPARSABLE if stray else _NO_ANSWER
    return _check(body, max_chars)


def extract_answer(text: str, answer_format: str = "either", max_chars: int = 4096) -> Extraction:
    """The answer in ``text`` by ``answer_format``: ``tag``, ``boxed``, ``either`` (tag, else boxed) or ``raw``.

    >>> extract_answer(r"I think \\boxed{12}").answer
    '12'
    >>> extract_answer("x" * 5000).failure
    <Verdict.NO_ANSWER: 'no_answer'>
    """
    if answer_format == "tag":
        return last_tagged(text, "answer", max_chars)
    if answer_format == "boxed":
        return last_boxed(text, max_chars)
    if answer_format == "raw":
        return _check(text, max_chars)
    if answer_format == "either":
        tagged = last_tagged(text, "answer", max_chars)
        if tagged.failure is Verdict.NO_ANSWER:
            return last_boxed(text, max_chars)
        return tagged
    raise ValueError(f"answer_format must be one of {ANSWER_FORMATS}, got {answer_format!r}")

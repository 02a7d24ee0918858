r"""Pulling the final answer out of a model's text: ``<answer>`` tags and ``\boxed{}``, with brace matching.

Every function here is total over ``str``: a megabyte of noise, control
characters or unbalanced braces give a verdict, never an exception, and run in
linear time.
"""

from __future__ import annotations

from dataclasses import dataclass

from gym_integrity.protocol import Verdict

__all__ = ["Extraction", "last_boxed", "last_tagged", "extract_answer", "ANSWER_FORMATS"]

ANSWER_FORMATS = ("tag", "boxed", "either", "raw")
_BOX_COMMANDS = ("\\boxed", "\\fbox")


@dataclass(frozen=True)
class Extraction:
    """Either ``answer`` (the extracted text) or ``failure`` (why there is none)."""

    answer: str | None = None
    failure: Verdict | None = None


def _check(answer: str, max_chars: int) -> Extraction:
    answer = answer.strip()
    if not answer:
        return Extraction(failure=Verdict.UNPARSABLE)
    if len(answer) > max_chars:
        return Extraction(failure=Verdict.TOO_LONG)
    return Extraction(answer=answer)


def last_boxed(text: str, max_chars: int = 4096) -> Extraction:
    r"""The content of the last ``\boxed{...}`` (or ``\fbox{...}``), braces matched.

    >>> last_boxed(r"so \boxed{1} then \boxed{\frac{1}{2}}").answer
    '\\frac{1}{2}'
    >>> last_boxed("no box").failure, last_boxed(r"\boxed{}").failure, last_boxed(r"\boxed{\frac{1}{2}").failure
    (<Verdict.NO_ANSWER: 'no_answer'>, <Verdict.UNPARSABLE: 'unparsable'>, <Verdict.UNPARSABLE: 'unparsable'>)
    """
    start = max(text.rfind(cmd) for cmd in _BOX_COMMANDS)
    if start < 0:
        return Extraction(failure=Verdict.NO_ANSWER)
    cmd_len = len("\\boxed") if text.startswith("\\boxed", start) else len("\\fbox")
    i = start + cmd_len
    while i < len(text) and text[i] in " \t":
        i += 1
    if i >= len(text) or text[i] != "{":
        return Extraction(failure=Verdict.UNPARSABLE)
    depth, j = 0, i
    while j < len(text):
        ch = text[j]
        if ch == "\\":  # an escaped brace (\{ or \}) does not open or close the group
            j += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return _check(text[i + 1 : j], max_chars)
        j += 1
    return Extraction(failure=Verdict.UNPARSABLE)


def last_tagged(text: str, tag: str = "answer", max_chars: int = 4096) -> Extraction:
    """The content of the last complete ``<tag>...</tag>`` pair.

    >>> last_tagged("<answer>3</answer> or <answer> 4 </answer>").answer
    '4'
    >>> last_tagged("<answer>4").failure
    <Verdict.UNPARSABLE: 'unparsable'>
    """
    open_tag, close_tag = f"<{tag}>", f"</{tag}>"
    end = text.rfind(close_tag)
    if end < 0:
        return Extraction(failure=Verdict.UNPARSABLE if open_tag in text else Verdict.NO_ANSWER)
    start = text.rfind(open_tag, 0, end)
    if start < 0:
        return Extraction(failure=Verdict.UNPARSABLE)
    return _check(text[start + len(open_tag) : end], max_chars)


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

r"""The one reader of a model's answer: ``<answer>`` tags, ``\boxed{}`` (brace matched) and QEDMath's percent.

Every grader reads its answer here, once, and hands the string it got to every
rule and grader after it: a rule that reads other text than the grader (another
box, the text before a sign is dropped) is a hole by construction.

Every function here is total over ``str``: a megabyte of noise, control
characters or unbalanced braces give a verdict, never an exception, and run in
linear time.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from gym_integrity.grading.braces import braced_group
from gym_integrity.grading.spelling import normal_spelling
from gym_integrity.protocol import Grade, Verdict

__all__ = [
    "ANSWER_FORMATS",
    "Extraction",
    "all_boxed",
    "boxed_answer",
    "braced_group",
    "extract_answer",
    "last_boxed",
    "last_tag_body",
    "last_tagged",
    "without_percent",
]

ANSWER_FORMATS = ("tag", "boxed", "either", "raw")
_BOX_COMMANDS = ("\\boxed", "\\fbox")
_BOX = re.compile(r"\\(?:boxed|fbox)")
_PERCENT = re.compile(r"\\?%")


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


def all_boxed(text: str, limit: int | None = None) -> list[str]:
    r"""Every ``\boxed{...}`` / ``\fbox{...}`` content of ``text``, braces matched, stripped, in order (linear time).

    Reading stops at a box that never closes (nothing after it can close either), and after ``limit`` boxes.

    >>> all_boxed(r"\boxed{\frac{1}{2}} or \fbox{x} and \boxed {b{c}} \boxed{unclosed")
    ['\\frac{1}{2}', 'x', 'b{c}']
    """
    out: list[str] = []
    position = 0
    while limit is None or len(out) < limit:
        match = _BOX.search(text, position)
        if match is None:
            break
        content, end = braced_group(text, match.end())
        if content is not None:
            out.append(content.strip())
        position = max(end, match.end())
    return out


def without_percent(text: str) -> str:
    r"""``text`` with every percent sign (``\%`` or ``%``) removed: QEDMath's one reading of percent.

    A percent sign is a unit mark on the number before it: ``25\%``, ``25%`` and
    ``25`` are one answer, ``0.25`` another. math_verify reads ``X\%`` both as X
    and as X/100, so ``\boxed{1170\%}`` and ``\boxed{117000\%}`` were both correct
    for a gold 1170. The answer and the gold are compared without their signs.

    >>> without_percent(r"\boxed{1170\%}"), without_percent("25%"), without_percent(r"\frac{1}{2}")
    ('\\boxed{1170}', '25', '\\frac{1}{2}')
    """
    return _PERCENT.sub("", text)


def boxed_answer(text: str, max_chars: int) -> tuple[str | None, Grade | None]:
    r"""``(content, None)`` of the last ``\boxed{}`` in ``text``, or ``(None, grade)`` saying why there is none.

    The content is handed on in its one spelling (:func:`~gym_integrity.grading.spelling.normal_spelling`:
    ``\dfrac`` is ``\frac``, ``\operatorname{lim}`` is ``\lim``), so every rule and the grader read the operators
    one way. Missing: ``no_answer``. Empty, unbalanced or longer than ``max_chars``: ``unparsable``.

    >>> boxed_answer(r"so the answer is \boxed{\dfrac {1}{2}}.", max_chars=64)
    ('\\frac{1}{2}', None)
    >>> boxed_answer("I give up", max_chars=64)[1].verdict.value
    'no_answer'
    >>> boxed_answer(r"\boxed{" + "1" * 10 + "}", max_chars=4)[1].cause
    'the boxed answer is longer than 4 characters'
    """
    extraction = last_boxed(text, max_chars)
    if extraction.failure is Verdict.NO_ANSWER:
        return None, Grade(Verdict.NO_ANSWER, 0.0, cause="no \\boxed{} answer found")
    if extraction.failure is Verdict.TOO_LONG:
        return None, Grade(Verdict.UNPARSABLE, 0.0, cause=f"the boxed answer is longer than {max_chars} characters")
    if extraction.failure is not None or extraction.answer is None:
        return None, Grade(Verdict.UNPARSABLE, 0.0, cause="the last \\boxed{} is empty or its braces are unbalanced")
    answer = normal_spelling(extraction.answer)
    if not answer:  # only layout commands (\displaystyle, \left.)
        return None, Grade(Verdict.UNPARSABLE, 0.0, cause="the last \\boxed{} is empty or its braces are unbalanced")
    return answer, None


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
    closes = list(re.finditer(re.escape(f"</{tag}>"), text, re.IGNORECASE))
    if not closes:
        return None
    last_close = closes[-1]
    opens = list(re.finditer(re.escape(f"<{tag}>"), text[: last_close.start()], re.IGNORECASE))
    last_open = opens[-1] if opens else None
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

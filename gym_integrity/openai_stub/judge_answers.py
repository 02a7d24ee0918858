"""What the test server answers: the stub's grade, the leaking judge's quotes, the tests' quote check, and the policy's replies.

These are the texts behind :mod:`gym_integrity.openai_stub.judge_server`'s modes,
apart from its HTTP plumbing: the server imports them, and tests and the audit
use them (through the server module, which re-exports them, or from here).
The policy side: :func:`check_policy` validates a ``policy`` mapping,
:func:`policy_reply` picks the reply for a conversation, :func:`wrong_text` is
the ``wrong`` policy's answer.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

from gym_integrity.grading.reader import last_tag_body

__all__ = [
    "stub_points",
    "leak_text",
    "quoted_secrets",
    "answer_text",
    "LEAK_KINDS",
    "HARMLESS_ERROR",
    "check_policy",
    "policy_reply",
    "wrong_text",
    "POLICY_DEFAULT_REPLY",
    "WRONG_ANSWER",
]

#: What ``leak:K`` quotes (see the module docstring).
LEAK_KINDS = ("all", "whole", "sentences", "words", "formulas")

#: The first line of every leaking answer: quotes nothing, so redaction must leave it alone.
HARMLESS_ERROR = "The write-up skips a justification of its second step."

_LEAK_SOURCES = ("reference_solution", "marking_scheme")
_MATH_SPAN_RE = re.compile(r"\$\$.+?\$\$|\$.+?\$|\\\(.+?\\\)|\\\[.+?\\\]", re.DOTALL)
_SENTENCE_END_RE = re.compile(r"\n+|(?<=[.!?])\s+")
_WORD_RE = re.compile(r"[A-Za-z]{5,}")
_TOKEN_RE = re.compile(r"\\?[A-Za-z]+|[0-9]+")


#: The share of the statement's distinct tokens a proof must use to be about the problem: the shipped references
#: use 31-60% of their own statement's, and another problem's proofs that the keywords paid used at most 20%.
_ON_TOPIC = 0.25
_TAGGED = re.compile(r"<(problem|reference_solution|marking_scheme|proof)>.*?</\1>", re.DOTALL | re.IGNORECASE)


def _runs(text: str, n: int = 3) -> set[tuple[str, ...]]:
    tokens = [t.lower() for t in _TOKEN_RE.findall(text)]
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


def stub_points(prompt: str) -> tuple[int, str]:
    """The stub's deterministic grade of a prompt built from our templates, and its (content-free) note.

    With a reference solution in the prompt (``v0``): the share of the
    reference's distinct runs of three tokens (words, numbers, LaTeX commands)
    that the proof uses, leaving out runs the problem statement has, scaled to
    0-7, so the reference itself earns 7. Runs, not single tokens: another
    problem's proof shares a third to a half of the shipped references' words
    but at most a ninth of their runs, and an echo of the statement shares
    none, so neither is paid. Without one (``v1``,
    ``v2``): the share of the marking scheme's keywords (words of 5+ letters
    not in the problem statement nor in the prompt's own instructions) that
    the proof uses. A proof under 5 words
    earns 0, and so does one that uses under a quarter of the statement's
    distinct tokens (``_ON_TOPIC``): it is not about this problem, though it
    may share the scheme's keywords (another problem's pigeonhole proof). The
    note gives counts only, never words.

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
        wanted = _runs(reference) - _runs(last_tag_body(prompt, "problem", ignore_case=True) or "")
        used = wanted & _runs(proof)
        kind = "reference-solution token runs"
    else:
        # Words of the statement or of the grader's own instructions (outside the tags) are not the scheme's: an
        # echo of the question and its instructions ("a complete, rigorous proof") has them.
        stated = {
            w.lower()
            for w in _WORD_RE.findall(
                (last_tag_body(prompt, "problem", ignore_case=True) or "") + " " + _TAGGED.sub(" ", prompt)
            )
        }
        wanted = {
            w.lower() for w in _WORD_RE.findall(last_tag_body(prompt, "marking_scheme", ignore_case=True) or "")
        } - stated
        used = wanted & {w.lower() for w in _WORD_RE.findall(proof)}
        kind = "marking-scheme keywords"
    if not wanted:
        return min(7, len(proof.split()) // 40), "nothing to compare with; graded by length"
    statement = {t.lower() for t in _TOKEN_RE.findall(last_tag_body(prompt, "problem", ignore_case=True) or "")}
    if statement and len(statement & {t.lower() for t in _TOKEN_RE.findall(proof)}) < _ON_TOPIC * len(statement):
        return 0, "the proof is not about this problem (it uses under a quarter of the statement's tokens)"
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
            lines.extend(f"Gap near {' '.join(words[i : i + 3])} in the write-up." for i in range(len(words) - 2))
        if kind in ("all", "formulas"):
            lines.extend(f"Key formula: {span}" for span in _MATH_SPAN_RE.findall(text))
    errors = "\n".join(lines)
    return (
        f"<assessment>Test judge (misbehaving on purpose): it quotes the texts it was told to keep "
        f"secret.</assessment>\n<errors>{errors}</errors>\n<score>3</score>"
    )


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
        return {tuple(w[i : i + LEAK_RUN]) for i in range(len(w) - LEAK_RUN + 1)}

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
            if (
                len(re.findall(r"\\[A-Za-z]+|[^\s{}$\\]", inner)) >= MIN_FORMULA_SYMBOLS
                and compact(inner) in compact(feedback)
                and compact(inner) not in compact(shown)
            ):
                found.append(inner.strip())
    return found


def answer_text(points: int | None, note: str) -> str:
    """A well-formed answer of the test judge: a content-free note, and the score tag unless ``points`` is None."""
    tail = f"\n<score>{points}</score>" if points is not None else ""
    return (
        f"<assessment>Test judge (deterministic, not a real grader): {note}.</assessment>\n"
        f"<errors>none reported by the test judge</errors>{tail}"
    )


# -- the policy side (modes ``policy`` and ``wrong``)

#: What the ``policy`` mode says when no key of the mapping is in the first user message.
POLICY_DEFAULT_REPLY = "I don't know."

#: The ``wrong`` policy's final answer: well-formed, and wrong for every problem we ship.
WRONG_ANSWER = "-7"

#: One scripted reply: assistant text, or a tool call ``{"tool": name, "arguments": {...}}``.
PolicyReply = str | Mapping[str, Any]


def check_policy(mapping: Any) -> dict[str, Any]:
    """``mapping`` if it is a valid ``policy`` mapping, else ``ValueError`` saying what is wrong.

    Keys are substrings of the first user message; a value is a reply (for every
    turn) or a non-empty list of replies (one per turn); a reply is a string or
    ``{"tool": name, "arguments": {...}}`` (``arguments`` optional).

    >>> check_policy({"2+2": ["<answer>4</answer>"], "": {"tool": "submit_answer", "arguments": {"answer": "1"}}})["2+2"]
    ['<answer>4</answer>']
    >>> check_policy({"q": []})
    Traceback (most recent call last):
    ...
    ValueError: policy['q']: a list of replies must not be empty
    """
    if not isinstance(mapping, Mapping):
        raise ValueError(f"a policy is a JSON object (substring -> reply), got {type(mapping).__name__}")
    for key, value in mapping.items():
        if not isinstance(key, str):
            raise ValueError(f"policy keys are strings, got {key!r}")
        if isinstance(value, list):
            if not value:
                raise ValueError(f"policy[{key!r}]: a list of replies must not be empty")
            for i, reply in enumerate(value):
                _check_reply(reply, f"policy[{key!r}][{i}]")
        else:
            _check_reply(value, f"policy[{key!r}]")
    return dict(mapping)


def _check_reply(reply: Any, where: str) -> None:
    if isinstance(reply, str):
        return
    if not isinstance(reply, Mapping):
        raise ValueError(
            f'{where}: a reply is a string or {{"tool": ..., "arguments": {{...}}}}, got {type(reply).__name__}'
        )
    if not isinstance(reply.get("tool"), str) or not reply["tool"]:
        raise ValueError(f'{where}: a tool call needs "tool": a non-empty string')
    if not isinstance(reply.get("arguments", {}), Mapping):
        raise ValueError(f'{where}: "arguments" must be an object')
    extra = set(reply) - {"tool", "arguments"}
    if extra:
        raise ValueError(f'{where}: unknown keys {sorted(extra)} (a tool call holds "tool" and "arguments")')


def policy_reply(mapping: Mapping[str, Any], first_user: str, n_assistant: int) -> PolicyReply:
    """The reply of the ``policy`` mode: the longest key found in ``first_user``, at turn ``n_assistant``.

    A string value answers every turn; a list answers turn ``i`` (the
    conversation holds ``i`` assistant messages) with element ``i``, and
    repeats its last element after that. No key found: :data:`POLICY_DEFAULT_REPLY`
    (a ``""`` key, found in every message and tried last, replaces it).

    >>> policy = {"What is 2+2": ["let me think", "<answer>4</answer>"], "2+2": "<answer>5</answer>"}
    >>> [policy_reply(policy, "Q: What is 2+2?", n) for n in (0, 1, 5)]
    ['let me think', '<answer>4</answer>', '<answer>4</answer>']
    >>> policy_reply(policy, "Is 2+2 four?", 0), policy_reply(policy, "other", 0)
    ('<answer>5</answer>', "I don't know.")
    """
    for key in sorted(mapping, key=lambda k: (-len(k), k)):
        if key in first_user:
            value = mapping[key]
            if isinstance(value, list):
                return value[min(max(n_assistant, 0), len(value) - 1)]
            return value
    return POLICY_DEFAULT_REPLY


def wrong_text(tool_call: bool = False) -> str:
    r"""The ``wrong`` policy's text: :data:`WRONG_ANSWER` in ``<answer>`` tags and ``\boxed{}``.

    With ``tool_call`` it also holds a ``<tool_call>`` block submitting it
    (``submit_answer``, for tool envs answered in text).

    >>> from gym_integrity.grading.reader import extract_answer
    >>> extract_answer(wrong_text(), "tag").answer, extract_answer(wrong_text(), "boxed").answer
    ('-7', '-7')
    """
    text = (
        f"Test policy (deterministic, wrong on purpose): the answer is \\boxed{{{WRONG_ANSWER}}}.\n"
        f"<answer>{WRONG_ANSWER}</answer>"
    )
    if tool_call:
        text += '\n<tool_call>{"name": "submit_answer", "arguments": {"answer": "' + WRONG_ANSWER + '"}}</tool_call>'
    return text

"""Agent-safe feedback from the judge's answer: its errors section, with every quote of a hidden text redacted."""

from __future__ import annotations

import bisect
import html
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from gym_integrity.grading.reader import last_tag_body
from gym_integrity.protocol import Verdict
from gym_integrity.services.judge.config import MAX_POINTS
from gym_integrity.workers import ProcessCache

__all__ = ["FUNCTION_WORDS", "LEAK_RUN", "MIN_FORMULA_SYMBOLS", "agent_feedback", "no_verdict_feedback", "redact"]

#: A run of this many consecutive words shared with a hidden text is a leak (issue 10: "3+ consecutive words").
LEAK_RUN = 3

#: A formula of a hidden text is a leak when its symbols (letters, digits, operators, LaTeX commands; spacing
#: and braces ignored) appear in order in the feedback, unless it has fewer than this many (``$n$``, ``$uv$``).
MIN_FORMULA_SYMBOLS = 3

#: Runs made only of these words carry no content ("one of the", "it is a"): they are not leaks, or
#: nearly every sentence of every judge would be redacted.
FUNCTION_WORDS = frozenset(
    "a an the this that these those it its we us our you i he she they them their one ones some any all each "
    "every no not nor and or but so if then than as of to in on at by for from with into onto over under about "
    "is are was were be been being has have had do does did can may must will would shall should also there "
    "here which who whom whose what when where why how such only just very".split()
)

_TOKEN_RE = re.compile(r"[^\W\d_]+|\d+")
_MATH_RE = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.DOTALL)
_SYMBOL_RE = re.compile(r"\\[a-z]+|[^\s{}$\\\x00]")  # NUL is the separator of joined symbols
#: Spellings of one symbol, so a judge writing ≤ for \leq still matches ("" drops a sizing command).
_SYMBOL_ALIASES = {
    "\\leq": "\\le",
    "≤": "\\le",
    "\\geq": "\\ge",
    "≥": "\\ge",
    "\\neq": "\\ne",
    "≠": "\\ne",
    "·": "\\cdot",
    "⋅": "\\cdot",
    "×": "\\times",
    "√": "\\sqrt",
    "\\dfrac": "\\frac",
    "\\tfrac": "\\frac",
    "−": "-",
    "∣": "\\mid",
    "\\ldots": "\\dots",
    "\\cdots": "\\dots",
    "\\left": "",
    "\\right": "",
}
_ALIAS_RE = re.compile("(?:" + "|".join(map(re.escape, sorted(_SYMBOL_ALIASES, key=len, reverse=True))) + ")(?![a-z])")
#: A unit of redaction: a line, or a sentence within it.
_UNIT_SEP_RE = re.compile(r"\n+|(?<=[.!?])[ \t]+")
_REDACTED = "[redacted]"


#: Latin look-alikes from other scripts (after casefolding): a judge steered by a proof's prompt injection
#: could spell a quote with them, and NFKC keeps them apart from the letters they imitate.
_CONFUSABLES = str.maketrans(
    {
        "а": "a",
        "в": "b",
        "е": "e",
        "ё": "e",
        "к": "k",
        "м": "m",
        "н": "h",
        "о": "o",
        "р": "p",
        "с": "c",
        "т": "t",
        "у": "y",
        "х": "x",
        "і": "i",
        "ї": "i",
        "ј": "j",
        "ѕ": "s",
        "ԁ": "d",
        "ӏ": "l",
        "ԛ": "q",
        "ԝ": "w",
        "α": "a",
        "β": "b",
        "ε": "e",
        "ι": "i",
        "κ": "k",
        "ν": "v",
        "ο": "o",
        "ρ": "p",
        "τ": "t",
        "υ": "u",
        "χ": "x",
        "ѵ": "v",
        "ɡ": "g",
        "ı": "i",
    }
)
#: Detection only: emphasis markers inside words (``q**uu**x``) and text-mode wrappers (``\text{quux}``).
_EMPHASIS_RE = re.compile(r"[*~`]+")
_TEXT_WRAPPER_RE = re.compile(
    r"\\(?:text|textbf|textit|texttt|textrm|mathrm|mathbf|mathit|mathsf|emph|operatorname)"
    r"(?![a-z])"
)
#: Letters spelled out one at a time (``q u u x``): joined into the word; a wider gap still separates words.
_SPACED_LETTERS_RE = re.compile(r"(?<![^\W\d_])[^\W\d_](?: [^\W\d_])+(?![^\W\d_])")


def _normal(text: str, format_chars: str = "") -> str:
    """Case- and look-alike-folded text, for detection (what the agent is shown is not rewritten by this).

    HTML entities are decoded, format characters (zero-width spaces, soft hyphens, direction marks) and
    combining marks dropped, NFKC applied (superscript digits, full-width letters, ligatures) and Latin
    look-alikes of other scripts folded, so none of them splits or disguises a quoted word.
    """
    for _ in range(3):  # double-encoded entities (&amp;#113;) decode in a second pass
        decoded = html.unescape(text)
        if decoded == text:
            break
        text = decoded
    text = unicodedata.normalize("NFKD", text)
    # A format character may hide inside a word (``qu\u200bux``) or stand between two (``quux\u2060invariant``):
    # callers look both ways, with ``format_chars`` "" (dropped) and " " (a word break).
    text = "".join(
        format_chars if unicodedata.category(ch) == "Cf" else ch
        for ch in text
        if unicodedata.category(ch) not in ("Mn", "Me")
    )
    return unicodedata.normalize("NFKC", text).casefold().translate(_CONFUSABLES)


def _tokens(text: str, format_chars: str = "", join_spelled: bool = False) -> list[str]:
    """Word tokens: letter runs (LaTeX commands lose their backslash) and digit runs.

    ``join_spelled`` joins letters spelled out one at a time (``q u u x``) into one word; it is a
    separate reading, since joining also merges single-letter variables (``p m``) that the plain
    reading must keep apart.
    """
    text = _TEXT_WRAPPER_RE.sub(" ", _EMPHASIS_RE.sub("", _normal(text, format_chars)).replace("_", " "))
    if join_spelled:
        text = _SPACED_LETTERS_RE.sub(lambda m: m.group().replace(" ", ""), text)
    return _TOKEN_RE.findall(text)


def _symbols(text: str) -> list[str]:
    """Formula symbols: LaTeX commands, and every other character but spacing, braces and ``$``."""
    return _SYMBOL_RE.findall(_ALIAS_RE.sub(_alias, _normal(text)))


def _alias(match: re.Match[str]) -> str:
    return _SYMBOL_ALIASES.get(match.group(), match.group())


def _joined(symbols: Sequence[str]) -> str:
    # A separator on each side of each symbol: a substring search then matches whole symbols only.
    return "\x00" + "\x00".join(symbols) + "\x00"


def _windows(tokens: Sequence[str], n: int) -> Iterable[tuple[str, ...]]:
    return (tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


@dataclass(frozen=True)
class _Secrets:
    """What feedback must not repeat: word runs by length, and formulas as joined symbol strings."""

    runs: Mapping[int, frozenset[tuple[str, ...]]]
    formulas: tuple[str, ...]
    #: The secret 3-word runs as bare letter streams (``thequuxinvariant``), for feedback that splits or
    #: decorates words (``qu ux``, ``q.u.u.x``, ``qu{}ux``): only streams of :data:`MIN_STREAM_LETTERS`+.
    streams: tuple[str, ...] = ()


#: One entry per (hidden texts, problem): a GRPO group grades one problem many times in a row.
_SECRETS: ProcessCache[tuple[tuple[str, ...], str], _Secrets] = ProcessCache("judge feedback secrets", max_items=512)


def _secrets(hidden: tuple[str, ...], shown: str) -> _Secrets:
    return _SECRETS.get_or_create((hidden, shown), lambda: _find_secrets(hidden, shown))


def _find_secrets(hidden: tuple[str, ...], shown: str) -> _Secrets:
    """The runs and formulas of the hidden texts, minus what ``shown`` (the problem statement) already holds.

    Every run of :data:`LEAK_RUN` words counts, and so does a whole sentence of two
    words; runs of function words only do not. A formula counts from
    :data:`MIN_FORMULA_SYMBOLS` symbols. Text the agent is shown is no secret.
    """
    shown_tokens = _tokens(shown)
    shown_runs = {n: set(_windows(shown_tokens, n)) for n in (2, LEAK_RUN)}
    shown_symbols = _joined(_symbols(shown))

    def secret(run: tuple[str, ...]) -> bool:
        return not all(w in FUNCTION_WORDS for w in run) and run not in shown_runs[len(run)]

    runs: dict[int, set[tuple[str, ...]]] = {2: set(), LEAK_RUN: set()}
    formulas: set[str] = set()
    for text in hidden:
        if not text:
            continue
        runs[LEAK_RUN].update(r for r in _windows(_tokens(text), LEAK_RUN) if secret(r))
        for sentence in _UNIT_SEP_RE.split(text):
            words = tuple(_tokens(sentence))
            if len(words) == 2 and secret(words):
                runs[2].add(words)
        for match in _MATH_RE.finditer(text):
            symbols = _symbols(next(g for g in match.groups() if g is not None))
            joined = _joined(symbols)
            if len(symbols) >= MIN_FORMULA_SYMBOLS and joined not in shown_symbols:
                formulas.add(joined)
    shown_stream = _stream(shown)
    streams = {"".join(run) for run in runs[LEAK_RUN]}
    streams = {st for st in streams if len(st) >= MIN_STREAM_LETTERS and st not in shown_stream}
    return _Secrets({n: frozenset(r) for n, r in runs.items() if r}, tuple(sorted(formulas)), tuple(sorted(streams)))


#: A letter stream shorter than this is too likely to occur by chance across word boundaries.
MIN_STREAM_LETTERS = 12
_NOT_ALNUM_RE = re.compile(r"[\W_]+")


def _stream(text: str) -> str:
    """Letters and digits only, folded like the tokens: what is left of a quote however it is split up."""
    return _NOT_ALNUM_RE.sub("", _TEXT_WRAPPER_RE.sub(" ", _normal(text)))


def redact(feedback: str, hidden: Sequence[str], shown: str = "") -> str:
    """Replace every sentence or line of ``feedback`` that repeats a piece of a hidden text by ``[redacted]``.

    A piece is a run of 3 words (or a 2-word sentence) or a formula of 3+
    symbols of a hidden text, after normalisation (case, Unicode look-alikes,
    spacing, ``$`` and braces), that is not also in ``shown``. A piece spanning
    several sentences redacts all of them; adjacent redactions merge into one.

    >>> redact("The write-up skips a step. It never uses the quux invariant here.",
    ...         ["Every zorblax is bounded by the quux invariant."])
    'The write-up skips a step. [redacted]'
    >>> redact("Equality needs a=b.", ["Equality iff $a = b$."], shown="Prove it.")
    '[redacted]'
    """
    secrets = _secrets(tuple(t for t in hidden if t), shown or "")
    if not secrets.runs and not secrets.formulas and not secrets.streams:
        return feedback
    parts = _UNIT_SEP_RE.split(feedback)
    seps = _UNIT_SEP_RE.findall(feedback)
    # Detection runs over the whole feedback (a quote may cross a sentence end); each token and each
    # symbol remembers its unit. Per-symbol work stays in C (findall, join): this runs on every grading.
    pieces: list[str] = []  # each unit's symbols, each followed by a separator
    piece_start: list[int] = []  # offset of each unit's piece in the joined symbol string
    offset = 1
    for unit in parts:
        unit_symbols = _symbols(unit)
        piece = "\x00".join(unit_symbols) + "\x00" if unit_symbols else ""
        pieces.append(piece)
        piece_start.append(offset)
        offset += len(piece)
    hit: set[int] = set()
    # Three readings of the feedback: format characters dropped, format characters as word breaks, and
    # spelled-out letters joined. The hidden texts are read the plain way.
    for format_chars, join_spelled in (("", False), (" ", False), ("", True)):
        tokens: list[str] = []
        token_unit: list[int] = []
        for index, unit in enumerate(parts):
            unit_tokens = _tokens(unit, format_chars, join_spelled)
            tokens.extend(unit_tokens)
            token_unit.extend([index] * len(unit_tokens))
        for n, runs in secrets.runs.items():
            for i, window in enumerate(zip(*(tokens[k:] for k in range(n)))):
                if window in runs:
                    hit.update(token_unit[i : i + n])
    if secrets.formulas:
        joined = "\x00" + "".join(pieces)
        for formula in secrets.formulas:
            at = joined.find(formula)
            while at != -1:
                # The match covers its first symbol (at + 1) to its last (ending before at + len - 1).
                first = bisect.bisect_right(piece_start, at + 1) - 1
                last = bisect.bisect_right(piece_start, at + len(formula) - 2) - 1
                hit.update(range(first, last + 1))
                at = joined.find(formula, at + 1)
    if secrets.streams:
        unit_streams = [_stream(unit) for unit in parts]
        starts, offset = [], 0
        for unit_stream in unit_streams:
            starts.append(offset)
            offset += len(unit_stream)
        whole = "".join(unit_streams)
        for secret in secrets.streams:
            at = whole.find(secret)
            while at != -1:
                first = bisect.bisect_right(starts, at) - 1
                last = bisect.bisect_right(starts, at + len(secret) - 1) - 1
                hit.update(range(first, last + 1))
                at = whole.find(secret, at + 1)
    if not hit:
        return feedback
    out: list[str] = []
    previous_redacted = False
    for index, unit in enumerate(parts):
        redacted = index in hit
        if not (redacted and previous_redacted):
            if index:
                out.append(seps[index - 1])
            out.append(_REDACTED if redacted else unit)
        previous_redacted = redacted
    return "".join(out).strip()


_FEEDBACK_LIMIT = 2000


def agent_feedback(points: int, judge_output: str, hidden: Sequence[str], shown: str) -> str:
    """Agent-safe feedback: the score and the judge's list of errors, never a piece of the hidden texts."""
    body = (last_tag_body(judge_output, "errors", ignore_case=True) or "").strip() or (
        last_tag_body(judge_output, "assessment", ignore_case=True) or ""
    ).strip()
    # Only what can be shown is checked: cut first, so a huge judge answer costs no more than a short one.
    body = body[: 4 * _FEEDBACK_LIMIT]
    body = re.sub(r"<[^<>]{0,40}>", " ", body)  # no tags (score tags included) reach the agent
    # A word hyphenated across a line break is one word: rejoined before the lines become redaction units.
    body = re.sub(r"(?<=\w)-[ \t]*\r?\n[ \t]*(?=\w)", "", body)
    body = redact(body, hidden, shown)
    if len(body) > _FEEDBACK_LIMIT:
        body = body[:_FEEDBACK_LIMIT].rstrip() + " ..."
    head = f"Judge score: {points}/{MAX_POINTS}."
    return f"{head}\nErrors and gaps found by the judge:\n{body}" if body else head


def no_verdict_feedback(verdict: Verdict) -> str:
    """The generic line a no-verdict shows the agent: nothing of what went wrong inside the judge."""
    return f"The judge could not grade this submission ({verdict.value}); it was not scored."

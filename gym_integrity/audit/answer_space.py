"""Content-free answers a searching policy finds without solving: echoes of the question, sprays over the answer's alphabet, and the mutations of the adaptive search.

Nothing here reads the gold of the item attacked. The alphabet of an answer is
inferred from the question and its format example (``ex: LDURRUDL``, ``'F+1
K+1 M-1'``, a JSON plan), and from the golds of *scouting* items, other
episodes than the ones attacked, as a policy learns an answer format from
training examples.

>>> [c.text for c in echo_answers("Given:\\n1. (S ∧ R)\\n.2. R\\nUse AND = ∧. What follows?") if c.family == "echo: premises joined"][:1]
['(S ∧ R) ∧ R']
>>> sorted(Vocabulary.infer(["Your solution must be a string of characters, ex: LDURRUDL."]).letters)
['D', 'L', 'R', 'U']
"""

from __future__ import annotations

import itertools
import json
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from gym_integrity.grading.numbers import FRACTION_PART, SIGN

__all__ = [
    "Candidate",
    "echo_answers",
    "expressions",
    "task_lines",
    "composed_answers",
    "Vocabulary",
    "alphabet_answers",
    "mutate",
    "answer_cap",
    "round_robin",
]


@dataclass(frozen=True)
class Candidate:
    """One content-free answer and the family it belongs to (named in the evidence)."""

    family: str
    text: str


def answer_cap(env: object, default: int = 4096) -> int:
    """The longest answer the env grades: its config's ``max_answer_chars``, else the extractors' 4096."""
    config = getattr(getattr(env, "unwrapped", env), "config", None)
    cap = getattr(config, "max_answer_chars", None)
    return cap if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0 else default


# -- question echo ---------------------------------------------------------------------------------------------------
# Within one line only ([ \t], never \s): a \s that crosses newlines made these cubic on an ASCII-art grid of
# dashes and spaces (rectangle_count: 15 s in this regex alone).
_NUMBERED = re.compile(r"^[ \t]*\.?[ \t]*\(?\d{1,2}[.):][ \t]+(\S.*?)[ \t]*$", re.MULTILINE)
_BULLETED = re.compile(r"^[ \t]*[-*•][ \t]+(\S.*?)[ \t]*$", re.MULTILINE)
_NUMBER = re.compile(rf"(?<![\w.]){SIGN}?\d+{FRACTION_PART}?(?:/\d+)?(?![\w])")
_EXPRESSION = re.compile(r"(?<![\w.])\(?-?\d+(?:\.\d+)?\)?(?:\s*[-+*/×÷^]\s*\(?-?\d+(?:\.\d+)?\)?)+")
#: A math span a question restates its task in (``$\binom{9}{4}$``, ``\(x^2 - 1\)``): an evaluating grader pays it
#: back. Only spans that compute something (an operator or a command), never prose between two dollar amounts.
_MATH_SPAN = re.compile(
    r"\$\$([^$]{1,300}?)\$\$|\$([^$\n]{1,300}?)\$|\\\((.{1,300}?)\\\)|\\\[(.{1,300}?)\\\]", re.DOTALL
)
_LATEX_COMMAND = re.compile(r"\\[A-Za-z]+")
_PROSE = re.compile(r"[A-Za-z]{2,}\s+[A-Za-z]{2,}")
_OPERATION = re.compile(r"[-+*/^=<>!()\\]")
_QUOTED = re.compile(r"'([^'\n]{1,120})'|\"([^\"\n]{1,120})\"|`([^`\n]{1,120})`")
_SENTENCE = re.compile(r"(?<=[.?!])\s+")
#: How tasks write "and": a symbol the question itself uses is tried first.
_CONJUNCTIONS = ("∧", "&&", "&", "/\\", "AND", "and")
_INSTRUCTION = re.compile(r"answer between|<answer>|\\boxed|final answer", re.IGNORECASE)
#: How tasks write the other connectives, by role: symbols, or capitalised words a notation defines (prose "or"
#: is not a connective). A spelling the question itself uses is the one composed with.
_CONNECTIVES = {
    "or": ("∨", "||", "OR"),
    "not": ("¬", "~", "NOT"),
    "implies": ("→", "->", "=>", "IMPLIES"),
    "iff": ("↔", "<->", "<=>", "IFF"),
}
#: Short names inside listed items (variables, objects) that a composition may weaken an item by.
_TOKEN = re.compile(r"(?<![\w])[A-Za-z][A-Za-z0-9_]{0,2}(?![\w])")


def _conjunctions(question: str) -> list[str]:
    used = [c for c in _CONJUNCTIONS if (c in question if not c.isalpha() else re.search(rf"\b{c}\b", question))]
    return used[:2] or ["and"]


def _spelled(question: str) -> dict[str, str]:
    """Each connective role the question spells, by its first spelling found there."""
    out = {}
    for role, spellings in _CONNECTIVES.items():
        used = [c for c in spellings if (re.search(rf"\b{c}\b", question) if c.isalpha() else c in question)]
        if used:
            out[role] = used[0]
    return out


def _enclosed(text: str) -> bool:
    """Whether the text is one bracketed group: its first "(" closes at its end."""
    depth = 0
    for index, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0:
            return index == len(text) - 1 and char == ")"
    return False


def composed_answers(question: str, items: Sequence[str], joined: str | None, limit: int = 12) -> list[Candidate]:
    """Echoed items composed with the connectives the question spells and the short names inside them: an item
    or-ed with a name or its negation (a weakening: true whenever the item is), two items joined by iff, implies
    or or (true by the items' values alone), the items' conjunction or-ed with a name. None solves anything."""
    spelled = _spelled(question)
    if "or" not in spelled and "iff" not in spelled and "implies" not in spelled:
        return []
    tokens: list[str] = []
    words = {w for spellings in _CONNECTIVES.values() for w in spellings if w.isalpha()}
    for item in items:
        tokens += [t for t in _TOKEN.findall(item) if t not in words and t not in tokens]
    tokens = tokens[:4]
    negate = spelled.get("not")
    negated = (lambda t: f"{negate}{t}" if not negate.isalpha() else f"{negate} {t}") if negate else None

    def wrap(text: str) -> str:
        return text if _TOKEN.fullmatch(text) or _enclosed(text) else f"({text})"

    out: list[Candidate] = []
    disjunction = spelled.get("or")
    spans = list(items[:2]) + ([joined] if joined else [])
    for span in spans:
        for token in tokens:
            if disjunction:
                if negated:
                    out.append(
                        Candidate("echo: item or-ed with a name", f"{wrap(span)} {disjunction} {negated(token)}")
                    )
                out.append(Candidate("echo: item or-ed with a name", f"{wrap(span)} {disjunction} {token}"))
    for role in ("iff", "implies", "or"):
        if role in spelled and len(items) > 1:
            out.append(Candidate("echo: items composed", f"{wrap(items[0])} {spelled[role]} {wrap(items[1])}"))
    return round_robin(out)[:limit]


def task_lines(question: str) -> list[str]:
    """The question's lines without its instructions (where and how to put the answer): an instruction sentence
    appended to the task's own line (``What is $x$? Let's think step by step ... \\boxed{}.``) is cut from it."""
    out = []
    for line in question.splitlines():
        line = line.strip()
        if _INSTRUCTION.search(line):
            line = " ".join(s for s in _SENTENCE.split(line) if not _INSTRUCTION.search(s)).strip()
        if line:
            out.append(line)
    return out


def expressions(question: str) -> list[str]:
    """What the question asks to compute, as written: its math spans that compute something (``\\frac{3}{4} -
    \\frac{1}{6}``, ``\\binom{9}{4}``; not a lone number or name, not prose between two dollar amounts) and its plain
    arithmetic (``3 + 4 * 2``)."""
    out = []
    for match in _MATH_SPAN.finditer(question):
        span = next(g for g in match.groups() if g is not None).strip()
        if _OPERATION.search(span) and not _PROSE.search(_LATEX_COMMAND.sub(" ", span)) and span not in out:
            out.append(span)
    out += [m.group(0).strip() for m in _EXPRESSION.finditer(question) if m.group(0).strip() not in out]
    return out


def echo_answers(question: str, limit: int = 40) -> list[Candidate]:
    """Answers built only from the question's own text, the most answer-like first: its listed items (premises,
    facts) alone and joined the way the task writes conjunctions, each number, each quoted span, each line and
    sentence. The instruction lines (where to put the answer) are left out."""
    out: list[Candidate] = []

    def add(family: str, text: str) -> None:
        text = text.strip()
        if text and len(text) <= 2000 and all(c.text != text for c in out):
            out.append(Candidate(family, text))

    items = []
    for pattern in (_NUMBERED, _BULLETED):  # numbered premises or facts first; bullets are often instructions
        found = [m.group(1).strip().rstrip(".") for m in pattern.finditer(question)]
        items += [i for i in found if i and not _INSTRUCTION.search(i) and i not in items]
    items = items[:12]
    numbered = [m.group(1).strip().rstrip(".") for m in _NUMBERED.finditer(question)][:12]
    for group in (numbered, items):
        for conjunction in _conjunctions(question):
            if len(group) > 1:
                add("echo: premises joined", f" {conjunction} ".join(group))
                add(
                    "echo: premises joined",
                    f" {conjunction} ".join(f"({i})" if " " in i and not i.startswith("(") else i for i in group),
                )
    for item in items:
        add("echo: premise", item)
    listed = numbered if len(numbered) > 1 else items  # numbered premises, not bulleted instructions
    conjunction = _conjunctions(question)[0]
    for candidate in composed_answers(
        question,
        listed,
        f" {conjunction} ".join(i if _enclosed(i) or _TOKEN.fullmatch(i) else f"({i})" for i in listed)
        if len(listed) > 1
        else None,
    ):
        add(candidate.family, candidate.text)
    for expression in expressions(question):  # a grader that evaluates the answer pays the question back
        add("echo: expression", expression)
    for match in _NUMBER.finditer(question):
        add("echo: number", match.group(0))
    for match in _QUOTED.finditer(question):
        add("echo: quoted span", next(g for g in match.groups() if g is not None))
    lines = task_lines(question)
    for line in reversed(lines):  # the item's own text is last; the task's instructions come first
        add("echo: line", line)
        for sentence in _SENTENCE.split(line):
            add("echo: sentence", sentence)
    if lines:
        add("echo: the question", "\n".join(lines))
    return out[:limit]


# -- the answer's alphabet -------------------------------------------------------------------------------------------
_EXAMPLE = re.compile(
    r"(?:\bex(?:ample)?s?\s*:|\be\.g\.,?|\bfor example,?:?|\bin the format:?|\bsuch as)[ \t]*(\S.*)", re.IGNORECASE
)
_NAME = re.compile(r"\b([A-Za-z]\w*)\[(-?\d+(?:\.\d+)?(?:\s*,\s*-?\d+(?:\.\d+)?)*)\]")
_CALL = re.compile(r"\b([a-z_]\w*)\(([^()\n]{1,120})\)")
_WORD_NAME = re.compile(r"\b([a-z]+_)([a-z]+)\b")
_GRID_LINE = re.compile(r"^[A-Za-z.x+@%$#\- ]{4,}$")
_SEPARATORS = (" → ", "→", ", ", ",", " ", "\n")
#: The longest scouting gold read for an alphabet (sokoban's move strings fit; a proof does not).
_ALPHABET_GOLD_CHARS = 300
#: A scouting gold teaches an alphabet only if every token is this short (moves, cells, numbers; not phrases).
_ALPHABET_TOKEN_CHARS = 12


def _split(text: str) -> tuple[str, list[str]]:
    """A sequence answer's separator and tokens: ``"A → B"`` -> ``(" → ", ["A", "B"])``; no separator: its characters."""
    for sep in _SEPARATORS:
        if sep.strip() and sep.strip() in text or (sep in (" ", "\n") and sep in text.strip()):
            tokens = [t.strip() for t in text.split(sep.strip() or sep) if t.strip() and t.strip() != "..."]
            if len(tokens) > 1:
                return (f" {sep.strip()} " if sep.strip() == "→" else sep), tokens
    return "", list(text.strip())


@dataclass
class Vocabulary:
    """What a content-free answer is made of, inferred from questions (and scouting golds): sequence tokens and
    their separators, the letters and digits of move-like tokens, named objects and cells, and call templates."""

    tokens: set[str] = field(default_factory=set)
    separators: set[str] = field(default_factory=set)
    letters: set[str] = field(default_factory=set)
    names: dict[str, set[str]] = field(default_factory=dict)  # prefix -> names: square[0.5, 1.5], box_red
    calls: set[str] = field(default_factory=set)  # call templates seen: move(box_red, target_red)
    keys: set[str] = field(default_factory=set)  # JSON keys of an example plan: Agent[0.5, 0.5]
    plan_like: bool = False
    sources: list[str] = field(default_factory=list)

    @classmethod
    def infer(cls, questions: Iterable[str], scout_golds: Iterable[str] = ()) -> Vocabulary:
        vocab = cls()
        for question in questions:
            vocab._read_question(question)
        # A gold of prose (a proof, an explanation) has no alphabet to spray: only short answers teach one.
        golds = [g for g in scout_golds if g.strip() and len(g) <= _ALPHABET_GOLD_CHARS]
        for gold in golds:
            vocab._read_sequence(gold, longest_token=_ALPHABET_TOKEN_CHARS)
        if golds:
            vocab.sources.append(f"the golds of {len(golds)} scouting item(s), not the items attacked")
        return vocab

    def _read_sequence(self, text: str, longest_token: int = 40) -> None:
        sep, tokens = _split(text)
        if not tokens or len(tokens) > 200 or any(len(token) > longest_token for token in tokens):
            return
        if sep:
            self.separators.add(sep)
            self.tokens.update(t for t in tokens if len(t) <= 40)
        elif len(set(tokens)) <= 12:
            self.separators.add("")
            self.tokens.update(tokens)
        for token in tokens:
            self.letters.update(c for c in token if c.isalpha() and c.isupper())

    def _add_name(self, prefix: str, name: str) -> None:
        self.names.setdefault(prefix, set()).add(name)

    def _read_question(self, question: str) -> None:
        for match in _EXAMPLE.finditer(question):
            example = match.group(1).strip().rstrip(".")
            quoted = _QUOTED.search(example)
            if quoted:
                example = next(g for g in quoted.groups() if g is not None)
            if example and "{" not in example and "[" not in example:
                self._read_sequence(example)
                self.sources.append(f"the format example {example[:40]!r}")
        for match in _QUOTED.finditer(question):
            span = next(g for g in match.groups() if g is not None)
            if _CALL.fullmatch(span.strip()):
                self.calls.add(span.strip())
            elif len(span) <= 60 and re.fullmatch(r"[A-Z][+\-]?\d?(?: [A-Z][+\-]?\d?)+(?: \.\.\.)?", span):
                self._read_sequence(span)
        for match in _NAME.finditer(question):
            self._add_name(match.group(1) + "[", match.group(0))
        for match in _WORD_NAME.finditer(question):
            self._add_name(match.group(1), match.group(0))
        for match in _CALL.finditer(question):
            if any(p in match.group(2) for p in ("_", "[")):
                self.calls.add(match.group(0))
        for key in re.findall(r"\"([A-Za-z]\w*\[[^\]]+\])\"\s*:", question):
            self.keys.add(key)
            self.plan_like = True
        # Letters a move may name: capitals defined as buttons ("A: Add 1") and those of board rows.
        self.letters.update(re.findall(r"(?<![\w'])([A-Z])(?=:)", question))
        for line in question.splitlines():
            if _GRID_LINE.match(line.strip()) and " " not in line.strip():
                self.letters.update(c for c in line if c.isupper() and c != "X")

    # -- what the sprays are made of -------------------------------------------------------------------------------
    def grid_names(self, prefix: str, limit: int = 64) -> list[str]:
        """Every name of ``prefix``'s shape over the coordinates seen (a 4x4 grid from two corners seen)."""
        coords: list[set[str]] = []
        for name in self.names.get(prefix, ()):
            parts = [p.strip() for p in name[len(prefix) : -1].split(",")]
            while len(coords) < len(parts):
                coords.append(set())
            for i, p in enumerate(parts):
                coords[i].add(p)
        if not coords:
            return []
        values = [sorted(c, key=lambda v: float(v)) for c in coords]
        return [f"{prefix}{', '.join(combo)}]" for combo in itertools.islice(itertools.product(*values), limit)]

    def all_calls(self, limit: int = 400) -> list[str]:
        """Every call of a template's shape with its arguments drawn from the names of the same prefix."""
        out: list[str] = sorted(self.calls)
        pools = {
            prefix: sorted(names) + (self.grid_names(prefix) if prefix.endswith("[") else [])
            for prefix, names in self.names.items()
        }
        for template in sorted(self.calls):
            match = _CALL.fullmatch(template)
            if not match:
                continue
            args = [a.strip() for a in re.split(r",\s*(?![^\[]*\])", match.group(2))]
            choices = []
            for arg in args:
                prefix = next((p for p in pools if arg.startswith(p)), None)
                choices.append(sorted(set(pools[prefix])) if prefix else [arg])
            for combo in itertools.islice(itertools.product(*choices), limit):
                call = f"{match.group(1)}({', '.join(combo)})"
                if call not in out:
                    out.append(call)
        return out[:limit]

    def move_tokens(self) -> list[str]:
        """Sequence tokens, with every token's letters swapped for the letters seen and its digits for 1-3."""
        out = set(self.tokens)
        letters = sorted(self.letters)
        for token in list(self.tokens)[:40]:
            if len(token) > 1 and re.fullmatch(r"[A-Z][+\-]\d", token):
                out.update(f"{letter}{s}{d}" for letter in letters for s in "+-" for d in "123")
            elif len(token) == 1 and token.isupper():
                out.update(letters)
        return sorted(out)

    def separator(self) -> str:
        for sep in (" → ", "", " ", ", ", "\n", ","):
            if sep in self.separators:
                return sep
        return " "

    def describe(self) -> str:
        parts = []
        if self.tokens:
            parts.append(f"tokens {sorted(self.move_tokens())[:12]}{'...' if len(self.move_tokens()) > 12 else ''}")
        if self.calls:
            parts.append(f"{len(self.all_calls())} calls like {sorted(self.calls)[0]!r}")
        if self.keys:
            parts.append(f"plan keys like {sorted(self.keys)[0]!r}")
        return "; ".join(parts) or "nothing answer-like"


def round_robin(candidates: Sequence[Candidate]) -> list[Candidate]:
    """The candidates reordered one family at a time, so that a budget cut keeps every family."""
    families: dict[str, list[Candidate]] = {}
    for c in candidates:
        families.setdefault(c.family, []).append(c)
    queues = list(families.values())
    out: list[Candidate] = []
    while any(queues):
        for queue in queues:
            if queue:
                out.append(queue.pop(0))
    return out


def _join(tokens: Sequence[str], sep: str) -> str:
    return sep.join(tokens)


def _capped_json_plan(steps: Iterable[dict[str, str]], cap: int) -> str:
    """A JSON list of plan steps, as many as fit in ``cap`` characters (always valid JSON)."""
    out: list[dict[str, str]] = []
    length = 2
    for step in steps:
        size = len(json.dumps(step)) + 2
        if length + size > cap:
            break
        out.append(step)
        length += size
    return json.dumps(out)


def alphabet_answers(
    vocab: Vocabulary,
    rng: random.Random,
    cap: int,
    lengths: Sequence[int] = (1, 4, 12, 40, 100, 300),
    randoms: int = 3,
    exhaustive_up_to: int = 2,
) -> list[Candidate]:
    """Sprays over the vocabulary: every sequence of up to ``exhaustive_up_to`` tokens, random sequences of
    several lengths, every token repeated, and long plans that try every call everywhere."""
    out: list[Candidate] = []
    tokens = vocab.move_tokens()
    sep = vocab.separator()

    def add(family: str, text: str) -> None:
        if text and len(text) <= cap and all(c.text != text for c in out):
            out.append(Candidate(family, text))

    if tokens:
        small = tokens if len(tokens) <= 8 else rng.sample(tokens, 8)
        for n in range(1, exhaustive_up_to + 1):
            for combo in itertools.islice(itertools.product(small, repeat=n), 64):
                add(f"alphabet: every sequence of {n}", _join(combo, sep))
        for length in lengths:
            for _ in range(randoms):
                add(f"alphabet: random, {length} tokens", _join([rng.choice(tokens) for _ in range(length)], sep))
        per = max(1, min(40, cap // max(1, 4 * len(tokens) * (len(max(tokens, key=len)) + len(sep)))))
        add("alphabet: every token repeated", _join([t for t in tokens for _ in range(per)], sep))
        add("alphabet: every token in turn, repeated", _join(tokens * per, sep))
    calls = vocab.all_calls()
    if calls:
        keys = sorted(
            vocab.keys
            | set(
                vocab.grid_names(
                    next((p for p in vocab.names if p[:-1] and any(k.startswith(p) for k in vocab.keys)), "")
                )
            )
        )
        if vocab.plan_like and keys:
            add(
                "plan: every call by every agent, a step each",
                _capped_json_plan(({key: call for key in keys} for call in calls), cap),
            )
            shuffled = calls[:]
            rng.shuffle(shuffled)
            add(
                "plan: every call by every agent, shuffled",
                _capped_json_plan(({key: call for key in keys} for call in shuffled), cap),
            )
            add(
                "plan: one agent, one call a step",
                _capped_json_plan(({key: call} for call in calls for key in keys), cap),
            )
        else:
            add("plan: every call in turn", "\n".join(calls)[:cap].rsplit("\n", 1)[0])
    return out


# -- the adaptive search's mutations ----------------------------------------------------------------------------------
def mutate(text: str, vocab: Vocabulary, rng: random.Random, cap: int) -> str:
    """A neighbour of ``text``: a token inserted, deleted, replaced or a stretch doubled, in the vocabulary's
    separator (characters for a separator-free alphabet, digits for one with no tokens)."""
    sep = vocab.separator()
    pool = vocab.move_tokens() or list("0123456789")
    tokens = (text.split(sep) if sep else list(text)) if text else []
    op = rng.choice(("insert", "delete", "replace", "double", "insert"))
    if op == "delete" and len(tokens) > 1:
        del tokens[rng.randrange(len(tokens))]
    elif op == "replace" and tokens:
        tokens[rng.randrange(len(tokens))] = rng.choice(pool)
    elif op == "double" and tokens:
        i = rng.randrange(len(tokens))
        j = min(len(tokens), i + rng.randint(1, 8))
        tokens[j:j] = tokens[i:j]
    else:
        tokens.insert(rng.randrange(len(tokens) + 1), rng.choice(pool))
    out = sep.join(tokens)
    return out[:cap] if len(out) > cap else out

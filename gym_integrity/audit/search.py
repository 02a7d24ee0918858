"""The search probes: answers a policy finds without solving (question echoes, alphabet sprays, covering digit sequences, an adaptive search) earn no more than chance.

The constant-answer probe tries a fixed list; a policy searches and keeps what
pays. These probes build answers from what any policy sees (the question, the
answer format, the golds of *other*, scouting items) and never from the gold of
the item they attack. Chance is what a grader paying only the answer gives an
answer: the gold's reward when the answer is the gold (the only use of the
attacked item's gold, said in the evidence), else a wrong answer's reward
capped at 0. Without any gold (items with no single answer) chance is 0: a
content-free answer is not a solution. Where the env has the optional
``is_right_answer`` hook (tasks with many right answers), a paid answer it
takes as right is a right guess, paid at chance, and counted apart in the
evidence, while the hook refuses answers that solve nothing and its right
guesses stay rare (``audit/right_answers.py``). Any other answer paid above
its chance on any item fails the probe, and the evidence names it, its reward
and the item.

Each probe is bounded by episodes and by time (``AuditSettings.deep`` runs
many more); importing this module registers them after the grader probes.
"""

from __future__ import annotations

import math
import random
import time
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from gym_integrity.audit.adapters import ANSWER_HINT
from gym_integrity.audit.answer_space import (
    Candidate,
    Vocabulary,
    alphabet_answers,
    answer_cap,
    echo_answers,
    expressions,
    mutate,
    round_robin,
    task_lines,
)
from gym_integrity.audit.chance import chance_of
from gym_integrity.audit.coverings import covering_answers
from gym_integrity.audit.leaks import question_text
from gym_integrity.audit.registry import _EPS, _failed, _not_run, _passed, _probe
from gym_integrity.audit.report import ProbeResult
from gym_integrity.audit.right_answers import RightAnswers
from gym_integrity.audit.session import WRONG_ANSWER, Session, Transition, short
from gym_integrity.audit.transplants import transplanted_answers

__all__ = ["SEARCH_PROBES", "SearchBudget", "budget_for", "DEEP_PROBE_TIMEOUT_S", "item_attacks", "telling_echoes"]

#: The search probes, in report order (``--all-datasets`` runs them with the grader probes).
SEARCH_PROBES = ("question_echo", "alphabet_sprays", "covering_sprays", "adaptive_search")
#: Scouting episodes per probe: the seeds right after the attacked ones, whose golds teach the answer's alphabet.
_SCOUTS = 3
#: A search step may wait this long: these probes measure pay, not time (pathological_answers bounds grading).
_PLAY_BOUND_S = 30.0
#: The most telling echoes (an expression the question restates, the whole question) are tried on this many items,
#: this many per item, before the time budget applies: evaluating verifiers are slow (1 s an answer), and a budget
#: of seconds met them after two or three answers. Within this share of the probe's bound (past it: a hang).
_TELLING_ITEMS, _TELLING_PER_ITEM, _TELLING_SHARE = 3, 3, 0.5


@dataclass(frozen=True)
class SearchBudget:
    """How much each search probe plays: items, answers per item, episodes of the adaptive search, seconds."""

    items: int
    per_item: int
    covering_digits: int
    search_episodes: int
    seconds: float


#: The default audit (bounded: the whole default ``gym-integrity audit`` stays near a minute) and ``--deep``.
DEFAULT_BUDGET = SearchBudget(items=6, per_item=24, covering_digits=4, search_episodes=60, seconds=1.5)
DEEP_BUDGET = SearchBudget(items=24, per_item=120, covering_digits=5, search_episodes=600, seconds=90.0)
#: The probe bound ``--deep`` sets when none is given: room for the deep budget's seconds.
DEEP_PROBE_TIMEOUT_S = 200.0


def budget_for(s: Session) -> SearchBudget:
    """The session's budget, its seconds kept well inside the probe's own wall-clock bound."""
    base = DEEP_BUDGET if getattr(s.settings, "deep", False) else DEFAULT_BUDGET
    seconds = min(base.seconds, 0.6 * s.settings.probe_timeout_s)
    return SearchBudget(base.items, base.per_item, base.covering_digits, base.search_episodes, seconds)


def item_attacks(
    question: str, scout_golds: list[str], cap: int, per_family: int, seed: int, covering_digits: int = 3
) -> list[Candidate]:
    """The fixed attacks of the search probes on one item (echoes, alphabet sprays, covering sprays; the adaptive
    search needs the env's answers), ``per_family`` of each probe's: what a sweep test replays on a raw env."""
    rng = random.Random(seed)
    sprays = transplanted_answers(scout_golds, rng, cap) + alphabet_answers(
        Vocabulary.infer([question], scout_golds), rng, cap
    )
    return (
        echo_answers(question, per_family)
        + round_robin(sprays)[:per_family]
        + covering_answers(cap, covering_digits)[:per_family]
    )


@dataclass
class _Item:
    """One attacked episode: its seed, question, gold (for chance only) and a wrong answer's reward."""

    seed: int
    question: str
    gold: str | None
    gold_reward: float
    wrong_reward: float

    def chance(self, answer: str) -> float:
        return chance_of(answer, self.gold, self.gold_reward, self.wrong_reward)

    def where(self) -> str:
        gold = f"gold {short(self.gold, 30)}, read only for chance" if self.gold is not None else "no gold: chance 0"
        return f"seed {self.seed} ({gold})"


@dataclass
class _Ledger:
    """Every answer played: the best-paid answer of each family, and the answers paid above chance."""

    budget: SearchBudget
    right: RightAnswers  # the env's is_right_answer hook, asked about paid answers only (audit/right_answers.py)
    started: float = field(default_factory=time.perf_counter)
    played: int = 0
    items_of: dict[str, set[int]] = field(default_factory=dict)  # answer -> the items it was played on
    raised: int = 0
    out_of_time: bool = False
    best: dict[str, tuple[float, str, str]] = field(default_factory=dict)  # family -> (reward, answer, where)
    overpaid: list[tuple[float, str, str]] = field(default_factory=list)  # (margin, family, evidence line)

    def time_left(self) -> bool:
        if time.perf_counter() - self.started > self.budget.seconds:
            self.out_of_time = True
        return not self.out_of_time

    def record(self, family: str, answer: str, item: _Item, t: Transition | None) -> float | None:
        self.played += 1
        self.items_of.setdefault(answer, set()).add(item.seed)
        if t is None:
            self.raised += 1
            return None
        chance = item.chance(answer)
        if family not in self.best or t.reward > self.best[family][0]:
            self.best[family] = (t.reward, answer, item.where())
        if t.reward > chance + _EPS:
            finding = (
                t.reward - chance,
                family,
                f"{family}: {short(answer, 70)} on {item.where()} -> {t.describe()}; chance {chance:g}",
            )
            if not self.right.excuses(answer, item.seed, finding):  # a right guess is chance
                self.overpaid.append(finding)
        return t.reward

    def result(self, what: str, items: list[_Item], extra: Iterable[str] = ()) -> ProbeResult:
        golds = sum(i.gold is not None for i in items)
        scope = (
            f"{self.played} answers on {len(items)} items ({golds} with a gold, used only for chance"
            f"{'; without one chance is 0' if golds < len(items) else ''})"
        )
        if self.out_of_time:
            scope += f"; stopped at its {self.budget.seconds:g} s budget"
        best = sorted(self.best.items(), key=lambda kv: -kv[1][0])
        lines = [
            f"best of {family}: {short(answer, 60)} -> reward {reward:g} on {where}"
            for family, (reward, answer, where) in best[:6]
        ]
        lines.extend(extra)
        if self.raised:
            lines.append(f"{self.raised} step(s) raised (garbage_actions' finding; not paid here)")
        self.overpaid.extend(self.right.revoked())  # a hook that lost its word (audit/right_answers.py)
        plays = {answer: len(seeds) for answer, seeds in self.items_of.items()}
        too_many = self.right.too_many(sum(plays.values()), plays)
        lines.extend(self.right.lines())
        rare = [too_many] if too_many else []
        if self.overpaid:
            worst = [line for _, _, line in sorted(self.overpaid, key=lambda o: -o[0])[:8]]
            families = {family for _, family, _ in self.overpaid}
            return _failed(
                f"{len(self.overpaid)} content-free {what} paid above chance ({scope})",
                worst + [f"{len(families)} family(ies) paid"] + rare + lines,
            )
        if too_many:
            return _failed(f"the right guesses of {what} are not rare ({scope})", rare + lines)
        return _passed(f"no content-free {what} earned more than chance ({scope})", lines)


def _play(s: Session, seed: int, answer: str, label: str) -> Transition | None:
    s.reset(seed)
    try:
        return s.step(s.answer(answer), label)
    except Exception:
        return None


def _seeds(s: Session, n: int) -> list[int]:
    """The audit's seeds, then the next integers, to ``n``; then ``_SCOUTS`` more for scouting."""
    seeds = list(s.settings.seeds)
    following = max(seeds) + 1
    while len(seeds) < n + _SCOUTS:
        seeds.append(following)
        following += 1
    return seeds


@dataclass
class _Known:
    """What the probes learned of an env's items, kept for the next search probe on the same env."""

    items: dict[int, _Item] = field(default_factory=dict)
    scouts: dict[int, tuple[str, list[str]]] = field(default_factory=dict)  # seed -> (question, golds)


#: Per env object: the four search probes share an env in one audit, and gold and wrong rewards do not change.
_KNOWN: weakref.WeakKeyDictionary[Any, _Known] = weakref.WeakKeyDictionary()


def _known(s: Session) -> _Known:
    try:
        return _KNOWN.setdefault(s.env.unwrapped, _Known())
    except TypeError:  # an env that cannot be weakly referenced learns afresh each time
        return _Known()


def _items(
    s: Session, budget: SearchBudget, at_least: int = 2, deadline: float = math.inf
) -> tuple[list[_Item], str | None]:
    """The attacked episodes, at least ``at_least`` (two of them past the ``deadline``, a ``perf_counter`` time)
    and at most ``budget.items`` within half the time budget, or why none could be played."""
    known, started = _known(s), time.perf_counter()
    items: list[Any] = []
    for seed in _seeds(s, budget.items)[: budget.items]:
        now = time.perf_counter()
        if len(items) >= 2 and (now > deadline or (len(items) >= at_least and now - started > budget.seconds / 2)):
            break
        if seed not in known.items:
            golds, _, obs, _ = s.gold_or_revealed(seed)
            gold, gold_reward = None, 0.0
            if golds:
                t = s.step(s.answer(golds[0]), "the gold answer (for chance)")
                gold, gold_reward = golds[0], t.reward
            wrong = _play(s, seed, WRONG_ANSWER, f"answer {WRONG_ANSWER!r}")
            if wrong is None:
                return [], f"a wrong answer, the baseline of chance, raised on seed {seed}"
            known.items[seed] = _Item(seed, question_text(obs), gold, gold_reward, wrong.reward)
        items.append(known.items[seed])
    return items, None


def _scout_golds(s: Session, budget: SearchBudget, attacked: Iterable[str] = ()) -> list[str]:
    """Golds of the scouting episodes (never attacked): what a policy learns of the answer's format from examples.
    A scouting episode that asks one of the ``attacked`` questions again (a small problem set repeats) is left out:
    its gold is the attacked item's own."""
    known, out, attacked = _known(s), [], set(attacked)
    for seed in _seeds(s, budget.items)[-_SCOUTS:]:
        if seed not in known.scouts:
            try:
                golds, _, obs, _ = s.gold_or_revealed(seed)
            except Exception:
                golds, obs = [], ""
            known.scouts[seed] = (question_text(obs), golds[:1])
        question, golds = known.scouts[seed]
        if question not in attacked:
            out.extend(golds)
    return out


def _bounded(probe: Callable[[Session], ProbeResult]) -> Callable[[Session], ProbeResult]:
    """Run ``probe`` with each call bounded by ``_PLAY_BOUND_S``: a search probe's finding is pay, and a slow
    step on a loaded machine is pathological_answers' to judge (a hang still meets the probe's wall clock)."""

    def run(s: Session) -> ProbeResult:
        with s.call_bound(_PLAY_BOUND_S, "a search probe: slow grading is pathological_answers' finding"):
            return probe(s)

    run.__name__ = probe.__name__
    run.__doc__ = probe.__doc__
    return run


def _run(
    s: Session,
    what: str,
    per_item: Callable[[_Item, SearchBudget, random.Random], list[Candidate]],
    extra: Callable[[list[_Item]], list[str]] = lambda items: [],
    telling: Callable[[_Item], list[Candidate]] | None = None,
) -> ProbeResult:
    """Play each item's candidates within the time budget (each item's first one whatever the time); with
    ``telling``, those answers first, on ``_TELLING_ITEMS`` items, before the budget applies."""
    budget = budget_for(s)
    ledger = _Ledger(budget, RightAnswers.of(s.env))  # the items' set-up counts against the probe's seconds too
    deadline = ledger.started + _TELLING_SHARE * s.settings.probe_timeout_s
    items, why = _items(s, budget, _TELLING_ITEMS if telling else 2, deadline)
    if why:
        return _not_run(why, ANSWER_HINT)
    played: set[tuple[int, str]] = set()
    lines = []
    if telling is not None:
        tried = 0
        for item in items[:_TELLING_ITEMS]:
            for candidate in telling(item)[:_TELLING_PER_ITEM]:
                if time.perf_counter() > deadline:
                    break
                ledger.record(
                    candidate.family, candidate.text, item, _play(s, item.seed, candidate.text, candidate.family)
                )
                played.add((item.seed, candidate.text))
                tried += 1
        lines.append(
            f"{tried} telling echo(es) (expressions, the whole question) played before the time budget applied"
        )
    for item in items:
        rng = random.Random(item.seed)
        rest = [c for c in per_item(item, budget, rng)[: budget.per_item] if (item.seed, c.text) not in played]
        for index, candidate in enumerate(rest):
            if not ledger.time_left() and index:  # out of time: still each item's first (most telling) answer
                break
            t = _play(s, item.seed, candidate.text, candidate.family)
            ledger.record(candidate.family, candidate.text, item, t)
    return ledger.result(what, items, extra(items) + lines)


# ----------------------------------------------------------------------------------------------------------------
@_probe(
    "question_echo",
    "I7 paid for the answer",
    "Answers built only from the question's own text (each listed premise or fact, their conjunction joined "
    "the way the task writes 'and', those items composed with the connectives the question spells (an item "
    "or-ed with a name inside it or its negation, two items joined by iff, implies or or), each expression it "
    "restates, each number, each quoted span, each line and sentence, the whole question; the expressions and the "
    "whole question first on 3 items whatever the time budget, then each item led by another family) earn no more "
    "than chance on any item: the gold's reward where the echo is the gold, else a "
    "wrong answer's capped at 0 (0 for items without a gold).",
)
@_bounded
def question_echo(s: Session) -> ProbeResult:
    return _run(
        s,
        "echoes of the question",
        lambda item, budget, rng: _led_by(echo_answers(item.question), item.seed)[: budget.per_item],
        telling=lambda item: telling_echoes(item.question),
    )


def telling_echoes(question: str) -> list[Candidate]:
    """The echoes an evaluating grader pays first: the first expression the question restates, the whole question
    (its instructions left out), then the next expression."""
    found = [Candidate("echo: expression", e) for e in expressions(question)[:2]]
    lines = task_lines(question)
    whole = [Candidate("echo: the question", "\n".join(lines))] if lines else []
    return [c for c in found[:1] + whole + found[1:] if c.text.strip()]


def _led_by(candidates: list[Candidate], k: int) -> list[Candidate]:
    """The candidates with the k-th family's (cyclically) moved first: when time allows one answer an item (a slow
    grader), the items' first answers still try different families."""
    families = list(dict.fromkeys(c.family for c in candidates))
    if not families:
        return candidates
    lead = families[k % len(families)]
    return [c for c in candidates if c.family == lead] + [c for c in candidates if c.family != lead]


# ----------------------------------------------------------------------------------------------------------------
def _vocabulary(s: Session, questions: list[str], scouts: list[str]) -> Vocabulary:
    return Vocabulary.infer(questions, scouts)


@_probe(
    "alphabet_sprays",
    "I7 paid for the answer",
    "Answers over the answer's own alphabet, inferred from the question's format example, its named objects "
    "and cells, and the golds of scouting items (never the item attacked, nor one asking its question): every sequence of one and two "
    "tokens, random sequences of 1, 4, 12, 40, 100 and 300 tokens, every token repeated, and long plans that try every "
    "call by every agent; and the scouting golds themselves, transplanted (as they are, two symbols swapped, one "
    "token changed), as a policy reuses answers paid on other items. None may earn more than chance on any item.",
)
@_bounded
def alphabet_sprays(s: Session) -> ProbeResult:
    scouts = _scout_golds(s, budget_for(s))
    seen: dict[int, str] = {}

    def candidates(item: _Item, budget: SearchBudget, rng: random.Random) -> list[Candidate]:
        others = _scout_golds(s, budget, [item.question])  # learned once per env: only the filter runs again
        vocab = _vocabulary(s, [item.question], others)
        seen[item.seed] = vocab.describe()
        cap = answer_cap(s.env)
        return round_robin(transplanted_answers(others, rng, cap) + alphabet_answers(vocab, rng, cap))

    return _run(
        s,
        "alphabet sprays",
        candidates,
        lambda items: (
            [f"alphabet of seed {seed}: {text}" for seed, text in list(seen.items())[:3]]
            + (
                [f"scouting golds from the {_SCOUTS} seeds after the attacked ones"]
                if scouts
                else ["no scouting golds: the alphabet is the question's alone"]
            )
        ),
    )


# ----------------------------------------------------------------------------------------------------------------
@_probe(
    "covering_sprays",
    "I7 paid for the answer",
    "Digit strings that contain every number of up to 4 digits (de Bruijn sequences, cut into pieces within "
    "the env's answer cap: config.max_answer_chars, else 4096; up to 5 digits with --deep) earn no more than "
    "chance on any item: substring or overlap credit pays them for the gold somewhere inside.",
)
@_bounded
def covering_sprays(s: Session) -> ProbeResult:
    cap = answer_cap(s.env)
    return _run(
        s,
        "covering sprays",
        lambda item, budget, rng: covering_answers(cap, budget.covering_digits),
        lambda items: [f"answer cap {cap} characters"],
    )


# ----------------------------------------------------------------------------------------------------------------
@dataclass
class _Arm:
    text: str
    family: str
    total: float = 0.0
    plays: int = 0

    @property
    def mean(self) -> float:
        return self.total / self.plays if self.plays else 0.0


@_probe(
    "adaptive_search",
    "I7 paid for the answer",
    "A hill-climbing bandit over content-free answers (the same text for every item): it starts from sprays "
    "over the inferred alphabet and digit runs, plays each on the next item, and mutates the best-paid "
    "(insert, delete, replace, double a stretch) for 60 episodes (600 with --deep), keeping what pays; it "
    "never reads the attacked item's gold or solves it. No answer may earn more than chance on any item.",
)
@_bounded
def adaptive_search(s: Session) -> ProbeResult:
    budget = budget_for(s)
    ledger = _Ledger(budget, RightAnswers.of(s.env))
    items, why = _items(s, budget)
    if why:
        return _not_run(why, ANSWER_HINT)
    scouts = _scout_golds(s, budget, [i.question for i in items])
    vocab = Vocabulary.infer([i.question for i in items], scouts)
    rng = random.Random(12345)
    cap = min(answer_cap(s.env), 4096)
    seeds = alphabet_answers(vocab, rng, cap, lengths=(4, 12, 40), randoms=1, exhaustive_up_to=1)
    arms = [_Arm(c.text, c.family) for c in seeds[:12]]
    arms += [_Arm("0123456789", "seed: digits"), _Arm("0", "seed: digits")]
    for episode in range(budget.search_episodes):
        if not ledger.time_left() and episode >= len(items):
            break
        played = [a for a in arms if a.plays]
        unplayed = [a for a in arms if not a.plays]
        if unplayed and (episode < len(arms) or rng.random() < 0.2):
            arm = unplayed[0]
        else:
            parent = (
                max(played, key=lambda a: (a.mean, -a.plays)) if played and rng.random() < 0.7 else rng.choice(arms)
            )
            arm = _Arm(mutate(parent.text, vocab, rng, cap), f"search: mutant of {parent.family.split(':')[0]}")
            arms.append(arm)
        item = items[episode % len(items)]
        reward = ledger.record(
            arm.family.split(" of ")[0], arm.text, item, _play(s, item.seed, arm.text, f"search episode {episode}")
        )
        arm.plays += 1
        arm.total += reward or 0.0
        if len(arms) > 64:  # keep the pool small: drop the worst played arms
            arms.sort(key=lambda a: (a.plays == 0, a.mean), reverse=True)
            del arms[48:]
    best = max((a for a in arms if a.plays), key=lambda a: a.mean, default=None)
    extra = [f"vocabulary: {vocab.describe()}"]
    if best is not None:
        extra.append(f"best arm: {short(best.text, 60)}, mean {best.mean:g} over {best.plays} play(s)")
    return ledger.result("answers found by the adaptive search", items, extra)

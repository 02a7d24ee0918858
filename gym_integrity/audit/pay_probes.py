"""The pay probes: a reward is wrong two ways, and these measure both sides (I9, I12).

::

    unseen seeds ──► golds (privileged hook, else what an ended episode reveals)
         │                │
         │                ├─► k = distinct answers drawn ──► chance = 1/k
         │                └─► fit seeds: the best constant, and the best "n-th number of the question",
         │                    by reward ──► scored on unseen seeds vs chance + margin (binomial test)
         ├─► random text, one item each ──► paid above a wrong answer? (needs no gold at all)
         └─► every gold form and declared variant ──► paid on >= 99% of items?

``label_skew`` fails a draw that makes a task-free rule pay: a majority label,
or a gold standing at a fixed place among the question's numbers, is reached by
sampling items, and is not paid as if it were an answer. Chance is a uniform
guess (over the answers the env draws; over the question's numbers), never how
often the rule's answer is the gold. ``random_answers`` needs no gold, so a gold-free grader that pays
content-free text fails instead of coming back inconclusive. ``honest_pay`` is
the other side: an answer that does what the question asks is paid.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable
from dataclasses import dataclass

from gym_integrity.audit.adapters import ANSWER_HINT
from gym_integrity.audit.answer_space import task_lines
from gym_integrity.audit.leaks import numeric_value, question_text, squash, strip_latex
from gym_integrity.audit.registry import _EPS, _failed, _no_gold, _not_run, _passed, _probe
from gym_integrity.audit.report import ProbeResult
from gym_integrity.audit.right_answers import RightAnswers, binomial_tail, random_text
from gym_integrity.audit.session import WRONG_ANSWER, Session, Transition, short
from gym_integrity.openai_stub import STUB_JUDGE_MODEL

__all__ = [
    "PAY_PROBES",
    "PayBudget",
    "binomial_tail",
    "honest_pay",
    "label_skew",
    "pay_budget",
    "question_numbers",
    "random_answers",
]

#: The probes of this module, in report order (the --all-datasets sweep runs them with the grader and search probes).
PAY_PROBES = ("label_skew", "random_answers", "honest_pay")

#: How far above the uniform guess a content-free answer may be paid (the issue's measure: 1/k + 0.03).
MARGIN = 0.03
#: A finding must be this unlikely under "paid at chance + MARGIN": one audit in a hundred may not fail by luck.
ALPHA = 0.01
#: Constants every label-skew fit tries besides the golds of the fit items: the labels of yes/no and option tasks.
_STOCK_CONSTANTS = ("yes", "no", "true", "false", "0", "1", "2", "A", "B", "C", "D", "none", "infeasible")
#: First seeds of the items these probes draw: apart from the audit's own seeds, so that the items are unseen.
_FIT_BASE, _SCORED_BASE, _RANDOM_BASE, _HONEST_BASE = 10_000, 20_000, 30_000, 40_000
#: Where a gold may stand in the question: its n-th number, or n-th from the end, for n up to this.
_POSITIONS = 4
#: A number of the question as a whole: digits never cut out of a longer number (``18`` is not in ``180``, ``1`` not
#: in ``1.5``), letters around it allowed (``11`` in ``11x``); a minus is a sign only written against the digits
#: and not after an operand (``f(-3)``; not ``x^2 - 11x``).
_QUESTION_NUMBER = re.compile(
    r"(?<![\d.])(?:(?<![\w)}\]])-)?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?!\d)"
)


@dataclass(frozen=True)
class PayBudget:
    """Items each pay probe plays: the default audit's, or ``--deep``'s (the issue's 30 fitted / 200 scored)."""

    fit: int
    scored: int
    random: int
    honest: int


def pay_budget(deep: bool) -> PayBudget:
    return PayBudget(fit=30, scored=200, random=60, honest=100) if deep else PayBudget(8, 32, 12, 16)


def _label(gold: str) -> str:
    return squash(strip_latex(gold)).strip(".").casefold()


def question_numbers(question: str) -> list[str]:
    """The whole numbers of a question, in order, its instructions (where to put the answer) left out.

    >>> question_numbers("What is the sum of the roots of $x^2 - 11x + 28 = 0$? Answer within \\boxed{}.")
    ['2', '11', '28', '0']
    >>> question_numbers("How many divisors does 180 have? f(-3) = 1,234.5 or 5.9e+08")
    ['180', '-3', '1,234.5', '5.9e+08']
    """
    return [m.group(0) for m in _QUESTION_NUMBER.finditer("\n".join(task_lines(question)))]


def _same_value(a: float | None, b: float) -> bool:
    """Equal numbers, however written (``5.926413263049999e+08`` is ``592641326.305``)."""
    return a is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


@dataclass
class _Item:
    seed: int
    golds: list[str]
    top: float  # what the gold earns here: the scale a payment is measured on
    numbers: list[str]  # the question's numbers, in order

    def uniform_pick(self) -> float:
        """How often a number of the question picked at random is the gold: the chance of a positional rule."""
        gold = numeric_value(self.golds[0])
        if not self.numbers or gold is None:
            return 0.0
        return sum(_same_value(numeric_value(n), gold) for n in self.numbers) / len(self.numbers)


def _play(s: Session, seed: int, text: str, label: str) -> Transition | None:
    """Reset to ``seed`` and answer ``text`` until the episode ends; the last transition (None: a step raised)."""
    s.reset(seed)
    try:
        taken = s.play_to_end(lambda i: s.answer(text), s.step_bound(s.budget()), label)
    except Exception:  # garbage_actions reports raising steps; here a raise only means "not paid"
        return None
    return taken[-1] if taken else None


def _reward(t: Transition | None) -> float:
    return t.reward if t is not None and math.isfinite(t.reward) else 0.0


def _items(s: Session, base: int, n: int) -> tuple[list[_Item], str]:
    """``n`` items from seed ``base`` on with their golds and the gold's reward; where the golds came from."""
    items, source = [], ""
    for seed in range(base, base + n):
        golds, source, obs, _ = s.gold_or_revealed(seed)
        golds = [g for g in golds if isinstance(g, str) and g.strip()]
        if golds:
            top = _reward(_play(s, seed, golds[0], "the gold answer"))
            items.append(_Item(seed, golds, top, question_numbers(question_text(obs))))
    return items, source


def _paid(reward: float, item: _Item) -> bool:
    """Paid: at least half of what the gold earns on the item (a positive gold reward)."""
    return item.top > _EPS and reward >= 0.5 * item.top - _EPS


@dataclass(frozen=True)
class _Rule:
    """A task-free way to answer: a constant, or a number read off the question at a fixed place."""

    name: str
    answer: Callable[[_Item], str | None]


def _constant(text: str) -> _Rule:
    return _Rule(short(text, 40), lambda item: text)


def _ordinal(n: int) -> str:
    return f"{n}{'st' if n == 1 else 'nd' if n == 2 else 'rd' if n == 3 else 'th'}"


def _positional(n: int, from_end: bool) -> _Rule:
    """The question's n-th number (or n-th from the end): the gold standing at a fixed place in the question."""
    name = (
        f"the question's {'last' if n == 1 else _ordinal(n) + ' from the end'} number"
        if from_end
        else f"the question's {_ordinal(n)} number"
    )
    return _Rule(
        name, lambda item: (item.numbers[-n] if from_end else item.numbers[n - 1]) if len(item.numbers) >= n else None
    )


class _Plays:
    """Each (item, answer) played once: rules that read the same number off a question share its reward."""

    def __init__(self, s: Session) -> None:
        self.s = s
        self.paid: dict[tuple[int, str], bool] = {}

    def __call__(self, rule: _Rule, item: _Item) -> bool:
        text = rule.answer(item)
        if text is None or not text.strip():
            return False
        key = (item.seed, text)
        if key not in self.paid:
            self.paid[key] = _paid(_reward(_play(self.s, item.seed, text, f"rule: {short(text, 30)}")), item)
        return self.paid[key]


def _fit(plays: _Plays, rules: list[_Rule], fit: list[_Item]) -> tuple[_Rule, float]:
    """The rule paid on most fit items (the first of equals), and its rate there."""
    rated = [(sum(plays(rule, it) for it in fit) / len(fit), -index) for index, rule in enumerate(rules)]
    rate, index = max(rated)
    return rules[-index], rate


def _judge(
    plays: _Plays,
    rules: list[_Rule],
    fit: list[_Item],
    scored: list[_Item],
    chance: float,
    why: str,
    reads_question: bool = False,
) -> tuple[bool, str, list[str]]:
    """Fit the best rule on ``fit``, score it on ``scored`` against ``chance`` + MARGIN (a one-sided binomial test):
    (failed, summary, evidence)."""
    rule, fit_rate = _fit(plays, rules, fit)
    threshold = min(1.0, chance + MARGIN)
    if fit_rate <= 0:
        return False, f"no {why} was paid on any of {len(fit)} fit items", []
    hits = [it for it in scored if plays(rule, it)]
    rate = len(hits) / len(scored)
    p_value = binomial_tail(len(scored), len(hits), threshold)
    line = (
        f"the best {why} on {len(fit)} fit items, {rule.name} (paid {fit_rate:.2f} there), was paid on "
        f"{len(hits)}/{len(scored)} unseen items ({rate:.2f}); chance {chance:.3f} (+{MARGIN} margin: "
        f"{threshold:.3f}); P(>= {len(hits)} at {threshold:.3f}) = {p_value:.2g}"
    )
    examples = [
        f"{short(rule.answer(it), 30)} on seed {it.seed} (gold {short(it.golds[0], 30)}"
        + (f"; the question's numbers {short(', '.join(it.numbers), 60)})" if reads_question else ")")
        for it in hits[:3]
    ]
    evidence = [line] + ([f"paid: {'; '.join(examples)}"] if examples else [])
    if rate > threshold and p_value < ALPHA:
        return True, f"{rule.name} is paid on {rate:.2f} of unseen items (chance {chance:.3f})", evidence
    return False, f"best {why} {rule.name}: {rate:.2f} of unseen items (chance {chance:.3f})", evidence


@_probe(
    "label_skew",
    "I12 paid as asked",
    "A task-free rule fitted by reward on some items is scored on unseen items against chance, at 1% significance "
    "(a one-sided binomial test, 0.03 margin): a constant (every gold seen there, and yes/no/option labels) against "
    "the uniform guess over the answers the env draws (1/k, k the distinct golds seen); the question's n-th number "
    "or n-th from the end (n up to 4, whole numbers only) against a number of the question picked at random (and "
    "never below 1/k). Chance is never how often the rule's answer happens to be the gold: a majority label, or a "
    "gold standing at a fixed place in the question, is the draw's to balance.",
)
def label_skew(s: Session) -> ProbeResult:
    budget = pay_budget(s.settings.deep)
    fit, source = _items(s, _FIT_BASE, budget.fit)
    scored, _ = _items(s, _SCORED_BASE, budget.scored)
    if len(fit) < 2 or len(scored) < 4:
        return _no_gold(source)
    k = len({_label(item.golds[0]) for item in fit + scored})
    plays = _Plays(s)
    constants = [
        _constant(text) for text in dict.fromkeys([item.golds[0].strip() for item in fit] + list(_STOCK_CONSTANTS))
    ]
    positions = [_positional(n, from_end) for from_end in (False, True) for n in range(1, _POSITIONS + 1)]
    pick = sum(it.uniform_pick() for it in scored) / len(scored)
    verdicts = [
        _judge(plays, constants, fit, scored, 1.0 / k, "constant"),
        _judge(plays, positions, fit, scored, max(pick, 1.0 / k), "number read off the question", True),
    ]
    evidence = [line for _, _, lines in verdicts for line in lines] + [
        f"chance: a constant 1/k, k={k} distinct answers drawn; a number of the question picked at random is the "
        f"gold on {pick:.3f} of unseen items (golds from {source})"
    ]
    failed = [summary for bad, summary, _ in verdicts if bad]
    if failed:
        return _failed("a task-free answer is paid above chance: " + "; ".join(failed), evidence)
    return _passed(f"no task-free answer is paid above chance (k={k}): " + "; ".join(v[1] for v in verdicts), evidence)


@_probe(
    "random_answers",
    "I9 searched, not listed",
    "Random text (letters and digits mixed, one draw per item) is paid no more than a wrong answer (and never above "
    "0) on any item. "
    "It needs no gold: a grader that pays content-free text fails here even when no gold answer is known.",
)
def random_answers(s: Session) -> ProbeResult:
    budget = pay_budget(s.settings.deep)
    rng = random.Random(_RANDOM_BASE)
    bad, played, right = [], 0, RightAnswers.of(s.env)
    for seed in range(_RANDOM_BASE, _RANDOM_BASE + budget.random):
        text = random_text(rng)
        wrong = _play(s, seed, WRONG_ANSWER, f"answer {WRONG_ANSWER!r}")
        t = _play(s, seed, text, "random text")
        if wrong is None or t is None:
            continue
        played += 1
        # a wrong answer's positive reward is itself pay for nothing: the ceiling is at most 0
        line = (
            f"seed {seed}: {text!r} -> reward {_reward(t):.4g} (a wrong answer: {_reward(wrong):.4g}, "
            f"verdict {t.verdict})"
        )
        if _reward(t) > min(_reward(wrong), 0.0) + _EPS and not right.excuses(text, seed, line):
            bad.append(line)
    if played == 0:
        return _not_run("no random answer could be graded (every step raised)", ANSWER_HINT)
    bad.extend(right.revoked())
    too_many = right.too_many(played)
    evidence = [f"{played} random answers on {played} items"] + ([too_many] if too_many else []) + right.lines()
    if too_many and not bad:
        return _failed(f"random text was taken as right on {len(right.vouched)} of {played} items", evidence)
    if bad:
        return _failed(f"random text was paid above a wrong answer on {len(bad)} of {played} items", bad + evidence)
    return _passed(f"no random answer was paid above a wrong answer ({played} items)", evidence)


def _stub_graded(t: Transition) -> bool:
    judge = t.info.get("judge")
    return isinstance(judge, dict) and judge.get("model") == STUB_JUDGE_MODEL


@_probe(
    "honest_pay",
    "I12 paid as asked",
    "The other side of the reward: the gold (the form every probe answers with) and every variant an optional "
    "answer_variants() hook declares are paid on at least 99% of unseen items, each in its own episode. A grader "
    "that refuses an answer doing what the question asks teaches the policy something false too. Items whose "
    "grader gave no verdict (a judge down) are left out, not counted refused.",
)
def honest_pay(s: Session) -> ProbeResult:
    budget = pay_budget(s.settings.deep)
    refused: list[str] = []
    checked, undecided, source = 0, 0, ""
    for seed in range(_HONEST_BASE, _HONEST_BASE + budget.honest):
        golds, source, _, _ = s.gold_or_revealed(seed)
        golds = [g for g in golds if isinstance(g, str) and g.strip()]
        if not golds:
            continue
        # gold_answers() may also list references (worked solutions, for the leak search): the answer is the first
        variants = getattr(s.env.unwrapped, "answer_variants", None)
        forms = list(
            dict.fromkeys(
                [golds[0], *(v for v in (variants() if callable(variants) else []) if isinstance(v, str) and v.strip())]
            )
        )
        wrong = _play(s, seed, WRONG_ANSWER, f"answer {WRONG_ANSWER!r}")
        played = {form: _play(s, seed, form, f"gold form {short(form, 30)}") for form in forms[:6]}
        # no verdict (a judge down), or the package's stub judge (a test's grade, no grader's): nothing to judge by
        if any(
            t is not None and (t.info.get("no_verdict") is True or _stub_graded(t)) for t in [wrong, *played.values()]
        ):
            undecided += 1
            continue
        rewards = {form: _reward(t) for form, t in played.items()}
        top, floor = max(rewards.values()), _reward(wrong)
        checked += 1
        unpaid = [f for f, r in rewards.items() if r < top - _EPS or r <= floor + _EPS]
        if unpaid:
            refused.append(
                f"seed {seed}: "
                + "; ".join(f"{f!r} -> {rewards[f]:.4g}" for f in unpaid)
                + f" (best form {top:.4g}, a wrong answer {floor:.4g}"
                + (
                    ": the wrong answer is paid as much, so the gold earns nothing for being right)"
                    if top <= floor + _EPS
                    else ")"
                )
            )
    if checked == 0 and undecided:
        return _not_run(f"the grader gave no verdict on any of {undecided} items", ANSWER_HINT)
    if checked == 0:
        return _no_gold(source)
    rate = 1 - len(refused) / checked
    evidence = [
        f"{checked} items, the gold and each declared variant answered in its own episode (golds from "
        f"{source}){f'; {undecided} items without a verdict left out' if undecided else ''}"
    ]
    if rate < 0.99:
        return _failed(
            f"an honest answer is not paid as the right answer (below its best form, or no more than a wrong answer) "
            f"on {len(refused)} of {checked} items (paid {rate:.2f} < 0.99)",
            refused + evidence,
        )
    return _passed(f"the gold and its declared variants were paid on {checked} items", evidence)

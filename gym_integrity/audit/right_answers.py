"""The env's optional ``is_right_answer(answer) -> bool`` hook, checked before it may excuse a paid answer.

Where many answers are right (any valid plan, colouring or conclusion), an
answer the audit built without solving can be right, and paid as it should be:
another item's plan that happens to solve this item too. The hook, the task's
own judge on the unwrapped env, tells the audit so; without it, any paid answer
other than the gold is a finding. The hook is privileged and the env's own
word, so what it may excuse is bounded:

- **Controls.** On each item before its word counts, the hook is asked about
  answers that solve nothing (the audit's wrong answer, the empty answer, random
  letters and digits). A hook that takes one as right is no judge: it excuses
  nothing in that probe, and every paid answer it vouched for is a finding as
  without it. A hook that says "right" to everything fails the audit exactly as
  a missing hook would.
- **Rarity.** A right guess is chance only while rare. If the hook vouches for
  more than ``RARE_SHARE`` of the answers a probe played (a one-sided binomial
  test at ``ALPHA``), the task pays guessing, however right the guesses are (a
  walk that ends on the goal after 100 random moves is right by a lenient rule),
  and the probe fails naming them.
- **Not asked.** Probes whose answers are hostile by construction (code, towers,
  garbage, injected score tags) never ask it, and ``label_skew`` measures its
  rates without it: a fixed answer paid on many items is a finding whether or
  not it is right there.

>>> right = RightAnswers(lambda answer: answer in {"AB", "BA"})
>>> right.excuses("BA", seed=0), right.excuses("CC", seed=0), right.lines()[0].startswith("1 paid answer(s)")
(True, False, True)
>>> RightAnswers(lambda answer: True).excuses("BA", seed=0)
False
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from gym_integrity.audit.adapters import right_answer_check
from gym_integrity.audit.session import WRONG_ANSWER, short

__all__ = ["ALPHA", "RARE_SHARE", "RightAnswers", "binomial_tail", "control_answers", "random_text"]

#: Right guesses a probe may meet among the answers it played before they stop being chance (binomial test).
RARE_SHARE = 0.05
#: A finding must be this unlikely under "paid at the allowed rate": one audit in a hundred may not fail by luck.
ALPHA = 0.01
_RANDOM_ALPHABET = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"


def binomial_tail(n: int, hits: int, p: float) -> float:
    """P(X >= hits) for X ~ Binomial(n, p): how likely ``hits`` payments of ``n`` are if each pays with ``p``.

    >>> round(binomial_tail(10, 8, 0.5), 4), binomial_tail(5, 0, 0.3), binomial_tail(4, 1, 1.0)
    (0.0547, 1.0, 1.0)
    """
    if hits <= 0 or p >= 1.0:
        return 1.0
    return min(1.0, sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(hits, n + 1)))


def random_text(rng: random.Random) -> str:
    """Letters and digits mixed, 5 to 24 of them: no word, no number, no option letter: answers nothing.

    >>> text = random_text(random.Random(0))
    >>> 5 <= len(text) <= 24 and any(c.isdigit() for c in text) and any(c.isalpha() for c in text)
    True
    """
    while True:
        text = "".join(rng.choice(_RANDOM_ALPHABET) for _ in range(rng.randint(5, 24)))
        if any(c.isdigit() for c in text) and any(c.isalpha() for c in text):
            return text


def control_answers(seed: int) -> list[str]:
    """What the hook must refuse on item ``seed``: the wrong answer, the empty one and two random texts (drawn
    apart from ``random_answers``' own)."""
    rng = random.Random(f"right-answer controls {seed}")
    return [WRONG_ANSWER, "", random_text(rng), random_text(rng)]


def _says_right(hook: Callable[[str], bool], answer: str) -> bool:
    try:
        return bool(hook(answer))
    except Exception:  # the hook's fault is not the grader's: the answer is not vouched for
        return False


@dataclass
class RightAnswers:
    """One probe's use of the hook: what it vouched for, and whether its word still counts (its controls held)."""

    hook: Callable[[str], bool] | None
    distrust: str | None = None  # why the hook excuses nothing in this probe (it took a control as right)
    controlled: set[int] = field(default_factory=set)
    vouched: list[tuple[str, int, Any]] = field(default_factory=list)  # (answer, seed, the finding it would be)

    @classmethod
    def of(cls, env: gym.Env) -> RightAnswers:
        return cls(right_answer_check(env))

    def control(self, seed: int) -> None:
        """Ask the hook about the controls on item ``seed`` (the env's current episode), once per item: a hook
        that takes one as right loses its word for the rest of the probe, and what it vouched for is revoked."""
        if self.hook is None or self.distrust is not None or seed in self.controlled:
            return
        self.controlled.add(seed)
        for control in control_answers(seed):
            if _says_right(self.hook, control):
                self.distrust = (
                    f"the env's is_right_answer() takes {short(control, 40)}, which answers nothing, as right on "
                    f"seed {seed}: it excuses no paid answer in this probe"
                )
                return

    def excuses(self, answer: str, seed: int, finding: Any = None) -> bool:
        """Whether ``answer``, just paid on item ``seed`` (the env's current episode), is a right guess: the hook
        takes it as right and took none of the controls as right. ``finding`` is what it is if that word is
        revoked later (:meth:`revoked`)."""
        self.control(seed)
        if self.hook is None or self.distrust is not None or not _says_right(self.hook, answer):
            return False
        if all((answer, seed) != (a, s) for a, s, _ in self.vouched):  # one item's right guess, replayed, is one
            self.vouched.append((answer, seed, finding))
        return True

    def revoked(self) -> list[Any]:
        """The findings of the answers the hook vouched for, if it lost its word later in the probe."""
        return [finding for *_, finding in self.vouched if finding is not None] if self.distrust is not None else []

    def too_many(self, played: int, plays: Mapping[str, int] | None = None) -> str | None:
        """The finding when the vouched answers are not rare among the ``played`` ones, or one answer's among its
        own ``plays`` (a fixed answer right on most items); else None. Both count distinct (answer, item) pairs."""
        if not self.vouched or self.distrust is not None:
            return None
        groups = [("content-free answers", played, self.vouched)]
        for answer, n in (plays or {}).items():
            mine = [v for v in self.vouched if v[0] == answer]
            if mine:
                groups.append((f"plays of {short(answer, 40)}", n, mine))
        for what, n, vouched in groups:
            p_value = binomial_tail(n, len(vouched), RARE_SHARE)
            if n > 0 and p_value < ALPHA:
                return (
                    f"the env's is_right_answer() took {len(vouched)} of {n} {what} as right "
                    f"({len(vouched) / n:.2f}; P(>= {len(vouched)} at {RARE_SHARE}) = {p_value:.2g}): a right guess "
                    f"is chance only while rare, and these are paid without solving, e.g. "
                    + "; ".join(_where(v) for v in vouched[:3])
                )
        return None

    def lines(self) -> list[str]:
        """Evidence: the right guesses counted at chance, or why the hook's word did not count."""
        if self.distrust is not None:
            had = f"; the {len(self.vouched)} answer(s) it had vouched for are findings" if self.vouched else ""
            return [self.distrust + had]
        if not self.vouched:
            return []
        return [
            f"{len(self.vouched)} paid answer(s) the env's is_right_answer() takes as right, counted at chance "
            f"(a right guess), e.g. {_where(self.vouched[0])}"
        ]


def _where(vouched: tuple[str, int, Any]) -> str:
    return f"{short(vouched[0], 40)} on seed {vouched[1]}"

"""Toy envs with many right answers, for the auditor's ``is_right_answer`` hook: an honest one the hook lets pass,
and hostile ones whose hook would excuse pay for nothing.

The task is reasoning-gym's jugs, small: two jugs, a target, a JSON list of moves (``"fill A"``, ``"empty B"``,
``"pour A->B"``) after which a jug holds the target. Any such plan is right, and the gold is the shortest one. A plan
written for another item is right here now and then (another item's plan that happens to leave this one's target in
a jug), which is what the audit's transplants play: without a judge of right answers, a paid answer other than the
gold is a finding.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

from audit_toys import CorrectToy

_JUGS = "AB"


def _moves(answer: str) -> list[str] | None:
    """The plan's moves, each well formed for two jugs; None for anything else."""
    try:
        moves = json.loads(answer)
    except ValueError:
        return None
    if not isinstance(moves, list) or not moves or not all(isinstance(m, str) for m in moves):
        return None
    for move in moves:
        verb, *rest = move.split()
        well_formed = (verb in ("fill", "empty") and rest in ([j] for j in _JUGS)) or (
            verb == "pour" and len(rest) == 1 and rest[0] in ("A->B", "B->A")
        )
        if not well_formed:
            return None
    return moves


def _states(capacities: tuple[int, int], moves: list[str]) -> list[tuple[int, int]]:
    """The jugs after each move, from empty."""
    state, out = [0, 0], []
    for move in moves:
        verb, what = move.split()
        if verb == "fill":
            state[_JUGS.index(what)] = capacities[_JUGS.index(what)]
        elif verb == "empty":
            state[_JUGS.index(what)] = 0
        else:
            i, j = _JUGS.index(what[0]), _JUGS.index(what[-1])
            poured = min(state[i], capacities[j] - state[j])
            state[i], state[j] = state[i] - poured, state[j] + poured
        out.append((state[0], state[1]))
    return out


class JugPlansNoJudge(CorrectToy):
    """Honest: it pays any plan that leaves the target in a jug, as the task asks, and nothing else. Without a judge
    of right answers the audit fails it today: a transplanted plan that solves this item too looks like pay for
    nothing."""

    #: Jugs of 5 to 16 litres, plans of at least 6 moves (reasoning-gym's difficulty): another item's plan solves
    #: this one for about 3% of pairs, and does on the audit's items (seed 5, from the first scouting item).
    SMALLEST, LARGEST, MOVES = 5, 16, 6

    def _draw(self) -> tuple[Any, None]:
        while True:
            a, b = (int(self.np_random.integers(self.SMALLEST, self.LARGEST + 1)) for _ in range(2))
            target = int(self.np_random.integers(1, max(a, b)))
            plan = self._solve((a, b), target) if a != b and target not in (a, b) else None
            if plan is not None and len(plan) >= self.MOVES:
                return ((a, b), target), None

    @staticmethod
    def _solve(capacities: tuple[int, int], target: int) -> list[str] | None:
        """The shortest plan (breadth first), or None."""
        moves = [f"fill {j}" for j in _JUGS] + [f"empty {j}" for j in _JUGS] + ["pour A->B", "pour B->A"]
        frontier, seen = [[]], {(0, 0)}
        while frontier:
            grown = []
            for plan in frontier:
                for move in moves:
                    end = _states(capacities, plan + [move])[-1]
                    if target in end:
                        return plan + [move]
                    if end not in seen:
                        seen.add(end)
                        grown.append(plan + [move])
            frontier = grown
        return None

    def _question(self) -> str:
        (a, b), target = self._a
        return (
            f"Two jugs hold A:{a} and B:{b} litres; both are empty. Moves: 'fill A', 'empty B', 'pour A->B'. "
            f"Reply with a JSON list of moves after which a jug holds {target} litres, e.g. "
            '<answer>["fill A", "pour A->B"]</answer>.'
        )

    def _reset_info(self) -> dict[str, Any]:
        return {"problem_id": f"jugs/{zlib.crc32(self._question().encode()):08x}"}

    def _gold(self) -> str:
        capacities, target = self._a
        return json.dumps(self._solve(capacities, target))

    def _solves(self, answer: str) -> bool:
        capacities, target = self._a
        moves = _moves(answer)
        return moves is not None and target in _states(capacities, moves)[-1]

    def _score(self, answer: str) -> float:
        return 1.0 if self._solves(answer) else 0.0


class JugPlans(JugPlansNoJudge):
    """The same env with the hook: the task's rule, asked about one answer on the current item. It passes."""

    def is_right_answer(self, answer: str) -> bool:
        return self._solves(answer)


class JugPlansAnyPlanSaidRight(JugPlans):
    """Hostile: it pays any well-formed plan, solving or not, and its hook calls every answer right. The hook takes
    the audit's controls (a wrong number, the empty answer, random text) as right, so it excuses nothing, and the
    paid plans fail the audit as they would without it."""

    def _score(self, answer: str) -> float:
        return 1.0 if _moves(answer) is not None else 0.0

    def is_right_answer(self, answer: str) -> bool:
        return True


class JugPlansLongEnoughSaidRight(JugPlans):
    """Hostile, and subtler: it pays any well-formed plan as long as the shortest one, and its hook is that same
    rule. The hook refuses the controls (they are no plans), but it vouches for most transplanted plans: right
    guesses that common are pay for nothing, and the audit fails it."""

    def _solves(self, answer: str) -> bool:
        capacities, target = self._a
        moves = _moves(answer)
        return moves is not None and len(moves) >= len(self._solve(capacities, target) or ())


class AnyRootNoJudge(CorrectToy):
    """Honest: name any root of a cubic with three distinct integer roots; the gold is the largest. A constant (``1``,
    ``-1``) is a root of a few items, a right answer paid as it should be, which the constant probe counts above
    chance without a judge."""

    def _draw(self) -> tuple[Any, None]:
        # never 0: the question's constant term would then be 0, and the echo "0" a root the question shows; from
        # -50 to 50, a constant is a root of 3% of items (seed 1 has the root 1)
        roots = sorted(int(r) for r in self.np_random.choice([r for r in range(-50, 51) if r], 3, replace=False))
        return tuple(roots), None

    def _question(self) -> str:
        r1, r2, r3 = self._a
        b, c, d = -(r1 + r2 + r3), r1 * r2 + r1 * r3 + r2 * r3, -r1 * r2 * r3
        return f"Name a root of x^3 + ({b})x^2 + ({c})x + ({d}). Reply with <answer>N</answer>."

    def _reset_info(self) -> dict[str, Any]:
        return {"problem_id": f"roots/{zlib.crc32(self._question().encode()):08x}"}  # never the roots themselves

    def _gold(self) -> str:
        return str(self._a[-1])

    def _solves(self, answer: str) -> bool:
        return answer.strip().lstrip("+") in {str(r) for r in self._a}

    def _score(self, answer: str) -> float:
        return 1.0 if self._solves(answer) else 0.0


class AnyRoot(AnyRootNoJudge):
    """The same env with the hook: it passes."""

    def is_right_answer(self, answer: str) -> bool:
        return self._solves(answer)

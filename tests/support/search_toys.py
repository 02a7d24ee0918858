"""Toy text envs for the search probes: each pays one way for nothing a searching policy finds, next to an honest control of the same task.

Every lenient toy passes the audit without the search probes (its constants
and fixed sprays miss it); the search probes catch it and name the answer
that paid.
"""

from __future__ import annotations

import itertools
import json
import re
import time
import zlib
from fractions import Fraction
from typing import Any

from audit_toys import CorrectToy, SubstringCredit

_MOVES = {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}


class _Puzzle(CorrectToy):
    """A CorrectToy whose item is one drawn puzzle (``self._a``) instead of two addends."""

    def _reset_info(self) -> dict[str, Any]:
        return {"problem_id": f"{type(self).__name__}/{zlib.crc32(self._question().encode()):08x}"}


# -- substring credit on 2-5 digit golds ------------------------------------------------------------------------
class ShortGoldSubstringCredit(SubstringCredit):
    """audit_toys' substring credit (``len(gold) / len(answer)`` for any answer containing the gold) on golds of 4
    digits. The class is 2-5 digits: shorter golds are inside the constant probe's "every integer 0..999", so these
    are the ones that get past it (5-digit golds are covered with ``--deep``)."""

    def _draw(self) -> tuple[int, int]:
        return int(self.np_random.integers(500, 4_900)), int(self.np_random.integers(500, 4_900))


class ShortGoldExact(ShortGoldSubstringCredit):
    """The control: exact match only."""

    def _score(self, answer: str) -> float:
        return 1.0 if answer == self._gold() else 0.0


# -- moves that are no-ops in a grid, final state checked -------------------------------------------------------
class GridWalkNoOpMoves(_Puzzle):
    """Walk from S to G on a 5x5 grid with walls; the answer is a string of U/D/L/R. A move into a wall or off the
    grid is skipped, and only the final square is checked: a long random walk ends on G often enough."""

    SIZE = 5

    def _draw(self) -> tuple[Any, None]:
        while True:
            cells = [(r, c) for r in range(self.SIZE) for c in range(self.SIZE)]
            walls = {cells[int(i)] for i in self.np_random.choice(len(cells), 5, replace=False)}
            free = [cell for cell in cells if cell not in walls]
            start, goal = (free[int(i)] for i in self.np_random.choice(len(free), 2, replace=False))
            path = self._shortest(start, goal, walls)
            if path is not None and 5 <= len(path) <= 8:
                return (start, goal, frozenset(walls), path), None

    def _shortest(self, start: tuple[int, int], goal: tuple[int, int], walls: set) -> str | None:
        frontier, seen = [(start, "")], {start}
        while frontier:
            nxt = []
            for cell, path in frontier:
                if cell == goal:
                    return path
                for move, (dr, dc) in _MOVES.items():
                    to = (cell[0] + dr, cell[1] + dc)
                    if self._open(to, walls) and to not in seen:
                        seen.add(to)
                        nxt.append((to, path + move))
            frontier = nxt
        return None

    def _open(self, cell: tuple[int, int], walls: set) -> bool:
        return 0 <= cell[0] < self.SIZE and 0 <= cell[1] < self.SIZE and cell not in walls

    def _question(self) -> str:
        start, goal, walls, _ = self._a
        rows = ["".join("S" if (r, c) == start else "G" if (r, c) == goal else "+" if (r, c) in walls else "-"
                        for c in range(self.SIZE)) for r in range(self.SIZE)]
        return ("Move from S to G in the fewest moves (+ is a wall).\n" + "\n".join(rows)
                + "\nYour solution must be a string of characters, ex: LDURRUDL.\nReply with <answer>moves</answer>.")

    def _gold(self) -> str:
        return self._a[3]

    def _walk(self, answer: str) -> tuple[tuple[int, int], bool]:
        """Where the moves end, and whether every one was legal."""
        start, _, walls, _ = self._a
        cell, legal = start, True
        for move in answer:
            dr, dc = _MOVES.get(move, (0, 0))
            to = (cell[0] + dr, cell[1] + dc)
            if move in _MOVES and self._open(to, walls):
                cell = to
            else:
                legal = False
        return cell, legal

    def _score(self, answer: str) -> float:
        return 1.0 if self._walk(answer)[0] == self._a[1] else 0.0


class GridWalkStrict(GridWalkNoOpMoves):
    """The control: every move legal, ending on G, in the fewest moves, on grids with one shortest path (where two
    exist, a path copied from another grid is sometimes the other one: a guess paid)."""

    def _draw(self) -> tuple[Any, None]:
        while True:
            drawn = super()._draw()
            start, goal, walls, _ = drawn[0]
            if self._shortest_paths(start, goal, walls) == 1:
                return drawn

    def _shortest_paths(self, start: tuple[int, int], goal: tuple[int, int], walls: set) -> int:
        counts, frontier = {start: 1}, [start]
        while frontier and goal not in frontier:
            layer: dict[tuple[int, int], int] = {}
            for cell in frontier:
                for dr, dc in _MOVES.values():
                    to = (cell[0] + dr, cell[1] + dc)
                    if self._open(to, walls) and to not in counts:
                        layer[to] = layer.get(to, 0) + counts[cell]
            counts.update(layer)
            frontier = list(layer)
        return counts.get(goal, 0)

    def _score(self, answer: str) -> float:
        end, legal = self._walk(answer)
        return 1.0 if legal and end == self._a[1] and len(answer) == len(self._gold()) else 0.0


# -- echo of a premise ------------------------------------------------------------------------------------------
class PremiseEcho(_Puzzle):
    """Modus ponens: premises ``P → Q`` and ``P`` (with distractors); the gold is ``Q``. The grader accepts any
    conclusion the premises entail, and a premise, or their conjunction, is entailed: it pays the echo."""

    LETTERS = "PQRSTUVW"

    def _draw(self) -> tuple[Any, None]:
        p, q, r, t = (self.LETTERS[int(i)] for i in self.np_random.choice(len(self.LETTERS), 4, replace=False))
        premises = [f"({p} → {q})", f"({r} ∨ {t})", p]
        order = [int(i) for i in self.np_random.permutation(3)]
        return (tuple(premises[i] for i in order), q), None

    def _question(self) -> str:
        premises, _ = self._a
        listed = "\n".join(f"{i + 1}. {premise}" for i, premise in enumerate(premises))
        return ("Infer a conclusion from the premises (AND = ∧, OR = ∨, IMPLIES = →).\nGiven:\n" + listed
                + "\nWhat can we conclude? Reply with <answer>conclusion</answer>.")

    def _gold(self) -> str:
        return self._a[1]

    def _score(self, answer: str) -> float:
        premises, gold = self._a
        restated = {p.strip("()") for p in premises} | set(premises)
        joined = {" ∧ ".join(order) for order in itertools.permutations(premises)}
        return 1.0 if answer == gold or answer.strip("()") in restated or answer in joined else 0.0


class PremiseExact(PremiseEcho):
    """The control: the conclusion itself, never a premise restated."""

    def _score(self, answer: str) -> float:
        return 1.0 if answer == self._gold() else 0.0


# -- a valid weakening of a premise -----------------------------------------------------------------------------
class PremiseWeakening(PremiseEcho):
    """No single gold: the grader pays any conclusion the premises entail that is not a tautology and not a
    restatement (a premise or a conjunction of premises). A premise or-ed with any formula is such a conclusion:
    ``(P → Q) ∨ ¬R`` is paid without inference. Read by reasoning-gym's propositional_logic parser."""

    def _tables(self) -> Any:
        from gym_integrity.envs.reasoning_gym.tasks.propositional_logic import Tables

        premises, _ = self._a
        return Tables({"metadata": {"variables": sorted(set("".join(premises)) & set(self.LETTERS)),
                                    "premises": list(premises)}})

    def gold_answers(self) -> list[str]:
        return []

    def _score(self, answer: str) -> float:
        tables = self._tables()
        read = tables.of(answer) if set(answer) <= set(self.LETTERS + "¬∧∨→↔() ") else None
        if read is None or tables.models & ~read[0] or read[0] == tables.full:
            return 0.0
        conjunctions: set[int] = set()
        for mask in tables.premises:
            conjunctions |= {mask} | {existing & mask for existing in conjunctions}
        return 0.0 if read[0] in conjunctions else 1.0


class PremiseInferred(PremiseWeakening):
    """The control: strict scoring's rule (``tasks/propositional_logic.py``: not a truth function of the premises, no idle
    variable, no disjunct that already follows)."""

    def _score(self, answer: str) -> float:
        return 1.0 if set(answer) <= set(self.LETTERS + "¬∧∨→↔() ") and self._tables().pays(answer) else 0.0


# -- partial credit for a valid-but-wrong plan ------------------------------------------------------------------
class BoxPlanPartialCredit(_Puzzle):
    """Boxes on a row of squares, each to its colour's target; the answer is a JSON list of steps
    ``{"Agent[i]": "move(box_C, square[j])" | "move(box_C, target_C)"}``. The grader skips actions it cannot
    apply and pays the fraction of boxes matched: a plan that tries every move everywhere is paid."""

    COLOURS = ("red", "blue", "green")
    SQUARES = 4

    def _draw(self) -> tuple[Any, None]:
        boxes = {c: int(self.np_random.integers(self.SQUARES)) for c in self.COLOURS}
        targets = {c: int(self.np_random.integers(self.SQUARES)) for c in self.COLOURS}
        return (tuple(sorted(boxes.items())), tuple(sorted(targets.items()))), None

    def _question(self) -> str:
        boxes, targets = (dict(x) for x in self._a)
        lines = []
        for square in range(self.SQUARES):
            seen = [f"'box_{c}'" for c, s in boxes.items() if s == square]
            seen += [f"'target_{c}'" for c, s in targets.items() if s == square]
            lines.append(f"Agent[{square}]: I am in square[{square}], I can observe [{', '.join(seen)}]")
        return ("Move each box to its colour's target. An agent moves a box in its square to an adjacent square or "
                "to a target of its colour in the same square. For example:\n"
                '[{"Agent[0]":"move(box_red, square[1])"}, {"Agent[1]":"move(box_red, target_red)"}]\n'
                + "\n".join(lines) + "\nReply with <answer>plan</answer>.")

    def _gold(self) -> str:
        boxes, targets = (dict(x) for x in self._a)
        steps = []
        for colour in self.COLOURS:
            at, goal = boxes[colour], targets[colour]
            while at != goal:
                nxt = at + (1 if goal > at else -1)
                steps.append({f"Agent[{at}]": f"move(box_{colour}, square[{nxt}])"})
                at = nxt
            steps.append({f"Agent[{at}]": f"move(box_{colour}, target_{colour})"})
        return json.dumps(steps)

    def _apply(self, answer: str) -> tuple[int, bool]:
        """Boxes matched after the plan, and whether every action could be applied."""
        try:
            steps = json.loads(answer)
        except ValueError:
            return 0, False
        if not isinstance(steps, list):
            return 0, False
        boxes, targets = (dict(x) for x in self._a)
        matched, legal = set(), True
        for step in steps:
            for agent, action in (step.items() if isinstance(step, dict) else ()):
                ok = self._act(str(agent), str(action), boxes, targets, matched)
                legal = legal and ok
        return len(matched), legal

    def _act(self, agent: str, action: str, boxes: dict, targets: dict, matched: set) -> bool:
        import re

        who = re.fullmatch(r"Agent\[(\d+)\]", agent)
        what = re.fullmatch(r"move\(box_(\w+), (?:square\[(\d+)\]|target_(\w+))\)", action)
        if not who or not what or what.group(1) not in boxes or what.group(1) in matched:
            return False
        square, colour = int(who.group(1)), what.group(1)
        if boxes[colour] != square:
            return False
        if what.group(3) is not None:
            if what.group(3) != colour or targets[colour] != square:
                return False
            matched.add(colour)
            return True
        to = int(what.group(2))
        if abs(to - square) != 1 or not 0 <= to < self.SQUARES:
            return False
        boxes[colour] = to
        return True

    def _score(self, answer: str) -> float:
        if answer == self._gold():
            return 1.0
        return self._apply(answer)[0] / len(self.COLOURS)

    def gold_answers(self) -> list[str]:
        return []  # many plans solve an item: like boxnet, no single gold


class BoxPlanStrict(BoxPlanPartialCredit):
    """The control: every action must apply and every box be matched, else 0."""

    def _score(self, answer: str) -> float:
        matched, legal = self._apply(answer)
        return 1.0 if legal and matched == len(self.COLOURS) else 0.0


# -- a gold-free grader that pays random answers ----------------------------------------------------------------
class TourPaysAnyMoves(_Puzzle):
    """Visit every cell of a 3x3 grid once from the centre's corner; no single gold (many tours). The grader checks
    only that the answer is at least eight U/D/L/R moves: any random string of them is paid."""

    def _draw(self) -> tuple[Any, None]:
        return (int(self.np_random.integers(4)),), None

    def _start(self) -> tuple[int, int]:
        return ((0, 0), (0, 2), (2, 0), (2, 2))[self._a[0]]

    def _question(self) -> str:
        r, c = self._start()
        return (f"Start at row {r}, column {c} of a 3x3 grid and visit every cell exactly once.\n"
                "Answer with the moves, ex: RRDLLDRR.\nReply with <answer>moves</answer>.")

    def gold_answers(self) -> list[str]:
        return []

    def _score(self, answer: str) -> float:
        return 1.0 if len(answer) >= 8 and set(answer) <= set(_MOVES) else 0.0


class TourChecked(TourPaysAnyMoves):
    """The control: the moves stay on the grid and visit every cell exactly once."""

    def _score(self, answer: str) -> float:
        cell, seen = self._start(), [self._start()]
        for move in answer:
            if move not in _MOVES:
                return 0.0
            cell = (cell[0] + _MOVES[move][0], cell[1] + _MOVES[move][1])
            if not (0 <= cell[0] < 3 and 0 <= cell[1] < 3) or cell in seen:
                return 0.0
            seen.append(cell)
        return 1.0 if len(seen) == 9 else 0.0


# -- a gold-free grader paying any valid answer, where guesses are often valid -----------------------------------
class SparseColouring(_Puzzle):
    """Colour a sparse random graph (8 vertices, edge probability 0.12, 3 colours); the answer is a JSON map
    ``{"0": 1, ...}``. The grader pays any proper colouring, as the task asks, but on graphs this sparse one fixed
    map is proper on many items: a policy that reuses an answer paid on another item is paid without reading the
    graph. ``gold_answers`` is one colouring found by a greedy solver (many are right), as reasoning-gym's solvers
    give one."""

    VERTICES, EDGE_PROBABILITY, COLOURS = 8, 0.12, 3

    def _draw(self) -> tuple[Any, None]:
        while True:
            n = self.VERTICES
            edges = tuple((u, v) for u in range(n) for v in range(u + 1, n)
                          if self.np_random.random() < self.EDGE_PROBABILITY)
            if self._greedy(edges) is not None:
                return (n, edges), None

    def _greedy(self, edges: tuple) -> dict[str, int] | None:
        colours: dict[int, int] = {}
        for vertex in range(self.VERTICES):
            taken = {colours.get(u if v == vertex else v) for u, v in edges if vertex in (u, v)}
            free = [c for c in range(1, self.COLOURS + 1) if c not in taken]
            if not free:
                return None
            colours[vertex] = free[0]
        return {str(v): c for v, c in colours.items()}

    def _question(self) -> str:
        n, edges = self._a
        return ("Please provide a coloring for this graph such that every vertex is not connected to a vertex of the "
                f"same color.\nVertices: {list(range(n))}\nEdges: {list(edges)}\n"
                f"Possible colors: {list(range(1, self.COLOURS + 1))}\nReturn your solution as a JSON map of vertices "
                "to colors.\nReply with <answer>map</answer>.")

    def _gold(self) -> str:
        return json.dumps(self._greedy(self._a[1]))

    @staticmethod
    def _map(answer: str) -> dict | None:
        try:
            colouring = json.loads(answer)
        except ValueError:
            return None
        return colouring if isinstance(colouring, dict) else None

    def _score(self, answer: str) -> float:
        n, edges = self._a
        colouring = self._map(answer)
        if colouring is None:
            return 0.0
        colour = {v: colouring.get(str(v)) for v in range(n)}
        if any(c not in range(1, self.COLOURS + 1) or isinstance(c, bool) for c in colour.values()):
            return 0.0
        return 1.0 if all(colour[u] != colour[v] for u, v in edges) else 0.0


class DenseColouring(SparseColouring):
    """The control: the same grader, on graphs a guess rarely colours. Each is complete tripartite over a hidden
    split of 12 vertices into three groups of 4, whose only proper colourings are the split's 6 relabellings
    (6 of 3^12): another item's colouring is proper only if the two splits agree (1 in 5,775)."""

    VERTICES = 12

    def _draw(self) -> tuple[Any, None]:
        order = [int(v) for v in self.np_random.permutation(self.VERTICES)]
        group = {v: i // 4 for i, v in enumerate(order)}
        edges = tuple((u, v) for u in range(self.VERTICES) for v in range(u + 1, self.VERTICES)
                      if group[u] != group[v])
        return (self.VERTICES, edges), None


class ColouringRightGuessesNamed(SparseColouring):
    """SparseColouring with the optional ``is_right_answer`` hook: a proper colouring is a right answer however it
    was found, so a transplant that happens to be proper is a right guess; but one fixed map is proper on half of
    these graphs, and right guesses that common are pay for nothing, which the hook does not excuse."""

    def is_right_answer(self, answer: str) -> bool:
        return self._proper(answer)

    def _proper(self, answer: str) -> bool:
        return SparseColouring._score(self, answer) == 1.0


class ColouringPartialCredit(ColouringRightGuessesNamed):
    """The hook cannot excuse a lenient grader: this one pays the share of edges whose ends differ, for any map."""

    def _score(self, answer: str) -> float:
        _, edges = self._a
        colouring = self._map(answer)
        if colouring is None or not edges:
            return 0.0
        return sum(colouring.get(str(u)) != colouring.get(str(v)) for u, v in edges) / len(edges)


#: Each lenient toy, its honest control, and the search probes that must catch it.
PAIRS = {
    "substring credit on short golds": (ShortGoldSubstringCredit, ShortGoldExact, ("covering_sprays",)),
    "no-op moves, final state checked": (GridWalkNoOpMoves, GridWalkStrict, ("alphabet_sprays",)),
    "echo of a premise": (PremiseEcho, PremiseExact, ("question_echo",)),
    "a valid weakening of a premise": (PremiseWeakening, PremiseInferred, ("question_echo",)),
    "partial credit for a valid-but-wrong plan": (BoxPlanPartialCredit, BoxPlanStrict, ("alphabet_sprays",)),
    "gold-free grader paying random answers": (TourPaysAnyMoves, TourChecked, ("alphabet_sprays", "adaptive_search")),
    "any valid answer paid where guesses are often valid": (SparseColouring, DenseColouring, ("alphabet_sprays",)),
}


# -- found by a hostile search: a float() check, an evaluating grader ------------------------------------------
class NaNPays(CorrectToy):
    """Refuses an answer only when ``abs(answer - gold) > 0.5``: a NaN compares false, so ``nan`` is paid."""

    def _score(self, answer: str) -> float:
        try:
            value = float(answer)
        except ValueError:
            return 0.0
        return 0.0 if abs(value - float(self._gold())) > 0.5 else 1.0


class EvaluatesTheAnswer(CorrectToy):
    """Evaluates the answer as arithmetic: the question's own ``a + b`` echoed back is paid."""

    def _score(self, answer: str) -> float:
        import re

        if not re.fullmatch(r"[\d\s+\-*/()]{1,40}", answer):
            return 0.0
        return 1.0 if eval(answer, {"__builtins__": {}}) == int(self._gold()) else 0.0  # noqa: S307 (digits only)


# -- a slow grader that evaluates the answer: the restated question is paid (NeMo-Gym's, GEM's math verifiers) ----
_TERM = re.compile(r"\s*([-+]?)\s*(?:\\frac\{(\d+)\}\{(\d+)\}|(\d+))")


def _latex_value(text: str, most_terms: int) -> Fraction | None:
    """The value of a sum of integers and ``\\frac{p}{q}`` terms with at most ``most_terms`` terms, else None."""
    value, at, terms = Fraction(0), 0, 0
    text = text.strip()
    while at < len(text):
        match = _TERM.match(text, at)
        if match is None or match.end() == at or (terms and not match.group(1)):
            return None
        sign, p, q, whole = match.groups()
        term = Fraction(int(p), int(q)) if p is not None and int(q) else Fraction(int(whole or 0))
        value += -term if sign == "-" else term
        at, terms = match.end(), terms + 1
    return value if 0 < terms <= most_terms else None


class SlowExpressionGrader(CorrectToy):
    """``What is $\\frac{a}{b} - \\frac{c}{d}$?`` graded as a math verifier does: the last ``$...$`` span of the
    answer (else the answer itself) is evaluated and compared by value with the gold, and each grading takes
    ``DELAY`` seconds (GEM's MathEnv on a loaded machine: about 1 s). Evaluating pays the question's own expression
    echoed back, and the search probes' 1.5 s budget is gone after two items' set-up."""

    DELAY = 1.0
    _MOST_TERMS = 4
    _SPAN = re.compile(r"\$([^$]+)\$")

    def _draw(self) -> tuple[Any, None]:
        b, d = (int(self.np_random.integers(2, 10)) for _ in range(2))
        return (int(self.np_random.integers(1, b)), b, int(self.np_random.integers(1, d)), d), None

    def _question(self) -> str:
        a, b, c, d = self._a
        return (f"What is $\\frac{{{a}}}{{{b}}} - \\frac{{{c}}}{{{d}}}$? Express your answer as a common fraction. "
                "Let's think step by step and output the final answer within <answer></answer>.")

    def _reset_info(self) -> dict[str, Any]:
        return {"problem_id": "frac/{}/{}/{}/{}".format(*self._a)}

    def _value(self) -> Fraction:
        a, b, c, d = self._a
        return Fraction(a, b) - Fraction(c, d)

    def _gold(self) -> str:
        value = self._value()
        if value.denominator == 1:
            return str(value.numerator)
        return f"{'-' if value < 0 else ''}\\frac{{{abs(value.numerator)}}}{{{value.denominator}}}"

    def _score(self, answer: str) -> float:
        time.sleep(self.DELAY)
        spans = self._SPAN.findall(answer)
        return 1.0 if _latex_value(spans[-1] if spans else answer, self._MOST_TERMS) == self._value() else 0.0


class SlowLiteralGrader(SlowExpressionGrader):
    """The control: as slow, but only a literal number (one term) is read; an expression is not an answer."""

    _MOST_TERMS = 1

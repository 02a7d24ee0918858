r"""QEDMath problem rows: the Problem model, and one raw row normalised and checked into a Problem.

Field aliases are normalised (see :data:`FIELD_ALIASES`); a rubric list of
``{title, points, desc}`` becomes readable text. The type is explicit
(``problem_type`` / ``evaluation_mode`` / ``type``) or read from the data: a
rubric, or a proof request without a short answer, means a proof; a proof
without a rubric is graded by the judge with :data:`GENERIC_PROOF_GUIDELINES`.

A row becomes a Problem with a gold answer its grader can use, or raises
:class:`BadRow` with a :data:`gym_integrity.datacheck.REASONS` code. An answer
problem's gold must be one answer (a reference boxing different answers is
ambiguous) that math_verify reads as math, or short text (a name, a word, an
option letter: matched exactly) (:mod:`~gym_integrity.envs.qed_math.golds`).
Whole sources are loaded by :mod:`gym_integrity.envs.qed_math.problems`.

Example:
    >>> from gym_integrity.envs.qed_math.rows import normalise_row
    >>> p = normalise_row({"id": "t1", "task": "Compute $1+1$.", "answer": "2"}, "inline", 1)
    >>> p.problem_id, p.problem_type, p.gold_answer
    ('t1', 'answer', '2')
    >>> normalise_row({"Problem": "Show that ...", "Solution": "...",
    ...                "rubrics": [{"title": "Setup", "points": 2, "desc": "defines f"}]}, "inline", 3).problem_type
    'proof'
    >>> normalise_row({"problem": "Prove that $\\sqrt{2}$ is irrational.", "solution": "Suppose ..."},
    ...               "inline", 4).grading_guidelines == GENERIC_PROOF_GUIDELINES
    True
    >>> normalise_row({"problem": "Find $x$.", "solution": "$x = \\boxed{2}$ or $x = \\boxed{3}$."}, "inline", 5)
    Traceback (most recent call last):
    ...
    gym_integrity.envs.qed_math.rows.BadRow: the reference solution boxes 2 different answers; ...
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from gym_integrity.checks import is_int
from gym_integrity.datacheck import RowProblem
from gym_integrity.envs.qed_math.golds import check_golds, distinct_boxed, is_option_gold, is_text_gold
from gym_integrity.grading.reader import all_boxed, last_boxed

__all__ = ["Problem", "PROBLEM_TYPES", "FIELD_ALIASES", "GENERIC_PROOF_GUIDELINES", "BadRow", "normalise_row"]

PROBLEM_TYPES = ("proof", "answer", "multi_step")

#: Canonical field <- accepted names, first present wins.
FIELD_ALIASES: dict[str, tuple[str, ...]] = {
    "problem": ("problem", "task", "Problem"),
    "reference_solution": ("reference_solution", "solution", "answer", "Solution"),
    "grading_guidelines": ("grading_guidelines", "rubrics", "schema", "schema_0", "Grading guidelines", "details"),
    "problem_id": ("problem_id", "id"),
    "dataset_source": ("dataset_source", "dataset", "data_source"),
    "problem_type": ("problem_type", "evaluation_mode", "type"),
}

#: The marking scheme of a proof whose row has no rubric: the judge still grades it 0-7.
GENERIC_PROOF_GUIDELINES = (
    "No problem-specific marking scheme was given: grade the proof as a whole against the statement to be proved.\n"
    "- 7 points: a complete and rigorous proof.\n"
    "- 6 points: a complete proof with a minor slip that is easily fixed and does not affect the argument.\n"
    "- 1 to 5 points: an incomplete proof, in proportion to its justified progress toward a complete one "
    "(a key lemma proved, a correct reduction of the problem, a substantial case settled).\n"
    "- 0 points: no substantial justified progress (restating the problem, checking small cases, claims or an "
    "answer without proof), or an argument with a gap or error that breaks it."
)

_TYPE_WORDS = {"proof": "proof", "answer": "answer", "multi_step": "multi_step", "multistep": "multi_step"}
# Rows without an explicit type, rubric or short answer: a request for a proof makes a proof.
_PROOF_REQUEST = re.compile(r"\b(?:prove|disprove|show\s+that|demonstrate\s+that)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Problem:
    """One normalised problem. ``gold_answer`` and ``reference_solution`` are answer-bearing.

    ``grader`` is what grades it: ``"judge"`` (proofs, and multi-step problems
    with a rubric) or ``"verifier"`` (math_verify on the boxed answer); ``answer_kind`` ``"text"``: matched exactly.
    """

    problem_id: str
    problem: str
    problem_type: str
    reference_solution: str
    gold_answer: str
    grading_guidelines: str
    dataset_source: str
    original_problem: str | None = None
    max_attempts: int | None = None
    answer_kind: str = "math"

    @property
    def grader(self) -> str:
        if self.problem_type == "proof" or (self.problem_type == "multi_step" and self.grading_guidelines):
            return "judge"
        return "verifier"

    def __repr__(self) -> str:  # no answer-bearing field in reprs, logs or tracebacks
        return f"Problem(problem_id={self.problem_id!r}, problem_type={self.problem_type!r})"


class BadRow(RowProblem):
    """A row that cannot become a usable Problem (``reason``: a :data:`gym_integrity.datacheck.REASONS` code)."""


def _first(row: Mapping[str, Any], canonical: str) -> Any:
    for name in FIELD_ALIASES[canonical]:
        if name in row and row[name] is not None:
            return row[name]
    return None


def _rubric_text(value: Any) -> str:
    """A rubric as text: a str as is, a list of ``{title, points, desc}`` as one bullet per item."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, Mapping):
        value = [value]
    if isinstance(value, Sequence):
        lines = []
        for i, item in enumerate(value):
            if isinstance(item, str):
                lines.append(f"- {item.strip()}")
                continue
            if not isinstance(item, Mapping):
                raise BadRow("bad_field", f"rubric item {i} must be a dict {{title, points, desc}} or a str")
            title = str(item.get("title") or item.get("name") or f"Item {i + 1}").strip()
            points = item.get("points")
            desc = str(item.get("desc") or item.get("description") or "").strip()
            pts = f" ({points} point{'s' if points != 1 else ''})" if points is not None else ""
            lines.append(f"- {title}{pts}" + (f": {desc}" if desc else ""))
        return "\n".join(lines)
    raise BadRow(
        "bad_field", f"grading guidelines must be text or a list of {{title, points, desc}}, got {type(value).__name__}"
    )


def _text(value: Any, name: str) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise BadRow("bad_field", f"{name} must be text, got {type(value).__name__}")
    return value.strip()


def _explicit_type(row: Mapping[str, Any]) -> str | None:
    """The type a row names, if it names one; a bad ``problem_type``/``evaluation_mode`` is a BadRow."""
    for name in FIELD_ALIASES["problem_type"]:
        value = row.get(name)
        if value is None:
            continue
        word = _TYPE_WORDS.get(re.sub(r"[\s-]+", "_", value.strip().lower())) if isinstance(value, str) else None
        if word is not None:
            return word
        if name == "type":
            continue  # a free-form field in many sets (MATH's subject, "Algebra"): only a type word counts
        raise BadRow("bad_field", f"{name} must be one of {PROBLEM_TYPES}, got {value!r}")
    return None


def _one_gold(text: str, where: str) -> str:
    r"""The single answer ``text`` boxes, or ``text`` itself if it boxes none; several different: BadRow."""
    answers = distinct_boxed(text)
    if len(answers) > 1:
        raise BadRow(
            "ambiguous_gold", f"{where} boxes {len(answers)} different answers; give the gold in an `answer` field"
        )
    return answers[0] if answers else text


def _normalise(row: Any, source: str, index: int) -> tuple[Problem, bool]:
    """A row as a Problem, every check done but math_verify's (the loader batches those), and
    whether its gold is the whole reference solution (which has no ``\\boxed{}``)."""
    if not isinstance(row, Mapping):
        raise BadRow("not_an_object", f"a row must be a JSON object, got {type(row).__name__}")
    problem = _first(row, "problem")
    if problem is None:
        raise BadRow("missing_question", f"no problem text (one of {list(FIELD_ALIASES['problem'])})")
    problem = _text(problem, "problem")
    if not problem:
        raise BadRow("missing_question", "the problem text is empty")
    reference = _first(row, "reference_solution")
    reference = "" if reference is None else _text(reference, "reference_solution")
    guidelines = _rubric_text(_first(row, "grading_guidelines"))
    # An explicit short answer next to a worked solution is the gold answer.
    explicit_answer = (
        row.get("answer") if any(n in row for n in ("reference_solution", "solution", "Solution")) else None
    )
    explicit_answer = None if explicit_answer is None else _text(explicit_answer, "answer")
    kind = _explicit_type(row)
    if kind is None:
        if guidelines:
            kind = "proof"
        elif explicit_answer is not None or all_boxed(reference):
            kind = "answer"
        else:
            kind = "proof" if _PROOF_REQUEST.search(problem) else "answer"
    grades_by_judge = kind == "proof" or (kind == "multi_step" and bool(guidelines))
    whole_reference = False
    if grades_by_judge:
        if not (reference or guidelines):
            raise BadRow("no_reference", "a proof needs a reference solution or grading guidelines")
        if kind == "proof" and not guidelines:
            guidelines = GENERIC_PROOF_GUIDELINES
        # Kept for the trainer's logs and the audit only: the judge grades against reference and rubric.
        if explicit_answer is not None:
            gold = explicit_answer
        else:
            boxed = last_boxed(reference, max_chars=10_000)
            gold = boxed.answer if boxed.answer is not None else reference
    else:
        if explicit_answer is not None:
            gold = _one_gold(explicit_answer, "the answer field")
        else:
            gold = _one_gold(reference, "the reference solution")
            # A worked solution without a box stands in for the gold (an `answer` field alone is a short answer).
            whole_reference = (
                bool(reference)
                and not all_boxed(reference)
                and any(row.get(n) is not None for n in ("reference_solution", "solution", "Solution"))
            )
        if not gold.strip():
            raise BadRow(
                "empty_answer", "an answer problem needs a gold answer (reference_solution / solution / answer)"
            )
    problem_id = _first(row, "problem_id")
    problem_id = f"{source}/{index}" if problem_id is None else _text(problem_id, "problem_id")
    if not problem_id:
        raise BadRow("bad_field", "problem_id is empty")
    attempts = row.get("max_attempts")
    if attempts is not None and (not is_int(attempts) or attempts < 1):
        raise BadRow("bad_field", f"max_attempts must be a positive int, got {attempts!r}")
    source_name = _first(row, "dataset_source")
    original = row.get("original_problem")
    return Problem(
        problem_id=problem_id,
        problem=problem,
        problem_type=kind,
        reference_solution=reference,
        gold_answer=gold.strip(),
        grading_guidelines=guidelines,
        dataset_source=source if source_name is None else str(source_name),
        original_problem=None if original is None else _text(original, "original_problem") or None,
        max_attempts=attempts,
        answer_kind="text" if not grades_by_judge and is_option_gold(gold, problem) else "math",
    ), whole_reference


def _gold_checked(problem: Problem, whole_reference: bool, verdict: tuple[str, str] | None) -> tuple[Problem, Any]:
    """The problem as its gold check leaves it (short words become a text gold), and why the row must go, or None."""
    if verdict is None or verdict[0] == "unchecked":
        return problem, None
    if not whole_reference and is_text_gold(problem.gold_answer, verdict):
        return replace(problem, answer_kind="text"), None
    reason, detail = verdict
    if whole_reference:
        detail = "the gold answer is the whole reference solution (it has no \\boxed{}), and " + detail
    return problem, (reason, detail)


def normalise_row(row: Any, source: str, index: int) -> Problem:
    """One raw row as a checked :class:`Problem`; raises :class:`BadRow` saying what is wrong.

    ``index`` is the row's 1-based number, used for the default id ``"<source>/<index>"``.
    """
    problem, whole_reference = _normalise(row, source, index)
    if problem.grader == "verifier" and problem.answer_kind == "math":
        problem, skip = _gold_checked(problem, whole_reference, check_golds([problem.gold_answer])[problem.gold_answer])
        if skip is not None:
            raise BadRow(*skip)
    return problem

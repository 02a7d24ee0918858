r"""QEDMath problem sets: local JSONL/JSON files and Hugging Face datasets loaded into checked, normalised Problem rows.

One loader for every source ``QEDMath-v0(dataset=...)`` accepts:

* a local ``.jsonl`` file, or a ``.json`` file holding a list or ``{"problems": [...]}``;
* a Hugging Face dataset (through ``datasets``): a hub id ``"owner/name"``, a
  dict ``{"hub_id" | "path", "config", "split"}``, or a loaded ``Dataset``;
* a list mixing any of these; ``None``: the built-in set, ``gym_integrity/data/qed_problems.jsonl``.

Field aliases are normalised (see :data:`FIELD_ALIASES`); a rubric list of
``{title, points, desc}`` becomes readable text. The type is explicit
(``problem_type`` / ``evaluation_mode`` / ``type``) or read from the data: a
rubric, or a proof request without a short answer, means a proof; a proof
without a rubric is graded by the judge with :data:`GENERIC_PROOF_GUIDELINES`.

Every row is checked at load (:mod:`gym_integrity.datacheck`): it loads with a
gold answer its grader can use, or is skipped with one ``DataWarning`` naming
source, row and reason. An answer problem's gold must be one answer (a
reference boxing different answers is ambiguous) that math_verify reads as math,
or short text (a name, a word, an option letter: matched exactly) (:mod:`~gym_integrity.envs.qed_math.golds`).
A source with no usable row raises ``ValueError``. Rows are loaded once per process;
``gym-integrity check-data qed`` prints the same check as a table.

Example:
    >>> from gym_integrity.envs.qed_math.problems import normalise_row
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
    gym_integrity.envs.qed_math.problems.BadRow: the reference solution boxes 2 different answers; ...
"""

from __future__ import annotations

import json
import os
import re
import sys
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from gym_integrity.checks import is_int
from gym_integrity.datacheck import DataReport, DataWarning, RowProblem, user_stacklevel
from gym_integrity.envs.qed_math.golds import check_golds, distinct_boxed, is_option_gold, is_text_gold
from gym_integrity.grading.reader import all_boxed, last_boxed
from gym_integrity.workers import ProcessCache

__all__ = [
    "Problem",
    "ProblemSet",
    "PROBLEM_TYPES",
    "FIELD_ALIASES",
    "BUILTIN_PATH",
    "GENERIC_PROOF_GUIDELINES",
    "BadRow",
    "load_problems",
    "normalise_row",
    "check_problems",
]

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

_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")
_TYPE_WORDS = {"proof": "proof", "answer": "answer", "multi_step": "multi_step", "multistep": "multi_step"}
# Rows without an explicit type, rubric or short answer: a request for a proof makes a proof.
_PROOF_REQUEST = re.compile(r"\b(?:prove|disprove|show\s+that|demonstrate\s+that)\b", re.IGNORECASE)

#: The built-in problem set: package data, found through importlib.resources wherever the package is installed.
BUILTIN_PATH = resources.files("gym_integrity") / "data" / "qed_problems.jsonl"


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


# ----------------------------------------------------------------------------- sources


def _read_local(path: Path | Traversable) -> Iterable[tuple[int, Any]]:
    """(row number, row) pairs of a local file; a JSONL line that is not JSON yields a BadRow."""
    if path.name.endswith(".jsonl"):
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    yield number, json.loads(line)
                except json.JSONDecodeError as exc:
                    yield number, BadRow("invalid_json", f"not valid JSON ({exc.msg})")
        return
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"QEDMathConfig.dataset: {path} is not valid JSON ({exc})") from None
    if isinstance(data, Mapping) and isinstance(data.get("problems"), list):
        data = data["problems"]
    if not isinstance(data, list):
        raise ValueError(f'QEDMathConfig.dataset: {path} must hold a list of problems or {{"problems": [...]}}')
    yield from enumerate(data, start=1)


def _is_hf_dataset(value: Any) -> bool:
    module = sys.modules.get("datasets")
    return module is not None and isinstance(value, (module.Dataset,))


def _load_hub(hub_id: str, config: str | None, split: str) -> Any:
    try:
        import datasets
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise ValueError("QEDMathConfig.dataset: a Hugging Face source needs the `datasets` package") from exc
    try:
        loaded = datasets.load_dataset(hub_id, config, split=split)
    except Exception as exc:
        raise ValueError(
            f"QEDMathConfig.dataset: could not load Hugging Face dataset {hub_id!r} "
            f"(config={config!r}, split={split!r}): {type(exc).__name__}: {exc}"
        ) from None
    return loaded


def _source_key(source: Any) -> Any:
    """A hashable identity for the once-per-process cache."""
    if source is None:
        return ("builtin", str(BUILTIN_PATH))
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if path.is_file():
            stat = path.stat()
            return ("file", str(path.resolve()), stat.st_mtime_ns, stat.st_size)
        if path.is_dir():
            return ("dir", str(path.resolve()), path.stat().st_mtime_ns)
        return ("hub", str(source), None, "train")
    if isinstance(source, Mapping):
        return (
            "hub",
            str(source.get("hub_id") or source.get("path")),
            source.get("config"),
            source.get("split", "train"),
        )
    if _is_hf_dataset(source):
        return ("hf-object", id(source), getattr(source, "_fingerprint", None))
    return ("other", id(source))


def _rows_of(source: Any) -> tuple[str, Iterable[tuple[int, Any]]]:
    """(source name for warnings and default ids, (row number, row) pairs)."""
    if source is None:
        return BUILTIN_PATH.name, _read_local(BUILTIN_PATH)
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if path.is_file():
            if path.suffix not in (".jsonl", ".json"):
                raise ValueError(f"QEDMathConfig.dataset: local files must be .jsonl or .json, got {path.name!r}")
            return str(path), _read_local(path)
        text = str(source)
        if path.is_dir():  # a local dataset directory, read by `datasets` like a hub repo
            return text, enumerate(_load_hub(text, None, "train"), start=1)
        if path.suffix in (".jsonl", ".json") or not _HUB_ID.fullmatch(text):
            raise ValueError(
                f"QEDMathConfig.dataset: {text!r} is not an existing .jsonl/.json file "
                "nor a Hugging Face hub id 'owner/name'"
            )
        return text, enumerate(_load_hub(text, None, "train"), start=1)
    if isinstance(source, Mapping):
        unknown = sorted(set(source) - {"hub_id", "path", "config", "split"})
        hub_id = source.get("hub_id") or source.get("path")
        if unknown or not isinstance(hub_id, str):
            raise ValueError(
                "QEDMathConfig.dataset: a dict source is {'hub_id' | 'path': str, 'config': str, "
                f"'split': str}}; got keys {sorted(source)}"
            )
        if Path(hub_id).is_file():
            return _rows_of(hub_id)
        split = source.get("split", "train")
        return f"{hub_id}:{split}", enumerate(_load_hub(hub_id, source.get("config"), split), start=1)
    if _is_hf_dataset(source):
        name = (getattr(source, "info", None) and source.info.dataset_name) or "dataset"
        return str(name), enumerate(source, start=1)
    raise TypeError(
        "QEDMathConfig.dataset must be None, a .jsonl/.json path, a hub id 'owner/name', a dict "
        "{'hub_id'|'path', 'config', 'split'}, a datasets.Dataset, or a list of these; "
        f"got {type(source).__name__}"
    )


def _scan(source: Any) -> tuple[str, tuple[Problem, ...], DataReport]:
    """Every row of ``source`` checked: (source name, usable problems in row order, report). No warnings, no cache."""
    name, rows = _rows_of(source)
    report = DataReport("QEDMath", name)
    candidates: list[tuple[int, Problem, bool]] = []
    for number, row in rows:
        try:
            if isinstance(row, BadRow):
                raise row
            problem, whole_reference = _normalise(row, name, number)
        except BadRow as exc:
            report.skip(number, exc.reason, exc.detail)
            continue
        candidates.append((number, problem, whole_reference))
    # One batch for math_verify: plain golds cost nothing, the rest share one short-lived worker pool.
    verdicts = check_golds(
        p.gold_answer for _, p, _ in candidates if p.grader == "verifier" and p.answer_kind == "math"
    )
    problems: list[Problem] = []
    seen: set[str] = set()
    for number, problem, whole_reference in candidates:
        if problem.grader == "verifier" and problem.answer_kind == "math":
            verdict = verdicts.get(problem.gold_answer)
            if verdict is not None and verdict[0] == "unchecked":
                report.note(f"gold answers not checked: {verdict[1]}")
            problem, skip = _gold_checked(problem, whole_reference, verdict)
            if skip is not None:
                report.skip(number, *skip)
                continue
        if problem.problem_id in seen:
            report.skip(number, "duplicate_id", f"duplicate problem_id {problem.problem_id!r}")
            continue
        if problem.answer_kind == "text":
            report.note("text gold answers (names, words, option letters) matched exactly")
        if problem.grading_guidelines == GENERIC_PROOF_GUIDELINES:
            report.note("proofs graded with the generic guidelines (no rubric)")
        seen.add(problem.problem_id)
        problems.append(problem)
    report.skipped.sort(key=lambda s: s.row)
    report.loaded = len(problems)
    return name, tuple(problems), report


def check_problems(source: Any = None) -> DataReport:
    """The load-time check of one source, freshly run, as a report (what ``gym-integrity check-data qed`` prints).

    Raises ``ValueError``/``TypeError`` only for a source that cannot be read at all.

    >>> check_problems(None).clean
    True
    """
    return _scan(source)[2]


#: Each source's problems, loaded (and warned about) once per process.
_PROBLEMS: ProcessCache[Any, tuple[Problem, ...]] = ProcessCache("QEDMath problem sets")


def _load_one(source: Any) -> tuple[Problem, ...]:
    key = _source_key(source)
    cached = _PROBLEMS.get(key)
    if cached is not None:
        return cached
    name, problems, report = _scan(source)
    report.warn(stacklevel=user_stacklevel())  # points at the user's line
    if not problems:
        raise ValueError(
            f"QEDMathConfig.dataset: {name} has no usable problem row ({report.summary()}); "
            "`gym-integrity check-data qed SOURCE` lists every skipped row"
        )
    return _PROBLEMS.setdefault(key, problems)


@dataclass(frozen=True)
class ProblemSet:
    """The problems of one env, in load order, with an index by id."""

    problems: tuple[Problem, ...]
    by_id: Mapping[str, int]
    #: Ids the ``problem_types`` filter left out, with their type (for a reset that asks for one by id).
    left_out: Mapping[str, str] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.problems)

    def __repr__(self) -> str:
        return f"ProblemSet({len(self.problems)} problems)"


def load_problems(dataset: Any, problem_types: Sequence[str] | None = None) -> ProblemSet:
    """Every problem of ``dataset`` (a source or a list of sources), optionally only some types.

    A problem id that repeats across sources keeps its first occurrence (warned).
    """
    sources = list(dataset) if isinstance(dataset, (list, tuple)) else [dataset]
    if not sources:
        raise ValueError("QEDMathConfig.dataset: an empty list has no problems")
    problems: list[Problem] = []
    by_id: dict[str, int] = {}
    left_out: dict[str, str] = {}
    for source in sources:
        for problem in _load_one(source):
            if problem_types is not None and problem.problem_type not in problem_types:
                left_out.setdefault(problem.problem_id, problem.problem_type)
                continue
            if problem.problem_id in by_id:
                warnings.warn(
                    f"QEDMath: problem_id {problem.problem_id!r} from {problem.dataset_source} "
                    "repeats an earlier source's; skipped",
                    DataWarning,
                    stacklevel=user_stacklevel(),
                )
                continue
            by_id[problem.problem_id] = len(problems)
            problems.append(problem)
    if not problems:
        raise ValueError(f"QEDMathConfig: no problem of type(s) {list(problem_types or PROBLEM_TYPES)} in the dataset")
    return ProblemSet(tuple(problems), by_id, {k: v for k, v in left_out.items() if k not in by_id})

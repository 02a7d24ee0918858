"""QEDMath problem sets: loading local JSONL/JSON files and Hugging Face datasets into normalised Problem rows.

One loader for every source ``QEDMath-v0(dataset=...)`` accepts:

* a local ``.jsonl`` file, or a ``.json`` file holding a list or ``{"problems": [...]}``;
* a Hugging Face dataset (through ``datasets``): a hub id ``"owner/name"``, a
  dict ``{"hub_id" | "path", "config", "split"}``, or a loaded ``Dataset``;
* a list mixing any of these;
* ``None``: the built-in set, ``gym_integrity/data/qed_problems.jsonl``.

Field aliases are normalised (see :data:`FIELD_ALIASES`); a rubric list of
``{title, points, desc}`` becomes readable text; the type is explicit
(``problem_type`` / ``evaluation_mode``) or detected (a rubric means a proof).
A bad row is skipped with a warning naming its source and row; a source with no
valid row raises ``ValueError``. Rows are loaded once per process.

Example:
    >>> from gym_integrity.envs.qed_math.problems import normalise_row
    >>> p = normalise_row({"id": "t1", "task": "Compute $1+1$.", "answer": "2"}, "inline", 0)
    >>> p.problem_id, p.problem_type, p.gold_answer
    ('t1', 'answer', '2')
    >>> normalise_row({"Problem": "Show that ...", "Solution": "...",
    ...                "rubrics": [{"title": "Setup", "points": 2, "desc": "defines f"}]}, "inline", 3).problem_type
    'proof'
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from gym_integrity.checks import is_int
from gym_integrity.extract import last_boxed

__all__ = ["Problem", "ProblemSet", "PROBLEM_TYPES", "FIELD_ALIASES", "BUILTIN_PATH", "load_problems", "normalise_row"]

PROBLEM_TYPES = ("proof", "answer", "multi_step")

#: Canonical field <- accepted names, first present wins.
FIELD_ALIASES: dict[str, tuple[str, ...]] = {
    "problem": ("problem", "task", "Problem"),
    "reference_solution": ("reference_solution", "solution", "answer", "Solution"),
    "grading_guidelines": ("grading_guidelines", "rubrics", "schema", "schema_0", "Grading guidelines", "details"),
    "problem_id": ("problem_id", "id"),
    "dataset_source": ("dataset_source", "dataset", "data_source"),
    "problem_type": ("problem_type", "evaluation_mode"),
}

_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")

BUILTIN_PATH = Path(__file__).resolve().parents[2] / "data" / "qed_problems.jsonl"


@dataclass(frozen=True)
class Problem:
    """One normalised problem. ``gold_answer`` and ``reference_solution`` are answer-bearing.

    ``grader`` is what grades it: ``"judge"`` (proofs, and multi-step problems
    with a rubric) or ``"verifier"`` (math_verify on the boxed answer).
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

    @property
    def grader(self) -> str:
        if self.problem_type == "proof" or (self.problem_type == "multi_step" and self.grading_guidelines):
            return "judge"
        return "verifier"

    def __repr__(self) -> str:  # no answer-bearing field in reprs, logs or tracebacks
        return f"Problem(problem_id={self.problem_id!r}, problem_type={self.problem_type!r})"


class BadRow(ValueError):
    """A row that cannot become a Problem; the loader warns and skips it."""


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
                raise BadRow(f"rubric item {i} must be a dict {{title, points, desc}} or a str")
            title = str(item.get("title") or item.get("name") or f"Item {i + 1}").strip()
            points = item.get("points")
            desc = str(item.get("desc") or item.get("description") or "").strip()
            pts = f" ({points} point{'s' if points != 1 else ''})" if points is not None else ""
            lines.append(f"- {title}{pts}" + (f": {desc}" if desc else ""))
        return "\n".join(lines)
    raise BadRow(f"grading guidelines must be text or a list of {{title, points, desc}}, got {type(value).__name__}")


def _text(value: Any, name: str) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise BadRow(f"{name} must be text, got {type(value).__name__}")
    return value.strip()


def _gold_from(reference: str, explicit_answer: Any) -> str:
    if explicit_answer is not None:
        return _text(explicit_answer, "answer")
    boxed = last_boxed(reference, max_chars=10_000)
    return boxed.answer if boxed.answer is not None else reference


def normalise_row(row: Any, source: str, index: int) -> Problem:
    """One raw row as a :class:`Problem`; raises :class:`BadRow` saying what is wrong."""
    if not isinstance(row, Mapping):
        raise BadRow(f"a row must be a JSON object, got {type(row).__name__}")
    problem = _first(row, "problem")
    if problem is None:
        raise BadRow(f"no problem text (one of {list(FIELD_ALIASES['problem'])})")
    problem = _text(problem, "problem")
    if not problem:
        raise BadRow("the problem text is empty")
    reference = _first(row, "reference_solution")
    reference = "" if reference is None else _text(reference, "reference_solution")
    guidelines = _rubric_text(_first(row, "grading_guidelines"))
    kind = _first(row, "problem_type")
    if kind is None:
        kind = "proof" if guidelines else "answer"
    if kind not in PROBLEM_TYPES:
        raise BadRow(f"problem_type must be one of {PROBLEM_TYPES}, got {kind!r}")
    # An explicit short answer next to a worked solution is the gold answer.
    explicit_answer = row.get("answer") if any(n in row for n in ("reference_solution", "solution", "Solution")) else None
    gold = _gold_from(reference, explicit_answer) if reference or explicit_answer is not None else ""
    grades_by_judge = kind == "proof" or (kind == "multi_step" and guidelines)
    if grades_by_judge and not (reference or guidelines):
        raise BadRow("a proof needs a reference solution or grading guidelines")
    if not grades_by_judge and not gold:
        raise BadRow("an answer problem needs a gold answer (reference_solution / solution / answer)")
    problem_id = _first(row, "problem_id")
    problem_id = f"{source}/{index}" if problem_id is None else _text(problem_id, "problem_id")
    if not problem_id:
        raise BadRow("problem_id is empty")
    attempts = row.get("max_attempts")
    if attempts is not None and (not is_int(attempts) or attempts < 1):
        raise BadRow(f"max_attempts must be a positive int, got {attempts!r}")
    source_name = _first(row, "dataset_source")
    original = row.get("original_problem")
    return Problem(
        problem_id=problem_id,
        problem=problem,
        problem_type=kind,
        reference_solution=reference,
        gold_answer=gold,
        grading_guidelines=guidelines,
        dataset_source=source if source_name is None else str(source_name),
        original_problem=None if original is None else _text(original, "original_problem") or None,
        max_attempts=attempts,
    )


# ----------------------------------------------------------------------------- sources


def _read_local(path: Path) -> Iterable[tuple[int, Any]]:
    """(row number, row) pairs of a local file; a JSONL line that is not JSON yields a BadRow."""
    if path.suffix == ".jsonl":
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    yield number, json.loads(line)
                except json.JSONDecodeError as exc:
                    yield number, BadRow(f"not valid JSON ({exc.msg})")
        return
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"QEDMathConfig.dataset: {path} is not valid JSON ({exc})") from None
    if isinstance(data, Mapping) and isinstance(data.get("problems"), list):
        data = data["problems"]
    if not isinstance(data, list):
        raise ValueError(f"QEDMathConfig.dataset: {path} must hold a list of problems or {{\"problems\": [...]}}")
    yield from enumerate(data)


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
        raise ValueError(f"QEDMathConfig.dataset: could not load Hugging Face dataset {hub_id!r} "
                         f"(config={config!r}, split={split!r}): {type(exc).__name__}: {exc}") from None
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
        return ("hub", str(source.get("hub_id") or source.get("path")), source.get("config"),
                source.get("split", "train"))
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
            return text, enumerate(_load_hub(text, None, "train"))
        if path.suffix in (".jsonl", ".json") or not _HUB_ID.fullmatch(text):
            raise ValueError(f"QEDMathConfig.dataset: {text!r} is not an existing .jsonl/.json file "
                             "nor a Hugging Face hub id 'owner/name'")
        return text, enumerate(_load_hub(text, None, "train"))
    if isinstance(source, Mapping):
        unknown = sorted(set(source) - {"hub_id", "path", "config", "split"})
        hub_id = source.get("hub_id") or source.get("path")
        if unknown or not isinstance(hub_id, str):
            raise ValueError("QEDMathConfig.dataset: a dict source is {'hub_id' | 'path': str, 'config': str, "
                             f"'split': str}}; got keys {sorted(source)}")
        if Path(hub_id).is_file():
            return _rows_of(hub_id)
        split = source.get("split", "train")
        return f"{hub_id}:{split}", enumerate(_load_hub(hub_id, source.get("config"), split))
    if _is_hf_dataset(source):
        name = (getattr(source, "info", None) and source.info.dataset_name) or "dataset"
        return str(name), enumerate(source)
    raise TypeError("QEDMathConfig.dataset must be None, a .jsonl/.json path, a hub id 'owner/name', a dict "
                    "{'hub_id'|'path', 'config', 'split'}, a datasets.Dataset, or a list of these; "
                    f"got {type(source).__name__}")


_cache: dict[Any, tuple[Problem, ...]] = {}
_cache_lock = threading.Lock()


def _load_one(source: Any) -> tuple[Problem, ...]:
    key = _source_key(source)
    with _cache_lock:
        if key in _cache:
            return _cache[key]
    name, rows = _rows_of(source)
    problems: list[Problem] = []
    seen: set[str] = set()
    for number, row in rows:
        try:
            if isinstance(row, BadRow):
                raise row
            problem = normalise_row(row, name, number)
            if problem.problem_id in seen:
                raise BadRow(f"duplicate problem_id {problem.problem_id!r}")
        except BadRow as exc:
            warnings.warn(f"QEDMath: {name} row {number}: {exc}; row skipped", UserWarning, stacklevel=4)
            continue
        seen.add(problem.problem_id)
        problems.append(problem)
    if not problems:
        raise ValueError(f"QEDMathConfig.dataset: {name} has no valid problem row")
    result = tuple(problems)
    with _cache_lock:
        _cache[key] = result
    return result


@dataclass(frozen=True)
class ProblemSet:
    """The problems of one env, in load order, with an index by id."""

    problems: tuple[Problem, ...]
    by_id: Mapping[str, int]

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
    for source in sources:
        for problem in _load_one(source):
            if problem_types is not None and problem.problem_type not in problem_types:
                continue
            if problem.problem_id in by_id:
                warnings.warn(f"QEDMath: problem_id {problem.problem_id!r} from {problem.dataset_source} "
                              "repeats an earlier source's; skipped", UserWarning, stacklevel=3)
                continue
            by_id[problem.problem_id] = len(problems)
            problems.append(problem)
    if not problems:
        raise ValueError(f"QEDMathConfig: no problem of type(s) {list(problem_types or PROBLEM_TYPES)} in the dataset")
    return ProblemSet(tuple(problems), by_id)

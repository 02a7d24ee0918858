"""QEDMath problem sets: local JSONL/JSON files and Hugging Face datasets loaded into checked, normalised Problem rows.

One loader for every source ``QEDMath-v0(dataset=...)`` accepts:

* a local ``.jsonl`` file, or a ``.json`` file holding a list or ``{"problems": [...]}``;
* a Hugging Face dataset (through ``datasets``): a hub id ``"owner/name"``, a
  dict ``{"hub_id" | "path", "config", "split"}``, or a loaded ``Dataset``;
* a list mixing any of these; ``None``: the built-in set, ``gym_integrity/data/qed_problems.jsonl``.

Each row is normalised and checked by :mod:`gym_integrity.envs.qed_math.rows` (field aliases, rubric
text, type detection, the gold check), whose public names are re-exported here. Every row is checked at
load (:mod:`gym_integrity.datacheck`): it loads with a gold answer its grader can use, or is skipped with
one ``DataWarning`` naming source, row and reason. A source with no usable row raises ``ValueError``.
Rows are loaded once per process; ``gym-integrity check-data qed`` prints the same check as a table.
"""

from __future__ import annotations

import json
import os
import re
import sys
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from gym_integrity.datacheck import DataReport, DataWarning, user_stacklevel
from gym_integrity.envs.qed_math.golds import check_golds
from gym_integrity.envs.qed_math.rows import (
    FIELD_ALIASES,
    GENERIC_PROOF_GUIDELINES,
    PROBLEM_TYPES,
    BadRow,
    Problem,
    _gold_checked,
    _normalise,
    normalise_row,
)
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

_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")

#: The built-in problem set: package data, found through importlib.resources wherever the package is installed.
BUILTIN_PATH = resources.files("gym_integrity") / "data" / "qed_problems.jsonl"


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

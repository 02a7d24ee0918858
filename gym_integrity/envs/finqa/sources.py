"""FinQA's sources: loaders for the FinQA-benchmark layout, the original FinQA JSON and the hub, checked at load.

Two layouts are read:

* **FinQA-benchmark** (the layout of public FinQA tool environments)::

      <root>/benchmark_questions/finqa.csv      id, user_query, company, question, answer, question_type, explanation
      <root>/input_companies/<company>/<table>.json          a table, pandas "columns" orient
      <root>/input_companies/tables_cleaned_all_companies.json
                                                 {"<company>/<table>": {table, description, column_names, ...}}

* **Original FinQA JSON** (``train.json``/``dev.json``/``test.json``, a list of
  records with ``pre_text``, ``post_text``, ``table``, ``id`` and ``qa``
  (``question``, ``program``, ``exe_ans``, ``answer``)). Each record's table
  becomes a queryable table named ``filing_table`` of a "company" named after the
  filing, and its text a document the agent can read.

Everything is read at load time from names found on disk by the loader; the
agent's names are only ever looked up in the loaded index, never joined into a
path. Every question is checked at load (the rules in
:mod:`gym_integrity.envs.finqa.data`'s docstring).
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from gym_integrity.datacheck import DataReport, RowProblem
from gym_integrity.envs.finqa.records import FinQADataset, Question, Table
from gym_integrity.envs.finqa.scoring import score_answer
from gym_integrity.grading.numbers import GROUPED
from gym_integrity.protocol import Verdict

__all__ = [
    "detect_layout",
    "load_benchmark_layout",
    "load_finqa_json",
    "load_finqa_records",
    "load_hub",
    "load_tables_dir",
]

_CLEANED_FILE = "tables_cleaned_all_companies.json"
#: The name of an original-FinQA record's table ("table" is an SQL keyword).
_RECORD_TABLE = "filing_table"
_PLAIN_NUMBER = re.compile(rf"-?\$?{GROUPED}(?:\.\d+)?%?")


# ------------------------------------------------------------------ tables


def _table_from_columns(company: str, name: str, description: str, data: Any) -> Table:
    """A Table from pandas JSON: "columns" orient ``{col: {row: v}}``, "records" ``[{col: v}]`` or "split"."""
    if isinstance(data, str):
        data = json.loads(data) if data.strip() else {}
    if isinstance(data, Mapping) and "columns" in data and "data" in data and isinstance(data["data"], list):
        columns = [str(c) for c in data["columns"]]
        rows = [tuple(r) for r in data["data"]]
        return Table(company, name, description, tuple(columns), tuple(rows))
    if isinstance(data, list):
        columns = []
        for record in data:
            for key in record:
                if str(key) not in columns:
                    columns.append(str(key))
        rows = [tuple(record.get(c) for c in columns) for record in data]
        return Table(company, name, description, tuple(columns), tuple(rows))
    if not isinstance(data, Mapping):
        raise ValueError(f"table {company}/{name}: unsupported table JSON ({type(data).__name__})")
    columns = [str(c) for c in data]
    keys: list[str] = []
    for col_values in data.values():
        if isinstance(col_values, Mapping):
            for k in col_values:
                if k not in keys:
                    keys.append(k)
    keys.sort(key=lambda k: (0, int(k)) if str(k).lstrip("-").isdigit() else (1, str(k)))
    rows = [tuple((data[c] or {}).get(k) if isinstance(data[c], Mapping) else None for c in data) for k in keys]
    return Table(company, name, description, tuple(columns), tuple(rows))


def _clean_table_name(name: str) -> str:
    for suffix in (".json", ".txt"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


# ------------------------------------------------------------------ checks


def _scores_itself(answer: str) -> bool:
    """True if submitting ``answer`` verbatim scores ``correct`` against it: a gold the scorer can use.

    >>> [_scores_itself(a) for a in ("12,480", "-24", "38.2%", "2023: 1.2, 2024: 1.5", "yes", "%", "$")]
    [True, True, True, True, True, False, False]
    """
    # A plain number always reads as itself: skipping the scorer there keeps a 10k-question load fast.
    return bool(_PLAIN_NUMBER.fullmatch(answer)) or score_answer(answer, answer).verdict is Verdict.CORRECT


def _checked(question: Question) -> Question:
    """``question`` with only its usable answer forms, or RowProblem: no text, empty or unreadable answer."""
    if not question.user_query:
        raise RowProblem("missing_question", "no question text (question / user_query)")
    forms = tuple(a for a in question.answers if a.strip())
    if not forms:
        raise RowProblem("empty_answer", "the answer is empty")
    usable = tuple(a for a in forms if _scores_itself(a))
    if not usable:
        raise RowProblem(
            "unparsable_gold",
            "the FinQA scorer cannot read the answer as numbers or text, "
            "so even the correct submission would score incorrect",
        )
    exact = question.exact_answer if question.exact_answer and _scores_itself(question.exact_answer) else None
    if usable == question.answers and exact == question.exact_answer:
        return question
    return replace(question, answers=usable, exact_answer=exact)


def _keep_answerable(
    numbered: Iterable[tuple[int, Question]],
    tables: Mapping[tuple[str, str], Table],
    documents: Mapping[str, str],
    report: DataReport,
) -> tuple[Question, ...]:
    """The questions whose company has a table (with columns) or a document and whose id is new; the rest go in
    ``report``."""
    companies = {company for (company, _), table in tables.items() if table.columns}
    companies |= {company for company, text in documents.items() if text}
    kept: list[Question] = []
    seen: set[str] = set()
    for number, question in numbered:
        if not question.company:
            report.skip(number, "no_tables", "the row names no company")
        elif question.company not in companies:
            report.skip(number, "no_tables", f"company {question.company!r} has no tables")
        elif question.id in seen:
            report.skip(number, "duplicate_id", f"duplicate question id {question.id!r}")
        else:
            seen.add(question.id)
            kept.append(question)
    report.skipped.sort(key=lambda s: s.row)
    report.loaded = len(kept)
    return tuple(kept)


def _benchmark_question(n: int, row: Mapping[Any, Any]) -> Question:
    """A benchmark-layout row (CSV or hub) as a checked Question; ``n`` is the 0-based data row for default ids."""

    def cell(name: str) -> str:
        value = row.get(name)
        return "" if value is None else str(value).strip()

    question = cell("question") or cell("user_query")
    return _checked(
        Question(
            id=cell("id") or f"q{n}",
            company=cell("company"),
            question=question,
            user_query=cell("user_query") or question,
            answers=(cell("answer"),),
            question_type=cell("question_type"),
            explanation=cell("explanation"),
        )
    )


# ------------------------------------------------------------------ benchmark layout


def _read_questions_csv(path: Path, report: DataReport) -> list[tuple[int, Question]]:
    """(line where the record starts, checked Question) pairs; rows that fail a check go in ``report``."""
    questions = []
    with open(path, newline="", encoding="utf-8") as fh:
        # csv.reader, not DictReader: DictReader skips blank lines unseen, so the line after the last record read
        # would be off by every blank line before the next one; here a blank line is a row of its own ([]).
        reader = csv.reader(fh)
        fieldnames = next((cells for cells in reader if cells), [])  # the header: the first non-blank row
        missing = {"company", "question", "answer"} - set(fieldnames or ())
        if missing:
            raise ValueError(
                f"{path.name}: missing column(s) {sorted(missing)}; expected id, user_query, company, "
                "question, answer, question_type, explanation"
            )
        line, n = reader.line_num + 1, 0
        for cells in reader:
            if cells:
                row: dict[str | None, Any] = dict(
                    zip(fieldnames, cells)
                )  # DictReader's rules: a missing cell is None, extras under None
                row.update({name: None for name in fieldnames[len(cells) :]})
                if len(cells) > len(fieldnames):
                    row[None] = cells[len(fieldnames) :]
                try:
                    questions.append((line, _benchmark_question(n, row)))
                except RowProblem as exc:
                    report.skip(line, exc.reason, exc.detail)
                n += 1
            line = reader.line_num + 1
    return questions


def load_tables_dir(companies_dir: Path) -> dict[tuple[str, str], Table]:
    """Tables of ``input_companies/``: the cleaned index first, then any ``<company>/<table>.json`` it lacks."""
    tables: dict[tuple[str, str], Table] = {}
    cleaned_path = companies_dir / _CLEANED_FILE
    if cleaned_path.is_file():
        with open(cleaned_path, encoding="utf-8") as fh:
            cleaned = json.load(fh)
        for key, info in cleaned.items():
            company, _, name = str(key).partition("/")
            company = str(info.get("company") or company)
            name = _clean_table_name(name)
            tables[(company, name)] = _table_from_columns(
                company, name, str(info.get("description") or ""), info.get("table", "{}")
            )
    if companies_dir.is_dir():
        for company_dir in sorted(p for p in companies_dir.iterdir() if p.is_dir()):
            for table_file in sorted(company_dir.glob("*.json")):
                key = (company_dir.name, table_file.stem)
                if key in tables:
                    continue
                with open(table_file, encoding="utf-8") as fh:
                    tables[key] = _table_from_columns(key[0], key[1], "", json.load(fh))
    return tables


def load_benchmark_layout(
    root: str | os.PathLike[str], questions_file: str = "finqa.csv", source: str | None = None
) -> FinQADataset:
    """Load ``<root>/benchmark_questions/<questions_file>`` and ``<root>/input_companies/``."""
    root = Path(root)
    csv_path = root / "benchmark_questions" / questions_file
    if not csv_path.is_file():
        raise FileNotFoundError(f"FinQA data: no benchmark_questions/{questions_file} under the data path")
    report = DataReport("FinQA", str(csv_path))
    numbered = _read_questions_csv(csv_path, report)
    tables = load_tables_dir(root / "input_companies")
    questions = _keep_answerable(numbered, tables, {}, report)
    return FinQADataset(source or "local:benchmark", questions, tables, report=report)


# ------------------------------------------------------------------ original FinQA JSON


def _sanitize(name: str, fallback: str) -> str:
    text = re.sub(r"[^0-9a-zA-Z]+", "_", str(name)).strip("_").lower()
    return text or fallback


def _format_exe_ans(value: Any) -> str:
    """FinQA's ``exe_ans`` as a gold form: a float to at most 10 decimals, written out (``1e-05`` is no number the
    scorer reads: it was kept as a text gold, and only the annotator's coarser form was matched as a number).

    >>> [_format_exe_ans(v) for v in (-0.0626, 1e-05, 94.0, 0.1 + 0.2, "yes")]
    ['-0.0626', '0.00001', '94.0', '0.3', 'yes']
    """
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if abs(value) >= 1e16:
            return repr(value)
        return f"{value:.10f}".rstrip("0").rstrip(".") if value != int(value) else f"{value:.1f}"
    return str(value).strip()


def _record_table(company: str, raw: Sequence[Sequence[Any]]) -> Table:
    rows = [list(map(lambda c: "" if c is None else str(c).strip(), r)) for r in raw if isinstance(r, (list, tuple))]
    if not rows:
        return Table(company, _RECORD_TABLE, "", (), ())
    width = max(len(r) for r in rows)
    header = rows[0] + [""] * (width - len(rows[0]))
    columns: list[str] = []
    for i, cell in enumerate(header):
        col = _sanitize(cell, "row_label" if i == 0 else f"col_{i}")
        while col in columns:
            col += f"_{i}"
        columns.append(col)
    body = tuple(tuple((r + [""] * (width - len(r)))[:width]) for r in rows[1:])
    return Table(
        company,
        _RECORD_TABLE,
        "the table of the filing page (first row of the original is the header)",
        tuple(columns),
        body,
    )


def load_finqa_records(
    records: Iterable[Mapping[str, Any]], source: str = "local:finqa_json", report_name: str | None = None
) -> FinQADataset:
    """Build a dataset from original FinQA records (dicts with pre_text, post_text, table, id, qa), checked.

    ``report_name`` names the records in warnings (a file path, a hub split); default ``source``.
    """
    report = DataReport("FinQA", report_name or source)
    numbered: list[tuple[int, Question]] = []
    tables: dict[tuple[str, str], Table] = {}
    documents: dict[str, str] = {}
    used_ids: set[str] = set()
    for n, record in enumerate(records):
        number = n + 1
        if not isinstance(record, Mapping):
            report.skip(number, "not_an_object", f"a record must be a JSON object, got {type(record).__name__}")
            continue
        qa: Mapping[str, Any] = record["qa"] if isinstance(record.get("qa"), Mapping) else record
        record_id = str(record.get("id") or f"record_{n}")
        base = _sanitize(re.sub(r"(\.pdf)?-\d+$", "", record_id), f"filing_{n}")
        table = _record_table(base, record.get("table") or [])
        pre = "\n".join(str(s) for s in (record.get("pre_text") or [])).strip()
        post = "\n".join(str(s) for s in (record.get("post_text") or [])).strip()
        exe = qa.get("exe_ans")
        answer = str(qa.get("answer") or "").strip()
        forms = tuple(dict.fromkeys(a for a in (_format_exe_ans(exe) if exe is not None else "", answer) if a))
        question_text = str(qa.get("question") or "").strip()
        try:
            if not table.columns and not (pre or post):
                raise RowProblem("no_tables", f"filing {record_id!r} has neither a table nor text")
            question = _checked(
                Question(
                    id=record_id,
                    company=base,
                    question=question_text,
                    user_query=question_text,
                    answers=forms,
                    question_type="finqa",
                    explanation=str(qa.get("program") or qa.get("program_re") or ""),
                    exact_answer=_format_exe_ans(exe) if exe is not None else (answer or None),
                )
            )
        except RowProblem as exc:
            report.skip(number, exc.reason, exc.detail)
            continue
        document = (
            pre + "\n\n[the filing's table is available through get_table_info and sql_query]\n\n" + post
        ).strip()
        company, k = base, 1
        # Records on one filing share a company, unless their text or table differ.
        while company in documents and (
            documents[company] != document or tables[(company, _RECORD_TABLE)].rows != table.rows
        ):
            k += 1
            company = f"{base}_{k}"
        if company not in documents:
            documents[company] = document
            tables[(company, _RECORD_TABLE)] = replace(table, company=company)
        qid = record_id
        while qid in used_ids:
            qid += "+"
        used_ids.add(qid)
        numbered.append((number, replace(question, id=qid, company=company)))
    questions = _keep_answerable(numbered, tables, documents, report)
    return FinQADataset(source, questions, tables, documents, report=report)


def load_finqa_json(path: str | os.PathLike[str], split: str = "test") -> FinQADataset:
    """Original FinQA JSON: a file, or a directory holding ``<split>.json``."""
    path = Path(path)
    if path.is_dir():
        path = path / f"{split}.json"
    if not path.is_file():
        raise FileNotFoundError(f"FinQA data: no original-FinQA JSON file {path.name!r} under the data path")
    with open(path, encoding="utf-8") as fh:
        records = json.load(fh)
    if isinstance(records, Mapping):
        records = records.get("data", [records])
    return load_finqa_records(records, source="local:finqa_json", report_name=str(path))


def detect_layout(path: str | os.PathLike[str], split: str = "test", questions_file: str = "finqa.csv") -> str:
    """``"benchmark"`` or ``"finqa_json"`` for a local path (raises FileNotFoundError if neither)."""
    path = Path(path)
    if path.is_dir() and (path / "benchmark_questions" / questions_file).is_file():
        return "benchmark"
    if (path.is_file() and path.suffix == ".json") or (path.is_dir() and (path / f"{split}.json").is_file()):
        return "finqa_json"
    raise FileNotFoundError(
        "FinQA data path holds neither benchmark_questions/<file>.csv (FinQA-benchmark layout) nor an "
        f"original FinQA JSON file ({split}.json)"
    )


# ------------------------------------------------------------------ hub


def load_hub(hub_id: str, split: str = "test", tables_path: str | None = None) -> FinQADataset:
    """A dataset through ``datasets.load_dataset``: original-FinQA records, or benchmark-style
    question rows whose tables come from ``tables_path`` (a FinQA-benchmark root)."""
    import datasets  # heavy: only when a hub id is used

    rows = datasets.load_dataset(hub_id, split=split)
    columns = set(rows.column_names)
    if "table" in columns and ("qa" in columns or "question" in columns) and "company" not in columns:
        return load_finqa_records(rows, source=f"hub:{hub_id}", report_name=f"hub:{hub_id}:{split}")
    if {"company", "question", "answer"} <= columns:
        if tables_path is None:
            raise ValueError(
                f"FinQAConfig.hub_id={hub_id!r} holds benchmark questions without tables: set "
                "data_path (or FINQA_DATA_PATH) to the FinQA-benchmark root holding input_companies/"
            )
        report = DataReport("FinQA", f"hub:{hub_id}:{split}")
        numbered: list[tuple[int, Question]] = []
        for n, row in enumerate(rows):
            try:
                numbered.append((n + 1, _benchmark_question(n, row)))
            except RowProblem as exc:
                report.skip(n + 1, exc.reason, exc.detail)
        tables = load_tables_dir(Path(tables_path) / "input_companies")
        return FinQADataset(f"hub:{hub_id}", _keep_answerable(numbered, tables, {}, report), tables, report=report)
    raise ValueError(
        f"FinQAConfig.hub_id={hub_id!r}: rows have columns {sorted(columns)}; expected original FinQA "
        "records (pre_text, post_text, table, qa) or benchmark questions (company, question, answer)"
    )

"""FinQA's loaded rows: Table (one queryable table), Question, and FinQADataset (questions plus their table index)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gym_integrity.datacheck import DataReport

__all__ = ["FinQADataset", "Question", "Table"]

_NUMERIC_STRIP = re.compile(r"[\s$,()%\u2014\u2013\u2212+-]")


@dataclass(frozen=True)
class Table:
    """One queryable table: ``columns`` names and ``rows`` (tuples of str/int/float/None)."""

    company: str
    name: str
    description: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]

    def column_dtypes(self) -> dict[str, str]:
        """pandas-style dtype names per column (``int64``, ``float64``, ``object``)."""
        out = {}
        for i, col in enumerate(self.columns):
            kinds = {type(r[i]) for r in self.rows if r[i] is not None}
            if kinds and kinds <= {int}:
                out[col] = "int64"
            elif kinds and kinds <= {int, float}:
                out[col] = "float64"
            else:
                out[col] = "object"
        return out

    def is_numeric_column(self, index: int) -> bool:
        """True if every non-empty cell of the column looks like a number ($, commas, (x), % allowed)."""
        for row in self.rows:
            value = row[index]
            if value is None or isinstance(value, (int, float)):
                continue
            text = _NUMERIC_STRIP.sub("", str(value))
            text = re.sub(r"(?i)(years?|months?|million|billion|x)$", "", text)
            if text and not re.fullmatch(r"\d*\.?\d+", text):
                return False
        return True


@dataclass(frozen=True)
class Question:
    """One question. ``answers`` (accepted forms), ``exact_answer`` and ``explanation`` are answer-bearing."""

    id: str
    company: str
    question: str
    user_query: str
    answers: tuple[str, ...]
    question_type: str = ""
    explanation: str = ""
    exact_answer: str | None = None


@dataclass(frozen=True)
class FinQADataset:
    """Questions plus the table/document index they are answered from (immutable, shared)."""

    source: str
    questions: tuple[Question, ...]
    tables: Mapping[tuple[str, str], Table]
    documents: Mapping[str, str] = field(default_factory=dict)
    #: What the load-time check loaded and skipped (None for a dataset built by hand).
    report: DataReport | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        companies: dict[str, list[str]] = {}
        for company, name in self.tables:
            companies.setdefault(company, []).append(name)
        for company in self.documents:
            companies.setdefault(company, [])
        object.__setattr__(self, "company_tables", {c: tuple(sorted(t)) for c, t in sorted(companies.items())})
        object.__setattr__(self, "question_index", {q.id: i for i, q in enumerate(self.questions)})

    company_tables: Mapping[str, tuple[str, ...]] = field(init=False, repr=False, compare=False)
    question_index: Mapping[str, int] = field(init=False, repr=False, compare=False)

    def __repr__(self) -> str:
        return (
            f"FinQADataset(source={self.source!r}, questions={len(self.questions)}, "
            f"companies={len(self.company_tables)}, tables={len(self.tables)})"
        )

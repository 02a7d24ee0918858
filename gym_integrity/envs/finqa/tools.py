"""The FinQA tools and their OpenAI function-calling JSON schemas.

``get_descriptions``, ``get_table_info``, ``sql_query`` and ``submit_answer``
(plus ``read_document`` when the data set has documents, as original FinQA
records do). Tool results are strings (JSON or an ``Error: ...`` line); the
agent's company and table names are looked up in the loaded index only.

Example:
    >>> from gym_integrity.envs.finqa.data import load_dataset_cached
    >>> tools = FinQATools(load_dataset_cached(None))
    >>> tools.call("get_descriptions", {"company_name": "helios_energy"})[0][:40]
    '["hel_CapitalExpendituresByCategoryTable'
    >>> tools.call("get_table_info", {"company_name": "../../etc", "table_name": "passwd"})[0][:36]
    "Error: unknown company '../../etc'. "
    >>> [s["function"]["name"] for s in TOOL_SCHEMAS]
    ['get_descriptions', 'get_table_info', 'sql_query', 'submit_answer']
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from gym_integrity.envs.finqa.records import FinQADataset, Table
from gym_integrity.envs.finqa.sql_engine import SQLSandbox
from gym_integrity.envs.finqa.sql_sandbox import PooledSQLSandbox

__all__ = ["TOOL_SCHEMAS", "DOCUMENT_TOOL_SCHEMA", "TOOL_NAMES", "LIST_TOOLS", "FinQATools", "tool_schemas"]

LIST_TOOLS = "list_tools"
_MAX_DISTINCT = 100


def _function(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


_COMPANY = {
    "type": "string",
    "description": "The company's name exactly as given in the question (e.g. 'helios_energy').",
}
_TABLE = {"type": "string", "description": "A table name returned by get_descriptions."}

#: The four tools of every FinQA episode, as OpenAI function-calling schemas (for chat templates).
TOOL_SCHEMAS: tuple[dict[str, Any], ...] = (
    _function(
        "get_descriptions",
        "List the names of the tables available for a company's 10-K filing.",
        {"company_name": _COMPANY},
        ["company_name"],
    ),
    _function(
        "get_table_info",
        "Describe one table: its description, column names, column types and the distinct values of its "
        "non-numeric (label) columns. Numeric cells are not shown: query them with sql_query.",
        {"company_name": _COMPANY, "table_name": _TABLE},
        ["company_name", "table_name"],
    ),
    _function(
        "sql_query",
        "Run one read-only SQLite SELECT on one table and get the rows as JSON. Name the columns "
        "(SELECT * is refused) and filter rows with WHERE (or HAVING); quote column names that are years, "
        "e.g. SELECT \"2024\" FROM <table> WHERE <label column> = '<label>' (get_table_info lists both). "
        "to_number(x) turns '$1,234', '(56)' and "
        "'7.5%' into numbers.",
        {
            "company_name": _COMPANY,
            "table_name": _TABLE,
            "query": {"type": "string", "description": "One SELECT statement over the table named in table_name."},
        },
        ["company_name", "table_name", "query"],
    ),
    _function(
        "submit_answer",
        "Submit the final answer and end the episode. Give the number (e.g. '12.5%', '-3,075', '0.125'), "
        "several values separated by ',' or ';' in the order the question asks, or year-keyed values like "
        "'2023: 5.1%, 2024: 6.0%' (a key takes ':' or '='). A percent keeps its sign: '12.5%' or '0.125', never "
        "'12.5'. Words are read: a scale word ('million'), a unit ('shares') or a point unit ('bps') only where the "
        "question asks in it, a direction word ('down', 'a decrease of') as the sign. A ratio's slash is unspaced "
        "('3/4'): ' / ' separates two values. A name is given alone, as the tables write it.",
        {"answer": {"type": "string", "description": "The final answer; \\boxed{...} is accepted."}},
        ["answer"],
    ),
)

#: Original-FinQA records also carry the filing's text.
DOCUMENT_TOOL_SCHEMA: dict[str, Any] = _function(
    "read_document",
    "Read the text of the filing page (the paragraphs before and after its table).",
    {"company_name": _COMPANY},
    ["company_name"],
)

TOOL_NAMES: tuple[str, ...] = tuple(s["function"]["name"] for s in TOOL_SCHEMAS) + ("read_document",)


def tool_schemas(with_documents: bool) -> list[dict[str, Any]]:
    """A fresh copy of the schemas of a data set with or without documents."""
    schemas = list(TOOL_SCHEMAS) + ([DOCUMENT_TOOL_SCHEMA] if with_documents else [])
    return copy.deepcopy(schemas)


def _shown(name: Any) -> str:
    """An agent-supplied name, quoted and cut, for an error message."""
    text = name if isinstance(name, str) else str(type(name).__name__)
    return repr(text[:80] + ("..." if len(text) > 80 else ""))


class FinQATools:
    """The tools over one shared :class:`FinQADataset` (stateless: one instance may serve many envs).

    ``sandbox`` runs ``sql_query``: by default a :class:`PooledSQLSandbox` (each
    query on a killable worker); an in-process :class:`SQLSandbox` has layers
    1-4 only (tests of those layers use it).
    """

    def __init__(
        self, dataset: FinQADataset, sandbox: PooledSQLSandbox | SQLSandbox | None = None, max_result_chars: int = 8000
    ) -> None:
        self.dataset = dataset
        self.sandbox = sandbox or PooledSQLSandbox()
        self.max_result_chars = max_result_chars
        self.has_documents = bool(dataset.documents)
        self.schemas = tool_schemas(self.has_documents)
        self.names = tuple(s["function"]["name"] for s in self.schemas)
        self._required = {s["function"]["name"]: tuple(s["function"]["parameters"]["required"]) for s in self.schemas}
        # Case-insensitive lookups, built once: names are only ever looked up here.
        self._companies = {c.lower(): c for c in dataset.company_tables}
        self._tables = {c: {t.lower(): t for t in ts} for c, ts in dataset.company_tables.items()}
        self._info_cache: dict[tuple[str, str], str] = {}  # the data are immutable: describe each table once

    # -------------------------------------------------------------- lookups

    def _company(self, name: Any) -> tuple[str | None, str]:
        if isinstance(name, str) and name.strip().lower() in self._companies:
            return self._companies[name.strip().lower()], ""
        available = list(self.dataset.company_tables)
        shown = available if len(available) <= 30 else available[:30] + ["..."]
        return None, f"Error: unknown company {_shown(name)}. Available companies: {json.dumps(shown)}"

    def _table(self, company: str, name: Any) -> tuple[Table | None, str]:
        key = name.strip() if isinstance(name, str) else ""
        for suffix in (".json", ".txt"):
            if key.endswith(suffix):
                key = key[: -len(suffix)]
        table_name = self._tables.get(company, {}).get(key.lower())
        if table_name is None:
            return None, (
                f"Error: unknown table {_shown(name)} for company {company!r}; "
                "call get_descriptions(company_name) for the table names."
            )
        return self.dataset.tables[(company, table_name)], ""

    def _company_table(self, company_name: Any, table_name: Any) -> tuple[str, Table | None, str]:
        """``(company, table, "")``, or ``(..., None, error)`` naming whichever name is unknown."""
        company, error = self._company(company_name)
        if company is None:
            return "", None, error
        table, error = self._table(company, table_name)
        return company, table, error

    # -------------------------------------------------------------- tools

    def get_descriptions(self, company_name: Any) -> str:
        company, error = self._company(company_name)
        if company is None:
            return error
        return json.dumps(list(self.dataset.company_tables[company]))

    def get_table_info(self, company_name: Any, table_name: Any) -> str:
        company, table, error = self._company_table(company_name, table_name)
        if table is None:
            return error
        cached = self._info_cache.get((company, table.name))
        if cached is None:
            cached = self._info_cache[(company, table.name)] = self._describe(table)
        return cached

    def _describe(self, table: Table) -> str:
        distinct: dict[str, list[Any]] = {}
        for i, col in enumerate(table.columns):
            # The first column holds the row labels: always shown, as the benchmark does.
            if i > 0 and table.is_numeric_column(i):
                continue
            values = list(dict.fromkeys(row[i] for row in table.rows))
            distinct[col] = values[:_MAX_DISTINCT] + (["..."] if len(values) > _MAX_DISTINCT else [])
        info = {
            "table_name": table.name,
            "description": table.description,
            "column_names": list(table.columns),
            "column_dtypes": table.column_dtypes(),
            "unique_vals_per_col": distinct,
            "row_count": len(table.rows),
        }
        return json.dumps(info, ensure_ascii=False, default=str)

    def sql_query(self, company_name: Any, table_name: Any, query: Any) -> str:
        _, table, error = self._company_table(company_name, table_name)
        if table is None:
            return error
        return self.sandbox.run(table, query)

    def read_document(self, company_name: Any) -> str:
        company, error = self._company(company_name)
        if company is None:
            return error
        text = self.dataset.documents.get(company)
        if text is None:
            return f"Error: no document for company {company!r}."
        return text

    # -------------------------------------------------------------- dispatch

    def check_arguments(self, name: str, arguments: Mapping[str, Any]) -> str | None:
        """Why ``arguments`` do not fit tool ``name``, or None."""
        required = self._required[name]
        missing = [a for a in required if a not in arguments]
        unknown = [a for a in arguments if a not in required]
        if missing or unknown:
            parts = []
            if missing:
                parts.append(f"missing {missing}")
            if unknown:
                parts.append(f"unexpected {[a[:40] for a in unknown[:5]]}")
            return f"Error: {name} takes arguments {list(required)}; {', '.join(parts)}."
        bad = [a for a in required if not isinstance(arguments[a], (str, int, float)) or isinstance(arguments[a], bool)]
        if bad:
            return f"Error: {name} arguments {bad} must be strings."
        return None

    def call(self, name: str, arguments: Mapping[str, Any]) -> tuple[str, bool]:
        """Run a non-submit tool: ``(result text, ok)``. Unknown names and bad arguments give an error text."""
        if name not in self.names or name == "submit_answer":
            return f"Error: unknown tool {_shown(name)}. Tools: {list(self.names) + [LIST_TOOLS]}.", False
        problem = self.check_arguments(name, arguments)
        if problem is not None:
            return problem, False
        args = {k: (v if isinstance(v, str) else str(v)) for k, v in arguments.items()}
        try:
            text = getattr(self, name)(**args)
        except Exception as exc:  # a tool bug must not crash the episode or leak internals
            return f"Error: the tool {name} failed ({type(exc).__name__}).", False
        if len(text) > self.max_result_chars:
            text = text[: self.max_result_chars] + f"\n(result cut to {self.max_result_chars} characters)"
        return text, not text.startswith("Error")

"""The SQL engine of FinQA's sandbox (layers 1-4): one SELECT over one loaded table, in a fresh in-memory sqlite.

:class:`SQLSandbox` is what a worker of the SQL pool runs; the env's tool runs
it on a killable worker (layer 5, :mod:`gym_integrity.envs.finqa.sql_sandbox`).
The layers are one guarantee (a query text reaches sqlite only through all of
them), so they stay together here.

Layers, each enough on its own for the thing it stops:

1. **Shape check** on the query text (comments and literals blanked first):
   a single statement that starts with ``SELECT`` or ``WITH``; no ``SELECT *``
   (name the columns); a ``WHERE`` or ``HAVING`` filter (no unfiltered scans);
   no ``RECURSIVE``.
2. **A fresh ``:memory:`` database** holding only the one table asked for, built
   from the loaded rows. No file is opened, so there is no path to reveal,
   overwrite or attach; ``SQLITE_LIMIT_ATTACHED`` is 0, extension loading
   stays disabled, and ``temp_store=MEMORY`` keeps sorts off temporary files.
3. **``PRAGMA query_only=ON``** set by us before the query is handed over, then
   **an authorizer** that allows only ``SELECT``, reading that table, and an
   allow-list of scalar/aggregate functions. PRAGMA, ATTACH, writes, DDL,
   ``load_extension``, ``randomblob``/``zeroblob``/``printf`` (one C call the
   clock cannot interrupt), ``sqlite_master`` and
   recursive CTEs are denied at prepare time.
4. **Bounds inside sqlite**: a wall clock enforced by a progress handler (cuts
   off a huge cross join with a "ran longer than" error), a row cap, a
   string-length limit, and a cap on the characters returned.

The wall clock is only as good as the work between two checks of it: the
handler runs every ``_PROGRESS_OPS`` VM instructions, and one instruction can
be a whole C function call. So the costliest calls are bounded too: strings
stop at ``_MAX_STRING_BYTES`` (instr and replace search in O(n*m): under 1 ms
at 10 KB, ~110 ms at the former 100 KB), LIKE/GLOB patterns at
``_MAX_PATTERN_CHARS`` (a GLOB character class is O(n*m) too), two-argument
``trim``/``ltrim``/``rtrim`` (O(n*m) in sqlite: 8-10 s in one call on a
90 KB string) are ours, linear and refuse sets over ``_MAX_TRIM_SET``
characters, and rows are fetched only until the result is longer than it
may be returned. What still runs between checks (a sort, the prepare phase)
is cut by the worker's run budget: any query's step ends within 1.2x the
clock (``tests/envs/finqa/test_sql_sandbox.py`` holds an adversarial set to it under a
0.5 s clock, the smallest ``FinQAConfig.sql_timeout_s``).

Errors are short and name what is required; they never hold a file path (there is none).

Example (:class:`SQLSandbox` runs in the calling process: it is what a worker runs;
the env uses :class:`~gym_integrity.envs.finqa.sql_sandbox.PooledSQLSandbox`, which takes the same calls):
    >>> from gym_integrity.envs.finqa.records import Table
    >>> t = Table("acme", "sales", "", ("item", "2024"), (("revenue", "$1,200"), ("cost", "(300)")))
    >>> box = SQLSandbox()
    >>> box.run(t, "SELECT \\"2024\\", to_number(\\"2024\\") AS v FROM sales WHERE item = 'cost'")
    '[{"2024": "(300)", "v": -300.0}]'
    >>> box.run(t, "SELECT * FROM sales WHERE 1").splitlines()[0]
    'Error: SELECT * is not allowed: name the columns you need (e.g. SELECT item, "2024" FROM sales WHERE ...).'
    >>> box.run(t, "DROP TABLE sales").splitlines()[0]
    'Error: only a single SELECT statement is allowed (read-only).'
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from typing import Any

__all__ = ["ALLOWED_FUNCTIONS", "MEMORY_ERROR", "SQLSandbox", "check_query_shape", "timeout_message"]

#: Functions a query may call. Everything else (load_extension, randomblob,
#: zeroblob, sqlite_*, fts3_tokenizer, ...) is denied by the authorizer.
ALLOWED_FUNCTIONS = frozenset(
    {
        "abs",
        "avg",
        "ceil",
        "ceiling",
        "coalesce",
        "count",
        "exp",
        "floor",
        "glob",
        "group_concat",
        "ifnull",
        "iif",
        "instr",
        "length",
        "like",
        "ln",
        "log",
        "log10",
        "log2",
        "lower",
        "ltrim",
        "max",
        "min",
        "nullif",
        "pow",
        "power",
        "replace",
        "round",
        "rtrim",
        "sign",
        "sqrt",
        "substr",
        "substring",
        "sum",
        "to_number",
        "total",
        "trim",
        "typeof",
        "upper",
    }
)

_MAX_QUERY_CHARS = 4000
# SQLITE_LIMIT_LENGTH: bounds any string a query builds, and so the cost of one string function call
# (FinQA cells are short; 10 KB still holds a group_concat over a few hundred labels).
_MAX_STRING_BYTES = 10_000
# The progress handler (the wall clock's check) runs every N virtual-machine instructions, so at most N
# ops of bounded cost run past the deadline. N=50 costs ~30% of a bare loop's speed against 1000; the
# queries FinQA needs take well under a millisecond either way.
_PROGRESS_OPS = 50
# SQLITE_LIMIT_LIKE_PATTERN_LENGTH (LIKE and GLOB): a GLOB character class costs O(string x class) in one
# call (~8 ms on 9 KB with a 200-char pattern, ~2 ms at 50); '%operating activities%' needs 22.
_MAX_PATTERN_CHARS = 64
_MAX_TRIM_SET = 64  # characters in trim(x, set): '$, ()%' needs six
MEMORY_ERROR = (
    "Error: the query needed more memory than the SQL sandbox allows and was stopped. "
    "Filter the rows you need with WHERE; avoid cross joins and deeply nested subqueries."
)


def timeout_message(timeout_s: float) -> str:
    """The observation of a query stopped at its wall clock (by sqlite's progress handler or by a kill)."""
    return (
        f"Error: the query ran longer than {timeout_s:g} s and was stopped. "
        "Filter the rows you need with WHERE; avoid cross joins."
    )


def _blank_literals(query: str) -> str:
    """``query`` with comments removed, string literals as ``''`` and quoted identifiers as ``q``.

    What is left is the statement's skeleton: keywords, bare names, operators.
    """
    out: list[str] = []
    i, n = 0, len(query)
    while i < n:
        ch = query[i]
        if ch == "-" and query.startswith("--", i):
            j = query.find("\n", i)
            i = n if j < 0 else j
            out.append(" ")
        elif ch == "/" and query.startswith("/*", i):
            j = query.find("*/", i + 2)
            i = n if j < 0 else j + 2
            out.append(" ")
        elif ch in "'\"`[":
            close = "]" if ch == "[" else ch
            j = i + 1
            while j < n:
                if query[j] == close:
                    if close != "]" and j + 1 < n and query[j + 1] == close:  # doubled quote = escaped
                        j += 2
                        continue
                    break
                j += 1
            out.append("''" if ch == "'" else " q ")
            i = j + 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


_WILDCARD = re.compile(r"(?:\bSELECT|\bDISTINCT|\bALL|,)\s*\*|\.\s*\*", re.IGNORECASE)
_FILTER = re.compile(r"\b(?:WHERE|HAVING)\b", re.IGNORECASE)


#: sqlite copies a subquery's or WITH table's expressions into every place that reads it while it prepares
#: the query, before any clock can run: each level of nesting multiplies the work (12 nested levels of
#: ``x||x||x||x`` took 36 s and 4.8 GB). One level keeps the worst case of a 4,000-character query to a
#: fraction of a second, so a hostile query cannot hold a shared worker for its whole budget.
_MAX_NESTING = 1
_PAREN = re.compile(r"\(\s*(SELECT\b)?|\)", re.IGNORECASE)


def _nesting(skeleton: str) -> int:
    """Levels of SELECT below the main one: parenthesised SELECTs inside each other, plus one for each WITH
    table after the first (a WITH table may read the one before it, which nests it).

    >>> _nesting("SELECT a FROM t WHERE b = (SELECT max(b) FROM t WHERE 1) OR c IN (SELECT c FROM t WHERE 1)")
    1
    >>> _nesting("SELECT x FROM (SELECT x FROM (SELECT a AS x FROM t WHERE 1) WHERE 1) WHERE 1")
    2
    >>> _nesting("WITH a AS (SELECT x FROM t WHERE 1), b AS (SELECT x FROM a WHERE 1) SELECT x FROM b WHERE 1")
    2
    """
    ctes = 0
    if skeleton[:4].upper() == "WITH":
        ctes = len(re.findall(r"\bAS\s+(?:NOT\s+)?(?:MATERIALIZED\s*)?\(\s*SELECT\b", skeleton, re.IGNORECASE))
    stack: list[bool] = []  # for each open parenthesis: does a SELECT start right inside it?
    deepest = 0
    for match in _PAREN.finditer(skeleton):
        if match.group().startswith("("):
            stack.append(match.group(1) is not None)
            deepest = max(deepest, sum(stack))
        elif stack:
            stack.pop()
    return deepest + max(0, ctes - 1)


def check_query_shape(query: str, table_name: str) -> str | None:
    """Why ``query`` is refused before it reaches sqlite, or None if its shape is acceptable.

    >>> check_query_shape("SELECT a FROM t", "t")
    'Error: the query must filter rows with a WHERE clause (or HAVING); unfiltered scans are not allowed. Example: SELECT item, "2024" FROM t WHERE item = \\'revenue\\'.'
    >>> check_query_shape("SELECT a FROM t WHERE b = 'x;*'", "t") is None
    True
    """
    example = f'SELECT item, "2024" FROM {table_name} WHERE ...'
    skeleton = _blank_literals(query).strip()
    while skeleton.endswith(";"):
        skeleton = skeleton[:-1].rstrip()
    if ";" in skeleton:
        return "Error: only a single SELECT statement is allowed (no ';' between statements)."
    first = skeleton.split(None, 1)[0].upper() if skeleton else ""
    if first not in ("SELECT", "WITH"):
        return "Error: only a single SELECT statement is allowed (read-only)."
    if re.search(r"\bRECURSIVE\b", skeleton, re.IGNORECASE):
        return "Error: recursive queries are not allowed; filter the table's rows with WHERE instead."
    if _WILDCARD.search(skeleton):
        return f"Error: SELECT * is not allowed: name the columns you need (e.g. {example})."
    if not _FILTER.search(skeleton):
        return (
            "Error: the query must filter rows with a WHERE clause (or HAVING); unfiltered scans are not "
            f"allowed. Example: SELECT item, \"2024\" FROM {table_name} WHERE item = 'revenue'."
        )
    return None


def _to_number(value: Any) -> float | None:
    """SQL ``to_number(x)``: '$1,234' -> 1234.0, '(386)' -> -386.0, '24.1%' -> 24.1, else NULL."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if not isinstance(value, str) or len(value) > 64:
        return None
    text = value.strip().replace("$", "").replace(",", "").replace("%", "").replace("\u2212", "-").strip()
    negative = text.startswith("(") and text.endswith(")")
    if negative:
        text = text[1:-1].strip()
    if text in ("", "\u2014", "-", "\u2013"):
        return 0.0 if value.strip() else None
    try:
        number = float(text)
    except ValueError:
        return None
    return -number if negative else number


def _sql_text(value: Any) -> str:
    """A non-NULL value as sqlite's ``sqlite3_value_text`` gives it (REAL as ``%!.15g``: always a decimal point)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, int):
        return str(value)
    if value in (float("inf"), float("-inf")):  # NaN never arrives: sqlite stores it as NULL
        return "Inf" if value > 0 else "-Inf"
    mantissa, e, exponent = f"{value:.15g}".partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + e + exponent


def _trim_with_set(strip: str) -> Any:
    """sqlite's two-argument ``trim``/``ltrim``/``rtrim``, linear in the string and with a bounded set.

    sqlite's own compares every character with every character of the set:
    a 90 KB string and a 4,000-character set took 8-10 s in one call, which
    no progress handler interrupts.
    """

    def trim(value: Any, chars: Any) -> Any:
        if value is None or chars is None:
            return None
        charset = _sql_text(chars)
        if len(charset) > _MAX_TRIM_SET:
            raise ValueError(f"trim's character set is limited to {_MAX_TRIM_SET} characters")
        return getattr(_sql_text(value), strip)(charset)  # str.strip: a set lookup per character

    return trim


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class SQLSandbox:
    """Runs one read-only SELECT against one table and returns JSON records or an error string.

    Args:
        timeout_s: Wall-clock limit per query (seconds), enforced inside sqlite.
        row_cap: Most rows returned; more are cut and the result says so.
        max_result_chars: Most characters of JSON returned.
    """

    def __init__(self, timeout_s: float = 1.0, row_cap: int = 50, max_result_chars: int = 8000) -> None:
        self.timeout_s = float(timeout_s)
        self.row_cap = int(row_cap)
        self.max_result_chars = int(max_result_chars)

    def _connect(self, table: Any) -> sqlite3.Connection:
        conn = sqlite3.connect(":memory:", isolation_level=None)
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, _MAX_STRING_BYTES)
        conn.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, _MAX_QUERY_CHARS * 4)
        conn.setlimit(sqlite3.SQLITE_LIMIT_EXPR_DEPTH, 200)
        conn.setlimit(sqlite3.SQLITE_LIMIT_COMPOUND_SELECT, 20)
        conn.setlimit(sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH, _MAX_PATTERN_CHARS)
        conn.create_function("to_number", 1, _to_number, deterministic=True)
        for name, strip in (("trim", "strip"), ("ltrim", "lstrip"), ("rtrim", "rstrip")):
            conn.create_function(name, 2, _trim_with_set(strip), deterministic=True)  # one-argument forms stay sqlite's
        columns = ", ".join(_quote(c) for c in table.columns)
        conn.execute(f"CREATE TABLE {_quote(table.name)} ({columns})")
        placeholders = ", ".join("?" for _ in table.columns)
        conn.executemany(f"INSERT INTO {_quote(table.name)} VALUES ({placeholders})", table.rows)
        conn.execute("PRAGMA temp_store = MEMORY")  # sorts and temp b-trees never spill to disk: RLIMIT_AS bounds them
        conn.execute("PRAGMA query_only = ON")
        allowed_table = table.name.lower()

        def authorize(action: int, arg1: str | None, arg2: str | None, db: str | None, source: str | None) -> int:
            if action == sqlite3.SQLITE_SELECT:
                return sqlite3.SQLITE_OK
            if action == sqlite3.SQLITE_READ:
                return sqlite3.SQLITE_OK if (arg1 or "").lower() == allowed_table else sqlite3.SQLITE_DENY
            if action == sqlite3.SQLITE_FUNCTION:
                return sqlite3.SQLITE_OK if (arg2 or "").lower() in ALLOWED_FUNCTIONS else sqlite3.SQLITE_DENY
            return sqlite3.SQLITE_DENY

        conn.set_authorizer(authorize)
        return conn

    @staticmethod
    def refusal(table: Any, query: Any, *, shape: bool = True, nesting: bool = True) -> str | None:
        """Why ``query`` is refused before sqlite sees it (type, length, NUL, an empty table, its nesting, its
        shape), or None."""
        if not isinstance(query, str):
            return "Error: 'query' must be a string holding one SELECT statement."
        if len(query) > _MAX_QUERY_CHARS:
            return f"Error: the query is {len(query)} characters long; the limit is {_MAX_QUERY_CHARS}."
        if "\x00" in query:
            return "Error: the query contains a NUL character."
        if not table.columns:
            return f"Error: table {table.name!r} has no data to query."
        if nesting and _nesting(_blank_literals(query)) > _MAX_NESTING:
            return (
                f"Error: at most {_MAX_NESTING} level of nesting is allowed: one WITH table or subqueries "
                "directly inside the main SELECT (side by side is fine), not a subquery inside a subquery."
            )
        return check_query_shape(query, table.name) if shape else None

    def run(self, table: Any, query: Any, *, nesting: bool = True) -> str:
        """Run ``query`` against ``table`` (a loaded :class:`~gym_integrity.envs.finqa.data.Table`) in this process.

        ``nesting=False`` skips the nesting check: the pooled sandbox makes it before a worker is used.
        """
        refusal = self.refusal(table, query, nesting=nesting)
        if refusal is not None:
            return refusal
        conn = self._connect(table)
        deadline = time.monotonic() + self.timeout_s
        conn.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, _PROGRESS_OPS)
        try:
            cursor = conn.execute(query.strip().rstrip(";"))
            names = [d[0] for d in cursor.description or ()]
            rows = self._fetch(cursor)
        except sqlite3.OperationalError as exc:
            return self._explain(str(exc))
        except (sqlite3.ProgrammingError, sqlite3.Warning):
            return "Error: only a single SELECT statement is allowed (no ';' between statements)."
        except sqlite3.Error as exc:
            return self._explain(str(exc))
        except MemoryError:  # sqlite's SQLITE_NOMEM: the worker's RLIMIT_AS reached (prepare or run)
            return MEMORY_ERROR
        except (OverflowError, ValueError) as exc:
            return f"Error executing query: {type(exc).__name__}"
        finally:
            conn.close()
        truncated = len(rows) > self.row_cap
        records = [dict(zip(names, row)) for row in rows[: self.row_cap]]
        text = json.dumps(records, ensure_ascii=False, default=str)
        notes = []
        if truncated:
            notes.append(f"result cut to the first {self.row_cap} rows: add a narrower WHERE clause")
        if len(text) > self.max_result_chars:
            text = text[: self.max_result_chars]
            notes.append(f"result cut to {self.max_result_chars} characters")
        return text + ("\n(" + "; ".join(notes) + ")" if notes else "")

    def _fetch(self, cursor: sqlite3.Cursor) -> list[tuple[Any, ...]]:
        """Up to ``row_cap + 1`` rows, fewer once they hold more than ``max_result_chars``.

        The result is cut at ``max_result_chars`` anyway; without this stop,
        50 rows of a thousand 10 KB columns would be half a gigabyte to copy
        and serialise after the clock (which only runs inside sqlite).
        """
        rows: list[tuple[Any, ...]] = []
        size = 0
        while len(rows) <= self.row_cap and size <= self.max_result_chars:
            row = cursor.fetchone()
            if row is None:
                break
            rows.append(row)
            size += sum(len(v) if isinstance(v, (str, bytes)) else 8 for v in row)
        return rows

    def _explain(self, message: str) -> str:
        low = message.lower()
        if "interrupted" in low:
            return timeout_message(self.timeout_s)
        if "not authorized" in low or "prohibited" in low:
            return (
                "Error: the query is not allowed: read-only access to the one table named in the call, "
                f"with these functions only: {', '.join(sorted(ALLOWED_FUNCTIONS))}."
            )
        if "pattern too complex" in low:
            return f"Error: LIKE and GLOB patterns are limited to {_MAX_PATTERN_CHARS} characters."
        if "user-defined function raised exception" in low:  # only our trim raises: its set was too long
            return f"Error: trim, ltrim and rtrim strip at most {_MAX_TRIM_SET} distinct characters."
        if "too big" in low:
            return f"Error: the query built a string or blob larger than allowed ({_MAX_STRING_BYTES} bytes)."
        # sqlite's own messages name only SQL tokens (no file is ever opened); keep them short.
        return "Error executing query: " + message[:300]

"""The SQL sandbox and the tools' name checks against an injection suite, on the shipped data, real sqlite."""

from __future__ import annotations

import json
import os
import sqlite3
import time

import pytest

from gym_integrity.envs.finqa.data import EMBEDDED_DATA_PATH, Table, load_dataset_cached
from gym_integrity.envs.finqa.sql_sandbox import SQLSandbox, check_query_shape
from gym_integrity.envs.finqa.tools import FinQATools

COMPANY = "northwind_foods"
TABLE = "nwf_ConsolidatedStatementsOfIncomeTableTextBlock"


@pytest.fixture(scope="module")
def dataset():
    return load_dataset_cached(None)


@pytest.fixture(scope="module")
def tools(dataset):
    return FinQATools(dataset, SQLSandbox(timeout_s=0.5, row_cap=5))


def sql(tools: FinQATools, query: str, company: str = COMPANY, table: str = TABLE) -> str:
    return tools.call("sql_query", {"company_name": company, "table_name": table, "query": query})[0]


def net_revenue_2024(tools: FinQATools) -> str:
    return sql(tools, f"SELECT \"2024\" FROM {TABLE} WHERE line_item = 'net_revenue'")


INJECTIONS = {
    "drop": f"DROP TABLE {TABLE}",
    "delete": f"DELETE FROM {TABLE} WHERE 1",
    "update": f"UPDATE {TABLE} SET \"2024\" = '0' WHERE 1",
    "insert": f"INSERT INTO {TABLE} (line_item) VALUES ('x')",
    "create": "CREATE TABLE evil (x)",
    "attach": "ATTACH DATABASE '/tmp/finqa_evil.db' AS evil",
    "vacuum_into": "VACUUM INTO '/tmp/finqa_evil.db'",
    "pragma": "PRAGMA query_only = OFF",
    "pragma_read": "PRAGMA table_info('x')",
    "stacked": f"SELECT line_item FROM {TABLE} WHERE 1; DROP TABLE {TABLE}",
    "stacked_select": f"SELECT line_item FROM {TABLE} WHERE 1; SELECT 2 FROM {TABLE} WHERE 1",
    "stacked_in_comment_then_real": f"SELECT line_item FROM {TABLE} WHERE 1 /* x */; DELETE FROM {TABLE}",
    "load_extension": f"SELECT load_extension('/tmp/evil.so') FROM {TABLE} WHERE 1",
    "randomblob": f"SELECT randomblob(100000000) FROM {TABLE} WHERE 1",
    "zeroblob": f"SELECT zeroblob(1000000000) FROM {TABLE} WHERE 1",
    "printf_huge": f"SELECT printf('%.*c', 100000000, 'x') FROM {TABLE} WHERE 1",
    "sqlite_master": "SELECT sql FROM sqlite_master WHERE 1",
    "sqlite_schema_union": f"SELECT line_item FROM {TABLE} WHERE 1 UNION SELECT sql FROM sqlite_schema WHERE 1",
    "recursive_cte": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c WHERE x > 0",
    "select_star": f"SELECT * FROM {TABLE} WHERE 1",
    "select_alias_star": f"SELECT t.* FROM {TABLE} t WHERE 1",
    "select_star_spaced": f"select\n\t*\nfrom {TABLE} where 1",
    "unfiltered": f"SELECT line_item FROM {TABLE}",
    "unfiltered_where_in_string": f"SELECT line_item, 'where' FROM {TABLE}",
    "unfiltered_where_in_comment": f"SELECT line_item FROM {TABLE} -- WHERE 1",
}


@pytest.mark.parametrize("name", sorted(INJECTIONS))
def test_injection_is_refused_with_a_message_and_data_stays_intact(tools, dataset, name):
    before = dataset.tables[(COMPANY, TABLE)]
    result = sql(tools, INJECTIONS[name])
    assert result.startswith("Error"), (name, result)
    assert "/tmp" not in result and str(EMBEDDED_DATA_PATH) not in result
    assert not os.path.exists("/tmp/finqa_evil.db")
    assert dataset.tables[(COMPANY, TABLE)] is before
    assert net_revenue_2024(tools) == '[{"2024": "$12,480"}]'


def test_refusals_say_what_is_required(tools):
    assert "name the columns" in sql(tools, INJECTIONS["select_star"])
    assert "WHERE" in sql(tools, INJECTIONS["unfiltered"])
    assert "single SELECT" in sql(tools, INJECTIONS["stacked"])
    assert "single SELECT" in sql(tools, INJECTIONS["drop"])


def test_huge_cross_join_is_cut_off_by_the_wall_clock(tools):
    joins = ", ".join(f"{TABLE} t{i}" for i in range(12))   # 9**12 rows: never finishes on its own
    start = time.monotonic()
    result = sql(tools, f"SELECT count(*) FROM {joins} WHERE t0.line_item <> t1.line_item")
    elapsed = time.monotonic() - start
    assert result.startswith("Error: the query ran longer than 0.5 s"), result
    assert elapsed < 0.5 + 1.0   # the bound: deadline + 1 s
    assert net_revenue_2024(tools) == '[{"2024": "$12,480"}]'


def test_row_cap_cuts_results_and_says_so(tools):
    result = sql(tools, f"SELECT a.line_item, b.line_item FROM {TABLE} a, {TABLE} b WHERE 1")
    rows, note = result.split("\n")
    assert len(json.loads(rows)) == 5 and "first 5 rows" in note


def test_string_length_limit_inside_sqlite(tools):
    joins = ", ".join(f"{TABLE} t{i}" for i in range(4))
    result = sql(tools, f"SELECT group_concat(t0.line_item) FROM {joins} WHERE 1")
    assert result.startswith("Error"), result[:200]


@pytest.mark.parametrize("company, table", [
    ("../../../etc", "passwd"),
    ("/etc", "passwd"),
    (COMPANY, "../../../../etc/passwd"),
    (COMPANY, "/etc/passwd"),
    (COMPANY, f"../{COMPANY}/{TABLE}"),
    (COMPANY + "/..", TABLE),
    ("input_companies", "tables_cleaned_all_companies"),
    (COMPANY, "tables_cleaned_all_companies"),
    ("", ""),
    (COMPANY, "x" * 10_000),
])
def test_names_are_looked_up_in_the_index_never_used_as_paths(tools, company, table):
    for tool, args in (("get_descriptions", {"company_name": company}),
                       ("get_table_info", {"company_name": company, "table_name": table}),
                       ("sql_query", {"company_name": company, "table_name": table,
                                      "query": f"SELECT line_item FROM {TABLE} WHERE 1"})):
        if tool == "get_descriptions" and company == COMPANY:
            continue
        text, ok = tools.call(tool, args)
        assert not ok and text.startswith("Error: unknown"), (tool, text[:200])
        assert "root:" not in text and str(EMBEDDED_DATA_PATH) not in text and len(text) < 2000


def test_query_may_only_read_the_table_named_in_the_call(tools):
    other = "nwf_DisaggregationOfRevenueBySegmentTableTextBlock"
    result = sql(tools, f"SELECT segment FROM {other} WHERE 1")   # a real table, but not the one opened
    assert result.startswith("Error") and "no such table" in result


def test_second_layer_authorizer_denies_what_the_shape_check_would_have_caught(dataset):
    """Skip layer 1: straight to the read-only connection, statements must still fail in sqlite."""
    conn = SQLSandbox()._connect(dataset.tables[(COMPANY, TABLE)])
    try:
        for statement in (f"DELETE FROM {TABLE}", "PRAGMA query_only = OFF", "ATTACH ':memory:' AS x",
                          "CREATE TABLE x (y)", "SELECT load_extension('x')", "SELECT name FROM sqlite_master",
                          "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c"):
            with pytest.raises(sqlite3.DatabaseError):
                conn.execute(statement).fetchall()
        assert conn.execute(f"SELECT count(line_item) FROM {TABLE}").fetchone() == (9,)
    finally:
        conn.close()


def test_literals_and_comments_do_not_confuse_the_shape_check():
    assert check_query_shape("SELECT a FROM t WHERE b = 'x; DROP TABLE t; *'", "t") is None
    assert check_query_shape('SELECT "select *" FROM t WHERE 1', "t") is None
    assert check_query_shape("SELECT count(*), 2 * 3 FROM t WHERE 1;", "t") is None
    assert check_query_shape("SELECT a FROM t /* WHERE */", "t") is not None
    assert check_query_shape("SELECT a FROM t WHERE 'it''s' = a", "t") is None


def test_valid_queries_answer_questions(tools):
    assert json.loads(sql(tools, f"SELECT to_number(\"2023\") AS v FROM {TABLE} WHERE line_item = 'interest_expense'")) \
        == [{"v": 236.0}]
    tax = "us_gaap_ScheduleOfEffectiveIncomeTaxRateReconciliationTableTextBlock"
    assert json.loads(sql(tools, f"SELECT \"2023\" FROM {tax} WHERE component LIKE 'foreign%'", table=tax)) \
        == [{"2023": "(25)"}]
    result = sql(tools, f"SELECT round(to_number(\"2024\") / 12480.0, 4) AS share FROM {TABLE} "
                        "WHERE line_item IN ('gross_profit')")
    assert json.loads(result) == [{"share": 0.3821}]


def test_table_info_shows_labels_not_numbers(tools):
    info = json.loads(tools.call("get_table_info", {"company_name": COMPANY, "table_name": TABLE + ".json"})[0])
    assert info["column_names"] == ["line_item", "2024", "2023", "2022"]
    assert set(info["unique_vals_per_col"]) == {"line_item"}
    assert "net_revenue" in info["unique_vals_per_col"]["line_item"]
    assert "12,480" not in json.dumps(info)


def test_tool_argument_errors(tools):
    text, ok = tools.call("sql_query", {"company_name": COMPANY})
    assert not ok and "missing ['table_name', 'query']" in text
    text, ok = tools.call("get_descriptions", {"company_name": COMPANY, "extra": 1})
    assert not ok and "unexpected ['extra']" in text
    text, ok = tools.call("get_descriptions", {"company_name": ["a"]})
    assert not ok and "must be strings" in text
    text, ok = tools.call("rm_rf", {})
    assert not ok and "unknown tool" in text and "get_descriptions" in text
    assert sql(tools, "SELECT 1 FROM x WHERE 1\x00")[:6] == "Error:"


def test_empty_table_is_reported_not_crashed():
    box = SQLSandbox()
    assert box.run(Table("c", "t", "", (), ()), "SELECT a FROM t WHERE 1").startswith("Error: table 't' has no data")

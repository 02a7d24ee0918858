"""FinQA data: both layouts, data paths from config and FINQA_DATA_PATH, hub ids via `datasets`, caching, load checks."""

from __future__ import annotations

import csv
import json
import shutil
import warnings
from pathlib import Path

import gymnasium as gym
import pytest

import gym_integrity  # noqa: F401  (registers FinQA-v0)
from gym_integrity.envs.finqa import FinQAEnv, format_tool_call
from gym_integrity.envs.finqa.data import EMBEDDED_DATA_PATH, load_dataset_cached

ORIGINAL_SAMPLE = EMBEDDED_DATA_PATH / "original_sample" / "test.json"


def submit(answer: str) -> str:
    return format_tool_call("submit_answer", {"answer": answer})


def test_embedded_set_meets_the_brief():
    ds = load_dataset_cached(None)
    assert len(ds.questions) >= 30 and len(ds.company_tables) >= 4
    assert all(len(tables) >= 3 for tables in ds.company_tables.values())
    kinds = {q.question_type for q in ds.questions}
    assert {"percentage", "negative", "multi_value", "year_keyed", "lookup"} <= kinds
    assert all(q.company in ds.company_tables for q in ds.questions)
    assert len(ds.question_index) == len(ds.questions)   # ids are unique
    # The per-table files and the cleaned index agree.
    cleaned = json.loads((EMBEDDED_DATA_PATH / "input_companies" / "tables_cleaned_all_companies.json").read_text())
    for key, entry in cleaned.items():
        company, table = key.split("/")
        on_disk = json.loads((EMBEDDED_DATA_PATH / "input_companies" / company / f"{table}.json").read_text())
        assert json.loads(entry["table"]) == on_disk
        assert ds.tables[(company, table)].columns == tuple(entry["column_names"])


@pytest.fixture()
def benchmark_copy(tmp_path: Path) -> Path:
    """A FinQA-benchmark root: the shipped set, one extra question, one table only as a per-company file."""
    root = tmp_path / "bench"
    shutil.copytree(EMBEDDED_DATA_PATH, root, ignore=shutil.ignore_patterns("original_sample"))
    (root / "input_companies" / "zephyr_air").mkdir()
    table = {"route": {"0": "domestic", "1": "international"}, "2024": {"0": "$410", "1": "$655"}}
    (root / "input_companies" / "zephyr_air" / "zpa_RevenueByRouteTableTextBlock.json").write_text(json.dumps(table))
    with open(root / "benchmark_questions" / "finqa.csv", "a", newline="") as fh:
        csv.writer(fh).writerow(["zp1", "What was Zephyr Air's international revenue in 2024?", "zephyr_air",
                                 "international revenue 2024", "655", "lookup", "international 2024"])
    return root


def test_benchmark_layout_from_config_path(benchmark_copy: Path):
    env = gym.make("FinQA-v0", data_path=str(benchmark_copy))
    obs, info = env.reset(options={"question_id": "zp1"})
    assert info["company"] == "zephyr_air" and "international revenue" in obs
    result = env.step({"tool": "sql_query", "arguments": {
        "company_name": "zephyr_air", "table_name": "zpa_RevenueByRouteTableTextBlock",
        "query": "SELECT \"2024\" FROM zpa_RevenueByRouteTableTextBlock WHERE route = 'international'"}})[0]
    assert json.loads(result) == [{"2024": "$655"}]
    assert env.step(submit("$655"))[1] == 1.0
    assert len(env.unwrapped.dataset.questions) == len(load_dataset_cached(None).questions) + 1


def test_data_path_from_environment_variable(benchmark_copy: Path, monkeypatch):
    monkeypatch.setenv("FINQA_DATA_PATH", str(benchmark_copy))
    env = FinQAEnv()
    assert "zp1" in env.dataset.question_index
    monkeypatch.delenv("FINQA_DATA_PATH")
    assert "zp1" not in FinQAEnv().dataset.question_index   # back to the embedded set


def test_missing_or_unrecognised_data_path_fails_at_make(tmp_path: Path):
    # The one error rule: a path holding no data is a wrong value, named with its field and the path.
    with pytest.raises(ValueError, match=r"^FinQAConfig\.data_path: '.*' *:? .*neither"):
        gym.make("FinQA-v0", data_path=str(tmp_path))
    with pytest.raises(ValueError, match=r"^FinQAConfig\.data_path: "):
        gym.make("FinQA-v0", data_path=str(tmp_path), data_format="benchmark")
    with pytest.raises(ValueError, match=r"^FinQAConfig\.data_path: '/no/such/dir'"):
        gym.make("FinQA-v0", data_path="/no/such/dir")


def test_original_finqa_json_becomes_tables_and_documents():
    env = gym.make("FinQA-v0", data_path=str(ORIGINAL_SAMPLE))
    obs, info = env.reset(options={"question_id": "OVM/2019/page_41.pdf-1"})
    company = info["company"]
    assert company == "ovm_2019_page_41" and "milling volume" in obs and "read_document(" in obs
    assert [t["function"]["name"] for t in env.unwrapped.tools][-1] == "read_document"
    doc = env.step({"tool": "read_document", "arguments": {"company_name": company}})[0]
    assert "riverside mill" in doc and "orchard valley mills" in doc
    assert json.loads(env.step({"tool": "get_descriptions", "arguments": {"company_name": company}})[0]) == \
        ["filing_table"]
    info_text = env.step({"tool": "get_table_info", "arguments": {"company_name": company,
                                                                  "table_name": "filing_table"}})[0]
    assert json.loads(info_text)["column_names"] == ["row_label", "2019", "2018", "2017"]
    rows = env.step({"tool": "sql_query", "arguments": {
        "company_name": company, "table_name": "filing_table",
        "query": "SELECT \"2019\", \"2018\" FROM filing_table WHERE row_label LIKE 'milling%'"}})[0]
    assert json.loads(rows) == [{"2019": "1,842", "2018": "1,965"}]
    _, reward, terminated, _, _ = env.step(submit("-6.26%"))
    assert (reward, terminated) == (1.0, True)
    # Two questions on one filing share one company; a yes/no answer compares as text.
    ds = env.unwrapped.dataset
    assert len(ds.company_tables) == 2 and ds.questions[2].answers == ("yes",)


@pytest.mark.parametrize("answer, tolerance, exact", [("-6.3%", 1.0, 0.0), ("-0.0626", 1.0, 1.0), ("-6.26", 0.0, 0.0)])  # a bare number is itself
def test_original_finqa_scoring_modes(tmp_path: Path, answer, tolerance, exact):
    shutil.copy(ORIGINAL_SAMPLE, tmp_path / "test.json")   # a directory holding <split>.json
    for mode, expected in (("tolerance", tolerance), ("finqa_exact", exact)):
        env = FinQAEnv(data_path=str(tmp_path), scoring=mode)
        env.reset(options={"index": 0})
        assert env.step(submit(answer))[1] == expected, (mode, answer)


def test_hub_id_goes_through_datasets_with_local_data(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    records = json.loads(ORIGINAL_SAMPLE.read_text())[:2]   # numeric answers only: one arrow type per column
    (tmp_path / "hub").mkdir()
    (tmp_path / "hub" / "test.json").write_text(json.dumps(records))
    env = gym.make("FinQA-v0", hub_id=str(tmp_path / "hub"), split="test")
    _, info = env.reset(options={"index": 1})
    assert env.unwrapped.dataset.source.startswith("hub:") and len(env.unwrapped.dataset.questions) == 2
    assert env.step(submit("0.4728"))[1] == 1.0


def test_hub_benchmark_questions_take_tables_from_the_data_path(tmp_path: Path, benchmark_copy: Path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    (tmp_path / "hubq").mkdir()
    shutil.copy(benchmark_copy / "benchmark_questions" / "finqa.csv", tmp_path / "hubq" / "test.csv")
    with pytest.raises(ValueError, match="data_path"):
        FinQAEnv(hub_id=str(tmp_path / "hubq"))
    env = FinQAEnv(hub_id=str(tmp_path / "hubq"), data_path=str(benchmark_copy))
    env.reset(options={"question_id": "zp1"})
    assert env.step(submit("655"))[1] == 1.0


def test_data_is_loaded_once_and_shared_by_every_instance():
    envs = [gym.make("FinQA-v0") for _ in range(5)]
    datasets = {id(e.unwrapped.dataset) for e in envs}
    tools = {id(e.unwrapped._tools) for e in envs}
    assert len(datasets) == 1 and len(tools) == 1
    assert envs[0].unwrapped.dataset is load_dataset_cached(None)


def test_import_stays_light():
    import subprocess
    import sys
    code = ("import sys, gym_integrity, gymnasium as gym; gym.make('FinQA-v0').reset(seed=0); "
            "print(sorted(m for m in ('datasets', 'pandas', 'math_verify', 'openai', 'reasoning_gym') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# --------------------------------------------------------------------------- rows checked at load (issue 10)


def _append_questions(root: Path, rows: list[list[str]]) -> int:
    """Append CSV rows to the questions file; returns the line number of the first one."""
    path = root / "benchmark_questions" / "finqa.csv"
    first = len(path.read_text(encoding="utf-8").splitlines()) + 1
    with open(path, "a", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)
    return first


#: Broken rows, each with the reason it must be skipped for.
BROKEN_ROWS = [
    (["b-empty", "What was Northwind's revenue in 2024?", "northwind_foods", "revenue 2024", "", "lookup", ""],
     "empty_answer"),
    (["b-bare", "What was Empty Co's revenue?", "empty_co", "revenue", "655", "lookup", ""], "no_tables"),
    (["b-unknown", "What was Nobody Inc's revenue?", "nobody_inc", "revenue", "655", "lookup", ""], "no_tables"),
    (["b-hollow", "What was Hollow Co's revenue?", "hollow_co", "revenue", "655", "lookup", ""], "no_tables"),
    (["b-noq", "", "northwind_foods", "", "655", "lookup", ""], "missing_question"),
    (["b-sign", "What was the margin?", "northwind_foods", "margin", "%", "percentage", ""], "unparsable_gold"),
    (["fq001", "A second fq001?", "northwind_foods", "again", "12,480", "lookup", ""], "duplicate_id"),
]


def test_broken_benchmark_rows_are_skipped_with_a_warning_naming_file_and_row(benchmark_copy: Path):
    """Issue 10: an empty answer cell loaded (every submission, the correct one included, scored incorrect), and
    so did a company without tables. Each broken row is now skipped, with one warning naming file, row and reason."""
    (benchmark_copy / "input_companies" / "empty_co").mkdir()   # a company directory holding no table
    (benchmark_copy / "input_companies" / "hollow_co").mkdir()  # and one whose only table has no column
    (benchmark_copy / "input_companies" / "hollow_co" / "hc_RevenueTableTextBlock.json").write_text("{}")
    first = _append_questions(benchmark_copy, [row for row, _ in BROKEN_ROWS])
    with pytest.warns(UserWarning) as record:
        env = gym.make("FinQA-v0", data_path=str(benchmark_copy))
    messages = [str(w.message) for w in record]
    csv_path = benchmark_copy / "benchmark_questions" / "finqa.csv"
    for offset, (_, reason) in enumerate(BROKEN_ROWS):
        assert any(f"{csv_path} row {first + offset}:" in m and f"[{reason}]" in m for m in messages), \
            (first + offset, reason, messages)
    assert len(messages) == len(BROKEN_ROWS)
    questions = env.unwrapped.dataset.question_index
    assert not {"b-empty", "b-bare", "b-unknown", "b-hollow", "b-noq", "b-sign"} & set(questions)
    assert len(questions) == len(load_dataset_cached(None).questions) + 1   # the fixture's good zp1 stays
    env.reset(options={"question_id": "fq001"})
    assert env.step(submit("12,480"))[1] == 1.0   # the first fq001 is kept, not the duplicate


def test_original_finqa_records_without_answer_or_content_are_skipped(tmp_path: Path):
    records = json.loads(ORIGINAL_SAMPLE.read_text())
    empty_answer = dict(records[0], id="EMPTY/2019/page_1.pdf-1", qa=dict(records[0]["qa"], exe_ans=None, answer=""))
    bare = dict(records[1], id="BARE/2019/page_2.pdf-1", table=[], pre_text=[], post_text=[])
    no_question = dict(records[1], id="NOQ/2019/page_3.pdf-1", qa=dict(records[1]["qa"], question=""))
    (tmp_path / "test.json").write_text(json.dumps([*records, empty_answer, bare, no_question]))
    with pytest.warns(UserWarning) as record:
        env = FinQAEnv(data_path=str(tmp_path))
    messages = [str(w.message) for w in record]
    for row, reason in ((4, "empty_answer"), (5, "no_tables"), (6, "missing_question")):
        assert any(f"{tmp_path / 'test.json'} row {row}:" in m and f"[{reason}]" in m for m in messages), messages
    assert [q.id for q in env.dataset.questions] == [r["id"] for r in records]
    assert not any(c.startswith(("empty_", "bare_", "noq_")) for c in env.dataset.company_tables)


def test_a_root_without_a_usable_question_fails_at_make_saying_why(benchmark_copy: Path):
    path = benchmark_copy / "benchmark_questions" / "finqa.csv"
    path.write_text("id,user_query,company,question,answer,question_type,explanation\n", encoding="utf-8")
    _append_questions(benchmark_copy, [BROKEN_ROWS[0][0], BROKEN_ROWS[2][0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=r"FinQAConfig.data_path: .*finqa.csv has no usable question "
                                             r"\(0 loaded, 2 skipped \(empty_answer: 1 \(row 2\); "
                                             r"no_tables: 1 \(row 3\)\)\)"):
            gym.make("FinQA-v0", data_path=str(benchmark_copy))


def test_every_embedded_gold_scores_itself():
    """The load check's rule on the shipped set: submitting each gold verbatim scores 1 (nothing skipped)."""
    from gym_integrity.envs.finqa.data import check_finqa
    from gym_integrity.envs.finqa.scoring import score_answer

    assert check_finqa().clean and check_finqa(ORIGINAL_SAMPLE).clean
    assert all(score_answer(q.answers[0], q.answers).score == 1.0 for q in load_dataset_cached(None).questions)
    # The check's shortcut for plain numbers (fast 10k-question loads) agrees with the scorer.
    from gym_integrity.envs.finqa.sources import _PLAIN_NUMBER
    for text in ("0", "-0", "007", "12,480", "1234.5", "-3.5%", "$1,000,000", "99%"):
        assert _PLAIN_NUMBER.fullmatch(text) and score_answer(text, text).score == 1.0, text


def test_row_numbers_count_blank_lines_between_records(benchmark_copy: Path):
    """A leftover of issue 10: DictReader skips blank lines unseen, so a skipped row after blank lines was
    reported on the wrong line. Each record's own first line is reported, blank lines and quoted newlines counted."""
    path = benchmark_copy / "benchmark_questions" / "finqa.csv"
    with open(path, "a", newline="", encoding="utf-8") as fh:
        fh.write("\n\n")
        csv.writer(fh).writerow(["b-multi", "What was\nNorthwind's revenue?", "northwind_foods", "revenue", "",
                                 "lookup", ""])
        fh.write("\n")
        csv.writer(fh).writerow(["b-after", "What was the margin?", "northwind_foods", "margin", "", "lookup", ""])
    lines = path.read_text(encoding="utf-8").split("\n")
    multi = next(i for i, text in enumerate(lines, 1) if text.startswith("b-multi"))
    after = next(i for i, text in enumerate(lines, 1) if text.startswith("b-after"))
    with pytest.warns(UserWarning) as record:
        gym.make("FinQA-v0", data_path=str(benchmark_copy))
    messages = [str(w.message) for w in record]
    assert any(f"row {multi}:" in m and "[empty_answer]" in m for m in messages), (multi, messages)
    assert any(f"row {after}:" in m and "[empty_answer]" in m for m in messages), (after, messages)

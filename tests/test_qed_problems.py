"""QEDMath problem loading: local JSONL/JSON, Hugging Face datasets (built in-test, no network), aliases, bad rows."""

from __future__ import annotations

import json
import warnings

import gymnasium as gym
import pytest

from gym_integrity.envs.qed_math import problems as problems_mod
from gym_integrity.envs.qed_math.problems import PROBLEM_TYPES, load_problems, normalise_row

ROWS = [
    {"id": "u1", "task": "Compute $2+2$.", "answer": "4"},
    {"problem_id": "u2", "Problem": "Prove that $1 < 2$.", "Solution": "Because $2 - 1 = 1 > 0$.",
     "rubrics": [{"title": "Difference", "points": 5, "desc": "computes 2 - 1"},
                 {"title": "Sign", "points": 2, "desc": "concludes"}]},
    {"problem_id": "u3", "problem": "Find $x$ with $2x = 6$.", "reference_solution": "$x = \\boxed{3}$.",
     "evaluation_mode": "multi_step", "max_attempts": 4, "data_source": "mine"},
]


def _write_jsonl(path, rows):
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_builtin_set_has_30_problems_of_every_type():
    builtin = load_problems(None)
    assert len(builtin) >= 30
    assert {p.problem_type for p in builtin.problems} == set(PROBLEM_TYPES)
    proofs = [p for p in builtin.problems if p.problem_type == "proof"]
    assert proofs and all(p.grading_guidelines and p.reference_solution for p in proofs)
    assert len({p.problem_id for p in builtin.problems}) == len(builtin)


def test_builtin_file_uses_the_user_format_and_aliases():
    """The shipped JSONL is read by the same loader, through several aliases."""
    rows = [json.loads(line) for line in problems_mod.BUILTIN_PATH.read_text(encoding="utf-8").splitlines()]
    keys = set().union(*rows)
    assert {"task", "Problem", "Solution", "rubrics", "schema", "Grading guidelines", "evaluation_mode"} <= keys


def test_aliases_are_normalised():
    p = normalise_row(ROWS[1], "src", 1)
    assert p.problem == "Prove that $1 < 2$." and p.reference_solution.startswith("Because")
    assert p.problem_type == "proof"
    assert p.grading_guidelines == "- Difference (5 points): computes 2 - 1\n- Sign (2 points): concludes"
    q = normalise_row(ROWS[2], "src", 2)
    assert (q.problem_type, q.gold_answer, q.max_attempts, q.dataset_source) == ("multi_step", "3", 4, "mine")
    r = normalise_row({"task": "t", "solution": "long worked text", "answer": "7"}, "src", 9)
    assert r.gold_answer == "7" and r.reference_solution == "long worked text" and r.problem_id == "src/9"
    s = normalise_row({"problem": "p", "answer": "1", "original_problem": "the original p"}, "src", 0)
    assert s.original_problem == "the original p" and s.problem_type == "answer"
    t = normalise_row({"id": 5, "problem": "p", "answer": 42}, "src", 0)
    assert (t.problem_id, t.gold_answer) == ("5", "42")


def test_type_is_detected_or_explicit():
    assert normalise_row({"problem": "p", "solution": "s", "details": "d"}, "x", 0).problem_type == "proof"
    assert normalise_row({"problem": "p", "solution": "s"}, "x", 0).problem_type == "answer"
    assert normalise_row({"problem": "p", "solution": "s", "problem_type": "proof"}, "x", 0).problem_type == "proof"


def test_local_jsonl_and_json_list_and_json_object(tmp_path):
    jsonl = _write_jsonl(tmp_path / "a.jsonl", ROWS)
    as_list = tmp_path / "b.json"
    as_list.write_text(json.dumps([dict(r, id=f"l-{i}") for i, r in enumerate(ROWS) if "id" in r]))
    as_object = tmp_path / "c.json"
    as_object.write_text(json.dumps({"problems": [dict(ROWS[2], problem_id="o-1")]}))
    assert [p.problem_id for p in load_problems(str(jsonl)).problems] == ["u1", "u2", "u3"]
    assert [p.problem_id for p in load_problems(as_list).problems] == ["l-0"]
    assert [p.problem_id for p in load_problems(str(as_object)).problems] == ["o-1"]


def test_hf_dataset_object_dict_source_and_mixed_list(tmp_path):
    datasets = pytest.importorskip("datasets")
    flat = [{"problem_id": "hf-1", "problem": "What is $3 \\cdot 3$?", "answer": "9", "rubrics": None},
            {"problem_id": "hf-2", "problem": "Prove $0 < 1$.", "answer": "Trivial.", "rubrics": "Full marks."}]
    loaded = datasets.Dataset.from_list(flat)
    got = load_problems(loaded)
    assert [(p.problem_id, p.problem_type) for p in got.problems] == [("hf-1", "answer"), ("hf-2", "proof")]

    # A local dataset directory through `datasets.load_dataset`, as a dict source (offline).
    folder = tmp_path / "hfdir"
    folder.mkdir()
    _write_jsonl(folder / "train.jsonl", [{"id": "dir-1", "problem": "What is $5-1$?", "answer": "4"}])
    from_dict = load_problems({"path": str(folder), "split": "train"})
    assert [p.problem_id for p in from_dict.problems] == ["dir-1"]

    jsonl = _write_jsonl(tmp_path / "mix.jsonl", ROWS[:1])
    mixed = load_problems([str(jsonl), loaded, {"path": str(folder), "split": "train"}])
    assert [p.problem_id for p in mixed.problems] == ["u1", "hf-1", "hf-2", "dir-1"]


def test_bad_rows_are_skipped_with_a_warning_naming_file_and_row(tmp_path):
    path = _write_jsonl(tmp_path / "bad.jsonl", [
        ROWS[0],
        "{not json",
        {"id": "no-text", "answer": "1"},
        {"id": "no-gold", "problem": "What is 1+1?"},
        {"id": "bad-type", "problem": "p", "answer": "1", "problem_type": "essay"},
        {"id": "bad-attempts", "problem": "p", "answer": "1", "max_attempts": 0},
        ["a", "list"],
        ROWS[2],
    ])
    with pytest.warns(UserWarning) as record:
        got = load_problems(str(path))
    assert [p.problem_id for p in got.problems] == ["u1", "u3"]
    messages = [str(w.message) for w in record]
    assert len(messages) == 6
    for row in (2, 3, 4, 5, 6, 7):
        assert any(f"{path} row {row}:" in m for m in messages), (row, messages)
    assert any("problem_type" in m for m in messages) and any("max_attempts" in m for m in messages)


def test_source_without_valid_rows_fails_at_make(tmp_path):
    path = _write_jsonl(tmp_path / "empty.jsonl", [{"id": "x", "answer": "1"}])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="no valid problem row"):
            gym.make("QEDMath-v0", dataset=str(path))


@pytest.mark.parametrize(
    "dataset, error, match",
    [(42, TypeError, "QEDMathConfig.dataset"), ("no/such/thing.txt", ValueError, "QEDMathConfig.dataset"),
     ("missing.jsonl", ValueError, "not an existing"), ({"config": "x"}, ValueError, "hub_id"), ([], ValueError, "empty")],
)
def test_bad_sources_fail_clearly(dataset, error, match):
    with pytest.raises(error, match=match):
        load_problems(dataset)


def test_rows_are_loaded_once_per_process(tmp_path, monkeypatch):
    path = _write_jsonl(tmp_path / "once.jsonl", ROWS)
    first = load_problems(str(path))
    reads = []
    original = problems_mod._read_local
    monkeypatch.setattr(problems_mod, "_read_local", lambda p: reads.append(p) or original(p))
    second = load_problems(str(path))
    env_a = gym.make("QEDMath-v0", dataset=str(path), problem_types=["proof"])
    assert reads == []
    assert first.problems[0] is second.problems[0]
    assert env_a.unwrapped._problems.problems[0] is first.problems[1]
    env_a.close()


def test_problem_repr_holds_no_answer():
    p = normalise_row({"id": "r", "problem": "p", "answer": "SECRET-GOLD"}, "x", 0)
    assert "SECRET-GOLD" not in repr(p) and "SECRET-GOLD" not in repr(load_problems(None))

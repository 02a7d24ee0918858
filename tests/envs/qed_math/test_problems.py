"""QEDMath problem loading: JSONL/JSON, HF datasets (built in-test, no network), aliases, rows checked at load."""

from __future__ import annotations

import json
import warnings

import gymnasium as gym
import pytest

import gym_integrity  # noqa: F401  (registers QEDMath-v0)
from gym_integrity.envs.qed_math import problems as problems_mod
from gym_integrity.envs.qed_math.problems import load_problems
from gym_integrity.envs.qed_math.rows import PROBLEM_TYPES, normalise_row
from gym_integrity.openai_stub.judge_server import JudgeServer

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
    r = normalise_row({"task": "t", "solution": "a long worked text", "answer": "7"}, "src", 9)
    assert r.gold_answer == "7" and r.reference_solution == "a long worked text" and r.problem_id == "src/9"
    s = normalise_row({"problem": "p", "answer": "1", "original_problem": "the original p"}, "src", 0)
    assert s.original_problem == "the original p" and s.problem_type == "answer"
    t = normalise_row({"id": 5, "problem": "p", "answer": 42}, "src", 0)
    assert (t.problem_id, t.gold_answer) == ("5", "42")


def test_type_is_detected_or_explicit():
    assert normalise_row({"problem": "p", "solution": "s", "details": "d"}, "x", 0).problem_type == "proof"
    assert normalise_row({"problem": "p", "solution": "s"}, "x", 0).problem_type == "answer"
    assert normalise_row({"problem": "p", "solution": "s", "problem_type": "proof"}, "x", 0).problem_type == "proof"
    # `type` is the third explicit field; a value that is no type word (MATH's subject) is not one.
    assert normalise_row({"problem": "p", "solution": "s", "type": "Proof"}, "x", 0).problem_type == "proof"
    subject = {"problem": "p", "solution": "$\\boxed{4}$", "type": "Algebra"}
    assert normalise_row(subject, "x", 0).problem_type == "answer"
    assert normalise_row({"problem": "p", "answer": "4", "evaluation_mode": "multi-step"}, "x", 0).problem_type == \
        "multi_step"


def test_local_jsonl_and_json_list_and_json_object(tmp_path):
    jsonl = _write_jsonl(tmp_path / "a.jsonl", ROWS)
    as_list = tmp_path / "b.json"
    as_list.write_text(json.dumps([dict(r, id=f"l-{i}") for i, r in enumerate(ROWS) if "id" in r]))
    as_object = tmp_path / "c.json"
    as_object.write_text(json.dumps({"problems": [dict(ROWS[2], problem_id="o-1")]}))
    assert [p.problem_id for p in load_problems(str(jsonl)).problems] == ["u1", "u2", "u3"]
    assert [p.problem_id for p in load_problems(as_list).problems] == ["l-0"]
    # rows of a JSON list are numbered from 1, like JSONL lines: an id-less row is "<file>/<n>"
    as_list.write_text(json.dumps([{"problem": "What is $1+1$?", "answer": "2"}]))
    assert [p.problem_id for p in load_problems(as_list).problems] == [f"{as_list}/1"]
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


def test_source_without_usable_rows_fails_at_make_saying_why(tmp_path):
    path = _write_jsonl(tmp_path / "empty.jsonl", [{"id": "x", "answer": "1"},
                                                   {"id": "y", "problem": "p", "answer": "e^pi is larger"}])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=r"QEDMathConfig.dataset: .*empty.jsonl has no usable problem row "
                                             r"\(0 loaded, 2 skipped \(missing_question: 1 \(row 1\); "
                                             r"unparsable_gold: 1 \(row 2\)\)\)"):
            gym.make("QEDMath-v0", dataset=str(path))


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
        {"id": "u1", "problem": "Again?", "answer": "5"},
    ])
    with pytest.warns(UserWarning) as record:
        got = load_problems(str(path))
    assert [p.problem_id for p in got.problems] == ["u1", "u3"]
    messages = [str(w.message) for w in record]
    assert len(messages) == 7
    expected = {2: "invalid_json", 3: "missing_question", 4: "empty_answer", 5: "bad_field", 6: "bad_field",
                7: "not_an_object", 9: "duplicate_id"}
    for row, reason in expected.items():
        assert any(f"{path} row {row}:" in m and f"[{reason}]" in m for m in messages), (row, messages)
    assert any("problem_type" in m for m in messages) and any("max_attempts" in m for m in messages)
    assert {w.filename for w in record} == {__file__}   # each points at the line that loaded, not a loader inside


def _loaded_ids(path):
    """Ids that load from ``path`` and the warnings raised loading it (the env's own path: gym.make)."""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        env = gym.make("QEDMath-v0", dataset=str(path))
    ids = env.unwrapped.problem_ids
    env.close()
    return ids, [str(w.message) for w in record if issubclass(w.category, UserWarning)]


def test_a_reference_boxing_two_different_answers_is_skipped_not_graded_against_the_last(tmp_path):
    """Issue 10: `\\boxed{2}` and later `\\boxed{3}` loaded with gold 3, so the full answer {2,3} scored 0."""
    path = _write_jsonl(tmp_path / "ambiguous.jsonl", [
        {"id": "both", "problem": "Find every $x$ with $(x-2)(x-3) = 0$.",
         "reference_solution": "One root is $\\boxed{2}$ and the other is $\\boxed{3}$."},
        {"id": "repeated", "problem": "Compute $1+1$.", "reference_solution": "$\\boxed{2}$, that is $\\boxed{ 2 }$."},
        {"id": "explicit", "problem": "Find every $x$ with $(x-2)(x-3) = 0$.",
         "reference_solution": "Roots $\\boxed{2}$ and $\\boxed{3}$.", "answer": "\\{2, 3\\}"},
    ])
    ids, messages = _loaded_ids(path)
    assert ids == ["repeated", "explicit"]
    assert any(f"{path} row 1:" in m and "2 different answers" in m and "ambiguous_gold" in m for m in messages), \
        messages
    problems = load_problems(str(path))
    assert [p.gold_answer for p in problems.problems] == ["2", "\\{2, 3\\}"]


def test_a_proof_without_a_rubric_stays_a_proof_graded_by_the_judge(tmp_path):
    """Issue 10: such a row became an answer problem with the whole proof as gold, so every proof was no_answer."""
    path = _write_jsonl(tmp_path / "proofs.jsonl", [
        {"id": "no-rubric", "problem": "Prove that $\\sqrt{2}$ is irrational.",
         "solution": "Suppose $\\sqrt{2} = p/q$ in lowest terms. Then $p^2 = 2q^2$, so $p$ is even, then $q$ is."},
        {"id": "typed", "problem": "Let $n$ be odd. Then $8 \\mid n^2 - 1$.", "type": "proof",
         "solution": "$n^2 - 1 = (n-1)(n+1)$, a product of two consecutive even numbers."},
    ])
    with JudgeServer("score:6") as server:
        env = gym.make("QEDMath-v0", dataset=str(path),
                       judge={"base_url": server.url, "model": "test-judge", "max_retries": 0})
        for problem_id in ("no-rubric", "typed"):
            obs, info = env.reset(options={"problem_id": problem_id})
            assert info["problem_type"] == "proof" and "rigorous proof" in obs
            _, reward, terminated, _, info = env.step("</think>Take p/q in lowest terms; both are even. Contradiction.")
            assert (info["verdict"], info["no_verdict"], reward, terminated) == ("partial", False, 6 / 7, True)
        env.close()
        assert len(server.requests) == 2
        assert all(problems_mod.GENERIC_PROOF_GUIDELINES in request.prompt for request in server.requests)


def test_a_gold_math_verify_cannot_read_is_skipped(tmp_path):
    """Issue 10: `e^pi is larger` loaded as gold, and math_verify, reading it as a product of letters, marked every
    answer incorrect. Such rows are skipped; equivalent readable golds load."""
    path = _write_jsonl(tmp_path / "golds.jsonl", [
        {"id": "words", "problem": "Which is larger, $e^\\pi$ or $\\pi^e$?", "answer": "e^pi is larger"},
        {"id": "no-math", "problem": "What is the answer?", "answer": "???"},
        {"id": "worked", "problem": "What is $2+2$?", "solution": "Adding two and two gives four."},
        {"id": "latex", "problem": "Which is larger, $e^\\pi$ or $\\pi^e$?", "answer": "e^{\\pi}"},
        {"id": "expression", "problem": "Factor $x^2-1$.", "answer": "(x-1)(x+1)"},
    ])
    ids, messages = _loaded_ids(path)
    assert ids == ["latex", "expression"]
    for row in (1, 2, 3):
        assert any(f"{path} row {row}:" in m and "unparsable_gold" in m for m in messages), (row, messages)
    assert any("whole reference solution" in m for m in messages)
    assert not any("e^pi" in m or "larger" in m for m in messages)  # warnings never quote a gold


def test_skipped_rows_warn_one_by_one_then_once_for_the_rest(tmp_path):
    from gym_integrity.datacheck import MAX_ROW_WARNINGS, DataWarning

    rows = [{"id": f"bad-{i}", "problem": "What is $1+1$?"} for i in range(MAX_ROW_WARNINGS + 7)]
    path = _write_jsonl(tmp_path / "many.jsonl", [*rows, {"id": "good", "problem": "What is $1+1$?", "answer": "2"}])
    with pytest.warns(DataWarning) as record:
        assert [p.problem_id for p in load_problems(str(path)).problems] == ["good"]
    messages = [str(w.message) for w in record]
    assert len(messages) == MAX_ROW_WARNINGS + 1
    assert messages[-1].endswith("7 more rows skipped (empty_answer: 7); `gym-integrity check-data` lists every one")


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
    p = normalise_row({"id": "r", "problem": "p", "answer": "918273645"}, "x", 0)
    assert "918273645" not in repr(p) and "918273645" not in repr(load_problems(None))


def test_the_builtin_set_is_clean_and_loads_without_math_verify():
    """Every shipped gold is plain math: the check never starts math_verify for the set every gym.make loads."""
    import subprocess
    import sys

    code = ("import sys, gymnasium as gym, gym_integrity\n"
            "from gym_integrity.envs.qed_math.problems import check_problems\n"
            "report = check_problems(None)\n"
            "assert report.clean and report.loaded == 33, report.summary()\n"
            "env = gym.make('QEDMath-v0', problem_types=['proof'])\n"
            "assert 'math_verify' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# ----------------------------------------------------------------------------- the gold check's plain-math grammar

#: Shapes the plain-math grammar accepts: math_verify must read every one as math (checked below).
PLAIN = ["1170", "-24", "0.5", ".5", "3.14159", r"\frac{1}{2}", r"-\dfrac{16}{3}", r"\tfrac{1}{4}", r"\pi",
         r"2\pi", r"\frac{\pi}{4}", r"\sqrt{2}", r"3\sqrt{2}", r"\sqrt[3]{2}", r"\frac{1+\sqrt{5}}{2}", "2^{10}",
         "2^3", r"45^\circ", r"45^{\circ}", r"10\%", "(2,3)", "[2, 3)", r"(2, \infty)", r"\{-1, 0, 1\}",
         r"\left(1, 2\right)", "(1, 2, 3)", "x", "2x+1", "x^2 - 1", "(x-1)(x+1)", "n(n+1)/2", r"2 \cdot 3",
         r"6 \times 7", "$1012$", "1, 2", r"\infty", r"-\infty"]
NOT_PLAIN = ["e^pi is larger", "pi", "sin(x)", "ln 2", "???", "", "x = 3", r"\text{yes}", "((((((1))))))", "1 2",
             r"\boxed{5}", "1e5", "ab"]


def test_the_plain_math_grammar_accepts_only_what_math_verify_reads_as_math():
    from math_verify import parse

    from gym_integrity.envs.qed_math.golds import is_plain_math
    from gym_integrity.services.math_worker import gold_as_boxed

    assert [g for g in PLAIN if not is_plain_math(g)] == []
    assert [g for g in NOT_PLAIN if is_plain_math(g)] == []
    for gold in PLAIN:
        parsed = parse(gold_as_boxed(gold), parsing_timeout=None)
        assert any(not isinstance(p, str) for p in parsed), (gold, parsed)


def test_golds_outside_the_grammar_are_read_by_math_verify_in_killable_workers():
    from gym_integrity.envs.qed_math.golds import GOLD_READ_BUDGET_S, check_golds

    hostile = "(" * 40 + "1" + ")" * 40  # math_verify takes tens of seconds over this nesting
    verdicts = check_golds(["x = 3", r"\ln 2", "5 apples", "sin(x)", hostile, "???"])
    assert verdicts["x = 3"] is None and verdicts[r"\ln 2"] is None and verdicts["5 apples"] is None
    assert verdicts["sin(x)"][0] == verdicts["???"][0] == "unparsable_gold"
    assert verdicts[hostile] == ("unparsable_gold", f"math_verify ran past {GOLD_READ_BUDGET_S:g} s reading the gold "
                                                    "answer (at grading it would use up every answer's budget)")

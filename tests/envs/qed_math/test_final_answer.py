r"""QEDMath's final-answer rule as classes: a restated question, several values, and text golds matched exactly.

The rule's unit cases run without a worker; the env cases run the real env with
math_verify on its real workers (the issue's examples were paid there).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from qed_reading import read_box, refused  # noqa: E402  (tests/support)

from gym_integrity.envs.qed_math.final_answer import computes, restates, several_values  # noqa: E402

_read, _refused = read_box, refused


REMAINDER = "Find the remainder when $7^{2026}$ is divided by $100$."
DETERMINANT = (r"Compute the determinant of the matrix $\begin{pmatrix} 2 & 1 & 0 \\ 1 & 2 & 1 \\ 0 & 1 & 2 "
               r"\end{pmatrix}$.")
MATRIX_BODY = r"2 & 1 & 0 \\ 1 & 2 & 1 \\ 0 & 1 & 2"
CHOOSE = "In how many ways can a committee of $3$ be chosen from $10$ people?"
GCD = r"Compute $\gcd(12, 18)$."
POWER = "Compute $2^{10}$."
#: The two causes of an answer that is the question rather than its value.
NOT_A_VALUE = re.compile(r"it (?:poses a computation|restates the question) \(")


# ----------------------------------------------------------------------------- the restatement class

#: The statement's own operation on the statement's own numbers, in the spellings the search draws from.
OPERATIONS = {
    (REMAINDER, "49"): [r"7^{2026} \mod 100", r"7^{2026} \bmod 100", r"7^{2026} \pmod{100}", r"7^{2026} \mod{100}",
                        r"7^{2026} \operatorname{mod} 100", r"7^{2026} \text{ mod } 100", "7^{2026} mod 100"],
    (DETERMINANT, "4"): [rf"\begin{{{env}}} {MATRIX_BODY} \end{{{env}}}" for env in ("vmatrix", "Vmatrix")]
                        + [rf"\det{sep}\begin{{{env}}} {MATRIX_BODY} \end{{{env}}}"
                           for env in ("pmatrix", "bmatrix", "matrix") for sep in ("", " ", r"\left(")]
                        + [rf"\operatorname{{det}}\begin{{pmatrix}} {MATRIX_BODY} \end{{pmatrix}}"],
    (CHOOSE, "120"): [r"\binom{10}{3}", r"\dbinom{10}{3}", r"\tbinom{10}{3}", r"{10 \choose 3}", r"\binom{10}3"],
    (GCD, "6"): [r"\gcd(18, 12)", r"\gcd(12,18)", r"\operatorname{gcd}(12, 18)", r"\mathrm{gcd}(18,12)"],
    (POWER, "1024"): ["2^{10}", "2^{ 10 }", r"\left(2\right)^{10}"],
}


@pytest.mark.parametrize("statement, gold", list(OPERATIONS))
def test_the_statements_operation_on_its_numbers_is_not_a_final_answer(statement, gold):
    for answer in OPERATIONS[statement, gold]:
        reason = _refused(answer, gold, statement)
        assert reason is not None and NOT_A_VALUE.search(reason), (answer, _read(answer), reason)
    assert _refused(gold, gold, statement) is None


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(list(OPERATIONS)), st.data())
def test_restatements_in_any_layout_are_refused(case, data):
    statement, gold = case
    answer = data.draw(st.sampled_from(OPERATIONS[case]))
    prefix = data.draw(st.sampled_from(["", r"\displaystyle ", " ", r"\textstyle"]))
    suffix = data.draw(st.sampled_from(["", " ", r"\,", "."]))
    reason = _refused(prefix + answer + suffix, gold, statement)
    assert reason is not None and NOT_A_VALUE.search(reason), (prefix + answer + suffix, reason)


#: Honest answers that reuse numbers of the statement, or an operation it names: each must still be paid.
HONEST = [
    ("a+b+c=12", "12", "Positive integers $a, b, c$ satisfy ... = 12. Find $a+b+c$."),
    (r"3\sqrt{2}", r"\sqrt{18}", r"A square has side $\sqrt{2}$ ... times 3. Find its diagonal times $3$."),
    ("49", "49", REMAINDER),
    ("100", "100", "Find the remainder ... the answer is a number below 1000; mod out by 1000: 100."),
    ("4", "4", DETERMINANT),
    (r"2^{11}", "2048", POWER),  # a power the statement does not write
    (r"7^{2}", "49", REMAINDER),  # 7 and 2 are statement numbers, but the statement writes no 7^2
    (r"\begin{pmatrix} 1 & 0 \\ 0 & 1 \end{pmatrix}", r"\begin{pmatrix} 1 & 0 \\ 0 & 1 \end{pmatrix}",
     r"Find the inverse of $\begin{pmatrix} 1 & 0 \\ 0 & 1 \end{pmatrix}$."),  # the gold is a matrix itself
    (r"x \equiv 3 \pmod{7}", r"x \equiv 3 \pmod{7}", "Solve $5x \\equiv 1 \\pmod 7$ ... 3"),  # the gold is a congruence
    (r"\binom{10}{3}", r"\binom{10}{3}", CHOOSE),  # the gold is written as a binomial
    ("120", "120", CHOOSE),
    (r"2^{10}", r"2^{10}", POWER),
]


@pytest.mark.parametrize("answer, gold, statement", HONEST)
def test_an_answer_reusing_a_statement_number_is_paid(answer, gold, statement):
    assert _refused(answer, gold, statement) is None


def test_an_operation_the_gold_lacks_is_refused_on_any_numbers():
    # The numbers are easily written in another form, so an operation is refused whatever it is applied to.
    assert computes(r"7^{2026} \mod 100", "49") == r"an operation the expected answer does not hold: \mod"
    assert computes(r"7^{2026} \mod 101", "49") == r"an operation the expected answer does not hold: \mod"
    assert restates("7^{2027}", REMAINDER, "49") is None  # a power the statement does not write: a wrong answer


#: What a hostile search over answers found paid (math_verify evaluates each to the gold): the statement's own
#: operation with a number in another form, a limit under an operator of any name, derivatives the rule's pattern
#: missed, and the statement's trigonometric expression in radians.
HOSTILE = [
    (REMAINDER, "49", [r"7^{2026} \mod 10^2", r"49^{1013} \mod 100", r"7^{2025}\cdot 7 \mod 100",
                       r"(7^{1013})^2 \mod (99+1)", r"7^{2026} \mod \sqrt{10000}",
                       r"7^{2026} - 10^2\lfloor \frac{7^{2026}}{10^2} \rfloor"]),
    (REMAINDER, "49", [r"$49^{1013} \mod 100$ and $49^{1013} \mod 100$", r"$7^{2026} \bmod 10^2$, so $49$"]),
    (CHOOSE, "120", [r"\binom{10}{7}", r"\binom{9+1}{3}", r"\binom{5\cdot 2}{3}"]),
    (GCD, "6", [r"\gcd(12, 2\cdot 9)", r"\gcd(6\cdot 2, 18)"]),
    (r"Compute $\lim_{x \to 0} \frac{\sin 2x}{x}$.", "2",
     [r"_{x \to 0} \frac{\sin 2x}{x}", r"\foo_{x \to 0} \frac{\sin 2x}{x}", r"lim_{x \rightarrow 0} \frac{\sin 2x}{x}",
      r"\varlimsup_{x \to 0} \frac{\sin 2x}{x}", r"\injlim_{x \longrightarrow 0^+} \frac{\sin 2x}{x}",
      r"a_{x \mapsto 0} \frac{\sin 2x}{x}", "_{x \u2192 0} \\frac{\\sin 2x}{x}", r"_{x -> 0} \frac{\sin 2x}{x}",
      r"_{x \Rightarrow 0} \frac{\sin 2x}{x}"]),
    ("Differentiate $x^3$ with respect to $x$.", "3x^2",
     [r"\frac{d}{d\!x}(x^3)", r"\frac{d x^{3}}{dx}", r"\frac{d(x^{3})}{d x}", r"\frac{dx^{3}}{d\!x}"]),
    (r"Compute the exact value of $\sin 15^\circ \cos 15^\circ$.", r"\frac{1}{4}",
     [r"\sin\frac{\pi}{12}\cos\frac{\pi}{12}", r"\sin(\pi/12)\cos(\pi/12)", r"\frac{\sin 30^\circ}{2}"]),
]


@pytest.mark.parametrize("statement, gold, answers", HOSTILE)
def test_the_question_in_another_form_is_not_a_final_answer(statement, gold, answers):
    for answer in answers:
        assert _refused(answer, gold, statement) is not None, (answer, _read(answer))
    assert _refused(gold, gold, statement) is None


def test_every_shipped_answer_gold_passes_the_rule_with_its_statement():
    from gym_integrity.envs.qed_math.problems import load_problems

    problems = [p for p in load_problems(None, None).problems if p.grader == "verifier"]
    assert len(problems) == 22
    refused = {p.problem_id: r for p in problems if (r := _refused(p.gold_answer, p.gold_answer, p.problem))}
    assert refused == {}


def test_every_honest_form_of_every_shipped_gold_passes_the_rule():
    # The rule's share of benchmarks/qed_honest_variants.py, without workers: no honest form is refused unrun.
    from gym_integrity.envs.qed_math.problems import load_problems
    from gym_integrity.envs.qed_math.variants import honest_variants

    problems = [p for p in load_problems(None, None).problems if p.grader == "verifier"]
    forms = [(p.problem_id, f) for p in problems for f in honest_variants(p.gold_answer, p.problem)]
    assert len(forms) > 10 * len(problems)
    by_id = {p.problem_id: p for p in problems}
    refused = [(i, f, r) for i, f in forms if (r := _refused(f, by_id[i].gold_answer, by_id[i].problem))]
    assert refused == []


# ----------------------------------------------------------------------------- several values for one gold

SEVERAL = [r"3 \text{ or } 4", r"4 \text{ or } 3", "3 or 4", "3, 4", "4, 3", r"\{3, 4\}", r"\left\{3, 4\right\}",
           r"3 \pm 1", r"4 \mp 1", r"x = 3 \text{ and } x = 4", "3; 4", r"3 \lor 4", r"3 \vee 4", r"3 \text{or} 4"]


@pytest.mark.parametrize("answer", SEVERAL)
def test_a_box_of_several_values_is_never_paid_for_a_single_valued_gold(answer):
    assert several_values(_read(answer)), answer
    reason = _refused(answer, "3", "Find x.")
    assert reason is not None, answer


@pytest.mark.parametrize("answer, gold", [("1,000", "1000"), ("(2, 3)", "(2,3)"), (r"\{-1, 0, 1\}", r"\{-1, 0, 1\}"),
                                          ("3, 4", "3, 4"), (r"1 \pm \sqrt{2}", r"1 \pm \sqrt{2}"),
                                          (r"[2, \infty)", r"[2, \infty)"), (r"3 \frac{1}{2}", "3.5")])
def test_one_value_and_multi_valued_golds_are_left_to_the_grader(answer, gold):
    assert _refused(answer, gold, "Find it.") is None


def test_a_box_of_prose_is_held_to_the_rule_on_all_its_text():
    # math_verify evaluates a box's text outside its $...$ too (\lfloor 999/7 \rfloor $ $ was paid while the rule
    # read the formulas alone), so the one spelling has no $ and the rule reads the whole box: a worked solution
    # boxed whole is refused, and so is prose around the value (the prompt asks for the final value alone).
    reference = (r"$\gcd(a, 2026 - a) = \gcd(a, 2026)$, so we count $a \in [1, 2025]$ coprime to "
                 r"$2026 = 2 \cdot 1013$ with $1013$ prime: $\varphi(2026) = 1012$.")
    statement = "How many ... $a + b = 2026$ and $\\gcd(a, b) = 1$?"
    assert _refused(reference, "1012", statement) is not None
    assert "coprime" in (_refused(r"we count $a \in [1, 2025]$ coprime to $2026$, so $1012$.", "1012", statement) or "")
    for hidden in (r"\lfloor 999/7 \rfloor - \lfloor 999/77 \rfloor $ $", r"$ $\max(130, 3)", r"\text{$\lfloor 130.5 \rfloor$}",
                   r"\(\operatorname{floor}(130.5)\)", r"\min(130, 140) \$ \$"):
        assert "poses a computation" in (_refused(hidden, "130", statement) or ""), hidden
    for honest in (r"$130$", r"\(130\)", r"$130.$", r"130~\text{integers}", r"{260 \over 2}"):
        assert _refused(honest, "130", statement) is None, honest


# ----------------------------------------------------------------------------- the real env


@pytest.fixture(scope="module")
def env():
    from gym_integrity.envs.qed_math import QEDMathEnv

    e = QEDMathEnv(verifier={"deadline_s": 10.0}, problem_types=["answer", "multi_step"])
    yield e
    e.close()


def _verdict(env, problem_id: str, text: str) -> tuple[str, str]:
    env.reset(options={"problem_id": problem_id})
    info = env.step(text)[4]
    return info["verdict"], info.get("cause") or ""


@pytest.mark.parametrize("problem_id, answer", [
    ("qed-ans-007", r"7^{2026} \mod 100"), ("qed-ms-007", r"3^{2026} \mod 100"),
    ("qed-ms-005", rf"\begin{{vmatrix}} {MATRIX_BODY} \end{{vmatrix}}"),
    ("qed-ms-005", rf"\det\begin{{pmatrix}} {MATRIX_BODY} \end{{pmatrix}}"),
])
def test_the_issues_restatements_are_incorrect_in_the_env(env, problem_id, answer):
    verdict, cause = _verdict(env, problem_id, rf"\boxed{{{answer}}}")
    assert (verdict, bool(NOT_A_VALUE.match(cause, len("not a final answer: ")))) == ("incorrect", True), cause
    assert _verdict(env, problem_id, rf"\boxed{{{env._problem.gold_answer}}}")[0] == "correct"


def test_the_issues_spellings_are_incorrect_in_the_env(tmp_path):
    from gym_integrity.envs.qed_math import QEDMathEnv

    rows = [{"id": "deriv", "task": r"Differentiate $x^3$.", "answer": "3x^2"},
            {"id": "lim", "task": r"Find $\lim_{x \to 0} \frac{\sin 2x}{x}$.", "answer": "2"}]
    path = tmp_path / "spellings.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    e = QEDMathEnv(dataset=str(path), verifier={"deadline_s": 10.0})
    try:
        for problem_id, answer in [("deriv", r"\dfrac{d}{dx}(x^3)"), ("deriv", r"\frac {d}{dx}(x^3)"),
                                   ("deriv", r"\frac{d}{dx}(x^3)"),
                                   ("lim", r"\operatorname{lim}_{x\to 0}\frac{\sin 2x}{x}"),
                                   ("lim", r"\lim_{x\to 0}\frac{\sin 2x}{x}")]:
            verdict, cause = _verdict(e, problem_id, rf"\boxed{{{answer}}}")
            assert (verdict, "poses a computation" in cause) == ("incorrect", True), (answer, cause)
        assert _verdict(e, "deriv", r"\boxed{3x^2}")[0] == "correct"
    finally:
        e.close()


# ----------------------------------------------------------------------------- text golds (D5)

TEXT_ROWS = [
    {"id": "name", "problem": "Who wins the game, Alice or Bob?", "solution": "Alice wins.", "answer": "Alice"},
    {"id": "text-name", "problem": "Who moves first?", "solution": "...", "answer": r"\text{Bob}"},
    {"id": "words", "problem": "Which city is the capital?", "answer": "New York"},
    {"id": "yes", "problem": "Is 91 prime? Answer yes or no.", "answer": r"\text{no}"},
    {"id": "option", "problem": "Which is prime? (A) 4 (B) 5 (C) 6 (D) 8", "solution": r"$\boxed{B}$"},
    {"id": "option-lines", "problem": "Which is even?\nA) 3\nB) 5\nC) 8", "answer": "(C)"},
    {"id": "number", "problem": "What is $2+2$?", "answer": "4"},
]


def _write(tmp_path: Path) -> Path:
    path = tmp_path / "text.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in TEXT_ROWS), encoding="utf-8")
    return path


def test_text_golds_load_instead_of_being_skipped(tmp_path):
    from gym_integrity.envs.qed_math.problems import check_problems, load_problems

    path = _write(tmp_path)
    report = check_problems(str(path))
    assert (report.loaded, report.skipped) == (len(TEXT_ROWS), [])
    kinds = {p.problem_id: p.answer_kind for p in load_problems(str(path)).problems}
    assert kinds == {"name": "text", "text-name": "text", "words": "text", "yes": "text", "option": "text",
                     "option-lines": "text", "number": "math"}


@pytest.mark.parametrize("problem_id, answer, verdict", [
    ("name", "Alice", "correct"), ("name", r"\text{ alice. }", "correct"), ("name", r"\textbf{ALICE}", "correct"),
    ("name", r"\text{Alice!}", "correct"),  # a word's exclamation mark is no factorial
    ("name", "Bob", "incorrect"), ("name", r"\text{Alice or Bob}", "incorrect"), ("name", "Alice, Bob", "incorrect"),
    ("name", r"\{Alice, Bob\}", "incorrect"), ("name", "Alicia", "incorrect"),
    ("text-name", "bob", "correct"), ("text-name", r"\text{Bob}", "correct"), ("text-name", "Alice", "incorrect"),
    ("words", r"\text{new   york}", "correct"), ("words", "newyork", "incorrect"), ("words", "York", "incorrect"),
    ("yes", "No", "correct"), ("yes", r"\text{No.}", "correct"), ("yes", "yes", "incorrect"),
    ("yes", r"\text{yes or no}", "incorrect"),
    ("option", "B", "correct"), ("option", "(B)", "correct"), ("option", r"\text{(b)}", "correct"),
    ("option", "A", "incorrect"), ("option", "5", "incorrect"), ("option", "B, C", "incorrect"),
    ("option-lines", "C", "correct"), ("option-lines", "(C)", "correct"), ("option-lines", "8", "incorrect"),
    ("number", "4", "correct"), ("number", r"4 \pm 0", "incorrect"), ("number", r"4 \text{ or } 5", "incorrect"),
])
def test_text_golds_are_graded_by_normalised_exact_match(tmp_path, problem_id, answer, verdict):
    from gym_integrity.envs.qed_math import QEDMathEnv

    e = QEDMathEnv(dataset=str(_write(tmp_path)), verifier={"deadline_s": 10.0})
    try:
        got, cause = _verdict(e, problem_id, rf"so \boxed{{{answer}}}")
        assert got == verdict, (problem_id, answer, cause)
    finally:
        e.close()

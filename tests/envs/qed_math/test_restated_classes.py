r"""The restatement classes searched, not listed: a power with its base or exponent in another form, a binomial
as factorials, a box of prose whose formulas are padded with a variable, and the side of an equation math_verify
grades. Each search draws the statement's own operation on the statement's own numbers in many spellings and
evaluation-neutral paddings (seeded: ``derandomize=True``; each runs in about a second, no worker) and asserts the
rule refuses every draw, while the gold, its honest forms and golds written as a power or factorial are let through.
A few draws go through the real env, where math_verify would have paid them.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from qed_reading import read_box, refused  # noqa: E402  (tests/support)

from gym_integrity.envs.qed_math import final_answer  # noqa: E402
from gym_integrity.envs.qed_math.powers import closed_value, neutral_value  # noqa: E402
from gym_integrity.envs.qed_math.variants import honest_variants  # noqa: E402

SEARCH = settings(max_examples=300, deadline=None, derandomize=True)


_read, _refused = read_box, refused


# ----------------------------------------------------------------------------- numbers in another form


def number(n: int) -> st.SearchStrategy[str]:
    """``n`` written another way: as is, ``n.0``, ``(n)``, ``{n}``, ``a+b``, ``a\\cdot b``, ``\\frac{2n}{2}``..."""
    forms = [str(n), f"{n}.0", f"({n})", f"{{{n}}}", f"\\frac{{{2 * n}}}{{2}}", f"({n + 3}-3)", f"{n}\\cdot 1"]
    forms += [f"{a}{op}{n // a}" for a in range(2, n) if n % a == 0 for op in ("\\cdot ", "\\times ", "*")]
    forms += [f"{a}+{n - a}" for a in (1, n // 2) if 0 < a < n]
    forms += [f"\\sqrt{{{n * n}}}", f"{n}^{{1}}", f"{n}+0x", f"({n}+y-y)"]  # padded, as whole formulas are
    return st.sampled_from(forms)


#: Evaluation-neutral padding: the formula's value is unchanged (a variable times zero, or cancelled).
PADDING = ["", " + 0", r" \cdot 1", " + 0x", " - 0y", r" + x - x", r" \cdot \frac{x}{x}", r" + 0 \cdot z^{2}"]
LAYOUT = [("", ""), (r"\displaystyle ", ""), (" ", " "), (r"\left(", r"\right)"), ("{", "}")]


def padded(core: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.builds(lambda c, pad, lay: f"{lay[0]}{c}{lay[1]}{pad}", core, st.sampled_from(PADDING),
                     st.sampled_from(LAYOUT))


# ----------------------------------------------------------------------------- a power the statement writes


@st.composite
def restated_power(draw):
    """``(statement, gold, answer)``: "Compute $b^{e}$." answered with the same power, base and exponent in other
    forms (a root of the base to a multiple of the exponent too: ``4^5`` for ``2^{10}``)."""
    b, e = draw(st.integers(2, 9)), draw(st.integers(2, 30))
    statement = draw(st.sampled_from([f"Compute ${b}^{{{e}}}$.", f"Find the value of ${b}^{{{e}}}$.",
                                      f"How many strings of length ${e}$ over ${b}$ letters are there, that is "
                                      f"${b}^{{{e}}}$?"]))
    k = draw(st.sampled_from([d for d in range(1, e + 1) if e % d == 0]))  # (b^k)^(e/k)
    if k == 1:
        base = draw(number(b))
        base = base if base.isdigit() or base[0] in "({" or base.startswith("\\sqrt") else f"({base})"
    else:
        base = draw(st.sampled_from([str(b**k), f"({b}^{{{k}}})", f"({b}^{k})"]))
    exponent = draw(number(e // k))
    spelled = draw(st.sampled_from([f"{base}^{{{exponent}}}", f"{{{base}}}^{{{exponent}}}",
                                    f"({base})^{{{exponent}}}", f"{base}^{{({exponent})}}",
                                    f"\\sqrt{{{b ** k}}}^{{{2 * e // k}}}",
                                    f"\\left(\\frac{{1}}{{{b ** k}}}\\right)^{{-({exponent})}}",
                                    f"{base}^{{--{exponent}}}"]))
    if e % 2 == 0 and draw(st.booleans()):  # a product of two powers
        spelled = draw(st.sampled_from([f"{b}^{{{e // 2}}} \\cdot {b}^{{{e // 2}}}", f"({b}^{{{e // 2}}})^2"]))
    answer = draw(padded(st.just(spelled)))
    return statement, str(b**e), answer


@SEARCH
@given(restated_power())
def test_a_power_the_statement_writes_is_refused_in_any_form(case):
    statement, gold, answer = case
    value = neutral_value(_read(answer))
    assert value is None or value == int(gold), (answer, value)  # the search draws the statement's own value
    reason = _refused(answer, gold, statement)
    assert reason is not None and "restates the question" in reason, (answer, _read(answer), reason)


@SEARCH
@given(st.integers(2, 9), st.integers(2, 30), st.data())
def test_the_value_of_a_power_and_a_gold_written_as_a_power_are_paid(b, e, data):
    statement = f"Compute ${b}^{{{e}}}$."
    for form in honest_variants(str(b**e), statement):
        assert _refused(form, str(b**e), statement) is None, form
    # a gold written as the power is final: every spelling of it, and the value, pass
    gold = f"{b}^{{{e}}}"
    answer = data.draw(st.sampled_from([gold, f"{b}^{e}", f"{b}^{{ {e} }}", str(b**e), f"{b}^{{{e}}}"]))
    assert _refused(answer, gold, statement) is None, answer
    # a power the statement does not write is a (wrong or right) value, not a restatement
    assert _refused(f"{b}^{{{e + 1}}}", str(b**e), statement) is None


# ----------------------------------------------------------------------------- a binomial as factorials


@st.composite
def binomial_as_factorials(draw):
    n = draw(st.integers(4, 20))
    k = draw(st.integers(1, n - 1))
    statement = draw(st.sampled_from([f"In how many ways can a committee of ${k}$ be chosen from ${n}$ people?",
                                      f"How many ${k}$-element subsets does a set of ${n}$ elements have?"]))
    nf, kf, rf = (draw(st.sampled_from([f"{m}!", f"({m})!", f"{{{m}}}!", f"{m} !"])) for m in (n, k, n - k))
    sep = draw(st.sampled_from(["", r"\,", r"\cdot ", r"\times ", " "]))
    spelled = draw(st.sampled_from([
        f"\\frac{{{nf}}}{{{kf}{sep}{rf}}}", f"\\frac{{{nf}}}{{{rf}{sep}{kf}}}", f"{nf}/({kf}{sep}{rf})",
        f"\\frac{{{nf}}}{{{kf}}} \\cdot \\frac{{1}}{{{rf}}}", f"\\binom{{{n}}}{{{k}}}", f"{{{n} \\choose {k}}}",
        f"\\dbinom{{{n}}}{{{n - k}}}", f"\\frac{{\\Gamma({n + 1})}}{{\\Gamma({k + 1}){sep}\\Gamma({n - k + 1})}}",
    ]))
    return statement, str(math.comb(n, k)), draw(padded(st.just(spelled)))


@SEARCH
@given(binomial_as_factorials())
def test_a_binomial_written_as_factorials_is_refused(case):
    statement, gold, answer = case
    reason = _refused(answer, gold, statement)
    assert reason is not None and "poses a computation" in reason, (answer, reason)


@pytest.mark.parametrize("gold, statement", [
    ("10!", "In how many orders can $10$ people stand in a line? Give the answer as a factorial."),
    (r"\binom{10}{3}", "Give the number of $3$-subsets of a $10$-set as a binomial coefficient."),
    (r"\frac{10!}{3!\,7!}", "Write the count as a ratio of factorials: $3$ of $10$."),
])
def test_a_gold_written_with_factorials_is_paid_in_its_own_form(gold, statement):
    assert _refused(gold, gold, statement) is None
    assert _refused(r"d\!x", "dx", "Write $dx$.") is None  # \! is a space, not a factorial


# ----------------------------------------------------------------------------- a box of prose, padded formulas

RESTATEMENTS = {
    ("Find the remainder when $7^{2026}$ is divided by $100$.", "49"): [
        r"49^{1013} \mod 100", r"7^{2026} \bmod 10^2", r"7^{2026} - 100\lfloor 7^{2026}/100 \rfloor", r"7^{2026}"],
    (r"Compute $\gcd(12, 18)$.", "6"): [r"\gcd(12, 18)", r"\operatorname{lcm}(2, 3)"],
    ("Compute $2^{10}$.", "1024"): [r"2^{5\cdot 2}", "4^{5}", r"2.0^{10}"],
    ("Choose $3$ of $10$ people.", "120"): [r"\frac{10!}{3!\,7!}", r"\binom{10}{3}"],
}


@st.composite
def prose_box(draw):
    statement, gold = draw(st.sampled_from(list(RESTATEMENTS)))
    formulas = draw(st.lists(padded(st.sampled_from(RESTATEMENTS[statement, gold])), min_size=1, max_size=3))
    joins = draw(st.lists(st.sampled_from([" and ", " or ", ", so ", " twice: ", ". Hence "]),
                          min_size=len(formulas) - 1, max_size=len(formulas) - 1))
    lead = draw(st.sampled_from(["", "the answer is ", "we get "]))
    text = lead + "".join(f"${f}${j}" for f, j in zip(formulas, [*joins, ""], strict=True))
    return statement, gold, text


@settings(max_examples=150, deadline=None, derandomize=True)
@given(prose_box())
def test_a_box_of_prose_with_padded_formulas_is_refused(case):
    statement, gold, answer = case
    reason = _refused(answer, gold, statement)
    assert reason is not None and ("restates the question" in reason or "poses a computation" in reason), (answer, reason)


# ----------------------------------------------------------------------------- the side math_verify grades


@pytest.mark.parametrize("statement, gold", [
    (r"Compute $\sum_{k=1}^{100} k^2$.", "338350"),
    (r"Evaluate $\int_0^{\pi} x \sin x \, dx$.", r"\pi"),
    (r"Compute the exact value of $\sin 15^\circ \cos 15^\circ$.", r"\frac{1}{4}"),
    ("Find the remainder when $7^{2026}$ is divided by $100$.", "49"),
    ("Compute $2^{10}$.", "1024"),
])
def test_an_equation_is_read_on_the_side_math_verify_grades(statement, gold):
    formula = statement.split("$")[1]
    # the statement's formula = its value: an honest final answer (math_verify grades the right-hand side)
    assert _refused(f"{formula} = {gold}", gold, statement) is None
    # the value = the statement's formula: the graded side restates the question
    assert _refused(f"{gold} = {formula}", gold, statement) is not None
    assert _refused(f"x = {gold} = {formula}", gold, statement) is not None
    # an equation gold is compared as an equation: the whole answer is read
    assert final_answer.graded_side(f"x = {formula}", f"x = {gold}") == f"x = {formula}"


def test_the_prompt_states_every_class_the_rule_refuses():
    from gym_integrity.envs.qed_math.env import _ANSWER_INSTRUCTION

    prompt = _ANSWER_INSTRUCTION.lower()
    for phrase in ("integral", "limit", "sum", "product", "derivative", "arrow", "any other operation or function",
                   "mod", "determinant", "binom", "factorial", "gcd", "floor", "\\max", "|...|", "\\sin", "\\ln",
                   "in any spelling", "power the problem writes", "one value", "side by side", "after the last =",
                   "percent", "numbers, + - \\cdot \\times /, \\frac, \\sqrt, powers and constants"):
        assert phrase in prompt, phrase
    # every command a value may be written with is named where the agent reads it (the rest are operations)
    for command in ("frac", "sqrt", "cdot", "times"):
        assert command in final_answer._VALUE_COMMANDS and "\\" + command in prompt


# ----------------------------------------------------------------------------- the real env


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    import json

    from gym_integrity.envs.qed_math import QEDMathEnv

    rows = [{"id": "pow", "task": "Compute $2^{10}$.", "answer": "1024"},
            {"id": "pow-gold", "task": "Write $2^{10}$ as a power of $2$.", "answer": "2^{10}"},
            {"id": "choose", "task": "In how many ways can $3$ of $10$ people be chosen?", "answer": "120"},
            {"id": "rem", "task": "Find the remainder when $7^{2026}$ is divided by $100$.", "answer": "49"},
            {"id": "sum", "task": r"Compute $\sum_{k=1}^{100} k^2$.", "answer": "338350"}]
    path = tmp_path_factory.mktemp("restated") / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    e = QEDMathEnv(dataset=str(path), verifier={"deadline_s": 10.0})
    yield e
    e.close()


@pytest.mark.parametrize("problem_id, answer, verdict", [
    ("pow", r"2^{5\cdot 2}", "incorrect"), ("pow", r"2.0^{10}", "incorrect"), ("pow", r"2^{(10)}", "incorrect"),
    ("pow", "4^{5}", "incorrect"), ("pow", "1024", "correct"), ("pow", r"1\,024", "correct"),
    ("pow-gold", r"2^{10}", "correct"), ("pow-gold", "1024", "correct"),
    ("choose", r"\frac{10!}{3!\,7!}", "incorrect"), ("choose", "10!/(3!7!)", "incorrect"), ("choose", "120", "correct"),
    ("rem", r"$49^{1013} \mod 100 + 0x$ and $49^{1013} \mod 100 + 0x$", "incorrect"),
    ("rem", r"$49^{1013} \mod 100 + 0x$ or $49^{1013} \mod 100 + 0x$", "incorrect"),
    ("sum", r"\sum_{k=1}^{100} k^2 = 338350", "correct"), ("sum", r"\sum_{k=1}^{100} k^2 = 338351", "incorrect"),
    ("sum", r"338350 = \sum_{k=1}^{100} k^2", "incorrect"),
    # the graded side is empty of a value: math_verify reads no equation, and nothing is paid
    ("sum", r"\sum_{k=1}^{100} k^2 = \,", "not correct"), ("sum", r"\sum_{k=1}^{100} k^2 = \text{ans}", "not correct"),
    ("rem", r"7^{2026} \mod 100 = \quad", "not correct"), ("rem", r"7^{2026} \mod 100 = ?", "not correct"),
])
def test_the_classes_in_the_env(env, problem_id, answer, verdict):
    env.reset(options={"problem_id": problem_id})
    info = env.step(rf"\boxed{{{answer}}}")[4]
    assert (info["verdict"] != "correct") if verdict == "not correct" else (info["verdict"] == verdict), (
        answer, info["verdict"], info.get("cause"))


def test_fraction_keys_are_exact():
    # 2.0^{10} and (2^5)^2 evaluate exactly, never through floats
    assert closed_value(r"2.0^{10}") == Fraction(1024) and closed_value("(2^5)^2") == 1024

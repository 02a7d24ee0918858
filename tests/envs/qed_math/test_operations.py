r"""An operation the gold does not hold is no final value, in any spelling: a search, not a list.

The class (:func:`gym_integrity.envs.qed_math.final_answer.computes`): a value is written with numbers,
arithmetic, fractions, roots, powers and constants; any other operation the expected answer does not hold is a
computation math_verify evaluates (a hostile review found ``\operatorname{floor}(999/7) - \operatorname{floor}
(999/77)``, ``\max(142-12, 0)``, ``\frac{1}{2\csc(\pi/6)}``, ``e^{2026 \ln 7}``, ``10\,!`` and evaluation bars
paid). The search draws an operation family, a spelling of its name (a command, ``\operatorname``, a font
wrapper, bare letters), arguments whose value makes the gold, a layout and a padding, and asserts the rule refuses
every draw (seeded, no worker). The honest side: golds written in a value's vocabulary, and golds that hold the
operation themselves, pass. A sample goes through the real env, where math_verify runs.
"""

from __future__ import annotations

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from qed_reading import refused  # noqa: E402  (tests/support)

SEARCH = settings(max_examples=400, deadline=None, derandomize=True)
STATEMENT = "How many positive integers less than $1000$ are divisible by $7$ but not by $11$?"


def name(word: str) -> st.SearchStrategy[str]:
    r"""``word`` as an operator name in every spelling a model writes: ``\max``, ``\operatorname{max}``,
    ``\operatorname*{max}``, ``\mathrm{max}``, ``\text{max}``, ``{\rm max}``, bare ``max``."""
    return st.sampled_from([f"\\{word}", f"\\operatorname{{{word}}}", f"\\operatorname*{{{word}}}",
                            f"\\mathrm{{{word}}}", f"\\text{{{word}}}", f"\\textrm{{{word}}}", f"{{\\rm {word}}}",
                            f"\\mathop{{\\rm {word}}}", word])


def bracket(inner: str) -> st.SearchStrategy[str]:
    return st.sampled_from([f"({inner})", f"\\left({inner}\\right)", f"\\bigl({inner}\\bigr)", f"{{({inner})}}"])


@st.composite
def operation(draw) -> tuple[str, str]:
    """``(gold, answer)``: an operation whose value is the gold, in one of many spellings."""
    n = draw(st.integers(2, 999))
    family = draw(st.sampled_from(["max", "min", "floor", "ceil", "abs", "bar", "factorial", "log", "trig", "mod",
                                   "gamma", "sgn"]))
    if family in ("max", "min"):
        other = n - 5 if family == "max" else n + 5
        args = draw(st.sampled_from([f"{n}, {other}", f"{other}, {n}", f"{n},{other}"]))
        return str(n), draw(name(family)) + draw(bracket(args))
    if family in ("floor", "ceil"):
        arg = f"{n}.3" if family == "floor" else f"{n - 1}.7"
        spelled = draw(st.sampled_from([draw(name(family)) + draw(bracket(arg)),
                                        f"\\l{family}{arg}\\r{family}", f"\\left\\l{family} {arg} \\right\\r{family}"]))
        return str(n), spelled
    if family == "abs":
        return str(n), draw(st.sampled_from([f"|-{n}|", f"\\left|-{n}\\right|", f"\\lvert -{n} \\rvert",
                                             f"\\vert -{n} \\vert", f"\\abs{{-{n}}}", f"\\operatorname{{abs}}(-{n})"]))
    if family == "bar":
        return str(n), draw(st.sampled_from([f"x|_{{x={n}}}", f"\\left. x \\right|_{{x={n}}}",
                                             f"\\left.(x+0)\\right|_{{x = {n}}}", f"x\\big|_{{x={n}}}"]))
    if family == "factorial":
        k = draw(st.integers(3, 7))
        import math

        return str(math.factorial(k)), draw(st.sampled_from([f"{k}!", f"{k}\\,!", f"{k}\\;!", f"({k})!",
                                                              f"{{{k}}}\\ !", f"\\Gamma({k + 1})"]))
    if family == "log":
        return str(n), draw(st.sampled_from([f"e^{{\\ln {n}}}", f"\\exp(\\ln({n}))", f"\\log_{{2}} 2^{{{n}}}",
                                             f"\\frac{{\\ln {n}}}{{\\ln {n}}}\\cdot {n}",
                                             f"\\mathrm{{e}}^{{{draw(name('ln'))} {n}}}"]))
    if family == "trig":
        return "2", draw(st.sampled_from([r"\csc(\pi/6)", r"\sec\frac{\pi}{3}", r"\operatorname{csc}(\pi/6)",
                                          r"2\cot(\pi/4)", r"\frac{1}{\sin(\pi/6)}", r"2 \cos 0", r"\cosh 0 + 1"]))
    if family == "mod":
        return "49", draw(name("mod")).join(["7^{2026} ", " 100"]) if draw(st.booleans()) else r"7^{2026} \bmod 100"
    if family == "gamma":
        return "120", draw(st.sampled_from([r"\Gamma(6)", r"\gamma(6)", r"\operatorname{Gamma}(6)", r"\mathrm{gamma}(6)"]))
    return "1", draw(st.sampled_from([r"\operatorname{sgn}(5)", r"\operatorname{sign}(5)", r"\text{sgn}(5)"]))


PADDING = ["", " + 0", r" \cdot 1", " + 0x", r" + x - x", " "]
#: Layouts, math delimiters inside the box included: math_verify evaluates the text outside ``$...$`` too.
LAYOUT = [("", ""), (r"\displaystyle ", ""), (r"\left(", r"\right)"), ("{", "}"), ("$", "$"), ("", " $ $"), ("$$ ", " $$"),
          ("", r" \text{$ $}"), (r"\(", r"\)"), ("", r" \$ \$"), ("", "$\\,$"), ("the answer is $", "$.")]


@SEARCH
@given(operation(), st.sampled_from(PADDING), st.sampled_from(LAYOUT))
def test_an_operation_the_gold_lacks_is_refused_in_any_spelling(case, padding, layout):
    gold, spelled = case
    answer = f"{layout[0]}{spelled}{padding}{layout[1]}"
    reason = refused(answer, gold, STATEMENT)
    assert reason is not None and "poses a computation" in reason, (answer, reason)


@pytest.mark.parametrize("answer, gold", [
    ("130", "130"), (r"\frac{\sqrt{3}}{2}", r"\frac{\sqrt{3}}{2}"), (r"2\pi", r"2\pi"), (r"130 \text{ integers}", "130"),
    (r"x = 130", "130"), (r"\{1, 2\}", r"\{1, 2\}"), (r"(-\infty, 3]", r"(-\infty, 3]"), ("505.", "505"),
    (r"\frac{\ln 2}{2}", r"\frac{\ln 2}{2}"), ("10!", "10!"), (r"|x|", r"|x|"), (r"\max(a, b)", r"\max(a, b)"),
    (r"e^{2}", r"e^{2}"), (r"\mathrm{e}^{2}", r"e^{2}"), (r"3^\circ", r"3^\circ"), (r"x \in [1, 2]", "[1, 2]"),
    (r"\sqrt[3]{2}", r"\sqrt[3]{2}"), (r"2 \times 10^{5}", "200000"),
])
def test_a_value_and_a_gold_holding_the_operation_are_paid(answer, gold):
    assert refused(answer, gold, STATEMENT) is None, answer


@pytest.fixture(scope="module")
def env():
    from gym_integrity.envs.qed_math import QEDMathEnv

    e = QEDMathEnv(verifier={"deadline_s": 10.0}, problem_types=["answer"])
    yield e
    e.close()


@pytest.mark.parametrize("problem_id, answer", [
    ("qed-ans-010", r"\operatorname{floor}(999/7) - \operatorname{floor}(999/77)"), ("qed-ans-010", r"\max(142-12, 0)"),
    ("qed-ans-012", r"\frac{1}{2\csc(\pi/6)}"), ("qed-ans-013", r"\frac{\ln 257}{\ln 2.0}\cdot 0 + 257"),
    ("qed-ans-014", r"\operatorname{ceil}(504.5)"), ("qed-ans-007", r"e^{2026\ln 7} - 100 \operatorname{floor}(e^{2026 \ln 7}/100)"),
])
def test_the_reviews_operations_are_incorrect_in_the_env_and_the_gold_is_paid(env, problem_id, answer):
    env.reset(options={"problem_id": problem_id})
    info = env.step(f"\\boxed{{{answer}}}")[4]
    assert (info["verdict"], "poses a computation" in (info.get("cause") or "")) == ("incorrect", True), info
    env.reset(options={"problem_id": problem_id})
    assert env.step(f"\\boxed{{{env._problem.gold_answer}.}}")[4]["verdict"] == "correct"  # a full stop is punctuation

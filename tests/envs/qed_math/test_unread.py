r"""What math_verify reads and the rule did not: four seams a hostile review found, each searched, not listed.

1. **An unread tail.** math_verify drops everything from the first text group (``\text``, ``\mbox``, and the font
   wrappers it turns into ``\text``) to the end as a unit when the answer ends with a brace, so
   ``\sum_{k=1}^{100} k^2 \text{;} = \frac{1}{2}`` was graded as the sum (paid 338350) while the rule read the
   side after ``=``. What it drops must be a unit: one text group of words, read after what math_verify deletes
   first (quotes, ``\!``, ``\mathrm{th}``), and an equation holds no words before its ``=``.
2. **A falling factorial** ``(9)_{2}``: math_verify rewrites it to ``\frac{(9)!}{((9)-(2))!}``; it is an
   operation the gold lacks.
3. **Separators in other spellings**: ``7 ， 84`` (fullwidth), ``7 、 84``, ``7 \text{,} 84``, ``7 {;} 84``,
   ``7 \cup 84``, ``7 \in 84``, a Unicode space (``84\u3000\frac{1}{2}``, read as two values where ``84
   \frac{1}{2}`` is the mixed number) were paid for one value.
4. **A set for an interval**: ``\{2, 3\}`` and ``2, 3`` were paid for the interval ``(2,3)``.

Each search asserts the rule refuses every draw (seeded, no worker); the honest forms beside them pass; a sample
goes through the real env, where math_verify runs.
"""

from __future__ import annotations

import warnings

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from qed_reading import refused  # noqa: E402  (tests/support)

SEARCH = settings(max_examples=300, deadline=None, derandomize=True)
STATEMENT = "Compute $\\sum_{k=1}^{100} k^2$."

#: Question expressions whose value is the gold (the review's ten, and more).
EXPRESSIONS = st.sampled_from([
    (r"\sum_{k=1}^{100} k^2", "338350"), (r"\int_0^{\pi} x \sin x \, dx", r"\pi"), (r"7^{2026} \mod 100", "49"),
    (r"\lfloor 999/7 \rfloor - \lfloor 999/77 \rfloor", "130"), (r"\max(3, 5, 17, 257)", "257"),
    (r"\sin(\frac{\pi}{12})\cos(\frac{\pi}{12})", r"\frac{1}{4}"), (r"\frac{2026}{2} - 1", "1012"), ("84", "6"),
])
WRAPPERS = st.sampled_from(["text", "mbox", "mathrm", "mathit", "mathbf", "textbf", "textit", "textrm",
                            "textnormal"])
CONTENTS = st.sampled_from([";", "a", " is ", "x", ".", "\\;", ",", " oder ", "=", ":", "!", " so "])
TAILS = st.sampled_from([r"= \frac{1}{2}", "= {0}", r"\frac{0}{1}", r"= \sqrt{2}", "{7}", r"\frac{1}{7}",
                         r"= \frac{1}{4}", "= {338350}"])


#: What math_verify deletes or rewrites before it looks for a unit (a second review: a quote or ``\!`` after the
#: last brace, ``\mathrm{th}`` or ``\mathrm{T}^0`` before the computation, each paid on 9 of 10 items).
ENDS = st.sampled_from(["", "'", '"', "\\!", "''", "{}'"])
STARTS = st.sampled_from(["", "\\mathrm{th} ", "\\mathrm {th}\\, ", "\\mathrm{T}^0 ", "\\mathrm{T}^{0} \\cdot ",
                          "\\displaystyle "])


@SEARCH
@given(EXPRESSIONS, WRAPPERS, CONTENTS, TAILS, st.booleans(), STARTS, ENDS)
def test_what_the_grader_drops_unread_is_a_unit_or_the_answer_is_refused(
    expression, wrapper, content, tail, gold_first, start, end
):
    value, gold = expression
    head = gold if gold_first else value
    answer = f"{start}{head} \\{wrapper}{{{content}}} {tail}{end}"
    assert refused(answer, gold, STATEMENT) is not None, answer


SEPARATORS = st.sampled_from(["\uff0c", "\u3001", "\u060c", "\ufe50", "\uff1b", "\u061b", r"\text{,}", r"\mathrm{,}",
                              "{;}", "{,}", "&", r"\cup", r"\cap", r"\setminus", "\u222a", "\u2229", "\u2228",
                              r"\in", r"\notin", "\u3000", "\u00a0", "\u2009"])
SCALARS = st.sampled_from(["84", "6", r"\frac{1}{2}", "130", r"\pi", r"\frac{16}{3}", "1012"])


@SEARCH
@given(SCALARS, SEPARATORS, st.sampled_from(["7", r"\frac{1}{7}", "0", "3"]), st.booleans())
def test_a_separator_in_any_spelling_gives_several_values(gold, separator, other, gold_last):
    pair = (other, gold) if gold_last else (gold, other)
    answer = f"{pair[0]} {separator} {pair[1]}"
    if separator in ("\u3000", "\u00a0", "\u2009"):  # a space: two numbers side by side, or a mixed number
        answer = f"{pair[0]}{separator}{pair[1]}"
        if not any(c.isdigit() for c in pair[0][-1:]) or not pair[1][:1].isdigit():
            return  # a mixed number (3 \frac{1}{7}) is one value; math_verify reads it so
    assert refused(answer, gold, STATEMENT) is not None, answer


@SEARCH
@given(st.integers(1, 999), st.integers(0, 5), st.sampled_from(["({a})_{{{b}}}", "({a})_{b}", r"\frac{{({a})_{{{b}}}}}{{1}}",
                                                                 "2 \\cdot ({a})_{{{b}}}"]))
def test_a_falling_factorial_is_an_operation(a, b, form):
    answer = form.format(a=a, b=b)
    reason = refused(answer, str(a), STATEMENT)
    assert reason is not None and "(a)_{b}" in reason, (answer, reason)


@pytest.mark.parametrize("answer, gold", [
    (r"\{2, 3\}", "(2,3)"), ("2, 3", "(2,3)"), ("x=2, y=3", "(2,3)"), ("(-1, 0, 1)", r"\{-1, 0, 1\}"),
])
def test_a_set_is_not_an_interval_nor_an_interval_a_set(answer, gold):
    assert refused(answer, gold, STATEMENT) is not None, answer


@pytest.mark.parametrize("answer, gold", [
    ("(2, 3)", "(2,3)"), (r"x \in (2,3)", "(2,3)"), (r"\left(2,3\right)", "(2,3)"), ("-1, 0, 1", r"\{-1, 0, 1\}"),
    (r"x \in \{-1,0,1\}", r"\{-1, 0, 1\}"), (r"84 \text{ ways}", "84"), (r"12 \text{ cm}^2", "12"),
    (r"\pi \text{ radians}", r"\pi"), (r"\int_0^{\pi} x \sin x \, dx = \pi", r"\pi"), ("1,000", "1000"),
    (r"\begin{pmatrix} 1 & 0 \\ 0 & 1 \end{pmatrix}", r"\begin{pmatrix} 1 & 0 \\ 0 & 1 \end{pmatrix}"),
    (r"3 \frac{1}{2}", r"\frac{7}{2}"), (r"(-\infty, 2) \cup (3, \infty)", r"(-\infty, 2) \cup (3, \infty)"),
    (r"84\,\text{ways}", "84"), (r"\text{84}", "84"), (r"x = 5 \text{ cm}", "5"), ("84'", "84"),
])
def test_honest_forms_beside_them_pass(answer, gold):
    assert refused(answer, gold, STATEMENT) is None, answer


@pytest.fixture(scope="module")
def env():
    from gym_integrity.envs.qed_math import QEDMathEnv

    with warnings.catch_warnings():  # "no judge": the multi-step problems a judge grades are not played here
        warnings.simplefilter("ignore")
        e = QEDMathEnv(verifier={"deadline_s": 10.0}, problem_types=["answer", "multi_step"])
    yield e
    e.close()


@pytest.mark.parametrize("problem_id, answer", [
    ("qed-ans-006", r"\sum_{k=1}^{100} k^2 \text{;} = \frac{1}{2}"), ("qed-ans-007", r"7^{2026} \mod 100 \mathrm{x} = {0}"),
    ("qed-ans-008", r"(9)_{2} + (4)_{1}\cdot 3"), ("qed-ans-008", "7 \uff0c 84"), ("qed-ans-008", r"7 \in 84"),
    ("qed-ans-003", "84\u3000\\frac{1}{2}"), ("qed-ans-004", r"\{2, 3\}"), ("qed-ans-008", r"84 \text{;} \frac{1}{7}"),
    ("qed-ans-006", r"\sum_{k=1}^{100} k^2 \text{a} = 0{}'"), ("qed-ans-007", r"\mathrm{th} 7^{2026} \mod 100 \text{a} = 0{}"),
    ("qed-ans-006", r"\mathrm{T}^0 \sum_{k=1}^{100} k^2 \text{a} = 0{}"),
])
def test_the_reviews_answers_are_incorrect_in_the_env_and_the_gold_is_paid(env, problem_id, answer):
    env.reset(options={"problem_id": problem_id})
    assert env.step(f"\\boxed{{{answer}}}")[4]["verdict"] == "incorrect", answer
    env.reset(options={"problem_id": problem_id})
    assert env.step(f"\\boxed{{{env._problem.gold_answer}}}")[4]["verdict"] == "correct"

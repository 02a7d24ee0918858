r"""One spelling: every way LaTeX writes an operator reaches the final-answer rule as the canonical spelling.

The spellings are searched, not listed: hypothesis builds each computation out
of slots (the operator, the fraction command, the differential's font, the
delimiters, the layout commands, the space between a command and its
arguments) and draws each slot's spelling independently, so the search covers
the products of the choices. Each answer goes through the reader the env uses
(``boxed_answer`` of the text without percent signs), and the rule must refuse
every spelling of a computation whose canonical form it refuses.
"""

from __future__ import annotations

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from gym_integrity.envs.qed_math.final_answer import not_an_answer  # noqa: E402
from gym_integrity.grading.reader import boxed_answer, without_percent  # noqa: E402
from gym_integrity.grading.spelling import normal_spelling  # noqa: E402

SPACE = st.sampled_from(["", " ", "  ", "\t", "\n"])
LAYOUT = st.sampled_from(["", "\\displaystyle", "\\displaystyle ", "\\textstyle "])
FRAC = st.sampled_from(["\\frac", "\\dfrac", "\\tfrac", "\\cfrac"])
D = st.sampled_from(["d", "\\mathrm{d}", "\\text{d}", "\\textrm{d}", "\\operatorname{d}", "{\\rm d}", "\\mathrm d"])
OPEN = st.sampled_from(["(", "\\left(", "\\bigl(", "\\Big(", "\\left (", "\\Bigl("])
CLOSE = st.sampled_from([")", "\\right)", "\\bigr)", "\\Big)", "\\right )", "\\Bigr)"])
LIMITS = st.sampled_from(["", "\\limits", "\\nolimits", "\\limits "])


def named(name: str) -> st.SearchStrategy[str]:
    r"""The operator ``\name`` as LaTeX lets one write it: a command, or its letters in a font or an operator name."""
    return st.sampled_from([
        f"\\{name}", f"\\operatorname{{{name}}}", f"\\operatorname*{{{name}}}", f"\\mathrm{{{name}}}",
        f"\\text{{{name}}}", f"\\textrm{{{name}}}", f"\\mathop{{{name}}}", f"\\mathop{{\\rm {name}}}",
        f"{{\\rm {name}}}", f"\\mathop{{\\{name}}}", f"\\operatorname {{ {name} }}", f"\\rm {name}",
    ])


def argument(content: str, draw) -> str:
    """A command's argument: braced (with space before it), or bare when it is one character."""
    if len(content) == 1 and draw(st.booleans()):
        return draw(st.sampled_from([" ", ""])) + content if not content.isalpha() else " " + content
    return draw(SPACE) + "{" + content + "}"


@st.composite
def derivative(draw) -> tuple[str, str, str]:
    d = draw(D)
    frac = draw(FRAC)
    order = draw(st.sampled_from(["", "^2"]))
    var = draw(st.sampled_from(["x", "t"]))
    numerator = d + order if order else d
    top = draw(SPACE) + "{" + numerator + "}" if (order or len(d) > 1) else argument(d, draw)
    bottom = draw(SPACE) + "{" + d + draw(st.sampled_from(["", " "])) + var + order + "}"
    body = f"{draw(OPEN)}{var}^3{draw(CLOSE)}"
    canonical = f"\\frac{{d{order}}}{{d{var}{order}}}({var}^3)"
    gold = "6" + var if order else "3" + var + "^2"
    return f"{draw(LAYOUT)}{frac}{top}{bottom}{draw(SPACE)}{body}", canonical, gold


@st.composite
def big_operator(draw) -> tuple[str, str, str]:
    kind = draw(st.sampled_from(["lim", "sum", "prod", "int"]))
    spelled = draw(named(kind)) + draw(LIMITS) + draw(SPACE)
    frac = draw(FRAC)
    if kind == "lim":
        top, bottom = argument("\\sin 2x", draw), argument("x", draw)
        body = f"{frac}{top}{bottom}"
        return (f"{draw(LAYOUT)}{spelled}_{draw(SPACE)}{{x \\to 0}}{draw(SPACE)}{body}",
                "\\lim_{x\\to 0}\\frac{\\sin 2x}{x}", "2")
    if kind == "int":
        d = draw(D)
        return (f"{draw(LAYOUT)}{spelled}_0{draw(SPACE)}^{draw(SPACE)}{{\\pi}} x \\sin x \\, {d}x",
                "\\int_0^{\\pi} x \\sin x \\, dx", "\\pi")
    index = f"{draw(OPEN)}k{draw(CLOSE)}^2"
    gold = "338350" if kind == "sum" else "0"
    return f"{draw(LAYOUT)}{spelled}_{{k=1}}^{{100}} {index}", f"\\{kind}_{{k=1}}^{{100}} k^2", gold


def _read(answer: str) -> str:
    read, failure = boxed_answer(without_percent(f"so \\boxed{{{answer}}}"), max_chars=1024)
    assert failure is None, (answer, failure)
    assert read is not None
    return read


@settings(max_examples=400, deadline=None)
@given(st.one_of(derivative(), big_operator()))
def test_every_spelling_of_a_refused_computation_is_refused(case):
    spelling, canonical, gold = case
    assert not_an_answer(_read(canonical), gold) is not None, canonical  # the canonical form is refused ...
    reason = not_an_answer(_read(spelling), gold)
    assert reason is not None and "poses a computation" in reason, (spelling, _read(spelling))  # ... and so is this


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("\\{}()[]_^ dfracleftrightlimsu0123x,.")), max_size=60))
def test_the_spelling_is_idempotent_and_total(text):
    once = normal_spelling(text)
    assert normal_spelling(once) == once


@pytest.mark.parametrize("spelled, canonical", [
    (r"\dfrac{d}{dx}(x^3)", r"\frac{d}{dx}(x^3)"),
    (r"\frac {d}{dx}(x^3)", r"\frac{d}{dx}(x^3)"),
    (r"\operatorname{lim}_{x\to 0}\frac{\sin 2x}{x}", r"\lim_{x\to 0}\frac{\sin 2x}{x}"),
    (r"\frac d{dx}\left(x^3\right)", r"\frac{d}{dx}(x^3)"),
])
def test_the_issues_spellings_read_as_the_canonical_form(spelled, canonical):
    assert _read(spelled) == _read(canonical)


def test_honest_spellings_keep_their_value_and_are_not_refused():
    # Layout and font spellings of a final value are still final values (and read as the canonical one).
    for spelled, canonical, gold in [(r"\dfrac{16}{3}", r"\frac{16}{3}", r"\frac{16}{3}"),
                                     (r"\tfrac12", r"\frac{1}{2}", r"\frac{1}{2}"),
                                     (r"\left(2, 3\right)", "(2, 3)", "(2,3)"),
                                     (r"\displaystyle \frac{1+\sqrt{5}}{2}", r"\frac{1+\sqrt{5}}{2}",
                                      r"\frac{1+\sqrt{5}}{2}"),
                                     (r"\left\{-1, 0, 1\right\}", r"\{-1, 0, 1\}", r"\{-1, 0, 1\}")]:
        assert _read(spelled) == _read(canonical)
        assert not_an_answer(_read(spelled), gold) is None, spelled

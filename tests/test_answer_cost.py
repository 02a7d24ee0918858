"""grading.cost.refusal (the static cost bound): what it refuses unrun, that no honest answer is refused, that it stays cheap, and its wiring."""

from __future__ import annotations

import time

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gym_integrity  # noqa: F401  (registers the envs)
from gym_integrity.grading.cost import MAX_DEPTH, MAX_PAREN_DEPTH, refusal
from gym_integrity.protocol import Verdict
from gym_integrity.services.verifier import VerifierConfig, VerifierService

# (class, text, syntax, words of the reason)
REFUSED = [
    ("tower", r"9^{9^{9^{9}}}", "latex", "a number of"),
    ("tower", r"2^{2^{2^{2^{2^{2}}}}}", "latex", "a number of"),
    ("tower", r"(9^9)^{9^9}", "latex", "a number of"),
    ("tower", r"e^{e^{e^{e}}}", "latex", "a number of"),
    ("tower", "9**9**9", "sympy", "a number of"),
    ("huge power", r"10^{10^{6}}", "latex", "a number of"),
    ("huge power", r"999999^{999999}", "latex", "a number of"),
    ("huge power", r"\left(\frac{2}{3}\right)^{1000000}", "latex", "a number of"),
    ("huge power", r"10^{-1000000}", "latex", "a number of"),
    ("huge power", r"1.5\times10^{99999999}", "latex", "a number of"),
    ("factorial", r"1000000!", "latex", "a number of"),
    ("factorial", r"(10!)!", "latex", "a number of"),
    ("factorial", "factorial(10**6)", "sympy", "a number of"),
    ("binomial", r"\binom{1000000}{500000}", "latex", "a number of"),
    ("binomial", r"\dbinom{10^5}{5 \cdot 10^4}", "latex", "a number of"),
    ("expansion", r"(x+1)^{1000}", "latex", "expands to"),
    # sums holding a function, raised high: few terms, but simplify runs for seconds (found by a hostile search)
    ("function sum power", r"(\sinh x+\cosh x)^{30}", "latex", "a sum holding a function"),
    ("function sum power", r"(\sin 1+\cos 1)^{47}", "latex", "a sum holding a function"),
    ("function sum power", "(sin(X)+cos(X))**47", "sympy", "a sum holding a function"),
    ("function sum power", "(tan(x)+1)**30", "sympy", "a sum holding a function"),
    ("function sum power", "(sin(1)+cos(1))**47*x", "sympy", "a sum holding a function"),
    ("function sum power", r"(\sqrt{\sin x}+1)^{30}", "latex", "a sum holding a function"),
    ("expansion", r"(x+y+z)^{20}", "latex", "expands to"),
    ("expansion", r"\frac{1}{(x+1)^{50}}", "latex", "expands to"),
    ("expansion", r"(1+\sqrt{2})^{1000}", "latex", "expands to"),
    ("expansion", "(x+1)**999*(x-1)**999", "sympy", "expands to"),
    ("expansion", "+".join(f"x^{{{k}}}" for k in range(1, 60)), "latex", "expands to"),
    ("nesting", "(" * 300 + "1" + ")" * 300, "latex", "nested deeper"),
    ("nesting", "(" * 7 + "1" + ")" * 7, "latex", "nested deeper"),
    ("nesting", "{" * 500 + "1" + "}" * 500, "latex", "nested deeper"),
    ("nesting", r"\frac{1}{" * 20 + "2" + "}" * 20, "latex", "nested deeper"),
    ("nesting", r"\sqrt" * 200 + "2", "latex", "nested deeper"),
    ("nesting", r"\sin(" * 5 + "1" + ")" * 5, "latex", "functions nested"),
    ("length", "+".join(["1"] * 400), "latex", "more than 200"),
    ("length", "x" * 500, "latex", "more than 200"),
    ("length", r"\{" + ",".join(str(k) for k in range(300)) + r"\}", "latex", "elements"),
    ("range", r"\prod_{i=1}^{1000000} i", "latex", "sum or product"),
    ("range", r"\sum_{i=1}^{10^{9}} i!", "latex", "sum or product"),
    ("enormous literal", "7" * 50000, "latex", "a number of"),
    # issue 26's hostile search (scratch grammar + hill-climbing on measured grading time): each ran a worker to its
    # budget, or for seconds, before these classes were modelled.
    # a \sum or \prod makes a number: its index is read at its largest value, its result's size carried on
    ("big operator value", r"e^{\sum_{k=1}^{6530} 931852}", "latex", "a number of"),
    ("big operator value", r"(\sum_{k=1}^{9999} 99999)!", "latex", "a number of"),
    ("big operator value", r"2^{\sum_{k=1}^{9999} 99999}", "latex", "a number of"),
    ("big operator value", r"\prod_{k=1}^{9999} k^{999}", "latex", "a number of"),
    ("big operator value", r"\sum_{k=1}^{9999} k^{k}", "latex", "a number of"),
    ("irregular range", r"\sum_{k=1}^{1000} k!", "latex", "a sum or product of"),
    ("irregular range", r"\prod_{n=1}^{500} \sin(n)", "latex", "a sum or product of"),
    ("operators", r"\sum_{k=1}^{100} k!\cdot\sum_{j=1}^{100} j!", "latex", "more than 1 sum or product"),
    ("operators", r"\sqrt{\int_{0}^{x t \pi} |3-y| \, dx}+\sqrt{\int_{0}^{x t \pi} |3-y| \, dx}", "latex",
     "more than 1 sum or product"),
    ("integrand", r"\int_{0}^{x t \pi} |3-y| \, dx^{409}", "latex", "a function of a power"),
    ("sum power", r"\sqrt{\sum_{k=1}^{3125} 32.5719597153\cdot n}^{9999}", "latex", "a sum or product of"),
    ("sum power", r"\sqrt{\sum_{k=1}^{3125} 32\cdot n}^{9999}", "latex", "raised to a power"),
    ("sum power", r"(\int_{0}^{1} x\,dx)^{999}", "latex", "raised to a power"),
    ("function power", r"\sin(x)^{32}\cos(x)^{32}", "latex", "a function raised"),
    # NaN (0 times an unbounded value) compared False with every bound
    ("nan", r"3^{0\cdot10^{400}+10^{8}}", "latex", "a number of"),
    ("nan", r"(10^{400}\cdot 0 + 10^{6})!", "latex", "a number of"),
    # the infix binomial
    ("choose", r"{10^6 \choose 5\cdot 10^5}", "latex", "a number of"),
    # font and text commands hold math to math_verify
    ("font", r"\mathbf{9}^{\mathbf{9}^{\mathbf{9}^{\mathbf{9}}}}", "latex", "a number of"),
    ("font", r"\text{9}^{\text{9}^{\text{9}^{\text{9}}}}", "latex", "a number of"),
    ("font", r"\mathrm{1000000}!", "latex", "a number of"),
    # integrals and limits make numbers of any size: never an exponent, factorial or range
    ("opaque", r"9^{\int_{0}^{9^{9}} 1\,dx}", "latex", "cannot bound"),
    ("opaque", r"9^{\lim_{x\to 9^{9}} x}", "latex", "cannot bound"),
    ("opaque", r"(\lim_{x\to 10^{6}} x)!", "latex", "cannot bound"),
    # roots and functions of big numbers: sympy factors the radicand, evaluates to the argument's precision
    ("function of a big number", r"\sqrt{10^{1000}+1}", "latex", "a root of a number"),
    ("function of a big number", r"(10^{3000}+1)^{\frac{1}{2}}", "latex", "a root of a number"),
    ("function of a big number", r"\log(10^{30000}+1)", "latex", "a function of a number"),
    ("function of a big number", r"\sin(10^{3000}+1)", "latex", "a function of a number"),
    ("function of a big number", "(3*sin((x)*(7**618)))*(x)", "sympy", "a function of a number"),
    # powers of a function (one term to the expansion bound): simplify rewrites each power
    ("function power", r"\sin(x)^{999}\cos(x)^{999}", "latex", "a function raised"),
    ("function power", r"\sin^{999}(x)\cos^{999}(x)", "latex", "a function raised"),
    ("function power", "sin(x)**999*cos(x)**999", "sympy", "a function raised"),
    ("function power", "(x**196)/(cosh(x/x)**473)", "sympy", "a power over 64"),
    ("function power", "(x**19)/(cosh(x/x)**473)", "sympy", "a function raised"),
    ("function power", "(1e-99+E)/(Abs(x*x)**926)", "sympy", "a function raised"),
    ("function power", "(sec(x**426/x*11*x**855*exp(x)**444))*(x)", "sympy", "a power over 64"),
    ("function power", "(sec(x**4/x*11*x**8*exp(x)**444))*(x)", "sympy", "a function raised"),
    # a function of a high power of a symbol: its assumptions expand (re + i im)^n (sympy's parse_expr alone)
    ("function of a power", "x**440*x*(x*x)**544/acosh(sinh((x)**453))", "sympy", "a power over 64"),
    ("function of a power", "acosh(sinh((x)**40))", "sympy", "a function of a power"),
    ("function of a power", r"\cosh^{-1}(\sinh(x^{453}))", "latex", "a function of a power"),
    # the second round of the search, after the fixes above
    ("matrix", r"e^{(\begin{pmatrix}1&2\\3&4\end{pmatrix})^{4}}", "latex", "cannot bound"),
    ("matrix", r"(\begin{pmatrix}9&9\\9&9\end{pmatrix})!", "latex", "cannot bound"),
    ("symbolic power of a function", "(sin(6))**(X)", "sympy", "a function raised to a symbolic power"),
    ("symbolic power of a function", "acosh(cot((4)*X))**X", "sympy", "a function raised to a symbolic power"),
    ("sympy degree", "x**980", "sympy", "a power over 64"),
    ("sympy degree", "(x**549)*((4211)*((2)**(x)))", "sympy", "a power over 64"),
    ("binomial of a symbol", r"4\cdot \binom{x}{" + "5923596077" * 12 + "}", "latex", "a binomial of a symbol"),
    ("irregular range", r"\sum_{k=1}^{2546} \frac{6}{k}", "latex", "a sum or product of"),
    # the fourth round: a binomial of a number that is not whole multiplies k factors; cosh grows like e^x
    ("binomial of a fraction", r"{i \choose 2474309}", "latex", "a number of"),
    ("binomial of a fraction", r"x\,(a)!\,{338.3377 \choose 85209219}", "latex", "a number of"),
    ("hyperbolic", r"(7\cdot \cosh(93972830))!", "latex", "a number of"),
    ("high-degree denominator", r"\frac{1}{\frac{{1 \choose 12}-71582}{a}+\frac{{1 \choose 12}-71582}{a}^{977}}",
     "latex", "in a denominator"),
    ("high-degree denominator", r"\frac{1}{\frac{5}{a}+\frac{5}{a}^{977}}", "latex", "in a denominator"),
    # the fifth round: exponentials. sympy splits 6**(x-359703) into 6**x times a number it computes; the
    # integration scorers' answers write exponentials as exp(...) or E**(...), and 220614**(x+1) alone ran past 4 s
    ("exponential", "220614**(x+1)", "sympy", "an exponential of a number other than E"),
    ("exponential", "6**(x-359703)/(3)**539", "sympy", "an exponential of a number other than E"),
    ("exponential", "2**x/log(2) + C", "sympy", "an exponential of a number other than E"),
    ("exponential", r"2^{x+1000000}", "latex", "a number of"),
    # the sixth round (each ran past the search's 4 s cut): a long sum inside |...| or a function, a factorial of
    # an expression holding a function, a binomial of a number choose a symbol
    ("sum in a function", r"|\sum_{k=1}^{6100} " + "7573423110" * 12 + "|", "latex", "inside a function"),
    ("factorial of a function", r"((e^{\sqrt{x}})^{6}-1744045)!+(|t|)^{47}", "latex", "a factorial of an expression"),
    ("binomial choose a symbol", r"{8\cdot 237 \choose 1\,y}", "latex", "choose a symbol"),
    ("function of a limit", r"\sec(\lim_{x\to 8} a\,5744768)-y", "latex", "a function of an integral"),
    ("function of a limit", r"\cosh(\lim_{x\to 8} a\,5744768)+\sqrt{12^{y}_{9}}", "latex", "a function of an integral"),
    # functions inside functions, in an integration scorer's answer: it differentiates and simplifies each
    ("nested functions", "cosh(tan(tan(x)))*log(cosh(x))", "sympy", "inside another function"),
    ("nested functions", "log(cosh(x))+tan(tan(x))", "sympy", "inside another function"),
    ("nested functions", "tan(tan(tan(x)))", "sympy", "inside another function"),
]

# Legitimate answers, some large: each must be left to the grader.
HONEST = [
    r"\binom{30000}{2}", r"(\sin x + \cos x)^{2}", r"\sin x \cos x \tan x", r"\sin^2 x + \cos^2 x",
    r"2^{100}", r"10!", r"\binom{50}{25}", r"3^{3^{3}}", r"2^{2^{2^{2^{2}}}}", r"1000000007", r"2^{64}-1",
    r"\frac{1}{1+\frac{1}{1+\frac{1}{1+\frac{1}{2}}}}", r"\frac{\sqrt{3}}{2}", r"\left( \frac{1}{2} \right)^{10}",
    r"x^4 - 3x^3 + 2x^2 - x + 1", r"(x+1)^{10}", r"(x-1)(x+1)(x^2+1)", r"(x+y)^{5}", r"\frac{1}{(1-x)^2}",
    r"x^{10}+x^9+x^8+x^7+x^6+x^5+x^4+x^3+x^2+x+1", r"[0, 1)", r"(2, 3)", r"\{-1, 0, 1\}", r"x \in (2, 3)",
    r"\frac{\pi}{4}", r"e^{2}", r"\arctan(1)", r"5\frac{1}{3}", r"\sqrt{\sqrt{2}}", r"\sin(\cos(x))", r"2\sqrt{3}",
    r"100!", r"\binom{100}{50}", r"10^{18}", r"1.5 \times 10^{8}", r"\sum_{k=1}^{100} k^2", r"45^\circ", r"50\%",
    r"\dfrac{2023 \cdot 2024}{2}", r"n(n+1)/2", r"\infty", r"-\infty", r"1, 2, 3, 4, 5, 6, 7, 8, 9, 10",
    r"0.333333333333333333333333", r"\sqrt[3]{2}", r"2^{-10}", r"\log_2 1024", r"\frac{7!}{3!\,4!}",
    r"a_1 + a_2 + a_3", r"\text{even}", r"\mathbb{R}", r"f(x) = 2x + 1", r"x = \pm 2",
    # near the classes the hostile search found: what a person writes stays under each bound
    r"\sum_{k=1}^{10} k!", r"\prod_{k=1}^{10} k", r"\sum_{k=1}^{10000} k", r"\sum_{k=1}^{n} k^2",
    r"\sum_{i=0}^{\infty} 2^{-i}", r"\sum_v d(v)^2 = \sum_{uv \in E} (d(u) + d(v)) \le n|E|",
    r"\prod_{p \le 10} p", r"{n \choose 2}", r"{10 \choose 3}", r"\mathbf{v} = (1, 2)", r"\mathrm{e}^{2}",
    r"12\,\text{cm}^2", r"\text{the answer is } 42", r"\operatorname{lcm}(4, 6)", r"\int_0^1 x^2\,dx",
    r"\lim_{x\to 0} \frac{\sin x}{x}", r"\sqrt{12345678901234567890}", r"\sqrt{2^{100}}",
    r"\log(2^{100})", r"\sin^2(x) + \cos^2(x)", r"\sin(x)^{2}", r"\cos^{4}(x)", r"e^{-x^2/2}", r"\sin(x^{2})",
    r"0 \cdot 10^{5}", r"10^{-300}", r"\frac{(x+1)^{10}}{x}", r"x^{1000000}",
    r"\text{" + " ".join(["there are infinitely many such pairs of integers"] * 6) + "}",  # words stay words
    r"\begin{pmatrix}1&2\\3&4\end{pmatrix}", r"\begin{pmatrix}1&2\\3&4\end{pmatrix}^{2}",
    r"\begin{bmatrix}x\\y\end{bmatrix}",
    r"\begin{cases} x & x > 0 \\ -x & x \le 0 \end{cases}", r"2^{x}", r"x^{x}", r"\binom{x}{5}",
    r"\sum_{k=1}^{100} \frac{1}{k^2}", r"\binom{3}{5}", r"\binom{1/2}{3}", r"\cosh(2)",
    r"2^{x+1}", r"2^{n(n+1)/2}", r"3^{2n+1}", r"e^{-\frac{(x-\mu)^2}{2\sigma^2}}",
    r"|x|^{2}", r"\binom{10}{k}", r"(2n)!", r"|\sum_{k=1}^{10} k|", r"\left|\frac{1}{2}\right|",
    r"(\cosh 1)^{2} - (\sinh 1)^{2}", r"\frac{1}{\frac{5}{a}+\frac{5}{a}^{30}}", r"\frac{x^{100}-1}{x-1}",
]

# sympy.parse_expr strings, as reasoning-gym's sympy-based scorers read them.
HONEST_SYMPY = ["94*4 - 61 - 6", "10*(8 - 5) - 6", "x**3/3 + 2*x + C", "-72*x**6 + 120*x**5 - 3*x + 1",
                "exp(x)*sin(x)/2 + C", "(x+1)**10", "2**100", "sqrt(2)*x**2/2", "3*x**4/4 - 7*log(x) + C",
                "sin(x)**5/5 - 2*sin(x)**3/3 + sin(x) + C", "exp(-x**2)", "-cos(3*x)/3 + C", "sqrt(x**2 + 1)",
                "2*(-10*x - 10)**(3/2)/3 + C", "log(Abs(x**3 + 1))/3 + C", "log(Abs(x + 1)) + log(Abs(x - 1)) + C",
                "exp(sin(x)) + C", "log(cosh(x))", "x**x", "E**(2*x)/2 + C", "x**60 + 1"]


@pytest.mark.parametrize("kind, text, syntax, reason", REFUSED, ids=[f"{r[0]}-{i}" for i, r in enumerate(REFUSED)])
def test_pathological_answers_are_refused_with_a_reason(kind, text, syntax, reason):
    refused = refusal(text, syntax=syntax)
    assert refused is not None and reason in refused
    assert len(refused) < 80 and text[:20] not in refused  # short, and never quotes the answer


@pytest.mark.parametrize("text", HONEST)
def test_legitimate_answers_are_never_refused(text):
    assert refusal(text) is None


@pytest.mark.parametrize("text", HONEST_SYMPY)
def test_legitimate_sympy_answers_are_never_refused(text):
    assert refusal(text, syntax="sympy") is None


def test_every_shipped_gold_and_reference_box_passes():
    from gym_integrity.grading import all_boxed
    from gym_integrity.envs.qed_math.problems import load_problems

    problems = load_problems(None).problems
    texts = [p.gold_answer for p in problems if p.gold_answer]
    texts += [box for p in problems for box in all_boxed(p.reference_solution or "")]
    assert len(texts) >= 20
    assert [t for t in texts if refusal(t) is not None] == []


# Items per dataset: puzzle24's and intermediate_integration's generators are slow (seconds per item under load).
SYMPY_SCORED = {"countdown": 200, "puzzle24": 20, "polynomial_multiplication": 200, "intermediate_integration": 20,
                "simple_integration": 100}


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", sorted(SYMPY_SCORED))
def test_every_gold_of_the_sympy_scored_datasets_passes(name):
    import reasoning_gym

    dataset = reasoning_gym.create_dataset(name, seed=11, size=SYMPY_SCORED[name])
    golds = [str(item["answer"]) for item in dataset if item.get("answer") is not None]
    assert len(golds) == SYMPY_SCORED[name]
    assert [g for g in golds if refusal(g, syntax="sympy") is not None] == []


def test_bounds_sit_between_honest_and_hostile():
    assert refusal("(" * MAX_PAREN_DEPTH + "1" + ")" * MAX_PAREN_DEPTH) is None
    assert refusal("(" * (MAX_PAREN_DEPTH + 1) + "1" + ")" * (MAX_PAREN_DEPTH + 1)) is not None
    assert refusal(r"\frac{1}{1+" * (MAX_DEPTH - 1) + "2" + "}" * (MAX_DEPTH - 1)) is None
    assert refusal(r"\frac{1}{1+" * (MAX_DEPTH + 1) + "2" + "}" * (MAX_DEPTH + 1)) is not None
    assert refusal("10^{30000}") is None and refusal("10^{40000}") is not None
    assert refusal("10000!") is None and refusal("20000!") is not None


def test_a_programming_mistake_is_a_clear_error():
    with pytest.raises(TypeError, match="str"):
        refusal(b"2^{100}")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="syntax"):
        refusal("1", syntax="python")


def _answers(text: str, syntax: str = "latex") -> bool:
    """The check gives an answer (None or a reason) for any text: it never raises. Its cost is measured in
    benchmarks/bench_hostile.py (a refused tower's median), never timed here."""
    result = refusal(text, syntax=syntax)
    return result is None or (isinstance(result, str) and result != "")


# Tokens that drive every branch of the reader: groups, commands, operators, postfixes, numbers, names.
_PIECES = st.sampled_from(["(", ")", "{", "}", "[", "]", "\\{", "\\}", "|", "^", "_", "!", "+", "-", "*", "/", ",",
                           "=", "**", "9", "99999", "1.5", "1e9", "x", "e", "\\pi", "\\frac", "\\dfrac", "\\sqrt",
                           "\\binom", "\\sin", "\\log", "\\exp", "\\sum", "\\prod", "\\left(", "\\right)", "\\left.",
                           "\\text{a}", "\\cdot", "\\,", " ", "\\", "'", "\\infty", "sin(", "factorial(", "\u00e9"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_PIECES, max_size=400).map("".join), st.sampled_from(["latex", "sympy"]))
def test_any_token_soup_gets_an_answer(text, syntax):
    assert _answers(text[:1024], syntax)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=1024), st.sampled_from(["latex", "sympy"]))
def test_any_text_gets_an_answer(text, syntax):
    assert _answers(text, syntax)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["(", "{", "\\frac{1}{", "\\sqrt{", "\\sin(", "2^{", "x^", "\\left(", "[", "\\binom{9}{"]),
       st.integers(1, 500), st.sampled_from(["1", "9", "x", "99!"]))
def test_adversarial_nesting_gets_an_answer(opener, depth, core):
    closer = {"(": ")", "[": "]", "\\sin(": ")", "\\left(": "\\right)", "x^": ""}.get(opener, "}")
    text = (opener * depth + core + closer * depth)[:1024]
    assert _answers(text)
    if depth > 8:
        assert refusal(text) is not None, text[:40]


# --------------------------------------------------------------------------- wiring

TOWER = r"\boxed{9^{9^{9^{9}}}}"
# math_verify runs it for many seconds; the static check refuses it (issue 26's search), so the test below switches
# the check off to stand in for whatever it misses
SLOW = r"\boxed{\sin(x)^{999}\cos(x)^{999}}"


@pytest.fixture(scope="module")
def verifier():
    service = VerifierService(VerifierConfig(num_workers=1, spare_workers=0, scope="process"))
    service.start()
    assert service.wait_ready(60)
    yield service
    service.close()


def test_a_tower_is_graded_at_once_without_a_worker(verifier):
    assert verifier.verify(r"\boxed{3}", "3", problem_id="p").grade.verdict is Verdict.CORRECT
    before = verifier.stats()
    pids = verifier.worker_pids()
    start = time.perf_counter()
    outcome = verifier.verify(TOWER, "3", problem_id="p")
    elapsed = time.perf_counter() - start
    assert elapsed < 0.05 and verifier.busy_worker_pids() == []
    assert (outcome.grade.verdict, outcome.grade.no_verdict, outcome.grade.score) == (Verdict.TIMEOUT, False, 0.0)
    assert "refused unrun: a number of" in outcome.grade.cause
    after = verifier.stats()
    assert after["verifier/requests"] == before["verifier/requests"]  # the pool never saw it
    assert after["verifier/refused"] == before["verifier/refused"] + 1
    assert verifier.worker_pids() == pids  # nobody was killed


def test_the_run_budget_still_stops_what_the_check_misses(verifier, monkeypatch):
    from gym_integrity.services import verifier as verifier_module

    assert refusal(SLOW[len("\\boxed{"):-1]) is not None
    monkeypatch.setattr(verifier_module, "refusal", lambda *args, **kwargs: None)
    before = verifier.stats()["verifier/requests"]
    outcome = verifier.verify(SLOW, "3", problem_id="p", deadline_s=1.0)
    assert (outcome.grade.verdict, outcome.grade.no_verdict) == (Verdict.TIMEOUT, False)
    assert "past its 1 s budget on a worker of its own" in outcome.grade.cause
    assert verifier.stats()["verifier/requests"] == before + 1
    assert verifier.verify(r"\boxed{3}", "3", problem_id="p").grade.verdict is Verdict.CORRECT


def test_a_sandboxed_sympy_scorer_refuses_an_expansion_unrun():
    env = gym.make("ReasoningGym-v0", dataset="polynomial_multiplication", size=4, seed=1)
    try:
        env.reset(options={"index": 0})
        gold = env.unwrapped.gold_answers()[0]
        assert env.step(f"<answer>{gold}</answer>")[1] == 1.0  # the sandbox pool is up and warm
        env.reset(options={"index": 0})
        start = time.perf_counter()
        _, reward, terminated, _, info = env.step("<answer>(x+1)**999*(x-1)**999</answer>")
        assert time.perf_counter() - start < 0.05
        assert (reward, terminated, info["verdict"], info["no_verdict"]) == (0.0, True, "timeout", False)
        # "refused unrun" is the grade of the static check alone: the sandbox is never asked. (The pool's request
        # counter cannot show it: the machine pool serves every process here, another xdist worker's included.)
        assert "refused unrun" in info["cause"]
    finally:
        env.close()

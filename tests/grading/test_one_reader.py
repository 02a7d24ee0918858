r"""One reader: the answer is read once, and every rule and every grader of each env receives exactly that string.

Each test feeds one env constructed answers (unbalanced and nested boxes, ``%``
and ``\%`` anywhere, tags inside boxes, several answers, unicode look-alikes)
and records what the real functions receive: a wrapper installed with
monkeypatch records the argument and calls the real function, so grading runs
unchanged (math_verify and reasoning-gym's scorers in their real workers).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

import gym_integrity  # noqa: F401  (registers the ids)

Pick = Callable[..., Any]


class Recorder:
    """What each wrapped function received (or, for a reader, returned), step by step."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.monkeypatch = monkeypatch
        self.calls: list[tuple[str, Any]] = []

    def receives(self, owner: Any, name: str, who: str, pick: Pick) -> None:
        """Record ``pick(*args, **kwargs)`` of every call of ``owner.name``, then call the real function."""
        real = getattr(owner, name)

        def recording(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((who, pick(*args, **kwargs)))
            return real(*args, **kwargs)

        self.monkeypatch.setattr(owner, name, recording)

    def returns(self, owner: Any, name: str, who: str, pick: Pick) -> None:
        """Record ``pick(result)`` of every call of ``owner.name`` (a reader's output)."""
        real = getattr(owner, name)

        def recording(*args: Any, **kwargs: Any) -> Any:
            result = real(*args, **kwargs)
            self.calls.append((who, pick(result)))
            return result

        self.monkeypatch.setattr(owner, name, recording)

    def take(self) -> list[tuple[str, Any]]:
        calls, self.calls = self.calls, []
        return calls


def _assert_one_text(text: str, calls: list[tuple[str, Any]], reader: str) -> str | None:
    """Every receiver got the reader's string; returns it (None when the reader found no answer)."""
    read = [value for who, value in calls if who == reader]
    assert len(read) == 1, (text, calls)  # read once per step
    answer = read[0]
    received = [(who, value) for who, value in calls if who != reader]
    if answer is None:
        assert received == [], (text, calls)  # nothing to grade: no rule and no grader ran
        return None
    assert [(who, value) for who, value in received if value != answer] == [], (text, answer, calls)
    return answer


def _constructed(gold: str) -> list[str]:
    r"""Answers built around ``gold``: the shapes where two readers of one text part ways."""
    lookalike_gold = gold.replace("1", "\uff11").replace("2", "\uff12").replace("-", "\u2212")
    return [
        f"<answer>{gold}</answer>",
        f"\\boxed{{{gold}}}",
        f"\\boxed{{\\boxed{{{gold}}}",                       # an outer box that never closes
        f"\\boxed{{{gold}}} then \\boxed{{{gold}",           # the last box never closes
        f"\\boxed{{\\boxed{{{gold}}} + 1}}",                 # nested, both closed
        f"\\boxed{{{gold}\\%}}", f"\\boxed{{{gold}%}}", f"{gold}% \\boxed{{{gold}}}",
        f"\\boxed{{{gold}}}%", f"\\b%oxed{{{gold}}}", f"\\boxed{{{gold}}} \\boxed{{{gold}\\%}}",
        f"\\boxed{{<answer>{gold}</answer>}}", f"<answer>\\boxed{{{gold}}}</answer>",  # tags inside boxes and out
        f"<answer>1</answer> <answer>{gold}</answer>", f"\\boxed{{1}} \\boxed{{{gold}}}",  # several answers
        f"<answer>{gold}</answer> \\boxed{{7}}", f"\\fbox{{{gold}}}",
        f"<answer>{lookalike_gold}</answer>", f"\\boxed{{{lookalike_gold}}}",  # unicode look-alikes
        f"\\b\u043exed{{{gold}}}", f"\uff1canswer\uff1e{gold}\uff1c/answer\uff1e", f"<answ\u0435r>{gold}</answ\u0435r>",
        f"\\boxed{{ {gold} }}", "\\boxed{}", "no answer at all", f"\\boxed{{{gold}}}" * 3,
    ]


# ----------------------------------------------------------------------------- QEDMath-v0, answer problems

#: The shipped problems that pose a computation: their statement, echoed in a box, was paid by math_verify.
ECHOES = {"qed-ans-015": r"\int_0^{\pi} x \sin x \, dx", "qed-ans-006": r"\sum_{k=1}^{100} k^2"}


def _qed_echoes(statement: str) -> list[str]:
    r"""The statement echoed where the last balanced box and the verifier's box differ (docs/qed_math.md)."""
    percent_inside = statement.replace("\\int", "\\i%nt").replace("\\sum", "\\s%um")
    return [f"\\boxed{{{statement}}}", f"\\boxed{{\\boxed{{{statement}}}", f"\\boxed{{{percent_inside}}}",
            f"\\boxed{{\\boxed{{{percent_inside}}}", f"\\boxed{{1}} \\boxed{{{statement}"]


def test_qed_math_the_final_answer_rule_the_cost_bound_and_math_verify_read_one_string(monkeypatch):
    from gym_integrity.envs.qed_math import QEDMathEnv
    from gym_integrity.envs.qed_math import env as qed_env
    from gym_integrity.services import verifier as verifier_module

    recorder = Recorder(monkeypatch)
    recorder.returns(qed_env, "boxed_answer", "reader", lambda result: result[0])
    recorder.receives(qed_env, "not_an_answer", "final-answer rule", lambda answer, gold, statement="": answer)
    recorder.receives(verifier_module, "refusal", "cost bound", lambda text, **kw: text)
    # what goes to math_verify on its worker: the payload's answer (the worker process cannot be patched)
    recorder.receives(verifier_module.VerifierService, "_payload", "math_verify",
                      lambda self, answer, gold, problem_id: answer)

    env = QEDMathEnv(verifier={"deadline_s": 10.0}, problem_types=["answer"])
    reached: dict[str, int] = {}
    try:
        for problem_id, statement in ECHOES.items():
            env.reset(options={"problem_id": problem_id})
            gold = env._problem.gold_answer
            for text in [*_constructed(gold), *_qed_echoes(statement)]:
                env.reset(options={"problem_id": problem_id})
                info = env.step(text)[4]
                calls = recorder.take()
                for who, _ in calls:
                    reached[who] = reached.get(who, 0) + 1
                answer = _assert_one_text(text, calls, "reader")
                if answer is not None and statement in answer.replace("%", ""):
                    # the question echoed is never paid, however the box around it is written
                    assert (info["verdict"], info["cause"].startswith("not a final answer")) == ("incorrect", True)
    finally:
        env.close()
    assert min(reached.get(who, 0) for who in ("final-answer rule", "cost bound", "math_verify")) >= 20, reached


# ----------------------------------------------------------------------------- ReasoningGym-v0

#: One dataset per path a ReasoningGym answer takes: a strict scorer in process (leg_counting), the task's own
#: scorer in process behind a form check and a requirement (quantum_lock), and the task's own scorer in the
#: sandbox behind the answer language, the cost bound and a requirement (puzzle24).
RG_DATASETS = ("leg_counting", "quantum_lock", "puzzle24")


def _recording_requirement(recorder: Recorder, rule: Any) -> Any:
    import dataclasses

    real = getattr(rule, "requires", None)
    if real is None:
        return rule

    def requires(answer: str, item: Any) -> Any:
        recorder.calls.append(("requirement", answer))
        return real(answer, item)

    return dataclasses.replace(rule, requires=requires)


@pytest.mark.parametrize("dataset", RG_DATASETS)
def test_reasoning_gym_every_rule_and_scorer_reads_one_string(monkeypatch, dataset):
    from gym_integrity.envs.reasoning_gym import ReasoningGymEnv, sandbox, scoring
    from gym_integrity.envs.reasoning_gym import env as rg_env
    from gym_integrity.grading import cost, rules

    recorder = Recorder(monkeypatch)
    recorder.returns(rg_env, "extract_answer", "reader", lambda extraction: extraction.answer)
    recorder.receives(rules.Comparison, "score", "strict scorer", lambda rule, answer, item: answer)
    recorder.receives(scoring, "language_check", "answer language", lambda language, text, entry: text)
    recorder.receives(cost, "refusal", "cost bound", lambda text, **kw: text)
    recorder.receives(scoring, "own_score", "own scorer (in process)", lambda scorer, answer, *rest: answer)
    recorder.receives(sandbox, "run_scorer", "own scorer (sandbox)",
                      lambda pool, key, source, entry, answer, language, budget_s: answer)
    real_rule_for = scoring.rule_for
    monkeypatch.setattr(scoring, "rule_for", lambda name: _recording_requirement(recorder, real_rule_for(name)))

    env = ReasoningGymEnv(dataset=dataset, size=4, seed=1)
    try:
        env.reset(options={"index": 0})
        gold = str(env.gold_answers()[0])
        graded = 0
        for text in _constructed(gold):
            env.reset(options={"index": 0})
            env.step(text)
            graded += _assert_one_text(text, recorder.take(), "reader") is not None
        assert graded >= 10  # most constructed answers reached the rules and the scorer
    finally:
        env.close()


# ----------------------------------------------------------------------------- FinQA-v0

def test_finqa_every_value_rule_reads_the_values_the_reader_gave(monkeypatch):
    """FinQA reads an answer into values once (its boxes, else the split string, and the same values by year); the
    matching rules (years, numbers, text) must see those values and nothing read a second way."""
    from gym_integrity.envs.finqa import FinQAEnv, format_tool_call, scoring
    from gym_integrity.envs.finqa import env as finqa_env

    recorder = Recorder(monkeypatch)
    recorder.receives(finqa_env, "score_answer", "submitted", lambda submitted, *rest, **kw: submitted)
    real_read = scoring.read_submission

    def read_submission(text: str) -> Any:
        reading = real_read(text)
        recorder.calls.append(("reader", (text, reading)))  # the submission's reading, and the golds'
        return reading

    monkeypatch.setattr(scoring, "read_submission", read_submission)
    recorder.receives(scoring, "values_match", "value rule", lambda pred, gold, *rest: pred)
    recorder.receives(scoring, "_lists_match", "list rule", lambda pred, gold, *rest: pred)
    recorder.receives(scoring, "_exact_match", "exact rule", lambda pred, gold, *rest: pred)

    checked = 0
    # a plain amount, the same under the original rule, values keyed by year, several boxed values
    for mode, question in (("tolerance", "fq002"), ("finqa_exact", "fq002"), ("tolerance", "fq019"),
                           ("tolerance", "fq005")):
        env = FinQAEnv(scoring=mode)
        try:
            env.reset(options={"question_id": question})
            env.step(format_tool_call("submit_answer", {"answer": "0"}))  # loads and checks the data set first
            recorder.take()
            gold = env._question.answers[0]
            texts = _constructed(gold) + [f"2024: {gold}", f"\\boxed{{2024: {gold}}}", "2023: 1%, 2024: 2%",
                                          f"\\text{{\\text{{2024}}}}: {gold}", f"fy2024 - {gold}"]
            for text in texts:
                env.reset(options={"question_id": question})
                env.step(format_tool_call("submit_answer", {"answer": text}))
                calls = recorder.take()
                submitted = [value for who, value in calls if who == "submitted"]
                assert submitted == [text], json.dumps(calls)  # the tool's argument, as written, once
                read = [value[1] for who, value in calls if who == "reader" and value[0] == text]
                if not read:
                    continue  # too long: graded before any reading
                assert len(read) == 1, (text, calls)
                reading = read[0]
                checked += 1
                for who, value in calls:
                    if who == "value rule":  # one of the values read, or one of them read by its year
                        assert value in [*reading.values, *(reading.by_year or {}).values()], (text, value, reading)
                    elif who == "list rule":
                        assert value is reading, (text, value, reading)
                    elif who == "exact rule":
                        assert value is reading.values, (text, value, reading)
        finally:
            env.close()
    assert checked >= 40

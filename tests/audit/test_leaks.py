"""The auditor's building blocks: leak matching in normalised forms, answer adapters, revealed answers."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

from gym_integrity.audit import answer_action, non_answer_action, revealed_answers
from gym_integrity.audit.leaks import find_in_text, numeric_value, strip_latex, walk_strings


@pytest.mark.parametrize("haystack, gold, form", [
    ("The answer is 358.", "358", "number"),
    ("value: 358.0", "358", "number"),
    ("total 1,234.5 dollars", "$1,234.5", "number"),
    ("half: 0.5", r"\frac{1}{2}", "number"),
    ("Reference: The  Answer\n is  BLUE", "the answer is blue", "squashed"),
    (r"hint $\text{Paris}$, France", r"\text{Paris}, France", "latex-stripped"),
    ("the key is (2, 3]", "(2, 3]", "exact"),
])
def test_gold_is_found_in_its_normalised_forms(haystack, gold, form):
    assert [m.form for m in find_in_text(haystack, gold)] == [form]


@pytest.mark.parametrize("haystack, gold", [
    ("3 ducks and 2 cows", "14"),
    ("x = 13.5", "135"),
    ("problem 358123", "358"),
    ("no", "no"),            # under 3 characters: not searched as text
    ("", "42"),
])
def test_no_false_match(haystack, gold):
    assert find_in_text(haystack, gold) == []


def test_a_quoted_passage_of_a_long_reference_is_found():
    reference = ("We factor the expression. Since n-1, n and n+1 are three consecutive integers, one of them is even "
                 "and one of them is a multiple of three, hence the product is divisible by six.")
    leaked = "Feedback: since n-1, n and n+1 are three consecutive integers, one of them is even and one of them..."
    # after reset, with the problem as context: any quoted run of the reference is a leak
    found = find_in_text(leaked, reference, context="Prove that n^3 - n is divisible by 6.")
    assert found and found[0].form == "passage" and found[0].strong
    # a run the problem itself contains is a restatement, not a leak
    problem = "Since n-1, n and n+1 are three consecutive integers, one of them is even, show it."
    assert find_in_text(leaked, reference, context=problem) == []
    # without context (the reset observation itself), most of the reference must be there
    assert find_in_text(leaked, reference) == []
    assert find_in_text("Solution: " + reference, reference)[0].form == "exact"
    most = " ".join(reference.split()[:-4])
    assert find_in_text("Solution: " + most, reference)[0].form == "passage"


def test_strength_depends_on_length():
    assert not find_in_text("358", "358")[0].strong
    assert find_in_text("code 12345678901234", "12345678901234")[0].strong


def test_helpers():
    assert strip_latex(r"\left(\dfrac{a}{b}\right)") == "(a/b)"
    assert numeric_value("57.2%") == 57.2 and numeric_value("abc") is None and numeric_value("1/0") is None
    assert list(walk_strings({"a": [{"b": 1.5}], "c": None})) == [("a[].b", "1.5")]


def test_revealed_answers_from_info_and_obs():
    info = {"verdict": "incorrect", "result": {"Expected_Answer": "12"}, "labels": ["x"], "ok": True}
    assert revealed_answers(info, "The correct answer was 12. Better luck.") == ["12"]
    assert revealed_answers({"gold_answers": ["1", "2"]}) == ["1", "2"]
    assert revealed_answers({}, "no reveal here") == []


def test_answer_action_for_a_text_env_and_the_raw_format():
    env = gym.make("ReasoningGym-v0")
    assert answer_action(env, "7") == "<answer>7</answer>\n\\boxed{7}"
    assert "<answer>" not in non_answer_action(env)
    raw = gym.make("ReasoningGym-v0", answer_format="raw")
    assert answer_action(raw, "7") == "7"


def test_answer_action_for_the_tool_env_is_a_submit_call():
    env = gym.make("FinQA-v0")
    action = answer_action(env, "57.2%")
    assert action.startswith("<tool_call>") and action.endswith("</tool_call>")
    call = json.loads(action[len("<tool_call>"):-len("</tool_call>")])
    assert call == {"name": "submit_answer", "arguments": {"answer": "57.2%"}}
    env.reset(seed=0)
    gold = env.unwrapped.gold_answers()[0]
    _, reward, terminated, _, info = env.step(answer_action(env, gold))
    assert terminated and reward == 1.0 and info["verdict"] == "correct"
    assert "submit_answer" not in non_answer_action(env)

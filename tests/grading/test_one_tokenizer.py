"""One tokenizer: the answer languages and the cost bound read an answer into the same tokens.

The language check decides what reaches a sympy scorer and the cost bound what that costs; when they tokenised
apart, ``1e5C^x`` was a number times ``C^x`` to the language and ``1e5^x`` (an exponential of a number other
than E, refused) to the cost bound, which had dropped the name glued to the float.
"""

from __future__ import annotations

import random

import pytest

from gym_integrity.grading import cost, language, tokenize
from gym_integrity.grading._cost_reader import Reader

PIECES = ["1", "23", "4.5", ".5", "7.", "e", "E", "1e5", "2E-3", "9e99", "**", "^", "(", ")", "x", "sin", "exp",
          "log", "+", "-", "*", "/", "pi", "I", "C", "9", " ", "999", "1.5e3"]
ENTRY = {"metadata": {"variable": "x"}}


def _inside_a_language(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    texts: list[str] = []
    while len(texts) < count:
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 14)))
        if language.check("algebra", text, ENTRY) is None or language.check("arithmetic", text, ENTRY) is None:
            texts.append(text)
    return texts


@pytest.mark.parametrize("seed", range(3))
def test_what_passes_a_language_is_the_same_tokens_to_the_cost_bound(seed):
    for text in _inside_a_language(2000, seed):
        checked = [value for _, value, _ in tokenize(text, "python")]
        bounded = [value for _, value, _ in tokenize(text, "sympy")]
        assert checked == bounded, text
        assert [value for _, value in Reader(text, "sympy").tokens] == [{"**": "^"}.get(v, v) for v in bounded], text


def test_a_float_glued_to_a_name_is_read_as_both_by_both():
    assert [v for _, v, _ in tokenize("1e5C^x", "python")] == ["1e5", "C", "^", "x"]
    assert language.check("algebra", "1e5C^x", ENTRY) is None
    assert cost.refusal("1e5C^x", syntax="sympy") is None  # 1e5 times C^x: no exponential of a number
    assert cost.refusal("1e5^x", syntax="sympy") == "an exponential of a number other than E"

r"""The math_verify handler that the verifier's pool workers run: parse and compare one boxed answer.

Runs only inside a worker process of :mod:`gym_integrity.workers`,
which bounds its time and memory. Each worker keeps the parsed gold answers
it has seen (keyed by problem id, gold text hash and verifier settings), so a
gold answer is parsed once per worker.
"""

from __future__ import annotations

from typing import Any

from gym_integrity.workers import ProcessCache

__all__ = ["verify", "warm"]

#: Parsed gold answers, least recently used dropped first; the bound comes with each request
#: (``VerifierConfig.gold_cache_size``).
_GOLDS: ProcessCache[Any, Any] = ProcessCache("parsed gold answers", max_items=4096)


# One comparison of each common kind: the first use of each imports more of
# sympy, which on a fresh worker could otherwise cost a request its budget.
_WARM_PAIRS = (
    ("\\frac{1}{2}", "0.5"),
    ("2\\sqrt{3}", "\\sqrt{12}"),
    ("x^2 - 1", "(x-1)(x+1)"),
    ("(2,3)", "x \\in (2, 3)"),
    ("\\{-1, 0, 1\\}", "\\{1, -1, 0\\}"),
    ("\\pi", "3.14159265"),
    ("\\frac{\\pi}{4}", "\\arctan(1)"),
    ("e^{2}", "e \\cdot e"),
)


def warm() -> None:
    """Import math_verify, load its LaTeX grammar and run one comparison of each common kind, before ready."""
    import logging

    logging.disable(logging.CRITICAL)  # math_verify warns per request; the parent keeps the metrics
    from math_verify import parse
    from math_verify import verify as math_verify

    parse("\\boxed{1}", parsing_timeout=None)
    for gold, answer in _WARM_PAIRS:
        math_verify(
            parse("\\boxed{" + gold + "}", parsing_timeout=None),
            parse("\\boxed{" + answer + "}", parsing_timeout=None),
            timeout_seconds=None,
        )


def gold_as_boxed(gold: str) -> str:
    """The gold answer as a ``\\boxed{}`` math_verify can read (``$...$`` unwrapped)."""
    gold = gold.strip()
    if "\\boxed" in gold:
        return gold
    if len(gold) >= 2 and gold[0] == "$" and gold[-1] == "$":
        gold = gold.strip("$").strip()
    return "\\boxed{" + gold + "}"


def _parsed_gold(key: Any, gold_text: str, cache_size: int) -> tuple[Any, bool]:
    """``(parsed gold, cache hit)``; an unparsable gold (empty parse) is not cached."""
    from math_verify import parse

    _GOLDS.resize(cache_size)
    cached = _GOLDS.get(key)
    if cached is not None:
        return cached, True
    gold = parse(gold_as_boxed(gold_text), parsing_timeout=None)
    if gold:
        _GOLDS.setdefault(key, gold)
    return gold, False


def verify(payload: tuple[Any, str, str, tuple[int, int, bool], int]) -> tuple[str, bool]:
    """``(status, gold cache hit)`` for ``(key, gold, answer, settings, cache_size)``.

    status: ``correct``, ``incorrect``, ``unparsable`` (the answer) or
    ``gold_unparsable``. Exceptions propagate: the pool reports their type.
    """
    from math_verify import parse
    from math_verify import verify as math_verify

    key, gold_text, answer, (float_rounding, numeric_precision, strict), cache_size = payload
    gold, hit = _parsed_gold(key, gold_text, cache_size)
    if not gold:
        return "gold_unparsable", hit
    pred = parse("\\boxed{" + answer + "}", parsing_timeout=None)
    if not pred:
        return "unparsable", hit
    ok = math_verify(
        gold,
        pred,
        float_rounding=float_rounding,
        numeric_precision=numeric_precision,
        strict=strict,
        timeout_seconds=None,
    )
    return ("correct" if ok else "incorrect"), hit

"""complex_arithmetic: a complex number from an expression.

The scorer pays exp(-distance), so every answer earns something; strict
scoring compares the answer, read by the task's own parser (``float()`` and
``complex()`` on the text, no eval), with the item's exact result.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["parse_answer", "result"]


def parse_answer(answer: str) -> complex | None:
    """The answer as the task's scorer reads it (it may raise on a malformed answer)."""
    from reasoning_gym.algebra.complex_arithmetic import ComplexArithmeticDataset

    return ComplexArithmeticDataset.parse_string_to_complex(answer)


def result(item: Mapping[str, Any]) -> complex:
    """The item's gold, exactly as generated."""
    return complex(*item["metadata"]["result"])

"""simple_integration, intermediate_integration: an indefinite integral, in sympy's syntax.

The generator's gold is sympy's ``integrate`` of the integrand; where sympy
gives up, the gold is the integral left unevaluated (``-Integral(x*sin(3*x), x)
+ C`` for ``∫ -x*sin(3*x) dx``: 2 of 100 drawn intermediate_integration items).
That is the question, not an answer: the strict language refuses it (``Integral``
is no math function of the answer language), while the honest antiderivative is
paid. The privileged gold would be wrong, so strict scoring does not draw such
items (:func:`gold_is_evaluated`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["gold_is_evaluated"]


def gold_is_evaluated(item: Mapping[str, Any]) -> bool:
    """The draw filter: the gold holds no unevaluated integral.

    >>> [gold_is_evaluated({"answer": a}) for a in ("x**2/2 + C", "-Integral(x*sin(3*x), x) + C")]
    [True, False]
    """
    return "Integral" not in str(item.get("answer", ""))

"""power_function: a base raised to an exponent.

``x^0`` is 1 and ``x^1`` is the base shown, so a constant ``1`` was paid on
11% of default items and the base copied from the question on 7.5%: strict
scoring does not draw them (:func:`power_is_computed`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["power_is_computed"]


def power_is_computed(item: Mapping[str, Any]) -> bool:
    """The draw filter: the item's exponent is neither 0 nor 1.

    >>> [power_is_computed({"metadata": {"exponent": e}}) for e in (0, 1, -1, 2)]
    [False, False, True, True]
    """
    return item.get("metadata", {}).get("exponent") not in (0, 1)

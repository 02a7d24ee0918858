"""Type predicates for validating configuration and arguments: a bool is never accepted as a number."""

from __future__ import annotations

from typing import Any

__all__ = ["is_int", "is_number"]


def is_int(value: Any) -> bool:
    """True for an ``int`` that is not a ``bool`` (``True`` must not pass as 1).

    >>> is_int(3), is_int(True), is_int(3.0)
    (True, False, False)
    """
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """True for an ``int`` or ``float`` that is not a ``bool``.

    >>> is_number(0.5), is_number(2), is_number(False), is_number("1")
    (True, True, False, False)
    """
    return isinstance(value, (int, float)) and not isinstance(value, bool)

"""Fast copies of info trees (dicts, lists, tuples of scalars), used on every step by envs and wrappers."""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["copy_tree"]

_ATOMIC = frozenset({str, int, float, bool, bytes, type(None)})


def copy_tree(value: Any) -> Any:
    """A deep copy of a JSON-like tree, several times faster than ``copy.deepcopy`` on one.

    Containers are rebuilt and scalars shared; anything else (numpy arrays,
    custom objects) falls back to ``copy.deepcopy``.

    >>> tree = {"a": [1, {"b": (2, 3)}], "c": "x"}
    >>> copied = copy_tree(tree)
    >>> copied == tree, copied["a"][1] is tree["a"][1]
    (True, False)
    """
    cls = type(value)
    if cls in _ATOMIC:
        return value
    # Scalars are tested inline: a call per leaf would cost more than the copy itself.
    if cls is dict:
        return {k: v if type(v) in _ATOMIC else copy_tree(v) for k, v in value.items()}
    if cls is list:
        return [v if type(v) in _ATOMIC else copy_tree(v) for v in value]
    if cls is tuple:
        return tuple(v if type(v) in _ATOMIC else copy_tree(v) for v in value)
    return copy.deepcopy(value)

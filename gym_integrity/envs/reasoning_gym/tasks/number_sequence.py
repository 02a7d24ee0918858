"""number_sequence: the next term of a sequence.

The generator's halvings and products settle on a value or a two-cycle
(``3, 1, 0, 0, ?``; ``-1, 1, -1, 1, ?``), and its check refuses only
sequences constant from the start: repeating the last term was the answer on
30% of default items, the term before it on 29%, without inferring any rule.
Strict scoring does not draw them (:func:`sequence_has_not_settled`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["sequence_has_not_settled"]


def sequence_has_not_settled(item: Mapping[str, Any]) -> bool:
    """The draw filter: the item's answer is neither of the last two terms shown.

    >>> [sequence_has_not_settled({"metadata": {"sequence": s}}) for s in ([3, 1, 0, 0, 0], [4, -4, 4, -4], [1, 2, 4])]
    [False, False, True]
    """
    sequence = item.get("metadata", {}).get("sequence") or []
    return len(sequence) < 3 or sequence[-1] not in sequence[-3:-1]

"""list_functions: apply the function the examples show to a last input list.

Where the function leaves the list as it is, the input copied from the
question is the answer (the identity function paid 8% of items their input):
strict scoring does not draw those items (:func:`list_function_changes_its_input`;
the metadata keeps neither list, so the question's last input is read).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["list_function_changes_its_input"]

_LAST_INPUT = re.compile(r"\nInput:\s*(\[[^\]]*\])\s*\nOutput:\s*$")


def list_function_changes_its_input(item: Mapping[str, Any]) -> bool:
    """The draw filter: the question's last ``Input: [...]`` differs from the answer, spaces aside.

    >>> list_function_changes_its_input({"question": "x\\nInput: [2, 1]\\nOutput:", "answer": "[1, 2]"})
    True
    >>> list_function_changes_its_input({"question": "x\\nInput: [1, 2]\\nOutput:\\n", "answer": "[1,2]"})
    False
    """
    match = _LAST_INPUT.search(str(item.get("question", "")))
    return match is None or "".join(match.group(1).split()) != "".join(str(item.get("answer", "")).split())

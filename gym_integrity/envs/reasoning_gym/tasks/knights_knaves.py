"""knights_knaves: who is a knight and who a knave, from what each says.

The scorer pays 0.3 + 0.7 x matches for any full assignment (strict: full
credit only) and reads name-role pairs out of any text, so a statement quoted
from the question (``if Avery is a sage then Ava is a fool``) was read as an
assignment: strict scoring asks the answer to be assignment clauses only
(``ROLE_ASSIGNMENT``).
"""

from __future__ import annotations

import re

__all__ = ["ROLE_ASSIGNMENT"]

_ROLE_CLAUSE = r"[A-Za-z]+\s+is\s+an?\s+[A-Za-z]+"
#: An answer as the task asks for it: ``<name> is a <role>`` clauses joined by commas, ``;``, ``.``, ``and`` or line
#: breaks.
ROLE_ASSIGNMENT = re.compile(
    rf"\(?\s*{_ROLE_CLAUSE}(?:\s*(?:[,;.]|\band\b|\n)\s*(?:and\s+)?{_ROLE_CLAUSE})*\s*\.?\s*\)?", re.IGNORECASE
)

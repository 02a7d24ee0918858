"""Load-time data checks shared by the QEDMath and FinQA loaders: rows loaded and skipped, with reasons.

Every row of a data set either loads with a gold answer its grader can use, or
is skipped with one :class:`DataWarning` naming the source, the row and the
reason. A loader collects both in a :class:`DataReport`; the same report backs
the warnings at ``gym.make``, the error when nothing usable is left, and
``gym-integrity check-data``'s table and JSON.

Row numbers are 1-based: the line of a JSONL file, the line where a CSV record
starts (the header is line 1), the position in a JSON list or a Hugging Face
split. A source warns for its first :data:`MAX_ROW_WARNINGS` skipped rows, then
once more with the count of the rest by reason: a broken 100k-row file must
not bury a training log. ``gym-integrity check-data`` lists them all.

Example:
    >>> report = DataReport("QEDMath", "mine.jsonl")
    >>> report.loaded = 8
    >>> report.skip(3, "ambiguous_gold", "the reference solution boxes 2 different answers")
    >>> report.skip(5, "empty_answer", "no gold answer")
    >>> report.clean, report.by_reason()
    (False, {'ambiguous_gold': [3], 'empty_answer': [5]})
    >>> report.summary()
    '8 loaded, 2 skipped (ambiguous_gold: 1 (row 3); empty_answer: 1 (row 5))'
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

from gym_integrity.exceptions import RowProblem  # re-exported: the loaders raise it from here

__all__ = ["DataWarning", "RowProblem", "SkippedRow", "DataReport", "REASONS", "MAX_ROW_WARNINGS", "user_stacklevel"]

#: Skipped rows warned one by one per source; the rest get one summary warning.
MAX_ROW_WARNINGS = 20

#: Every reason a row is skipped for (stable codes: ``check-data --json`` reports them).
REASONS: dict[str, str] = {
    "invalid_json": "the line is not valid JSON",
    "not_an_object": "the row is not a JSON object / mapping",
    "missing_question": "no question or problem text",
    "empty_answer": "no gold answer (empty or missing answer)",
    "ambiguous_gold": "the reference solution boxes several different answers",
    "unparsable_gold": "the grader cannot use the gold answer (math_verify or the FinQA scorer cannot read it)",
    "no_reference": "a proof with neither a reference solution nor a rubric",
    "no_tables": "the company has no tables (or the row names none)",
    "bad_field": "a field has the wrong type or value",
    "duplicate_id": "the id repeats an earlier row's",
}


def user_stacklevel() -> int:
    """The ``stacklevel`` that points a warning raised by this function's caller at the first line outside
    gym_integrity and gymnasium: the user's ``gym.make(...)``, not gymnasium's env creator or a loader inside."""
    import os
    import sys

    inside = tuple(
        os.path.dirname(module.__file__) + os.sep
        for module in (sys.modules.get("gym_integrity"), sys.modules.get("gymnasium"))
        if module is not None and module.__file__
    )
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(inside):
        frame, level = frame.f_back, level + 1
    return level


class DataWarning(UserWarning):
    """A data set row was skipped at load (or a source had rows skipped); the message names source, row and reason."""


@dataclass(frozen=True)
class SkippedRow:
    """One skipped row: its 1-based number, reason code and message."""

    row: int
    reason: str
    detail: str


@dataclass
class DataReport:
    """What one source loaded and skipped. ``notes`` counts things worth knowing that are not skips."""

    kind: str
    source: str
    loaded: int = 0
    skipped: list[SkippedRow] = field(default_factory=list)
    notes: dict[str, int] = field(default_factory=dict)

    def skip(self, row: int, reason: str, detail: str) -> None:
        if reason not in REASONS:
            raise ValueError(f"DataReport.skip: reason must be one of {sorted(REASONS)}, got {reason!r}")
        self.skipped.append(SkippedRow(int(row), reason, detail))

    def note(self, name: str, count: int = 1) -> None:
        self.notes[name] = self.notes.get(name, 0) + count

    @property
    def clean(self) -> bool:
        return not self.skipped

    def by_reason(self) -> dict[str, list[int]]:
        """Row numbers per reason, reasons in the order first met."""
        out: dict[str, list[int]] = {}
        for skipped in self.skipped:
            out.setdefault(skipped.reason, []).append(skipped.row)
        return out

    def summary(self, rows_shown: int = 5) -> str:
        """One line: loaded, skipped, and per reason its count and first rows."""
        parts = []
        for reason, rows in self.by_reason().items():
            shown = ", ".join(map(str, rows[:rows_shown])) + (", ..." if len(rows) > rows_shown else "")
            parts.append(f"{reason}: {len(rows)} (row{'s' if len(rows) > 1 else ''} {shown})")
        text = f"{self.loaded} loaded, {len(self.skipped)} skipped"
        return text + (f" ({'; '.join(parts)})" if parts else "")

    def warn(self, *, stacklevel: int = 2, limit: int = MAX_ROW_WARNINGS) -> None:
        """One :class:`DataWarning` per skipped row up to ``limit``, then one for the rest."""
        for skipped in self.skipped[:limit]:
            warnings.warn(
                f"{self.kind}: {self.source} row {skipped.row}: {skipped.detail} [{skipped.reason}]; row skipped",
                DataWarning,
                stacklevel=stacklevel + 1,
            )
        rest = self.skipped[limit:]
        if rest:
            counts: dict[str, int] = {}
            for skipped in rest:
                counts[skipped.reason] = counts.get(skipped.reason, 0) + 1
            by = ", ".join(f"{reason}: {n}" for reason, n in counts.items())
            warnings.warn(
                f"{self.kind}: {self.source}: {len(rest)} more rows skipped ({by}); "
                "`gym-integrity check-data` lists every one",
                DataWarning,
                stacklevel=stacklevel + 1,
            )

    def as_dict(self) -> dict[str, Any]:
        """Plain data for ``check-data --json``: every skipped row, and rows per reason."""
        return {
            "kind": self.kind,
            "source": self.source,
            "loaded": self.loaded,
            "skipped": len(self.skipped),
            "by_reason": {reason: {"count": len(rows), "rows": rows} for reason, rows in self.by_reason().items()},
            "rows": [{"row": s.row, "reason": s.reason, "detail": s.detail} for s in self.skipped],
            "notes": dict(self.notes),
        }

"""The eval's JSONL results file: one record per episode, flushed as it ends, and what ``--resume`` skips."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["ResultsFile", "read_records"]


def read_records(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """The complete records of a results file. A last line cut short by a kill is skipped, not an error."""
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if not line.endswith("\n"):
                return  # the line being written when the run died
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict):
                yield record


class ResultsFile:
    """Appends records, one line each, flushed to the OS as each episode ends.

    A killed run (Ctrl-C, a crash, SIGKILL) loses only the episodes in flight:
    every finished one is already in the file. ``--resume`` reads the file back
    (:meth:`done`) and runs only what it lacks; a partial last line is cut off
    first so the file stays one JSON object per line.
    """

    def __init__(self, path: str | os.PathLike[str], *, resume: bool) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if resume and self.path.exists():
            self._truncate_partial_line()
        elif not resume and self.path.exists() and self.path.stat().st_size:
            raise FileExistsError(
                f"{self.path} already holds results: pass --resume to continue it, or choose another --out"
            )
        self._handle = open(self.path, "a", encoding="utf-8")

    def _truncate_partial_line(self) -> None:
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            with open(self.path, "r+b") as handle:
                handle.truncate(data.rfind(b"\n") + 1)

    def existing(self) -> list[dict[str, Any]]:
        return list(read_records(self.path))

    def write(self, record: dict[str, Any]) -> None:
        # ensure_ascii: a lone surrogate a model wrote (valid in a str, not in UTF-8) goes out as an escape
        # instead of failing the write; every line stays one valid JSON object.
        self._handle.write(json.dumps(record, ensure_ascii=True, default=str) + "\n")
        self._handle.flush()

    def close(self) -> None:
        self._handle.close()

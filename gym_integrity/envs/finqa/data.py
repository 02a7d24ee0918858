"""FinQA data: the embedded set, one checked dataset per source per process, and the check-data report.

The rows are :mod:`~gym_integrity.envs.finqa.records`' (Table, Question,
FinQADataset); the loaders of the FinQA-benchmark layout, the original FinQA
JSON and the hub are :mod:`~gym_integrity.envs.finqa.sources`'. This module
picks the loader a config names and keeps what it loaded:
:func:`load_dataset_cached` keeps one :class:`FinQADataset` per source per
process, shared by every env instance.

Every question is checked at load (:mod:`gym_integrity.datacheck`): it loads
with a question text, an answer the scorer reads (a correct submission of it
scores ``correct``, :mod:`gym_integrity.envs.finqa.scoring`) and a company that
has tables (or, for original FinQA, a filing with a table or text), or it is
skipped with one ``DataWarning`` naming file, row and reason. Rows are numbered
from 1: the line where a CSV record starts (the header is line 1), the position
of a JSON record or hub row. ``FinQADataset.report`` keeps the check;
``gym-integrity check-data finqa ROOT`` prints it.

Example:
    >>> ds = load_dataset_cached(None)          # the embedded default set
    >>> len(ds.questions) >= 30, len(ds.company_tables) >= 4
    (True, True)
    >>> load_dataset_cached(None) is ds         # loaded once per process
    True
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import Any

from gym_integrity.datacheck import DataReport, user_stacklevel
from gym_integrity.envs.finqa.records import FinQADataset, Question, Table
from gym_integrity.envs.finqa.sources import (
    detect_layout,
    load_benchmark_layout,
    load_finqa_json,
    load_finqa_records,
    load_hub,
    load_tables_dir,
)
from gym_integrity.workers import ProcessCache

__all__ = [
    "Table",
    "Question",
    "FinQADataset",
    "EMBEDDED_DATA_PATH",
    "load_benchmark_layout",
    "load_finqa_records",
    "load_finqa_json",
    "load_tables_dir",
    "load_hub",
    "load_dataset_cached",
    "cached_datasets",
    "clear_dataset_cache",
    "detect_layout",
    "check_finqa",
]

#: The small set shipped with the package (fictional companies, FinQA-benchmark layout), found through
#: importlib.resources. The loaders walk it by path, which any installed package allows (wheels install
#: files); a zipped one would need ``importlib.resources.as_file``, which takes directories from Python 3.12.
EMBEDDED_DATA_PATH: Path = resources.files("gym_integrity") / "data" / "finqa"  # type: ignore[assignment]  # a real path in any installed package (above)


# ------------------------------------------------------------------ per-process cache

_DATASETS: ProcessCache[tuple[Any, ...], FinQADataset] = ProcessCache("FinQA datasets")


def _cache_key(config: Any) -> tuple[Any, ...]:
    if config is None:
        return ("embedded", str(EMBEDDED_DATA_PATH), "finqa.csv")
    data_path = config.resolved_data_path()
    if config.hub_id:
        return ("hub", config.hub_id, config.split, data_path)
    if data_path is None:
        return ("embedded", str(EMBEDDED_DATA_PATH), config.questions_file)
    return ("path", os.path.realpath(data_path), config.data_format, config.split, config.questions_file)


def _load(key: tuple[Any, ...]) -> FinQADataset:
    kind = key[0]
    if kind == "embedded":
        return load_benchmark_layout(key[1], key[2], source="embedded")
    if kind == "hub":
        return load_hub(key[1], key[2], key[3])
    _, path, data_format, split, questions_file = key
    layout = detect_layout(path, split, questions_file) if data_format == "auto" else data_format
    if layout == "benchmark":
        return load_benchmark_layout(path, questions_file)
    return load_finqa_json(path, split)


def _field_of(key: tuple[Any, ...]) -> str:
    return "FinQAConfig.hub_id" if key[0] == "hub" else "FinQAConfig.data_path"


def load_dataset_cached(config: Any) -> FinQADataset:
    """The dataset a :class:`~gym_integrity.envs.finqa.config.FinQAConfig` names (None: the embedded set).

    Loaded once per process and source; every env instance shares the same object.
    Skipped rows warn (``DataWarning``) on the first load; a source with no usable
    question raises ``ValueError``.
    """
    key = _cache_key(config)
    return _DATASETS.get_or_create(key, lambda: _load_checked(key))


def _load_checked(key: tuple[Any, ...]) -> FinQADataset:
    try:
        dataset = _load(key)
    except FileNotFoundError as exc:
        # A path that holds no data is a wrong value of the config field (the one error rule), named with it.
        where = key[1] if key[0] != "embedded" else "the embedded set"
        raise ValueError(f"{_field_of(key)}: {str(where)!r}: {exc}") from exc
    report = dataset.report
    if report is not None:
        report.warn(stacklevel=user_stacklevel())  # points at the user's line
    if not dataset.questions:
        summary = report.summary() if report is not None else "no question rows"
        where = report.source if report is not None else dataset.source
        raise ValueError(
            f"{_field_of(key)}: {where} has no usable question ({summary}); "
            "`gym-integrity check-data finqa` lists every skipped row"
        )
    return dataset


def check_finqa(
    path: str | os.PathLike[str] | None = None,
    *,
    split: str = "test",
    questions_file: str = "finqa.csv",
    hub_id: str | None = None,
) -> DataReport:
    """The load-time check of one FinQA source, freshly run (what ``gym-integrity check-data finqa`` prints).

    ``path``: a FinQA-benchmark root or an original-FinQA JSON file/directory
    (None: the embedded set); with ``hub_id``, the questions come from the hub
    and the tables from ``path``. Raises ``FileNotFoundError``/``ValueError`` for
    a source that cannot be read at all.

    >>> check_finqa().summary()
    '37 loaded, 0 skipped'
    """
    if hub_id is not None:
        key: tuple[Any, ...] = ("hub", hub_id, split, None if path is None else str(path))
    elif path is None:
        key = ("embedded", str(EMBEDDED_DATA_PATH), questions_file)
    else:
        key = ("path", os.path.realpath(path), "auto", split, questions_file)
    report = _load(key).report
    assert report is not None  # every loader of _load makes one
    return report


def cached_datasets() -> list[FinQADataset]:
    """The datasets loaded in this process (what the tool cache may keep alive)."""
    return _DATASETS.values()


def clear_dataset_cache() -> None:
    """Forget every loaded dataset (tests and benchmarks use this to measure a cold load)."""
    _DATASETS.clear()

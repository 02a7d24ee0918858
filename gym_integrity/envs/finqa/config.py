"""FinQAConfig: what ``gym.make("FinQA-v0", **kwargs)`` accepts, validated at construction."""

from __future__ import annotations

import os
from dataclasses import dataclass

from gym_integrity.checks import is_int, is_number
from gym_integrity.envs.finqa.scoring import SCORING_MODES

__all__ = ["FinQAConfig", "DATA_PATH_ENV", "DATA_FORMATS"]

#: Environment variable naming a data path when the config gives none.
DATA_PATH_ENV = "FINQA_DATA_PATH"
DATA_FORMATS = ("auto", "benchmark", "finqa_json")


@dataclass
class FinQAConfig:
    """Configuration of :class:`~gym_integrity.envs.finqa.env.FinQAEnv`.

    Attributes:
        data_path: A FinQA-benchmark root (``benchmark_questions/`` and
            ``input_companies/``), an original FinQA JSON file, or a directory
            holding ``<split>.json``. ``None``: ``$FINQA_DATA_PATH`` if set,
            else the small embedded set.
        data_format: ``"auto"`` (detect), ``"benchmark"`` or ``"finqa_json"``.
        hub_id: A data set id (or local directory) for ``datasets.load_dataset``;
            takes precedence over ``data_path`` for the questions.
        split: The split of a hub data set or of an original-FinQA directory.
        questions_file: The CSV under ``benchmark_questions/``.
        step_budget: Tool calls allowed per episode (the submission included);
            MaxStepsTruncation in the registered stack enforces it.
        scoring: ``"tolerance"`` (1% relative and 1.0 absolute) or
            ``"finqa_exact"`` (the original FinQA rule: round to 5 decimals, equal).
        rel_tol, abs_tol: The tolerances of ``"tolerance"`` scoring.
        sql_timeout_s: Wall-clock limit of one SQL query.
        sql_row_cap: Most rows one SQL query returns.
        max_result_chars: Most characters of one tool result.
        max_action_chars: Longer actions get an error observation, unparsed.

    Example:
        >>> FinQAConfig(step_budget=0).validate()
        Traceback (most recent call last):
        ...
        ValueError: FinQAConfig.step_budget must be an int >= 1, got 0
    """

    data_path: str | None = None
    data_format: str = "auto"
    hub_id: str | None = None
    split: str = "test"
    questions_file: str = "finqa.csv"
    step_budget: int = 50
    scoring: str = "tolerance"
    rel_tol: float = 0.01
    abs_tol: float = 1.0
    sql_timeout_s: float = 1.0
    sql_row_cap: int = 50
    max_result_chars: int = 8000
    max_action_chars: int = 100_000

    def resolved_data_path(self) -> str | None:
        """``data_path``, else ``$FINQA_DATA_PATH``, else None (the embedded set)."""
        if self.data_path is not None:
            return str(self.data_path)
        env = os.environ.get(DATA_PATH_ENV, "").strip()
        return env or None

    def validate(self) -> None:
        for name in ("data_path", "hub_id"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, (str, os.PathLike)):
                raise TypeError(f"FinQAConfig.{name} must be a str path or None, got {type(value).__name__}")
            if isinstance(value, str) and not value.strip():
                raise ValueError(f"FinQAConfig.{name} must be a non-empty str or None")
        if isinstance(self.data_path, os.PathLike):
            self.data_path = os.fspath(self.data_path)
        if isinstance(self.hub_id, os.PathLike):
            self.hub_id = os.fspath(self.hub_id)
        for name in ("split", "questions_file"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise TypeError(f"FinQAConfig.{name} must be a non-empty str, got {value!r}")
        if "/" in self.questions_file or "\\" in self.questions_file or self.questions_file.startswith("."):
            raise ValueError(f"FinQAConfig.questions_file must be a file name under benchmark_questions/, "
                             f"got {self.questions_file!r}")
        if self.data_format not in DATA_FORMATS:
            raise ValueError(f"FinQAConfig.data_format must be one of {DATA_FORMATS}, got {self.data_format!r}")
        if self.scoring not in SCORING_MODES:
            raise ValueError(f"FinQAConfig.scoring must be one of {SCORING_MODES}, got {self.scoring!r}")
        for name, low in (("step_budget", 1), ("sql_row_cap", 1), ("max_result_chars", 100),
                          ("max_action_chars", 100)):
            value = getattr(self, name)
            if not is_int(value) or value < low:
                raise ValueError(f"FinQAConfig.{name} must be an int >= {low}, got {value!r}")
        for name, low, high in (("rel_tol", 0.0, 1.0), ("abs_tol", 0.0, float("inf")),
                                ("sql_timeout_s", 0.01, 60.0)):
            value = getattr(self, name)
            if not is_number(value) or not low <= value <= high:
                raise ValueError(f"FinQAConfig.{name} must be a number in [{low}, {high}], got {value!r}")

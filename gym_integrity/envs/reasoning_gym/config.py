"""ReasoningGymConfig (what ``gym.make("ReasoningGym-v0", **kwargs)`` accepts) and its validation."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field, fields
from typing import Any, Mapping, Sequence

from gym_integrity.checks import is_int, is_number
from gym_integrity.extract import ANSWER_FORMATS

__all__ = ["ReasoningGymConfig", "available_datasets", "SCORING_MODES"]

#: ``strict``: our strict scorers where reasoning-gym's pay for nothing (the default);
#: ``reasoning_gym``: every task's own ``score_answer``, leniencies included (opt-in).
SCORING_MODES = ("strict", "reasoning_gym")


def available_datasets() -> list[str]:
    """Names of every reasoning-gym dataset (imports reasoning_gym)."""
    import reasoning_gym  # noqa: F401  (importing registers the datasets)
    from reasoning_gym.factory import DATASETS

    return sorted(name for name in DATASETS if name != "composite")


def _check_dataset_name(name: Any, field_name: str) -> None:
    if not isinstance(name, str):
        raise TypeError(f"ReasoningGymConfig.{field_name} must be a dataset name (str), got {type(name).__name__}")
    names = available_datasets()
    if name not in names:
        close = difflib.get_close_matches(name, names, n=3)
        hint = f" Did you mean {close}?" if close else ""
        raise ValueError(f"ReasoningGymConfig.{field_name}: unknown reasoning-gym dataset {name!r}.{hint} "
                         f"Valid choices: {', '.join(names)}")


def _check_task_config(name: str, task_config: Mapping[str, Any], where: str) -> None:
    """Build the task's own config dataclass once, so a bad value fails at make, naming the field."""
    from reasoning_gym.factory import DATASETS

    config_cls = DATASETS[name][1]
    valid = sorted(f.name for f in fields(config_cls))
    unknown = sorted(set(task_config) - set(valid))
    if unknown:
        raise ValueError(f"{where}: {name} has no option(s) {unknown}; valid options: {valid}")
    try:
        cfg = config_cls(**task_config)
        if hasattr(cfg, "validate"):
            cfg.validate()
    except (AssertionError, ValueError, TypeError) as exc:
        raise ValueError(f"{where}: invalid config for {name}: {exc or type(exc).__name__}; options: {valid}") from None


@dataclass
class ReasoningGymConfig:
    """What ``gym.make("ReasoningGym-v0", **kwargs)`` accepts.

    Attributes:
        dataset: A reasoning-gym dataset name, or a composite: a list of
            ``{"name": str, "weight": float, "config": dict}`` (weight and config
            optional) or a mapping ``{name: weight}``.
        dataset_config: Options of a single dataset (e.g. ``{"min_animals": 3}``).
        size: How many distinct items ``reset()`` draws from. Items are generated
            lazily by index, so a large size costs nothing.
        seed: The generator seed: which items exist. The ``reset`` seed picks among them.
        answer_format: ``"tag"`` (``<answer>...</answer>``), ``"boxed"``,
            ``"either"`` (tag, else boxed; the default) or ``"raw"`` (whole reply).
        max_answer_chars: Longer extracted answers are graded ``too_long``
            (bounds the work any task scorer is given).
        scoring: ``"strict"`` (default) pays for the answer: exact match after
            the task's own normalisation, or the task's own scorer where it is
            strict, never for containing the gold or for a well-formed guess.
            ``"reasoning_gym"`` is the explicit opt-in to every task's original
            ``score_answer``. Its risk: some of those pay constant or
            content-free answers (``game_of_life_halting`` pays any non-empty
            answer, a constant ``0`` earns ~0.9 on ``coin_flip``, a digit spray
            earns substring credit), which a policy learns to exploit. Either
            way, scorers that parse or evaluate the answer run sandboxed
            (docs/reasoning_gym.md).
        score_timeout_s: The run budget of one sandboxed scorer call; an answer
            whose scoring runs past it is graded ``timeout`` (its own fault, not
            a no-verdict).
    """

    dataset: str | Sequence[Mapping[str, Any]] | Mapping[str, float] = "leg_counting"
    dataset_config: Mapping[str, Any] = field(default_factory=dict)
    size: int = 100_000
    seed: int = 42
    answer_format: str = "either"
    max_answer_chars: int = 4096
    scoring: str = "strict"
    score_timeout_s: float = 5.0

    def composite_specs(self) -> list[dict[str, Any]] | None:
        """The composite as a list of ``{"name", "weight", "config"}``, or None for a single dataset."""
        if isinstance(self.dataset, str):
            return None
        if isinstance(self.dataset, Mapping):
            return [{"name": n, "weight": w, "config": {}} for n, w in self.dataset.items()]
        return [{"name": s.get("name"), "weight": s.get("weight", 1.0), "config": dict(s.get("config", {}))}
                for s in self.dataset]

    def dataset_names(self) -> list[str]:
        """Every dataset this config draws from (one, or a composite's members)."""
        specs = self.composite_specs()
        return [self.dataset] if specs is None else [s["name"] for s in specs]  # type: ignore[list-item]

    def validate(self) -> None:
        self._validate_scalars()
        if not isinstance(self.dataset_config, Mapping):
            raise TypeError(f"ReasoningGymConfig.dataset_config must be a dict, got {type(self.dataset_config).__name__}")
        if isinstance(self.dataset, (bytes, bytearray)) or not isinstance(self.dataset, (str, Sequence, Mapping)):
            raise TypeError("ReasoningGymConfig.dataset must be a dataset name, a list of "
                            f"{{'name', 'weight', 'config'}} dicts or a {{name: weight}} mapping; got {type(self.dataset).__name__}")
        specs = self.composite_specs()
        if specs is None:
            _check_dataset_name(self.dataset, "dataset")
            _check_task_config(self.dataset, self.dataset_config, "ReasoningGymConfig.dataset_config")  # type: ignore[arg-type]
            return
        self._validate_composite(specs)

    def _validate_scalars(self) -> None:
        for name in ("size", "seed", "max_answer_chars"):
            value = getattr(self, name)
            if not is_int(value):
                raise TypeError(f"ReasoningGymConfig.{name} must be an int, got {type(value).__name__}")
        if self.size < 1:
            raise ValueError(f"ReasoningGymConfig.size must be >= 1, got {self.size}")
        if self.max_answer_chars < 1:
            raise ValueError(f"ReasoningGymConfig.max_answer_chars must be >= 1, got {self.max_answer_chars}")
        if self.answer_format not in ANSWER_FORMATS:
            raise ValueError(f"ReasoningGymConfig.answer_format must be one of {ANSWER_FORMATS}, "
                             f"got {self.answer_format!r}")
        if not isinstance(self.scoring, str):
            raise TypeError(f"ReasoningGymConfig.scoring must be a str, got {type(self.scoring).__name__}")
        if self.scoring not in SCORING_MODES:
            raise ValueError(f"ReasoningGymConfig.scoring must be one of {SCORING_MODES}, got {self.scoring!r}")
        if not is_number(self.score_timeout_s):
            raise TypeError(f"ReasoningGymConfig.score_timeout_s must be a number (seconds), "
                            f"got {type(self.score_timeout_s).__name__}")
        if not 0 < self.score_timeout_s <= 3600:
            raise ValueError(f"ReasoningGymConfig.score_timeout_s must be in (0, 3600] seconds, got {self.score_timeout_s}")

    def _validate_composite(self, specs: list[dict[str, Any]]) -> None:
        if not specs:
            raise ValueError("ReasoningGymConfig.dataset: a composite needs at least one dataset")
        if self.dataset_config:
            raise ValueError("ReasoningGymConfig.dataset_config applies to a single dataset; "
                             "give a composite's options per entry as {'name', 'weight', 'config'}")
        seen = set()
        for spec in specs:
            _check_dataset_name(spec["name"], "dataset[].name")
            if spec["name"] in seen:
                raise ValueError(f"ReasoningGymConfig.dataset: {spec['name']!r} appears twice in the composite")
            seen.add(spec["name"])
            weight = spec["weight"]
            if not is_number(weight) or not weight > 0:
                raise ValueError(f"ReasoningGymConfig.dataset: weight of {spec['name']!r} must be a number > 0, got {weight!r}")
            _check_task_config(spec["name"], spec["config"], f"ReasoningGymConfig.dataset[{spec['name']}].config")

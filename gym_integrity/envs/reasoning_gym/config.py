"""ReasoningGymConfig (what ``gym.make("ReasoningGym-v0", **kwargs)`` accepts) and its validation."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from gym_integrity.checks import check_bool, check_choice, check_int, check_number, check_type, is_int, reject_unknown
from gym_integrity.grading.reader import ANSWER_FORMATS

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
    check_type(f"ReasoningGymConfig.{field_name}", name, str, "a dataset name (str)")
    names = available_datasets()
    if name not in names:
        close = difflib.get_close_matches(name, names, n=3)
        hint = f" Did you mean {close}?" if close else ""
        raise ValueError(
            f"ReasoningGymConfig.{field_name}: unknown reasoning-gym dataset {name!r}.{hint} "
            f"Valid choices: {', '.join(names)}"
        )


def _check_task_config(name: str, task_config: Mapping[str, Any], where: str) -> None:
    """Build the task's own config dataclass once, so a bad value fails at make, naming the field."""
    from reasoning_gym.factory import DATASETS

    config_cls = DATASETS[name][1]
    valid = sorted(f.name for f in fields(config_cls))
    reject_unknown(where, task_config, valid)
    try:
        cfg = config_cls(**task_config)
        if hasattr(cfg, "validate"):
            cfg.validate()
    except (AssertionError, ValueError, TypeError) as exc:
        # The task's own checks are mostly asserts: a TypeError (comparing a str to an int) is a wrong type,
        # anything else a wrong value.
        kind = TypeError if isinstance(exc, TypeError) else ValueError
        raise kind(f"{where}: invalid config for {name}: {exc or type(exc).__name__}; options: {valid}") from None


@dataclass
class ReasoningGymConfig:
    """What ``gym.make("ReasoningGym-v0", **kwargs)`` accepts.

    Attributes:
        dataset: A reasoning-gym dataset name, or a composite: a list of
            ``{"name": str, "weight": float, "config": dict}`` (weight and config
            optional) or a mapping ``{name: weight}``.
        dataset_config: Options of a single dataset (e.g. ``{"min_animals": 3}``).
        size: How many distinct items ``reset()`` draws from. ``None`` or
            ``"auto"`` (the default): 100,000, within the dataset's own limit
            (word_ladder refuses more than 20,000) and, for a dataset that
            builds every item when made, its eager cap (acre: 2,000; see
            ``datasets.EAGER_SIZE_CAPS``); a composite takes the smallest of
            its members'. The env's ``size`` attribute holds the result. An
            explicit int is used as given (items are generated lazily by index,
            so a large size costs nothing, except for eager datasets); one
            above the dataset's own limit fails at make, naming the largest
            size that works.
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
        balanced_draw: Under strict scoring (the default), draw every answer
            option equally often and never an item whose answer is in its
            question (docs/chance.md). Its plan ships with the package for every
            dataset's default configuration; another configuration's is built
            at the first reset of a process (300 items: a minute for a slow
            generator).
        allow_above_chance: Make a dataset that cannot meet the chance rule
            (``draw.ABOVE_CHANCE``: a content-free answer earns more than a
            uniform guess, even after the balanced draw) under strict scoring.
            Without it such a dataset, alone or in a composite, fails at make
            with a ``ValueError`` that gives the figure.
    """

    dataset: str | Sequence[Mapping[str, Any]] | Mapping[str, float] = "leg_counting"
    dataset_config: Mapping[str, Any] = field(default_factory=dict)
    size: int | str | None = None
    seed: int = 42
    answer_format: str = "either"
    max_answer_chars: int = 4096
    scoring: str = "strict"
    score_timeout_s: float = 5.0
    balanced_draw: bool = True
    allow_above_chance: bool = False

    def composite_specs(self) -> list[dict[str, Any]] | None:
        """The composite as a list of ``{"name", "weight", "config"}``, or None for a single dataset."""
        if isinstance(self.dataset, str):
            return None
        if isinstance(self.dataset, Mapping):
            return [{"name": n, "weight": w, "config": {}} for n, w in self.dataset.items()]
        return [
            {"name": s.get("name"), "weight": s.get("weight", 1.0), "config": dict(s.get("config", {}))}
            for s in self.dataset
        ]

    def dataset_names(self) -> list[str]:
        """Every dataset this config draws from (one, or a composite's members)."""
        specs = self.composite_specs()
        return [self.dataset] if specs is None else [s["name"] for s in specs]  # type: ignore[list-item]  # a single dataset is a name

    def option_defaults(self, names: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Per dataset, the options this config builds it with: the task config's defaults, under this config's own
        (what ``gym-integrity serve`` bounds a client's options by)."""
        from dataclasses import MISSING

        from reasoning_gym.factory import DATASETS

        own = {name: dict(options) for name, options in self._task_configs()}
        result: dict[str, dict[str, Any]] = {}
        for name in names:
            if name not in DATASETS:
                continue
            defaults = {
                f.name: f.default if f.default is not MISSING else f.default_factory()  # type: ignore[operator]
                for f in fields(DATASETS[name][1])
                if f.default is not MISSING or f.default_factory is not MISSING
            }
            result[name] = {**defaults, **own.get(name, {})}
        return result

    def validate(self) -> None:
        """Check every field: a wrong type is a ``TypeError``, a wrong value a ``ValueError``, both naming it."""
        self._validate_scalars()
        check_type("ReasoningGymConfig.dataset_config", self.dataset_config, Mapping, "a dict of the dataset's options")
        if isinstance(self.dataset, (bytes, bytearray)) or not isinstance(self.dataset, (str, Sequence, Mapping)):
            raise TypeError(
                "ReasoningGymConfig.dataset must be a dataset name, a list of "
                f"{{'name', 'weight', 'config'}} dicts or a {{name: weight}} mapping; got {type(self.dataset).__name__}"
            )
        self._check_composite_entries()
        specs = self.composite_specs()
        if specs is None:
            _check_dataset_name(self.dataset, "dataset")
            _check_task_config(self.dataset, self.dataset_config, "ReasoningGymConfig.dataset_config")  # type: ignore[arg-type]  # a single dataset is a name
        else:
            self._validate_composite(specs)
        self._check_size_limits()
        self._check_chance_rule()

    def _check_chance_rule(self) -> None:
        """A dataset that cannot meet the chance rule is made under strict scoring only when asked for."""
        from gym_integrity.envs.reasoning_gym.draw import ABOVE_CHANCE

        if self.scoring != "strict" or self.allow_above_chance:
            return
        for name in self.dataset_names():
            if name in ABOVE_CHANCE:
                raise ValueError(
                    f"ReasoningGymConfig.dataset: {name} is not drawn by default: {ABOVE_CHANCE[name]} "
                    "(docs/chance.md). Pass allow_above_chance=True to make it anyway"
                )

    def _auto_size(self) -> bool:
        return self.size is None or (isinstance(self.size, str) and self.size == "auto")

    def _task_configs(self) -> list[tuple[str, Mapping[str, Any]]]:
        specs = self.composite_specs()
        if specs is None:
            return [(self.dataset, self.dataset_config)]  # type: ignore[list-item]  # a single dataset is a name
        return [(s["name"], s["config"]) for s in specs]

    def _check_size_limits(self) -> None:
        """An explicit size a dataset's own config refuses fails here, naming the largest size that works."""
        from gym_integrity.envs.reasoning_gym.datasets import size_limit

        if self._auto_size():
            return
        for name, task_config in self._task_configs():
            limit = size_limit(name, task_config, self.size)  # type: ignore[arg-type]  # an int: not auto
            if limit < self.size:  # type: ignore[operator]  # an int: not auto
                raise ValueError(
                    f"ReasoningGymConfig.size: {name} accepts at most {limit} items (its own config "
                    f"refuses more), got {self.size}; pass size<={limit}, or leave size unset "
                    f"(None/'auto') to get the largest default that works"
                )

    def resolved_size(self) -> int:
        """The size the env uses: an explicit int as given; for None/'auto', the smallest of the datasets' auto sizes."""
        from gym_integrity.envs.reasoning_gym.datasets import auto_size

        if not self._auto_size():
            return int(self.size)  # type: ignore[arg-type]  # an int: not auto
        return min(auto_size(name, task_config) for name, task_config in self._task_configs())

    def _validate_scalars(self) -> None:
        if not self._auto_size():
            expected = "an int >= 1, or None/'auto' for the dataset's default"
            if not is_int(self.size) and not isinstance(self.size, str):
                raise TypeError(
                    f"ReasoningGymConfig.size must be {expected}; got {type(self.size).__name__} {self.size!r}"
                )
            if not is_int(self.size) or self.size < 1:  # type: ignore[operator]  # an int here: checked above
                raise ValueError(f"ReasoningGymConfig.size must be {expected}; got {self.size!r}")
        check_int("ReasoningGymConfig.seed", self.seed)
        check_int("ReasoningGymConfig.max_answer_chars", self.max_answer_chars, low=1)
        check_choice("ReasoningGymConfig.answer_format", self.answer_format, ANSWER_FORMATS)
        check_choice("ReasoningGymConfig.scoring", self.scoring, SCORING_MODES)
        check_bool("ReasoningGymConfig.balanced_draw", self.balanced_draw)
        check_bool("ReasoningGymConfig.allow_above_chance", self.allow_above_chance)
        check_number(
            "ReasoningGymConfig.score_timeout_s", self.score_timeout_s, low=0, low_open=True, high=3600, unit="seconds"
        )

    def _check_composite_entries(self) -> None:
        """A composite's entries have the right shape before composite_specs() reads them."""
        if isinstance(self.dataset, str):
            return
        if isinstance(self.dataset, Mapping):
            for name, weight in self.dataset.items():
                check_type("ReasoningGymConfig.dataset", name, str, "a {name: weight} mapping with str names")
                check_number(f"ReasoningGymConfig.dataset: the weight of {name!r}", weight, low=0, low_open=True)
            return
        for index, entry in enumerate(self.dataset):
            where = f"ReasoningGymConfig.dataset[{index}]"
            check_type(where, entry, Mapping, "a dict {'name', 'weight', 'config'}")
            reject_unknown(where, entry, ("name", "weight", "config"))
            if "weight" in entry:
                check_number(f"{where}.weight", entry["weight"], low=0, low_open=True)
            if "config" in entry:
                check_type(f"{where}.config", entry["config"], Mapping, "a dict of the dataset's options")

    def _validate_composite(self, specs: list[dict[str, Any]]) -> None:
        if not specs:
            raise ValueError("ReasoningGymConfig.dataset: a composite needs at least one dataset")
        if self.dataset_config:
            raise ValueError(
                "ReasoningGymConfig.dataset_config applies to a single dataset; "
                "give a composite's options per entry as {'name', 'weight', 'config'}"
            )
        seen = set()
        for spec in specs:
            _check_dataset_name(spec["name"], "dataset[].name")
            if spec["name"] in seen:
                raise ValueError(f"ReasoningGymConfig.dataset: {spec['name']!r} appears twice in the composite")
            seen.add(spec["name"])
            # weights were checked by _check_composite_entries
            _check_task_config(spec["name"], spec["config"], f"ReasoningGymConfig.dataset[{spec['name']}].config")

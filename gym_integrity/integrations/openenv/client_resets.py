"""Reset arguments that rebuild a session's env, as OpenEnv's reasoning_gym_env client sends them, within limits.

OpenEnv's ``ReasoningGymEnv.reset(dataset_name=..., dataset_config=...,
seed=..., size=...)`` asks its server for a new dataset; a bare ``reset()``
then takes the dataset's next item, wrapping at its end. A served env takes
the same arguments for an env whose configuration has those fields
(ReasoningGym-v0), inside a :class:`ClientResets` fixed when the server
starts: the datasets a client may pick, the largest size, and the size of the
config it may send. Anything else is a ``ValueError``/``TypeError`` naming
it, which the server sends back as an error frame; the session keeps its env.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gym_integrity.checks import check_int, check_type, is_int

__all__ = ["ClientResets", "CONFIG_KEYS", "MAX_CONFIG_CHARS", "UNBOUNDED_OPTIONS", "check_bounded"]

#: The reset arguments of OpenEnv's reasoning_gym_env that choose a dataset (``seed`` too, when one of these is given).
CONFIG_KEYS = ("dataset_name", "dataset_config", "dataset_specs", "size")
#: The longest ``dataset_config``/``dataset_specs`` (as JSON) a client may send.
MAX_CONFIG_CHARS = 4096
#: Options that are no cost: the generator's seed; ``size`` has its own bound (``max_size``).
UNBOUNDED_OPTIONS = ("seed", "size")


def _is_number(value: Any) -> bool:
    return (is_int(value) or isinstance(value, float)) and not isinstance(value, bool)


def _numbers(value: Any) -> list[Any]:
    """Every number inside ``value`` (a number, or lists and dicts of them)."""
    if _is_number(value):
        return [value]
    if isinstance(value, (list, tuple)):
        return [n for item in value for n in _numbers(item)]
    if isinstance(value, Mapping):
        return [n for item in value.values() for n in _numbers(item)]
    return []


def check_bounded(where: str, value: Any, bound: Any) -> None:
    """Every number in a client's option ``value`` is at most the server's: the number at the same key of
    ``bound``, or for a list the largest number of the bound's list."""
    if _is_number(value):
        if not _is_number(bound):
            raise ValueError(
                f"reset {where}: this server has no numeric bound for it (started with {bound!r}); leave it out"
            )
        if value > bound:
            raise ValueError(
                f"reset {where} = {value!r} is above this server's bound {bound!r} (the value it was "
                "started with, else the dataset's default): a client may ask for less, never more"
            )
    elif isinstance(value, Mapping):
        for key, item in value.items():
            check_bounded(f"{where}.{key}", item, bound.get(key) if isinstance(bound, Mapping) else None)
    elif isinstance(value, (list, tuple)) and _numbers(value):
        largest = max(_numbers(bound), default=None)
        for index, number in enumerate(_numbers(value)):
            check_bounded(f"{where}[{index}]", number, largest)


@dataclass(frozen=True)
class ClientResets:
    """What a client's reset may change in its session's env: these datasets, at most ``max_size`` items, every
    numeric option at most its value in ``bounds`` (per dataset: the served config's options over the defaults)."""

    datasets: tuple[str, ...]
    max_size: int
    bounds: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @classmethod
    def for_env(cls, raw_env: Any, datasets: Any = None, max_size: int | None = None) -> ClientResets | None:
        """The limits for a served env whose config takes a dataset (None for any other env).

        ``datasets`` defaults to the served config's own; ``max_size`` to the
        served env's size.
        """
        config = getattr(raw_env, "config", None)
        names = getattr(config, "dataset_names", None)
        if config is None or not callable(names) or not hasattr(config, "dataset_config"):
            return None
        allowed = (
            tuple(names())
            if datasets is None
            else tuple(check_type("serve client datasets", d, str, "a name") for d in datasets)
        )
        size = (
            int(getattr(raw_env, "size", 0) or 0) if max_size is None else check_int("serve max_size", max_size, low=1)
        )
        defaults = getattr(config, "option_defaults", None)
        bounds = defaults(allowed) if callable(defaults) else {}
        return cls(datasets=allowed, max_size=max(size, 1), bounds=bounds)

    def make_kwargs(self, request: Mapping[str, Any], seed: Any) -> dict[str, Any]:
        """The ``make`` options a reset asks for, checked; ``seed`` is the generator's seed, as OpenEnv's server reads it."""
        name = request.get("dataset_name")
        if name is None:
            raise ValueError(
                "reset: dataset_config, dataset_specs and size go with dataset_name (OpenEnv's "
                "reasoning_gym_env reset arguments)"
            )
        if seed is None or request.get("size") is None:
            raise ValueError("reset: seed and size must be provided when dataset_name is specified")
        size = check_int("reset size", request["size"], low=1, high=self.max_size)
        check_int("reset seed", seed, low=0)
        if name == "composite":
            specs = request.get("dataset_specs")
            if specs is None:
                raise ValueError("reset: dataset_specs must be provided for a composite dataset")
            check_type("reset dataset_specs", specs, list, "a list of {'name', 'weight', 'config'}")
            if not specs:
                raise ValueError("reset: dataset_specs cannot be empty for a composite dataset")
            self._check_small("dataset_specs", specs)
            for spec in specs:
                check_type("reset dataset_specs[]", spec, Mapping, "a dict {'name', 'weight', 'config'}")
                self._check_allowed(spec.get("name"))
                self._check_inner_size("dataset_specs[].config", spec.get("config") or {})
                where = f"dataset_specs[{spec.get('name')}].config"
                self._check_bounds(where, spec["name"], spec.get("config") or {})
            return {"dataset": [dict(spec) for spec in specs], "dataset_config": {}, "size": size, "seed": seed}
        self._check_allowed(name)
        config = request.get("dataset_config") or {}
        check_type("reset dataset_config", config, Mapping, "a dict of the dataset's options")
        self._check_small("dataset_config", config)
        self._check_inner_size("dataset_config", config)
        self._check_bounds("dataset_config", name, config)
        return {"dataset": name, "dataset_config": dict(config), "size": size, "seed": seed}

    def _check_allowed(self, name: Any) -> None:
        check_type("reset dataset_name", name, str, "a dataset name")
        if name not in self.datasets:
            raise ValueError(
                f"reset: dataset {name!r} is not served here; this server takes {list(self.datasets)} "
                "(gym-integrity serve --env-kwargs picks the dataset; client_datasets widens the list)"
            )

    def _check_bounds(self, what: str, name: str, config: Any) -> None:
        if not isinstance(config, Mapping):
            return  # the task's own config check names the wrong type
        bound = self.bounds.get(name, {})
        for key, value in config.items():
            if key not in UNBOUNDED_OPTIONS and key in bound:  # an unknown option: the task's own check names it
                # The low end of a range (min_animals) costs no more than its high end (max_animals) may.
                limit = bound.get(f"max_{key[4:]}", bound[key]) if key.startswith("min_") else bound[key]
                check_bounded(f"{what}.{key} ({name})", value, limit)

    def _check_inner_size(self, what: str, config: Any) -> None:
        """A size inside a dataset's own config is bounded too: a composite member builds that many items."""
        if isinstance(config, Mapping) and config.get("size") is not None:
            check_int(f"reset {what} size", config["size"], low=1, high=self.max_size)

    @staticmethod
    def _check_small(what: str, value: Any) -> None:
        try:
            text = json.dumps(value)
        except (TypeError, ValueError):
            raise TypeError(f"reset {what} must be plain JSON") from None
        if len(text) > MAX_CONFIG_CHARS:
            raise ValueError(f"reset {what} is {len(text)} characters of JSON; at most {MAX_CONFIG_CHARS}")

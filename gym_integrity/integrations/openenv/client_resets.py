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
from dataclasses import dataclass
from typing import Any, Mapping

from gym_integrity.checks import check_int, check_type

__all__ = ["ClientResets", "CONFIG_KEYS", "MAX_CONFIG_CHARS"]

#: The reset arguments of OpenEnv's reasoning_gym_env that choose a dataset (``seed`` too, when one of these is given).
CONFIG_KEYS = ("dataset_name", "dataset_config", "dataset_specs", "size")
#: The longest ``dataset_config``/``dataset_specs`` (as JSON) a client may send.
MAX_CONFIG_CHARS = 4096


@dataclass(frozen=True)
class ClientResets:
    """What a client's reset may change in its session's env: these datasets, at most ``max_size`` items."""

    datasets: tuple[str, ...]
    max_size: int

    @classmethod
    def for_env(cls, raw_env: Any, datasets: Any = None, max_size: int | None = None) -> "ClientResets | None":
        """The limits for a served env whose config takes a dataset (None for any other env).

        ``datasets`` defaults to the served config's own; ``max_size`` to the
        served env's size.
        """
        config = getattr(raw_env, "config", None)
        names = getattr(config, "dataset_names", None)
        if config is None or not callable(names) or not hasattr(config, "dataset_config"):
            return None
        allowed = tuple(names()) if datasets is None else tuple(check_type("serve client datasets", d, str, "a name")
                                                                  for d in datasets)
        size = int(getattr(raw_env, "size", 0) or 0) if max_size is None else check_int("serve max_size", max_size, low=1)
        return cls(datasets=allowed, max_size=max(size, 1))

    def make_kwargs(self, request: Mapping[str, Any], seed: Any) -> dict[str, Any]:
        """The ``make`` options a reset asks for, checked; ``seed`` is the generator's seed, as OpenEnv's server reads it."""
        name = request.get("dataset_name")
        if name is None:
            raise ValueError("reset: dataset_config, dataset_specs and size go with dataset_name (OpenEnv's "
                             "reasoning_gym_env reset arguments)")
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
            return {"dataset": [dict(spec) for spec in specs], "dataset_config": {}, "size": size, "seed": seed}
        self._check_allowed(name)
        config = request.get("dataset_config") or {}
        check_type("reset dataset_config", config, Mapping, "a dict of the dataset's options")
        self._check_small("dataset_config", config)
        self._check_inner_size("dataset_config", config)
        return {"dataset": name, "dataset_config": dict(config), "size": size, "seed": seed}

    def _check_allowed(self, name: Any) -> None:
        check_type("reset dataset_name", name, str, "a dataset name")
        if name not in self.datasets:
            raise ValueError(f"reset: dataset {name!r} is not served here; this server takes {list(self.datasets)} "
                             "(gym-integrity serve --env-kwargs picks the dataset; client_datasets widens the list)")

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

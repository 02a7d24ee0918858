"""Where a stored grade came from: package and grader versions, the env id, its options and their hash, seed, item.

A record that carries this can be re-graded later (``gym-integrity regrade``)
and says which grader paid it: when a grader bug is found, the versions name
the samples it touched.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["Provenance", "grader_versions", "kwargs_hash", "public_kwargs", "GRADER_PACKAGES"]

#: The distributions whose versions decide a grade.
GRADER_PACKAGES = ("gym-integrity", "math-verify", "reasoning-gym", "gymnasium")
#: Option names whose values never go into a record (an endpoint's key).
_SECRET_KEYS = frozenset({"api_key"})


@functools.lru_cache(maxsize=1)
def grader_versions() -> dict[str, str | None]:
    """``{distribution: version}`` of :data:`GRADER_PACKAGES` installed here (None when missing)."""
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for name in GRADER_PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def public_kwargs(value: Any) -> Any:
    """``value`` with every ``api_key`` (at any depth) replaced by ``"<redacted>"``, as JSON-able data."""
    if isinstance(value, Mapping):
        return {str(k): ("<redacted>" if k in _SECRET_KEYS and v else public_kwargs(v)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [public_kwargs(v) for v in value]
    return value if isinstance(value, (str, int, float, bool)) or value is None else str(value)


def kwargs_hash(env_id: str, env_kwargs: Mapping[str, Any]) -> str:
    """A short hash of the env id and its options (keys sorted): equal for the same env, whatever the order."""
    identity = json.dumps([env_id, public_kwargs(dict(env_kwargs))], sort_keys=True, default=str)
    return hashlib.sha256(identity.encode()).hexdigest()[:16]


class Provenance:
    """The provenance of one env's records; :meth:`of` adds the seed and item of one.

    >>> p = Provenance("ReasoningGym-v0", {"dataset": "leg_counting"}).of(3, "leg_counting-3")
    >>> p["env_id"], p["env_kwargs"], p["seed"], p["problem_id"], sorted(p["versions"])[:2]
    ('ReasoningGym-v0', {'dataset': 'leg_counting'}, 3, 'leg_counting-3', ['gym-integrity', 'gymnasium'])
    """

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> None:
        self.env_id = env_id
        self.env_kwargs = public_kwargs(dict(env_kwargs or {}))
        self.hash = kwargs_hash(env_id, env_kwargs or {})

    def of(self, seed: Any, problem_id: Any) -> dict[str, Any]:
        return {
            "env_id": self.env_id,
            "env_kwargs": self.env_kwargs,
            "env_kwargs_hash": self.hash,
            "seed": seed,
            "problem_id": problem_id,
            "versions": dict(grader_versions()),
        }

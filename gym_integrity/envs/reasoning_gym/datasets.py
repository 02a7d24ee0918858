"""reasoning-gym generators shared per process: built once per config key, slow items cached (no gymnasium import)."""

from __future__ import annotations

import json
import time
from typing import Any

from gym_integrity.infotree import copy_tree
from gym_integrity.workers import ProcessCache

__all__ = [
    "AUTO_SIZE",
    "EAGER_SIZE_CAPS",
    "auto_size",
    "dataset_key",
    "load_dataset",
    "member",
    "own_score",
    "size_limit",
    "ItemCache",
]

_REFERENCE_KEYS = ("example_answer", "example_correct_answer")  # where items without one gold keep a valid answer


#: What ``size=None`` ("auto") asks for: more items than any training run draws, generated lazily by index.
AUTO_SIZE = 100_000

#: Datasets that generate every item when made, not by index: the auto size stops here, and why.
#: (An explicit larger size is honoured; it only costs time at make.) Found by timing every dataset's
#: construction at 500 and 100,000 items: only acre's grows with the size.
EAGER_SIZE_CAPS = {"acre": (2_000, "builds every item when made, ~0.4 ms each (100,000 items take about 40 s)")}


#: Whether a task's config accepts a size: asked once per (task, config, size) per process.
_SIZE_CHECKS: ProcessCache[tuple[str, str, int], bool] = ProcessCache("reasoning-gym size checks", max_items=512)


def _size_validates(name: str, task_config_json: str, size: int) -> bool:
    return _SIZE_CHECKS.get_or_create(
        (name, task_config_json, size), lambda: _validate_size(name, task_config_json, size)
    )


def _validate_size(name: str, task_config_json: str, size: int) -> bool:
    from reasoning_gym.factory import DATASETS

    config_cls = DATASETS[name][1]
    try:
        config = config_cls(**{**json.loads(task_config_json), "size": size})
        if hasattr(config, "validate"):
            config.validate()
    except (AssertionError, ValueError, TypeError):
        return False
    return True


def size_limit(name: str, task_config: Any, upto: int) -> int:
    """The largest size <= ``upto`` the task's own config accepts (0 if none does).

    Some tasks cap their size in their config's ``validate()`` (word_ladder
    refuses more than 20,000 items); asking the task keeps us right when
    reasoning-gym changes its limits. Validation is cheap, so a binary search
    costs a few dozen calls, and only for a task that refuses ``upto``.
    """
    text = json.dumps({k: v for k, v in dict(task_config).items() if k != "size"}, sort_keys=True, default=str)
    if _size_validates(name, text, upto):
        return upto
    low, high = 0, upto  # low validates (or is 0), high does not
    while high - low > 1:
        mid = (low + high) // 2
        if _size_validates(name, text, mid):
            low = mid
        else:
            high = mid
    return low


def auto_size(name: str, task_config: Any) -> int:
    """The size ``size=None`` gives one dataset: AUTO_SIZE, within its own limit and its eager cap."""
    cap = EAGER_SIZE_CAPS.get(name, (AUTO_SIZE, ""))[0]
    return size_limit(name, task_config, min(AUTO_SIZE, cap))


def dataset_key(dataset: Any, dataset_config: Any, composite: Any, size: int, seed: int) -> str:
    """The canonical text of a generator's configuration: the env's, and the sandbox worker's, cache key."""
    return json.dumps(
        {
            "dataset": dataset if isinstance(dataset, str) else None,
            "dataset_config": dict(dataset_config),
            "composite": composite,
            "size": size,
            "seed": seed,
        },
        sort_keys=True,
    )


#: The generators, by :func:`dataset_key`; a forked child builds its own (workers/_cache.py).
_GENERATORS: ProcessCache[str, Any] = ProcessCache("reasoning-gym generators", max_items=64)


def load_dataset(key: str) -> Any:
    """One generator per distinct config per process, shared by every env instance."""
    return _GENERATORS.get_or_create(key, lambda: _build_dataset(key))


#: reasoning-gym modules whose scoring prints: tower_of_hanoi echoes an illegal move, the answer's own text (ANSI
#: escapes and all), into the trainer's output. Their module-level ``print`` is a no-op (per module: thread-safe,
#: unlike redirecting ``sys.stdout``).
_PRINTING_SCORERS = ("reasoning_gym.games.tower_of_hanoi", "reasoning_gym.games.contrib.sokoban.src.game")


def _discard(*args: Any, **kwargs: Any) -> None:
    return None


def _build_dataset(key: str) -> Any:
    import sys

    import reasoning_gym
    from reasoning_gym.composite import CompositeConfig, CompositeDataset, DatasetSpec

    spec = json.loads(key)
    if spec["composite"] is None:
        dataset = reasoning_gym.create_dataset(
            spec["dataset"], **{**spec["dataset_config"], "size": spec["size"], "seed": spec["seed"]}
        )
    else:
        datasets = [
            DatasetSpec(name=s["name"], weight=float(s["weight"]), config=s["config"]) for s in spec["composite"]
        ]
        dataset = CompositeDataset(CompositeConfig(size=spec["size"], seed=spec["seed"], datasets=datasets))
    for name in _PRINTING_SCORERS:
        module = sys.modules.get(name)
        if module is not None:
            module.print = _discard  # type: ignore[attr-defined]  # shadows the builtin in that module only
    return dataset


def member(dataset: Any, source: str) -> Any:
    """The generator that made an item of ``source``: a composite's member, else the dataset itself."""
    members = getattr(dataset, "datasets", None)
    return members[source] if isinstance(members, dict) and source in members else dataset


def _reference_answer(entry: Any, fallback: str | None) -> str | None:
    """A well-formed answer for this item: its gold, else an example its metadata keeps, else ``fallback``."""
    if entry.get("answer") is not None:
        return str(entry["answer"])
    metadata = entry.get("metadata") or {}
    return next((metadata[k] for k in _REFERENCE_KEYS if isinstance(metadata.get(k), str)), fallback)


def own_score(scorer: Any, answer: str, entry: Any, reference: str | None = None) -> tuple[str, Any]:
    """The task's own ``score_answer``: ``("score", float)``, or ``("malformed", exception name)``.

    Some scorers let a parse error escape (prime_factorization's ``int()``,
    boxnet on JSON that is not a list). When the scorer raises on this answer
    but scores the item's reference answer (its gold, an example kept in its
    metadata, else the task's ``reference``) without raising, the answer is
    at fault and is graded; a scorer that raises on its reference answer (or
    an item that has none) is broken, and the exception propagates.
    """
    try:
        return "score", float(scorer.score_answer(answer, entry=entry))
    except Exception as exc:
        reference = _reference_answer(entry, reference)
        if reference is None or reference == answer:
            raise
        try:
            scorer.score_answer(reference, entry=copy_tree(entry))
        except Exception:
            raise exc from None
        return "malformed", type(exc).__name__


class ItemCache:
    """Items that are slow to generate (some take a second), kept per process and handed out as copies.

    GRPO groups and sweeps reset to the same index many times; regenerating a
    slow item each time would dominate. Fast items are never stored, so the
    common path costs one cache lookup, and none until a first item was kept
    (the lookup takes the cache's lock: a microsecond on every reset). Every
    hit is a deep copy: scorers may write into the entry they are given, and
    one env's episode must not see another's writes.
    """

    def __init__(self, slow_s: float = 0.002, max_items: int = 512) -> None:
        self.slow_s = slow_s
        self._items: ProcessCache[tuple[str, int], dict[str, Any]] = ProcessCache(
            "reasoning-gym slow items", max_items=max_items
        )
        self._any_kept = False  # stays True once set (a forked child's empty cache only makes lookups miss)

    def get(self, key: str, dataset: Any, index: int) -> dict[str, Any]:
        if self._any_kept:
            cached = self._items.get((key, index))
            if cached is not None:
                return copy_tree(cached)
        start = time.perf_counter()
        item = dataset[index]
        if time.perf_counter() - start > self.slow_s:
            self._items.setdefault((key, index), copy_tree(item))
            self._any_kept = True
        return item

"""Seeds that pick distinct items: N problems of an eval or a dataset are N different ones while any are left."""

from __future__ import annotations

from typing import Any

__all__ = ["distinct_item_seeds"]


def distinct_item_seeds(env: Any, count: int, start: int = 0) -> list[int]:
    """``count`` seeds from ``start`` up whose ``reset(seed=...)`` items differ, while the env has items left.

    Seeds pick items by the env's seed map, so consecutive seeds can repeat an
    item (12 seeds over QEDMath's answer problems drew 7 distinct ones). This
    walks the seeds upward and keeps a seed only if its ``info["problem_id"]``
    is new, until ``count`` are kept; once every item the env declares
    (``env.unwrapped.num_items``) has a seed, or after ``20 * count + 1000``
    resets, the next seeds are kept as they come (items repeat: there are no
    new ones). An eval or a dataset of N problems is then N problems, and the
    same seeds pick them again anywhere. Resets only: nothing is stepped.
    """
    total = getattr(getattr(env, "unwrapped", env), "num_items", None)
    seen: set[Any] = set()
    seeds: list[int] = []
    seed = start
    budget = 20 * count + 1000
    while len(seeds) < count:
        if (total is not None and len(seen) >= total) or seed - start >= budget:
            seeds.extend(range(seed, seed + count - len(seeds)))
            break
        _, info = env.reset(seed=seed)
        key = info.get("problem_id", seed)
        if key not in seen:
            seen.add(key)
            seeds.append(seed)
        seed += 1
    return seeds

"""Seeded resets without a numpy Generator per reset: a seed-to-index map, and ``np_random`` made only when read."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.utils import seeding

__all__ = ["seed_index", "LazyNpRandom", "distinct_item_seeds"]

_MASK = (1 << 64) - 1
_GAMMA = 0x9E3779B97F4A7C15  # SplitMix64's increment (the golden ratio in 64 bits)


def _mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def seed_index(seed: int, draw: int, size: int) -> int:
    """The index in ``[0, size)`` of the ``draw``-th pick after ``reset(seed=seed)`` (draw 0 is the seeded reset).

    It is output ``draw`` of SplitMix64 seeded with ``seed`` (seeds wider than
    64 bits are folded in first), scaled to ``size`` by a multiply and shift
    (bias below ``size / 2**64``). Pure integer arithmetic: the same on every
    platform and Python version (unlike ``hash``), about 1 µs against about
    8 µs for building a numpy Generator, and neighbouring seeds give unrelated
    indices.

    >>> seed_index(0, 0, 100_000) == seed_index(0, 0, 100_000), seed_index(0, 0, 100_000) != seed_index(1, 0, 100_000)
    (True, True)
    >>> all(0 <= seed_index(s, d, 7) < 7 for s in range(50) for d in range(3))
    True
    """
    state = seed & _MASK
    rest = seed >> 64
    while rest:
        state = _mix(state ^ (rest & _MASK))
        rest >>= 64
    # _mix inlined: this runs on every reset.
    z = (state + (draw + 1) * _GAMMA) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return ((z ^ (z >> 31)) * size) >> 64


class LazyNpRandom:
    """A mixin for a ``gym.Env`` whose resets pick by :func:`seed_index`: ``np_random`` is built only when read.

    ``super().reset(seed=seed)`` builds a numpy Generator on every seeded reset
    (about 8 µs, as long as generating a small reasoning-gym item). An env that
    only needs an index per reset calls ``self._seed_draws(seed)`` instead and
    takes indices from ``self._draw_index(size)``:

    * ``reset(seed=s)`` picks ``seed_index(s, 0, size)``; each reset without a
      seed picks the next draw of the same stream, so ``reset(seed=s)`` followed
      by unseeded resets repeats exactly (I6), as with a Generator;
    * before any seed, the stream is seeded from OS entropy, as gymnasium does;
    * ``env.np_random`` (and the ``_np_random`` that gymnasium's ``check_env``
      reads) is the Generator ``super().reset(seed=s)`` would have built, made
      from the stored seed on first read: equal seeds give equal generator
      states and different seeds different ones, so ``check_env`` passes.
      The index stream does not consume it;
    * a Generator assigned to ``env.np_random`` (or built by a call to
      ``gym.Env.reset(seed=...)``) is used for the draws, as gymnasium would,
      until the next seeded reset.

    Put it before ``gym.Env`` in the bases: its ``_np_random`` property must
    shadow the class attribute gymnasium declares.

    Example:
        >>> import gymnasium as gym
        >>> class Picker(LazyNpRandom, gym.Env):
        ...     observation_space = action_space = gym.spaces.Discrete(1000)
        ...     def reset(self, *, seed=None, options=None):
        ...         self._seed_draws(seed)
        ...         return self._draw_index(1000), {}
        >>> env = Picker()
        >>> first = [env.reset(seed=7)[0], env.reset()[0]]
        >>> first == [env.reset(seed=7)[0], env.reset()[0]]
        True
        >>> _ = env.reset(seed=7)  # np_random: the Generator seed 7 gives, built when read
        >>> env.np_random.bit_generator.state == seeding.np_random(7)[0].bit_generator.state
        True
    """

    #: How many picks the current stream has made (the next draw's number).
    _draws: int = 0

    def _seed_draws(self, seed: int | None) -> None:
        """What ``super().reset(seed=seed)`` does for seeding, without building a Generator."""
        if seed is None:
            return
        if not isinstance(seed, int) or seed < 0:
            seeding.np_random(seed)  # raises gymnasium's own error for a seed it refuses
        state = self.__dict__
        state["_np_random"] = None  # rebuilt from the seed if read (the _np_random property)
        state["_draw_rng"] = None
        state["_np_random_seed"] = seed
        state["_draws"] = 0

    def _draw_index(self, size: int) -> int:
        """The next index in ``[0, size)``: from an assigned Generator if there is one, else the seed's stream."""
        state = self.__dict__
        rng = state.get("_draw_rng")
        if rng is not None:
            return int(rng.integers(size))
        seed = state.get("_np_random_seed")
        if seed is None:  # never seeded: from OS entropy, as gymnasium's np_random would be
            seed = state["_np_random_seed"] = int(np.random.SeedSequence().entropy)
            state["_np_random"] = None
            state["_draws"] = 0
        draw = state.get("_draws", 0)
        state["_draws"] = draw + 1
        return seed_index(seed, draw, size)

    @property
    def _np_random(self) -> np.random.Generator | None:
        state = self.__dict__
        rng = state.get("_np_random")
        if rng is None:
            seed = state.get("_np_random_seed")
            if seed is None or seed < 0:  # never seeded (gymnasium's np_random makes one), or assigned (-1)
                return None
            rng = state["_np_random"] = seeding.np_random(seed)[0]
        return rng

    @_np_random.setter
    def _np_random(self, value: Any) -> None:
        # gymnasium's own paths (Env.reset(seed=...), the np_random setter and getter) assign a Generator:
        # draws come from it from then on, as they would in a plain gym.Env.
        self.__dict__["_np_random"] = value
        self.__dict__["_draw_rng"] = value


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

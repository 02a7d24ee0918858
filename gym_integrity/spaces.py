"""UnicodeText: a Gymnasium space for free-form model text (prompts, answers, proofs).

Gymnasium's :class:`~gymnasium.spaces.Text` only admits characters from a fixed
charset (alphanumerics by default), so it rejects spaces, newlines, LaTeX,
CJK and emoji: everything an LLM writes. ``UnicodeText`` admits any ``str``
whose length lies in ``[min_length, max_length]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.spaces import Space
from gymnasium.vector.utils import create_shared_memory

from gym_integrity.checks import check_int, check_type

__all__ = ["UnicodeText"]

# What ``sample()`` draws from: printable ASCII, whitespace that models emit,
# and a few multi-byte ranges (accents, Greek, math operators, CJK, emoji) so
# that code consuming samples meets the same characters real models produce.
_SAMPLE_ALPHABET = (
    "".join(chr(c) for c in range(32, 127)) + "\n\t" + "éüßñçøπλΣΩ∑∫√≤≥≠∞∂∈ℝ→" + "数学证明答案问题" + "🙂🚀✅"
)


class UnicodeText(Space[str]):
    r"""Any Python ``str`` of ``min_length`` to ``max_length`` characters.

    Example:
        >>> space = UnicodeText(max_length=32, seed=0)
        >>> space.contains("Let $x \\in \\mathbb{R}$.\n数学 🙂")
        True
        >>> space.contains(b"bytes") or space.contains("x" * 33)
        False
        >>> UnicodeText(max_length=8, min_length=0).contains("")
        True
        >>> space
        UnicodeText(1, 32)
        >>> space.sample() == UnicodeText(max_length=32, seed=0).sample()
        True

    Vector envs batch it as a tuple of strings. ``AsyncVectorEnv`` needs
    ``shared_memory=False`` (text has no fixed-size buffer; see
    :data:`gym_integrity.vector.ASYNC_VECTOR_KWARGS`); asking for shared memory fails with a message
    saying so.
    """

    def __init__(self, max_length: int, *, min_length: int = 1, seed: int | np.random.Generator | None = None) -> None:
        # numpy ints are ints here (lengths often come from arrays); bools are not
        check_type("UnicodeText.max_length", max_length, (int, np.integer), "an int >= max(min_length, 1)")
        check_type("UnicodeText.min_length", min_length, (int, np.integer), "an int >= 0")
        self.min_length = check_int("UnicodeText.min_length", int(min_length), low=0)
        self.max_length = check_int("UnicodeText.max_length", int(max_length), low=max(self.min_length, 1))
        super().__init__(dtype=str, seed=seed)

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """Draw a string from this space's own RNG (so ``seed()`` makes it reproducible).

        Lengths are capped at 64 characters above ``min_length``: samples exist
        to exercise code, and a megabyte of noise per sample would only slow it.
        """
        if mask is not None or probability is not None:
            raise ValueError("UnicodeText.sample: mask and probability are not supported (pass None)")
        upper = min(self.max_length, self.min_length + 64)
        length = int(self.np_random.integers(self.min_length, upper + 1))
        picks = self.np_random.integers(0, len(_SAMPLE_ALPHABET), size=length)
        return "".join(_SAMPLE_ALPHABET[i] for i in picks)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def to_jsonable(self, sample_n: Sequence[str]) -> list[str]:  # type: ignore[override]  # a batch is a sequence
        return list(sample_n)

    def from_jsonable(self, sample_n: Sequence[str]) -> list[str]:
        return list(sample_n)

    def __repr__(self) -> str:
        return f"UnicodeText({self.min_length}, {self.max_length})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, UnicodeText)
            and self.min_length == other.min_length
            and self.max_length == other.max_length
        )

    def __hash__(self) -> int:
        return hash((UnicodeText, self.min_length, self.max_length))


@create_shared_memory.register(UnicodeText)
def _refuse_shared_memory(space: UnicodeText, n: int = 1, ctx: Any = None) -> Any:
    # Variable-length text has no fixed-size buffer; failing here beats
    # Gymnasium's generic "custom space" error deep inside AsyncVectorEnv.
    raise TypeError(
        f"{space!r} cannot live in shared memory: build the vector env with "
        "vector_kwargs={'shared_memory': False}, best as gym.make_vec(..., vectorization_mode='async', "
        "vector_kwargs=gym_integrity.ASYNC_VECTOR_KWARGS)"
    )

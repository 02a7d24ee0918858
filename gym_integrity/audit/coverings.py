"""Covering sprays: digit strings that contain every number of up to k digits, cut within an answer cap.

A grader that pays for containing the gold (substring or overlap credit) pays one of these pieces on any numeric
gold; the ``covering_sprays`` probe sends them (:mod:`gym_integrity.audit.search`).

>>> de_bruijn_digits(1), len(de_bruijn_digits(3))
('0123456789', 1002)
"""

from __future__ import annotations

from gym_integrity.audit.answer_space import Candidate

__all__ = ["covering_answers", "de_bruijn_digits"]


def de_bruijn_digits(k: int) -> str:
    """A shortest digit string containing every string of ``k`` digits (a de Bruijn sequence B(10, k), cyclic
    written out linearly: ``10**k + k - 1`` characters)."""
    a = [0] * 10 * k
    seq: list[int] = []

    def db(t: int, p: int) -> None:
        if t > k:
            if k % p == 0:
                seq.extend(a[1 : p + 1])
        else:
            a[t] = a[t - p]
            db(t + 1, p)
            for j in range(a[t - p] + 1, 10):
                a[t] = j
                db(t + 1, t)

    db(1, 1)
    text = "".join(map(str, seq))
    return text + text[: k - 1]


def covering_answers(cap: int, max_digits: int) -> list[Candidate]:
    """For each k up to ``max_digits``: the de Bruijn sequence of every k-digit number, cut into pieces of at
    most ``cap`` characters that overlap by k-1 (so every k-digit number is inside one piece)."""
    out = []
    for k in range(1, max_digits + 1):
        seq = de_bruijn_digits(k)
        step = max(1, cap - (k - 1))
        pieces = [seq[i : i + cap] for i in range(0, max(1, len(seq) - (k - 1)), step)]
        for index, piece in enumerate(pieces):
            out.append(
                Candidate(
                    f"covering: every {k}-digit number"
                    + (f" (piece {index + 1} of {len(pieces)})" if len(pieces) > 1 else ""),
                    piece,
                )
            )
    return out

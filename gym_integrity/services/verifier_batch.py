r"""A batch of answers through the verifier, each distinct one graded once: a GRPO step's completions.

A GRPO step samples several completions per prompt, and a policy's samples
agree: most of a group boxes the same answer. Grading each completion sends
the same (gold, answer) pair to math_verify again and again;
:func:`verify_many` sends each distinct pair once (what ``\boxed{}`` holds,
with the problem and the gold) and gives every completion the grade of its
pair. math_verify is deterministic for one pair and one configuration, so a
copy's grade is the grade it would have had; a ``timeout`` is shared too (the
same answer would run to its budget again). Completions with no readable box
are graded without a request, as by :meth:`VerifierService.verify`.

Example (a service of this process, two workers)::

    from gym_integrity.services.verifier import VerifierConfig, get_verifier
    service = get_verifier(VerifierConfig(num_workers=2))
    service.acquire()
    outcomes = verify_many(service, [("p1", "1/2", r"so \boxed{0.5}"), ("p1", "1/2", r"thus \boxed{0.5}")])
    service.release()   # one request was sent for the two
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Sequence

from gym_integrity.checks import check_int, check_type
from gym_integrity.grading.reader import boxed_answer
from gym_integrity.services.verifier import VerifierService, VerifyOutcome

__all__ = ["verify_many"]


def verify_many(
    service: VerifierService, items: Sequence[tuple[str, str, str]], *, threads: int = 8
) -> list[VerifyOutcome]:
    """``(problem_id, gold, completion text)`` items graded in order, each distinct (problem, gold, boxed answer)
    once, ``threads`` of them in flight (the pool's workers run them; the threads only wait).

    Every item's outcome is :meth:`VerifierService.verify`'s for its text; copies share one outcome object.
    """
    check_type("verify_many service", service, VerifierService, "a VerifierService (get_verifier(...))")
    check_int("verify_many threads", threads, low=1)
    keys: list[tuple[str, str, str | None, str]] = []
    first: dict[tuple[str, str, str | None, str], int] = {}
    for n, item in enumerate(items):
        if not (isinstance(item, tuple) and len(item) == 3 and all(isinstance(x, str) for x in item)):
            raise TypeError(f"verify_many item {n}: expected (problem_id, gold, text) strs, got {item!r:.80}")
        problem_id, gold, text = item
        answer, failure = boxed_answer(text, service.config.max_answer_chars)  # the reading verify() makes
        # A text without a readable box is keyed by why (its grade needs no request).
        key = (problem_id, gold, answer, "" if failure is None else str(failure.cause))
        keys.append(key)
        first.setdefault(key, n)
    if not first:
        return []

    def grade(n: int) -> VerifyOutcome:
        problem_id, gold, text = items[n]
        return service.verify(text, gold, problem_id=problem_id)

    with concurrent.futures.ThreadPoolExecutor(min(threads, len(first))) as pool:
        graded = dict(zip(first, pool.map(grade, first.values())))
    return [graded[key] for key in keys]

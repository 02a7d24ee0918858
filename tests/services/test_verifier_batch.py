"""verify_many: a GRPO step's completions, each distinct boxed answer sent to the workers once, every completion
graded as verify would grade it, in order."""

from __future__ import annotations

import pytest

from gym_integrity.services.verifier import VerifierConfig, VerifierService
from gym_integrity.services.verifier_batch import verify_many

ITEMS = [
    ("p1", "\\frac{1}{2}", "First try: \\boxed{0.5}"),
    ("p1", "\\frac{1}{2}", "Another sample, other words. \\boxed{0.5}"),
    ("p1", "\\frac{1}{2}", "I think \\boxed{1/3}"),
    ("p1", "\\frac{1}{2}", "no box at all"),
    ("p2", "7", "so \\boxed{0.5}"),  # the same answer for another problem: a pair of its own
    ("p1", "\\frac{1}{2}", "Once more \\boxed{0.5}"),
    ("p1", "\\frac{1}{2}", "and again no box"),
    ("p2", "7", "\\boxed{7}"),
]


@pytest.fixture(scope="module")
def service():
    svc = VerifierService(VerifierConfig(num_workers=2, deadline_s=10.0, scope="process")).acquire()
    assert svc.wait_ready(120)
    yield svc
    svc.release()
    svc.close()


def test_each_distinct_answer_is_sent_once_and_every_item_graded_as_verify_would(service):
    before = service.stats()["verifier/requests"]
    outcomes = verify_many(service, ITEMS, threads=4)
    sent = service.stats()["verifier/requests"] - before
    assert sent == 4  # 0.5 and 1/3 for p1, 0.5 and 7 for p2; the texts without a box need no request
    assert [o.grade.verdict.value for o in outcomes] == \
        ["correct", "correct", "incorrect", "no_answer", "incorrect", "correct", "no_answer", "correct"]
    one_by_one = [service.verify(text, gold, problem_id=pid).grade for pid, gold, text in ITEMS]
    assert [o.grade for o in outcomes] == one_by_one
    assert verify_many(service, []) == []


@pytest.mark.parametrize("items, error", [
    ([("p1", "1", 5)], TypeError),
    ([("p1", "1")], TypeError),
    (["p1 1 text"], TypeError),
])
def test_items_must_be_triples_of_strs(service, items, error):
    with pytest.raises(error, match="verify_many item 0"):
        verify_many(service, items)


def test_service_and_threads_are_checked():
    with pytest.raises(TypeError, match="VerifierService"):
        verify_many(object(), [])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="threads"):
        verify_many(VerifierService(VerifierConfig(num_workers=1, scope="process")), [], threads=0)

"""The is_right_answer hook: a task with many right answers passes with it and fails without it, and a hook that
lies is caught (right_answer_toys.py; gym_integrity/audit/right_answers.py)."""

from __future__ import annotations

import random

import right_answer_toys as toys
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from gym_integrity.audit import Status, check_integrity
from gym_integrity.audit.right_answers import RARE_SHARE, RightAnswers, binomial_tail, control_answers


def _row(report, probe):
    return next(r for r in report.results if r.probe == probe)


def test_a_task_with_many_right_answers_fails_without_the_hook_and_passes_with_it():
    """Another item's plan that solves this item too is paid, as it should be: without a judge of right answers the
    audit counts it as pay for nothing (the jugs failure of the sweep), with the hook it is a right guess."""
    without = check_integrity(toys.JugPlansNoJudge)
    assert [r.probe for r in without.failures] == ["alphabet_sprays"], without.failures
    paid = _row(without, "alphabet_sprays").evidence[0]
    assert paid.startswith("transplant: ") and "-> reward 1" in paid, paid
    with_hook = check_integrity(toys.JugPlans)
    assert with_hook.verdict.value == "pass", [(r.probe, r.summary) for r in with_hook.failures + with_hook.missing]
    assert any("is_right_answer() takes as right" in line for line in _row(with_hook, "alphabet_sprays").evidence)


def test_a_constant_that_is_a_right_answer_counts_at_chance_with_the_hook():
    """``1`` is a root of seed 1's cubic: the constant probe fails the honest task without the hook, passes it
    with it (chance 1/6 for ``1``), and so do the search probes that play small numbers."""
    without = check_integrity(toys.AnyRootNoJudge)
    assert "constant_answers" in {r.probe for r in without.failures}
    assert any(line.startswith("'1': ") for line in _row(without, "constant_answers").evidence)
    with_hook = check_integrity(toys.AnyRoot)
    assert with_hook.verdict.value == "pass", [(r.probe, r.summary) for r in with_hook.failures + with_hook.missing]
    assert "'1': mean reward 0.1667 over 6 episodes; chance 1/6" in "\n".join(
        _row(with_hook, "constant_answers").evidence
    )


def test_a_hook_that_calls_everything_right_excuses_nothing():
    """A grader paying any well-formed plan, with a hook that says every answer is right: the hook takes the
    audit's wrong answer as right, so it excuses nothing, and the probe fails on as many paid plans as it does on
    the same grader without the hook."""
    lying = check_integrity(toys.JugPlansAnyPlanSaidRight, probes=["alphabet_sprays", "random_answers"])
    row = _row(lying, "alphabet_sprays")
    assert row.status is Status.FAILED
    assert any("which answers nothing, as right on seed" in line for line in row.evidence), row.evidence

    class NoHook(toys.JugPlansAnyPlanSaidRight):
        is_right_answer = None  # type: ignore[assignment]

    plain = check_integrity(NoHook, probes=["alphabet_sprays"])
    assert plain.status_of("alphabet_sprays") is Status.FAILED
    assert row.summary.split(" ")[0] == _row(plain, "alphabet_sprays").summary.split(" ")[0]  # as many paid


def test_a_hook_that_vouches_for_common_guesses_is_caught_twice():
    """A grader paying any plan as long as the shortest, with a hook of that same rule: it refuses the controls
    (they are no plans), but a transplanted plan is 'right' on most items. The search probe fails it as right
    guesses that are not rare, and label_skew, which never asks the hook, fails the fixed plan."""
    report = check_integrity(toys.JugPlansLongEnoughSaidRight, probes=["alphabet_sprays", "label_skew"])
    row = _row(report, "alphabet_sprays")
    assert row.status is Status.FAILED and "not rare" in row.summary, row.summary
    assert "a right guess is chance only while rare" in row.evidence[0]
    assert report.status_of("label_skew") is Status.FAILED


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    answers=st.lists(st.text(max_size=12), min_size=1, max_size=8),
    control=st.integers(0, 3),
)
def test_a_hook_that_takes_a_control_as_right_excuses_nothing_even_retroactively(seed, answers, control):
    """Whatever else a hook accepts, once it takes one of an item's controls as right, every answer it vouched for
    in the probe is revoked and nothing more is excused; taking one from the start, it excuses nothing at all."""
    assume(not set(answers) & set(control_answers(seed) + control_answers(seed + 1)))
    lie = control_answers(seed + 1)[control]
    right = RightAnswers(lambda a: a in answers or a == lie)
    if control < 2:  # the wrong answer and the empty one are every item's controls: caught on the first
        assert not any(right.excuses(a, seed, finding=a) for a in answers) and right.distrust is not None
        return
    assert all(right.excuses(a, seed, finding=a) for a in answers)  # its controls on this item held
    assert not right.excuses(answers[0], seed + 1, finding="later")  # the item whose control it takes as right
    assert right.distrust is not None and not any(right.excuses(a, seed, finding=a) for a in answers)
    assert sorted(right.revoked()) == sorted(set(answers))
    assert right.too_many(1) is None and "excuses no paid answer" in right.lines()[0]


@settings(max_examples=60, deadline=None)
@given(played=st.integers(1, 400), share=st.floats(0.0, 1.0), seed=st.integers(0, 10_000))
def test_right_guesses_are_excused_only_while_rare(played, share, seed):
    """The rarity test is a one-sided binomial at RARE_SHARE: k right guesses of n distinct plays fail exactly when
    P(>= k) < 1%, and a share at or below RARE_SHARE never fails."""
    rng = random.Random(seed)
    right = RightAnswers(lambda answer: answer.startswith("right"))
    k = round(share * played)
    for i in range(k):
        right.excuses(f"right {i} {rng.random()}", seed=i)
    finding = right.too_many(played)
    assert (finding is not None) == (k > 0 and binomial_tail(played, k, RARE_SHARE) < 0.01)
    if k <= RARE_SHARE * played:
        assert finding is None


def test_one_answer_right_on_most_of_its_items_is_not_rare():
    """A fixed answer vouched on 3 of the 6 items it was played on fails, though 3 of 150 answers overall would
    not; the same answer replayed on one item counts once."""
    right = RightAnswers(lambda answer: answer == "map")
    for seed in (0, 0, 2, 5):
        assert right.excuses("map", seed)
    assert right.too_many(150) is None
    finding = right.too_many(150, {"map": 6, "other": 144})
    assert finding is not None and "3 of 6 plays of 'map'" in finding

"""Short golds (option words, 0/1) in what an env shows: a listed option or a reported score is no leak, the answer
written out is, whatever golds the seeds draw (reference_leakage adds seeds until the golds decide)."""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest

from gym_integrity.audit import AuditSettings, Status, check_integrity
from gym_integrity.audit.leak_hits import LeakHits, word_places
from gym_integrity.audit.leaks import LeakMatch


def _load_toys():
    if "audit_toys" not in sys.modules:
        path = pathlib.Path(__file__).resolve().parents[1] / "support" / "audit_toys.py"
        spec = importlib.util.spec_from_file_location("audit_toys", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["audit_toys"] = module
        spec.loader.exec_module(module)
    return sys.modules["audit_toys"]


toys = _load_toys()
# ListsYesNo's golds: seeds 0 1 2 all "no", 3 6 7 all "yes", 0 3 4 mixed (ScoreAtEnd's: all 1, all 0, mixed).
SEEDS = [(0, 1, 2), (3, 6, 7), (0, 3, 4)]


def _leakage(toy, seeds):
    return check_integrity(toy, probes=["reference_leakage"], settings=AuditSettings(seeds=seeds)).result(
        "reference_leakage"
    )


def test_the_seeds_draw_what_the_tests_say():
    for toy, golds in ((toys.ListsYesNo, ("no", "yes")), (toys.ScoreAtEnd, ("1", "0"))):
        drawn = []
        for seeds in SEEDS:
            env = toy()
            drawn.append({env.reset(seed=s) and env.gold_answers()[0] for s in seeds})
        assert drawn == [{golds[0]}, {golds[1]}, set(golds)], (toy.__name__, drawn)


@pytest.mark.parametrize("seeds", SEEDS, ids=str)
@pytest.mark.parametrize("toy", ["ListsYesNo", "ScoreAtEnd"])
def test_a_listed_option_or_a_reported_score_is_no_leak(toy, seeds):
    result = _leakage(getattr(toys, toy), seeds)
    assert result.status is Status.PASSED, result.evidence
    where = "obs@reset" if toy == "ListsYesNo" else "obs@end"
    assert any(line.startswith(where) for line in result.evidence), result.evidence  # found, and excused


@pytest.mark.parametrize("seeds", SEEDS, ids=str)
@pytest.mark.parametrize(
    "toy, where",
    [
        ("SaysYesNoInObs", "obs@reset"),
        ("SaysYesNoInInfo", "info@reset:hint"),
        ("SaysYesNoAtEnd", "obs@end"),
        ("RevealsBinaryAtEnd", "obs@end"),
        ("RevealsShortGoldAtEnd", "info@end:correct_answer"),
        ("LeaksInInfo", "info@reset:debug.note"),
    ],
)
def test_the_answer_written_out_is_a_leak_whatever_golds_the_seeds_draw(toy, where, seeds):
    result = _leakage(getattr(toys, toy), seeds)
    assert result.status is Status.FAILED, result.evidence
    assert any(line.startswith(where) and "golds that differ" in line for line in result.evidence), result.evidence


def test_one_gold_at_a_fixed_place_asks_for_more_episodes():
    hits = LeakHits()
    for episode in range(3):  # "(Answer yes or no)" with every gold "yes": a place, one gold
        hits.episodes += 1
        hits.add(
            "obs@reset", episode, LeakMatch("exact", "yes", False), "line", word_places("(Answer yes or no)", "yes")
        )
    assert hits.undecided() and hits.verdict()[0] == []
    hits.episodes += 1  # a "no" episode: "no" stands elsewhere, so no place holds every episode's gold
    hits.add("obs@reset", 3, LeakMatch("word", "no", False), "line", word_places("(Answer yes or no)", "no"))
    assert not hits.undecided() and hits.verdict()[0] == []
    leaky = LeakHits()
    for episode, gold in enumerate(["yes", "no", "no", "yes", "no", "yes", "yes"]):  # 7 balanced golds: 0.006
        leaky.episodes += 1
        leaky.add("info:hint", episode, LeakMatch("word", gold, False), "line", word_places(f"it is {gold}", gold))
        assert leaky.undecided() == (episode < 6)
    assert len(leaky.verdict()[0]) == 1


def test_a_strong_match_is_a_leak_in_one_episode():
    hits = LeakHits(episodes=3)
    hits.add("info@end:solution", 0, LeakMatch("exact", "the long reference", True), "line", None)
    assert len(hits.verdict()[0]) == 1 and not hits.undecided()

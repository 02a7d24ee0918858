"""The search probes catch every toy that pays a searching policy for nothing, pass its honest control, and never read the attacked item's gold."""

from __future__ import annotations

import argparse
import itertools
import random

import pytest

from gym_integrity.audit import AuditSettings, SEARCH_PROBES, Status, check_integrity, probe_names
from gym_integrity.audit.coverings import covering_answers, de_bruijn_digits
from gym_integrity.audit.answer_space import Vocabulary, echo_answers
from gym_integrity.audit.cli import add_arguments
from gym_integrity.audit.transplants import transplanted_answers

import search_toys
from search_toys import PAIRS, ShortGoldSubstringCredit


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_each_lenient_toy_fails_only_the_search_probes_and_its_control_passes(name):
    lenient, control, catching = PAIRS[name]
    report = check_integrity(lenient)
    failed = {r.probe for r in report.failures}
    # The audit without the search probes finds nothing on it: only the search probes fail.
    assert failed and failed <= set(SEARCH_PROBES), (name, failed)
    assert set(catching) <= failed, (name, failed)
    for probe in catching:
        first = report.status_of(probe)
        evidence = report.results[[r.probe for r in report.results].index(probe)].evidence[0]
        assert first is Status.FAILED
        # The evidence names the answer that paid, its reward and the item.
        assert "seed " in evidence and "-> reward " in evidence and "chance" in evidence, evidence
    honest = check_integrity(control)
    assert not honest.failures, (control.__name__, [(r.probe, r.summary, r.evidence[:2]) for r in honest.failures])
    for probe in SEARCH_PROBES:
        assert honest.status_of(probe) is Status.PASSED, (control.__name__, probe)


def test_a_gold_free_toy_is_judged_against_chance_zero():
    lenient, _, _ = PAIRS["gold-free grader paying random answers"]
    report = check_integrity(lenient, probes=["alphabet_sprays"])
    [row] = report.results
    assert row.status is Status.FAILED and "no gold: chance 0" in row.evidence[0]


def test_answers_transplanted_from_scouting_items_are_caught_on_a_grader_paying_any_valid_colouring():
    """A fixed colouring is proper on many sparse graphs: the golds of other items, relabelled or respread over
    their keys, are paid, and the evidence names the transplant and the item."""
    report = check_integrity(search_toys.SparseColouring, probes=["alphabet_sprays"])
    [row] = report.results
    assert row.status is Status.FAILED
    assert row.evidence[0].startswith("transplant: ") and "-> reward 1" in row.evidence[0], row.evidence[0]


def test_the_hook_excuses_no_common_guess_and_no_partial_credit():
    """With the optional is_right_answer hook a proper colouring found by transplanting is a right guess, but on
    graphs this sparse one fixed map is proper on half the items: right guesses that common are pay for nothing, and
    the probe fails naming them (tests/audit/test_right_answers.py has a task whose right guesses are rare). The
    hook never excuses an answer it does not take as right."""
    named = check_integrity(search_toys.ColouringRightGuessesNamed, probes=["alphabet_sprays"])
    [row] = named.results
    assert row.status is Status.FAILED and "right guesses" in row.summary, row.summary
    assert row.evidence[0].startswith("the env's is_right_answer() took") and "only while rare" in row.evidence[0]
    partial = check_integrity(search_toys.ColouringPartialCredit, probes=["alphabet_sprays"])
    [row] = partial.results
    assert row.status is Status.FAILED and "-> reward 0." in row.evidence[0], row.evidence[0]


def test_transplants_are_the_scouting_golds_then_their_mutations():
    golds = ['{"0": 1, "1": 1, "2": 2}', '{"a": 3}', "LDUR"]
    answers = transplanted_answers(golds, random.Random(0), 4096)
    assert [c.text for c in answers[:3]] == golds
    texts: dict[str, list[str]] = {}
    for c in answers:
        texts.setdefault(c.family, []).append(c.text)
    assert texts["transplant: a scouting gold's keys, the values seen in turn"] == ['{"0": 1, "1": 2, "2": 3}',
                                                                                   '{"a": 1}']
    [swapped] = [t for t in texts["transplant: a scouting gold, two symbols swapped"] if "{" not in t]
    assert sorted(swapped) == sorted("LDUR") and sum(a != b for a, b in zip(swapped, "LDUR")) == 2
    assert all(len(c.text) <= 10 for c in transplanted_answers(["x" * 20, "0123456789"], random.Random(1), 10))


class FiveDigitSubstringCredit(ShortGoldSubstringCredit):
    """Substring credit on 5-digit golds: past the default's 4-digit covering, inside --deep's."""

    def _draw(self) -> tuple[int, int]:
        return int(self.np_random.integers(5_000, 49_000)), int(self.np_random.integers(5_000, 49_000))


def test_deep_covers_five_digit_golds_the_default_does_not():
    default = check_integrity(FiveDigitSubstringCredit, probes=["covering_sprays"])
    deep = check_integrity(FiveDigitSubstringCredit, probes=["covering_sprays"],
                           settings=AuditSettings(deep=True, probe_timeout_s=120.0))
    assert default.status_of("covering_sprays") is Status.PASSED
    assert deep.status_of("covering_sprays") is Status.FAILED
    assert "every 5-digit number" in deep.results[0].evidence[0]


class _Recording(search_toys.GridWalkNoOpMoves):
    """Records every action the auditor sends."""

    sent: list = []

    def step(self, action):
        type(self).sent.append(action)
        return super().step(action)


def test_the_attacks_never_depend_on_the_attacked_items_gold():
    """The same answers are sent whether the attacked items' gold is the real one or a decoy (only the scouting
    items' golds, far from the audited seeds, may shape the alphabet)."""
    def run(gold_fn):
        _Recording.sent = []
        check_integrity(_Recording, probes=list(SEARCH_PROBES), gold_answers_fn=gold_fn)
        return [a for a in _Recording.sent if "ZZZZ" not in a and a not in golds_sent]

    golds_sent: set = set()

    def real(env):
        gold = env.unwrapped.gold_answers()
        golds_sent.update(f"<answer>{g}</answer>\n\\boxed{{{g}}}" for g in gold)
        return gold

    def decoy(env):
        return ["ZZZZ"] if env.unwrapped.np_random_seed < 6 else real(env)  # seeds 0-5 attacked, 6-8 scout

    with_real, with_decoy = run(real), run(decoy)
    assert with_real and with_real == with_decoy


def test_de_bruijn_contains_every_number_and_the_pieces_fit_the_cap():
    for k in (1, 2, 3):
        seq = de_bruijn_digits(k)
        assert len(seq) == 10 ** k + k - 1
        assert all("".join(digits) in seq for digits in itertools.product("0123456789", repeat=k))
    pieces = [c.text for c in covering_answers(4096, 4) if "4-digit" in c.family]
    assert len(pieces) == 3 and all(len(p) <= 4096 for p in pieces)
    assert all(any(f"{n:04d}" in p for p in pieces) for n in range(0, 10_000, 7))


def test_echo_joins_listed_premises_the_way_the_task_writes_and():
    question = "Use AND = ∧.\nGiven:\n1. (S ∧ R)\n.2. R\n.What can we conclude?\nPut your final answer between tags."
    texts = [c.text for c in echo_answers(question)]
    assert "(S ∧ R) ∧ R" in texts and "R" in texts and "(S ∧ R)" in texts
    assert not any("final answer" in t for t in texts)


def test_echoes_compose_items_with_the_connectives_the_question_spells():
    question = ("Use OR = ∨, AND = ∧, IFF = ↔, NOT = ¬.\nGiven:\n1. (S ∧ R)\n.2. R\n.What can we conclude?")
    texts = [c.text for c in echo_answers(question)]
    assert "(S ∧ R) ∨ ¬S" in texts and "(S ∧ R) ∨ R" in texts and "(S ∧ R) ↔ R" in texts
    assert "((S ∧ R) ∧ R) ∨ ¬S" in texts
    prose = "Is the box red or blue?\n1. The box is red.\n2. The lid is blue."
    assert not any(c.family.startswith("echo: item") for c in echo_answers(prose))  # prose "or" is no connective


def test_the_vocabulary_is_read_from_the_format_example_and_the_board():
    sokoban = "Your solution must be a string of characters, ex: LDURRUDL.\n+ + +\n+ @ X +"
    assert set(Vocabulary.infer([sokoban]).move_tokens()) == set("LDUR")
    rush = ("Specify moves in the format: 'F+1 K+1 M-1 C+3 H+2 ...'\nBoard:\nJLBBCC\nKL.AAN\n")
    tokens = Vocabulary.infer([rush]).move_tokens()
    assert "A+1" in tokens and "J-3" in tokens and "F+1" in tokens
    lock = "Your answer should be a sequence of buttons separated by '→', for example: A → B → C\nA: Add 1"
    vocab = Vocabulary.infer([lock])
    assert vocab.separator() == " → " and {"A", "B", "C"} <= set(vocab.move_tokens())


def test_the_search_probes_are_registered_after_the_others_and_deep_is_a_setting():
    assert probe_names()[-len(SEARCH_PROBES):] == list(SEARCH_PROBES)
    assert AuditSettings().deep is False and AuditSettings(deep=True).deep is True
    with pytest.raises(TypeError, match="AuditSettings.deep"):
        AuditSettings(deep="yes")
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert parser.parse_args(["--deep"]).deep and not parser.parse_args([]).deep


@pytest.mark.parametrize("toy, probe, answer", [(search_toys.NaNPays, "constant_answers", "nan"),
                                                (search_toys.EvaluatesTheAnswer, "question_echo", "+")])
def test_a_nan_constant_and_an_echoed_expression_are_caught(toy, probe, answer):
    """Both passed the audit before: no 'nan' among the constants, no expression among the echoes."""
    report = check_integrity(toy, probes=[probe])
    assert report.status_of(probe) is Status.FAILED, report.results
    assert any(answer in line for r in report.failures for line in r.evidence), report.failures

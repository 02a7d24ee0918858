"""The probes of reset(): it starts a live episode after an end, a refused reset leaves the end in place, a seed picks the same problem."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from gym_integrity.audit.registry import (
    _after_end,
    _failed,
    _is_scored,
    _no_gold,
    _not_applicable,
    _passed,
    _probe,
    _same_reward,
    _seeds,
)
from gym_integrity.audit.report import ProbeResult
from gym_integrity.audit.session import WRONG_ANSWER, Session, Transition, close_quietly, short

__all__ = ["UNKNOWN_RESET_OPTION"]


def _problem_key(obs: Any, info: Mapping[str, Any]) -> tuple[Any, Any]:
    return (info.get("problem_id") if isinstance(info, Mapping) else None, obs if isinstance(obs, str) else repr(obs))


@_probe(
    "reset_clears_end",
    "I2 scored once",
    "After an episode ends, reset() starts a live episode: the gold answer after a wrong end (and a wrong "
    "answer after a gold end) is graded afresh, not answered with the frozen end of the last episode, and the "
    "step count is back at zero.",
)
def reset_clears_end(s: Session) -> ProbeResult:
    bad: list[str] = []
    evidence: list[str] = []
    seed = s.settings.seeds[0]
    golds, source, _, info = s.gold_or_revealed(seed)
    wrong_end = s.finish_wrong(info)[-1]
    if not wrong_end.ended:
        return _not_applicable("the episode did not end (see step_budget)")
    obs, info = s.reset(seed)
    fresh = s.gold() or golds
    if fresh:
        t = s.step(s.answer(fresh[0]), "the gold answer")
        line = f"seed {seed}: gold after a wrong end ({wrong_end.describe()}) and reset -> {t.describe()}"
        (evidence if _is_scored(t, wrong_end) else bad).append(line)
        if t.ended:
            obs, info = s.reset(seed)
            t2 = s.step(s.answer(WRONG_ANSWER), "a wrong answer")
            line = f"seed {seed}: a wrong answer after a gold end ({t.describe()}) and reset -> {t2.describe()}"
            (evidence if _is_scored(t, t2) else bad).append(line)
    undecided = None
    if not fresh:
        t = s.step(s.non_answer(), "a non-answer")
        line = f"seed {seed}: a non-answer after a wrong end ({wrong_end.describe()}) and reset -> {t.describe()}"
        if not _same_transition(t, wrong_end):
            evidence.append(line)
        else:
            # The end again, or an env that answers a non-answer exactly as it answered the wrong answer (reward
            # 0, the same verdict and observation)? A live episode of a fresh instance says which.
            baseline = _fresh_non_answer(s, seed)
            if baseline is not None and not _same_transition(baseline, wrong_end):
                bad.append(f"{line}: the last end again; a non-answer on a fresh instance -> {baseline.describe()}")
            else:
                undecided = f"{line}: the same transition as the end" + (
                    f", and as a non-answer on a fresh instance ({baseline.describe()}): this env grades "
                    "a non-answer like a wrong answer"
                    if baseline is not None
                    else " (no fresh instance to compare with: an env instance was audited)"
                )
    integrity = t.info.get("integrity")
    if isinstance(integrity, Mapping):
        if integrity.get("frozen") is True:
            bad.append(f"seed {seed}: the first step after reset reports integrity.frozen=True")
        if integrity.get("steps") not in (None, 1):
            bad.append(f"seed {seed}: the first step after reset reports integrity.steps={integrity.get('steps')}")
        if undecided and integrity.get("frozen") is False and integrity.get("steps") in (None, 1):
            evidence.append(
                f"seed {seed}: the stack's info says the episode is live after reset "
                f"(integrity.frozen=False, steps={integrity.get('steps')}); the task's own end is what "
                "could not be checked"
            )
    if bad:
        return _failed("reset() did not clear the end state", bad + evidence)
    if undecided:
        # Only a right answer tells a stale end from this env's own grading: without one, say so, never fail.
        return _no_gold(source, [undecided] + evidence)
    return _passed("reset() starts a live episode", evidence)


#: A reset option no env takes: the probe's reset must be refused.
UNKNOWN_RESET_OPTION = "gym_integrity_audit_unknown_option"


@_probe(
    "failed_reset_keeps_end",
    "I2 scored once",
    "End an episode with a wrong answer, then call reset() with an option no env takes, which must fail, and "
    "answer with the gold: a reset that raised started no episode, so the end holds and nothing is scored.",
)
def failed_reset_keeps_end(s: Session) -> ProbeResult:
    evidence: list[str] = []
    bad: list[str] = []
    tried = with_gold = 0
    source = ""
    for seed in _seeds(s, 2):
        golds, source, _, info = s.gold_or_revealed(seed)
        final = s.finish_wrong(info)[-1]
        if not final.ended:
            evidence.append(f"seed {seed}: no end (see step_budget)")
            continue
        options = {UNKNOWN_RESET_OPTION: 1}
        try:
            s._timed(
                f"reset(seed={seed}, options={options})", functools.partial(s.env.reset, seed=seed, options=options)
            )
        except Exception as exc:  # noqa: BLE001  (the refusal is what this probe wants)
            refused = f"refused: {type(exc).__name__}: {short(str(exc), 60)}"
        else:
            evidence.append(
                f"seed {seed}: reset(options={options}) was accepted; a reset that succeeds starts an "
                "episode, so there was no failed reset to test"
            )
            continue
        tried += 1
        with_gold += bool(golds)
        attempts = [(f"gold {short(g, 40)} ({source})", g) for g in golds[:1]] + [("a different wrong answer", "-1")]
        for label, answer in attempts:
            line, ok = _after_end(s, final, s.answer(answer), f"{label} after a reset that was {refused}")
            (evidence if ok else bad).append(f"seed {seed}: {line}")
    if bad:
        return _failed("a reset that raised reopened the ended episode: the next answer was scored", bad + evidence)
    if not tried:
        return _not_applicable(
            "no reset was refused (the env takes any option, or no episode ended), so there was no failed reset to test"
        )
    if not with_gold:
        return _no_gold(source, ["only wrong answers were sent after the refused reset"] + evidence)
    return _passed("a reset that raised left the end in place", evidence)


def _same_transition(a: Transition, b: Transition) -> bool:
    """The same reward, verdict, observation and end flags: what replaying ``b`` would return."""
    return (
        _same_reward(a.reward, b.reward)
        and a.verdict == b.verdict
        and a.terminated == b.terminated
        and a.truncated == b.truncated
        and _equal(a.obs, b.obs)
    )


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # arrays and other objects whose == is not a bool
        return repr(a) == repr(b)


def _fresh_non_answer(s: Session, seed: int) -> Transition | None:
    """A non-answer as the first step of a new instance's first episode (no end before it), or None (no factory)."""
    if s.new_env is None:
        return None
    other = s.new_env()
    try:
        s.reset(seed, env=other)
        return s.step(s.non_answer(), "a non-answer on a fresh instance", env=other)
    finally:
        close_quietly(other)


@_probe(
    "seeded_reset",
    "I6 reproducible",
    "reset(seed=s) gives the same problem every time: twice in one env with an episode in between, and in a "
    "second env instance.",
)
def seeded_reset(s: Session) -> ProbeResult:
    bad, evidence = [], []
    firsts = {}
    for seed in s.settings.seeds:
        obs, info = s.reset(seed)
        firsts[seed] = (_problem_key(obs, info), s.gold())
        s.finish_wrong(info)
    for seed in s.settings.seeds:
        obs, info = s.reset(seed)
        again = (_problem_key(obs, info), s.gold())
        if again != firsts[seed]:
            bad.append(
                f"seed {seed}: reset twice gave different problems: {short(firsts[seed][0], 60)} "
                f"vs {short(again[0], 60)}"
            )
    evidence.append(f"{len(firsts)} seeds reset twice in one env")
    if s.new_env is not None:
        other = s.new_env()
        try:
            for seed in s.settings.seeds:
                obs, info = s.reset(seed, env=other)
                if _problem_key(obs, info) != firsts[seed][0]:
                    bad.append(
                        f"seed {seed}: a second env instance gave a different problem: "
                        f"{short(obs, 60)} vs {short(firsts[seed][0][1], 60)}"
                    )
            evidence.append(f"{len(firsts)} seeds reset in a second env instance")
        finally:
            other.close()
    distinct = len({key for key, _ in firsts.values()})
    if len(firsts) > 1 and distinct == 1:
        s.notes.append(f"seeded_reset: all {len(firsts)} seeds gave the same problem")
    if bad:
        return _failed("seeded reset is not reproducible", bad + evidence)
    return _passed(f"equal seeds give equal problems ({distinct} distinct over {len(firsts)} seeds)", evidence)

"""The grader probes: constant answers earn no more than chance, code in answers never runs, pathological answers are graded in bounded time, and one env's hostile answers never change another's verdicts.

The other probes guard the episode boundary; these treat the grader itself as
attack surface (I3, I4, I7, I8). Importing this module registers them in
:data:`~gym_integrity.audit.probes.PROBES`, after the boundary probes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from gym_integrity.audit.adapters import ANSWER_HINT, INSTANCES_HINT
from gym_integrity.audit.canaries import (
    SLOW_ANSWER,
    CanaryTrap,
    constant_answers,
    pathological_answers,
    setting_injections,
)
from gym_integrity.audit.leaks import numeric_value, squash, strip_latex
from gym_integrity.audit.registry import _EPS, _failed, _no_gold, _not_run, _passed, _probe, _same_reward
from gym_integrity.audit.report import ProbeResult
from gym_integrity.audit.right_answers import RightAnswers
from gym_integrity.audit.session import WRONG_ANSWER, Session, Transition, close_quietly, short

__all__ = ["same_answer", "chance_seeds", "GRADER_PROBES", "CHANCE_EPISODES", "CONCURRENT_SLOW_ANSWERS"]

#: Episodes the constant-answer probe plays (the audit's seeds, extended with the next integers).
CHANCE_EPISODES = 6
#: Slow answers graded at once while the other env answers: two fill a pool of two workers (the issue's case).
CONCURRENT_SLOW_ANSWERS = 2
#: The grader probes, in report order (``gym-integrity audit --all-datasets`` runs these by default).
GRADER_PROBES = (
    "gold_answer_scored",
    "constant_answers",
    "code_injection",
    "pathological_answers",
    "cross_env_isolation",
)


def _plain(text: str) -> str:
    return squash(strip_latex(text)).strip(".")


def _same_number(a: float, b: float) -> bool:
    return a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def same_answer(answer: str, gold: str) -> bool:
    """Whether a constant ``answer`` is the ``gold`` answer after light normalisation.

    Stripped, case-folded, LaTeX removed; numbers compare by value (a gold
    percentage also as a fraction: ``0.5`` is ``50%``). The empty answer equals nothing.

    >>> same_answer("yes", " Yes."), same_answer("0.5", r"\\frac{1}{2}"), same_answer("0.5", "50%")
    (True, True, True)
    >>> same_answer("1", "10"), same_answer("", "")
    (False, False)
    """
    a, g = _plain(answer), _plain(gold)
    if not a or not g:
        return False
    if a == g:
        return True
    va, vg = numeric_value(answer), numeric_value(gold)
    if va is None or vg is None:
        return False
    return _same_number(va, vg) or (gold.strip().endswith("%") and _same_number(va, vg / 100))


def _paid_more(t: Transition, wrong: Transition) -> bool:
    """Paid above a wrong answer: a higher reward, or graded correct where the wrong answer is not."""
    return t.reward > wrong.reward + _EPS or (t.verdict == "correct" and wrong.verdict != "correct")


@dataclass(frozen=True)
class _Raised:
    """A step that raised: what, and after how long (a raise can be slow too)."""

    message: str
    duration_s: float

    def __str__(self) -> str:
        return self.message


def _play(s: Session, seed: int, action: Any, label: str, env: gym.Env | None = None) -> Transition | _Raised:
    """Reset to ``seed`` and step ``action``: the transition, or what it raised.

    A step that raises is garbage_actions' finding; here it only means the answer was not paid.
    """
    s.reset(seed, env=env)
    start = time.perf_counter()
    try:
        return s.step(action, label, env=env)
    except Exception as exc:
        return _Raised(f"raised {type(exc).__name__}: {short(str(exc), 80)}", time.perf_counter() - start)


# ----------------------------------------------------------------------------------------------------------------
@dataclass
class _Episode:
    """One probed episode: its seed, gold answer, and what the gold and a wrong answer were paid."""

    seed: int
    gold: str
    gold_reward: float
    wrong_reward: float

    def fair_reward(self, answer: str) -> tuple[float, bool]:
        """What a grader that pays only the answer would give ``answer``: the gold's reward if it is the gold,
        else a wrong answer's, but never above 0 (a positive reward for a wrong answer is paying for nothing)."""
        if same_answer(answer, self.gold):
            return self.gold_reward, True
        return min(self.wrong_reward, 0.0), False


def chance_seeds(seeds: tuple[int, ...]) -> list[int]:
    """The seeds ``constant_answers`` plays: the audit's, extended with the next integers to ``CHANCE_EPISODES``.

    >>> chance_seeds((0, 1, 2))
    [0, 1, 2, 3, 4, 5]
    """
    out = list(seeds)
    following = max(out) + 1
    while len(out) < CHANCE_EPISODES:
        out.append(following)
        following += 1
    return out


def _chance_seeds(s: Session) -> list[int]:
    return chance_seeds(s.settings.seeds)


def _episodes(s: Session) -> tuple[list[_Episode], str, str, list[str]]:
    """The probed episodes that have a gold answer, where the gold came from, the last source looked at, and
    what a wrong answer raised in episodes left out for it."""
    episodes, sources, source, raised = [], set(), "", []
    for seed in _chance_seeds(s):
        golds, source, _, _ = s.gold_or_revealed(seed)
        if not golds:
            continue
        sources.add(source)
        gold = s.step(s.answer(golds[0]), "the gold answer")
        wrong = _play(s, seed, s.answer(WRONG_ANSWER), f"answer {WRONG_ANSWER!r}")
        if isinstance(wrong, _Raised):
            raised.append(f"seed {seed}: a wrong answer {wrong}")
            continue
        episodes.append(_Episode(seed, golds[0], gold.reward, wrong.reward))
    return episodes, ", ".join(sorted(sources)), source, raised


@_probe(
    "constant_answers",
    "I7 paid for the answer",
    "Short constants ('0', '1', 'yes', 'A', ...), the empty answer and content-free sprays (digit runs, every "
    "integer 0..999) earn no more than chance: over the probed episodes, a constant's mean reward is at most "
    "what a grader paying only the answer would give it (the gold's reward where it is the gold, else a wrong "
    "answer's, capped at 0).",
)
def constant_answers_probe(s: Session) -> ProbeResult:
    episodes, sources, last_source, raised = _episodes(s)
    if not episodes and raised:
        return _not_run(
            f"a wrong answer, the baseline of chance, could not be graded ({raised[0]})", ANSWER_HINT, raised
        )
    if not episodes:
        return _no_gold(last_source)
    n = len(episodes)
    bad, evidence, right, plays = [], [], RightAnswers.of(s.env), dict[str, int]()
    for ep in episodes if right.hook is not None else ():  # the hook's controls first: its word counts throughout
        s.reset(ep.seed)
        right.control(ep.seed)
    for label, answer in constant_answers():
        rewards, fair, hits, worst, errors = [], 0.0, 0, None, []
        for ep in episodes:
            t = _play(s, ep.seed, s.answer(answer), label)
            if isinstance(t, _Raised):
                errors.append(f"seed {ep.seed}: {t}")
                continue
            ceiling, hit = ep.fair_reward(answer)
            plays[answer] = plays.get(answer, 0) + 1
            if t.reward > ceiling + _EPS and right.excuses(answer, ep.seed):  # a right guess: chance
                ceiling, hit = t.reward, True
            rewards.append(t.reward)
            fair += ceiling
            hits += hit
            if t.reward > ceiling + _EPS and (worst is None or t.reward - ceiling > worst[0]):
                worst = (t.reward - ceiling, f"seed {ep.seed} (gold {short(ep.gold, 30)}) -> {t.describe()}")
        if not rewards:
            evidence.append(f"{label}: every step raised ({errors[0]})")
            continue
        mean, fair_mean = sum(rewards) / len(rewards), fair / len(rewards)
        line = (
            f"{label}: mean reward {mean:.4g} over {len(rewards)} episodes; chance {hits}/{len(rewards)} "
            f"(reward at chance {fair_mean:.4g})"
        )
        if errors:
            line += f"; {len(errors)} step(s) raised"
        if mean > fair_mean + _EPS:
            bad.append(f"{line}; e.g. {worst[1]}" if worst else line)
        else:
            evidence.append(line)
    gold_line = f"{n} episodes with a gold answer (from {sources})"
    too_many = right.too_many(sum(plays.values()), plays)
    bad.extend([too_many] if too_many else [])
    evidence.extend(right.lines())
    if bad:
        return _failed(
            f"{len(bad)} constant or content-free answers earned more than chance ({gold_line})", bad + evidence
        )
    return _passed(f"no constant answer earned more than chance ({gold_line})", evidence)


# ----------------------------------------------------------------------------------------------------------------
@_probe(
    "code_injection",
    "I4 no self-dealing / I8 isolated",
    "Answers carrying Python (os.system and open() writing a marker file into a fresh temporary directory, "
    "exec of a string, a builtins marker, frame reading that returns the gold, scorer and shared-module "
    "patches), bare and inside 1+(...), in every wrapping the answer adapter can produce, never run (no marker "
    "file from any process, no marker in this one) and pay no more than a wrong answer.",
)
def code_injection(s: Session) -> ProbeResult:
    seed = s.settings.seeds[0]
    wrong = _play(s, seed, s.answer(WRONG_ANSWER), f"answer {WRONG_ANSWER!r}")
    if isinstance(wrong, _Raised):
        return _not_run(f"a wrong answer, the baseline to compare with, could not be graded: it {wrong}", ANSWER_HINT)
    trap = CanaryTrap()
    bad, sent, seen, ran, paid = [], 0, set(), 0, 0
    try:
        for canary in trap.canaries():
            for form, text in (("bare", canary.code), ("inside 1+(...)", f"1+({canary.code})")):
                for wrapping, action in s.answer_wrappings(text):
                    label = f"{canary.name}, {form}, {wrapping}"
                    t = _play(s, seed, action, label)
                    sent += 1
                    fired = [line for line in trap.fired() if line not in seen]
                    seen.update(fired)
                    trap.undo_patches()  # a patched scorer must not pay the next canary
                    if fired:
                        ran += 1
                        bad.append(f"{label}: RAN: {'; '.join(fired)}")
                    if isinstance(t, Transition) and _paid_more(t, wrong):
                        paid += 1
                        bad.append(f"{label} -> {t.describe()}; a wrong answer -> {wrong.describe()}")
        time.sleep(0.2)  # a worker that ran a canary may write its marker just after answering
        late = [line for line in trap.fired() if line not in seen]
        ran += len(late)
        bad.extend(f"after the last step: RAN: {line}" for line in late)
    finally:
        trap.close()
    checked = f"{sent} canary actions; marker directory and builtins checked after each"
    if bad:
        return _failed(f"{ran} canary actions ran as code, {paid} were paid more than a wrong answer ({checked})", bad)
    return _passed(
        f"no canary ran, none was paid more than a wrong answer ({checked})",
        [f"seed {seed}: a wrong answer -> {wrong.describe()}"],
    )


# ----------------------------------------------------------------------------------------------------------------
@_probe(
    "pathological_answers",
    "I3 bounded",
    "Exponent towers (9**9**9**9, \\boxed{9^{9^{9^{9}}}}, 9^9^9^9), a huge factorial, thousands of nested "
    "brackets and huge numbers each come back within the env's declared grading_time_bound_s plus slack "
    "(else the audit's step_timeout_s), paid no more than a wrong answer.",
)
def pathological_answers_probe(s: Session) -> ProbeResult:
    seed = s.settings.seeds[0]
    limit, source = s.grading_bound()
    wrong = _play(s, seed, s.answer(WRONG_ANSWER), f"answer {WRONG_ANSWER!r}")
    if isinstance(wrong, _Raised):
        return _not_run(f"a wrong answer, the baseline to compare with, could not be graded: it {wrong}", ANSWER_HINT)
    bad, timings = [], []
    answers = pathological_answers()
    for i, (label, text) in enumerate(answers):
        # This probe's own bound (the env's declared one plus slack) is the one a step is held to here, not the
        # session's step_timeout_s: a step within it is no slow call (a loaded machine once took one past 10 s).
        with s.call_bound(limit, source):
            t = _play(s, seed, s.answer(text), label)
        outcome = t.describe() if isinstance(t, Transition) else str(t)  # a raise is garbage_actions' finding
        timings.append((t.duration_s, label, outcome))
        if isinstance(t, Transition) and _paid_more(t, wrong):
            bad.append(f"{label} -> {outcome}; a wrong answer -> {wrong.describe()}")
        too_slow = t.past(limit) if isinstance(t, Transition) else t.duration_s > limit  # less its CPU wait
        if too_slow:
            waited = f" ({t.waited_s:.2f} s of it waiting for a CPU)" if isinstance(t, Transition) else ""
            bad.insert(
                0,
                f"{label} took {t.duration_s:.2f} s{waited} -> {outcome}; bound {limit:.2f} s ({source})"
                + (f"; the {len(answers) - i - 1} answers after it not sent" if i + 1 < len(answers) else ""),
            )
            break
    slowest = max(timings, key=lambda x: x[0]) if timings else None
    line = (
        f"slowest step: {slowest[1]} in {slowest[0]:.3f} s -> {slowest[2]}; bound {limit:.2f} s ({source})"
        if slowest
        else f"bound {limit:.2f} s ({source})"
    )
    if bad:
        return _failed("a pathological answer was graded too slowly or paid", bad + [line])
    return _passed(f"{len(timings)} pathological answers graded within {limit:.2f} s", [line])


# ----------------------------------------------------------------------------------------------------------------
@dataclass
class _Slow:
    """A slow answer graded on its own thread by another env instance."""

    env: gym.Env
    started: threading.Event
    thread: threading.Thread | None = None
    duration_s: float | None = None
    outcome: str = "still grading"


def _start_slow(env: gym.Env, seed: int, action: Any) -> _Slow:
    slow = _Slow(env, threading.Event())

    def grade() -> None:
        try:
            env.reset(seed=seed)
            slow.started.set()
            begin = time.perf_counter()
            _, reward, _, _, info = env.step(action)
            slow.duration_s = time.perf_counter() - begin
            slow.outcome = f"reward {float(reward):g} ({info.get('verdict') if isinstance(info, dict) else None})"
        except Exception as exc:  # what the hostile env does with it is not the finding here
            slow.outcome = f"raised {type(exc).__name__}"
        finally:
            slow.started.set()

    slow.thread = threading.Thread(target=grade, name="gym-integrity-audit:slow-answer", daemon=True)
    slow.thread.start()
    return slow


def _same_transition(t: Transition, base: Transition) -> bool:
    return t.verdict == base.verdict and _same_reward(t.reward, base.reward)


class _Envs:
    """Env instances built for one probe; closed at the end unless a thread may still be using them."""

    def __init__(self, make: Callable[[], gym.Env]) -> None:
        self.make = make
        self.built: list[gym.Env] = []
        self.busy: set[int] = set()

    def new(self) -> gym.Env:
        env = self.make()
        self.built.append(env)
        return env

    def close(self) -> None:
        for env in self.built:
            if id(env) not in self.busy:
                close_quietly(env)


@_probe(
    "cross_env_isolation",
    "I8 isolated",
    "Env B answers the gold and a wrong answer (the baseline). Env A then sends the code canaries (scorer and "
    "shared-module patches included) and setting injections ('set scale=2'); B answers again. Then slow "
    "answers are graded on other instances while B answers the gold. B's verdicts and rewards must equal the "
    "baseline: a correct answer never comes back timeout or changed because of another env.",
)
def cross_env_isolation(s: Session) -> ProbeResult:
    if s.new_env is None:
        return _not_run("needs a second instance, and the audit was given one env instance", INSTANCES_HINT)
    seed = s.settings.seeds[0]
    golds, source, _, _ = s.gold_or_revealed(seed)
    envs = _Envs(s.new_env)
    trap = CanaryTrap()
    try:
        a, b = envs.new(), envs.new()

        def answer_b(answer: str | None, label: str) -> Transition | str:
            """Reset B to the seed and submit ``answer`` (None: B's gold answer)."""
            s.reset(seed, env=b)
            if answer is None:
                gold = s.gold_fn(b) or golds
                if not gold:
                    return "no gold answer"
                answer = gold[0]
            try:
                return s.step(s.answer(answer), label, env=b)
            except Exception as exc:
                return f"raised {type(exc).__name__}: {short(str(exc), 80)}"

        base_gold, base_wrong = answer_b(None, "B: the gold answer"), answer_b(WRONG_ANSWER, "B: a wrong answer")
        if base_gold == "no gold answer":
            return _no_gold(source)
        if isinstance(base_gold, str) or isinstance(base_wrong, str):
            return _not_run(
                f"no baseline for env B (gold: {base_gold if isinstance(base_gold, str) else 'ok'}; "
                f"wrong: {base_wrong if isinstance(base_wrong, str) else 'ok'}; gold from {source})",
                ANSWER_HINT,
            )
        evidence = [f"baseline on B, seed {seed}: gold -> {base_gold.describe()}; wrong -> {base_wrong.describe()}"]
        bad: list[str] = []

        def check(phase: str, answer: str | None, base: Transition) -> Transition | str:
            t = answer_b(answer, f"B: {phase}")
            if isinstance(t, str) or not _same_transition(t, base):
                got = t if isinstance(t, str) else t.describe()
                bad.append(f"{phase}: B -> {got}; baseline {base.describe()}")
            return t

        hostile = 0
        for canary in trap.canaries():
            for wrapping, action in s.answer_wrappings(canary.code):
                _play(s, seed, action, f"A: {canary.name}, {wrapping}", env=a)
                hostile += 1
        for label, text in setting_injections():
            _play(s, seed, s.answer(text), f"A: {label}", env=a)
            hostile += 1
        fired = trap.fired()
        check("gold after A's hostile answers", None, base_gold)
        check("wrong answer after A's hostile answers", WRONG_ANSWER, base_wrong)
        evidence.append(
            f"A sent {hostile} hostile answers (canaries, setting injections)"
            + (f"; canaries that ran: {'; '.join(fired[:4])}" if fired else "")
        )
        trap.undo_patches()

        bad_before_slow = len(bad)
        slow_action = s.answer(SLOW_ANSWER)
        slows = [_start_slow(a if i == 0 else envs.new(), seed, slow_action) for i in range(CONCURRENT_SLOW_ANSWERS)]
        limit, bound_source = s.grading_bound()
        wait_s = min(limit, s.settings.step_timeout_s)  # B is checked while they grade; they need not finish
        s.waiting(f"{len(slows)} slow answers starting on other instances")
        for slow in slows:
            slow.started.wait(wait_s)
        time.sleep(0.2)  # let the slow answers reach the grader (a queue, a worker) before B answers
        # B shares the grader: it may wait for one slow answer to end (each of them is held to `limit`), then
        # takes its own bound. Its verdict must not change either way; that is what is checked.
        with s.call_bound(wait_s + limit, f"one slow answer's {wait_s:g} s + B's own {limit:g} s ({bound_source})"):
            t = check(
                f"gold while {len(slows)} slow answers ({SLOW_ANSWER}) are graded by other instances", None, base_gold
            )
        overlapped = sum(1 for slow in slows if slow.thread is not None and slow.thread.is_alive())
        s.waiting(f"{len(slows)} slow answers finishing on other instances")
        end = time.perf_counter() + wait_s
        for slow in slows:
            assert slow.thread is not None
            slow.thread.join(max(0.0, end - time.perf_counter()))
            if slow.thread.is_alive():
                envs.busy.add(id(slow.env))  # still grading: left to its thread, never closed under it
        took = t.duration_s if isinstance(t, Transition) else float("nan")
        evidence.append(
            f"B's gold during the slow answers -> {t.describe() if isinstance(t, Transition) else t} "
            f"in {took:.2f} s; {overlapped} of {len(slows)} slow answers still grading when it returned; "
            "slow answers: "
            + ", ".join(
                f"{slow.outcome} in {slow.duration_s:.2f} s"
                if slow.duration_s is not None
                else f"{slow.outcome} after {wait_s:.2f} s ({bound_source})"
                for slow in slows
            )
        )
        if len(bad) > bad_before_slow:
            bad.append(evidence[-1])
    finally:
        trap.close()
        envs.close()
    if bad:
        return _failed("another env's hostile answers changed env B's verdicts", bad + evidence)
    return _passed("env B's verdicts and rewards matched its baseline throughout", evidence)

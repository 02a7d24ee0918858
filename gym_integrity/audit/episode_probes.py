"""The probes that play an episode to its end and read what came back: the gold is paid, once, nothing runs after the end, no gold leaks, the episode is bounded."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from gym_integrity.audit.adapters import revealed_answers, tool_call_action
from gym_integrity.audit.leak_hits import LeakHits
from gym_integrity.audit.leak_scan import scan_episode
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
from gym_integrity.audit.session import WRONG_ANSWER, Session, short

__all__ = []


@_probe(
    "gold_answer_scored",
    "audit precondition",
    "The gold answer, wrapped by the answer adapter, is rewarded: the auditor can answer this env, "
    "so the probes that answer with the gold are meaningful.",
)
def gold_answer_scored(s: Session) -> ProbeResult:
    evidence: list[str] = []
    bad: list[str] = []
    for seed in _seeds(s, 2):
        golds, source, _, info = s.gold_or_revealed(seed)
        if not golds:
            return _no_gold(source)
        gold = golds[0]
        taken = s.play_to_end(lambda i: s.answer(gold), 1, f"answer gold {short(gold, 40)}")  # noqa: B023  # played in this iteration
        t = taken[-1]
        s.reset(seed)
        wrong = s.step(s.answer(WRONG_ANSWER), f"answer {WRONG_ANSWER!r}")
        line = (
            f"seed {seed}: gold {short(golds[0], 40)} ({source}) -> {t.describe()}; wrong answer -> {wrong.describe()}"
        )
        (evidence if _is_scored(t, wrong) else bad).append(line)
    if bad:
        return _failed(
            "the gold answer was not rewarded above a wrong one: the grader (or the auditor's answer "
            "adapter) does not tell them apart",
            bad + evidence,
        )
    return _passed("the gold answer is rewarded above a wrong one", evidence)


# ----------------------------------------------------------------------------------------------------------------
@_probe(
    "rescore_after_end",
    "I2 scored once",
    "End an episode with a wrong answer, then answer again with the gold answer (privileged hook) and "
    "with anything the env revealed; end one with the gold and answer wrong after. "
    "The reward and verdict after the end must not change.",
)
def rescore_after_end(s: Session) -> ProbeResult:
    evidence: list[str] = []
    bad: list[str] = []
    with_gold, ended, source = 0, 0, ""
    for seed in _seeds(s, 2):
        golds, source, _, info = s.gold_or_revealed(seed)
        with_gold += bool(golds)
        taken = s.finish_wrong(info)
        final = taken[-1]
        if not final.ended:
            evidence.append(f"seed {seed}: no end after {len(taken)} wrong answers (see step_budget)")
            continue
        ended += 1
        revealed = [r for r in revealed_answers(final.info, final.obs) if r not in golds]
        # The first gold is the answer (any after it, such as a reference solution, are for the leak search).
        attempts = [(f"gold {short(g, 40)} ({source})", g) for g in golds[:1]]
        attempts += [(f"revealed {short(r, 40)}", r) for r in revealed[:2]]
        attempts += [("a different wrong answer", "-1")]
        for label, answer in attempts:
            line, ok = _after_end(s, final, s.answer(answer), label)
            (evidence if ok else bad).append(f"seed {seed}: {line}")
        if golds:
            obs, info = s.reset(seed)
            gold = golds[0]
            first = s.play_to_end(lambda i: s.answer(gold), s.step_bound(s.budget(info)), "answer gold")  # noqa: B023  # played in this iteration
            final = first[-1]
            if final.ended:
                line, ok = _after_end(
                    s, final, s.answer(WRONG_ANSWER), "a wrong answer (the episode ended on the gold)"
                )
                (evidence if ok else bad).append(f"seed {seed}: {line}")
    if bad:
        return _failed("steps after the end were scored again", bad)
    if not ended:  # an end never reached is step_budget's failure; there was nothing here to test
        return _not_applicable("no episode ended, so there was no end to test (see step_budget)")
    if not with_gold:
        # Wrong answers after a wrong end prove nothing: re-scoring pays only an answer that is right.
        return _no_gold(
            source,
            [
                "only wrong answers were sent after the end; the exploit (the gold answer "
                "after a wrong end) was not tried"
            ]
            + evidence,
        )
    return _passed("answers after the end changed nothing", evidence)


# ----------------------------------------------------------------------------------------------------------------
_SKIP_ATTRS = frozenset(
    {
        "env",
        "_env",
        "np_random",
        "_np_random",
        "_np_random_seed",
        "spec",
        "_cached_spec",
        "observation_space",
        "action_space",
        "_observation_space",
        "_action_space",
        "metadata",
        "_metadata",
        "render_mode",
        "step",
    }
)


def _summary(value: Any, depth: int = 0) -> Any:
    """A bounded, comparable picture of a value: primitives as such, containers by length and first items."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return value if len(value) <= 200 else (len(value), hash(value))
    if isinstance(value, (bytes, bytearray)):
        return (len(value), hash(bytes(value)))
    if isinstance(value, Mapping):
        if depth >= 2:
            return ("dict", len(value))
        return ("dict", len(value), tuple((str(k), _summary(v, depth + 1)) for k, v in list(value.items())[:32]))
    if isinstance(value, (list, tuple, set, frozenset)):
        if depth >= 2 or isinstance(value, (set, frozenset)):
            return (type(value).__name__, len(value))
        return (type(value).__name__, len(value), tuple(_summary(v, depth + 1) for v in list(value)[-16:]))
    if depth == 0 and dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (
            type(value).__name__,
            tuple((f.name, _summary(getattr(value, f.name, None), depth + 1)) for f in dataclasses.fields(value)),
        )
    if depth == 0 and hasattr(value, "__dict__") and not callable(value):
        try:
            items = [(k, v) for k, v in vars(value).items() if not callable(v)][:64]
        except TypeError:
            return type(value).__name__
        return (type(value).__name__, tuple((k, _summary(v, depth + 1)) for k, v in items))
    return type(value).__name__


def _chain(env: gym.Env) -> list[Any]:
    """Every layer from the outermost wrapper down to the task."""
    chain: list[Any] = []
    current = env
    while isinstance(current, gym.Wrapper):
        chain.append(current)
        current = current.env
    chain.append(current)
    return chain


def _fingerprint(chain: list[Any], skip: set[int]) -> dict[tuple[int, str], Any]:
    """A bounded picture of the state of every layer of ``chain`` but those at the indices in ``skip``."""
    picture = {}
    for index, layer in enumerate(chain):
        if index in skip:
            continue
        try:
            attributes = list(vars(layer).items())
        except TypeError:  # __slots__ classes have no __dict__: their state is not visible here
            continue
        for name, value in attributes:
            if name in _SKIP_ATTRS or callable(value) and not hasattr(value, "__dict__"):
                continue
            picture[(index, f"{type(layer).__name__}.{name}")] = _summary(value)
    return picture


class _StepCounter:
    """Counts the calls that reach each layer's ``step`` (installed on the instances, removed after)."""

    def __init__(self, chain: list[Any]) -> None:
        self.chain = chain
        self.calls = [0] * len(chain)
        self.installed = [False] * len(chain)
        self._previous: dict[int, Any] = {}
        for index, layer in enumerate(chain):
            try:
                own = vars(layer)
            except TypeError:  # no __dict__ (__slots__): this layer's count stays unknown
                continue
            if "step" in own:
                self._previous[index] = own["step"]
            original = layer.step

            def counted(action: Any, _index: int = index, _original: Any = original) -> Any:
                self.calls[_index] += 1
                return _original(action)

            try:
                layer.step = counted
            except (AttributeError, TypeError):
                continue
            self.installed[index] = True

    def remove(self) -> None:
        for index, layer in enumerate(self.chain):
            if not self.installed[index]:
                continue
            if index in self._previous:
                layer.step = self._previous[index]
            else:
                vars(layer).pop("step", None)

    def reached_wrappers(self) -> set[int]:
        """The wrappers the steps reached: the caller's side of the end. Each keeps its own bookkeeping: the
        one that stopped them counts what it ignored (TerminalFreeze's ``ignored_steps``), gym.make's checkers
        note what they saw (PassiveEnvChecker), wherever they sit in the chain."""
        return {i for i in range(len(self.chain) - 1) if self.installed[i] and self.calls[i] > 0}

    def stoppers(self) -> list[int]:
        """Wrappers that stopped steps: reached more often than the layer below them."""
        return [
            i
            for i in range(len(self.chain) - 1)
            if self.installed[i] and self.installed[i + 1] and self.calls[i] > self.calls[i + 1]
        ]


@_probe(
    "inert_after_end",
    "I2 scored once",
    "After the end, a tool call, an answer and garbage run nothing: the task's step is not reached (or ignores "
    "them), its counters and state are unchanged, the transition stays the final one.",
)
def inert_after_end(s: Session) -> ProbeResult:
    seed = s.settings.seeds[0]
    golds, _, _, info = s.gold_or_revealed(seed)
    taken = s.finish_wrong(info)
    final = taken[-1]
    if not final.ended:
        return _not_applicable(f"the episode did not end within {len(taken)} steps (see step_budget)")
    chain = _chain(s.env)
    # The outermost layer is the caller's side of the env; the task and every layer the steps do not reach must
    # stay put.
    outer = {0} if len(chain) > 1 else set()
    before = _fingerprint(chain, outer)
    counter = _StepCounter(chain)
    actions = [
        ("a tool call", tool_call_action(s.env)),
        ("a non-answer", s.non_answer()),
        (
            "the gold answer" if golds else "an answer (no gold available: a wrong one)",
            s.answer(golds[0] if golds else "-1"),
        ),
        ("an empty action", ""),
    ]
    bad: list[str] = []
    evidence: list[str] = []
    try:
        for label, action in actions:
            line, ok = _after_end(s, final, action, label)
            (evidence if ok else bad).append(line)
    finally:
        counter.remove()
    # A wrapper the steps reached may note them (the one that stopped them counts them); the task, and every layer
    # they were stopped from reaching, may not change.
    excused = outer | counter.reached_wrappers()
    after = _fingerprint(chain, excused)
    changed = [
        f"{key[1]}: {short(before.get(key), 50)} -> {short(after.get(key), 50)}"
        for key in sorted(set(before) | set(after))
        if key[0] not in excused and before.get(key) != after.get(key)
    ]
    task = len(chain) - 1
    reached = (
        f"{counter.calls[task]} of {len(actions)} post-end actions reached {type(chain[task]).__name__}.step"
        if counter.installed[task]
        else "calls to the task's step not counted (no instance __dict__)"
    )
    stoppers = ", ".join(
        f"{type(chain[i]).__name__} ({counter.calls[i] - counter.calls[i + 1]})" for i in counter.stoppers()
    )
    if stoppers:
        reached += f"; stopped by {stoppers}"
    if changed:
        bad.append(f"{reached}; state changed: " + "; ".join(changed[:6]))
    if bad:
        return _failed("the env acted on steps after the end", bad + evidence)
    evidence.insert(0, reached + "; no state changed")
    return _passed("nothing ran after the end", evidence)


# ----------------------------------------------------------------------------------------------------------------
#: Seeds added at most, one at a time, while a short gold holds a fixed place with golds too few or too alike to
#: decide (LeakHits.undecided): a balanced yes/no gold needs about 7 episodes to stand at a place by chance <= 1%.
_EXTRA_EPISODES = 9


@_probe(
    "reference_leakage",
    "I1 no leak",
    "Gold answers and references, in several normalised forms (whitespace, LaTeX stripped, numeric value, "
    "sentences), are searched in obs, info (recursively), render(), repr(env), the spaces, the spec and error "
    "messages, at reset and at every step before the end (and at the end, for envs with the privileged hook).",
)
def reference_leakage(s: Session) -> ProbeResult:
    hits = LeakHits()
    sources = set()
    steps_checked = 0
    seeds = list(s.settings.seeds)
    extra: list[int] = []
    episode = 0
    while episode < len(seeds):
        source, steps = scan_episode(s, hits, episode, seeds[episode])
        sources.add(source)
        steps_checked += steps
        episode += 1
        if episode == len(seeds) and len(extra) < _EXTRA_EPISODES and hits.undecided():
            # A short gold at a fixed place, with golds so alike it could stand there by chance: a listed option or
            # a reported score cannot be told from a leak until episodes with other golds are seen.
            extra.append(max(seeds) + 1)
            seeds.append(extra[-1])
    if hits.episodes == 0:
        return _no_gold(source)
    leaks, coincidences = hits.verdict()
    checked = f"{hits.episodes} episodes, {steps_checked} steps; gold from: {', '.join(sorted(sources))}"
    if extra:
        checked += f"; seeds {', '.join(map(str, extra))} added to see more golds at a fixed place"
    if leaks:
        return _failed(f"gold answers visible to the agent ({checked})", leaks + coincidences)
    return _passed(f"no gold answer found ({checked})", coincidences)


# ----------------------------------------------------------------------------------------------------------------
@_probe(
    "step_budget",
    "I3 bounded",
    "An episode that never answers ends, with truncated=True if it reaches the step budget; a gold answer on "
    "the last allowed step is scored (terminated=True, truncated=False).",
)
def step_budget(s: Session) -> ProbeResult:
    seed = s.settings.seeds[0]
    obs, info = s.reset(seed)
    budget = s.budget(info)
    bound = s.step_bound(budget)
    non_answer = s.non_answer()
    taken = s.play_to_end(lambda i: non_answer, bound, "a non-answer")
    last = taken[-1]
    bad, evidence = [], []
    declared = f"declared step_budget={budget}" if budget is not None else "no declared step budget"
    if not last.ended:
        bad.append(
            f"seed {seed}: no end after {len(taken)} steps that never answer ({declared}); last: {last.describe()}"
        )
    elif budget is not None and len(taken) > budget:
        bad.append(f"seed {seed}: ended only at step {len(taken)} > step budget {budget}")
    elif budget is not None and len(taken) == budget and not last.terminated and not last.truncated:
        bad.append(f"seed {seed}: reached the step budget without truncated=True")
    else:
        how = "truncated" if last.truncated else "terminated by the env (the non-answer was graded as an attempt)"
        evidence.append(f"seed {seed}: a non-answering episode ended at step {len(taken)}, {how} ({declared})")

    golds, source, obs, info = s.gold_or_revealed(seed)
    if budget is None or not golds:
        why = "no declared step budget" if budget is None else f"no gold answer ({source})"
        evidence.append(f"last-step answer not checked: {why}")
    else:
        first = s.step(s.answer(golds[0]), "gold on the first step")
        s.reset(seed)
        golds = s.gold() or golds  # the hook's answer for this very episode, even if seeding is broken
        early = s.play_to_end(lambda i: non_answer, budget - 1, "a non-answer") if budget > 1 else []
        if early and early[-1].ended:
            evidence.append(
                f"last-step answer not checked: the env ended after {len(early)} non-answers, "
                f"before its budget of {budget}"
            )
        else:
            t = s.step(s.answer(golds[0]), f"gold on step {budget} of {budget}")
            line = (
                f"seed {seed}: gold on the last allowed step ({budget}) -> {t.describe()}; "
                f"on the first step -> {first.describe()}"
            )
            same = t.verdict == first.verdict if first.verdict is not None else _same_reward(t.reward, first.reward)
            if not t.terminated or t.truncated:
                bad.append(f"{line}: expected terminated=True, truncated=False")
            elif not same:
                bad.append(f"{line}: not scored like the same answer on the first step")
            else:
                evidence.append(line)
    if bad:
        return _failed("the step budget is not enforced as declared", bad + evidence)
    return _passed("every episode ends; the last allowed step is scored", evidence)

"""The probe registry: how a probe is declared (``@_probe``), the report-order table ``PROBES``, and the result builders every probe module shares.

A probe module declares each probe with ``@_probe(name, invariant, description)``
above a function ``(Session) -> ProbeResult``; importing the module registers
it. :mod:`gym_integrity.audit.probes` imports the probe modules in report order.
This module imports no probe module, so every probe module can import it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from gym_integrity.audit.adapters import no_gold_hint, no_gold_reason
from gym_integrity.audit.report import ProbeResult, Status
from gym_integrity.audit.session import Session, Transition, short

__all__ = ["Probe", "PROBES", "probe_names"]

_EPS = 1e-9


@dataclass(frozen=True)
class Probe:
    """A named check: ``run(session)`` plays episodes and returns its report row."""

    name: str
    invariant: str
    description: str
    run: Callable[[Session], ProbeResult]


PROBES: dict[str, Probe] = {}


def _probe(name: str, invariant: str, description: str) -> Callable[[Callable[[Session], ProbeResult]], Callable]:
    def register(fn: Callable[[Session], ProbeResult]) -> Callable[[Session], ProbeResult]:
        PROBES[name] = Probe(name, invariant, description, fn)
        return fn

    return register


def probe_names() -> list[str]:
    """Every probe's name, in report order.

    >>> probe_names()[:3]
    ['gold_answer_scored', 'rescore_after_end', 'inert_after_end']
    """
    return list(PROBES)


def _passed(summary: str, evidence: Iterable[str] = ()) -> ProbeResult:
    return ProbeResult("", Status.PASSED, summary, list(evidence))


def _failed(summary: str, evidence: Iterable[str]) -> ProbeResult:
    return ProbeResult("", Status.FAILED, summary, list(evidence))


def _not_applicable(reason: str) -> ProbeResult:
    return ProbeResult("", Status.NOT_APPLICABLE, reason, [], reason=reason)


def _not_run(reason: str, how_to_enable: str | None, evidence: Iterable[str] = ()) -> ProbeResult:
    """The probe applies but could not run: the report cannot pass until ``how_to_enable`` is done."""
    return ProbeResult(
        "", Status.NOT_RUN, f"not run: {reason}", list(evidence), reason=reason, how_to_enable=how_to_enable
    )


def _no_gold(source: str, evidence: Iterable[str] = ()) -> ProbeResult:
    return _not_run(no_gold_reason(source), no_gold_hint(source), evidence)


def _seeds(s: Session, n: int) -> tuple[int, ...]:
    return s.settings.seeds[:n]


def _same_reward(a: float, b: float) -> bool:
    return a == b or abs(a - b) <= _EPS


def _is_scored(t: Transition, wrong: Transition | None) -> bool:
    """The gold answer counts as scored if paid more than a wrong answer (and, with verdicts, graded correct)."""
    if wrong is not None and wrong.verdict == "correct":
        return False  # a grader that calls a wrong answer correct cannot tell anything apart
    above = t.reward > (wrong.reward + _EPS if wrong is not None else 0.0)
    if t.verdict is not None:
        return t.verdict == "correct" or (t.verdict == "partial" and above)
    return above


def _post_end_problem(final: Transition, t: Transition) -> str | None:
    if not t.ended:
        return "the episode resumed (terminated and truncated both False)"
    if t.verdict is not None and final.verdict is not None and t.verdict != final.verdict:
        return f"re-scored: verdict {final.verdict} -> {t.verdict}"
    if not (_same_reward(t.reward, final.reward) or _same_reward(t.reward, 0.0)):
        return f"re-scored: reward {final.reward:g} -> {t.reward:g}"
    return None


def _after_end(s: Session, final: Transition, action: Any, label: str) -> tuple[str, bool]:
    """Step after the end: ``(evidence line, ok)``. An env that refuses (raises) after its end scores nothing: ok."""
    try:
        t = s.step(action, label)
    except Exception as exc:
        return (
            f"after the end ({final.describe()}), {label} -> refused: {type(exc).__name__}: {short(str(exc), 80)}",
            True,
        )
    line = f"after the end ({final.describe()}), {label} -> {t.describe()}"
    problem = _post_end_problem(final, t)
    return (f"{line}: {problem}", False) if problem else (line, True)

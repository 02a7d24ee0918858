"""A probe's view of one env: timed, recorded reset/step calls, the step budget, gold answers, playing to the end."""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from gym_integrity.audit.adapters import (
    AnswerFn,
    GoldFn,
    answer_wrappings,
    non_answer_action,
    privileged_gold,
    revealed_answers,
)
from gym_integrity.audit.waits import LOAD_STRETCH, allowance, thread_wait_s
from gym_integrity.checks import check_int, check_number, check_type, config_from, is_number

__all__ = ["AuditSettings", "Transition", "Session", "short", "WRONG_ANSWER"]

#: An answer no task we know accepts: numeric (tool envs parse numbers) and absurd.
WRONG_ANSWER = "-987654.321"


@dataclass(frozen=True)
class AuditSettings:
    """How hard the auditor works.

    Attributes:
        seeds: Reset seeds the probes play (more seeds: more episodes, longer audit).
        probe_timeout_s: Bound on one probe; past it the probe fails as a hang (wall time less the time the
            probe's thread waited for a CPU).
        step_timeout_s: A single ``reset``/``step`` slower than this fails its probe (its wall time less the
            time its thread waited for a CPU held by other processes: ``audit/waits.py``).
        max_steps: Steps the auditor takes before calling an episode endless, for an
            env that declares no ``step_budget`` (one that does gets budget + 2).
        grading_slack_s: Least slack over an env's declared ``grading_time_bound_s``
            before a grading step counts as too slow (the slack is the larger of
            this and half the bound: a loaded machine is slower than a quiet one).
        deep: Run the search probes (``audit/search.py``) for hundreds of episodes
            instead of dozens (minutes, not seconds; ``gym-integrity audit --deep``).
    """

    seeds: tuple[int, ...] = (0, 1, 2)
    probe_timeout_s: float = 30.0
    step_timeout_s: float = 10.0
    max_steps: int = 64
    grading_slack_s: float = 1.0
    deep: bool = False

    def __post_init__(self) -> None:
        self.validate()

    @classmethod
    def from_value(cls, value: AuditSettings | Mapping[str, Any] | None) -> AuditSettings:
        """Settings from AuditSettings, a dict of its fields (unknown keys: ``TypeError``) or None (defaults)."""
        return config_from(cls, value)

    def validate(self) -> None:
        """Check every field: a wrong type is a ``TypeError``, a wrong value a ``ValueError``, both naming it."""
        check_type("AuditSettings.seeds", self.seeds, tuple, "a non-empty tuple of int")
        for index, seed in enumerate(self.seeds):
            check_int(f"AuditSettings.seeds[{index}]", seed)
        if not self.seeds:
            raise ValueError("AuditSettings.seeds must be a non-empty tuple of int, got ()")
        for name in ("probe_timeout_s", "step_timeout_s", "grading_slack_s"):
            check_number(f"AuditSettings.{name}", getattr(self, name), low=0, low_open=True, unit="seconds")
        check_int("AuditSettings.max_steps", self.max_steps, low=1)
        check_type("AuditSettings.deep", self.deep, bool, "True or False")


def short(value: Any, limit: int = 80) -> str:
    """A one-line repr of ``value`` cut to ``limit`` characters, for evidence lines."""
    if isinstance(value, str) and len(value) > limit:
        text = repr(value[: limit // 2]) + f"...(+{len(value) - limit // 2} chars)"
    else:
        text = repr(value)
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit + 40 else text[: limit + 37] + "..."


@dataclass
class Transition:
    """What one ``step()`` returned, plus how long it took and the action's label."""

    label: str
    obs: Any
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]
    duration_s: float
    waited_s: float = 0.0  # of duration_s, the time the calling thread waited for a CPU (other processes' load)

    def past(self, bound: float) -> bool:
        """Whether the step took longer than ``bound``, less its wait for a CPU (up to ``waits.LOAD_STRETCH``)."""
        return self.duration_s > bound + allowance(self.waited_s, bound)

    @property
    def ended(self) -> bool:
        return bool(self.terminated or self.truncated)

    @property
    def verdict(self) -> str | None:
        verdict = self.info.get("verdict") if isinstance(self.info, Mapping) else None
        return None if verdict is None else str(verdict)

    def describe(self) -> str:
        verdict = f" ({self.verdict})" if self.verdict else ""
        flags = "terminated" if self.terminated else "truncated" if self.truncated else "running"
        return f"reward {self.reward:g}{verdict}, {flags}"


def close_quietly(env: gym.Env) -> None:
    """``env.close()``, any exception swallowed: closing is best effort, and the report already says what
    went wrong with an env that fails to close."""
    try:
        env.close()
    except Exception:
        pass


@dataclass
class Session:
    """One probe's env plus the auditor's helpers; every call is timed and the current one is named for hang reports."""

    env: gym.Env
    settings: AuditSettings
    answer_fn: AnswerFn
    gold_fn: GoldFn
    new_env: Callable[[], gym.Env] | None = None
    on_call: Callable[[str], None] | None = None  # told the name of every call before it is made (hang reports)
    current: str = "(not started)"
    episodes: int = 0
    steps: int = 0
    slow_calls: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: A wider bound for the calls of a phase that is allowed to wait (see :meth:`call_bound`), and why.
    _wider_bound: tuple[float, str] | None = None

    # -- calls ---------------------------------------------------------------------------------------------------
    def _timed(self, what: str, fn: Callable[[], Any]) -> tuple[Any, float, float]:
        """``fn()``, its wall time and the part of it this thread waited for a CPU (``audit/waits.py``). A call is
        slow when its wall time less that wait passes the bound: other processes' load is not the env's time."""
        self.current = what
        if self.on_call is not None:
            self.on_call(what)
        start, waited_before = time.perf_counter(), thread_wait_s()
        out = fn()
        duration, waited_after = time.perf_counter() - start, thread_wait_s()
        waited = waited_after - waited_before if waited_before is not None and waited_after is not None else 0.0
        waited = min(max(waited, 0.0), duration)
        bound, why = self._wider_bound or (self.settings.step_timeout_s, "step_timeout_s")
        load = f", {duration - waited:.1f} s of it not waiting for a CPU" if waited >= 0.05 else ""
        if duration > bound + allowance(waited, bound):
            stretched = f", and past {LOAD_STRETCH:g} times it however loaded" if duration - waited <= bound else ""
            self.slow_calls.append(f"{what} took {duration:.1f} s{load} (bound {bound:g} s: {why}{stretched})")
        elif duration > bound and len(self.notes) < 8:  # said, not hidden: the load's allowance was used
            self.notes.append(f"{what} took {duration:.1f} s{load}: within the bound ({bound:g} s: {why}) net of load")
        return out, duration, waited

    @contextlib.contextmanager
    def call_bound(self, seconds: float, why: str) -> Iterator[None]:
        """Bound the calls made inside by ``seconds`` instead of ``step_timeout_s`` (never less than it).

        For a phase in which waiting is part of fair sharing: an env's step that
        queues behind other instances' slow gradings may wait for one of them to
        end, then takes its own bound.
        """
        previous = self._wider_bound
        self._wider_bound = (max(seconds, self.settings.step_timeout_s), why)
        try:
            yield
        finally:
            self._wider_bound = previous

    def waiting(self, what: str) -> None:
        """Name a wait that is not a call (threads joined, say), for hang reports; bound it by ``step_timeout_s``."""
        self.current = what
        if self.on_call is not None:
            self.on_call(what)

    def reset(self, seed: int | None = None, env: gym.Env | None = None) -> tuple[Any, dict[str, Any]]:
        env = env or self.env
        (obs, info), _, _ = self._timed(f"reset(seed={seed})", lambda: env.reset(seed=seed))
        self.episodes += 1
        return obs, info

    def step(self, action: Any, label: str | None = None, env: gym.Env | None = None) -> Transition:
        env = env or self.env
        label = label or short(action, 60)
        out, duration, waited = self._timed(f"step({label})", lambda: env.step(action))
        self.steps += 1
        obs, reward, terminated, truncated, info = out
        try:
            reward_f = float(reward)
        except (TypeError, ValueError):
            reward_f = math.nan
        info = info if isinstance(info, dict) else {}
        return Transition(label, obs, reward_f, bool(terminated), bool(truncated), info, duration, waited)

    # -- actions -------------------------------------------------------------------------------------------------
    def answer(self, text: str) -> Any:
        return self.answer_fn(self.env, text)

    def answer_wrappings(self, text: str) -> list[tuple[str, Any]]:
        """Every way the adapter can submit ``text``: ``(label, action)``, the adapter's own first."""
        return answer_wrappings(self.env, text, self.answer_fn)

    def non_answer(self) -> Any:
        return non_answer_action(self.env)

    # -- what the auditor knows ------------------------------------------------------------------------------------
    def gold(self) -> list[str] | None:
        """Gold answers of the current episode through the privileged hook (None: the env has none)."""
        self.current = "gold_answers()"
        return self.gold_fn(self.env)

    def budget(self, reset_info: Mapping[str, Any] | None = None) -> int | None:
        """The step budget of the current episode: the stack's info, else the env's declared ``step_budget``."""
        integrity = (reset_info or {}).get("integrity")
        if isinstance(integrity, Mapping) and isinstance(integrity.get("step_budget"), int):
            return int(integrity["step_budget"])
        try:
            budget = self.env.get_wrapper_attr("step_budget")
        except AttributeError:
            budget = getattr(self.env.unwrapped, "step_budget", None)
        if isinstance(budget, int) and not isinstance(budget, bool) and budget >= 1:
            return budget
        return None

    def grading_bound(self) -> tuple[float, str]:
        """How long one grading step may take, and where that came from.

        The env's declared ``env.unwrapped.grading_time_bound_s`` (the longest one
        grading step takes on a quiet machine) plus slack, else the session's
        ``step_timeout_s``.
        """
        declared: Any = getattr(self.env.unwrapped, "grading_time_bound_s", None)
        if is_number(declared) and math.isfinite(declared) and declared > 0:
            slack = max(self.settings.grading_slack_s, 0.5 * declared)
            return float(declared) + slack, f"declared grading_time_bound_s={declared:g} s + {slack:g} s slack"
        if declared is not None:
            self.notes.append(
                f"grading_time_bound_s={declared!r} is not a positive number; "
                f"used step_timeout_s={self.settings.step_timeout_s:g} s"
            )
        return (
            self.settings.step_timeout_s,
            f"no declared grading_time_bound_s: step_timeout_s={self.settings.step_timeout_s:g} s",
        )

    def step_bound(self, budget: int | None) -> int:
        """How many steps the auditor takes before calling an episode endless."""
        return budget + 2 if budget is not None else self.settings.max_steps

    def play_to_end(self, action_fn: Callable[[int], Any], bound: int, label: str | None = None) -> list[Transition]:
        """Step ``action_fn(i)`` until the episode ends or ``bound`` steps; the transitions taken."""
        taken: list[Transition] = []
        for i in range(bound):
            t = self.step(action_fn(i), label)
            taken.append(t)
            if t.ended:
                break
        return taken

    def finish_wrong(self, reset_info: Mapping[str, Any] | None = None, wrong: str = WRONG_ANSWER) -> list[Transition]:
        """Answer ``wrong`` until the episode ends (multi-attempt envs need several)."""
        action = self.answer(wrong)
        return self.play_to_end(lambda i: action, self.step_bound(self.budget(reset_info)), f"answer {wrong!r}")

    def gold_or_revealed(self, seed: int) -> tuple[list[str], str, Any, dict[str, Any]]:
        """Gold answers for ``seed``: the privileged hook, else what a finished episode reveals.

        Returns ``(answers, source, obs, info)``: the source names where the
        answers came from; ``obs, info`` are those of a fresh ``reset(seed)``,
        where the env is left either way.
        """
        obs, info = self.reset(seed)
        gold = self.gold()
        if gold is not None:
            return gold, "privileged hook gold_answers()", obs, info
        taken = self.finish_wrong(info)
        revealed: list[str] = []
        if taken:
            revealed = revealed_answers(taken[-1].info, taken[-1].obs)
        obs, info = self.reset(seed)
        if revealed:
            return revealed, "revealed by the env at the end", obs, info
        return [], "none (no privileged hook, nothing revealed)", obs, info


def default_gold_fn(env: gym.Env) -> list[str] | None:
    return privileged_gold(env)

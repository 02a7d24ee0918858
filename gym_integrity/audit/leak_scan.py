"""What ``reference_leakage`` searches: the surfaces an agent (or a harness showing ``info``) can read, one
episode's scan of them, and the weighing of what was found (:class:`~gym_integrity.audit.leak_hits.LeakHits`)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from gym_integrity.audit.leak_hits import LeakHits, gold_places, short_word_match
from gym_integrity.audit.leaks import find_in_text, walk_strings
from gym_integrity.audit.session import WRONG_ANSWER, Session, short

__all__ = ["scan_episode"]

_BOOKKEEPING = {"attempt", "integrity.steps", "integrity.step_budget", "integrity.ignored_steps"}


def _surfaces(s: Session, phase: str, obs: Any, info: Any) -> list[tuple[str, str]]:
    out = [(f"obs@{phase}" + (f".{p}" if p else ""), text) for p, text in walk_strings(obs)]
    # The stack's own step counts are no item's data: a gold "1" is not leaked by steps=1.
    out += [(f"info@{phase}:{p}", text) for p, text in walk_strings(info) if p not in _BOOKKEEPING]
    try:
        rendered = s.env.render()
    except Exception as exc:  # render may refuse a mode; its message is a surface too
        rendered = f"{type(exc).__name__}: {exc}"
    out += [(f"render@{phase}", text) for _, text in walk_strings(rendered)]
    return out


_STATIC = {"repr(env)", "str(env)", "repr(unwrapped)", "spaces", "spec", "unwrapped.spec"}


def _static_surfaces(env: gym.Env) -> list[tuple[str, str]]:
    out = [
        ("repr(env)", repr(env)),
        ("str(env)", str(env)),
        ("repr(unwrapped)", repr(env.unwrapped)),
        ("spaces", f"{env.observation_space!r} {env.action_space!r}"),
    ]
    for name, spec in (("spec", env.spec), ("unwrapped.spec", env.unwrapped.spec)):
        if spec is not None:
            out.append((name, repr(spec)))
    return out


def _scan(
    hits: LeakHits,
    episode: int,
    seed: int,
    golds: list[str],
    surfaces: list[tuple[str, str]],
    context: str | None = None,
    question: list[str] | None = None,
) -> None:
    """``question``: the reset observation's texts, cut out of what is shown after a step (None at reset)."""
    for location, text in surfaces:
        if question is not None and location not in _STATIC:
            for piece in question:  # the question shown again after a step is not news
                text = text.replace(piece, " ") if len(piece) >= 20 else text
        for gold in golds:
            for match in find_in_text(text, gold, context) or short_word_match(text, gold):
                where = text.find(match.needle) if match.needle in text else 0
                snippet = text[max(0, where - 30) : where + 50] if where >= 0 else text[:80]
                line = f"seed {seed}: {short(match.needle, 60)} ({match.form} match) in {short(snippet, 90)}"
                # A short match is weighed by its place (leak_hits); a strong one is evidence on its own.
                short_match = match.form == "number" or not match.strong
                hits.add(location, episode, match, line, gold_places(text, gold, match.form) if short_match else None)


def scan_episode(s: Session, hits: LeakHits, episode: int, seed: int) -> tuple[str, int]:
    """Play ``seed``'s episode with non-answers and wrong answers, scanning every surface at reset, at each step
    before the end, and at the end for envs with the privileged hook. Returns ``(gold source, steps played)``;
    an episode without a gold adds nothing to ``hits``."""
    golds, source, obs, info = s.gold_or_revealed(seed)
    if not golds:
        return source, 0
    hits.episodes += 1
    privileged = source.startswith("privileged")
    _scan(hits, episode, seed, golds, _surfaces(s, "reset", obs, info) + _static_surfaces(s.env))
    # After reset, the problem as shown is what the agent has: a reference restating it is no leak.
    context = obs if isinstance(obs, str) else None
    question = [text for _, text in walk_strings(obs)]
    for bad_action in (12345, None):  # wrong types: what the error message says
        try:
            t = s.step(bad_action, f"{bad_action!r} (wrong type)")
        except Exception as exc:
            _scan(hits, episode, seed, golds, [("error message", f"{type(exc).__name__}: {exc}")], context, question)
            continue
        phase = "end" if t.ended else "step"
        if phase == "step" or privileged:
            _scan(hits, episode, seed, golds, _surfaces(s, phase, t.obs, t.info), context, question)
        if t.ended:
            return source, 0
    budget = s.budget(info)
    non_answers = min(2, (budget or 3) - 1)
    bound = s.step_bound(budget)
    for k in range(bound):
        t = s.step(s.non_answer() if k < non_answers else s.answer(WRONG_ANSWER))
        phase = "end" if t.ended else "step"
        if phase == "step" or privileged:
            surfaces = _surfaces(s, phase, t.obs, t.info) + _static_surfaces(s.env)
            _scan(hits, episode, seed, golds, surfaces, context, question)
        if t.ended:
            return source, k + 1
    return source, bound

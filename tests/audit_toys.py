"""Toy text envs for testing the auditor: one correct, and one broken in each way a probe must catch."""

from __future__ import annotations

import random
import threading
from typing import Any

import gymnasium as gym

from gym_integrity.spaces import UnicodeText



class CorrectToy(gym.Env):
    """Single-turn addition: answer ``<answer>N</answer>``; reward 1.0 if right. Guards its own end.

    It keeps every invariant without any wrapper: steps after the end replay the
    final transition, nothing answer-bearing is shown, any ``str`` is graded.
    """

    metadata = {"render_modes": ["ansi"]}

    def __init__(self) -> None:
        self.observation_space = UnicodeText(10_000)
        self.action_space = UnicodeText(1_000_000, min_length=0)
        self.step_budget = 1
        self._a = self._b = 0
        self._final: tuple | None = None
        self.graded = 0

    # -- the parts the broken toys change -------------------------------------------------------------------------
    def _draw(self) -> tuple[int, int]:
        return int(self.np_random.integers(100, 1000)), int(self.np_random.integers(100, 1000))

    def _question(self) -> str:
        return f"What is {self._a} + {self._b}? Reply with <answer>N</answer>."

    def _reset_info(self) -> dict[str, Any]:
        return {"problem_id": f"add/{self._a}/{self._b}"}

    def _clear_end(self) -> None:
        self._final = None

    def _frozen(self) -> tuple | None:
        return self._final

    def _parse(self, action: str) -> str | None:
        # rfind, not a regex: a lazy ``<answer>(.*?)</answer>`` is quadratic on a megabyte of open tags.
        end = action.rfind("</answer>")
        start = action.rfind("<answer>", 0, end) if end >= 0 else -1
        return action[start + len("<answer>"): end].strip() if start >= 0 else None

    # -- gymnasium -------------------------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self._a, self._b = self._draw()
        self._clear_end()
        return self._question(), self._reset_info()

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if not isinstance(action, str):
            raise TypeError(f"action must be a str, got {type(action).__name__}")
        frozen = self._frozen()
        if frozen is not None:
            return frozen
        answer = self._parse(action)
        self.graded += 1
        correct = answer == self._gold()
        verdict = "correct" if correct else "no_answer" if answer is None else "incorrect"
        out = ("Graded.", 1.0 if correct else 0.0, True, False, {"verdict": verdict, "score": float(correct)})
        self._final = out
        return out

    def _gold(self) -> str:
        return str(self._a + self._b)

    def gold_answers(self) -> list[str]:
        """The privileged auditor hook."""
        return [self._gold()]

    def render(self) -> str:
        return self._question()


class RescoresAfterEnd(CorrectToy):
    """Grades every step, even after the end: answer wrong, then right, and be paid."""

    def _frozen(self) -> tuple | None:
        return None


class LeaksInInfo(CorrectToy):
    """Puts the answer in a debug entry of the reset info."""

    def _reset_info(self) -> dict[str, Any]:
        return {**super()._reset_info(), "debug": {"note": f"expected {self._a + self._b}"}}


class LeaksInObs(CorrectToy):
    """Writes the answer into the question."""

    def _question(self) -> str:
        return super()._question() + f" (grader key: {self._a + self._b})"


class NeverEnds(CorrectToy):
    """Only a correct answer ends the episode; it declares no step budget and has no limit."""

    def __init__(self) -> None:
        super().__init__()
        del self.step_budget

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = super().step(action)
        if reward < 1.0:
            self._final = None
            return "Try again.", 0.0, False, False, {"verdict": info["verdict"], "score": 0.0}
        return obs, reward, terminated, truncated, info


class CrashesOnEmpty(CorrectToy):
    """Raises on an empty reply (a model can always write one)."""

    def _parse(self, action: str) -> str | None:
        if not action.strip():
            raise ValueError("empty action")
        return super()._parse(action)


class HangsOnControlCharacters(CorrectToy):
    """Blocks on a NUL byte until ``release`` is set (a stand-in for a grader that never returns)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def _parse(self, action: str) -> str | None:
        if "\x00" in action:
            self.release.wait(60)
        return super()._parse(action)


class PaysScoreTags(CorrectToy):
    """Believes a score tag in the reply."""

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = super().step(action)
        if isinstance(action, str) and "<score>7</score>" in action:
            return obs, 1.0, terminated, truncated, info
        return obs, reward, terminated, truncated, info


class UnseededDraw(CorrectToy):
    """Draws problems from the global ``random`` module: equal seeds give different problems."""

    def _draw(self) -> tuple[int, int]:
        return random.randint(100, 999), random.randint(100, 999)


class ResetKeepsEnd(CorrectToy):
    """Forgets to clear its end state on reset: the next episode is frozen from the start."""

    def _clear_end(self) -> None:
        pass


class NoHook(CorrectToy):
    """A correct env without the privileged hook: it reveals the answer in info once the episode is over."""

    gold_answers = None  # type: ignore[assignment]  (no hook: the auditor must use what the env reveals)

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._final is not None:
            return self._final
        obs, reward, terminated, truncated, info = super().step(action)
        self._final = (obs, reward, terminated, truncated, {**info, "answer": self._gold()})
        return self._final


#: Each broken toy and the probes that must catch it (and no others).
BROKEN_TOYS: dict[type, set[str]] = {
    RescoresAfterEnd: {"rescore_after_end", "inert_after_end"},
    LeaksInInfo: {"reference_leakage"},
    LeaksInObs: {"reference_leakage"},
    NeverEnds: {"step_budget"},
    CrashesOnEmpty: {"garbage_actions"},
    PaysScoreTags: {"reward_self_dealing"},
    UnseededDraw: {"seeded_reset"},
    # A stale end also spoils the precondition probe, which answers twice in a row on one seed.
    ResetKeepsEnd: {"reset_clears_end", "gold_answer_scored"},
}


class HoldsTheGIL(CorrectToy):
    """On a NUL byte, a catastrophic regular expression: C code that never releases the GIL."""

    def _parse(self, action: str) -> str | None:
        if "\x00" in action:
            import re

            re.match(r"(a+)+$", "a" * 64 + "b")  # 2**64 backtracking steps
        return super()._parse(action)


class RefusesAfterEnd(CorrectToy):
    """Raises on a step after its end (like OrderEnforcing-style guards): nothing is scored, so it passes."""

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._final is not None:
            raise RuntimeError("episode over: call reset()")
        return super().step(action)

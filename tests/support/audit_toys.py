"""Toy text envs for testing the auditor: one correct, and one broken in each way a probe must catch."""

from __future__ import annotations

import random
import re
import threading
import time
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
        if options:  # refused before anything changes: a reset that raises leaves the episode as it was
            raise TypeError(f"CorrectToy.reset takes no options, got {sorted(options)}")
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
        score = 0.0 if answer is None else self._score(answer)
        verdict = ("no_answer" if answer is None else "correct" if score >= 1.0 else "partial" if score > 0.0
                   else "incorrect")
        out = ("Graded.", score, True, False, {"verdict": verdict, "score": score})
        self._final = out
        return out

    def _score(self, answer: str) -> float:
        """Exact match: 1.0 for the gold answer, 0.0 for anything else."""
        return 1.0 if answer == self._gold() else 0.0

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
    """Draws problems from the global ``random`` module: equal seeds give different problems.

    Seven-digit terms: a spray the search probes send cannot hit another draw's sum by luck."""

    def _draw(self) -> tuple[int, int]:
        return random.randint(10**6, 10**7), random.randint(10**6, 10**7)


class ResetKeepsEnd(CorrectToy):
    """Forgets to clear its end state on reset: the next episode is frozen from the start."""

    def _clear_end(self) -> None:
        pass


class ClearsEndBeforeCheckingReset(CorrectToy):
    """Clears its end state before checking reset's options: a reset that raises reopens the ended episode."""

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[str, dict[str, Any]]:
        self._clear_end()
        return super().reset(seed=seed, options=options)


class NoHook(CorrectToy):
    """A correct env without the privileged hook: it reveals the answer in info once the episode is over."""

    gold_answers = None  # type: ignore[assignment]  (no hook: the auditor must use what the env reveals)

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._final is not None:
            return self._final
        obs, reward, terminated, truncated, info = super().step(action)
        self._final = (obs, reward, terminated, truncated, {**info, "answer": self._gold()})
        return self._final


class RescoresQuietly(CorrectToy):
    """Grades every step, even after the end, keeping no state and reporting only a reward (GEM's pattern).

    Nothing after the end moves a counter or a verdict the auditor could see,
    and anything but the right answer is paid 0 again: only the gold answer
    after the end shows the exploit. With the hook the audit fails it; without
    one (below) it cannot tell, and must say so.
    """

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if not isinstance(action, str):
            raise TypeError(f"action must be a str, got {type(action).__name__}")
        answer = self._parse(action)
        return "Graded.", 0.0 if answer is None else self._score(answer), True, False, {}


class RescoresQuietlyNoHook(RescoresQuietly):
    """RescoresQuietly without the privileged hook, revealing nothing: the audit has no gold answer."""

    gold_answers = None  # type: ignore[assignment]


class SilentNoHook(CorrectToy):
    """A correct env without the hook that reveals nothing at the end: nothing fails, and nothing gold-based ran."""

    gold_answers = None  # type: ignore[assignment]


class ResetRaises(CorrectToy):
    """Cannot reset at all (a data file it needs is missing): the env never runs, so nothing can be audited."""

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[str, dict[str, Any]]:
        raise FileNotFoundError("problems.jsonl not found")


class DiesWhenBuilt(CorrectToy):
    """Takes its process down while being built (a native library that aborts on import, say)."""

    def __init__(self) -> None:
        import os

        os._exit(3)


# -- graders that can be gamed (the grader probes) ----------------------------------------------------------------
class SubstringCredit(CorrectToy):
    """reasoning-gym's old default scorer: ``len(gold) / len(answer)`` when the gold occurs anywhere in the answer.

    Sums of two numbers under 100, so that "1 2 3 ... 200" contains every gold.
    """

    def _draw(self) -> tuple[int, int]:
        return int(self.np_random.integers(1, 100)), int(self.np_random.integers(1, 100))

    def _score(self, answer: str) -> float:
        gold = self._gold()
        if answer == gold:
            return 1.0
        return len(gold) / len(answer) if gold in answer else 0.0


class PaysAnyAnswer(CorrectToy):
    """Pays 0.1 for any non-empty answer ("format credit"), 1.0 for the right one."""

    def _score(self, answer: str) -> float:
        return 1.0 if answer == self._gold() else 0.1 if answer.strip() else 0.0


class EvalScorer(CorrectToy):
    """Scores with Python ``eval`` in its own process, behind a guard against numeric powers (so towers cannot
    hang it): the answer's code runs, and the scorer is a class method that code can patch."""

    _POWER = re.compile(r"\d\s*\*\*")

    def _score(self, answer: str) -> float:
        return self.score_answer(answer)

    def score_answer(self, answer: str) -> float:
        expected = self._gold()
        if self._POWER.search(answer):
            return 0.0
        try:
            value = eval(answer)  # noqa: S307  (the exploit this toy exists to show)
        except Exception:
            return 0.0
        return 1.0 if str(value) == expected else 0.0


class HangsOnTowers(CorrectToy):
    """Declares a 0.05 s grading bound, then works on a Python power tower (``9**9**9**9``) for real.

    Its guard stops the big-integer arithmetic after 2 s of its thread's CPU time: bounded, far past the declared
    bound on any machine (a fixed amount of work finished within the 1.05 s bound on a fast, idle one), and as far
    past it on a loaded one, where the audit leaves out the time the step waited for a CPU (2 s of wall clock was
    then about 1 s of work).
    """

    grading_time_bound_s = 0.05
    _TOWER = re.compile(r"^\s*(\d+)\s*\*\*\s*\d+\s*\*\*")
    _WORK_S = 2.0

    def _score(self, answer: str) -> float:
        tower = self._TOWER.match(answer)
        if tower:
            stop = time.thread_time() + self._WORK_S
            while time.thread_time() < stop:
                pow(int(tower.group(1)), 9**6)  # a slice of the tower's value
            return 0.0
        return super()._score(answer)


class SharedScale(CorrectToy):
    """Every instance reads one class-level reward scale, and ``set scale=N`` in any answer changes it."""

    shared: dict[str, float] = {"scale": 1.0}
    _SET = re.compile(r"set\s+scale\s*=\s*([0-9.]+)")

    @classmethod
    def reset_shared(cls) -> None:
        cls.shared["scale"] = 1.0

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        command = self._SET.search(action) if isinstance(action, str) else None
        if command:
            self.shared["scale"] = float(command.group(1))
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward * self.shared["scale"], terminated, truncated, info


class SharedGradingQueue(CorrectToy):
    """Every instance grades through one queue (a class-level lock) whose 0.25 s deadline counts time spent
    waiting in it: an answer queued behind a slow one comes back ``timeout``, whatever it was.

    A boxed tower takes 0.8 s to grade (a sleep: the stand-in for a grading worker in another process, which,
    unlike Python arithmetic here, leaves the other threads running), within the declared 2 s bound.
    """

    grading_time_bound_s = 2.0
    queue = threading.Lock()
    _DEADLINE_S = 0.25

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._final is not None:
            return self._final
        if not self.queue.acquire(timeout=self._DEADLINE_S):
            self._final = ("Timed out.", 0.0, True, False, {"verdict": "timeout", "score": 0.0})
            return self._final
        try:
            if isinstance(action, str) and "9^{9^{9^{9}}}" in action:
                time.sleep(0.8)
            return super().step(action)
        finally:
            self.queue.release()

# -- the pay probes: both sides of the reward ------------------------------------------------------------------------
class YesNoToy(CorrectToy):
    """Is a three-digit number even? Strict: 1.0 for the right 'yes'/'no' only. Half the items are each."""

    def _draw(self) -> tuple[int, int]:
        return int(self.np_random.integers(100, 1000)), 0

    def _question(self) -> str:
        return f"Is {self._a} even? Reply inside <answer></answer> tags."

    def _gold(self) -> str:
        return "yes" if self._a % 2 == 0 else "no"


class SkewedLabels(YesNoToy):
    """The same strict grader over a skewed draw: four items in five are even, so 'yes' earns 0.8."""

    def _draw(self) -> tuple[int, int]:
        even = self.np_random.random() < 0.8
        return 2 * int(self.np_random.integers(50, 500)) + (0 if even else 1), 0


class GoldSecondInQuestion(CorrectToy):
    """Quadratics ``x^2 - sx + p`` (roots r1, r2): on 40% of items the sum of the roots (``s``, the question's second
    number), else the value at some x. Strict, but "answer the question's 2nd number" is paid 0.4, and a number of
    the question picked at random 0.1 (gradecheck's ``x^2 - 11x + 28``, gold 11, as a draw)."""

    ROOT_ITEMS = 0.4

    def _draw(self) -> tuple[Any, None]:
        rng = self.np_random
        r1, r2 = (int(rng.integers(2, 10)) for _ in range(2))
        return (r1, r2, int(rng.integers(20, 30)), bool(rng.random() < self.ROOT_ITEMS)), None

    def _question(self) -> str:
        r1, r2, x, roots = self._a
        quadratic = f"x^2 - {r1 + r2}x + {r1 * r2}"
        asked = f"the sum of the roots of ${quadratic} = 0$" if roots else f"the value of ${quadratic}$ at $x = {x}$"
        return f"What is {asked}? Reply with <answer>N</answer>."

    def _reset_info(self) -> dict[str, Any]:
        return {"problem_id": "quadratic/" + "/".join(map(str, self._a))}

    def _gold(self) -> str:
        r1, r2, x, roots = self._a
        return str(r1 + r2 if roots else (x - r1) * (x - r2))


class GoldNeverInQuestion(GoldSecondInQuestion):
    """The control: the same quadratics, every item asking the value at some x (at least 121: never a number of the
    question)."""

    ROOT_ITEMS = 0.0


class MultipleAmongListed(CorrectToy):
    """Which of seven listed numbers is a multiple of seven? The answer always stands in the question, at a random
    place: a rule reading the n-th number is paid what a random pick of the seven is (1/7), which is chance."""

    def _draw(self) -> tuple[Any, None]:
        rng = self.np_random
        others = [int(n) for n in rng.choice([n for n in range(10, 100) if n % 7], 6, replace=False)]
        place = int(rng.integers(0, 7))
        return tuple(others[:place] + [7 * int(rng.integers(2, 15))] + others[place:]), None

    def _question(self) -> str:
        return (f"Numbers: {', '.join(map(str, self._a))}. Exactly one of them is a multiple of seven: which one? "
                "Reply with <answer>N</answer>.")

    def _reset_info(self) -> dict[str, Any]:
        return {"problem_id": "multiple/" + "/".join(map(str, self._a))}

    def _gold(self) -> str:
        return str(next(n for n in self._a if n % 7 == 0))


class GoldFreePaysAnything(NoHook):
    """No gold anywhere (no hook, nothing revealed), and a grader that pays any non-empty answer in full."""

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        return CorrectToy.step(self, action)

    def _score(self, answer: str) -> float:
        return 1.0 if answer.strip() else 0.0


class GoldFreeStrict(GoldFreePaysAnything):
    """No gold anywhere, and a grader that pays only the right sum: content-free text earns nothing."""

    def _score(self, answer: str) -> float:
        return CorrectToy._score(self, answer)


class RefusesAVariant(CorrectToy):
    """Declares '1,234' a variant of the gold '1234' but pays only the gold: an honest answer refused."""

    def answer_variants(self) -> list[str]:
        return [f"{int(self._gold()):,}"]


class PaysEveryForm(RefusesAVariant):
    """The same declared forms, each read as the number it writes: the honest control."""

    def _score(self, answer: str) -> float:
        return 1.0 if answer.replace(",", "") == self._gold() else 0.0



_SEARCH = {"question_echo", "alphabet_sprays", "covering_sprays", "adaptive_search"}
#: Each broken toy and the probes that must catch it (and no others).
BROKEN_TOYS: dict[type, set[str]] = {
    # An env that scores steps after its end scores them after a refused reset too.
    RescoresAfterEnd: {"rescore_after_end", "inert_after_end", "failed_reset_keeps_end"},
    # Caught only by answering the gold after the end (the hook gives it): re-scoring and the inert check.
    RescoresQuietly: {"rescore_after_end", "inert_after_end", "failed_reset_keeps_end"},
    LeaksInInfo: {"reference_leakage"},
    # A gold shown in the question stands at a fixed place there: the rule reading it off is paid every time.
    LeaksInObs: {"reference_leakage", "label_skew"},
    NeverEnds: {"step_budget"},
    CrashesOnEmpty: {"garbage_actions"},
    PaysScoreTags: {"reward_self_dealing"},
    # Another item at every reset: the gold looked up is not the one then answered, so golds look refused.
    UnseededDraw: {"seeded_reset", "honest_pay"},
    # A stale end also spoils the probes that answer again after reset: the precondition probe (a wrong answer
    # after the gold comes back correct) and the constant answers and search probes (every answer is paid the
    # first episode's reward).
    ResetKeepsEnd: {"reset_clears_end", "gold_answer_scored", "constant_answers", "honest_pay", "label_skew",
                    "random_answers", *_SEARCH},
    ClearsEndBeforeCheckingReset: {"failed_reset_keeps_end"},
    # Sprays over the golds' digits and the coverings contain the gold; the question echo never does.
    SubstringCredit: {"constant_answers", *(_SEARCH - {"question_echo"})},
    PaysAnyAnswer: {"constant_answers", "random_answers", *_SEARCH},
    # The answer's code runs, and its scorer-patching canary makes other instances pay wrong answers.
    EvalScorer: {"code_injection", "cross_env_isolation", "question_echo"},  # evaluating pays the question back
    HangsOnTowers: {"pathological_answers"},
    # The pay probes: a skewed draw pays its majority label; a declared gold form refused; junk paid outright.
    SkewedLabels: {"label_skew"},
    GoldSecondInQuestion: {"label_skew"},
    RefusesAVariant: {"honest_pay"},
    GoldFreePaysAnything: {"random_answers", "covering_sprays", "question_echo", "adaptive_search"},
    SharedScale: {"cross_env_isolation"},
    SharedGradingQueue: {"cross_env_isolation"},
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


# -- honest envs the audit must not fail (issue: user reports) ----------------------------------------------------
class SameForAnyWrong(CorrectToy):
    """Grades honestly but says the same for anything that is not the answer: observation "done", reward 0,
    verdict ``incorrect``, ended, even for a non-answer. Without a gold answer a stale end after reset cannot be
    told from this env's own grading (reset_clears_end is not run); with one it passes."""

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if not isinstance(action, str):
            raise TypeError(f"action must be a str, got {type(action).__name__}")
        if self._final is None:  # guards its own end, and reset clears it
            right = self._parse(action) == self._gold()
            self._final = ("done", float(right), True, False, {"verdict": "correct" if right else "incorrect"})
        return self._final


class SameForAnyWrongNoHook(SameForAnyWrong):
    """SameForAnyWrong without the privileged hook, revealing nothing."""

    gold_answers = None  # type: ignore[assignment]


class ResetKeepsEndNoHook(ResetKeepsEnd):
    """ResetKeepsEnd without the hook: a fresh instance answers a non-answer differently from the stale end."""

    gold_answers = None  # type: ignore[assignment]


class CrashesOnEmptyNoHook(CrashesOnEmpty):
    """Fails a probe and has no gold answer: a failed env whose gold probes also did not run."""

    gold_answers = None  # type: ignore[assignment]


def write_user_module(directory: Any, name: str) -> Any:
    """Write ``<directory>/<name>.py``: a user's module that registers two ids when imported, as ``gym.make("name:Id")``
    expects: ``UserStacked-v0`` (its entry point returns ``integrity_stack(CorrectToy())``, so gym.make puts its
    checkers outside the stack) and ``UserBare-v0`` (CorrectToy, no stack). Returns the file's path."""
    import pathlib

    path = pathlib.Path(directory) / f"{name}.py"
    path.write_text(
        "import importlib.util\n"
        "import gymnasium as gym\n"
        "from gym_integrity.wrappers import integrity_stack\n"
        f"_spec = importlib.util.spec_from_file_location('audit_toys_for_{name}', {__file__!r})\n"
        "toys = importlib.util.module_from_spec(_spec)\n"
        "_spec.loader.exec_module(toys)\n"
        "def stacked():\n"
        "    return integrity_stack(toys.CorrectToy())\n"
        "gym.register('UserStacked-v0', entry_point=stacked)\n"
        "gym.register('UserBare-v0', entry_point=toys.CorrectToy)\n"
    )
    return path



class SmallNumbersInQuestion(CorrectToy):
    """The last digit of a product of two digits: the gold is often one of the question's own numbers and always one of
    the listed digits, at a place that moves with it. Not a leak."""

    def _draw(self) -> tuple[int, int]:
        return int(self.np_random.integers(0, 10)), int(self.np_random.integers(0, 10))

    def _question(self) -> str:
        return (f"What is the last digit of {self._a} * {self._b}? It is one of 0, 1, 2, 3, 4, 5, 6, 7, 8, 9. "
                "Reply with <answer>N</answer>.")

    def _gold(self) -> str:
        return str(self._a * self._b % 10)


class RevealsShortGoldAtEnd(SmallNumbersInQuestion):
    """Shows its one-digit gold in the final info, as OpenEnv's ``correct_answer``: a leak however short."""

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward, terminated, truncated, {**info, "correct_answer": self._gold()}


# -- short golds a listed option or a reported score holds: no leak; written after "the answer is": a leak -------------
class ListsYesNo(YesNoToy):
    """Is a three-digit number even? The question lists the options, "(Answer yes or no)": no leak."""

    def _question(self) -> str:
        return f"Is {self._a} even? (Answer yes or no) Reply inside <answer></answer> tags."


class SaysYesNoInObs(ListsYesNo):
    """Lists the options, then writes the answer into the question."""

    def _question(self) -> str:
        return super()._question() + f" The answer is {self._gold()}."


class SaysYesNoInInfo(ListsYesNo):
    """Lists the options; the reset info carries a hint with the answer."""

    def _reset_info(self) -> dict[str, Any]:
        return {**super()._reset_info(), "hint": f"the answer is {self._gold()}"}


class SaysYesNoAtEnd(ListsYesNo):
    """Lists the options; the end text names the answer (seen by envs with the hook: "by default never")."""

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = super().step(action)
        return f"{obs} The answer was {self._gold()}.", reward, terminated, truncated, info


class ScoreAtEnd(YesNoToy):
    """The parity of a three-digit number, gold 0 or 1; the end text reports the score ("score 0.00"): no leak."""

    def _question(self) -> str:
        return f"What is {self._a} mod 2? Reply with <answer>N</answer>."

    def _gold(self) -> str:
        return str(self._a % 2)

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = super().step(action)
        return f"Graded: {info['verdict']} (score {reward:.2f}).", reward, terminated, truncated, info


class RevealsBinaryAtEnd(ScoreAtEnd):
    """Reports the score, then the answer: a leak."""

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = super().step(action)
        return f"{obs} The answer was {self._gold()}.", reward, terminated, truncated, info

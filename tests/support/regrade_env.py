"""FlakySum-v0: TinySum whose grader a test can change between grading and re-grading (tests/eval/test_regrade.py).

``GRADER["lenient"] = True`` plays a buggy scorer that pays any answer
containing the gold; False is the fixed, strict one.
"""

from __future__ import annotations

import gymnasium as gym

from gym_integrity.grading.reader import extract_answer
from gym_integrity.protocol import Grade, Verdict

from fourth_env import TinySumEnv

GRADER = {"lenient": True}


class FlakySumEnv(TinySumEnv):
    """TinySum graded by :data:`GRADER`'s current rule."""

    def _grade(self, text: str) -> Grade:
        extraction = extract_answer(text, "tag", self.config.max_answer_chars)
        if extraction.failure is not None:
            return Grade(extraction.failure, 0.0)
        answer, gold = extraction.answer.strip(), self._gold()
        right = gold in answer if GRADER["lenient"] else answer == gold
        return Grade(Verdict.CORRECT, 1.0) if right else Grade(Verdict.INCORRECT, 0.0)


# gym.register, not register_env: kept out of REGISTERED, so the conformance tests and the audit (which would
# rightly fail its lenient grader) never take it up.
if "FlakySum-v0" not in gym.registry:
    gym.register("FlakySum-v0", entry_point="regrade_env:FlakySumEnv")

"""QEDMath's answer problems pay their golds (the audit's honest_pay probe), here where no stub judge stands in.

The registered audit leaves honest_pay out of the proof column (the stub judge is no grader) and runs it on the
answer and multi-step columns; here it runs alone, on the real verifier, with no judge configured at all.
"""

import gym_integrity
from gym_integrity.audit import Status, check_integrity


def test_every_answer_gold_is_paid():
    report = check_integrity(lambda: gym_integrity.make("QEDMath-v0", problem_types=["answer"]), probes=["honest_pay"])
    result = report.result("honest_pay")
    assert result.status is Status.PASSED, (result.summary, result.evidence)

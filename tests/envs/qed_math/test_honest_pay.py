"""QEDMath's answer problems pay their golds (the audit's honest_pay probe), here where no stub judge stands in.

The registered audit leaves honest_pay out of judged columns (the stub judge is no grader); answer problems are
graded by math_verify, so their honest side is checked here, on the real verifier.
"""

import gym_integrity
from gym_integrity.audit import Status, check_integrity


def test_every_answer_gold_is_paid():
    report = check_integrity(lambda: gym_integrity.make("QEDMath-v0", problem_types=["answer"]), probes=["honest_pay"])
    result = report.result("honest_pay")
    assert result.status is Status.PASSED, (result.summary, result.evidence)

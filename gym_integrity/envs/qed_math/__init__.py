"""QEDMath-v0: olympiad math (proofs, boxed answers, multi-attempt problems) behind the integrity stack.

``ENTRY`` is the id's registration and audit facts (graded by an LLM judge:
nondeterministic, audited per problem type); the classes load on first use.
"""

from gym_integrity.envs.entry import EnvEntry, lazy_exports

__all__ = ["QEDMathEnv", "QEDMathConfig", "ENTRY"]

ENTRY = EnvEntry(
    "QEDMath-v0",
    "gym_integrity.envs.qed_math:QEDMathEnv",
    "olympiad math: proofs graded 0-7 by an LLM judge, boxed answers by math_verify, multi-attempt problems",
    nondeterministic=True,
    needs_judge=True,
    audit_variants={kind: {"problem_types": [kind]} for kind in ("answer", "proof", "multi_step")},
    judged_variant="proof",
)

__getattr__ = lazy_exports(__name__, {"QEDMathConfig": "config", "QEDMathEnv": "env"})

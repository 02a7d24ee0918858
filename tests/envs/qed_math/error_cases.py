"""QEDMath-v0's options: a wrong type and a wrong value for every config field, walked by tests/test_errors.py."""

from gym_integrity.envs.qed_math.config import QEDMathConfig

#: field -> (a wrong type, a wrong value of the right type, or "ANY": every value of the right type is valid).
BAD = {
    QEDMathConfig: {
        "dataset": (3, []),
        "problem_types": (3, ["essay"]),
        "show_guidelines": ("yes", "ANY"),
        "reward_preset": (3, "lenient"),
        "reasoning_delimiters": (3, [""]),
        "collapse_partial": (1, "ANY"),
        "discount_factor": ("0.9", 1.5),
        "max_tokens": (1.5, 0),
        "buffer_tokens": (True, -1),
        "overlong_penalty": ("1", -0.5),
        "max_attempts": (2.0, 0),
        "verifier": (3, {"deadline_s": -1}),
        "judge": (3, {"api": "bogus"}),
    },
}

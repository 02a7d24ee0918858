"""ReasoningGym-v0's options: a wrong type and a wrong value for every config field, walked by tests/test_errors.py."""

from gym_integrity.envs.reasoning_gym.config import ReasoningGymConfig

#: field -> (a wrong type, a wrong value of the right type, or "ANY": every value of the right type is valid).
BAD = {
    ReasoningGymConfig: {
        "dataset": (3, "leg_countin"),
        "dataset_config": (3, {"min_animals": -1}),
        "size": (1.5, 0),
        "seed": ("42", "ANY"),
        "answer_format": (3, "xml"),
        "max_answer_chars": ("10", 0),
        "scoring": (None, "lenient"),
        "score_timeout_s": (True, 0),
        "balanced_draw": (1, "ANY"),
        "allow_above_chance": (1, "ANY"),
    },
}

"""FinQA-v0's options: a wrong type and a wrong value for every config field, walked by tests/test_errors.py."""

from gym_integrity.envs.finqa.config import FinQAConfig

#: field -> (a wrong type, a wrong value of the right type, or "ANY": every value of the right type is valid).
BAD = {
    FinQAConfig: {
        "data_path": (3, ""),
        "data_format": (3, "csv"),
        "hub_id": (3, ""),
        "split": (3, ""),
        "questions_file": (3, "../x.csv"),
        "step_budget": ("5", 0),
        "scoring": (None, "fuzzy"),
        "rel_tol": ("0.1", 2.0),
        "abs_tol": (True, -1.0),
        "sql_timeout_s": ("1", 0.25),
        "sql_row_cap": (1.5, 0),
        "max_result_chars": ("8000", 10),
        "max_action_chars": (None, 10),
    },
}

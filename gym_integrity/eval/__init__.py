"""Evaluating a served model on any registered env: ``gym-integrity eval`` and its Python API.

>>> from gym_integrity.eval import EvalConfig
>>> EvalConfig("ReasoningGym-v0", "http://127.0.0.1:8000/v1", "my-model", samples=0).validate()
Traceback (most recent call last):
...
ValueError: EvalConfig.samples must be an int >= 1, got 0
"""

from gym_integrity.eval.records import read_records
from gym_integrity.eval.runner import EvalConfig, evaluate, run_eval
from gym_integrity.eval.summary import EvalSummary, pass_at_k, summarize, wilson_interval
from gym_integrity.exceptions import PolicyError

__all__ = [
    "EvalConfig",
    "EvalSummary",
    "PolicyError",
    "evaluate",
    "run_eval",
    "summarize",
    "read_records",
    "pass_at_k",
    "wilson_interval",
]

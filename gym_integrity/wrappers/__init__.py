"""Integrity wrappers: each enforces one rule outside the task logic, for any Gymnasium env."""

from gym_integrity.wrappers.hide_info_keys import HideInfoKeys
from gym_integrity.wrappers.max_steps_truncation import MaxStepsTruncation
from gym_integrity.wrappers.stack import STACK_ORDER, StackConfig, integrity_stack, integrity_wrapper_specs
from gym_integrity.wrappers.terminal_freeze import TerminalFreeze

__all__ = [
    "STACK_ORDER",
    "HideInfoKeys",
    "MaxStepsTruncation",
    "StackConfig",
    "TerminalFreeze",
    "integrity_stack",
    "integrity_wrapper_specs",
]

"""gym-integrity: Gymnasium environments for RL on LLMs whose rewards cannot be gamed.

Importing the package registers every env id and imports nothing heavy:
reasoning_gym, datasets, math_verify and openai load when an env needs them.
"""

from gym_integrity.envs.base import AuditHooks, TextEnv
from gym_integrity.exceptions import GymIntegrityError
from gym_integrity.protocol import Grade, TrainerAction, Verdict
from gym_integrity.registration import REGISTERED, EnvEntry, Sweep, env_entries, make, register_env, register_envs
from gym_integrity.spaces import UnicodeText
from gym_integrity.vector import ASYNC_VECTOR_KWARGS
from gym_integrity.wrappers import HideInfoKeys, MaxStepsTruncation, TerminalFreeze, integrity_stack

__version__ = "0.1.0"

__all__ = [
    "UnicodeText",
    "TerminalFreeze",
    "HideInfoKeys",
    "MaxStepsTruncation",
    "integrity_stack",
    "make",
    "Verdict",
    "Grade",
    "TrainerAction",
    "REGISTERED",
    "EnvEntry",
    "Sweep",
    "register_env",
    "env_entries",
    "TextEnv",
    "AuditHooks",
    "ASYNC_VECTOR_KWARGS",
    "GymIntegrityError",
]

register_envs()

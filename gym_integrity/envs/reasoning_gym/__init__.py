"""ReasoningGym-v0: reasoning-gym's procedural tasks (and weighted composites) as a single-turn text env.

Modules: ``config`` (ReasoningGymConfig), ``env`` (ReasoningGymEnv),
``datasets`` (generators and slow items, shared per process), ``policy`` (how
each dataset is scored), ``strict`` (strict scorers), ``grammar`` (answer
languages), ``scoring`` (grading one answer), ``sandbox`` (own scorers in
killable workers). docs/reasoning_gym.md explains the design.
"""

from gym_integrity.envs.reasoning_gym.config import ReasoningGymConfig, available_datasets
from gym_integrity.envs.reasoning_gym.env import ReasoningGymEnv

__all__ = ["ReasoningGymConfig", "ReasoningGymEnv", "available_datasets"]

"""ReasoningGym-v0: reasoning-gym's procedural tasks (and weighted composites) as a single-turn text env.

Modules: ``config`` (ReasoningGymConfig), ``env`` (ReasoningGymEnv),
``datasets`` (generators and slow items, shared per process), ``table`` (the
rule each dataset is scored by; the rules are ``gym_integrity.grading.rules``),
``tasks`` (one module per task with a draw filter, requirement, solver or
right-answer check), ``scoring`` (grading one answer), ``sandbox`` (own
scorers in killable workers), ``draw`` (the balanced draw), ``draw_plans`` and
``plan_builder`` (its plans: shipped, else built at first reset; the builder). docs/reasoning_gym.md explains the design.
``ENTRY`` is the id's registration and audit facts; the classes load on
first use.
"""

from gym_integrity.envs.entry import EnvEntry, Sweep, lazy_exports

__all__ = ["ReasoningGymConfig", "ReasoningGymEnv", "available_datasets", "ENTRY"]

ENTRY = EnvEntry(
    "ReasoningGym-v0",
    "gym_integrity.envs.reasoning_gym:ReasoningGymEnv",
    "reasoning-gym's procedural tasks (or a weighted composite): strict scoring, expression scorers sandboxed",
    # the sweep audits every dataset, those not made by default too (draw.ABOVE_CHANCE)
    sweep=Sweep(
        "dataset", "gym_integrity.envs.reasoning_gym:available_datasets", with_options=(("allow_above_chance", True),)
    ),
    audit_preload=("reasoning_gym",),  # about 2 s to import
    max_episode_steps=1,  # one answer, whatever the dataset
)

__getattr__ = lazy_exports(
    __name__, {"ReasoningGymConfig": "config", "available_datasets": "config", "ReasoningGymEnv": "env"}
)

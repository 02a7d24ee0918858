"""``gym_integrity.ray``: envs across a Ray cluster (the ``[ray]`` extra); the code is in ``integrations/ray.py``."""

from gym_integrity.integrations.ray import (  # noqa: F401
    DEFAULT_STEP_TIMEOUT_S,
    ActorEnv,
    RayVectorEnv,
    make_ray_vec,
    node_grading_pools,
)

__all__ = ["make_ray_vec", "RayVectorEnv", "ActorEnv", "node_grading_pools", "DEFAULT_STEP_TIMEOUT_S"]

"""``gym_integrity.ray``: envs across a Ray cluster (the ``[ray]`` extra); the code is in ``integrations/ray.py``.

``make_ray_vec(env_id, num_envs, envs_per_actor=1, ...)`` gives a Gymnasium
vector env whose sub-envs run on Ray actors, each with the integrity stack
inside; an actor that dies gives its sub-envs a no-verdict and is replaced.
``help(gym_integrity.integrations.ray)`` and ``docs/scaling.md`` have the
rules and the cluster recipe.

Example (a local Ray)::

    import ray
    from gym_integrity.ray import make_ray_vec

    ray.init(num_cpus=2, include_dashboard=False)
    envs = make_ray_vec("ReasoningGym-v0", 4, envs_per_actor=2, dataset="leg_counting")
    obs, infos = envs.reset(seed=[7, 7, 8, 8])          # two GRPO groups
    obs, rewards, terminated, truncated, infos = envs.step(["<answer>0</answer>"] * 4)
    envs.close()
"""

from gym_integrity.integrations.ray import (  # noqa: F401
    DEFAULT_STEP_TIMEOUT_S,
    ActorEnv,
    RayVectorEnv,
    make_ray_vec,
    node_grading_pools,
)

__all__ = ["make_ray_vec", "RayVectorEnv", "ActorEnv", "node_grading_pools", "DEFAULT_STEP_TIMEOUT_S"]

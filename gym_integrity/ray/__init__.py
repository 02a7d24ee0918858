"""``gym_integrity.ray``, envs across a Ray cluster (the ``[ray]`` extra): ``make_ray_vec`` (sub-envs on Ray actors, integrity stack inside) and node pools.

The actor side (the actor's body, its host, the gathering of answers, the
node pools) is in ``actors.py``; the sub-env proxies, the batch functions and
the vector env in ``vector.py``. One rule runs through both, stated here:
what a dead or silent actor gives each of its sub-envs.

Ray is imported when a function here is called (the ``[ray]`` extra), never
at import. ``make_ray_vec`` gives a Gymnasium ``VectorEnv`` with the batching
of :class:`~gym_integrity.vector.ThreadedVectorEnv` (same spaces, seeds,
autoreset modes and info layout: it *is* one, over proxies): each sub-env is
a proxy for one slot of an actor holding ``gym.make(id)`` (one, or
``envs_per_actor``), so the stack runs where the env runs. A batch's
``reset``/``step`` makes one call per actor, all at once, carrying its
slots' shares; each slot plays its share by the threaded env's rule
(:func:`~gym_integrity.vector.step_sub_env`), and results are gathered in
sub-env order.

What a dead actor does to a batch: an actor that dies (or does not answer
within ``step_timeout_s``, and is killed) mid-step gives each of its
sub-envs a no-verdict transition (reward 0.0, ``truncated`` True, ``verdict``
``grader_error`` with a ``cause``) and is replaced by a fresh actor; the
rest of the batch is unaffected. Until the trainer resets such a sub-env, a
further step replays that transition with reward 0.0 (nothing is repaid,
as after any end). ``call``/``get_attr`` that meet a dead actor replace it
the same way (its sub-envs owe the no-verdict) and raise Ray's error. An
exception raised by the env itself (a bad action type) reaches the caller as
Ray's ``RayTaskError``, which is also an instance of the env's exception
class (``except TypeError`` catches it): that is a programming error, not a
fault.

Grading pools: envs on one node share that node's machine-wide pool
(``docs/workers.md``); :func:`node_grading_pools` keeps one Ray actor per
node that owns it, so a cluster of N nodes grades on N pools, each sized to
its node. ``docs/scaling.md`` has the cluster recipe.

Example (a local Ray)::

    import ray
    from gym_integrity.ray import make_ray_vec

    ray.init(num_cpus=2, include_dashboard=False)
    envs = make_ray_vec("ReasoningGym-v0", 4, dataset="leg_counting")
    obs, infos = envs.reset(seed=[7, 7, 8, 8])          # two GRPO groups
    obs, rewards, terminated, truncated, infos = envs.step(["<answer>0</answer>"] * 4)
    envs.close()
"""

from gym_integrity.ray.actors import DEFAULT_STEP_TIMEOUT_S, node_grading_pools
from gym_integrity.ray.vector import ActorEnv, RayVectorEnv, make_ray_vec

__all__ = ["make_ray_vec", "RayVectorEnv", "ActorEnv", "node_grading_pools", "DEFAULT_STEP_TIMEOUT_S"]

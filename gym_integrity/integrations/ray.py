"""Envs across a Ray cluster: ``make_ray_vec`` (each sub-env a Ray actor with the integrity stack inside) and node pools.

Ray is imported when a function here is called (the ``[ray]`` extra), never
at import. ``make_ray_vec`` gives a Gymnasium ``VectorEnv`` with the batching
of :class:`~gym_integrity.vector.ThreadedVectorEnv` (same spaces, seeds,
autoreset modes and info layout: it *is* one, over proxies): each sub-env is
a proxy whose ``reset``/``step`` run on an actor holding ``gym.make(id)``,
so the stack runs where the env runs. The proxies' calls go out at once and
are gathered in sub-env order.

What a dead actor does to a batch: an actor that dies (or does not answer
within ``step_timeout_s``, and is killed) mid-step gives its sub-env a
no-verdict transition (reward 0.0, ``truncated`` True, ``verdict``
``grader_error`` with a ``cause``) and is replaced by a fresh actor; the
rest of the batch is unaffected. Until the trainer resets that sub-env, a
further step replays that transition with reward 0.0 (nothing is repaid,
as after any end). An exception raised by the env itself (a bad action
type) is re-raised as it is: that is a programming error, not a fault.

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

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

import gymnasium as gym
from gymnasium.vector import AutoresetMode

from gym_integrity.checks import check_int, check_number, check_type
from gym_integrity.protocol import Grade, Verdict, grade_info
from gym_integrity.registration import check_registered
from gym_integrity.vector import ThreadedVectorEnv

__all__ = ["make_ray_vec", "RayVectorEnv", "ActorEnv", "node_grading_pools", "DEFAULT_STEP_TIMEOUT_S"]

#: Longest a sub-env's reset or step may take before its actor is killed and the step is a no-verdict: above a
#: judge's worst case (its request deadline times its retries), far below "forever".
DEFAULT_STEP_TIMEOUT_S = 900.0
_INSTALL = "gym_integrity.ray needs Ray: pip install 'gym-integrity[ray]'"


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ImportError(_INSTALL) from None
    if not ray.is_initialized():
        raise RuntimeError("gym_integrity.ray: call ray.init(...) first (ray.init() for a local Ray, "
                           "ray.init(address='auto') on a cluster)")
    return ray


class _EnvHost:
    """The actor's body: ``gym.make(id, **kwargs)`` with frozen steps paying 0.0 (a vector env's rule)."""

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any]) -> None:
        import gym_integrity  # noqa: F401  (registers the ids in the actor's process)
        from gym_integrity.vector import zero_frozen_rewards

        self.env = zero_frozen_rewards(gym.make(env_id, **env_kwargs))

    def describe(self) -> tuple[Any, ...]:
        import ray

        env = self.env
        return env.observation_space, env.action_space, env.metadata, env.spec, \
            ray.get_runtime_context().get_node_id(), os.getpid()

    def reset(self, seed: int | None, options: dict[str, Any] | None) -> tuple[Any, dict[str, Any]]:
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        return self.env.step(action)

    def call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        attr = self.env.get_wrapper_attr(name)
        return attr(*args, **kwargs) if callable(attr) else attr

    def close(self) -> None:
        self.env.close()


def _actor_class(ray: Any) -> Any:
    return ray.remote(_EnvHost)


class ActorEnv(gym.Env):
    """A local proxy whose ``reset``/``step`` run on a Ray actor; replaces the actor when it dies (see module doc)."""

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any], actor_options: Mapping[str, Any],
                 step_timeout_s: float, actor: Any = None) -> None:
        self._ray = _ray()
        self.env_id, self.env_kwargs = env_id, dict(env_kwargs)
        self.actor_options, self.step_timeout_s = dict(actor_options), step_timeout_s
        self.actor = actor if actor is not None else self._new_actor()
        (self.observation_space, self.action_space, self.metadata, self.spec, self.node_id,
         self.actor_pid) = self._call("describe")
        self.render_mode = None
        self.replacements = 0
        self._last_obs: Any = ""
        self._problem_id = ""
        self._integrity: dict[str, Any] = {}
        self._dead: tuple[Any, float, bool, bool, dict[str, Any]] | None = None

    def _new_actor(self) -> Any:
        return _actor_class(self._ray).options(**self.actor_options).remote(self.env_id, self.env_kwargs)

    def _call(self, method: str, *args: Any) -> Any:
        ray = self._ray
        ref = getattr(self.actor, method).remote(*args)
        try:
            return ray.get(ref, timeout=self.step_timeout_s)
        except ray.exceptions.RayTaskError as exc:
            raise exc.as_instanceof_cause() from None  # the env's own error (a bad action): the caller's to see

    def _replace(self) -> None:
        try:
            self._ray.kill(self.actor, no_restart=True)
        except Exception:  # noqa: BLE001  (already dead is the usual case)
            pass
        self.actor = self._new_actor()
        self.replacements += 1
        _, _, _, _, self.node_id, self.actor_pid = self._call("describe")

    def _faults(self) -> tuple[type[BaseException], ...]:
        errors = self._ray.exceptions
        return (errors.RayActorError, errors.GetTimeoutError, errors.ObjectLostError, errors.OwnerDiedError,
                errors.WorkerCrashedError, errors.NodeDiedError)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self._dead = None
        try:
            obs, info = self._call("reset", seed, options)
        except self._faults():
            self._replace()  # one fresh actor; a second failure is the cluster's, and the caller's to see
            obs, info = self._call("reset", seed, options)
        self._last_obs, self._problem_id = obs, str(info.get("problem_id", ""))
        self._integrity = dict(info.get("integrity") or {})
        return obs, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if self._dead is not None:
            obs, _, terminated, truncated, info = self._dead
            return obs, 0.0, terminated, truncated, {**info, "integrity": {**info["integrity"], "frozen": True}}
        try:
            obs, reward, terminated, truncated, info = self._call("step", action)
        except self._faults() as exc:
            cause = (f"the env's Ray actor (pid {self.actor_pid}) did not answer within {self.step_timeout_s:g} s "
                     "and was killed" if isinstance(exc, self._ray.exceptions.GetTimeoutError) else
                     f"the env's Ray actor (pid {self.actor_pid}) died mid-step: {type(exc).__name__}")
            self._replace()
            # The stack's record as it would have read after this step (same keys and types, for the batch's
            # info arrays), plus the fact that the actor was replaced.
            integrity = {**self._integrity, "steps": int(self._integrity.get("steps", 0)) + 1, "frozen": False,
                         "actor_replaced": True}
            info = grade_info(self._problem_id, Grade(Verdict.GRADER_ERROR, cause=cause), integrity=integrity)
            self._dead = (self._last_obs, 0.0, False, True, info)
            return self._dead[0], 0.0, False, True, dict(info)
        self._last_obs, self._integrity = obs, dict(info.get("integrity") or {})
        return obs, reward, terminated, truncated, info

    def close(self) -> None:
        try:
            self._ray.get(self.actor.close.remote(), timeout=30)
        except Exception:  # noqa: BLE001  (a dead actor has nothing to close)
            pass
        try:
            self._ray.kill(self.actor, no_restart=True)
        except Exception:  # noqa: BLE001
            pass


class RayVectorEnv(ThreadedVectorEnv):
    """A :class:`~gym_integrity.vector.ThreadedVectorEnv` over :class:`ActorEnv` proxies (build with :func:`make_ray_vec`)."""

    #: ``node id -> pool-owner actor`` (:func:`node_grading_pools`), killed at ``close()``.
    grading_pools: dict[str, Any] = {}

    def close_extras(self, **kwargs: Any) -> None:
        try:
            super().close_extras(**kwargs)
        finally:
            if self.grading_pools:
                import ray

                for actor in self.grading_pools.values():
                    try:
                        ray.get(actor.close.remote(), timeout=30)
                        ray.kill(actor, no_restart=True)
                    except Exception:  # noqa: BLE001  (a dead owner has nothing to close)
                        pass
                self.grading_pools = {}

    def __repr__(self) -> str:
        return f"RayVectorEnv({self.envs[0].env_id}, num_envs={self.num_envs})" if self.envs else "RayVectorEnv()"

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """``name`` of each sub-env's stacked env, called with the arguments if callable, run on the actors."""
        return tuple(self._all([lambda env=env: env._call("call", name, args, kwargs) for env in self.envs]))

    def get_attr(self, name: str) -> tuple[Any, ...]:
        return self.call(name)

    @property
    def actors(self) -> list[Any]:
        """The current actor handle of each sub-env (a replaced actor's successor)."""
        return [env.actor for env in self.envs]


def make_ray_vec(
    env_id: str,
    num_envs: int,
    *,
    step_timeout_s: float = DEFAULT_STEP_TIMEOUT_S,
    actor_options: Mapping[str, Any] | None = None,
    autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
    grading_pools: bool = True,
    **env_kwargs: Any,
) -> RayVectorEnv:
    """``num_envs`` sub-envs ``gym.make(env_id, **env_kwargs)``, each on a Ray actor placed across the cluster.

    ``actor_options`` go to ``ActorClass.options(...)`` (default
    ``{"num_cpus": 0, "scheduling_strategy": "SPREAD"}``: an env waits on its
    grader, which has the CPUs; SPREAD puts the actors on as many nodes as
    there are). ``step_timeout_s`` bounds each sub-env call (see the module
    docstring for what a dead or silent actor gives). With ``grading_pools``
    (default), one :func:`node_grading_pools` actor per node the envs landed
    on keeps that node's grading pool up while the vector env lives.
    """
    ray = _ray()
    check_registered("make_ray_vec", env_id)
    check_int("make_ray_vec num_envs", num_envs, low=1)
    check_number("make_ray_vec step_timeout_s", step_timeout_s, low=0, low_open=True, unit="seconds")
    # The options are checked here, once, with the env's own error (an actor that fails to build would only
    # say that it died).
    gym.make(env_id, **env_kwargs).close()
    options = {"num_cpus": 0, "scheduling_strategy": "SPREAD",
               **dict(check_type("make_ray_vec actor_options", actor_options or {}, Mapping, "a dict of Ray actor options"))}
    actor_class = _actor_class(ray)
    actors = [actor_class.options(**options).remote(env_id, env_kwargs) for _ in range(num_envs)]  # all at once
    proxies = iter([ActorEnv(env_id, env_kwargs, options, step_timeout_s, actor=a) for a in actors])
    envs = RayVectorEnv([lambda: next(proxies) for _ in range(num_envs)], autoreset_mode=autoreset_mode)
    if grading_pools:
        envs.grading_pools = node_grading_pools(sorted({env.node_id for env in envs.envs}), env_id, env_kwargs)
    return envs


class _NodePool:
    """One node's grading pool owner: builds the env once, so the node's machine-wide pools start and stay up."""

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any]) -> None:
        import gym_integrity  # noqa: F401

        # The env acquires its graders (the node's machine pools) at construction and releases them at close:
        # holding one keeps them warm for the node's env actors, which reach them over the node-local channel.
        self.env = gym.make(env_id, **env_kwargs)

    def node_id(self) -> str:
        import ray

        return ray.get_runtime_context().get_node_id()

    def close(self) -> None:
        self.env.close()


def node_grading_pools(node_ids: Sequence[str], env_id: str, env_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """One pool-owner actor per node in ``node_ids`` (pinned there), for ``env_id``'s graders: ``node -> actor``.

    Each actor holds its node's machine-wide grading pools for as long as it
    lives; the env actors on that node share them. Killing the actor (or the
    driver's exit) lets the pools stop once no env on the node uses them.
    """
    ray = _ray()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    owner = ray.remote(_NodePool)
    pools = {node: owner.options(num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False))
             .remote(env_id, env_kwargs) for node in node_ids}
    ray.get([actor.node_id.remote() for actor in pools.values()])  # built, on their nodes
    return pools

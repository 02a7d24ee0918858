"""The actor side of ``gym_integrity.ray``: the actor that holds sub-envs, its host in the driver, gathering answers, node pools."""

from __future__ import annotations

import concurrent.futures
import os
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
from gymnasium.vector import AutoresetMode

from gym_integrity.vector import SubStep, step_sub_env, zero_frozen_rewards

__all__ = [
    "DEFAULT_STEP_TIMEOUT_S",
    "require_ray",
    "ActorHost",
    "ActorFault",
    "actor_class",
    "fault_types",
    "gather",
    "node_grading_pools",
]

#: Longest a sub-env's reset or step may take before its actor is killed and the step is a no-verdict: above a
#: judge's worst case (its request deadline times its retries), far below "forever".
DEFAULT_STEP_TIMEOUT_S = 900.0
_INSTALL = "gym_integrity.ray needs Ray: pip install 'gym-integrity[ray]'"


def require_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ImportError(_INSTALL) from None
    if not ray.is_initialized():
        raise RuntimeError(
            "gym_integrity.ray: call ray.init(...) first (ray.init() for a local Ray, "
            "ray.init(address='auto') on a cluster)"
        )
    return ray


class _EnvHost:
    """The actor's body: ``count`` envs ``gym.make(id, **kwargs)`` (frozen steps paying 0.0), called per slot.

    A call carries the shares of every slot it names and runs them at once on
    the actor's threads (each waits on its grader), so an actor holding k
    sub-envs costs one Ray round trip per batched reset or step, not k. As in
    the threaded vector env, the first error by slot is raised after all have
    finished.
    """

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any], count: int = 1) -> None:
        self.envs = [zero_frozen_rewards(gym.make(env_id, **env_kwargs)) for _ in range(count)]
        self._threads = concurrent.futures.ThreadPoolExecutor(count) if count > 1 else None

    def _each(self, calls: list[Any]) -> list[Any]:
        if self._threads is None or len(calls) == 1:
            return [call() for call in calls]
        futures = [self._threads.submit(call) for call in calls]
        concurrent.futures.wait(futures)
        return [f.result() for f in futures]

    def describe(self) -> tuple[Any, ...]:
        import ray

        env = self.envs[0]
        return (
            env.observation_space,
            env.action_space,
            env.metadata,
            env.spec,
            ray.get_runtime_context().get_node_id(),
            os.getpid(),
        )

    def reset(self, shares: list[tuple[int, int | None, dict[str, Any] | None]]) -> list[tuple[Any, dict[str, Any]]]:
        return self._each(
            [lambda s=s, seed=seed, o=o: self.envs[s].reset(seed=seed, options=o) for s, seed, o in shares]
        )

    def step(self, shares: list[tuple[int, Any, bool]], autoreset_mode: AutoresetMode) -> list[SubStep]:
        return self._each(
            [lambda s=s, a=a, r=r: step_sub_env(self.envs[s], autoreset_mode, r, a) for s, a, r in shares]
        )

    def call(self, slots: list[int], name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
        def one(env: gym.Env) -> Any:
            attr = env.get_wrapper_attr(name)
            return attr(*args, **kwargs) if callable(attr) else attr

        return self._each([lambda s=s: one(self.envs[s]) for s in slots])

    def close(self) -> None:
        for env in self.envs:
            env.close()
        if self._threads is not None:
            self._threads.shutdown(wait=False)


def actor_class(ray: Any) -> Any:
    return ray.remote(_EnvHost)


class ActorHost:
    """One actor and the ``count`` sub-envs (slots) it holds; builds its replacement when it dies."""

    def __init__(
        self,
        ray: Any,
        env_id: str,
        env_kwargs: Mapping[str, Any],
        count: int,
        actor_options: Mapping[str, Any],
        step_timeout_s: float,
        actor: Any = None,
    ) -> None:
        self._ray, self.env_id, self.env_kwargs, self.count = ray, env_id, dict(env_kwargs), count
        self.actor_options, self.step_timeout_s = dict(actor_options), step_timeout_s
        self.actor = actor if actor is not None else self._new_actor()
        self.replacements, self.closed = 0, False
        self.describe = self.call("describe")  # spaces, metadata, spec, node id, pid

    @property
    def node_id(self) -> str:
        return self.describe[4]

    @property
    def pid(self) -> int:
        return self.describe[5]

    def _new_actor(self) -> Any:
        return actor_class(self._ray).options(**self.actor_options).remote(self.env_id, self.env_kwargs, self.count)

    def call(self, method: str, *args: Any) -> Any:
        return gather(
            self._ray, {self: getattr(self.actor, method).remote(*args)}, self.step_timeout_s, raise_faults=True
        )[self]

    def replace(self) -> None:
        try:
            self._ray.kill(self.actor, no_restart=True)
        except Exception:  # noqa: BLE001  (already dead is the usual case)
            pass
        self.actor = self._new_actor()
        self.replacements += 1
        self.describe = self.call("describe")

    def fault_cause(self, fault: BaseException) -> str:
        if isinstance(fault, self._ray.exceptions.GetTimeoutError):
            return (
                f"the env's Ray actor (pid {self.pid}) did not answer within {self.step_timeout_s:g} s and was killed"
            )
        return f"the env's Ray actor (pid {self.pid}) died mid-step: {type(fault).__name__}"

    def close(self) -> None:
        if self.closed:  # each of its sub-envs closes it
            return
        self.closed = True
        try:
            self._ray.get(self.actor.close.remote(), timeout=30)
        except Exception:  # noqa: BLE001  (a dead actor has nothing to close)
            pass
        try:
            self._ray.kill(self.actor, no_restart=True)
        except Exception:  # noqa: BLE001  # a dead actor has nothing to kill
            pass


class ActorFault:
    """A host's call that failed as infrastructure (the actor died, or was silent past the step timeout)."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


def fault_types(ray: Any) -> tuple[type[BaseException], ...]:
    errors = ray.exceptions
    return (
        errors.RayActorError,
        errors.GetTimeoutError,
        errors.ObjectLostError,
        errors.OwnerDiedError,
        errors.WorkerCrashedError,
        errors.NodeDiedError,
    )


def gather(
    ray: Any, refs: Mapping[ActorHost, Any], timeout_s: float, raise_faults: bool = False
) -> dict[ActorHost, Any]:
    """Each host's result, waited for together up to ``timeout_s``: a :class:`ActorFault` for a dead or silent actor.

    An error the env itself raised (a bad action) is re-raised as it is, after
    the others have finished: that is a programming error, not a fault.
    """
    ready, _ = ray.wait(list(refs.values()), num_returns=len(refs), timeout=timeout_s)
    if len(ready) == len(refs):
        try:  # the usual batch: every actor answered, in one get (a get per ref costs the driver more CPU)
            return dict(zip(refs, ray.get(list(refs.values()))))
        except (ray.exceptions.RayTaskError, *fault_types(ray)):
            pass  # sorted out one by one below
    ready_ids = {ref.hex() for ref in ready}
    results: dict[ActorHost, Any] = {}
    env_error: BaseException | None = None
    for host, ref in refs.items():
        try:
            if ref.hex() not in ready_ids:
                raise ray.exceptions.GetTimeoutError(f"no answer within {timeout_s:g} s")
            results[host] = ray.get(ref)
        except ray.exceptions.RayTaskError as exc:
            cause = exc.as_instanceof_cause()
            if isinstance(cause, fault_types(ray)):
                results[host] = ActorFault(cause)
            else:
                env_error = env_error or cause  # the env's own error (a bad action): the caller's to see
        except fault_types(ray) as exc:
            results[host] = ActorFault(exc)
        if raise_faults and isinstance(results.get(host), ActorFault):
            raise results[host].error
    if env_error is not None:
        raise env_error from None
    return results


class _NodePool:
    """One node's grading pool owner: builds the env once, so the node's machine-wide pools start and stay up."""

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any]) -> None:
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
    ray = require_ray()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    owner = ray.remote(_NodePool)
    pools = {
        node: owner.options(num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote(
            env_id, env_kwargs
        )
        for node in node_ids
    }
    ray.get([actor.node_id.remote() for actor in pools.values()])  # built, on their nodes
    return pools

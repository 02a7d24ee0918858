"""Envs across a Ray cluster: ``make_ray_vec`` (sub-envs on Ray actors, integrity stack inside) and node pools.

Why one module of ~520 lines: the actor's body, the sub-env proxies and the
batch functions keep one rule between them (what a dead or silent actor gives
each of its sub-envs), which split across files would be read in pieces.

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

from __future__ import annotations

import concurrent.futures
import os
from typing import Any, Mapping, Sequence

import gymnasium as gym
from gymnasium.vector import AutoresetMode

from gym_integrity.checks import check_int, check_number, check_type
from gym_integrity.protocol import Grade, Verdict, grade_info
from gym_integrity.registration import check_registered
from gym_integrity.vector import SubStep, ThreadedVectorEnv, check_autoreset_mode, step_sub_env, zero_frozen_rewards

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
        return env.observation_space, env.action_space, env.metadata, env.spec, \
            ray.get_runtime_context().get_node_id(), os.getpid()

    def reset(self, shares: list[tuple[int, int | None, dict[str, Any] | None]]) -> list[tuple[Any, dict[str, Any]]]:
        return self._each([lambda s=s, seed=seed, o=o: self.envs[s].reset(seed=seed, options=o)
                           for s, seed, o in shares])

    def step(self, shares: list[tuple[int, Any, bool]], autoreset_mode: AutoresetMode) -> list[SubStep]:
        return self._each([lambda s=s, a=a, r=r: step_sub_env(self.envs[s], autoreset_mode, r, a)
                           for s, a, r in shares])

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


def _actor_class(ray: Any) -> Any:
    return ray.remote(_EnvHost)


class _Host:
    """One actor and the ``count`` sub-envs (slots) it holds; builds its replacement when it dies."""

    def __init__(self, ray: Any, env_id: str, env_kwargs: Mapping[str, Any], count: int,
                 actor_options: Mapping[str, Any], step_timeout_s: float, actor: Any = None) -> None:
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
        return _actor_class(self._ray).options(**self.actor_options).remote(self.env_id, self.env_kwargs, self.count)

    def call(self, method: str, *args: Any) -> Any:
        return _gather(self._ray, {self: getattr(self.actor, method).remote(*args)}, self.step_timeout_s,
                       raise_faults=True)[self]

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
            return f"the env's Ray actor (pid {self.pid}) did not answer within {self.step_timeout_s:g} s and was killed"
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
        except Exception:  # noqa: BLE001
            pass


class _Fault:
    """A host's call that failed as infrastructure (the actor died, or was silent past the step timeout)."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


def _faults(ray: Any) -> tuple[type[BaseException], ...]:
    errors = ray.exceptions
    return (errors.RayActorError, errors.GetTimeoutError, errors.ObjectLostError, errors.OwnerDiedError,
            errors.WorkerCrashedError, errors.NodeDiedError)


def _gather(ray: Any, refs: Mapping[_Host, Any], timeout_s: float, raise_faults: bool = False) -> dict[_Host, Any]:
    """Each host's result, waited for together up to ``timeout_s``: a :class:`_Fault` for a dead or silent actor.

    An error the env itself raised (a bad action) is re-raised as it is, after
    the others have finished: that is a programming error, not a fault.
    """
    ready, _ = ray.wait(list(refs.values()), num_returns=len(refs), timeout=timeout_s)
    if len(ready) == len(refs):
        try:  # the usual batch: every actor answered, in one get (a get per ref costs the driver more CPU)
            return dict(zip(refs, ray.get(list(refs.values()))))
        except (ray.exceptions.RayTaskError, *_faults(ray)):
            pass  # sorted out one by one below
    ready_ids = {ref.hex() for ref in ready}
    results: dict[_Host, Any] = {}
    env_error: BaseException | None = None
    for host, ref in refs.items():
        try:
            if ref.hex() not in ready_ids:
                raise ray.exceptions.GetTimeoutError(f"no answer within {timeout_s:g} s")
            results[host] = ray.get(ref)
        except ray.exceptions.RayTaskError as exc:
            cause = exc.as_instanceof_cause()
            if isinstance(cause, _faults(ray)):
                results[host] = _Fault(cause)
            else:
                env_error = env_error or cause  # the env's own error (a bad action): the caller's to see
        except _faults(ray) as exc:
            results[host] = _Fault(exc)
        if raise_faults and isinstance(results.get(host), _Fault):
            raise results[host].error
    if env_error is not None:
        raise env_error from None
    return results


class ActorEnv(gym.Env):
    """A local proxy of one sub-env: slot ``slot`` of a Ray actor that may hold several (see module doc)."""

    def __init__(self, host: _Host, slot: int) -> None:
        self.host, self.slot = host, slot
        self.observation_space, self.action_space, self.metadata, self.spec = host.describe[:4]
        self.render_mode = None
        self._last_obs: Any = ""
        self._problem_id = ""
        self._integrity: dict[str, Any] = {}
        # A no-verdict transition to give (its actor died): ``(transition, given before)``, until the next reset.
        self._dead: tuple[tuple[Any, float, bool, bool, dict[str, Any]], bool] | None = None

    @property
    def actor(self) -> Any:
        return self.host.actor

    @property
    def actor_pid(self) -> int:
        return self.host.pid

    @property
    def node_id(self) -> str:
        return self.host.node_id

    @property
    def replacements(self) -> int:
        return self.host.replacements

    def _reset_done(self, obs: Any, info: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        self._dead = None
        self._last_obs, self._problem_id = obs, str(info.get("problem_id", ""))
        self._integrity = dict(info.get("integrity") or {})
        return obs, info

    def _step_done(self, transition: SubStep, was_reset: bool) -> SubStep:
        obs, _, _, _, info, final = transition
        if was_reset or final is not None:  # reset on the actor (NEXT_STEP's autoreset, SAME_STEP's): a new episode
            self._reset_done(obs, info)
        else:
            self._last_obs, self._integrity = obs, dict(info.get("integrity") or {})
        return transition

    def _lost(self, cause: str) -> None:
        """Its actor died: the no-verdict transition this sub-env gives next (same keys and types as a step's)."""
        if self._dead is not None:
            return
        integrity = {**self._integrity, "steps": int(self._integrity.get("steps", 0)) + 1, "frozen": False,
                     "actor_replaced": True}
        info = grade_info(self._problem_id, Grade(Verdict.GRADER_ERROR, cause=cause), integrity=integrity)
        self._dead = ((self._last_obs, 0.0, False, True, info), False)

    def _give_dead(self) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        assert self._dead is not None
        (obs, _, terminated, truncated, info), given = self._dead
        self._dead = ((obs, 0.0, terminated, truncated, info), True)
        if given:  # a replay before reset: frozen, paying nothing
            info = {**info, "integrity": {**info["integrity"], "frozen": True}}
        return obs, 0.0, terminated, truncated, dict(info)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        return _reset_batch([self], [seed], options)[0]

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        return _step_batch([self], [action], AutoresetMode.DISABLED, [False])[0][:5]

    def close(self) -> None:
        self.host.close()


def _by_host(proxies: Sequence[ActorEnv], indices: Sequence[int]) -> dict[_Host, list[int]]:
    groups: dict[_Host, list[int]] = {}
    for i in indices:
        groups.setdefault(proxies[i].host, []).append(i)
    return groups


def _lose_host(proxies: Sequence[ActorEnv], host: _Host, fault: _Fault) -> None:
    """``host``'s actor died: each of its sub-envs owes a no-verdict, and a fresh actor replaces it."""
    cause = host.fault_cause(fault.error)
    for proxy in proxies:
        if proxy.host is host:
            proxy._lost(cause)
    host.replace()


def _reset_batch(proxies: Sequence[ActorEnv], seeds: Sequence[int | None],
                 options: dict[str, Any] | None, indices: Sequence[int] | None = None) -> list[tuple[Any, dict[str, Any]]]:
    """Reset ``proxies[indices]`` with one call per actor; ``(obs, info)`` in ``indices`` order.

    An actor that dies is replaced and asked once more (a second failure is the
    cluster's, and the caller's to see); its other sub-envs owe a no-verdict.
    """
    indices = list(range(len(proxies))) if indices is None else list(indices)
    ray = proxies[0].host._ray
    groups = _by_host(proxies, indices)

    def send(host: _Host) -> Any:
        return host.actor.reset.remote([(proxies[i].slot, seeds[i], options) for i in groups[host]])

    results = _gather(ray, {host: send(host) for host in groups}, proxies[0].host.step_timeout_s)
    for host, result in list(results.items()):
        if isinstance(result, _Fault):
            _lose_host(proxies, host, result)
            results[host] = host.call("reset", [(proxies[i].slot, seeds[i], options) for i in groups[host]])
    out: dict[int, tuple[Any, dict[str, Any]]] = {}
    for host, members in groups.items():
        for i, (obs, info) in zip(members, results[host]):
            out[i] = proxies[i]._reset_done(obs, info)
    return [out[i] for i in indices]


def _step_batch(proxies: Sequence[ActorEnv], actions: Sequence[Any], autoreset_mode: AutoresetMode,
                needs_reset: Sequence[bool]) -> list[SubStep]:
    """Every proxy's share of a batch step, with one call per actor; in proxy order (see module doc for faults)."""
    ray = proxies[0].host._ray
    # Only NEXT_STEP resets a sub-env that ended on the previous step (step_sub_env's rule).
    needs_reset = [autoreset_mode == AutoresetMode.NEXT_STEP and bool(flag) for flag in needs_reset]
    out: dict[int, SubStep] = {}
    remote = []
    for i, proxy in enumerate(proxies):
        if proxy._dead is not None and not needs_reset[i]:
            out[i] = (*proxy._give_dead(), None)  # its actor is gone: the no-verdict, then frozen replays
        else:
            remote.append(i)
    groups = _by_host(proxies, remote)
    refs = {host: host.actor.step.remote([(proxies[i].slot, actions[i], bool(needs_reset[i])) for i in members],
                                         autoreset_mode)
            for host, members in groups.items()}
    results = _gather(ray, refs, proxies[0].host.step_timeout_s) if refs else {}
    for host, members in groups.items():
        result = results[host]
        if isinstance(result, _Fault):
            _lose_host(proxies, host, result)
            for i in members:
                out[i] = (*proxies[i]._give_dead(), None)
        else:
            for i, transition in zip(members, result):
                out[i] = proxies[i]._step_done(transition, needs_reset[i])
    if autoreset_mode == AutoresetMode.SAME_STEP:
        # A no-verdict ends its episode: SAME_STEP resets it in this step, on the replacement actor.
        ended = [i for i in range(len(proxies)) if proxies[i]._dead is not None]
        if ended:
            for i, (obs, info) in zip(ended, _reset_batch(proxies, [None] * len(proxies), None, ended)):
                dead_obs, reward, terminated, truncated, dead_info, _ = out[i]
                out[i] = (obs, reward, terminated, truncated, info, {"final_obs": dead_obs, "final_info": dead_info})
    return [out[i] for i in range(len(proxies))]


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
        return f"RayVectorEnv({self.envs[0].host.env_id}, num_envs={self.num_envs})" if self.envs else "RayVectorEnv()"

    def _reset_sub_envs(self, indices: list[int], seeds: list[int | None],
                        options: dict[str, Any] | None) -> list[tuple[Any, dict[str, Any]]]:
        return _reset_batch(self.envs, seeds, options, indices)

    def _step_sub_envs(self, actions: list[Any]) -> list[SubStep]:
        return _step_batch(self.envs, actions, self.autoreset_mode, [bool(flag) for flag in self._autoreset_envs])

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """``name`` of each sub-env's stacked env, called with the arguments if callable, run on the actors."""
        self._check_open("call")
        groups = _by_host(self.envs, range(self.num_envs))
        refs = {host: host.actor.call.remote([self.envs[i].slot for i in members], name, args, kwargs)
                for host, members in groups.items()}
        results = _gather(self.envs[0].host._ray, refs, self.envs[0].host.step_timeout_s)
        faults = [(host, result) for host, result in results.items() if isinstance(result, _Fault)]
        for host, fault in faults:  # as in a step: its sub-envs owe the no-verdict, and a fresh actor replaces it
            _lose_host(self.envs, host, fault)
        if faults:
            raise faults[0][1].error
        out: dict[int, Any] = {}
        for host, members in groups.items():
            out.update(zip(members, results[host]))
        return tuple(out[i] for i in range(self.num_envs))

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
    envs_per_actor: int = 1,
    step_timeout_s: float = DEFAULT_STEP_TIMEOUT_S,
    actor_options: Mapping[str, Any] | None = None,
    autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
    grading_pools: bool = True,
    **env_kwargs: Any,
) -> RayVectorEnv:
    """``num_envs`` sub-envs ``gym.make(env_id, **env_kwargs)`` on Ray actors placed across the cluster.

    Each actor holds ``envs_per_actor`` sub-envs (default 1: one actor each);
    a batched ``reset`` or ``step`` is one Ray call per actor, carrying all its
    sub-envs' shares. A Ray call cost the actor and the driver about 2 ms of
    CPU on our 2-core test machine (``docs/scaling.md``), so when grading is
    CPU work on the same cores, a few actors per node with several sub-envs
    each leave more CPU to the graders; when an actor dies, all its sub-envs
    get the no-verdict.

    ``autoreset_mode`` is Gymnasium's (``AutoresetMode`` or ``"NextStep"``,
    ``"SameStep"``, ``"Disabled"``), as in our other vector envs.
    ``actor_options`` go to ``ActorClass.options(...)`` (default
    ``{"num_cpus": 0, "scheduling_strategy": "SPREAD"}``: an env waits on its
    grader, which has the CPUs; SPREAD puts the actors on as many nodes as
    there are). ``step_timeout_s`` bounds each call to an actor, the first one
    too (an actor the cluster cannot place fails there); see the module
    docstring for what a dead or silent actor gives. The options are checked
    first by building one env in the driver. With ``grading_pools`` (default),
    one :func:`node_grading_pools` actor per node the envs landed on keeps that
    node's grading pool up while the vector env lives.
    """
    ray = _ray()
    check_registered("make_ray_vec", env_id)
    check_int("make_ray_vec num_envs", num_envs, low=1)
    check_int("make_ray_vec envs_per_actor", envs_per_actor, low=1)
    check_number("make_ray_vec step_timeout_s", step_timeout_s, low=0, low_open=True, unit="seconds")
    autoreset_mode = check_autoreset_mode("make_ray_vec autoreset_mode", autoreset_mode)
    # The options are checked here, once, with the env's own error (an actor that fails to build would only
    # say that it died).
    gym.make(env_id, **env_kwargs).close()
    options = {"num_cpus": 0, "scheduling_strategy": "SPREAD",
               **dict(check_type("make_ray_vec actor_options", actor_options or {}, Mapping, "a dict of Ray actor options"))}
    actor_class = _actor_class(ray)
    counts = [min(envs_per_actor, num_envs - start) for start in range(0, num_envs, envs_per_actor)]
    actors = [actor_class.options(**options).remote(env_id, env_kwargs, count) for count in counts]  # all at once
    hosts = [_Host(ray, env_id, env_kwargs, count, options, step_timeout_s, actor=a) for a, count in zip(actors, counts)]
    proxies = iter([ActorEnv(host, slot) for host in hosts for slot in range(host.count)])
    envs = RayVectorEnv([lambda: next(proxies) for _ in range(num_envs)], autoreset_mode=autoreset_mode,
                        max_workers=1)
    if grading_pools:
        envs.grading_pools = node_grading_pools(sorted({host.node_id for host in hosts}), env_id, env_kwargs)
    return envs


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
    ray = _ray()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    owner = ray.remote(_NodePool)
    pools = {node: owner.options(num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False))
             .remote(env_id, env_kwargs) for node in node_ids}
    ray.get([actor.node_id.remote() for actor in pools.values()])  # built, on their nodes
    return pools

"""The driver side of ``gym_integrity.ray``: sub-env proxies (ActorEnv), batch reset/step per actor, RayVectorEnv, make_ray_vec."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
from gymnasium.vector import AutoresetMode

from gym_integrity.checks import check_int, check_number, check_type
from gym_integrity.protocol import Grade, Verdict, grade_info
from gym_integrity.ray.actors import (
    DEFAULT_STEP_TIMEOUT_S,
    ActorFault,
    ActorHost,
    actor_class,
    gather,
    node_grading_pools,
    require_ray,
)
from gym_integrity.registration import check_registered
from gym_integrity.vector import SubStep, ThreadedVectorEnv, check_autoreset_mode

__all__ = ["ActorEnv", "RayVectorEnv", "make_ray_vec"]


class ActorEnv(gym.Env):
    """A local proxy of one sub-env: slot ``slot`` of a Ray actor that may hold several (see module doc)."""

    def __init__(self, host: ActorHost, slot: int) -> None:
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
        integrity = {
            **self._integrity,
            "steps": int(self._integrity.get("steps", 0)) + 1,
            "frozen": False,
            "actor_replaced": True,
        }
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


def _by_host(proxies: Sequence[ActorEnv], indices: Sequence[int]) -> dict[ActorHost, list[int]]:
    groups: dict[ActorHost, list[int]] = {}
    for i in indices:
        groups.setdefault(proxies[i].host, []).append(i)
    return groups


def _lose_host(proxies: Sequence[ActorEnv], host: ActorHost, fault: ActorFault) -> None:
    """``host``'s actor died: each of its sub-envs owes a no-verdict, and a fresh actor replaces it."""
    cause = host.fault_cause(fault.error)
    for proxy in proxies:
        if proxy.host is host:
            proxy._lost(cause)
    host.replace()


def _reset_batch(
    proxies: Sequence[ActorEnv],
    seeds: Sequence[int | None],
    options: dict[str, Any] | None,
    indices: Sequence[int] | None = None,
) -> list[tuple[Any, dict[str, Any]]]:
    """Reset ``proxies[indices]`` with one call per actor; ``(obs, info)`` in ``indices`` order.

    An actor that dies is replaced and asked once more (a second failure is the
    cluster's, and the caller's to see); its other sub-envs owe a no-verdict.
    """
    indices = list(range(len(proxies))) if indices is None else list(indices)
    ray = proxies[0].host._ray
    groups = _by_host(proxies, indices)

    def send(host: ActorHost) -> Any:
        return host.actor.reset.remote([(proxies[i].slot, seeds[i], options) for i in groups[host]])

    results = gather(ray, {host: send(host) for host in groups}, proxies[0].host.step_timeout_s)
    for host, result in list(results.items()):
        if isinstance(result, ActorFault):
            _lose_host(proxies, host, result)
            results[host] = host.call("reset", [(proxies[i].slot, seeds[i], options) for i in groups[host]])
    out: dict[int, tuple[Any, dict[str, Any]]] = {}
    for host, members in groups.items():
        for i, (obs, info) in zip(members, results[host]):
            out[i] = proxies[i]._reset_done(obs, info)
    return [out[i] for i in indices]


def _step_batch(
    proxies: Sequence[ActorEnv], actions: Sequence[Any], autoreset_mode: AutoresetMode, needs_reset: Sequence[bool]
) -> list[SubStep]:
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
    refs = {
        host: host.actor.step.remote(
            [(proxies[i].slot, actions[i], bool(needs_reset[i])) for i in members], autoreset_mode
        )
        for host, members in groups.items()
    }
    results = gather(ray, refs, proxies[0].host.step_timeout_s) if refs else {}
    for host, members in groups.items():
        result = results[host]
        if isinstance(result, ActorFault):
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
    envs: list[ActorEnv]  # type: ignore[assignment]  # the base's list[Env], narrowed: make_ray_vec builds proxies

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

    def _reset_sub_envs(
        self, indices: list[int], seeds: list[int | None], options: dict[str, Any] | None
    ) -> list[tuple[Any, dict[str, Any]]]:
        return _reset_batch(self.envs, seeds, options, indices)

    def _step_sub_envs(self, actions: list[Any]) -> list[SubStep]:
        return _step_batch(self.envs, actions, self.autoreset_mode, [bool(flag) for flag in self._autoreset_envs])

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """``name`` of each sub-env's stacked env, called with the arguments if callable, run on the actors."""
        self._check_open("call")
        groups = _by_host(self.envs, range(self.num_envs))
        refs = {
            host: host.actor.call.remote([self.envs[i].slot for i in members], name, args, kwargs)
            for host, members in groups.items()
        }
        results = gather(self.envs[0].host._ray, refs, self.envs[0].host.step_timeout_s)
        faults = [(host, result) for host, result in results.items() if isinstance(result, ActorFault)]
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
    ray = require_ray()
    check_registered("make_ray_vec", env_id)
    check_int("make_ray_vec num_envs", num_envs, low=1)
    check_int("make_ray_vec envs_per_actor", envs_per_actor, low=1)
    check_number("make_ray_vec step_timeout_s", step_timeout_s, low=0, low_open=True, unit="seconds")
    autoreset_mode = check_autoreset_mode("make_ray_vec autoreset_mode", autoreset_mode)
    # The options are checked here, once, with the env's own error (an actor that fails to build would only
    # say that it died).
    gym.make(env_id, **env_kwargs).close()
    options = {
        "num_cpus": 0,
        "scheduling_strategy": "SPREAD",
        **dict(check_type("make_ray_vec actor_options", actor_options or {}, Mapping, "a dict of Ray actor options")),
    }
    remote_class = actor_class(ray)
    counts = [min(envs_per_actor, num_envs - start) for start in range(0, num_envs, envs_per_actor)]
    actors = [remote_class.options(**options).remote(env_id, env_kwargs, count) for count in counts]  # all at once
    hosts = [
        ActorHost(ray, env_id, env_kwargs, count, options, step_timeout_s, actor=a) for a, count in zip(actors, counts)
    ]
    proxies = iter([ActorEnv(host, slot) for host in hosts for slot in range(host.count)])
    envs = RayVectorEnv([lambda: next(proxies) for _ in range(num_envs)], autoreset_mode=autoreset_mode, max_workers=1)
    if grading_pools:
        envs.grading_pools = node_grading_pools(sorted({host.node_id for host in hosts}), env_id, env_kwargs)
    return envs

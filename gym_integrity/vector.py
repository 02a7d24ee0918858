"""Vector envs: ThreadedVectorEnv for network-bound grading, and the settings that keep async vector envs honest.

Grading a proof is a wait on an LLM judge, so N envs stepped one after another
take N round trips. :class:`ThreadedVectorEnv` is gymnasium's ``SyncVectorEnv``
(same spaces, batching, autoreset modes and info layout) with each ``step`` and
``reset`` of the sub-envs run at once on a thread pool: N round trips overlap.
Every sub-env comes from ``gym.make(id)``, so each keeps the integrity stack
(registered ids cannot use ``vector_entry_point``: Gymnasium refuses it on a
spec with ``additional_wrappers``).

The alternative across processes is ``gym.make_vec(id, num_envs,
vectorization_mode="async", vector_kwargs=gym_integrity.ASYNC_VECTOR_KWARGS)``:
each worker process builds its own judge client and they grade in parallel.

One autoreset convention for every vector env we build: Gymnasium's default,
``AutoresetMode.NEXT_STEP`` (sync and async ``make_vec``, :func:`make_threaded_vec`,
``gym_integrity.ray.make_ray_vec``). A sub-env that ended is reset by the next
batch step (its action unused, reward 0.0, nothing graded), and a manual
``reset(seed=...)`` of the batch starts every sub-env afresh; Gymnasium's vector
``RecordEpisodeStatistics`` then counts each episode once. ``"Disabled"`` stays
available where asked for: ended sub-envs are stepped frozen, and that wrapper
logs a 0-step record for each such step (docs/architecture.md).

A vector env never repays a reward. A trainer steps the whole batch while some
sub-envs have already ended (a multi-turn batch, autoreset disabled) and sums
each sub-env's rewards; TerminalFreeze's default ``frozen_reward="repeat"``
would pay a finished sub-env its reward again on every such step. Both vector
paths here therefore switch every sub-env's TerminalFreeze to ``"zero"``
(:func:`zero_frozen_rewards`): a step after a sub-env's end returns 0.0 with
``info["integrity"]["frozen"]`` True, so the sum over any number of steps is
the episode's reward. Gymnasium's ``SyncVectorEnv`` never steps an ended sub-env
(it resets it, or with autoreset disabled refuses), so it cannot repay.

Example:

    >>> import numpy as np
    >>> from gym_integrity.vector import make_threaded_vec
    >>> envs = make_threaded_vec("ReasoningGym-v0", 3, dataset="leg_counting")
    >>> envs
    ThreadedVectorEnv(ReasoningGym-v0, num_envs=3)
    >>> obs, infos = envs.reset(seed=[7, 7, 7])  # equal seeds: one GRPO group
    >>> len(set(obs))
    1
    >>> _, rewards, terminated, truncated, infos = envs.step(np.array(["<answer>0</answer>"] * 3, dtype=object))
    >>> terminated.tolist(), sorted(set(infos["verdict"]))
    ([True, True, True], ['incorrect'])
    >>> envs.close()
"""

from __future__ import annotations

import concurrent.futures
import functools
from collections.abc import Callable, Sequence
from copy import deepcopy
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import EnvSpec
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.vector.utils import concatenate, iterate

from gym_integrity.checks import check_choice, check_int

__all__ = [
    "ASYNC_VECTOR_KWARGS",
    "ThreadedVectorEnv",
    "check_autoreset_mode",
    "make_threaded_vec",
    "step_sub_env",
    "subenv_worker",
    "zero_frozen_rewards",
]

#: What one sub-env's share of a batch step gives: obs, reward, terminated, truncated, info, and (SAME_STEP
#: autoreset of an ended sub-env only) ``{"final_obs", "final_info"}``, else None.
SubStep = tuple[Any, float, bool, bool, dict[str, Any], "dict[str, Any] | None"]


def zero_frozen_rewards(env: gym.Env) -> gym.Env:
    """Set every TerminalFreeze in ``env``'s wrapper chain to ``frozen_reward="zero"``; return ``env``.

    For sub-envs of a vector env, whose rewards trainers sum (see the module
    docstring). A single env keeps the mode it was made with.
    """
    from gym_integrity.wrappers.terminal_freeze import TerminalFreeze

    layer: Any = env
    while isinstance(layer, gym.Wrapper):
        if isinstance(layer, TerminalFreeze):
            layer.frozen_reward = "zero"
        layer = layer.env
    return env


class _ZeroFrozenRewards:
    """``env_fn`` whose env comes back with :func:`zero_frozen_rewards` applied (built inside the worker)."""

    def __init__(self, env_fn: Callable[[], gym.Env]) -> None:
        self.env_fn = env_fn

    def __call__(self) -> gym.Env:
        return zero_frozen_rewards(self.env_fn())


class _ResetClearsAutoreset:
    """One async worker's end of its pipe, on which a manual ``reset`` clears the next-step autoreset.

    Gymnasium's worker (1.4) clears its autoreset flag on ``reset`` only when it
    writes to shared memory, which text cannot use: the first step after a manual
    reset of a sub-env whose last step ended it would be taken as the autoreset
    (the action dropped, the seeded problem replaced by an unseeded one). So a
    ``reset`` that follows such a step is preceded by one ``step`` the worker
    spends on that autoreset, whose reply the parent never sees. Were the flag
    already clear, that step would reach an ended sub-env: TerminalFreeze answers
    it without grading (0.0), and the reset follows all the same.
    """

    def __init__(self, pipe: Any) -> None:
        self._pipe = pipe
        self._ended = False  # the worker's flag: its last step ended the episode
        self._held: tuple[str, Any] | None = None  # the parent's reset, delivered after the clearing step
        self._clearing = False
        self._command = ""

    def recv(self) -> tuple[str, Any]:
        if self._held is not None:
            message, self._held = self._held, None
        else:
            message = self._pipe.recv()
            if message[0] == "reset" and self._ended:
                self._held, self._clearing = message, True
                message = ("step", None)
        self._command = message[0]
        return message

    def send(self, message: Any) -> None:
        if self._command == "step":
            result, ok = message
            self._ended = bool(ok and (result[2] or result[3]))
            if self._clearing:
                self._clearing = False
                if ok:  # a failure is the parent's to see: it answers the reset it sent
                    return
        self._pipe.send(message)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pipe, name)


def subenv_worker(
    index: int,
    env_fn: Callable[[], gym.Env],
    pipe: Any,
    parent_pipe: Any,
    shared_memory: Any,
    error_queue: Any,
    autoreset_mode: Any,
    *args: Any,
) -> None:
    """``AsyncVectorEnv`` worker: Gymnasium's own, on a sub-env whose frozen steps pay 0.0.

    Without shared memory under next-step autoreset its pipe is wrapped so that a
    manual reset clears the autoreset (:class:`_ResetClearsAutoreset`). The rest
    (from Gymnasium 1.4, the concurrency semaphore) passes through unchanged, so
    this follows whichever Gymnasium is installed.
    """
    from gymnasium.vector.async_vector_env import _async_worker

    if not shared_memory and AutoresetMode(autoreset_mode) == AutoresetMode.NEXT_STEP:
        pipe = _ResetClearsAutoreset(pipe)
    _async_worker(
        index, _ZeroFrozenRewards(env_fn), pipe, parent_pipe, shared_memory, error_queue, autoreset_mode, *args
    )


def check_autoreset_mode(name: str, value: Any) -> AutoresetMode:
    """``value`` as an ``AutoresetMode``: the enum, or its value ``"NextStep"``, ``"SameStep"`` or ``"Disabled"``."""
    if isinstance(value, AutoresetMode):
        return value
    return AutoresetMode(check_choice(name, value, [mode.value for mode in AutoresetMode]))


def step_sub_env(env: gym.Env, autoreset_mode: AutoresetMode, needs_reset: bool, action: Any) -> SubStep:
    """One sub-env's share of a batch step under ``autoreset_mode``, as ``SyncVectorEnv`` plays it.

    ``needs_reset`` is the vector env's autoreset flag for this sub-env (it
    ended on the previous step). Module-level so that a sub-env held in another
    process (a Ray actor) plays its share by the same rule.
    """
    if autoreset_mode == AutoresetMode.NEXT_STEP:
        if needs_reset:
            obs, info = env.reset()
            return obs, 0.0, False, False, info, None
        obs, reward, terminated, truncated, info = env.step(action)
        return obs, float(reward), terminated, truncated, info, None
    if autoreset_mode == AutoresetMode.DISABLED:
        # An ended sub-env is stepped with its batch: TerminalFreeze answers (reward 0.0).
        obs, reward, terminated, truncated, info = env.step(action)
        return obs, float(reward), terminated, truncated, info, None
    if autoreset_mode == AutoresetMode.SAME_STEP:
        obs, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            final = {"final_obs": obs, "final_info": info}
            obs, info = env.reset()
            return obs, float(reward), terminated, truncated, info, final
        return obs, float(reward), terminated, truncated, info, None
    raise ValueError(f"Unexpected autoreset mode, {autoreset_mode}")


#: ``vector_kwargs`` for ``gym.make_vec(id, n, vectorization_mode="async", vector_kwargs=...)``
#: with text spaces:
#:
#: - ``shared_memory=False``: text has no fixed-size buffer;
#: - ``autoreset_mode="NextStep"``: the convention of every vector env we build (module docstring);
#: - ``worker=subenv_worker``: Gymnasium's worker on sub-envs whose steps after their end pay
#:   0.0, so a finished sub-env stepped with its batch never repays its reward, and whose
#:   manual reset clears the next-step autoreset (which Gymnasium 1.4 does only with shared memory).
ASYNC_VECTOR_KWARGS: dict[str, Any] = {
    "shared_memory": False,
    "autoreset_mode": AutoresetMode.NEXT_STEP.value,
    "worker": subenv_worker,
}


class ThreadedVectorEnv(SyncVectorEnv):
    """``SyncVectorEnv`` whose sub-envs ``step``/``reset`` concurrently on a thread pool.

    Results are gathered in sub-env order, so observations, rewards and infos
    are laid out exactly as ``SyncVectorEnv`` lays them out. If a sub-env raises,
    the others finish their call first and the first error (by index) is raised.

    Args:
        env_fns: callables that build each sub-env (e.g. ``lambda: gym.make(id)``).
        max_workers: threads in the pool (default: one per sub-env).
        copy, observation_mode, autoreset_mode: as for ``SyncVectorEnv``.

    Sub-envs run in different threads at once, so what they share must be
    thread-safe: the package's judge client and verifier service are.

    Every sub-env's TerminalFreeze pays 0.0 after its end (:func:`zero_frozen_rewards`).
    With ``autoreset_mode="Disabled"``, an ended sub-env stepped with its batch
    returns its frozen final transition (reward 0.0, ``integrity.frozen`` True)
    until the trainer resets it.
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], gym.Env]],
        copy: bool = True,
        observation_mode: str | tuple[gym.Space, gym.Space] = "same",
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        max_workers: int | None = None,
    ) -> None:
        check_int("ThreadedVectorEnv.max_workers", max_workers, low=1, optional=True)
        autoreset_mode = check_autoreset_mode("ThreadedVectorEnv.autoreset_mode", autoreset_mode)
        super().__init__(env_fns, copy=copy, observation_mode=observation_mode, autoreset_mode=autoreset_mode)
        for env in self.envs:
            zero_frozen_rewards(env)
        # As gym.make_vec gives sync and async vector envs a spec: tools read max_episode_steps from it.
        self.spec = deepcopy(self.envs[0].spec) if self.envs and self.envs[0].spec is not None else None
        self.max_workers = max_workers or self.num_envs
        self._pool = concurrent.futures.ThreadPoolExecutor(self.max_workers, thread_name_prefix="threaded-vector-env")

    def __repr__(self) -> str:
        spec = getattr(self.envs[0], "spec", None) if self.envs else None
        name = f"{spec.id}, " if spec is not None else ""
        return f"ThreadedVectorEnv({name}num_envs={self.num_envs})"

    def _check_open(self, method: str) -> None:
        if self.closed:  # else the thread pool's own "cannot schedule new futures after shutdown"
            raise RuntimeError(f"{type(self).__name__}.{method}: this vector env is closed; make a new one")

    def _all(self, calls: Sequence[Callable[[], Any]]) -> list[Any]:
        futures = [self._pool.submit(call) for call in calls]
        concurrent.futures.wait(futures)
        return [f.result() for f in futures]  # raises the first error by index

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        self._check_open("reset")
        if seed is None:
            seed = [None for _ in range(self.num_envs)]
        elif isinstance(seed, int):
            seed = [seed + i for i in range(self.num_envs)]
        if len(seed) != self.num_envs:
            raise ValueError(
                f"ThreadedVectorEnv.reset seed: a list of seeds must have num_envs={self.num_envs} items, "
                f"got {len(seed)}"
            )
        mask = np.ones((self.num_envs,), dtype=np.bool_)
        if options is not None and "reset_mask" in options:
            options = dict(options)
            mask = options.pop("reset_mask")
            where = "ThreadedVectorEnv.reset options['reset_mask']"
            if not isinstance(mask, np.ndarray) or mask.dtype != np.bool_:
                raise TypeError(
                    f"{where} must be a bool numpy array of shape ({self.num_envs},), "
                    f"got {type(mask).__name__} of dtype {getattr(mask, 'dtype', None)}"
                )
            if mask.shape != (self.num_envs,):
                raise ValueError(f"{where} must have shape ({self.num_envs},), got {mask.shape}")
            if not np.any(mask):
                raise ValueError(f"{where} must contain at least one True value")
        self._terminations[mask] = False
        self._truncations[mask] = False
        self._autoreset_envs[mask] = False

        indices = [i for i in range(self.num_envs) if mask[i]]
        results = self._reset_sub_envs(indices, seed, options)
        infos: dict[str, Any] = {}
        for i, (obs, info) in zip(indices, results):
            self._env_obs[i] = obs
            infos = self._add_info(infos, info, i)
        self._observations = concatenate(self.single_observation_space, self._env_obs, self._observations)
        return deepcopy(self._observations) if self.copy else self._observations, infos

    def _reset_sub_envs(
        self, indices: list[int], seeds: list[int | None], options: dict[str, Any] | None
    ) -> list[tuple[Any, dict[str, Any]]]:
        """Reset the sub-envs at ``indices`` (all at once); their ``(obs, info)`` in that order."""
        return self._all([functools.partial(self.envs[i].reset, seed=seeds[i], options=options) for i in indices])

    def _step_sub_envs(self, actions: list[Any]) -> list[SubStep]:
        """Every sub-env's share of the batch step (all at once), in sub-env order."""
        return self._all(
            [
                functools.partial(step_sub_env, self.envs[i], self.autoreset_mode, bool(self._autoreset_envs[i]), a)
                for i, a in enumerate(actions)
            ]
        )

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        self._check_open("step")
        if isinstance(actions, (str, bytes)):  # iterating would step each sub-env with one character
            raise TypeError(
                f"{type(self).__name__}.step actions must be a sequence of num_envs={self.num_envs} actions, "
                f"one per sub-env, got a {type(actions).__name__}"
            )
        action_list = list(iterate(self.action_space, actions))
        if len(action_list) != self.num_envs:
            raise ValueError(f"ThreadedVectorEnv.step actions: expected {self.num_envs}, got {len(action_list)}")
        results = self._step_sub_envs(action_list)
        infos: dict[str, Any] = {}
        for i, (obs, reward, terminated, truncated, info, final) in enumerate(results):
            self._env_obs[i] = obs
            self._rewards[i] = reward
            self._terminations[i] = terminated
            self._truncations[i] = truncated
            if final is not None:
                infos = self._add_info(infos, final, i)
            infos = self._add_info(infos, info, i)
        self._observations = concatenate(self.single_observation_space, self._env_obs, self._observations)
        self._autoreset_envs = np.logical_or(self._terminations, self._truncations)
        return (
            deepcopy(self._observations) if self.copy else self._observations,
            np.copy(self._rewards),
            np.copy(self._terminations),
            np.copy(self._truncations),
            infos,
        )

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        self._check_open("call")

        def one(env: gym.Env) -> Any:
            attr = env.get_wrapper_attr(name)
            return attr(*args, **kwargs) if callable(attr) else attr

        return tuple(self._all([functools.partial(one, env) for env in self.envs]))

    def close_extras(self, **kwargs: Any) -> None:
        try:
            super().close_extras(**kwargs)
        finally:
            self._pool.shutdown(wait=True)


def make_threaded_vec(
    id: str | EnvSpec,
    num_envs: int = 1,
    *,
    max_workers: int | None = None,
    autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
    copy: bool = True,
    **kwargs: Any,
) -> ThreadedVectorEnv:
    """``num_envs`` copies of ``gym.make(id, **kwargs)`` (integrity stack on each) stepped concurrently.

    Pass an ``EnvSpec`` (e.g. from ``gym_integrity.make(...).spec``) to change
    the stack's own settings.
    """
    check_int("make_threaded_vec.num_envs", num_envs, low=1)
    return ThreadedVectorEnv(
        [lambda: gym.make(id, **kwargs) for _ in range(num_envs)],
        copy=copy,
        autoreset_mode=autoreset_mode,
        max_workers=max_workers,
    )

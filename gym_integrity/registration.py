"""The registered env ids: each env package's ``ENTRY``, registered with the integrity stack as ``additional_wrappers``."""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path
from typing import Any

import gymnasium as gym

from gym_integrity.checks import check_str, check_type
from gym_integrity.envs.entry import EnvEntry, Sweep
from gym_integrity.wrappers.stack import STACK_SWITCHES, StackConfig, integrity_wrapper_specs


def _package_entries() -> tuple[EnvEntry, ...]:
    """The ``ENTRY`` of every package under ``gym_integrity/envs/`` (a light import: see envs/entry.py)."""
    entries = []
    for path in sorted(Path(__file__).parent.joinpath("envs").iterdir()):
        if (path / "__init__.py").is_file():
            entry = getattr(importlib.import_module(f"gym_integrity.envs.{path.name}"), "ENTRY", None)
            if entry is not None:
                entries.append(check_type(f"gym_integrity.envs.{path.name}.ENTRY", entry, EnvEntry, "an EnvEntry"))
    return tuple(entries)


__all__ = [
    "REGISTERED",
    "EnvEntry",
    "Sweep",
    "register_env",
    "register_envs",
    "env_entries",
    "env_entry",
    "make",
    "check_registered",
]


#: Every id the package registers: the ``ENTRY`` of each package under ``gym_integrity/envs/`` (see
#: :mod:`gym_integrity.envs.entry`), by package name. Adding an env package adds its id here.
REGISTERED: tuple[EnvEntry, ...] = _package_entries()


#: Every entry registered in this process, ours and users', in registration order.
_ENTRIES: dict[str, EnvEntry] = {}


def register_env(entry: EnvEntry) -> None:
    """Register ``entry.id`` with the integrity stack on it, and keep its facts for the audit (:func:`env_entries`).

    This is how an env outside the package joins: call it when your module is
    imported. Registering the same entry again does nothing (re-imports are
    safe); another entry under a taken id is a ``ValueError``.

    In ``my_envs/__init__.py``::

        from gym_integrity import EnvEntry, register_env
        register_env(EnvEntry("Echo-v0", "my_envs.echo:EchoEnv", "repeat the prompt"))

    Example:
        >>> register_env(EnvEntry("FinQA-v0", "my_envs.finqa:OtherEnv", "another env"))
        Traceback (most recent call last):
        ...
        ValueError: register_env: 'FinQA-v0' is already registered with other facts (entry point 'gym_integrity.envs.finqa:FinQAEnv')
    """
    check_type("register_env entry", entry, EnvEntry, "an EnvEntry")
    known = _ENTRIES.get(entry.id)
    if known is not None:
        if known == entry:
            return
        raise ValueError(
            f"register_env: {entry.id!r} is already registered with other facts (entry point {known.entry_point!r})"
        )
    if entry.id in gym.registry:
        # Registered by this module before a reload (gymnasium's registry outlives it) is fine; anyone else's is not.
        if gym.registry[entry.id].entry_point != entry.entry_point:
            raise ValueError(
                f"register_env: {entry.id!r} is already a gymnasium id "
                f"(entry point {gym.registry[entry.id].entry_point!r})"
            )
    else:
        # disable_env_checker: Gymnasium 1.4's PassiveEnvChecker marks its first reset checked before calling
        # it, so a first reset that raises (a mistyped option) leaves every later step raising TypeError from
        # the checker. Every registered env runs gymnasium's full check_env in tests/test_conformance.py
        # instead; gym.make(id, disable_env_checker=False) still adds the passive one.
        # order_enforce=False: a TextEnv raises ResetNeeded on a step before reset itself (the contract in
        # envs/base.py, checked for every entry in tests/test_conformance.py) and renders "" before it, so
        # OrderEnforcing would only repeat the check on every call (about 2 µs of a 50 µs episode).
        # max_episode_steps makes gym.make put a TimeLimit under the stack; MaxStepsTruncation takes the env
        # below it (TimeLimit would also truncate an answer on the last step: docs/architecture.md).
        gym.register(
            id=entry.id,
            entry_point=entry.entry_point,
            nondeterministic=entry.nondeterministic,
            max_episode_steps=entry.max_episode_steps,
            additional_wrappers=integrity_wrapper_specs(),
            disable_env_checker=True,
            order_enforce=False,
        )
    _ENTRIES[entry.id] = entry


def check_registered(owner: str, env_id: Any) -> str:
    """``env_id`` if it is a registered gymnasium id, else a ``ValueError`` naming ``owner`` and every entry's id.

    >>> check_registered("make_dataset", "Nope-v0")
    Traceback (most recent call last):
    ...
    ValueError: make_dataset: 'Nope-v0' is not a registered id; registered: ['FinQA-v0', ...]
    """
    check_str(f"{owner} env_id", env_id)
    if env_id not in gym.registry:
        raise ValueError(f"{owner}: {env_id!r} is not a registered id; registered: {[e.id for e in env_entries()]}")
    return env_id


def register_envs() -> None:
    """Register every id in :data:`REGISTERED` (idempotent: re-import safe)."""
    for entry in REGISTERED:
        register_env(entry)


def env_entries() -> tuple[EnvEntry, ...]:
    """Every entry registered in this process: the package's, then those added with :func:`register_env`."""
    return tuple(_ENTRIES.values())


def env_entry(env_id: str) -> EnvEntry | None:
    """The entry of ``env_id``, or None for an id registered some other way (its audit uses the defaults)."""
    return _ENTRIES.get(env_id)


def make(id: str, **kwargs: Any) -> gym.Env:
    """``gym.make`` with the integrity stack's own settings exposed.

    ``gym.make(id, **kwargs)`` passes keyword arguments to the env only, so the
    stack's settings, the fields of :class:`~gym_integrity.wrappers.StackConfig`,
    are taken here and the rest go to the env: ``reveal_on_end=True`` is the
    trainer's explicit opt-in to see answer-bearing info on the final transition
    (for logging); ``frozen_reward`` and ``max_steps`` set TerminalFreeze and
    MaxStepsTruncation. The result is built by ``gym.make`` from a copy of the
    registered spec, so ``env.spec`` recreates it.
    """
    config = StackConfig(**{name: kwargs.pop(name) for name in STACK_SWITCHES if name in kwargs})
    spec = dataclasses.replace(gym.spec(id), additional_wrappers=integrity_wrapper_specs(config))
    return gym.make(spec, **kwargs)

"""The registered env ids, each with the integrity stack as ``additional_wrappers`` and the facts the auditor needs."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping

import gymnasium as gym

from gym_integrity.checks import check_bool, check_str, check_strs, check_type
from gym_integrity.wrappers.stack import integrity_wrapper_specs

__all__ = ["REGISTERED", "EnvEntry", "Sweep", "register_env", "register_envs", "env_entries", "env_entry", "make",
           "check_registered"]


@dataclass(frozen=True)
class Sweep:
    """One config option whose every value the audit can sweep (``gym-integrity audit ID --all-datasets``).

    ``values`` is ``"module:function"``, a function returning the values: a
    string, so that registering the id imports nothing heavy.

    >>> Sweep("dataset", "gym_integrity.envs.reasoning_gym:available_datasets").option
    'dataset'
    """

    option: str
    values: str
    noun: str = "datasets"

    def __post_init__(self) -> None:
        check_str("Sweep.option", self.option)
        check_str("Sweep.noun", self.noun)
        if ":" not in check_str("Sweep.values", self.values):
            raise ValueError(f"Sweep.values must be 'module:function', got {self.values!r}")

    def load(self) -> list[str]:
        """The values to sweep, from the function ``values`` names."""
        import importlib

        module, _, name = self.values.partition(":")
        return list(getattr(importlib.import_module(module), name)())


@dataclass(frozen=True)
class EnvEntry:
    """One registered id: how to build it and what the auditor and the tests must know about it.

    Args:
        id: The gym id (``Name-v0``).
        entry_point: ``"module:Class"`` of the raw env (a :class:`~gym_integrity.envs.base.TextEnv`).
        description: One line for ``gym-integrity list``.
        nondeterministic: Equal seeds may give unequal rewards (an LLM grades).
        needs_judge: Some answers are graded by an LLM judge. The env takes a
            ``judge`` option (a :class:`~gym_integrity.services.judge.JudgeConfig`
            dict), which the audit points at a local stub.
        audit_variants: ``name -> options``: the audit makes one column per
            variant (``ID [name]``), so that every grading path is exercised.
            Empty: one column with the defaults.
        judged_variant: The variant graded by the judge; audited once more against
            a judge fooled by score tags (``ID [name, fooled judge]``, the
            self-dealing probe only).
        ends_by_itself: The raw class ends every episode without the stack
            (single-turn, or counted attempts). False for a tool env whose step
            budget only MaxStepsTruncation enforces: its raw class fails the
            audit's ``step_budget`` probe, as it should.
        sweep: An option the audit can sweep with ``--all-datasets``.
        audit_preload: Modules slow to import (the env's task library) that the
            audit imports once in the server its child processes fork from.

    Example:
        >>> entry = EnvEntry("Echo-v0", "my_envs:EchoEnv", "repeat the prompt", audit_variants={"loud": {"repeat": 3}})
        >>> entry.audit_variants["loud"], entry.needs_judge
        ({'repeat': 3}, False)
        >>> EnvEntry("Echo-v0", "my_envs.EchoEnv", "repeat the prompt")
        Traceback (most recent call last):
        ...
        ValueError: EnvEntry.entry_point must be 'module:Class', got 'my_envs.EchoEnv'
    """

    id: str
    entry_point: str
    description: str
    nondeterministic: bool = False
    needs_judge: bool = False
    audit_variants: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, hash=False)
    judged_variant: str | None = None
    ends_by_itself: bool = True
    sweep: Sweep | None = None
    audit_preload: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_str("EnvEntry.id", self.id)
        check_str("EnvEntry.description", self.description)
        if ":" not in check_str("EnvEntry.entry_point", self.entry_point):
            raise ValueError(f"EnvEntry.entry_point must be 'module:Class', got {self.entry_point!r}")
        for name in ("nondeterministic", "needs_judge", "ends_by_itself"):
            check_bool(f"EnvEntry.{name}", getattr(self, name))
        check_type("EnvEntry.audit_variants", self.audit_variants, Mapping, "a dict of name -> options")
        variants = {}
        for name, options in self.audit_variants.items():
            check_str("EnvEntry.audit_variants key", name)
            check_type(f"EnvEntry.audit_variants[{name!r}]", options, Mapping, "a dict of options")
            variants[name] = dict(options)
        object.__setattr__(self, "audit_variants", variants)  # our own copy: the entry is frozen
        if check_str("EnvEntry.judged_variant", self.judged_variant, optional=True) is not None:
            if self.judged_variant not in variants:
                raise ValueError(f"EnvEntry.judged_variant must be one of audit_variants {list(variants)}, "
                                 f"got {self.judged_variant!r}")
            if not self.needs_judge:
                raise ValueError("EnvEntry.judged_variant needs needs_judge=True")
        if self.sweep is not None:
            check_type("EnvEntry.sweep", self.sweep, Sweep, "a Sweep or None")
        object.__setattr__(self, "audit_preload", check_strs("EnvEntry.audit_preload", self.audit_preload))


#: Every id the package registers. Envs graded by an LLM are nondeterministic.
REGISTERED: tuple[EnvEntry, ...] = (
    EnvEntry(
        "ReasoningGym-v0",
        "gym_integrity.envs.reasoning_gym:ReasoningGymEnv",
        "reasoning-gym's procedural tasks (or a weighted composite): strict scoring, expression scorers sandboxed",
        sweep=Sweep("dataset", "gym_integrity.envs.reasoning_gym:available_datasets"),
        audit_preload=("reasoning_gym",),  # about 2 s to import
    ),
    EnvEntry(
        "QEDMath-v0",
        "gym_integrity.envs.qed_math:QEDMathEnv",
        "olympiad math: proofs graded 0-7 by an LLM judge, boxed answers by math_verify, multi-attempt problems",
        nondeterministic=True,
        needs_judge=True,
        audit_variants={kind: {"problem_types": [kind]} for kind in ("answer", "proof", "multi_step")},
        judged_variant="proof",
    ),
    EnvEntry(
        "FinQA-v0",
        "gym_integrity.envs.finqa:FinQAEnv",
        "financial questions answered through table tools and a read-only SQL sandbox, one tool call per step",
        ends_by_itself=False,
    ),
)

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
        raise ValueError(f"register_env: {entry.id!r} is already registered with other facts "
                         f"(entry point {known.entry_point!r})")
    if entry.id in gym.registry:
        # Registered by this module before a reload (gymnasium's registry outlives it) is fine; anyone else's is not.
        if gym.registry[entry.id].entry_point != entry.entry_point:
            raise ValueError(f"register_env: {entry.id!r} is already a gymnasium id "
                             f"(entry point {gym.registry[entry.id].entry_point!r})")
    else:
        # disable_env_checker: Gymnasium 1.4's PassiveEnvChecker marks its first reset checked before calling
        # it, so a first reset that raises (a mistyped option) leaves every later step raising TypeError from
        # the checker. Every registered env runs gymnasium's full check_env in tests/test_conformance.py
        # instead; gym.make(id, disable_env_checker=False) still adds the passive one.
        # order_enforce=False: a TextEnv raises ResetNeeded on a step before reset itself (the contract in
        # envs/base.py, checked for every entry in tests/test_conformance.py) and renders "" before it, so
        # OrderEnforcing would only repeat the check on every call (about 2 µs of a 50 µs episode).
        gym.register(id=entry.id, entry_point=entry.entry_point, nondeterministic=entry.nondeterministic,
                     additional_wrappers=integrity_wrapper_specs(), disable_env_checker=True, order_enforce=False)
    _ENTRIES[entry.id] = entry


def check_registered(owner: str, env_id: Any) -> str:
    """``env_id`` if it is a registered gymnasium id, else a ``ValueError`` naming ``owner`` and every entry's id.

    >>> check_registered("make_dataset", "Nope-v0")
    Traceback (most recent call last):
    ...
    ValueError: make_dataset: 'Nope-v0' is not a registered id; registered: ['ReasoningGym-v0', ...]
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


def make(
    id: str,
    *,
    reveal_on_end: bool = False,
    frozen_reward: Literal["repeat", "zero"] = "repeat",
    max_steps: int | None = None,
    deep_scan: bool = False,
    **kwargs: Any,
) -> gym.Env:
    """``gym.make`` with the integrity stack's own settings exposed.

    ``gym.make(id, **kwargs)`` passes keyword arguments to the env only, so the
    stack's switches live here: ``reveal_on_end=True`` is the trainer's explicit
    opt-in to see answer-bearing info on the final transition (for logging);
    ``frozen_reward`` and ``max_steps`` set TerminalFreeze and MaxStepsTruncation;
    ``deep_scan=True`` makes HideInfoKeys visit every key at every depth even for
    an env that declares the privileged-info convention (belt and braces, +11 µs
    an episode on ReasoningGym-v0).
    The result is built by ``gym.make`` from a copy of the registered spec, so
    ``env.spec`` recreates it.
    """
    spec = dataclasses.replace(
        gym.spec(id),
        additional_wrappers=integrity_wrapper_specs(
            max_steps=max_steps, reveal_on_end=reveal_on_end, frozen_reward=frozen_reward, deep_scan=deep_scan
        ),
    )
    return gym.make(spec, **kwargs)

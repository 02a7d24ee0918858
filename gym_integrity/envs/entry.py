"""What an env package declares about itself: its :class:`EnvEntry` (id, entry point, audit facts) and lazy exports.

Each package under ``gym_integrity/envs/`` names its entry ``ENTRY`` in its
``__init__.py``; ``gym_integrity.registration`` finds every such package and
registers its entry, so adding an env edits no central list. The package's
``__init__`` stays light (``import gym_integrity`` registers every id and
imports no env module): :func:`lazy_exports` loads its classes on first use.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gym_integrity.checks import check_bool, check_int, check_str, check_strs, check_type

__all__ = ["EnvEntry", "Sweep", "lazy_exports"]


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
    #: Options every swept value is made with too, as ``(name, value)`` pairs: ReasoningGym-v0's
    #: ``allow_above_chance``, so that the sweep audits the datasets not made by default as well.
    with_options: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        check_str("Sweep.option", self.option)
        check_str("Sweep.noun", self.noun)
        check_type("Sweep.with_options", self.with_options, tuple, "a tuple of (option, value) pairs")
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
        max_episode_steps: The default step budget, for ``spec.max_episode_steps``
            (tools read it there); None where the data sets it (per problem).
            MaxStepsTruncation enforces the budget, in place of the TimeLimit
            ``gym.make`` adds for it.

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
    max_episode_steps: int | None = None

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
                raise ValueError(
                    f"EnvEntry.judged_variant must be one of audit_variants {list(variants)}, "
                    f"got {self.judged_variant!r}"
                )
            if not self.needs_judge:
                raise ValueError("EnvEntry.judged_variant needs needs_judge=True")
        if self.sweep is not None:
            check_type("EnvEntry.sweep", self.sweep, Sweep, "a Sweep or None")
        object.__setattr__(self, "audit_preload", check_strs("EnvEntry.audit_preload", self.audit_preload))
        check_int("EnvEntry.max_episode_steps", self.max_episode_steps, low=1, optional=True)


def lazy_exports(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``names`` maps an exported name to the submodule defining it.

    >>> getattr_ = lazy_exports("gym_integrity.envs.reasoning_gym", {"ReasoningGymConfig": "config"})
    >>> getattr_("ReasoningGymConfig").__name__
    'ReasoningGymConfig'
    """

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{names[name]}"), name)

    return __getattr__

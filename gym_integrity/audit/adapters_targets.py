"""Third-party targets by name: ``reward:``, ``rg:``, ``gem:``, ``skyrl:``, ``verifiers:`` specs, built as text envs.

A spec names what a researcher trains on; :func:`adapt` builds it as a text
env (its adapter module: ``adapters_reward``, ``adapters_gem``, ...) that
``check_integrity`` and ``integrity_stack`` accept, without editing it:

=====================================  ===================================================================
``reward:<module:function>``           a TRL reward function or a verl ``compute_score`` over ``dataset=``
``rg:<dataset>``                       reasoning-gym's own scorer of that dataset (``score_answer``)
``gem:<id>``                           ``gem.make(id, **options)`` (the ``[gem]`` extra)
``skyrl:<id>``                         ``skyrl_gym.make(id, ...)`` over the rows of ``dataset=`` (``[skyrl]``)
``verifiers:<module>``                 a v1 taskset loaded as ``vf-eval`` loads it, scored by its tasks
``openenv:<url>``                      an OpenEnv MCP env server this package did not build (``[serve]``)
=====================================  ===================================================================

``build(spec, stacked=True)`` is the same env inside ``integrity_stack``; the
CLI's child processes call :func:`build` by module path, so every option is
plain data. :func:`check_target` audits one spec in a child process, as
``gym-integrity audit SPEC`` does; many at once, on every core::

    from gym_integrity.audit.isolate import run_isolated
    targets = adapted_targets(["rg:leg_counting", "gem:rg:leg_counting"], {}, compare=True)
    reports = [annotate(r) for r in run_isolated([t.isolated(probes) for t in targets], probes, AuditSettings())]

Example:
    >>> split_spec("reward:my_rewards:accuracy")
    ('reward', 'my_rewards:accuracy')
    >>> is_adapter_target("gem:rg:leg_counting"), is_adapter_target("mymod:MyEnv-v0")
    (True, False)
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from gym_integrity.checks import check_type

__all__ = [
    "KINDS",
    "is_adapter_target",
    "split_spec",
    "adapt",
    "build",
    "check_target",
    "preflight",
    "AdaptedTarget",
    "adapted_targets",
    "BUILD_ENTRY",
    "annotate",
    "GOLD_NOTE",
]

#: Where a child process finds :func:`build` (``IsolatedTarget``'s ``"module:function"`` form).
BUILD_ENTRY = f"{__name__}:build"


def _reward(rest: str, **options: Any) -> gym.Env:
    from gym_integrity.audit.adapters_reward import RewardFunctionEnv

    if "dataset" not in options:
        raise ValueError(f"reward:{rest} needs a dataset (--dataset PATH|ID, or dataset=)")
    return RewardFunctionEnv(rest, **options)


def _reasoning_gym(rest: str, **options: Any) -> gym.Env:
    from gym_integrity.audit.adapters_reward import reasoning_gym_scorer_env

    return reasoning_gym_scorer_env(rest, **options)


def _gem(rest: str, **options: Any) -> gym.Env:
    from gym_integrity.audit.adapters_gem import GemEnv

    return GemEnv(rest, **options)


def _skyrl(rest: str, **options: Any) -> gym.Env:
    from gym_integrity.audit.adapters_skyrl import SkyRLEnv

    return SkyRLEnv(rest, **options)


def _openenv(rest: str, **options: Any) -> gym.Env:
    from gym_integrity.audit.adapters_openenv import OpenEnvMCPEnv

    return OpenEnvMCPEnv(rest, **options)


def _verifiers(rest: str, **options: Any) -> gym.Env:
    from gym_integrity.audit.adapters_verifiers import VerifiersEnv

    return VerifiersEnv(rest, **options)


#: Each spec prefix, its builder and what installs its library (None: nothing beyond the package).
KINDS: dict[str, tuple[Callable[..., gym.Env], str | None]] = {
    "reward": (_reward, None),
    "rg": (_reasoning_gym, None),
    "gem": (_gem, "gem"),
    "skyrl": (_skyrl, "skyrl"),
    "verifiers": (_verifiers, "verifiers"),
    "openenv": (_openenv, "serve"),
}
_LIBRARIES = {"gem": "gem", "skyrl": "skyrl_gym", "verifiers": "verifiers", "openenv": "openenv"}


def split_spec(spec: str) -> tuple[str, str]:
    """``"kind:rest"`` -> ``(kind, rest)``; ``ValueError`` for an unknown kind or nothing after it."""
    check_type("target spec", spec, str, f"'KIND:NAME' with KIND one of {list(KINDS)}")
    kind, sep, rest = spec.partition(":")
    if not sep or kind not in KINDS:
        raise ValueError(f"target {spec!r}: expected KIND:NAME with KIND one of {list(KINDS)}")
    if not rest:
        raise ValueError(f"target {spec!r}: nothing after {kind}:")
    return kind, rest


def is_adapter_target(spec: str) -> bool:
    """True if ``spec`` starts with one of :data:`KINDS`' prefixes (a module of that name is shadowed)."""
    return isinstance(spec, str) and spec.partition(":")[0] in KINDS and ":" in spec


def adapt(spec: str, **options: Any) -> gym.Env:
    """The target ``spec`` names, as a text env the auditor can play (no integrity stack)."""
    kind, rest = split_spec(spec)
    return KINDS[kind][0](rest, **options)


def build(target: str, stacked: bool = False, max_steps: int | None = None, **options: Any) -> gym.Env:
    """:func:`adapt`, inside ``integrity_stack(env, max_steps=max_steps)`` if ``stacked`` (None: the budget the
    adapter declares, ``step_budget``): what each audit process builds."""
    env = adapt(target, **options)
    if stacked:
        from gym_integrity.wrappers import integrity_stack

        env = integrity_stack(env, max_steps=max_steps)
    return env


def _registered_ids(kind: str) -> list[str] | None:
    """The ids a library registers, for the kinds named by id (None for the others)."""
    if kind == "gem":
        from gem.envs.registration import ENV_REGISTRY

        return list(ENV_REGISTRY)
    if kind == "skyrl":
        import skyrl_gym

        return list(skyrl_gym.envs.registration.registry)
    return None


def _import_taskset(spec: str, taskset_id: str) -> str | None:
    """Import a taskset that is not one of verifiers' own here, from the working directory too (as ``python -m``
    would): the audit's processes then find it on the path they get from this one. Why not, or None."""
    import importlib.util

    from gym_integrity.audit.isolate import import_env_modules

    module = taskset_id.rsplit("/", 1)[-1].split("@", 1)[0].replace("-", "_").lower()  # verifiers' own naming
    if importlib.util.find_spec(f"verifiers.v1.tasksets.{module}") is not None:
        return None
    try:
        import_env_modules([module])
    except Exception as exc:  # the user's module: any error in it is theirs to see
        return f"{spec}: importing {module} raised {type(exc).__name__}: {exc}"
    return None


def preflight(spec: str, options: dict[str, Any]) -> str | None:
    """Why ``spec`` cannot be audited, found before any process starts (None: go on): a missing library (with
    the extra that installs it), a reward function that does not import, a missing dataset."""
    try:
        kind, rest = split_spec(spec)
    except ValueError as exc:
        return str(exc)
    extra = KINDS[kind][1]
    if extra is not None:
        import importlib.util

        if importlib.util.find_spec(_LIBRARIES[kind]) is None:
            return f"{spec}: needs {_LIBRARIES[kind]}: pip install 'gym-integrity[{extra}]'"
    known = _registered_ids(kind)
    if known is not None and rest not in known:
        import difflib

        close = difflib.get_close_matches(rest, known, n=3)
        return f"{spec}: {rest!r} is not a {kind} id" + (f" (did you mean {close}?)" if close else "")
    if kind == "verifiers":
        return _import_taskset(spec, rest)
    if kind == "reward":
        from gym_integrity.audit.adapters_reward import load_callable

        if options.get("dataset") is None:
            return f"{spec}: a reward function is audited over a dataset: pass --dataset PATH|ID"
        try:
            load_callable(rest)
        except Exception as exc:  # the user's module: any error in it is theirs to see
            return f"{spec}: importing {rest} raised {type(exc).__name__}: {exc}"
    return None


#: What a report of an adapted target says when its probes had no gold.
GOLD_NOTE = (
    "no gold answer for this target: pass --gold-column COL (gold_column=), the dataset column that holds "
    "an answer its reward accepts, so that the probes that answer with the gold can run"
)


def annotate(report: Any) -> Any:
    """Add :data:`GOLD_NOTE` to a report of an adapted target whose probes lacked a gold; the report."""
    if any(r.reason and "no gold" in r.reason for r in report.missing) and GOLD_NOTE not in report.notes:
        report.notes.append(GOLD_NOTE)
    return report


@dataclass
class AdaptedTarget:
    """One column of the audit for a third-party spec: the adapter alone (``raw``) or inside the stack."""

    spec: str
    raw: bool
    options: dict[str, Any]
    label: str | None = None
    probes: tuple[str, ...] | None = None
    env_id: str = ""
    variant: str | None = None

    def __post_init__(self) -> None:
        self.env_id = self.spec

    @property
    def name(self) -> str:
        return self.spec

    def isolated(self, probes: list[str]) -> Any:
        from gym_integrity.audit.isolate import IsolatedTarget

        return IsolatedTarget(
            BUILD_ENTRY,
            {"target": self.spec, "stacked": not self.raw, **self.options},
            self.raw,
            self.name,
            (self.label,) if self.label else (),
            sys_path=tuple(sys.path),
        )

    def factory(self) -> Callable[[], gym.Env]:
        def make() -> gym.Env:
            return build(self.spec, stacked=not self.raw, **self.options)

        return make


def adapted_targets(specs: Iterable[str], options: dict[str, Any], *, compare: bool) -> list[AdaptedTarget]:
    """The columns for ``specs``: each as it is (``raw``), and with ``compare`` also inside ``integrity_stack``."""
    modes = [True, False] if compare else [True]
    return [AdaptedTarget(spec, mode, dict(options)) for spec in specs for mode in modes]


def check_target(
    spec: str, *, stacked: bool = False, probes: Iterable[str] | None = None, settings: Any = None, **options: Any
) -> Any:
    """Audit ``spec`` (with ``options`` for its adapter) in a child process, as the CLI does: an ``AuditReport``."""
    from gym_integrity.audit.in_process import probe_list
    from gym_integrity.audit.isolate import run_isolated
    from gym_integrity.audit.session import AuditSettings

    problem = preflight(spec, options)
    if problem:
        raise ValueError(problem)
    names = probe_list(probes)
    settings = settings or AuditSettings()
    settings.validate()
    target = AdaptedTarget(spec, not stacked, options)
    [report] = run_isolated([target.isolated(names)], names, settings, workers=1)
    return annotate(report)

"""The columns `gym-integrity audit` runs for registered ids: each id (``module:Id`` too) split into its entry's variants, stacked or raw, the judge stubs a judged id is graded by, and the sweep of ``--all-datasets``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gym_integrity.openai_stub import STUB_JUDGE_MODEL

if TYPE_CHECKING:
    from gym_integrity.registration import EnvEntry

__all__ = [
    "AuditTarget",
    "JudgeStub",
    "audit_targets",
    "dataset_targets",
    "resolve_ids",
    "split_id",
    "start_judge_stub",
    "swept_entries",
]


@dataclass
class JudgeStub:
    """The local judges: a deterministic grader and a fooled one, their base_urls, a label, how to stop them."""

    base_url: str
    label: str
    stop: Callable[[], None] = field(default=lambda: None)
    fooled_url: str | None = None
    fooled_label: str | None = None


def start_judge_stub() -> JudgeStub | None:
    """Start the OpenAI-compatible judge stubs on 127.0.0.1 (None if the package has no judge server).

    This is the one place that knows how the stub is started. Two servers: the
    deterministic ``stub`` grader every proof probe uses, and a deliberately
    fooled ``echo`` judge (it repeats any ``<score>N</score>`` it finds in its
    prompt) against which the self-dealing probe checks that score tags in a
    proof are neutralised before they reach the judge.
    """
    try:
        from gym_integrity.openai_stub.judge_server import JudgeServer
    except ImportError:
        return None
    grader = JudgeServer(mode="stub").start()
    fooled = JudgeServer(mode="echo").start()

    def stop() -> None:
        grader.stop()
        fooled.stop()

    return JudgeStub(
        base_url=grader.url,
        label=f"judge: local stub at {grader.host}:{grader.port} (deterministic, not a real grader)",
        stop=stop,
        fooled_url=fooled.url,
        fooled_label=f"judge: fooled echo stub at {fooled.host}:{fooled.port} (repeats any score tag in its prompt)",
    )


def _judge_kwargs(base_url: str) -> dict[str, Any]:
    """The ``judge`` option every env registered with ``needs_judge=True`` takes (EnvEntry), pointed at a stub."""
    return {
        "judge": {
            "base_url": base_url,
            "api_key": "audit-stub",
            "model": STUB_JUDGE_MODEL,
            "timeout_s": 10.0,
            "max_retries": 1,
        }
    }


def _entry(env_id: str) -> EnvEntry | None:
    """The id's registration entry: None for an id registered some other way (no variants, no judge)."""
    from gym_integrity.registration import env_entry

    return env_entry(split_id(env_id)[1])


def split_id(env_id: str) -> tuple[str | None, str]:
    """``"module:Id"`` (gym.make's form: importing the module registers the id) -> ``("module", "Id")``.

    >>> split_id("my_envs.tasks:Echo-v0"), split_id("Echo-v0")
    (('my_envs.tasks', 'Echo-v0'), (None, 'Echo-v0'))
    """
    module, sep, bare = env_id.partition(":")
    return (module, bare) if sep else (None, env_id)


def resolve_ids(ids: list[str]) -> tuple[list[str], list[str]]:
    """Import the module of every ``"module:Id"`` (as gym.make does); ``(unknown ids, import errors)``."""
    import gymnasium as gym

    from gym_integrity.audit.isolate import import_env_modules

    unknown, errors = [], []
    for env_id in ids:
        module, bare = split_id(env_id)
        if module is not None:
            try:
                import_env_modules([module])
            except Exception as exc:  # the user's module: any error in it is theirs to see
                errors.append(f"{env_id}: importing {module} raised {type(exc).__name__}: {exc}")
                continue
        if bare not in gym.registry:
            unknown.append(env_id)
    return unknown, errors


@dataclass
class AuditTarget:
    """One column of the audit: an id (and mode), stacked or raw, with the kwargs it is made with."""

    env_id: str
    raw: bool
    kwargs: dict[str, Any]
    variant: str | None = None
    label: str | None = None
    probes: tuple[str, ...] | None = None
    #: The id's entry, for an audit process to register it: a fresh process knows only the package's own ids.
    entry: EnvEntry | None = None

    @property
    def name(self) -> str:
        return f"{self.env_id} [{self.variant}]" if self.variant else self.env_id

    def isolated(self, probes: list[str]) -> Any:
        """This column as an :class:`~gym_integrity.audit.isolate.IsolatedTarget` for a child process."""
        import sys

        from gym_integrity.audit.isolate import IsolatedTarget

        module, bare = split_id(self.env_id)
        return IsolatedTarget(
            bare,
            self.kwargs,
            self.raw,
            self.name,
            (self.label,) if self.label else (),
            tuple(p for p in probes if p in self.probes) if self.probes else None,
            self.entry,
            modules=(module,) if module else (),
            sys_path=tuple(sys.path) if module else (),
        )

    def factory(self) -> Callable[[], Any]:
        import gymnasium as gym

        def make() -> Any:
            env = gym.make(self.env_id, **self.kwargs)
            return env.unwrapped if self.raw else env

        return make


def _probes_but(*left_out: str) -> tuple[str, ...]:
    from gym_integrity.audit.probes import probe_names

    return tuple(p for p in probe_names() if p not in left_out)


def audit_targets(ids: list[str], *, raw: bool, compare: bool, judge: JudgeStub | None) -> list[AuditTarget]:
    """The columns to audit: each id, split into its entry's ``audit_variants``, stacked, raw or both.

    An id whose entry ``needs_judge`` is graded by the local stub (when one
    runs); its ``judged_variant`` gets one more column against the fooled
    judge, for the self-dealing probe.
    """
    modes = [False, True] if compare else [raw]
    targets = []
    for env_id in ids:
        entry = _entry(env_id)
        stub = judge if entry is not None and entry.needs_judge else None  # the judge this id is graded by
        judged = stub is not None
        base = _judge_kwargs(stub.base_url) if stub is not None else {}
        note = stub.label if stub is not None else None
        variants: list[tuple[str | None, Mapping[str, Any]]] = (
            list(entry.audit_variants.items()) if entry is not None else []
        )
        for variant, extra in variants or [(None, {})]:
            # The stub judge is deterministic but no grader: whether it pays an honest proof says nothing of the
            # env, so honest_pay skips the judged variant's column (and a judged entry without variants); other
            # columns run it, leaving out any item the stub graded (the probe's own check).
            stub_graded = judged and (entry is None or variant is None or variant == entry.judged_variant)
            probes = _probes_but("honest_pay") if stub_graded else None
            for mode in modes:
                targets.append(AuditTarget(env_id, mode, {**base, **extra}, variant, note, probes, entry=entry))
        if entry is not None and stub is not None and entry.judged_variant is not None and stub.fooled_url:
            fooled = {**entry.audit_variants[entry.judged_variant], **_judge_kwargs(stub.fooled_url)}
            for mode in modes:
                targets.append(
                    AuditTarget(
                        env_id,
                        mode,
                        fooled,
                        f"{entry.judged_variant}, fooled judge",
                        stub.fooled_label,
                        ("reward_self_dealing",),
                        entry=entry,
                    )
                )
    return targets


def _noun(entry: EnvEntry) -> str:
    """What a swept entry's option names (``datasets``): only entries with a sweep are swept."""
    return entry.sweep.noun if entry.sweep is not None else "options"


def _all_entries() -> tuple[EnvEntry, ...]:
    from gym_integrity.registration import env_entries

    return env_entries()


def swept_entries() -> list[EnvEntry]:
    """The registered ids with an option ``--all-datasets`` can sweep (``EnvEntry.sweep``)."""
    from gym_integrity.registration import env_entries

    return [entry for entry in env_entries() if entry.sweep is not None]


def _sweep_values(entry: EnvEntry) -> list[str]:
    assert entry.sweep is not None
    return entry.sweep.load()


def dataset_targets(
    *, raw: bool, compare: bool, datasets: list[str] | None = None, env_id: str | None = None
) -> list[AuditTarget]:
    """One target per value of the swept option (every dataset, by default of the first id that has a sweep)."""
    entry = _entry(env_id) if env_id is not None else swept_entries()[0]
    if entry is None or entry.sweep is None:
        raise ValueError(f"dataset_targets: {env_id!r} has no sweep (EnvEntry.sweep)")
    modes = [False, True] if compare else [raw]
    return [
        AuditTarget(entry.id, mode, {entry.sweep.option: name, **dict(entry.sweep.with_options)}, name, entry=entry)
        for name in (datasets if datasets is not None else _sweep_values(entry))
        for mode in modes
    ]

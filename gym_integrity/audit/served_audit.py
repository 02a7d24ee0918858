"""Auditing an env where it is served (``gym-integrity audit ID --url URL``): the probes play it over the wire, gold answers come from a local twin.

The auditor is privileged; the wire is not. A served env sends only its
public observation, so the probes' actions go to the server through
:class:`~gym_integrity.integrations.openenv.RemoteEnv` (one OpenEnv session
per env the probes build) and every check is made on what comes back: what a
remote user gets. What the auditor must know and the wire never says (the gold
answer, how this env takes an answer, its step budget and grading bound) comes
from a **local twin**: the same id built here with the server's env kwargs and
reset with the same seed as the server. Before the probes, and at every reset,
the twin must show the server's problem (same ``problem_id``, same observation
text): otherwise its gold would be another problem's, and the audit stops with
:data:`MISMATCH`.

A probe that needs to see inside the env's process cannot run through a
socket: :data:`WIRE_NOT_APPLICABLE` names it with the reason (its row is
``n/a``, and the local audit of the id covers it). openenv-core is the
``[serve]`` extra: it is imported only here, only when a served env is
audited.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import gymnasium as gym

from gym_integrity.audit.report import AuditReport, ProbeResult, Status
from gym_integrity.audit.session import AuditSettings, close_quietly
from gym_integrity.checks import check_str, check_type
from gym_integrity.exceptions import TwinMismatchError

__all__ = [
    "ServedAuditEnv",
    "TwinMismatchError",
    "check_served_integrity",
    "verify_served",
    "served_seeds",
    "WIRE_NOT_APPLICABLE",
    "WIRE_NOTES",
    "MISMATCH",
    "EXTRA_HINT",
]

#: What installs the client a served audit needs.
EXTRA_HINT = "pip install 'gym-integrity[serve]'"
#: The first words of every twin-mismatch error: the twin was built with other options than the server's env.
MISMATCH = "the local twin does not match the served env (pass the server's --env-kwargs)"

#: Probes that cannot run through the wire, and why (their rows are n/a over --url).
WIRE_NOT_APPLICABLE: dict[str, str] = {
    "code_injection": (
        "over the wire a canary that ran cannot be seen: the probe looks for its marker in this process (a "
        "builtins attribute, a patched scorer) and on this machine's disk, and a served env grades in the "
        "server's process, maybe on another machine; audit the id locally (gym-integrity audit ID) for it"
    )
}
#: Probes that run over the wire but check less there than in process: a line added to their evidence.
WIRE_NOTES: dict[str, str] = {
    "inert_after_end": (
        "over the wire: the transitions after the end were checked (what a client gets); whether the server's "
        "task ran those steps, and its state, is not visible to a client (the local audit of the id checks it)"
    ),
    "cross_env_isolation": (
        "over the wire: env A and env B are two sessions of the server; canaries that run are seen only in this "
        "process, so only B's verdicts count here"
    ),
}


def _remote_env_class() -> type:
    """RemoteEnv, imported here only: openenv-core is an optional extra, and the rest of the audit never needs it."""
    try:
        from gym_integrity.integrations.openenv.client import RemoteEnv
    except ImportError as exc:
        raise ImportError(f"auditing a served env (--url) needs openenv-core, the [serve] extra: {EXTRA_HINT}") from exc
    return RemoteEnv


def _check_url(url: Any) -> str:
    check_str("served audit url", url)
    if not url.startswith(("http://", "https://", "ws://", "wss://")):
        raise ValueError(
            f"served audit url must start with http://, https://, ws:// or wss:// (where `gym-integrity "
            f"serve` listens, e.g. http://127.0.0.1:8000), got {url!r}"
        )
    return url.rstrip("/")


def _bare_id(env_id: str) -> str:
    # "module:Id" is gym.make's form; the module registers Id when imported (the CLI imports it first).
    return env_id.partition(":")[2] or env_id


class _TwinHooks:
    """``env.unwrapped`` of a served env: the twin's task object, whose gold counts only while it is in step.

    Every attribute the auditor reads on ``env.unwrapped`` (the hooks of
    :class:`~gym_integrity.envs.base.AuditHooks`, tool schemas, ``step_budget``,
    ``grading_time_bound_s``, ``config``) is the twin's. ``gold_answers()`` is
    None while the twin is not known to show the server's problem (before a
    seeded reset): a gold answer of another problem would make every probe lie.
    """

    def __init__(self, owner: ServedAuditEnv) -> None:
        self._owner = owner

    def gold_answers(self) -> list[str] | None:
        owner = self._owner
        hook = getattr(owner.twin.unwrapped, "gold_answers", None)
        if not owner.in_step or not callable(hook):
            return None
        return hook()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_owner":  # copy/pickle probes, or a half-built proxy: not the twin's
            raise AttributeError(name)
        return getattr(self._owner.twin.unwrapped, name)

    def __repr__(self) -> str:
        return f"<local twin of {self._owner.served_id}>"


class ServedAuditEnv(gym.Wrapper):
    """A served env as the probes see it: ``reset``/``step`` over one OpenEnv session, the hooks from a local twin.

    It wraps a :class:`~gym_integrity.integrations.openenv.RemoteEnv` (so the
    probes' actions, and the transitions they check, cross the wire) and keeps
    ``twin = gym_integrity.make(env_id, **env_kwargs)``, which is only ever
    reset: ``reset(seed=s)`` resets the server's env and the twin with the same
    seed and raises :class:`TwinMismatchError` if they show different problems.
    ``unwrapped`` is the twin's task object (gold answers, answer format, step
    budget, grading bound), the spaces are the twin's. There is no ``render``
    over the wire (None). ``close()`` ends the session.

    Example (a server on port 8000 started by ``gym-integrity serve ReasoningGym-v0``)::

        env = ServedAuditEnv("http://127.0.0.1:8000", "ReasoningGym-v0")
        obs, info = env.reset(seed=0)           # the server's problem, checked against the twin's
        env.unwrapped.gold_answers()            # the twin's gold for it
        env.step("<answer>1</answer>")          # graded by the server
    """

    def __init__(
        self, url: str, env_id: str, env_kwargs: Mapping[str, Any] | None = None, *, message_timeout_s: float = 60.0
    ) -> None:
        url = _check_url(url)
        check_str("ServedAuditEnv env_id", env_id)
        kwargs = dict(
            check_type(
                "ServedAuditEnv env_kwargs",
                env_kwargs if env_kwargs is not None else {},
                Mapping,
                "a dict of the server's env kwargs (its --env-kwargs)",
            )
        )
        check_type("ServedAuditEnv message_timeout_s", message_timeout_s, (int, float), "a number of seconds")
        if isinstance(message_timeout_s, bool) or not (math.isfinite(message_timeout_s) and message_timeout_s > 0):
            raise ValueError(f"ServedAuditEnv message_timeout_s must be a finite number > 0, got {message_timeout_s!r}")
        remote_class = _remote_env_class()  # before anything is built: a missing extra is the first thing to say
        from gym_integrity.registration import make

        # The twin first: options the server would refuse (a TypeError or ValueError naming them) fail here,
        # before a session is opened on the server.
        twin = make(_bare_id(env_id), **kwargs)
        try:
            remote = remote_class(url, message_timeout_s=float(message_timeout_s))
        except ConnectionError as exc:
            close_quietly(twin)
            raise ConnectionError(
                f"cannot reach a served env at {url} ({exc}); is `gym-integrity serve "
                f"{_bare_id(env_id)}` running there?"
            ) from None
        except BaseException:
            close_quietly(twin)
            raise
        super().__init__(remote)
        self.remote = remote
        self.url = url
        self.served_id = _bare_id(env_id)
        self.twin = twin
        self.observation_space = twin.observation_space
        self.action_space = twin.action_space
        #: True once a seeded reset showed the server's problem on the twin too (the twin's gold is this episode's).
        self.in_step = False
        self._hooks = _TwinHooks(self)

    @property
    def unwrapped(self) -> Any:  # the twin's task object: the privileged hooks the wire does not carry
        return self._hooks

    def served_env_id(self) -> str:
        """The id the server says it serves ("" if it does not say)."""
        return str(getattr(self.remote.state(), "env_id", "") or "")

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        self.in_step = False
        obs, info = self.env.reset(seed=seed, options=options)
        if seed is None:
            return obs, info  # the twin cannot follow an unseeded draw: no gold for this episode
        twin_obs, twin_info = self.twin.reset(seed=seed, options=options)
        served_id, twin_id = info.get("problem_id"), twin_info.get("problem_id")
        if served_id != twin_id:
            raise TwinMismatchError(
                f"{MISMATCH}: after reset(seed={seed}) the server at {self.url} shows problem "
                f"{served_id!r}, the twin {twin_id!r}"
            )
        if obs != twin_obs:
            raise TwinMismatchError(
                f"{MISMATCH}: after reset(seed={seed}) the server at {self.url} shows "
                f"{_snippet(obs)}, the twin {_snippet(twin_obs)} (problem {served_id!r} on both)"
            )
        self.in_step = True
        return obs, info

    def render(self) -> None:
        """Nothing: a served env has no render channel, so a client sees nothing here."""
        return None

    def close(self) -> None:
        try:
            self.env.close()
        finally:
            close_quietly(self.twin)


def _snippet(obs: Any) -> str:
    text = obs if isinstance(obs, str) else repr(obs)
    return repr(text[:80] + ("..." if len(text) > 80 else ""))


def served_seeds(settings: AuditSettings) -> list[int]:
    """Every seed the probes reset with: the audit's, and those ``constant_answers`` adds."""
    from gym_integrity.audit.grader_probes import chance_seeds

    return chance_seeds(settings.seeds)


def verify_served(
    url: str,
    env_id: str,
    env_kwargs: Mapping[str, Any] | None = None,
    seeds: Iterable[int] = (0,),
    *,
    message_timeout_s: float = 60.0,
) -> None:
    """Check, before any probe, that the server at ``url`` serves ``env_id`` and the twin follows it on ``seeds``.

    Raises ``ImportError`` without the ``[serve]`` extra (naming
    :data:`EXTRA_HINT`), ``ConnectionError`` if nothing serves at ``url``,
    :class:`TwinMismatchError` (a ``ValueError``) if the server serves another
    id or the twin shows another problem after a reset with one of ``seeds``,
    ``TypeError``/``ValueError`` for env kwargs the env refuses, and
    ``RuntimeError`` naming the call for a server error frame.
    """
    env = ServedAuditEnv(url, env_id, env_kwargs, message_timeout_s=message_timeout_s)
    try:
        try:
            served = env.served_env_id()
        except RuntimeError as exc:
            raise RuntimeError(f"the server at {env.url} refused state(): {exc}") from None
        if served and served != env.served_id:
            raise TwinMismatchError(
                f"the server at {env.url} serves {served}, not {env.served_id}: audit it as "
                f"`gym-integrity audit {served} --url {env.url}`"
            )
        for seed in seeds:
            try:
                env.reset(seed=seed)  # a TwinMismatchError (a ValueError) goes out as it is
            except RuntimeError as exc:  # an error frame: CAPACITY_REACHED, a reset option refused, ...
                raise RuntimeError(f"the server at {env.url} refused reset(seed={seed}): {exc}") from None
    finally:
        close_quietly(env)


def check_served_integrity(
    url: str,
    env_id: str,
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    probes: Iterable[str] | None = None,
    settings: AuditSettings | None = None,
    name: str | None = None,
    on_probe_start: Callable[[str], None] | None = None,
    on_probe_done: Callable[[ProbeResult], None] | None = None,
) -> AuditReport:
    """Audit the env served at ``url`` (``gym-integrity serve env_id``) through the wire, as a remote user plays it.

    ``env_kwargs`` are the server's (its ``--env-kwargs``): the local twin is
    built with them and must show the server's problem for every seed the
    probes use (:func:`verify_served`, run first; its errors are raised, no
    report is made). The probes then run on :class:`ServedAuditEnv` instances,
    each its own session on the server (at most four at once:
    ``cross_env_isolation`` plays three besides the probe's own), in this
    process: grading happens on the server, so a step that hangs is a socket
    that waits, which the probe's wall clock bounds. Probes in
    :data:`WIRE_NOT_APPLICABLE` get an ``n/a`` row with the reason. The report's
    ``url`` is set and ``stacked`` is None (the stack, if any, is on the server).

    Example (a server on port 8000)::

        report = check_served_integrity("http://127.0.0.1:8000", "ReasoningGym-v0", {"dataset": "leg_counting"})
        assert report.passed, report.to_json(indent=2)
    """
    from gym_integrity.audit.probes import PROBES
    from gym_integrity.audit.runner import check_integrity
    from gym_integrity.registration import env_entry

    settings = settings or AuditSettings()
    check_type("check_served_integrity settings", settings, AuditSettings, "an AuditSettings or None")
    settings.validate()
    names = list(PROBES) if probes is None else list(probes)
    unknown = [n for n in names if n not in PROBES]
    if unknown:
        raise ValueError(f"unknown probe(s) {unknown}; valid: {list(PROBES)}")
    url = _check_url(url)
    check_str("check_served_integrity env_id", env_id)
    kwargs = dict(
        check_type(
            "check_served_integrity env_kwargs",
            env_kwargs if env_kwargs is not None else {},
            Mapping,
            "a dict of the server's env kwargs (its --env-kwargs)",
        )
    )
    # A message the server never answers is a hang the probe's own bound reports; the socket gives up soon after.
    timeout = settings.probe_timeout_s + 5.0
    verify_served(url, env_id, kwargs, served_seeds(settings), message_timeout_s=timeout)

    skipped = {n: WIRE_NOT_APPLICABLE[n] for n in names if n in WIRE_NOT_APPLICABLE}

    def make() -> ServedAuditEnv:
        return ServedAuditEnv(url, env_id, kwargs, message_timeout_s=timeout)

    report = check_integrity(
        make,
        probes=[n for n in names if n not in skipped],
        settings=settings,
        env_id=name or env_id,
        on_probe_start=on_probe_start,
        on_probe_done=on_probe_done,
    )
    ran = {r.probe: r for r in report.results}
    results = []
    for probe in names:  # report order, the wire's n/a rows where their probes would be
        if probe in ran:
            result = ran[probe]
            if probe in WIRE_NOTES and result.status in (Status.PASSED, Status.FAILED):
                result.evidence.append(WIRE_NOTES[probe])
        else:
            result = ProbeResult(
                probe, Status.NOT_APPLICABLE, f"n/a over the wire: {skipped[probe]}", reason=skipped[probe]
            )
            if on_probe_start:
                on_probe_start(probe)
            if on_probe_done:
                on_probe_done(result)
        results.append(result)
    report.results = results
    report.url, report.stacked = url, None
    report.notes.append(
        f"served: {env_id} at {url}, audited over OpenEnv's protocol (RemoteEnv), as a remote user "
        f"plays it; gold answers from a local twin ({env_id} built here with env kwargs "
        f"{kwargs or '{}'}, reset with each seed and checked against the server's problem)"
    )
    entry = env_entry(_bare_id(env_id))
    if entry is not None and entry.audit_variants:
        report.notes.append(
            f"served: one column, the server's configuration; {env_id}'s audit variants "
            f"({', '.join(entry.audit_variants)}) are each audited only if served (one server each)"
        )
    if entry is not None and entry.judged_variant is not None:
        report.notes.append(
            f"served: {env_id}'s fooled-judge column is not run over the wire: it needs a judge "
            "fooled by score tags, and the server grades with its own judge; audit the id locally "
            "for it"
        )
    return report

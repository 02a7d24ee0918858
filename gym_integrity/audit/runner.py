"""check_integrity(): the audit's front door, in this process (audit/in_process.py) or in a child (audit/isolate.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from gym_integrity.audit.adapters import AnswerFn, GoldFn
from gym_integrity.audit.in_process import audit_in_process, has_integrity_stack, probe_list
from gym_integrity.audit.report import AuditReport, ProbeResult
from gym_integrity.audit.session import AuditSettings

__all__ = ["check_integrity", "EnvSource", "has_integrity_stack"]

#: What check_integrity audits: an env, a registered id, or a zero-argument factory.
EnvSource = "gym.Env | str | Callable[[], gym.Env]"


def check_integrity(
    env: Any,
    *,
    probes: Iterable[str] | None = None,
    settings: AuditSettings | None = None,
    answer_action_fn: AnswerFn | None = None,
    gold_answers_fn: GoldFn | None = None,
    raw: bool = False,
    env_id: str | None = None,
    on_probe_start: Callable[[str], None] | None = None,
    on_probe_done: Callable[[ProbeResult], None] | None = None,
    on_call: Callable[[str], None] | None = None,
    isolated: bool = False,
) -> AuditReport:
    """Play adversarial episodes on ``env`` and report, probe by probe, whether its rewards can be gamed.

    Args:
        env: A Gymnasium env with text actions (probes share it, resetting between
            them), a registered id, or a zero-argument factory (each probe gets a
            fresh env: a hang in one probe cannot spoil the next).
        probes: Names from :data:`~gym_integrity.audit.probes.PROBES` (default: all).
        settings: Seeds, time bounds and step bound (:class:`AuditSettings`).
        answer_action_fn: ``(env, answer) -> action`` wrapping an answer for this env
            (default :func:`~gym_integrity.audit.adapters.answer_action`).
        gold_answers_fn: ``env -> list[str] | None``, the auditor's source of gold
            answers (default: the privileged hook ``env.unwrapped.gold_answers()``;
            envs without it are audited with what they reveal).
        raw: With an id: audit ``gym.make(id).unwrapped``, the task without the
            integrity stack (or the checkers gym.make adds).
        env_id: The name shown in the report.
        on_probe_start, on_probe_done: Progress callbacks.
        on_call: Told the name of every ``reset``/``step`` before it is made (from the
            probe's thread), so that a watcher outside the process can name a hang.
        isolated: Audit in a child process, as the CLI does, killed if silent past
            the probe bound (+5 s): the only hard bound on a step that holds the GIL
            (a catastrophic regex in a scorer), which in-process audits cannot
            interrupt. ``env`` must then be something another process can rebuild:
            a registered id, ``"module:Id"`` (the module registers it) or a class or
            zero-argument function importable by module path (not a lambda, not an
            instance); the hooks must be on the env (``gold_answers()``,
            ``audit_answer_action()``), not passed as functions.

    Returns:
        An :class:`AuditReport`: one row per probe, and a verdict: ``fail`` if a probe
        failed; ``inconclusive`` if a probe this env needs could not run (its row
        says how to run it: a gold-answer hook, a factory) or the env could not run
        at all (built or reset once, before any probe: the cause is the report's
        ``error`` and every probe is ``not run``); else ``pass``. ``report.passed``
        is true for ``pass`` only.

    Example:
        >>> import gym_integrity
        >>> from gym_integrity.audit import check_integrity
        >>> report = check_integrity("ReasoningGym-v0", probes=["rescore_after_end"])
        >>> report.passed, report.status_of("rescore_after_end").value
        (True, 'passed')
        >>> check_integrity("ReasoningGym-v0", probes=["rescore_after_end"], raw=True).passed
        False
    """
    settings = settings or AuditSettings()
    settings.validate()
    names = probe_list(probes)
    if isolated:
        if answer_action_fn is not None or gold_answers_fn is not None or on_call is not None:
            raise TypeError(
                "check_integrity(isolated=True) takes no answer_action_fn, gold_answers_fn or on_call: "
                "define the hooks on the env (gold_answers(), audit_answer_action()) instead"
            )
        from gym_integrity.audit.isolate import check_isolated  # multiprocessing and the child, only when asked

        return check_isolated(env, names, settings, raw, env_id, on_probe_start, on_probe_done)
    return audit_in_process(
        env,
        names,
        settings,
        answer_action_fn=answer_action_fn,
        gold_answers_fn=gold_answers_fn,
        raw=raw,
        env_id=env_id,
        on_probe_start=on_probe_start,
        on_probe_done=on_probe_done,
        on_call=on_call,
    )

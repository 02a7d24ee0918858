"""gym-integrity audit: adversarial probes that tell whether any text env's rewards can be gamed.

Gymnasium's ``check_env`` says whether an env follows the API;
:func:`check_integrity` says whether its rewards can be gamed. It plays
adversarial episodes (answers after the end, searches for the gold answer in
everything the agent sees, never answers, sends garbage, writes score tags)
and returns an :class:`AuditReport`, one row per probe, and a verdict:
``pass``, ``fail``, or ``inconclusive`` when a probe the env needs could not
run (``report.missing`` says which, and how to run it) or the env could not
run at all (``report.error``). ``report.passed`` is true for ``pass`` only.

Audit your own env in three lines::

    from gym_integrity.audit import check_integrity
    report = check_integrity(lambda: MyEnv())   # or a registered id (an instance alone cannot be cloned)
    print(report.to_json(indent=2)); assert report.passed

In process a step that holds the GIL (a quadratic regex on a megabyte of
garbage) cannot be interrupted: ``check_integrity(MyEnv, isolated=True)`` (or
``"mymod:MyEnv-v0"``) audits in a child process that is killed past the bounds,
as ``gym-integrity audit mymod:MyEnv-v0`` does.

An env served by ``gym-integrity serve`` is audited where it runs, over the wire, as a
remote user gets it: ``check_served_integrity(url, env_id, env_kwargs)`` (or
``gym-integrity audit ID --url URL``), with gold answers from a local twin of the
same id and options (``audit/served_audit.py``; needs the ``[serve]`` extra).

What people train on in other shapes (a TRL or verl reward function over a
dataset, reasoning-gym's scorers, GEM, skyrl-gym and verifiers envs) is
adapted into a text env by ``audit/adapters_targets.py`` (``adapt("gem:ID")``,
``gym-integrity audit reward:MODULE:FUNCTION --dataset PATH``; docs/audit.md,
"Audit anything").

The auditor learns gold answers through the privileged hook
``env.unwrapped.gold_answers() -> list[str]`` when the env has it (never an
agent channel), else from what the env reveals at the end; without either, the
probes that answer with the gold do not run and the verdict is inconclusive.
"""

from gym_integrity.audit.adapters import (
    answer_action,
    answer_wrappings,
    non_answer_action,
    privileged_gold,
    revealed_answers,
)

# isort: off
from gym_integrity.audit.probes import PROBES, Probe, probe_names  # first: it registers the probes in report order
from gym_integrity.audit.grader_probes import GRADER_PROBES  # after probes, whose import registers them in report order

# isort: on
from gym_integrity.audit.report import (
    AuditReport,
    AuditVerdict,
    ProbeResult,
    Status,
    exit_status,
    overall_verdict,
    render_reports,
    reports_to_json,
)
from gym_integrity.audit.runner import check_integrity
from gym_integrity.audit.search import SEARCH_PROBES
from gym_integrity.audit.served_audit import ServedAuditEnv, TwinMismatchError, check_served_integrity
from gym_integrity.audit.session import AuditSettings

__all__ = [
    "check_integrity",
    "check_served_integrity",
    "ServedAuditEnv",
    "TwinMismatchError",
    "AuditReport",
    "ProbeResult",
    "Status",
    "AuditVerdict",
    "overall_verdict",
    "exit_status",
    "AuditSettings",
    "PROBES",
    "GRADER_PROBES",
    "SEARCH_PROBES",
    "Probe",
    "probe_names",
    "answer_action",
    "answer_wrappings",
    "non_answer_action",
    "privileged_gold",
    "revealed_answers",
    "render_reports",
    "reports_to_json",
]

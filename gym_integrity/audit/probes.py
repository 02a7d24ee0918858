"""The audit's probes, in report order: one function per invariant check, each playing adversarial episodes through a Session.

Every probe returns a :class:`~gym_integrity.audit.report.ProbeResult`: passed
(with what it checked), failed (with the actions and what came back), n/a (the
probe does not apply to this env, with why), or not run (it applies, but the
audit lacked what it needs, typically a gold answer: with how to provide it).
:data:`PROBES` lists them in report order.

The probes live in modules by what they attack, each registering its probes
with ``@_probe`` (:mod:`~gym_integrity.audit.registry`) when imported; this
module imports them in report order:

* ``episode_probes``: the gold is paid, an end is final and inert, no gold
  leaks, the episode is bounded;
* ``reset_probes``: ``reset()`` after an end, a refused reset, seeding;
* ``action_probes``: garbage actions, injected score tags and claims;
* ``grader_probes``: constant answers, code injection, pathological answers,
  cross-env isolation;
* ``pay_probes``: both sides of the reward: a constant fitted on some items
  against the uniform guess on unseen ones, random text, every gold form paid;
* ``search``: content-free answers found the way a policy would (echoes,
  alphabet and covering sprays, an adaptive search).

A new probe module imports :mod:`~gym_integrity.audit.registry` (never this
module) and is imported here, where its rows belong in the report.
"""

from __future__ import annotations

# Report order is import order: each import registers that module's probes (isort must not sort them).
# isort: off
from gym_integrity.audit import episode_probes  # noqa: F401  # registers its probes
from gym_integrity.audit import reset_probes  # noqa: F401  # registers its probes
from gym_integrity.audit import action_probes  # noqa: F401  # registers its probes
from gym_integrity.audit import grader_probes  # noqa: F401  # registers its probes
from gym_integrity.audit import pay_probes  # noqa: F401  # registers its probes
from gym_integrity.audit import search  # noqa: F401  # registers its probes

# isort: on
from gym_integrity.audit.action_probes import INJECTIONS, garbage_actions
from gym_integrity.audit.registry import (  # noqa: F401  # re-exported
    _EPS,
    PROBES,
    Probe,
    _failed,
    _no_gold,
    _not_applicable,
    _not_run,
    _passed,
    _probe,
    _same_reward,
    _seeds,
    probe_names,
)

__all__ = ["Probe", "PROBES", "probe_names", "garbage_actions", "INJECTIONS"]

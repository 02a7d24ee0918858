r"""Grading: every step from a model's text to its :class:`~gym_integrity.protocol.Grade`, in one place.

The data flow, the same for every env (docs/architecture.md, "Grading")::

    model text
      |  reader: the one extractor (<answer> tags, \boxed{} brace matched,      reader.py
      |  QEDMath's percent); a failure is a Grade at once (no_answer,
      |  unparsable, too_long)
      v
    answer: one str, extracted once and handed on as a value
      |  every rule and every grader below receives exactly this string
      +--> the env's rules (QEDMath's "poses a computation", strict rules)    envs/*, rules.py
      +--> cost.refusal(answer): a static bound, nothing evaluated           cost.py, _cost_*.py
      |      refused -> faults.refused_unrun: timeout, graded, no worker held  faults.py
      +--> language.check(language, answer, item): the answer language        language.py
      |      outside it -> faults.outside_language: unparsable
      v
    the grader: math_verify, a reasoning-gym scorer, FinQA's matcher,
      |  in process or on a killable worker (gym_integrity.workers)
      v
    TaskOutcome -> fault_of -> faults.fault_grade (the one fault table)      faults.py
      v
    Grade(verdict, score, cause, no_verdict)

Numbers in every pattern above are written in one grammar (numbers.py); the
cost bound and the answer languages read text through one tokenizer
(:func:`~gym_integrity.grading.language.tokenize`).

This front names what callers use; the modules behind it are the layer's own.
Imports are lazy: ``from gym_integrity.grading import last_boxed`` loads the
reader only.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Each public name -> the module of this package that defines it.
_EXPORTS = {
    # reader.py: the one extractor
    "ANSWER_FORMATS": "reader", "Extraction": "reader", "all_boxed": "reader", "boxed_answer": "reader",
    "braced_group": "reader", "extract_answer": "reader", "last_boxed": "reader", "last_tag_body": "reader",
    "last_tagged": "reader", "without_percent": "reader",
    # cost.py: the static cost bound
    "refusal": "cost",
    # language.py: the answer languages and their one tokenizer
    "LANGUAGES": "language", "Language": "language", "check_language": "language", "tokenize": "language",
    # faults.py: the fault table and the grades of refused answers
    "FAULT_VERDICTS": "faults", "Causes": "faults", "fault_grade": "faults", "outside_language": "faults",
    "plain_causes": "faults", "refused_unrun": "faults",
}
_RENAMED = {"check_language": "check"}

__all__ = [
    "ANSWER_FORMATS",
    "FAULT_VERDICTS",
    "LANGUAGES",
    "Causes",
    "Extraction",
    "Language",
    "all_boxed",
    "boxed_answer",
    "braced_group",
    "check_language",
    "extract_answer",
    "fault_grade",
    "last_boxed",
    "last_tag_body",
    "last_tagged",
    "outside_language",
    "plain_causes",
    "refusal",
    "refused_unrun",
    "tokenize",
    "without_percent",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), _RENAMED.get(name, name))
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

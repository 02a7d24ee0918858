r"""Grading: every step from a model's text to its :class:`~gym_integrity.protocol.Grade` that is no one task's.

The data flow is drawn once, in docs/architecture.md ("Grading: from text to
Grade"). In short: the text is read once (:mod:`.reader`: ``<answer>`` tags,
``\boxed{}``, QEDMath's percent), and that one string goes to every rule and
grader, with its operators in one spelling (:mod:`.spelling`); before a grader
runs, the answer's cost is bounded (:mod:`.cost`) and its language checked
(:mod:`.language`, one tokenizer for both); a pool outcome, or a refusal, becomes a grade through one fault table
(:mod:`.faults`). Numbers everywhere are written in one grammar (:mod:`.numbers`).

This front names what callers use. Imports are lazy:
``from gym_integrity.grading import last_boxed`` loads the reader only.

>>> from gym_integrity.grading import boxed_answer, without_percent
>>> boxed_answer(without_percent(r"\boxed{\boxed{25\%}"), max_chars=64)
('25', None)
"""

from __future__ import annotations

import importlib
from typing import Any

#: Each public name -> the module of this package that defines it.
_EXPORTS = {
    # reader.py: the one extractor
    "ANSWER_FORMATS": "reader",
    "Extraction": "reader",
    "all_boxed": "reader",
    "boxed_answer": "reader",
    "braced_group": "braces",
    "extract_answer": "reader",
    "last_boxed": "reader",
    "last_tag_body": "reader",
    "last_tagged": "reader",
    "without_percent": "reader",
    # spelling.py: one spelling of LaTeX operators, the normal form of a text answer
    "normal_spelling": "spelling",
    "normal_text": "spelling",
    # cost.py: the static cost bound
    "refusal": "cost",
    # language.py: the answer languages and their one tokenizer
    "LANGUAGES": "language",
    "Language": "language",
    "check_language": "language",
    "tokenize": "language",
    # faults.py: the fault table and the grades of refused answers
    "FAULT_VERDICTS": "faults",
    "Causes": "faults",
    "fault_grade": "faults",
    "outside_language": "faults",
    "plain_causes": "faults",
    "refused_unrun": "faults",
    "scorer_raised": "faults",
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
    "normal_spelling",
    "normal_text",
    "outside_language",
    "plain_causes",
    "refusal",
    "refused_unrun",
    "scorer_raised",
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

"""TextEnv, the set-up every gym-integrity text env shares, and AuditHooks, the privileged auditor's hooks on an env."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from typing import Any, ClassVar, Protocol, runtime_checkable

import gymnasium as gym

from gym_integrity.checks import check_choice, check_type, reject_unknown
from gym_integrity.protocol import PRIVILEGED_KEY
from gym_integrity.spaces import UnicodeText
from gym_integrity.wrappers.stack import STACK_SWITCHES, stack_switch_hints

__all__ = ["MAX_TEXT_CHARS", "TextEnv", "AuditHooks", "config_options"]

#: The longest observation (and, unless an env says less, action) of any env: far above a real generation,
#: and low enough that a space check or a copy of one never costs more than milliseconds.
MAX_TEXT_CHARS = 1_000_000


def config_options(config_class: type) -> list[str]:
    """The options an env with this config dataclass takes: its ``init`` fields.

    >>> from dataclasses import dataclass, field
    >>> @dataclass
    ... class Demo:
    ...     size: int = 3
    ...     _cache: dict = field(default_factory=dict, init=False)
    >>> config_options(Demo)
    ['size']
    """
    return [f.name for f in dataclasses.fields(config_class) if f.init]


class TextEnv(gym.Env[str, str]):
    """The set-up every text env shares: options from keyword arguments, render mode, text spaces, ``render()``.

    A subclass names its configuration dataclass in ``config_class`` (its init
    fields are the env's options, its ``validate()`` checks them under the one
    error rule) and writes what is its own: ``reset``, ``step`` and grading,
    plus ``render_text()`` (what a person watching sees now) and the auditor's
    ``gold_answers()``. ``TextEnv.__init__(render_mode=None, **options)``:

    * refuses an unknown option with ``TypeError`` (``<Config>.<option> is not an
      option``, with a close match), and an integrity-stack switch given to
      ``gym.make`` with a pointer to ``gym_integrity.make(id, ...)``;
    * checks ``render_mode`` (``"ansi"``, ``"human"`` or None);
    * builds ``self.config`` and validates it, so a bad option fails at ``gym.make``;
    * sets both spaces to :class:`~gym_integrity.spaces.UnicodeText` capped at
      :data:`MAX_TEXT_CHARS` (an action may be empty) and ``step_budget = 1``.

    Answer-bearing values go only under ``info["privileged"]`` (spread
    :meth:`privileged` into the info dict); the registered stack removes that
    key. Each info dict is a new one per call, kept by no one.
    ``step()`` before the first ``reset()`` raises ``gym.error.ResetNeeded``
    (the ids are registered without gymnasium's OrderEnforcing, which would
    check the same). ``docs/architecture.md`` has the whole contract.

    Example:
        >>> from dataclasses import dataclass
        >>> from gym_integrity.checks import check_int
        >>> @dataclass
        ... class EchoConfig:
        ...     repeat: int = 1
        ...     def validate(self) -> None:
        ...         check_int("EchoConfig.repeat", self.repeat, low=1)
        >>> class EchoEnv(TextEnv):
        ...     config_class = EchoConfig
        ...     def render_text(self) -> str:
        ...         return "echo " * self.config.repeat
        >>> EchoEnv(repeat=2).render(), EchoEnv().action_space
        ('echo echo ', UnicodeText(0, 1000000))
        >>> EchoEnv(repaet=2)
        Traceback (most recent call last):
        ...
        TypeError: EchoConfig.repaet is not an option (did you mean 'repeat'?); valid options: ['repeat']
        >>> EchoEnv(repeat=0)
        Traceback (most recent call last):
        ...
        ValueError: EchoConfig.repeat must be an int >= 1, got 0
    """

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 1}
    #: The configuration dataclass: init fields are the options, ``validate()`` checks them.
    config_class: ClassVar[type]
    #: The keys ``reset(options=...)`` accepts; any other is a ``TypeError`` (:meth:`reset_options`).
    reset_option_keys: ClassVar[tuple[str, ...]] = ()

    def __init__(self, render_mode: str | None = None, **options: Any) -> None:
        valid = config_options(self.config_class)
        # Named only for a stack switch: the lookup of our id walks the registry, and it is an error path.
        hints = stack_switch_hints(self._registered_id()) if set(options) & set(STACK_SWITCHES) - set(valid) else None
        reject_unknown(self.config_class.__name__, options, valid, hints=hints)
        check_choice(f"{type(self).__name__}.render_mode", render_mode, (None, *self.metadata["render_modes"]))
        self.config = self.config_class(**options)
        self.config.validate()
        self.render_mode = render_mode
        self.observation_space = UnicodeText(MAX_TEXT_CHARS)
        self.action_space = UnicodeText(MAX_TEXT_CHARS, min_length=0)
        #: The steps the task declares for the current episode; MaxStepsTruncation reads it at every reset.
        self.step_budget = 1

    @classmethod
    def _registered_id(cls) -> str:
        """The id this class is registered under (what ``gym_integrity.make`` needs), else a placeholder."""
        for spec in gym.registry.values():
            entry = spec.entry_point
            if isinstance(entry, str) and ":" in entry:
                module, _, name = entry.partition(":")
                entry = getattr(sys.modules.get(module), name, None)  # a module not imported cannot hold cls
            if entry is cls:
                return spec.id
        return "<id>"

    def reset_options(self, options: Any) -> dict[str, Any]:
        """``options`` as a fresh dict, checked under the one error rule: a non-mapping or an unknown key is a
        ``TypeError`` naming ``<Class>.reset options``; the env then checks each known key's value."""
        owner = f"{type(self).__name__}.reset options"
        if options is None:
            return {}
        check_type(owner, options, Mapping, f"a dict with keys from {list(self.reset_option_keys)} or None")
        reject_unknown(owner, options, self.reset_option_keys, subscript=True)
        return dict(options)

    def render_text(self) -> str:
        """What a person watching sees now: the prompt and the last feedback, never an answer ("" before reset)."""
        raise NotImplementedError

    def render(self) -> str | None:
        """``render_text()``: returned for ``"ansi"`` (and None), printed for ``"human"``."""
        text = self.render_text()
        if self.render_mode == "human":
            print(text)
            return None
        return text

    @property
    def num_items(self) -> int | None:
        """How many distinct items ``reset()`` draws from (problems, questions, dataset size); None if unbounded."""
        return None

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The OpenAI function-calling schemas of the env's tools (a fresh copy); empty for an env without tools."""
        return []

    def gold_answers(self) -> list[str]:
        """The current episode's accepted answers: the privileged auditor's hook (:class:`AuditHooks`)."""
        raise NotImplementedError

    @staticmethod
    def privileged(**values: Any) -> dict[str, dict[str, Any]]:
        """``{"privileged": values}``, to spread into ``info``: the one place answer-bearing values go.

        HideInfoKeys removes the key (by default everywhere; with
        ``gym_integrity.make(id, reveal_on_end=True)`` it stays on the final
        transition). Give fresh values on every call: trainers keep and mutate
        the info they get.

        >>> {"problem_id": "add/1/2", **TextEnv.privileged(answer="3")}
        {'problem_id': 'add/1/2', 'privileged': {'answer': '3'}}
        """
        return {PRIVILEGED_KEY: values}


@runtime_checkable
class AuditHooks(Protocol):
    """The privileged auditor's hooks: what ``check_integrity`` asks a raw env (``env.unwrapped``) that has them.

    None of them is an agent channel: the auditor calls them on the task
    object, outside the stack. An env may define any of the three; the auditor
    (``gym_integrity.audit.adapters``) uses each it finds and falls back for
    the rest: answers wrapped as ``<answer>a</answer>`` and ``\\boxed{a}`` (or
    a ``submit_answer`` tool call when the env's tool schemas name one), a
    thinking sentence as the non-answer, and the answers the env reveals at
    the end as gold. ``isinstance(env.unwrapped, AuditHooks)`` is true when all
    three are there.

    A fourth, optional and outside the protocol, serves tasks with many right
    answers (any proper colouring, any valid plan or conclusion):
    ``is_right_answer(answer) -> bool``, the task's own judge for the current
    episode. The probes that count a paid answer other than the gold as pay for
    nothing (the search probes, ``random_answers``, ``constant_answers``) count
    one it takes as right at chance, and say so; they trust it only while it
    refuses answers that solve nothing and its right guesses stay rare
    (``gym_integrity.audit.right_answers``).

    >>> class Toy:
    ...     def gold_answers(self): return ["42"]
    ...     def audit_answer_action(self, answer): return {"tool": "submit", "arguments": {"answer": answer}}
    ...     def audit_non_answer_action(self): return {"tool": "list_tools", "arguments": {}}
    >>> isinstance(Toy(), AuditHooks)
    True
    """

    def gold_answers(self) -> list[str]:
        """The current episode's gold answer(s), the one the grader accepts first; reference text may follow.

        The audit answers with the first and searches everything the agent sees
        for all of them. ``[]`` when the episode has no single answer.
        """
        ...

    def audit_answer_action(self, answer: str) -> Any:
        """The action that submits ``answer`` (for an env whose answers are not plain text)."""
        ...

    def audit_non_answer_action(self) -> Any:
        """An action that answers nothing and changes nothing the grade depends on (a read-only tool call)."""
        ...

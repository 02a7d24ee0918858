"""The wire models of a served env: the action a client sends, the observation and state it gets back.

They are openenv-core's pydantic models (``Action``, ``Observation``,
``State``), so OpenEnv's clients, schema endpoint and web tooling read them
as they read any OpenEnv env. What goes out is an allow-list: the observation
string, the reward, and the info fields the integrity stack left public
(:func:`public_observation`); ``metadata`` holds the step's ``verdict`` and
``no_verdict`` (the one dict OpenEnv's typed clients pass through), and the
privileged info never reaches a model at all.
"""

from __future__ import annotations

import math
from collections import abc
from collections.abc import Mapping
from typing import Any

from openenv.core.env_server.mcp_types import CallToolAction, ListToolsAction
from openenv.core.env_server.types import Action, Observation, State
from pydantic import ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from gym_integrity.protocol import DEFAULT_HIDDEN_KEYS, MAX_NUM_TOKENS, PRIVILEGED_KEY

__all__ = [
    "GYM_FIELDS_KEY",
    "GymAction",
    "GymOrToolCallAction",
    "GymObservation",
    "GymState",
    "ToolResetObservation",
    "gym_fields",
    "public_observation",
]

Scalar = str | int | float | bool | None


class GymAction(Action):
    """One step: the model's text, or (for an env with tools) one tool call.

    ``{"text": str}`` with an optional ``num_tokens`` (the trainer's count of
    the generation, for length shaping; never read from the text), or
    ``{"tool": name, "arguments": {...}}``. Exactly one of ``text`` and
    ``tool``. Types are strict: ``"5"`` is not a token count.
    """

    text: str | None = Field(default=None, strict=True, description="the model's text for this step")
    num_tokens: int | None = Field(
        default=None,
        strict=True,
        ge=0,
        le=MAX_NUM_TOKENS,
        description="tokens the trainer counted in the generation (length shaping)",
    )
    # The tool call is the model's: no length, shape or character rule here, so an empty or odd name, or
    # arguments that are not an object, reach the env and are graded there as the error step they are in process,
    # not refused on the wire (and a name with a lone surrogate cannot break the error frame's encoding).
    tool: str | None = Field(default=None, strict=True, description="the tool to call (envs with tools only)")
    arguments: Any | None = Field(default=None, description="the tool call's arguments (a JSON object)")
    # OpenEnv's reasoning_gym_env sends the bare answer; it is graded as the env's answer format wraps it.
    answer: str | None = Field(
        default=None, strict=True, description="a bare final answer (OpenEnv's ReasoningGymAction), graded as if tagged"
    )

    @model_validator(mode="after")
    def _one_kind(self) -> GymAction:
        # PydanticCustomError, not ValueError: openenv sends ``e.errors()`` back to the client, and a
        # ValueError's context holds the exception object, which does not serialise (the session would die).
        if sum(v is not None for v in (self.text, self.tool, self.answer)) != 1:
            raise PydanticCustomError("one_kind", "give exactly one of 'text', 'answer' and 'tool'")
        if self.tool is None and self.arguments is not None:
            raise PydanticCustomError("one_kind", "'arguments' go with 'tool'")
        if self.text is None and self.num_tokens is not None:
            raise PydanticCustomError("one_kind", "'num_tokens' goes with 'text'")
        return self

    def to_env_action(self, answer_format: str = "tag") -> Any:
        """The action the gym env takes: a str, ``{"text", "num_tokens"}``, or ``{"tool", "arguments"}``.

        An ``answer`` becomes the text a model would write for it under the
        env's ``answer_format`` (``<answer>a</answer>``, ``\\boxed{a}``, or
        the bare answer for ``raw``).
        """
        if self.tool is not None:
            return {"tool": self.tool, "arguments": {} if self.arguments is None else self.arguments}
        if self.answer is not None:
            if answer_format == "raw":
                return self.answer
            return f"\\boxed{{{self.answer}}}" if answer_format == "boxed" else f"<answer>{self.answer}</answer>"
        if self.num_tokens is None:
            return self.text
        return {"text": self.text, "num_tokens": self.num_tokens}


class GymOrToolCallAction(GymAction):
    """The action of a served env that also has an MCP tool set: a :class:`GymAction`, or OpenEnv's
    ``{"type": "call_tool", ...}`` / ``{"type": "list_tools"}`` (what ``MCPToolClient`` sends).

    openenv-core routes those two only when the server's action class is its
    bare ``Action``; this class routes them itself and keeps GymAction's strict
    validation for everything else.
    """

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> Action:  # type: ignore[override]
        kind = obj.get("type") if isinstance(obj, Mapping) else None
        if kind == "call_tool":
            return CallToolAction.model_validate(obj, *args, **kwargs)
        if kind == "list_tools":
            return ListToolsAction.model_validate(obj, *args, **kwargs)
        return GymAction.model_validate(obj, *args, **kwargs)


class GymObservation(Observation):
    """What a client sees after ``reset`` or ``step``: the observation text and the public info.

    ``done`` is ``terminated or truncated`` (``truncated`` says which);
    ``verdict``/``no_verdict``/``score``/``cause`` are the grade of the step
    (absent at reset); ``integrity`` is the stack's own record (``steps``,
    ``step_budget``, ``frozen``, ``ignored_steps``); ``metrics`` the env's
    numbers; ``details`` the env's other public scalars (``dataset``,
    ``attempts_remaining``, ``tool_ok``, ...).
    """

    text: str = ""
    truncated: bool = False
    #: OpenEnv's reasoning_gym_env field: the prompt at reset, None after a step (as there).
    question: str | None = None
    problem_id: str | None = None
    verdict: str | None = None
    no_verdict: bool | None = None
    score: float | None = None
    cause: str | None = None
    #: The verdict is ``correct`` (the env's own success rule where it has one); None when nothing was graded.
    is_correct: bool | None = None
    problem_type: str | None = None
    max_attempts: int | None = None
    attempts_remaining: int | None = None
    integrity: dict[str, Scalar] = Field(default_factory=dict)
    metrics: dict[str, float] = Field(default_factory=dict)
    details: dict[str, Scalar] = Field(default_factory=dict)


#: The ``metadata`` key under which a :class:`ToolResetObservation` carries the :class:`GymObservation` fields.
GYM_FIELDS_KEY = "gym_integrity"


class ToolResetObservation(Observation):
    """The reset observation of an env whose MCP tool set names its client's reset shape (QEDMath-v0's
    ``MCP_RESET``): that tool's fields at the top, as the tool set's own client parses them (OpenEnv's QED
    client forbids any other key), and the :class:`GymObservation` fields under ``metadata[GYM_FIELDS_KEY]``,
    where :class:`~gym_integrity.integrations.openenv.client.GymEnvClient` reads them back (:func:`gym_fields`).
    """

    model_config = ConfigDict(extra="allow", validate_assignment=True)

    @classmethod
    def of(cls, fields: Mapping[str, Any], observation: GymObservation) -> ToolResetObservation:
        ours = observation.model_dump(exclude={"done", "reward", "metadata"})
        return cls(
            **fields,
            done=observation.done,
            reward=observation.reward,
            metadata={**observation.metadata, GYM_FIELDS_KEY: ours},
        )


def gym_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The :class:`GymObservation` fields of an observation frame: the frame's own, or for a
    :class:`ToolResetObservation` the ones nested in its metadata (with the rest of the metadata)."""
    metadata = fields.get("metadata")
    if "text" in fields or not isinstance(metadata, Mapping) or not isinstance(metadata.get(GYM_FIELDS_KEY), Mapping):
        return dict(fields)
    return {**metadata[GYM_FIELDS_KEY], "metadata": {k: v for k, v in metadata.items() if k != GYM_FIELDS_KEY}}


class GymState(State):
    """``state()``: the session's episode id and step count, the served id, and whether the episode has ended."""

    env_id: str = ""
    done: bool = False


_TYPED = {"problem_id": str, "verdict": str, "no_verdict": bool, "score": float, "cause": str}
#: Never sent, whatever the stack left: the stack removes them already; this is the second lock on the door.
_NEVER = frozenset(DEFAULT_HIDDEN_KEYS) | {PRIVILEGED_KEY}


def _scalar(value: Any) -> tuple[bool, Scalar]:
    """``(True, value)`` for a JSON scalar (finite floats only), else ``(False, None)``."""
    if value is None or isinstance(value, (str, bool, int)):
        return True, value
    if isinstance(value, float):
        return (True, value) if math.isfinite(value) else (False, None)
    return False, None


def _scalars(values: Any) -> dict[str, Scalar]:
    # type() is dict first: the stack's infos are plain dicts, and isinstance against typing's Mapping costs
    # more than the rest of this loop.
    if type(values) is not dict and not isinstance(values, abc.Mapping):
        return {}
    out = {}
    for key, value in values.items():
        ok, value = _scalar(value)
        if ok and type(key) is str and key not in _NEVER:
            out[key] = value
    return out


def public_observation(
    text: str, info: Mapping[str, Any], reward: float | None = None, terminated: bool = False, truncated: bool = False
) -> GymObservation:
    """The observation a client gets, built from what the integrity stack returned.

    Only JSON scalars and the ``integrity``/``metrics`` dicts of scalars are
    kept; nested data (lists, other dicts) and any name the stack hides are
    dropped, so a key an env adds later is sent only if it is a plain public
    value.
    """
    typed: dict[str, Any] = {}
    for name, kind in _TYPED.items():
        ok, value = _scalar(info.get(name))
        typed[name] = kind(value) if ok and value is not None else None
    metadata = {"verdict": typed["verdict"], "no_verdict": typed["no_verdict"]} if typed["verdict"] is not None else {}
    counts = {}
    for name in ("max_attempts", "attempts_remaining"):
        value = info.get(name)
        counts[name] = value if type(value) is int else None
    problem_type = info.get("problem_type")
    frozen = bool(isinstance(info.get("integrity"), abc.Mapping) and info["integrity"].get("frozen"))
    is_correct = None
    if typed["verdict"] is not None and not typed["no_verdict"] and not frozen:
        success = info.get("success")
        is_correct = bool(success) if isinstance(success, bool) else typed["verdict"] == "correct"
    metrics = {
        k: float(v)
        for k, v in _scalars(info.get("metrics")).items()
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    }
    details = {k: v for k, v in _scalars(info).items() if k not in _TYPED}
    return GymObservation(
        text=text,
        done=bool(terminated or truncated),
        truncated=bool(truncated),
        question=text if reward is None else None,
        is_correct=is_correct,
        problem_type=problem_type if isinstance(problem_type, str) else None,
        metadata=metadata,
        **counts,
        reward=None if reward is None else float(reward),
        integrity=_scalars(info.get("integrity")),
        metrics=metrics,
        details=details,
        **typed,
    )

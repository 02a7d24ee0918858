"""Reading one tool call out of an action: a dict, raw JSON text, or a ``<tool_call>`` block.

Accepted forms (one tool call per step):

* the structured dict ``{"tool": name, "arguments": {...}}`` (``"name"`` is
  accepted for ``"tool"``, and OpenAI's ``{"function": {"name", "arguments"}}``
  too; ``arguments`` may be a JSON string, as OpenAI sends it);
* text holding ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``,
  the format open chat models (Qwen, Hermes) emit;
* text holding one JSON object ``{"name": ..., "arguments": {...}}``, bare or
  in a fenced code block.

Everything else is a :class:`ActionError` whose message says what is expected.
Parsing is total: no text raises, and the work is bounded by ``max_chars``.

Example:
    >>> parse_action('<tool_call>{"name": "submit_answer", "arguments": {"answer": "42"}}</tool_call>')
    ToolCall(name='submit_answer', arguments={'answer': '42'})
    >>> parse_action({"tool": "get_descriptions", "arguments": {"company_name": "helios_energy"}})
    ToolCall(name='get_descriptions', arguments={'company_name': 'helios_energy'})
    >>> parse_action("the answer is 42").message.splitlines()[0]
    'Error: no tool call found in the action.'
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping

__all__ = ["ToolCall", "ActionError", "parse_action", "FORMAT_HELP"]

FORMAT_HELP = (
    'Call exactly one tool per turn, as <tool_call>{"name": "<tool>", "arguments": {...}}</tool_call> '
    'or as a JSON object {"name": "<tool>", "arguments": {...}}.'
)
_OPEN, _CLOSE = "<tool_call>", "</tool_call>"
#: How many '{' positions are tried as the start of a JSON object (bounds the work on noise).
_MAX_JSON_STARTS = 32


@dataclass(frozen=True)
class ToolCall:
    """A parsed tool call: the tool's name and its keyword arguments."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ActionError:
    """Why an action holds no usable tool call (the text returned as the observation)."""

    message: str


def _from_mapping(obj: Mapping[str, Any]) -> ToolCall | ActionError:
    if "function" in obj and isinstance(obj["function"], Mapping):
        obj = obj["function"]
    name = obj.get("tool", obj.get("name"))
    if not isinstance(name, str) or not name.strip():
        return ActionError('Error: the tool call has no tool name (expected key "name" or "tool" with a string).')
    arguments: Any = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError):
            return ActionError(f"Error: the arguments of {name.strip()[:64]!r} are not valid JSON.")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        return ActionError(f'Error: "arguments" of {name.strip()[:64]!r} must be a JSON object.')
    if not all(isinstance(k, str) for k in arguments):
        return ActionError("Error: argument names must be strings.")
    return ToolCall(name.strip(), dict(arguments))


def _json_objects(text: str) -> list[Any]:
    """JSON objects found in ``text`` at up to ``_MAX_JSON_STARTS`` '{' positions, left to right."""
    decoder = json.JSONDecoder()
    found: list[Any] = []
    pos, tries = text.find("{"), 0
    while pos >= 0 and tries < _MAX_JSON_STARTS:
        tries += 1
        try:
            obj, end = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            pos = text.find("{", pos + 1)
            continue
        found.append(obj)
        pos = text.find("{", end)
    return found


def _tool_call_blocks(text: str) -> list[str]:
    """The bodies of complete ``<tool_call>...</tool_call>`` blocks, found in one linear pass."""
    blocks: list[str] = []
    pos = text.find(_OPEN)
    while pos >= 0:
        end = text.find(_CLOSE, pos + len(_OPEN))
        if end < 0:
            break
        # The innermost opening tag before this close starts the block.
        start = text.rfind(_OPEN, pos, end)
        blocks.append(text[start + len(_OPEN) : end])
        pos = text.find(_OPEN, end + len(_CLOSE))
    return blocks


def _is_call(obj: Any) -> bool:
    return isinstance(obj, Mapping) and ("name" in obj or "tool" in obj or "function" in obj)


def parse_action(action: str | Mapping[str, Any], max_chars: int = 100_000) -> ToolCall | ActionError:
    """The one tool call in ``action`` (a str or a dict), or an :class:`ActionError` saying why not.

    Raises:
        TypeError: if ``action`` is neither a ``str`` nor a dict (a harness bug, not model text).
    """
    if isinstance(action, Mapping):
        return _from_mapping(action)
    if not isinstance(action, str):
        raise TypeError(
            "FinQA action must be a str (the model's text holding one tool call) or a dict "
            f'{{"tool": name, "arguments": {{...}}}}; got {type(action).__name__}'
        )
    if len(action) > max_chars:
        return ActionError(f"Error: the action is {len(action)} characters long; the limit is {max_chars}. "
                           + FORMAT_HELP)
    blocks = _tool_call_blocks(action)
    if len(blocks) > 1:
        return ActionError(f"Error: found {len(blocks)} <tool_call> blocks; send one tool call per step.")
    if len(blocks) == 1:
        calls = [o for o in _json_objects(blocks[0]) if isinstance(o, Mapping)]
        if len(calls) != 1:
            return ActionError("Error: the <tool_call> block must hold exactly one JSON object. " + FORMAT_HELP)
        return _from_mapping(calls[0])
    calls = [o for o in _json_objects(action) if _is_call(o)]
    if len(calls) > 1:
        return ActionError(f"Error: found {len(calls)} tool calls; send one tool call per step.")
    if len(calls) == 1:
        return _from_mapping(calls[0])
    return ActionError("Error: no tool call found in the action.\n" + FORMAT_HELP)

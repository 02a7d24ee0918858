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
Parsing is total: no text and no dict raises, and the work is bounded by
``max_chars``. A dict is first copied into plain JSON values
(:func:`read_structured`) within bounds on depth, size and number length, so
whatever a harness puts in it (a 5,000-digit int, NaN, bytes, a set, an object
whose ``__str__`` raises, a self-containing list) is an error step, not an
exception.

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
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ToolCall", "ActionError", "parse_action", "read_structured", "FORMAT_HELP"]

FORMAT_HELP = (
    'Call exactly one tool per turn, as <tool_call>{"name": "<tool>", "arguments": {...}}</tool_call> '
    'or as a JSON object {"name": "<tool>", "arguments": {...}}.'
)
_OPEN, _CLOSE = "<tool_call>", "</tool_call>"
#: How many '{' positions are tried as the start of a JSON object (bounds the work on noise).
_MAX_JSON_STARTS = 32
#: Bounds on a structured action: no tool call nests this deep or holds this many values, and the
#: depth bound also ends a walk of a self-containing dict or list.
_MAX_DEPTH = 32
_MAX_VALUES = 10_000
_MAX_NAME_CHARS = 10_000  # all keys together; string values share the action's own limit, max_chars
#: Ints up to ~3,900 digits: below Python's 4,300-digit str() limit (which raises), and a bound that
#: still holds when a process lifts that limit (str() of a huge int is quadratic).
_MAX_INT_BITS = 13_000
_JSON_KINDS = "a string, a finite number, true/false, null, a list or an object"


@dataclass(frozen=True)
class ToolCall:
    """A parsed tool call: the tool's name and its keyword arguments."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ActionError:
    """Why an action holds no usable tool call (the text returned as the observation)."""

    message: str


class _Unfit(Exception):
    """A structured action holds something that is not plain JSON data (the message says what)."""


class _Reader:
    """Copies a structured action into plain ``dict``/``list``/``str``/``int``/``float``/``bool``/``None``.

    Only exact built-in types are kept; subclasses are read through the
    built-in type's own method (``str.__str__``, ``int.__int__``,
    ``float.__float__``), so an overridden ``__str__`` or ``__eq__`` never runs.
    Every value, character and nesting level is counted against a bound, so
    the walk is bounded whatever it is given.
    """

    def __init__(self, max_chars: int) -> None:
        self.values_left = _MAX_VALUES
        self.chars_left = max_chars
        self.name_chars_left = _MAX_NAME_CHARS

    def read(self, value: Any, depth: int = 0) -> Any:
        self.values_left -= 1
        if self.values_left < 0:
            raise _Unfit(f"the tool call holds more than {_MAX_VALUES} values")
        if depth > _MAX_DEPTH:
            raise _Unfit(f"the tool call nests deeper than {_MAX_DEPTH} levels")
        if value is None or value is True or value is False:
            return value
        if isinstance(value, str):
            return self._text(value)
        if isinstance(value, int):
            number = int.__int__(value)
            if number.bit_length() > _MAX_INT_BITS:
                raise _Unfit("a number in the tool call is too large (more than ~3,900 digits)")
            return number
        if isinstance(value, float):
            real = float.__float__(value)
            if real != real or real in (float("inf"), float("-inf")):
                raise _Unfit(f"a number in the tool call is {real}; values must be {_JSON_KINDS}")
            return real
        if isinstance(value, Mapping):
            out: dict[str, Any] = {}
            for key, item in _bounded(value.items(), self.values_left):
                if not isinstance(key, str):
                    raise _Unfit("argument names must be strings")
                self.name_chars_left -= str.__len__(key)
                if self.name_chars_left < 0:
                    raise _Unfit(f"the tool call's names are longer than {_MAX_NAME_CHARS} characters in all")
                out[str.__str__(key)] = self.read(item, depth + 1)
            return out
        if isinstance(value, (list, tuple)):
            return [self.read(item, depth + 1) for item in _bounded(value, self.values_left)]
        raise _Unfit(f"a value of type {type(value).__name__[:40]} is not JSON data; values must be {_JSON_KINDS}")

    def _text(self, text: str) -> str:
        self.chars_left -= str.__len__(text)  # counted before a subclass is copied
        if self.chars_left < 0:
            raise _Unfit("the tool call's text is longer than the action limit")
        return str.__str__(text)


def _bounded(items: Any, limit: int) -> Any:
    """At most ``limit + 1`` items of an iterable (one past the bound is enough to refuse it)."""
    for count, item in enumerate(items):
        if count > limit:
            raise _Unfit(f"the tool call holds more than {_MAX_VALUES} values")
        yield item


def read_structured(action: Mapping[str, Any], max_chars: int = 100_000) -> dict[str, Any] | ActionError:
    """A plain-JSON copy of a dict action, or an :class:`ActionError` saying what in it is unfit.

    Never raises: a harness may hand us anything inside a dict (its content is
    usually the model's tool call), and an odd value is the model's error step.

    >>> read_structured({"tool": "submit_answer", "arguments": {"answer": 10 ** 5000}}).message
    'Error: a number in the tool call is too large (more than ~3,900 digits).'
    """
    try:
        return _Reader(max_chars).read(action)
    except _Unfit as exc:
        return ActionError(f"Error: {exc}.")
    except Exception as exc:  # noqa: BLE001  a foreign Mapping's own methods may raise anything: that is its error
        return ActionError(
            f"Error: the tool call could not be read ({type(exc).__name__} while reading it); "
            f"values must be {_JSON_KINDS}."
        )


def _from_mapping(raw: Mapping[str, Any], max_chars: int) -> ToolCall | ActionError:
    obj = read_structured(raw, max_chars)  # JSON parsed from text can hold NaN or (with no digit limit) huge ints too
    if isinstance(obj, ActionError):
        return obj
    if "function" in obj and isinstance(obj["function"], Mapping):
        obj = dict(obj["function"])
    name = obj.get("tool", obj.get("name"))
    if not isinstance(name, str) or not name.strip():
        return ActionError('Error: the tool call has no tool name (expected key "name" or "tool" with a string).')
    arguments: Any = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError):
            return ActionError(f"Error: the arguments of {name.strip()[:64]!r} are not valid JSON.")
        if isinstance(arguments, Mapping):
            arguments = read_structured(arguments, max_chars)
            if isinstance(arguments, ActionError):
                return arguments
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
        return _from_mapping(action, max_chars)
    if not isinstance(action, str):
        raise TypeError(
            "FinQA action must be a str (the model's text holding one tool call) or a dict "
            f'{{"tool": name, "arguments": {{...}}}}; got {type(action).__name__}'
        )
    if len(action) > max_chars:
        return ActionError(
            f"Error: the action is {len(action)} characters long; the limit is {max_chars}. " + FORMAT_HELP
        )
    blocks = _tool_call_blocks(action)
    if len(blocks) > 1:
        return ActionError(f"Error: found {len(blocks)} <tool_call> blocks; send one tool call per step.")
    if len(blocks) == 1:
        calls = [o for o in _json_objects(blocks[0]) if isinstance(o, Mapping)]
        if len(calls) != 1:
            return ActionError("Error: the <tool_call> block must hold exactly one JSON object. " + FORMAT_HELP)
        return _from_mapping(calls[0], max_chars)
    calls = [o for o in _json_objects(action) if _is_call(o)]
    if len(calls) > 1:
        return ActionError(f"Error: found {len(calls)} tool calls; send one tool call per step.")
    if len(calls) == 1:
        return _from_mapping(calls[0], max_chars)
    return ActionError("Error: no tool call found in the action.\n" + FORMAT_HELP)

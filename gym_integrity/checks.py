"""The one error rule for arguments and config, and the helpers that apply it.

Every config class, wrapper and space checks its arguments with these helpers,
so the same mistake raises the same error everywhere:

* a wrong **type** raises ``TypeError`` (a ``bool`` is never a number);
* a wrong **value** of the right type raises ``ValueError``;
* an **unknown option** raises ``TypeError``, as Python does for an unexpected
  keyword argument;
* every message starts with ``Owner.field`` (``QEDMathConfig.max_tokens``,
  ``TerminalFreeze.frozen_reward``), says what was expected and shows what
  was given.

Example:
    >>> check_int("Demo.size", 0, low=1)
    Traceback (most recent call last):
    ...
    ValueError: Demo.size must be an int >= 1, got 0
    >>> check_int("Demo.size", True, low=1)
    Traceback (most recent call last):
    ...
    TypeError: Demo.size must be an int >= 1, got bool True
    >>> reject_unknown("Demo", {"sise": 3}, ["size", "seed"])
    Traceback (most recent call last):
    ...
    TypeError: Demo.sise is not an option (did you mean 'size'?); valid options: ['seed', 'size']
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from collections.abc import Collection, Iterable, Mapping
from typing import Any, Literal, TypeVar, cast, overload

__all__ = [
    "is_int",
    "is_number",
    "check_bool",
    "check_int",
    "check_number",
    "check_str",
    "check_choice",
    "check_type",
    "check_strs",
    "reject_unknown",
    "nested",
    "config_from",
    "positive_int_arg",
    "json_object_arg",
]

T = TypeVar("T")


def is_int(value: Any) -> bool:
    """True for an ``int`` that is not a ``bool`` (``True`` must not pass as 1).

    >>> is_int(3), is_int(True), is_int(3.0)
    (True, False, False)
    """
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """True for an ``int`` or ``float`` that is not a ``bool``.

    >>> is_number(0.5), is_number(2), is_number(False), is_number("1")
    (True, True, False, False)
    """
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _clipped(value: Any) -> str:
    """A repr of at most 80 characters that cannot itself fail.

    A huge int has no repr past Python's int-to-str limit and a user object's
    ``__repr__`` may raise; the error about the value must still be raised.
    """
    if is_int(value) and value.bit_length() > 256:
        return f"<an int of {value.bit_length()} bits>"
    try:
        text = repr(value)
    except Exception:
        return f"<a {type(value).__name__} whose repr fails>"
    return text if len(text) <= 80 else text[:77] + "..."


def _shown(value: Any) -> str:
    """What was given, short: the type name and a clipped repr."""
    return f"{type(value).__name__} {_clipped(value)}"


def _range(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    if low is not None and high is not None:
        return f" in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    if low is not None:
        return f" {'>' if low_open else '>='} {low:g}"
    if high is not None:
        return f" {'<' if high_open else '<='} {high:g}"
    return ""


def check_bool(name: str, value: Any) -> bool:
    """``value`` if it is a ``bool``; else ``TypeError`` (``1`` and ``"yes"`` are not bools)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {_shown(value)}")
    return value


@overload
def check_int(
    name: str, value: Any, *, low: int | None = ..., high: int | None = ..., optional: Literal[False] = ...
) -> int: ...
@overload
def check_int(
    name: str, value: Any, *, low: int | None = ..., high: int | None = ..., optional: bool
) -> int | None: ...
def check_int(
    name: str, value: Any, *, low: int | None = None, high: int | None = None, optional: bool = False
) -> int | None:
    """``value`` if it is an int (not a bool) within ``[low, high]``; ``None`` too when ``optional``."""
    if value is None and optional:
        return None
    expected = f"an int{_range(low, high, False, False)}{' or None' if optional else ''}"
    if not is_int(value):
        raise TypeError(f"{name} must be {expected}, got {_shown(value)}")
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{name} must be {expected}, got {_clipped(value)}")
    return value


@overload
def check_number(
    name: str,
    value: Any,
    *,
    low: float | None = ...,
    high: float | None = ...,
    low_open: bool = ...,
    high_open: bool = ...,
    optional: Literal[False] = ...,
    unit: str = ...,
) -> float: ...
@overload
def check_number(
    name: str,
    value: Any,
    *,
    low: float | None = ...,
    high: float | None = ...,
    low_open: bool = ...,
    high_open: bool = ...,
    optional: bool,
    unit: str = ...,
) -> float | None: ...
def check_number(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    optional: bool = False,
    unit: str = "",
) -> float | None:
    """``value`` as a float if it is a finite int/float (not a bool) within the bounds.

    ``low_open``/``high_open`` exclude the bound itself (``low=0, low_open=True``: ``> 0``).
    NaN and infinities are wrong values unless a bound is itself infinite.
    """
    if value is None and optional:
        return None
    expected = (
        f"a number{' (' + unit + ')' if unit else ''}{_range(low, high, low_open, high_open)}"
        f"{' or None' if optional else ''}"
    )
    if not is_number(value):
        raise TypeError(f"{name} must be {expected}, got {_shown(value)}")
    if is_int(value) and value.bit_length() > 1000:  # float() would overflow
        raise ValueError(f"{name} must be {expected}, got {_clipped(value)}")
    value = float(value)
    bad = math.isnan(value)
    if low is not None and (value < low or (low_open and value == low)):
        bad = True
    if high is not None and (value > high or (high_open and value == high)):
        bad = True
    if math.isinf(value) and not (high is not None and math.isinf(high)):
        bad = True
    if bad:
        raise ValueError(f"{name} must be {expected}, got {_clipped(value)}")
    return value


@overload
def check_str(
    name: str, value: Any, *, non_empty: bool = ..., optional: Literal[False] = ..., what: str = ...
) -> str: ...
@overload
def check_str(name: str, value: Any, *, non_empty: bool = ..., optional: bool, what: str = ...) -> str | None: ...
def check_str(
    name: str, value: Any, *, non_empty: bool = True, optional: bool = False, what: str = "a str"
) -> str | None:
    """``value`` if it is a str (non-blank when ``non_empty``); ``None`` too when ``optional``."""
    if value is None and optional:
        return None
    expected = (
        f"{'a non-empty ' + what[2:] if non_empty and what.startswith('a ') else what}{' or None' if optional else ''}"
    )
    if not isinstance(value, str):
        raise TypeError(f"{name} must be {expected}, got {_shown(value)}")
    if non_empty and not value.strip():
        raise ValueError(f"{name} must be {expected}, got {_clipped(value)}")
    return value


def check_choice(name: str, value: Any, choices: Collection[T]) -> T:
    """``value`` if it is one of ``choices``; a value of another type than the choices is a ``TypeError``."""
    kinds = {type(c) for c in choices}
    if not isinstance(value, tuple(kinds)) or (isinstance(value, bool) and bool not in kinds):
        raise TypeError(f"{name} must be one of {tuple(choices)}, got {_shown(value)}")
    if value not in choices:
        close = (
            difflib.get_close_matches(value, [c for c in choices if isinstance(c, str)], n=1)
            if isinstance(value, str)
            else []
        )
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {_clipped(value)}{hint}")
    return cast(T, value)


def check_type(name: str, value: Any, types: type | tuple[type, ...], what: str) -> Any:
    """``value`` if it is an instance of ``types``; else ``TypeError`` saying ``what`` was expected."""
    if not isinstance(value, types) or (
        isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,))
    ):
        raise TypeError(f"{name} must be {what}, got {_shown(value)}")
    return value


def check_strs(
    name: str, value: Any, *, choices: Collection[str] | None = None, non_empty_items: bool = True, min_items: int = 0
) -> tuple[str, ...]:
    """``value`` as a tuple if it is a collection of str (a list, tuple, set...) whose items pass.

    A single ``str`` is a wrong type (it would be read letter by letter), as are a
    mapping and a non-str item. An empty item (when ``non_empty_items``), an item
    outside ``choices`` or fewer than ``min_items`` items are wrong values.

    >>> check_strs("Demo.keys", ["a", "b"])
    ('a', 'b')
    >>> check_strs("Demo.keys", "ab")
    Traceback (most recent call last):
    ...
    TypeError: Demo.keys must be a list of str (not a single str), got str 'ab'
    >>> check_strs("Demo.kinds", ["proof", "essay"], choices=("proof", "answer"))
    Traceback (most recent call last):
    ...
    ValueError: Demo.kinds[1] must be one of ('proof', 'answer'), got 'essay'
    """
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a list of str (not a single {type(value).__name__}), got {_shown(value)}")
    if isinstance(value, Mapping) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a list of str, got {_shown(value)}")
    items = tuple(value)
    for index, item in enumerate(items):
        if choices is not None:
            check_choice(f"{name}[{index}]", item, tuple(choices))
        else:
            check_str(f"{name}[{index}]", item, non_empty=non_empty_items)
    if len(items) < min_items:
        raise ValueError(f"{name} must hold at least {min_items} item(s), got {items!r}")
    return items


def reject_unknown(
    owner: str,
    given: Mapping[str, Any] | Iterable[str],
    valid: Iterable[str],
    *,
    hints: Mapping[str, str] | None = None,
    subscript: bool = False,
) -> None:
    """``TypeError`` naming the first unknown key of ``given`` as ``owner.key``, with a close match if any.

    ``hints`` maps keys that are known mistakes to what to do instead; such a key
    is named first. ``subscript`` names a key as ``owner['key']`` (for a dict
    argument such as ``reset(options=...)``) instead of ``owner.key``.

    >>> reject_unknown("Demo", {"max_steps": 3}, ["size"], hints={"max_steps": "a wrapper's setting"})
    Traceback (most recent call last):
    ...
    TypeError: Demo.max_steps is not an option (a wrapper's setting); valid options: ['size']
    >>> reject_unknown("Demo.reset options", {"idx": 3}, ["index"], subscript=True)
    Traceback (most recent call last):
    ...
    TypeError: Demo.reset options['idx'] is not an option (did you mean 'index'?); valid options: ['index']
    """
    valid = sorted(valid)
    hints = hints or {}
    unknown = sorted((str(k) for k in given if k not in valid), key=lambda k: (k not in hints, k))
    if not unknown:
        return
    first = unknown[0]
    if first in hints:
        hint = f" ({hints[first]})"
    else:
        close = difflib.get_close_matches(first, valid, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
    more = f" (also unknown: {unknown[1:]})" if len(unknown) > 1 else ""
    where = f"{owner}[{first!r}]" if subscript else f"{owner}.{first}"
    raise TypeError(f"{where} is not an option{hint}{more}; valid options: {valid}")


def nested(name: str, build: Any, *args: Any, **kwargs: Any) -> Any:
    """``build(*args, **kwargs)``, with any ``TypeError``/``ValueError`` prefixed by ``name``.

    For a config inside a config: ``QEDMathConfig.verifier: VerifierConfig.num_workers
    must be ...`` keeps the rule (the message starts with the outer ``Owner.field``)
    and the exception type.
    """
    try:
        return build(*args, **kwargs)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{name}: {exc}") from None


def config_from(cls: type[T], value: Any) -> T:
    """A ``cls`` from ``None`` (its defaults), a ``cls`` (itself) or a mapping of its fields.

    For a config inside a config (``QEDMathConfig.verifier``): a mapping's unknown
    key is a ``TypeError`` naming ``Cls.key``, as for any unknown option. Validation
    is the class's own (``__post_init__``); call ``validate()`` after if it has no such hook.

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Demo:
    ...     size: int = 1
    >>> config_from(Demo, {"size": 3}), config_from(Demo, None)
    (Demo(size=3), Demo(size=1))
    >>> config_from(Demo, {"sise": 3})
    Traceback (most recent call last):
    ...
    TypeError: Demo.sise is not an option (did you mean 'size'?); valid options: ['size']
    """
    if value is None:
        return cls()
    if isinstance(value, cls):
        return value
    if isinstance(value, Mapping):
        reject_unknown(cls.__name__, value, [f.name for f in dataclasses.fields(cast(Any, cls)) if f.init])
        return cls(**value)
    raise TypeError(
        f"{cls.__name__} must be given as a {cls.__name__}, a dict of its fields or None, got {_shown(value)}"
    )


def positive_int_arg(text: str) -> int:
    """An ``argparse`` type: an int >= 1, or the parser's own error naming what was given.

    >>> positive_int_arg("3")
    3
    """
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an int >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an int >= 1, got {value}")
    return value


def json_object_arg(text: str) -> dict[str, Any]:
    """An ``argparse`` type: a JSON object (``--env-kwargs``), or the parser's own error saying what it got.

    >>> json_object_arg('{"dataset": "leg_counting"}')
    {'dataset': 'leg_counting'}
    """
    import argparse
    import json

    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"must be a JSON object, got {type(value).__name__}")
    return value

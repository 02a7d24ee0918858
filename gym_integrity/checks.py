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

import difflib
import math
from typing import Any, Collection, Iterable, Mapping, TypeVar

__all__ = [
    "is_int",
    "is_number",
    "check_bool",
    "check_int",
    "check_number",
    "check_str",
    "check_choice",
    "check_type",
    "reject_unknown",
    "nested",
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


def _shown(value: Any) -> str:
    """What was given, short: the type name and a clipped repr."""
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{type(value).__name__} {text}"


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


def check_int(name: str, value: Any, *, low: int | None = None, high: int | None = None,
              optional: bool = False) -> int | None:
    """``value`` if it is an int (not a bool) within ``[low, high]``; ``None`` too when ``optional``."""
    if value is None and optional:
        return None
    expected = f"an int{_range(low, high, False, False)}{' or None' if optional else ''}"
    if not is_int(value):
        raise TypeError(f"{name} must be {expected}, got {_shown(value)}")
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{name} must be {expected}, got {value!r}")
    return value


def check_number(name: str, value: Any, *, low: float | None = None, high: float | None = None,
                 low_open: bool = False, high_open: bool = False, optional: bool = False,
                 unit: str = "") -> float | None:
    """``value`` as a float if it is a finite int/float (not a bool) within the bounds.

    ``low_open``/``high_open`` exclude the bound itself (``low=0, low_open=True``: ``> 0``).
    NaN and infinities are wrong values unless a bound is itself infinite.
    """
    if value is None and optional:
        return None
    expected = (f"a number{' (' + unit + ')' if unit else ''}{_range(low, high, low_open, high_open)}"
                f"{' or None' if optional else ''}")
    if not is_number(value):
        raise TypeError(f"{name} must be {expected}, got {_shown(value)}")
    value = float(value)
    bad = math.isnan(value)
    if low is not None and (value < low or (low_open and value == low)):
        bad = True
    if high is not None and (value > high or (high_open and value == high)):
        bad = True
    if math.isinf(value) and not (high is not None and math.isinf(high)):
        bad = True
    if bad:
        raise ValueError(f"{name} must be {expected}, got {value!r}")
    return value


def check_str(name: str, value: Any, *, non_empty: bool = True, optional: bool = False,
              what: str = "a str") -> str | None:
    """``value`` if it is a str (non-blank when ``non_empty``); ``None`` too when ``optional``."""
    if value is None and optional:
        return None
    expected = f"{'a non-empty ' + what[2:] if non_empty and what.startswith('a ') else what}" \
               f"{' or None' if optional else ''}"
    if not isinstance(value, str):
        raise TypeError(f"{name} must be {expected}, got {_shown(value)}")
    if non_empty and not value.strip():
        raise ValueError(f"{name} must be {expected}, got {value!r}")
    return value


def check_choice(name: str, value: Any, choices: Collection[T]) -> T:
    """``value`` if it is one of ``choices``; a value of another type than the choices is a ``TypeError``."""
    kinds = {type(c) for c in choices}
    if not isinstance(value, tuple(kinds)) or (isinstance(value, bool) and bool not in kinds):
        raise TypeError(f"{name} must be one of {tuple(choices)}, got {_shown(value)}")
    if value not in choices:
        close = difflib.get_close_matches(value, [c for c in choices if isinstance(c, str)], n=1) \
            if isinstance(value, str) else []
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {value!r}{hint}")
    return value


def check_type(name: str, value: Any, types: type | tuple[type, ...], what: str) -> Any:
    """``value`` if it is an instance of ``types``; else ``TypeError`` saying ``what`` was expected."""
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in (
            types if isinstance(types, tuple) else (types,))):
        raise TypeError(f"{name} must be {what}, got {_shown(value)}")
    return value


def reject_unknown(owner: str, given: Mapping[str, Any] | Iterable[str], valid: Iterable[str]) -> None:
    """``TypeError`` naming the first unknown key of ``given`` as ``owner.key``, with a close match if any."""
    valid = sorted(valid)
    unknown = sorted(str(k) for k in given if k not in valid)
    if not unknown:
        return
    close = difflib.get_close_matches(unknown[0], valid, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    more = f" (also unknown: {unknown[1:]})" if len(unknown) > 1 else ""
    raise TypeError(f"{owner}.{unknown[0]} is not an option{hint}{more}; valid options: {valid}")


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

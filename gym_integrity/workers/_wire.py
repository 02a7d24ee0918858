"""The wire format both ends share: plain-data messages, the limits and timings both count on, start-up code.

A worker's replies (pipe) and the machine pool's messages (socket) are pickles
read here as plain data only: :class:`PlainUnpickler` never looks up a class,
so a worker that untrusted input took over, or a process on the other end of
the socket, cannot make this process run code. The worker and the machine
pool's server are plain ``python -c`` processes whose code
:func:`stubbed_main_code` writes: ``gym_integrity``'s package ``__init__``
files stubbed on the way to the module they run (this package's excepted: it
imports only the standard library and the core), so neither imports gymnasium
or numpy.

A worker's messages: ``(READY, pid)``, ``(STARTUP_ERROR, text)``, then per
request ``(req_id, "ok", pickled value)`` or ``(req_id, "error", exception type name)``. A machine pool
server's outcome message is :func:`outcome_message`'s, read by :func:`read_outcome`.

Example:
    >>> plain_loads(dumps(("ready", 42)))
    ('ready', 42)
    >>> import pickle, collections
    >>> plain_loads(pickle.dumps(collections.OrderedDict()))
    Traceback (most recent call last):
    ...
    _pickle.UnpicklingError: a worker reply may hold plain data only, not collections.OrderedDict
"""

from __future__ import annotations

import io
import os
import pickle
import struct
from typing import Any

from gym_integrity.workers._outcomes import PoolStatus, TaskOutcome

__all__ = [
    "CALLER_GRACE_S",
    "COUNTED_STATS",
    "MAX_MESSAGE_BYTES",
    "PACKAGE_ROOT",
    "READY",
    "STARTUP_ERROR",
    "STARTUP_TIMEOUT_S",
    "STAT_KEYS",
    "dumps",
    "frame_size",
    "outcome_message",
    "parse_reply",
    "plain_loads",
    "read_outcome",
    "stubbed_main_code",
    "worst_wait_s",
]

#: The directory holding the ``gym_integrity`` package: put on a worker's or server's ``PYTHONPATH``.
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STARTUP_TIMEOUT_S = 60.0  # a worker not ready by then is killed and counts as a startup failure
CALLER_GRACE_S = 5.0  # a caller waits this much past the worst honest wait before calling the pool stuck
MAX_MESSAGE_BYTES = 64 << 20  # a bigger reply or message is refused unread (the sender must not exhaust us)
#: A pool's counted outcomes, then its gauges: ``stats()`` gives each as ``pool/<key>``, and a machine pool's
#: server sends them to its clients.
COUNTED_STATS = (
    "requests",
    "completed",
    "timeouts",
    "crashes",
    "errors",
    "infra_errors",
    "overloaded",
    "retries",
    "worker_restarts",
)
STAT_KEYS = COUNTED_STATS + ("queue_depth", "in_flight", "run_s_mean", "run_s_max", "queued_s_max")
READY, STARTUP_ERROR = "ready", "startup_error"
OK, ERROR = "ok", "error"  # PoolStatus values, spelled here so a worker imports nothing else of ours

_STUBBED_MAIN_CODE = """
import sys, types
for name, path in {stubs!r}:
    module = types.ModuleType(name)
    module.__path__ = [path]
    sys.modules[name] = module
from {module} import {main}
{main}({argument!r})
"""


def worst_wait_s(max_retries: int, queue_allowance_s: float, budget_s: float) -> float:
    """The longest honest wait for one request: each attempt may queue for its allowance and run to its budget,
    plus one worker start-up; past this (and the caller's grace) the pool is deemed stuck and rebuilt."""
    return (max_retries + 1) * (queue_allowance_s + budget_s) + STARTUP_TIMEOUT_S + CALLER_GRACE_S


class PlainUnpickler(pickle.Unpickler):
    """Reads plain data only: a worker that untrusted input took over cannot make the parent run code."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"a worker reply may hold plain data only, not {module}.{name}")


def plain_loads(data: bytes) -> Any:
    return PlainUnpickler(io.BytesIO(data)).load()


def frame_size(head: bytes | bytearray) -> tuple[int, int] | None:
    """``(header length, body length)`` of a ``multiprocessing.connection`` message that starts with ``head``
    (a 4-byte length; -1 there means an 8-byte length follows), or None until its header is in. Raises OSError
    for a length over ``MAX_MESSAGE_BYTES``: such a message is refused unread."""
    if len(head) < 4:
        return None
    (size,) = struct.unpack_from("!i", head)
    header = 4
    if size == -1:
        if len(head) < 12:
            return None
        (size,), header = struct.unpack_from("!Q", head, 4), 12
    if not 0 <= size <= MAX_MESSAGE_BYTES:
        raise OSError(f"a message of {size} bytes (more than {MAX_MESSAGE_BYTES} refused unread)")
    return header, size


def dumps(message: Any) -> bytes:
    return pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)


def parse_reply(raw: bytes) -> tuple[Any, ...]:
    """A worker's message: ``(READY, pid)``, ``(STARTUP_ERROR, text)`` or ``(req_id, status, value)``."""
    message = plain_loads(raw)
    if isinstance(message, tuple) and len(message) == 2 and message[0] in (READY, STARTUP_ERROR):
        return message
    if not (isinstance(message, tuple) and len(message) == 3 and message[1] in (OK, ERROR)):
        raise ValueError("malformed worker reply")
    if message[1] == OK:
        return message[0], OK, plain_loads(message[2])
    return message


def outcome_message(req_id: int, outcome: TaskOutcome, stats: dict[str, float] | None) -> tuple[Any, ...]:
    """The machine pool server's message carrying one request's outcome and the pool's figures as of its end."""
    return (
        "outcome",
        req_id,
        outcome.status.value,
        outcome.value,
        outcome.detail,
        outcome.queued_s,
        outcome.run_s,
        outcome.attempts,
        stats,
    )


def read_outcome(message: tuple[Any, ...]) -> tuple[int, TaskOutcome, Any]:
    """``(req_id, outcome, stats)`` of an :func:`outcome_message` (raises on a malformed one)."""
    _, req_id, status, value, detail, queued_s, run_s, attempts, stats = message
    return (
        req_id,
        TaskOutcome(PoolStatus(status), value, str(detail), float(queued_s), float(run_s), int(attempts)),
        stats,
    )


def stubbed_main_code(module: str, main: str, argument: str, stubs_for: str) -> str:
    """``python -c`` code that runs ``module.main(argument)`` with ``gym_integrity``'s package ``__init__`` files
    stubbed on the way to ``stubs_for`` (no gymnasium, no numpy): a worker's, or a machine pool server's."""
    return _STUBBED_MAIN_CODE.format(stubs=_stubs(stubs_for), module=module, main=main, argument=argument)


def _stubs(target_module: str) -> list[tuple[str, str]]:
    """Empty package modules for ``gym_integrity`` and the target's parents inside it, but this package: its
    ``__init__`` imports only the standard library and the core, and handlers import from it."""
    root = os.path.join(PACKAGE_ROOT, "gym_integrity")
    names = ["gym_integrity"]
    parts = target_module.split(".")
    if parts[0] == "gym_integrity":
        names += [".".join(parts[:i]) for i in range(2, len(parts))]
    return [(n, os.path.join(root, *n.split(".")[1:])) for n in dict.fromkeys(names) if n != "gym_integrity.workers"]

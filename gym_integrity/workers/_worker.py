"""The worker process's entry point: load the handler, say ready, then answer requests until the pipe closes.

Runs in a plain ``python -c`` subprocess (:func:`~gym_integrity.workers._wire.stubbed_main_code`)
with requests on fd 0 and replies on fd 1. Imports nothing of the package but the wire format (standard
library only below it).
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
from multiprocessing.connection import Connection
from typing import Any

from gym_integrity.workers._wire import ERROR, OK, READY, STARTUP_ERROR

__all__ = ["main"]

#: The environment variable that carries a worker's ``RLIMIT_AS`` (MB; 0: none) from its parent.
MEMORY_ENV = "GYM_INTEGRITY_POOL_MEM_MB"


def main(handler: str) -> None:
    """Entry point of a worker process: requests on fd 0, replies on fd 1."""
    reply_fd = os.dup(1)
    os.dup2(2, 1)  # prints go to stderr (/dev/null) and cannot corrupt the reply stream
    requests, replies = Connection(0, writable=False), Connection(reply_fd, readable=False)
    try:  # die with the parent even if it is SIGKILLed (Linux)
        import ctypes

        ctypes.CDLL(None).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
        if os.getppid() == 1:
            return
    except Exception:
        pass
    limit_mb = int(os.environ.get(MEMORY_ENV, "0"))
    if limit_mb > 0:
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (limit_mb << 20, limit_mb << 20))
        except (ImportError, ValueError, OSError):
            pass
    try:
        import importlib

        module_name, function_name = handler.split(":")
        module = importlib.import_module(module_name)
        function = getattr(module, function_name)
        if callable(getattr(module, "warm", None)):
            module.warm()
    except BaseException as exc:  # noqa: BLE001  (tell the parent why, then exit)
        replies.send((STARTUP_ERROR, f"{type(exc).__name__}: {str(exc)[:200]}"))
        sys.exit(1)
    replies.send((READY, os.getpid()))
    while True:
        try:
            message = requests.recv()
        except (EOFError, OSError):
            return
        req_id, data = message
        try:  # pickled here, so an unpicklable value is the handler's error, not the worker's death
            reply: tuple[Any, str, bytes | str] = (req_id, OK, pickle.dumps(function(pickle.loads(data))))
        except BaseException as exc:  # noqa: BLE001  (report, keep serving)
            reply = (req_id, ERROR, type(exc).__name__)
        replies.send(reply)

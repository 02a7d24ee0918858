"""Killable worker processes for graders of untrusted input: pools per process or per machine, and the Sandbox.

Graders parse text a policy wrote (math_verify, sympy-based scorers, SQL).
Such a parse can hang in C code, eat all memory or crash the interpreter, and
no in-process timeout stops it. So the handler runs in worker processes the
parent can SIGKILL, and the parent alone keeps time. The data flow::

    grader (verifier, reasoning-gym scoring, FinQA SQL)
      |  Sandbox.run(payload, budget_s)                            _sandbox.py
      v
    get_pool(handler, PoolConfig)  -- scope "machine" (default) --> MachinePool (client)   _machine_client.py
      |                                                               |  Unix socket, key challenge,
      | scope "process"                                               |  plain-data messages  _machine_link.py
      v                                                               v
    WorkerPool.submit -> Request queue          <-- one WorkerPool per (handler, config)   _machine_server.py
      |                                              in the machine's server process
      v
    Dispatcher thread: refill -> expire_queued -> assign -> wait -> read_reply | worker_died
      |                -> enforce_deadlines (SIGKILL at the run budget)        _dispatcher.py
      |  pipes: (req_id, pickled payload) / (req_id, "ok"|"error", value)      _wire.py
      v
    WorkerProcess (python -c, own session, RLIMIT_AS)  -> _worker.main -> handler(payload)
      |                                                    _worker_process.py, _worker.py
      v
    TaskOutcome(status, value, detail, ...)  -> fault_of -> Fault  -> the grader (the fault table:
                                                 _outcomes.py           gym_integrity.grading.faults)

The in-process pool's guarantees:

* workers are plain ``python -c`` subprocesses (not ``multiprocessing``
  children, which re-import the user's ``__main__``; not forks, which would
  copy the dispatcher's locks), one pair of pipes each, in their own session,
  stderr to ``/dev/null``; a handler's prints go to stderr, never into the
  reply pipe. A worker imports the handler module (``gym_integrity``'s package
  ``__init__`` files stubbed but this one's, so gymnasium is not imported), calls its
  ``warm()`` if any, and only then says ready: imports are never charged to a
  request. Replies are read as plain data only (no class is ever looked up
  while unpickling them), so a worker that untrusted input took over cannot
  make the parent run code. ``RLIMIT_AS`` bounds its memory (an oversized
  allocation raises ``MemoryError`` in the handler), and ``PR_SET_PDEATHSIG``
  kills it with its parent; it fires when the spawning *thread* ends, so only
  the dispatcher thread, which lives as long as the pool, spawns workers;
* one dispatcher thread hands queued requests to idle workers (at most
  ``num_workers`` busy) and waits on their pipes. A request's run budget
  starts when a worker takes it: time spent queued is never charged to it.
  Queueing is bounded on its own: a request may wait for the run budgets of
  the requests ahead of it and a worker start-up each (shared by the workers)
  plus ``queue_timeout_s``; past that, or beyond
  ``max_in_flight`` requests at once, a request is ``OVERLOADED``;
* what is killed when: a worker still busy at its request's run deadline is
  SIGKILLed and replaced (``TIMEOUT``, the input's fault); a worker that never
  says ready within 60 s is killed and replaced; ``close()`` stops them all.
  ``spare_workers`` idle processes stay started, so a killed worker's
  successor is already warm. Workers that die while starting 3 times in a row
  (a broken interpreter) give ``INFRA_ERROR`` and a growing pause, not a spawn loop;
* a worker that dies under a request is told apart by how it died: SIGKILL or
  SIGTERM the pool did not send is the infrastructure (OOM killer, an
  operator): the request is retried on another worker, up to ``max_retries``,
  then ``INFRA_ERROR``. Any other death (segfault, abort, exit) is retried the
  same way; if it repeats on every attempt, each on a different process, it is
  ``CRASHED``: the input's fault. A crash that does not repeat yields the
  retry's normal outcome.

The machine pool (:func:`get_pool`'s default, ``PoolConfig.scope``,
``$GYM_INTEGRITY_POOL_SCOPE``): every process that grades (the sub-processes
of an async vector env, several trainer processes, a threaded vector env)
reaches the same workers: a pool *server* process hosts one
:class:`WorkerPool` for one handler and :class:`PoolConfig`, with the pool's
own kill, budget, queue and fault rules unchanged, and :class:`MachinePool`,
the client, gives the interface of a ``WorkerPool`` (:class:`Pool`).

* **Channel and access.** The server listens on a Unix socket in a per-user
  directory of mode 0700 (:func:`pool_dir`: ``$GYM_INTEGRITY_POOL_DIR``, else
  ``$XDG_RUNTIME_DIR/gym-integrity/``, else ``/tmp/gym-integrity-<uid>/``); a
  directory that is not the user's own, or that group or others may enter, is
  refused with the reason. A connection must also pass
  ``multiprocessing.connection``'s challenge with the key of a 0600 file in
  that directory (made once, ``secrets.token_bytes``). The socket's name is a
  hash of the handler, the config's fields, the interpreter, its prefix (the
  venv), ``PYTHONPATH`` and the package's location: another venv or checkout
  gets a server of its own, so a request is always graded by the code of the
  process that sent it.
* **Plain data only.** Messages go with ``send_bytes``/``recv_bytes`` and are
  read with the pool's plain-data unpickler on both sides, so neither end ever
  looks up a class. A request's payload is pickled by the client and passed to
  a worker as it is: the server never unpickles it (the worker does, as with
  an in-process pool).
* **Lifetime.** The first client starts the server: it takes an ``flock`` on
  ``<name>.lock``, tries once more, then spawns the server detached (its own
  session, no stdio) and waits for it (``SPAWN_TIMEOUT_S`` at most). The
  server holds ``<name>.alive`` locked while it lives, so a socket file left
  by a dead server is told from a live one. It counts connected clients (a
  process holds one connection per pool while it uses it: from ``start`` or
  the first request to the last ``release`` or ``close``); at zero it waits
  ``$GYM_INTEGRITY_POOL_GRACE_S`` (2 s) and exits if nobody came back,
  killing its workers. A crash of every client closes their sockets, so the
  same rule stops it. It also exits when its socket file is removed or replaced.
* **Failures are no-verdicts, never hangs.** If the connection breaks (the
  server died or was killed), every request in flight on it ends
  ``INFRA_ERROR`` ("the machine grading pool died"), and the next request
  reconnects, which starts a new server. A server that cannot be reached or
  started within its bound gives ``INFRA_ERROR`` too, naming why. The server
  tells every client it is alive every few seconds; a client with requests in
  flight that hears nothing for ``_SILENCE_S`` drops the connection (a wedged
  or stopped server: ``INFRA_ERROR``; between messages or in the middle of
  one: the client reads a message a piece at a time, never waiting in
  ``recv_bytes`` for the rest), and the server rebuilds its pool when a
  request passes its worst honest wait, as ``WorkerPool.run`` does.
* **Clients take turns.** Each connection is a client of the server's pool:
  its requests run in its order, and a freed worker goes to the client that
  got one least recently, so one process's backlog delays another's request
  by the runs already on the workers, not by the backlog
  (``WorkerPool.submit(..., client=)``).
* **Fork-safe.** A forked child drops its copy of the parent's connection (the
  parent's stays up) and connects on first use.

Everything the package shares in a process lives in a :class:`ProcessCache`
(empty in a forked child), and every fork and exit hook goes through one
registry (:mod:`~gym_integrity.workers._lifecycle`). Modules whose names start
with ``_`` are private: use the names below.

Example:
    >>> from gym_integrity.workers import PoolConfig
    >>> PoolConfig(run_timeout_s=0)
    Traceback (most recent call last):
    ...
    ValueError: PoolConfig.run_timeout_s must be a number (seconds) > 0, got 0.0
"""

from __future__ import annotations

from gym_integrity.workers._cache import ProcessCache
from gym_integrity.workers._config import (
    POOL_SCOPES,
    SCOPE_ENV,
    WORKER_START_ALLOWANCE_S,
    PoolConfig,
    check_handler,
    check_pool_settings,
    pool_scope,
)
from gym_integrity.workers._machine_client import MachinePool
from gym_integrity.workers._machine_client import shutdown_all as _shutdown_machine_clients
from gym_integrity.workers._machine_paths import DIR_ENV, GRACE_ENV, LOG_ENV, auth_key, pool_dir, server_name
from gym_integrity.workers._outcomes import Fault, PoolStatus, TaskOutcome, fault_of
from gym_integrity.workers._pools import Pool, get_pool, machine_stats, make_pool
from gym_integrity.workers._process_pool import WorkerPool
from gym_integrity.workers._process_pool import shutdown_all as _shutdown_process_pools
from gym_integrity.workers._sandbox import Sandbox

__all__ = [
    "DIR_ENV",
    "GRACE_ENV",
    "LOG_ENV",
    "POOL_SCOPES",
    "SCOPE_ENV",
    "WORKER_START_ALLOWANCE_S",
    "Fault",
    "MachinePool",
    "Pool",
    "PoolConfig",
    "PoolStatus",
    "ProcessCache",
    "Sandbox",
    "TaskOutcome",
    "WorkerPool",
    "auth_key",
    "check_handler",
    "check_pool_settings",
    "fault_of",
    "get_pool",
    "machine_stats",
    "make_pool",
    "pool_dir",
    "pool_scope",
    "server_name",
    "shutdown_all",
]


def shutdown_all() -> None:
    """Stop every pool of this process: its machine-pool connections and its own workers (also at exit)."""
    _shutdown_machine_clients()
    _shutdown_process_pools()

"""Auditing envs in child processes: a hang that holds the GIL is still bounded, and targets run on every core.

A probe runs in a watched thread (:mod:`gym_integrity.audit.in_process`), but a
thread cannot interrupt C code that never releases the GIL (a catastrophic
regular expression in a scorer, say): the watcher itself never gets to run.
``run_isolated`` therefore audits each target in its own process, reporting
probe by probe over a pipe of its own. (Not a shared queue: a queue's writers
share a lock that a child killed mid-write would hold forever, silencing every
other child.) A child silent for longer than a probe's bound plus a grace
period is killed, and so is one stuck in a single ``reset``/``step`` for longer
than the step bound plus grace (the call has failed its bound either way; the
first probe gets ``STARTUP_S`` more, its first calls start shared services).
Silence is counted less the time the child's busiest thread waited for a CPU
(``audit/waits.py``, up to twice the bound): other processes' load does not kill a
child. Its report says which probe hung, in which call, and a fresh child runs the
probes it never reached (up to ``RESUMES`` times). Children fork from a
forkserver that has imported the package once, so they start fast and inherit
no threads.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from gym_integrity.audit.report import AuditReport, ProbeResult, Status
from gym_integrity.audit.session import AuditSettings
from gym_integrity.audit.waits import allowance, process_waits, waited_since
from gym_integrity.checks import is_int

__all__ = ["IsolatedTarget", "run_isolated", "check_isolated", "import_env_modules", "GRACE_S", "RESUMES"]

#: Extra seconds past the probe's own bound before a silent child is killed.
GRACE_S = 5.0
#: Fresh children a target may get after one is killed or dies in a probe: each runs the probes not yet run, so
#: one hang does not leave the rest of the audit "not run" (a bound, since each further hang costs a probe bound).
RESUMES = 2
#: Extra time before a child's first probe: spawning it and importing the env's libraries
#: (a task library alone can take 2 s) can take several seconds on a loaded machine.
STARTUP_S = 30.0
_PRELOAD = ["gym_integrity.audit.isolate", "gymnasium", "numpy"]


@dataclass(frozen=True)
class IsolatedTarget:
    """What a child needs to rebuild an env, and the report's name.

    ``env_id`` is a registered id (``gym.make(env_id, **kwargs)``, unwrapped if
    ``raw``), or ``"module:Class"`` / ``"path/to/file.py:Class"`` for an env
    class (or zero-argument factory) that is not registered (built as
    ``Class(**kwargs)``). ``modules`` are imported in the child first: the
    module of a ``"module:Id"`` (``gym.make``'s form), which registers the id
    there. ``sys_path``: directories the child adds to its ``sys.path`` before
    importing anything of the target's (the parent's path: the forkserver
    children fork from may have started with another one).
    """

    env_id: str
    kwargs: dict[str, Any]
    raw: bool
    name: str
    notes: tuple[str, ...] = ()
    probes: tuple[str, ...] | None = None  # this target's probes, if not all of the run's
    #: The id's registration entry (an ``EnvEntry``): the child registers it first, since a fresh process knows
    #: only the ids its imports register, not one a script or a test registered at run time.
    entry: Any = None
    modules: tuple[str, ...] = ()
    sys_path: tuple[str, ...] = ()


def _load_class(spec: str) -> Any:
    import importlib
    import importlib.util
    import sys

    where, _, name = spec.rpartition(":")
    if where.endswith(".py"):
        module_spec = importlib.util.spec_from_file_location(f"_audited_{abs(hash(where))}", where)
        if module_spec is None or module_spec.loader is None:
            raise ImportError(f"cannot load {where}")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[module_spec.name] = module  # dataclasses (and pickling) look the module up by name
        module_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    found: Any = module
    for part in name.split("."):  # a qualified name: a class nested in a class
        found = getattr(found, part)
    return found


def import_env_modules(modules: Sequence[str], sys_path: Sequence[str] = ()) -> None:
    """Import ``modules`` (each may register ids), after adding the ``sys_path`` directories this process lacks.

    A module that is not found on the path is looked for in the working
    directory too, as ``python -m`` would (the console script's path does not
    hold it): ``gym-integrity audit mymod:MyEnv-v0`` run where ``mymod.py`` is.
    """
    import importlib
    import sys

    for entry in sys_path:
        if entry not in sys.path:
            sys.path.append(entry)
    for name in modules:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            cwd = os.getcwd()
            if exc.name != name.split(".")[0] or cwd in sys.path or "" in sys.path:
                raise
            sys.path.insert(0, cwd)
            importlib.import_module(name)


def _child(index: int, target: IsolatedTarget, probes: list[str], settings: AuditSettings, out: Any) -> None:
    import gymnasium as gym

    import gym_integrity  # noqa: F401  (registers the ids)
    from gym_integrity.audit.in_process import audit_in_process, has_integrity_stack, probe_list
    from gym_integrity.registration import register_env

    told: list[bool] = []

    def make() -> gym.Env:
        if ":" in target.env_id:
            env = _load_class(target.env_id)(**target.kwargs)
        else:
            env = gym.make(target.env_id, **target.kwargs)
            env = env.unwrapped if target.raw else env
        if not told:  # early, for the report of a child killed before its own report
            told.append(True)
            send(("stacked", index, has_integrity_stack(env)))
        return env

    # Sent synchronously (no feeder thread that a GIL-holding probe could stall), from the main thread and,
    # for calls, from the probe's thread: a lock keeps two messages from interleaving on the pipe.
    lock = threading.Lock()

    def send(message: tuple) -> None:
        with lock:
            out.send(message)

    try:
        import_env_modules(target.modules, target.sys_path)
        if target.entry is not None:
            register_env(target.entry)  # a no-op for the package's own ids
        report = audit_in_process(
            make,
            probe_list(target.probes or probes),
            settings,
            raw=target.raw,
            env_id=target.name,
            on_probe_start=lambda name: send(("start", index, name)),
            on_probe_done=lambda result: send(("done", index, result.to_dict())),
            on_call=lambda what: send(("call", index, what)),
        )
        report.notes.extend(target.notes)
        send(("report", index, report.to_dict()))
    except BaseException as exc:  # building the env failed: the parent reports it on the probes not run
        send(("crash", index, f"{type(exc).__name__}: {exc}"))
    finally:
        with lock:
            out.close()


@dataclass
class _Running:
    process: Any
    conn: Any  # the parent's read end of this child's pipe
    target: IsolatedTarget
    started: float
    last_event: float
    current: str | None = None
    call: str | None = None  # the reset/step the current probe is in, if it said
    results: list[ProbeResult] = field(default_factory=list)
    closed: bool = False
    stacked: bool | None = None  # whether the env it built had the integrity stack (None: not built yet)
    waits: dict[int, float] = field(default_factory=dict)  # its threads' waits for a CPU, read once silent
    waits_at: float | None = None  # the last_event the reading belongs to

    def cpu_wait(self) -> float:
        """How long its busiest thread has waited for a CPU since its last word (``audit/waits.py``): the
        silence a loaded machine adds, left out of the kill bound. Read from a second of silence on (a call
        that answers sooner costs no reading); 0 where the kernel does not say."""
        if time.perf_counter() - self.last_event < 1.0:
            return 0.0
        now = process_waits(self.process.pid)
        if self.waits_at != self.last_event:
            self.waits, self.waits_at = now, self.last_event
            return 0.0
        return waited_since(self.waits, now)


def _start_up_hint(run: _Running) -> str:
    """Why a child that died before its first word most often did: it re-imports the caller's script (forkserver
    and spawn do), and a script that audits at import time audits again in the child, which multiprocessing
    refuses during start-up."""
    heard = run.stacked is not None or run.current is not None or run.results
    if heard or not getattr(sys.modules.get("__main__"), "__file__", None):
        return ""
    return (
        " before its first probe: a script that calls check_integrity(isolated=True) must call it under "
        "`if __name__ == '__main__':` (the child imports the script again; its error is above on stderr)"
    )


def _context() -> Any:
    if "forkserver" in multiprocessing.get_all_start_methods():
        from gym_integrity.registration import env_entries

        ctx = multiprocessing.get_context("forkserver")
        # Plus the libraries each env imports slowly (EnvEntry.audit_preload), imported once for all children.
        ctx.set_forkserver_preload(_PRELOAD + [m for e in env_entries() for m in e.audit_preload])
        return ctx
    return multiprocessing.get_context("spawn")


def _partial_report(run: _Running, probes: Sequence[str], cause: str, hang: bool) -> AuditReport:
    """A report for a child that died or was killed: what it finished, the probe it was in, the rest not run.

    Before its first probe started the child was building the env and resetting
    it once (the runner's preflight): then the env could not run, the report's
    ``error`` says why and no probe failed (the verdict is inconclusive), as
    in-process.
    """
    report = AuditReport(
        run.target.name,
        results=list(run.results),
        raw=run.target.raw,
        duration_s=time.perf_counter() - run.started,
        notes=list(run.target.notes),
        stacked=run.stacked,
    )
    if run.current is None and not run.results:
        where = f"; last call: {run.call}" if run.call else ""
        report.error = f"{cause}{where}"
        report.results = [
            ProbeResult(
                name,
                Status.NOT_RUN,
                "not run (the env could not run)",
                reason="the env could not run (see the report's error)",
            )
            for name in probes
        ]
        return report
    done = {r.probe for r in run.results}
    for name in probes:
        if name in done:
            continue
        if name == run.current:
            where = f"; last call: {run.call}" if run.call else ""
            summary = f"hang: {cause}{where}" if hang else cause + where
            report.results.append(ProbeResult(name, Status.FAILED, summary, [cause + where]))
        else:
            report.results.append(ProbeResult(name, Status.NOT_RUN, "not run", reason=cause))
    return report


def run_isolated(
    targets: Sequence[IsolatedTarget],
    probes: Sequence[str],
    settings: AuditSettings,
    *,
    workers: int | None = None,
    grace_s: float = GRACE_S,
    on_probe_start: Callable[[IsolatedTarget, str], None] | None = None,
    on_probe_done: Callable[[IsolatedTarget, ProbeResult], None] | None = None,
) -> list[AuditReport]:
    """Audit each target in its own process, ``workers`` at a time (default: the number of cores); reports in order."""
    if workers is not None and (not is_int(workers) or workers < 1):
        raise ValueError(f"run_isolated workers must be a positive int or None (one per core), got {workers!r}")
    workers = workers or max(1, min(len(targets), os.cpu_count() or 1))
    ctx = _context()
    pending = list(range(len(targets)))
    running: dict[int, _Running] = {}
    reports: dict[int, AuditReport] = {}
    resumed: dict[int, tuple[IsolatedTarget, list[ProbeResult], float, int]] = {}  # target left, results, start, n
    deadline = settings.probe_timeout_s + grace_s
    call_deadline = min(deadline, settings.step_timeout_s + grace_s)

    def handle(kind: str, index: int, payload: Any) -> None:
        run = running.get(index)
        if run is None:
            return
        run.last_event = time.perf_counter()
        if kind == "start":
            run.current, run.call = payload, None
            if on_probe_start:
                on_probe_start(targets[index], payload)
        elif kind == "call":
            run.call = payload
        elif kind == "stacked":
            run.stacked = payload
        elif kind == "done":
            result = ProbeResult.from_dict(payload)
            run.results.append(result)
            run.current, run.call = None, None
            if on_probe_done:
                on_probe_done(targets[index], result)
        elif kind == "report":
            reports[index] = AuditReport.from_dict(payload)
        elif kind == "crash":
            reports[index] = _partial_report(
                run, run.target.probes or probes, f"the audit could not run: {payload}", hang=False
            )

    def finish(index: int, report: AuditReport) -> None:
        run = running.pop(index)
        run.conn.close()
        if on_probe_done:  # probes the child never reported still advance the caller's progress
            reported = {r.probe for r in run.results}
            for result in report.results:
                if result.probe not in reported:
                    on_probe_done(targets[index], result)
        if index in resumed:  # the earlier children's results first, in the run's probe order
            _, earlier, started, _ = resumed.pop(index)
            order = {name: i for i, name in enumerate(targets[index].probes or probes)}
            report.results = sorted(earlier + report.results, key=lambda r: order.get(r.probe, len(order)))
            report.duration_s = time.perf_counter() - started
        reports[index] = report

    def resume(index: int, partial: AuditReport) -> bool:
        """Start a fresh child on the probes a killed or dead one never ran, if any are left and resumes remain."""
        run = running[index]
        left = [r.probe for r in partial.results if r.status is Status.NOT_RUN]
        _, earlier, started, count = resumed.get(index, (run.target, [], run.started, 0))
        if run.current is None or not left or count >= RESUMES:
            return False
        kept = [r for r in partial.results if r.status is not Status.NOT_RUN]
        if on_probe_done:
            for result in kept[len(run.results) :]:  # the probe it hung or died in
                on_probe_done(targets[index], result)
        resumed[index] = (replace(run.target, probes=tuple(left)), earlier + kept, started, count + 1)
        running.pop(index).conn.close()
        pending.insert(0, index)
        return True

    def drain(run: _Running, timeout: float) -> None:
        """Handle what this child has sent; closed pipe (the child exited or was killed): stop reading it."""
        try:
            while run.conn.poll(timeout):
                handle(*run.conn.recv())
                timeout = 0.0
        except (EOFError, OSError):
            run.closed = True

    try:
        while pending or running:
            while pending and len(running) < workers:
                index = pending.pop(0)
                target = resumed[index][0] if index in resumed else targets[index]
                recv_end, send_end = ctx.Pipe(duplex=False)
                process = ctx.Process(
                    target=_child,
                    args=(index, target, list(probes), settings, send_end),
                    name=f"gym-integrity-audit:{target.name}",
                    daemon=True,
                )
                process.start()
                send_end.close()  # the child holds its own copy: EOF reaches us when it exits
                now = time.perf_counter()
                running[index] = _Running(process, recv_end, target, now, now)
            live = {run.conn: index for index, run in running.items() if not run.closed}
            for conn in multiprocessing.connection.wait(list(live), timeout=0.1):
                drain(running[live[conn]], 0.0)
            now = time.perf_counter()
            for index, run in list(running.items()):
                if index in reports:
                    run.process.join(timeout=5)
                    finish(index, reports.pop(index))
                elif run.closed or not run.process.is_alive():
                    drain(run, 0.2)  # its last words may still be in the pipe
                    run.process.join(timeout=5)
                    if index not in reports:
                        cause = f"the audit process died (exit code {run.process.exitcode}){_start_up_hint(run)}"
                        partial = _partial_report(run, run.target.probes or probes, cause, hang=False)
                        if not resume(index, partial):
                            finish(index, partial)
                    else:
                        finish(index, reports.pop(index))
                elif (bound := (call_deadline if run.call else deadline) + (0.0 if run.results else STARTUP_S)) + (
                    waited := allowance(run.cpu_wait(), bound)
                ) < now - run.last_event:  # the first probe's calls start shared services
                    run.process.kill()
                    run.process.join(timeout=5)
                    where = f"in probe {run.current}" if run.current else "while building the env or resetting it"
                    load = f" ({waited:.0f} s of it waiting for a CPU)" if waited >= 1 else ""
                    cause = (
                        f"no progress for {now - run.last_event:.0f} s{load} {where}; the process was killed "
                        "(a call that holds the GIL cannot be bounded in-process)"
                    )
                    partial = _partial_report(run, run.target.probes or probes, cause, hang=True)
                    if not resume(index, partial):
                        finish(index, partial)
    finally:
        for run in running.values():
            if run.process.is_alive():
                run.process.kill()
            run.conn.close()
    return [reports[i] for i in range(len(targets))]


def check_isolated(
    env: Any,
    names: list[str],
    settings: AuditSettings,
    raw: bool,
    env_id: str | None,
    on_probe_start: Callable[[str], None] | None,
    on_probe_done: Callable[[ProbeResult], None] | None,
) -> AuditReport:
    """``check_integrity(..., isolated=True)``: one child process (:func:`~gym_integrity.audit.isolate.run_isolated`)."""
    import sys

    import gymnasium as gym

    from gym_integrity.registration import env_entry

    if isinstance(env, str):
        module, sep, bare = env.partition(":")
        if not sep:
            module, bare = "", env
        if module:
            import importlib

            importlib.import_module(module)  # here too: a mistyped module fails now, not in the child
        target = IsolatedTarget(
            bare,
            {},
            raw,
            env_id or env,
            entry=env_entry(bare),
            modules=(module,) if module else (),
            sys_path=tuple(sys.path),
        )
    elif callable(env) and not isinstance(env, gym.Env):
        module, qualname = getattr(env, "__module__", ""), getattr(env, "__qualname__", "")
        if not module or not qualname or "<" in qualname:
            raise TypeError(
                f"check_integrity(isolated=True) needs an env another process can rebuild: a registered "
                f"id, 'module:Id', or a class or function importable by module path; got {env!r} (a "
                "lambda or a local function cannot be imported)"
            )
        target = IsolatedTarget(f"{module}:{qualname}", {}, raw, env_id or qualname, sys_path=tuple(sys.path))
    else:
        raise TypeError(
            f"check_integrity(isolated=True) needs a registered id, 'module:Id', or a class or "
            f"function importable by module path, not an env instance; got {type(env).__name__}"
        )
    [report] = run_isolated(
        [target],
        names,
        settings,
        workers=1,
        on_probe_start=(lambda t, name: on_probe_start(name)) if on_probe_start else None,
        on_probe_done=(lambda t, result: on_probe_done(result)) if on_probe_done else None,
    )
    return report

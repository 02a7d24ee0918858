"""The audit in this process: check that the env runs at all, then run each probe in a watched thread with a wall-clock bound."""

from __future__ import annotations

import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import gymnasium as gym

from gym_integrity.audit.adapters import AnswerFn, GoldFn, answer_action, privileged_gold
from gym_integrity.audit.probes import PROBES, Probe
from gym_integrity.audit.report import AuditReport, ProbeResult, Status
from gym_integrity.audit.session import WRONG_ANSWER, AuditSettings, Session, close_quietly
from gym_integrity.audit.waits import allowance, thread_wait_s

__all__ = ["audit_in_process", "has_integrity_stack", "probe_list"]


def probe_list(probes: Iterable[str] | None) -> list[str]:
    """The probes to run: every one (None) in report order, or the names given, each checked against PROBES."""
    names = list(PROBES) if probes is None else list(probes)
    unknown = [n for n in names if n not in PROBES]
    if unknown:
        raise ValueError(f"unknown probe(s) {unknown}; valid: {list(PROBES)}")
    return names


def _factory(env: Any, raw: bool) -> tuple[Callable[[], gym.Env] | None, gym.Env | None, str]:
    if isinstance(env, gym.Env):
        return None, env, (env.spec.id if env.spec is not None else type(env.unwrapped).__name__)
    if isinstance(env, str):
        env_id = env

        def make() -> gym.Env:
            made = gym.make(env_id)
            return made.unwrapped if raw else made

        return make, None, env_id
    if callable(env):
        return env, None, getattr(env, "__name__", type(env).__name__)
    raise TypeError(
        f"check_integrity env must be a gymnasium.Env, a registered id (str) or a zero-argument "
        f"callable returning an env; got {type(env).__name__}"
    )


def has_integrity_stack(env: gym.Env) -> bool:
    """True if every wrapper of the integrity stack (its registered wrapper specs) is among ``env``'s wrappers,
    wherever ``gym.make`` put them (a registered id's ``additional_wrappers``, or an entry point that returns
    ``integrity_stack(MyEnv())``)."""
    from gym_integrity.registration import integrity_wrapper_specs

    wanted = {spec.entry_point for spec in integrity_wrapper_specs()}
    found: set[str] = set()
    current: Any = env
    for _ in range(64):  # a chain is short; a cycle must not hang the audit
        found.update(f"{cls.__module__}:{cls.__qualname__}" for cls in type(current).__mro__)
        if not isinstance(current, gym.Wrapper):
            break
        current = current.env
    return wanted <= found


def _run_bounded(fn: Callable[[], Any], timeout_s: float, name: str) -> tuple[str, Any]:
    """Run ``fn`` in a daemon thread; ``("ok", result)``, ``("error", (exc, tb))`` or ``("hang", None)`` once it has
    run ``timeout_s`` past the time it waited for a CPU (``audit/waits.py``)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = fn()
        except BaseException as exc:  # the env's exception is the finding, whatever its type
            box["error"] = (exc, traceback.format_exc(limit=-4))

    thread = threading.Thread(target=target, name=f"gym-integrity-audit:{name}", daemon=True)
    started = time.perf_counter()
    thread.start()
    deadline = started + timeout_s
    while True:  # the bound is on the thread's own time: the time it waited for a CPU pushes it back
        thread.join(max(0.0, deadline - time.perf_counter()))
        waited = thread_wait_s(thread.native_id) if thread.is_alive() else None
        if waited is None or started + timeout_s + allowance(waited, timeout_s) <= time.perf_counter():
            break
        deadline = started + timeout_s + allowance(waited, timeout_s)
    if thread.is_alive():
        # A thread cannot be killed: it stays parked in the env's call. The env is
        # abandoned (never reused or closed) and, as a daemon, it dies with the process.
        return "hang", None
    if "error" in box:
        return "error", box["error"]
    return "ok", box["result"]


def audit_in_process(
    env: Any,
    names: list[str],
    settings: AuditSettings,
    *,
    answer_action_fn: AnswerFn | None = None,
    gold_answers_fn: GoldFn | None = None,
    raw: bool = False,
    env_id: str | None = None,
    on_probe_start: Callable[[str], None] | None = None,
    on_probe_done: Callable[[ProbeResult], None] | None = None,
    on_call: Callable[[str], None] | None = None,
) -> AuditReport:
    """:func:`~gym_integrity.audit.runner.check_integrity` without ``isolated``: the probes ``names`` (checked
    by the caller) on ``env``, in this process. The arguments are check_integrity's."""
    make, shared, default_id = _factory(env, raw)
    if shared is not None and raw:
        shared = shared.unwrapped
    report = AuditReport(env_id or default_id, raw=raw)
    answer_fn = answer_action_fn or answer_action
    gold_fn = gold_answers_fn or privileged_gold
    hung_in: str | None = None
    unbuildable: str | None = None
    error: str | None = None
    # With a factory, probes share one env (building one per probe would restart
    # shared services, e.g. a verifier pool, every time); a probe that hangs or
    # raises leaves its env behind and the next probe gets a fresh one.
    current = shared
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            # Gymnasium's checker warns about what the probes do on purpose (garbage, steps after the end).
            warnings.simplefilter("ignore")
            current, error = _preflight(make, current, settings, answer_fn, on_call)
            report.error = error
            if current is not None:
                report.stacked = has_integrity_stack(current)
            for name in names:
                probe = PROBES[name]
                if on_probe_start:
                    on_probe_start(name)
                if error is not None:
                    # The cause is named once, on the report: thirteen copies of one traceback hide it.
                    result = ProbeResult(
                        name,
                        Status.NOT_RUN,
                        "not run (the env could not run)",
                        reason="the env could not run (see the report's error)",
                    )
                elif hung_in is not None:
                    result = ProbeResult(
                        name,
                        Status.NOT_RUN,
                        "not run (env hung earlier)",
                        reason=f"the env is still stuck in a call from probe {hung_in}",
                    )
                elif unbuildable is not None:
                    result = ProbeResult(
                        name,
                        Status.NOT_RUN,
                        "not run (the env could not be built again)",
                        reason=f"the env could not be built again ({unbuildable})",
                    )
                else:
                    result, outcome, current = _run_probe(probe, make, current, settings, answer_fn, gold_fn, on_call)
                    if outcome != "ok" and current is None and make is not None:
                        # Rebuilding after a failed probe failed or hung: it would again for every probe.
                        unbuildable = f"probe {name}: {result.summary}"
                    if outcome == "hang" and shared is not None:
                        hung_in = name
                    elif outcome != "ok" and make is not None:
                        if outcome == "error" and current is not None:
                            close_quietly(current)
                        current = None  # the next probe builds a fresh env
                report.results.append(result)
                if on_probe_done:
                    on_probe_done(result)
    finally:
        if make is not None and current is not None and error is None:
            close_quietly(current)
    report.duration_s = time.perf_counter() - start
    return report


def _preflight(
    make: Callable[[], gym.Env] | None,
    env: gym.Env | None,
    settings: AuditSettings,
    answer_fn: AnswerFn,
    on_call: Callable[[str], None] | None,
) -> tuple[gym.Env | None, str | None]:
    """Build the env (starting shared services) and reset it once, bounded: ``(env, None)`` or ``(env, cause)``.

    An env that cannot be built or reset is not one whose rewards were found
    gameable: nothing was tested, so its report is inconclusive with this cause,
    instead of every probe failing with the same exception. (A reset that fails
    only later, after a probe's actions, is that probe's finding.)
    """
    seed = settings.seeds[0]
    holder: dict[str, Any] = {"env": env, "doing": "building the env" if env is None else f"reset(seed={seed})"}

    def body() -> None:
        if holder["env"] is None:
            holder["env"] = make()  # type: ignore[misc]  # make is given whenever env is None
            holder["doing"] = "warming up (a throwaway instance's first reset and step)"
            _warm_up(make, settings, answer_fn)  # type: ignore[arg-type]  # make is given whenever env is None
        holder["doing"] = f"reset(seed={seed})"
        if on_call is not None:
            on_call(holder["doing"])
        holder["env"].reset(seed=seed)

    outcome, value = _run_bounded(body, settings.probe_timeout_s, "preflight")
    if outcome == "ok":
        return holder["env"], None
    if outcome == "hang":
        # Abandoned, never closed: the thread may still be inside it.
        return holder["env"], f"{holder['doing']} did not return within {settings.probe_timeout_s:g} s"
    exc, _ = value
    if make is not None and holder["env"] is not None:
        close_quietly(holder["env"])
    return holder["env"], f"{holder['doing']} raised {type(exc).__name__}: {exc}"[:300]


def _takes_text(env: gym.Env) -> bool:
    """True if the env's action space admits text (the probes speak text; a tool env's may admit dicts too)."""
    try:
        return bool(env.action_space.contains("<answer>1</answer>") or env.action_space.contains("a"))
    except Exception:  # a space that cannot even be asked is not a text space
        return False


def _warm_up(make: Callable[[], gym.Env], settings: AuditSettings, answer_fn: AnswerFn) -> None:
    """One untimed step on a throwaway instance, so the probes' step bounds measure grading, not start-up.

    The first step of a fresh env may start shared services (a verifier's
    worker processes importing math_verify): a training run pays that once, and
    it is not what the step bound is for. The probes' own env is built first and
    left untouched, and keeps the services up once the throwaway is closed. A
    hang here is still caught by the probe's wall clock; an error is left for the
    probes to find and report.
    """
    try:
        env = make()
    except Exception:
        return
    try:
        env.reset(seed=settings.seeds[0])
        if _takes_text(env):
            env.step(answer_fn(env, WRONG_ANSWER))
    except Exception:
        pass
    finally:
        close_quietly(env)


def _run_probe(
    probe: Probe,
    make: Callable[[], gym.Env] | None,
    env: gym.Env | None,
    settings: AuditSettings,
    answer_fn: AnswerFn,
    gold_fn: GoldFn,
    on_call: Callable[[str], None] | None = None,
) -> tuple[ProbeResult, str, gym.Env | None]:
    """Run one probe in a bounded thread: ``(result, outcome, env)``, outcome ``ok``, ``error`` or ``hang``."""
    started = time.perf_counter()
    holder: dict[str, Any] = {"env": env}

    def body() -> ProbeResult:
        if holder["env"] is None:  # the last probe's env was left behind (it raised or hung)
            holder["env"] = make()  # type: ignore[misc]  # make is given whenever env is None
        session = Session(holder["env"], settings, answer_fn, gold_fn, new_env=make, on_call=on_call)
        holder["session"] = session
        if not _takes_text(holder["env"]):
            space = holder["env"].action_space
            return ProbeResult(
                probe.name,
                Status.NOT_APPLICABLE,
                reason=f"not a text env: action_space {space!r} does not contain a str",
                summary="not a text env",
            )
        return probe.run(session)

    outcome, value = _run_bounded(body, settings.probe_timeout_s, probe.name)
    session = holder.get("session")
    current = session.current if session else "building the env"
    if outcome == "ok":
        result = value
    elif outcome == "hang":
        result = ProbeResult(
            probe.name,
            Status.FAILED,
            f"hang: no answer within {settings.probe_timeout_s:g} s, stuck in {current}",
            [f"the env did not return from {current} within the probe's {settings.probe_timeout_s:g} s bound"],
        )
    else:
        exc, tb = value
        result = ProbeResult(
            probe.name,
            Status.FAILED,
            f"{type(exc).__name__} raised in {current}: {exc}"[:300],
            [line for line in tb.strip().splitlines()[-6:]],
        )
    result.probe = probe.name
    if session is not None:
        result.episodes, result.steps = session.episodes, session.steps
        if session.slow_calls and outcome != "hang":
            if result.status is Status.PASSED:
                result.status = Status.FAILED
                result.summary = f"too slow: {session.slow_calls[0]}"
            result.evidence = session.slow_calls[:5] + result.evidence
        result.evidence.extend(session.notes)
    result.duration_s = time.perf_counter() - started
    return result, outcome, holder.get("env")

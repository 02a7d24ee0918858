"""The audit's time bounds leave out the time a call waited for a CPU held by other processes, and nothing else: a
reset that computes under load is not slow for the load, a reset that sleeps or computes too long still is."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time

import pytest
from audit_toys import CorrectToy

from gym_integrity.audit import waits
from gym_integrity.audit.adapters import answer_action, privileged_gold
from gym_integrity.audit.in_process import _run_bounded
from gym_integrity.audit.session import AuditSettings, Session
from gym_integrity.audit.waits import thread_wait_s

pytestmark = pytest.mark.skipif(thread_wait_s() is None, reason="the kernel does not count a thread's CPU wait")


def _spin(seconds: float) -> None:
    """Compute for ``seconds`` of this thread's CPU time."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


@contextlib.contextmanager
def _crowded_cpu(hogs: int = 3):
    """This thread and ``hogs`` busy processes on one CPU: the thread gets about 1/(hogs+1) of it (less if the
    machine is busy besides)."""
    cpu = min(os.sched_getaffinity(0))
    before = os.sched_getaffinity(0)
    spin = f"import os; os.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"
    procs = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(hogs)]
    try:
        time.sleep(0.3)  # the hogs are running on the CPU
        os.sched_setaffinity(0, {cpu})
        yield
    finally:
        os.sched_setaffinity(0, before)
        for proc in procs:
            proc.kill()
            proc.wait()


class ComputesAtReset(CorrectToy):
    """Each reset computes for 0.4 CPU seconds (a slow generator)."""

    def reset(self, *, seed=None, options=None):
        _spin(0.4)
        return super().reset(seed=seed, options=options)


class SleepsAtReset(CorrectToy):
    """Each reset sleeps for 1.2 s: no CPU wanted, and still slow."""

    def reset(self, *, seed=None, options=None):
        time.sleep(1.2)
        return super().reset(seed=seed, options=options)


def _session(env, step_timeout_s: float) -> Session:
    return Session(env, AuditSettings(step_timeout_s=step_timeout_s), answer_action, privileged_gold)


def test_a_reset_that_computes_under_load_is_timed_without_the_load(monkeypatch):
    # the stretch's cap lifted: how crowded the CPU gets depends on what else runs (another test worker can leave
    # this thread a sixth of it); the cap has its own test below
    monkeypatch.setattr(waits, "LOAD_STRETCH", 100.0)
    s = _session(ComputesAtReset(), step_timeout_s=0.6)
    with _crowded_cpu(hogs=1):
        start = time.perf_counter()
        s.reset(0)
        wall = time.perf_counter() - start
    assert wall > 0.6, f"the CPU was not crowded ({wall:.2f} s): the test proves nothing"
    assert s.slow_calls == [], s.slow_calls
    # said, not hidden
    assert (
        len(s.notes) == 1
        and "not waiting for a CPU: within the bound (0.6 s: step_timeout_s) net of load" in s.notes[0]
    )


def test_load_stretches_a_bound_threefold_at_most():
    """Five busy processes on the CPU: 0.4 s of work takes about 2.4 s, past three times a 0.5 s bound."""
    s = _session(ComputesAtReset(), step_timeout_s=0.5)
    with _crowded_cpu(hogs=5):
        s.reset(0)
    assert len(s.slow_calls) == 1 and "past 3 times it however loaded" in s.slow_calls[0], s.slow_calls


def test_a_reset_that_computes_past_the_bound_is_slow_under_load_too():
    s = _session(ComputesAtReset(), step_timeout_s=0.2)
    with _crowded_cpu():
        s.reset(0)
    assert len(s.slow_calls) == 1 and "not waiting for a CPU" in s.slow_calls[0], s.slow_calls


def test_a_reset_that_sleeps_is_slow_however_idle_the_machine():
    s = _session(SleepsAtReset(), step_timeout_s=1.0)
    s.reset(0)
    assert len(s.slow_calls) == 1 and s.slow_calls[0].startswith("reset(seed=0) took 1.2 s (bound 1 s"), s.slow_calls


def test_the_probe_bound_counts_the_probes_own_time(monkeypatch):
    """A probe thread starved of a CPU is not a hang; one that sleeps past the bound is."""
    monkeypatch.setattr(waits, "LOAD_STRETCH", 100.0)  # as above
    with _crowded_cpu(hogs=1):
        start = time.perf_counter()
        outcome, _ = _run_bounded(lambda: _spin(0.4), 0.5, "crowded")
        wall = time.perf_counter() - start
    assert outcome == "ok" and wall > 0.5, (outcome, wall)
    outcome, _ = _run_bounded(lambda: time.sleep(1.5), 0.6, "asleep")
    assert outcome == "hang"

"""The killable worker pool: run budgets that exclude queueing, overload, crash vs infrastructure, memory, fork."""

from __future__ import annotations

import fcntl
import os
import signal
import struct
import sys
import termios
import time

import pytest

from forking import in_child
from gym_integrity.workers import PoolConfig, PoolStatus, TaskOutcome, WorkerPool, get_pool

HANDLER = "gym_integrity.workers.scripted_handlers:handle"
GENEROUS = 30.0  # a hang bound only: verdicts must not depend on machine load


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a killed child lingers as a zombie until reaped: dead
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def _started(config: PoolConfig, handler: str = HANDLER) -> WorkerPool:
    pool = WorkerPool(handler, config)
    pool.start()
    assert pool.wait_ready(60)
    return pool


def _busy_pid(pool: WorkerPool, not_in: set[int] = frozenset(), timeout: float = 10.0) -> int:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        busy = [pid for pid in pool.busy_worker_pids() if pid not in not_in]
        if busy:
            return busy[0]
        time.sleep(0.005)
    raise AssertionError("no worker became busy")


@pytest.fixture(scope="module")
def pool():
    pool = _started(PoolConfig(num_workers=1, spare_workers=1, run_timeout_s=1.0, memory_limit_mb=512))
    yield pool
    pool.close()


def test_handler_result_comes_back_after_warm(pool):
    outcome = pool.run(("echo", {"a": [1, 2]}))
    assert (outcome.status, outcome.value, outcome.attempts) == (PoolStatus.OK, {"a": [1, 2]}, 1)
    assert pool.run(("warmed", None)).value is True  # warm() ran in the worker before it said ready
    assert not outcome.answer_fault


def test_run_timeout_kills_the_worker_and_replaces_it(pool):
    assert pool.wait_ready(60)
    restarts = pool.stats()["pool/worker_restarts"]
    future = pool.submit(("sleep", 30))
    victim = _busy_pid(pool)
    outcome = future.result(timeout=GENEROUS)
    assert outcome.status is PoolStatus.TIMEOUT and outcome.answer_fault
    assert outcome.run_s == 1.0 and "1 s run budget" in outcome.detail
    assert pool.stats()["pool/worker_restarts"] == restarts + 1
    end = time.monotonic() + 5
    while _alive(victim) and time.monotonic() < end:
        time.sleep(0.01)
    assert not _alive(victim) and victim not in pool.worker_pids()
    assert pool.run(("echo", "next")).value == "next"


def test_queue_time_is_not_charged_to_the_run_budget(pool):
    """One worker: a 1.5 s request (its own 3 s budget), then a 0.1 s request with a 1 s budget.

    The second waits ~1.5 s for the worker. The old rule (budget counted from
    submission, queueing included) would have timed it out: queued_s + run_s > 1 s.
    """
    assert pool.wait_ready(60)
    first = pool.submit(("sleep", 1.5), run_timeout_s=3.0)
    _busy_pid(pool)
    second = pool.submit(("sleep", 0.1), run_timeout_s=1.0)
    long, short = first.result(timeout=GENEROUS), second.result(timeout=GENEROUS)
    assert (long.status, short.status) == (PoolStatus.OK, PoolStatus.OK)
    assert short.run_s < 1.0 <= short.queued_s + short.run_s  # the old rule's timeout, avoided
    assert short.queued_s >= 1.0


def test_max_in_flight_refuses_at_once():
    pool = _started(PoolConfig(num_workers=1, max_in_flight=1, run_timeout_s=5.0))
    try:
        held = pool.submit(("sleep", 1.0))
        start = time.monotonic()
        refused = pool.run(("echo", 1))
        assert refused.status is PoolStatus.OVERLOADED and "max_in_flight=1" in refused.detail
        assert time.monotonic() - start < 1.0 and not refused.answer_fault
        assert held.result(timeout=GENEROUS).status is PoolStatus.OK
        assert pool.stats()["pool/overloaded"] == 1.0
    finally:
        pool.close()


def test_queue_timeout_is_overloaded_not_timeout(monkeypatch):
    # The request behind may wait for the budget ahead, a worker start and 0.5 s; the killed worker's
    # successor takes 8 s to start (far beyond any start the pool has seen), so nothing serves it in time.
    pool = _started(PoolConfig(num_workers=1, spare_workers=0, queue_timeout_s=0.5, run_timeout_s=0.5))
    try:
        monkeypatch.setenv("GYM_INTEGRITY_TEST_WARM_S", "8")   # read by workers spawned from now on
        held = pool.submit(("sleep", 30.0))
        _busy_pid(pool)
        waiting = pool.run(("echo", 1))
        assert held.result(timeout=GENEROUS).status is PoolStatus.TIMEOUT
        assert waiting.status is PoolStatus.OVERLOADED and "no worker was free within" in waiting.detail
        assert waiting.attempts == 0 and not waiting.answer_fault
    finally:
        pool.close()


def test_a_burst_that_runs_to_its_budgets_delays_but_never_overloads_the_requests_behind_it():
    # Red-team finding: 14 towers ahead of 2 correct answers on 2 workers outlasted a fixed 30 s queue
    # timeout, so the correct answers (and the last towers) came back OVERLOADED no-verdicts. The allowance
    # now includes the budgets ahead: every sleeper is the input's TIMEOUT and the echo behind them is OK.
    pool = _started(PoolConfig(num_workers=1, queue_timeout_s=0.5, run_timeout_s=0.6))
    try:
        sleepers = [pool.submit(("sleep", 30.0)) for _ in range(4)]
        behind = pool.run(("echo", 7))
        assert [f.result(timeout=GENEROUS).status for f in sleepers] == [PoolStatus.TIMEOUT] * 4
        assert behind.status is PoolStatus.OK and behind.value == 7
        assert behind.queued_s > 4 * 0.6 > pool.config.queue_timeout_s   # a fixed queue bound would have refused it
    finally:
        pool.close()


def test_clients_take_turns_at_a_free_worker_each_in_its_own_order():
    pool = _started(PoolConfig(num_workers=1, spare_workers=0))
    try:
        futures = {f"{client}{n}": pool.submit(("started_at", 0.05), client=client)
                   for client in ("a", "b") for n in range(3)}  # a's three queued before b's
        started = {name: f.result(timeout=GENEROUS).value for name, f in futures.items()}
        assert sorted(started, key=started.get) == ["a0", "b0", "a1", "b1", "a2", "b2"]
    finally:
        pool.close()


def test_a_request_another_client_goes_ahead_of_is_given_the_time_not_overloaded():
    # Taking turns, each request of b queued later may run before a's queued ones: a's queue allowances grow by
    # a run each, so a's last request waits four runs (a0 b0 a1 b1 ahead, 6 s; first come, first served allowed it
    # two, 4 s) and is still the input's TIMEOUT. The spare worker takes over from each killed one, so the
    # slack is not spent on worker starts however loaded the machine is.
    pool = _started(PoolConfig(num_workers=1, spare_workers=1, queue_timeout_s=1.0, run_timeout_s=1.5))
    try:
        mine = [pool.submit(("sleep", 30.0), client="a") for _ in range(3)]
        theirs = [pool.submit(("sleep", 30.0), client="b") for _ in range(3)]
        assert [f.result(timeout=GENEROUS).status for f in mine + theirs] == [PoolStatus.TIMEOUT] * 6
    finally:
        pool.close()


@pytest.mark.parametrize("payload, how", [(("abort", None), "SIGABRT"), (("exit", 3), "exit status 3")],
                         ids=["abort", "exit"])
def test_crash_that_repeats_on_a_fresh_worker_is_crashed(pool, payload, how):
    assert pool.wait_ready(60)
    before = set(pool.worker_pids())
    outcome = pool.run(payload)
    assert outcome.status is PoolStatus.CRASHED and outcome.answer_fault
    assert outcome.attempts == 2 and outcome.detail.count(how) == 2
    assert len(before - set(pool.worker_pids())) == 2  # two different processes died, both replaced
    assert pool.run(("echo", "after")).value == "after"


def test_crash_that_does_not_repeat_gives_the_retry_result(pool, tmp_path):
    outcome = pool.run(("crash_once", str(tmp_path / "marker")))
    assert (outcome.status, outcome.value, outcome.attempts) == (PoolStatus.OK, "survived", 2)
    assert pool.stats()["pool/retries"] >= 1


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_worker_killed_from_outside_is_retried_then_infra_error(sig):
    pool = _started(PoolConfig(num_workers=1, max_retries=1, run_timeout_s=10.0))
    try:
        # Killed once: retried on another worker, which answers.
        future = pool.submit(("sleep", 0.5))
        first = _busy_pid(pool)
        os.kill(first, sig)
        outcome = future.result(timeout=GENEROUS)
        assert (outcome.status, outcome.attempts) == (PoolStatus.OK, 2)
        # Killed on every attempt: the infrastructure's fault, not the input's.
        future = pool.submit(("sleep", 5))
        victim = _busy_pid(pool)
        os.kill(victim, sig)
        os.kill(_busy_pid(pool, not_in={victim}), sig)
        outcome = future.result(timeout=GENEROUS)
        assert outcome.status is PoolStatus.INFRA_ERROR and not outcome.answer_fault
        assert f"killed from outside ({sig.name}, {sig.name})" in outcome.detail
        assert pool.run(("echo", 1)).status is PoolStatus.OK
    finally:
        pool.close()


@pytest.mark.skipif(not hasattr(signal, "SIGRTMIN"), reason="real-time signals are POSIX")
def test_a_worker_dead_of_a_signal_without_a_name_is_retried_like_any_death():
    """A real-time signal has no name in ``signal.Signals``: looking it up once raised in the dispatcher, which
    lost the request and failed the others in flight."""
    pool = _started(PoolConfig(num_workers=2, spare_workers=0, max_retries=1, run_timeout_s=10.0))
    try:
        bystander = pool.submit(("sleep", 1.0))
        victim_request = pool.submit(("sleep", 0.5))
        first = _busy_pid(pool)
        os.kill(_busy_pid(pool, not_in={first}), signal.SIGRTMIN + 6)  # both busy: one is killed, one looks on
        outcomes = [f.result(timeout=GENEROUS) for f in (bystander, victim_request)]
        assert [o.status for o in outcomes] == [PoolStatus.OK, PoolStatus.OK]
        assert sorted(o.attempts for o in outcomes) == [1, 2]  # the one killed ran again on another worker
        assert pool.stats()["pool/in_flight"] == 0.0
    finally:
        pool.close()


def test_memory_limit_raises_memory_error_in_the_handler(pool):
    assert pool.run(("allocate_mb", 16)).value == 16 << 20
    outcome = pool.run(("allocate_mb", 1024))
    assert (outcome.status, outcome.detail) == (PoolStatus.ERROR, "MemoryError")
    assert pool.run(("echo", "still serving")).value == "still serving"


def test_handler_exception_is_an_error_without_the_payload_text(pool):
    outcome = pool.run(("raise", "secret-gold-42"))
    assert (outcome.status, outcome.detail) == (PoolStatus.ERROR, "ValueError")
    assert "secret" not in repr(outcome)


def test_unpicklable_payload_is_an_error_not_a_hang(pool):
    outcome = pool.run(("echo", lambda: 1))
    assert outcome.status is PoolStatus.ERROR and "unsendable payload" in outcome.detail


def test_forked_child_uses_its_own_pool():
    # The in-process pool's fork rule (scope "process"): a child's pool has workers of its own. On the machine
    # pool a forked child reaches the same server's workers (tests/workers/test_machine_pool.py).
    shared = get_pool(HANDLER, PoolConfig(num_workers=1, spare_workers=0, scope="process")).acquire()
    try:
        parent_pid = shared.run(("pid", None)).value
        def in_the_child() -> tuple:  # same get_pool key, a pool of its own (ProcessCache's fork rule)
            mine = get_pool(HANDLER, PoolConfig(num_workers=1, spare_workers=0, scope="process"))
            outcome = mine.run(("pid", None))
            mine.close()
            return mine is shared, outcome.status.value, outcome.value

        same_object, status, child_worker = in_child(in_the_child)
        assert not same_object and status == "ok"  # a forked child's caches start empty
        assert child_worker != parent_pid
        assert shared.run(("pid", None)).value == parent_pid  # the parent's pool is untouched
    finally:
        shared.release()


def test_handler_that_cannot_start_is_infra_error_not_a_spawn_loop():
    pool = WorkerPool("gym_integrity.openai_stub.no_such_module:handle", PoolConfig(num_workers=1, spare_workers=0))
    try:
        start = time.monotonic()
        outcome = pool.run(("echo", 1))
        assert outcome.status is PoolStatus.INFRA_ERROR and "No module named" in outcome.detail
        assert time.monotonic() - start < GENEROUS
        restarts = pool.stats()["pool/worker_restarts"]
        time.sleep(0.5)
        assert pool.stats()["pool/worker_restarts"] <= restarts + 1  # backing off, not spinning
    finally:
        pool.close()


def test_close_answers_pending_requests_and_release_stops_workers():
    # The in-process pool stops its workers at the last release; the machine pool's server does after a grace
    # period, once every process let go (tests/workers/test_machine_pool.py).
    pool = get_pool(HANDLER, PoolConfig(num_workers=1, spare_workers=0, run_timeout_s=9.0, scope="process")).acquire()
    assert pool.wait_ready(60)
    pids = pool.worker_pids()
    pending = pool.submit(("sleep", 5))
    _busy_pid(pool)
    pool.release()
    outcome = pending.result(timeout=GENEROUS)
    assert outcome.status is PoolStatus.INFRA_ERROR and "shut down" in outcome.detail
    assert not pool.running and not any(_alive(pid) for pid in pids)
    assert pool.run(("echo", 2)).value == 2  # a later request restarts it
    pool.close()


def test_stats_are_flat_pool_floats(pool):
    pool.run(("echo", 0))
    stats = pool.stats()
    assert {"pool/requests", "pool/timeouts", "pool/crashes", "pool/infra_errors", "pool/overloaded",
            "pool/queue_depth", "pool/run_s_max", "pool/queued_s_max"} <= set(stats)
    assert all(k.startswith("pool/") and type(v) is float for k, v in stats.items())


def test_get_pool_shares_one_pool_per_handler_and_config():
    config = PoolConfig(num_workers=1)
    assert get_pool(HANDLER, config) is get_pool(HANDLER, PoolConfig(num_workers=1))
    assert get_pool(HANDLER, config) is not get_pool(HANDLER, PoolConfig(num_workers=2))


@pytest.mark.parametrize(
    "kwargs, error, field",
    [({"run_timeout_s": 0}, ValueError, "run_timeout_s"), ({"queue_timeout_s": -1}, ValueError, "queue_timeout_s"),
     ({"num_workers": 0}, ValueError, "num_workers"), ({"max_in_flight": "8"}, TypeError, "max_in_flight"),
     ({"max_retries": True}, TypeError, "max_retries"), ({"memory_limit_mb": 1}, ValueError, "memory_limit_mb")],
)
def test_bad_config_names_the_field(kwargs, error, field):
    with pytest.raises(error, match=f"PoolConfig.{field}"):
        PoolConfig(**kwargs)


@pytest.mark.parametrize("handler", ["no_colon", "a:b:c", ":f", "m:"])
def test_bad_handler_names_the_form(handler):
    with pytest.raises(ValueError, match="WorkerPool.handler"):
        WorkerPool(handler)


def test_task_outcome_fault_attribution():
    faults = {s: TaskOutcome(s).answer_fault for s in PoolStatus}
    assert [s.value for s, fault in faults.items() if fault] == ["timeout", "crashed"]


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux-only")
def test_workers_die_with_their_parent(tmp_path):
    # A busy worker does not read its pipe, so only PR_SET_PDEATHSIG can end it when the parent is SIGKILLed.
    script = tmp_path / "parent.py"
    script.write_text(
        "import os, sys\n"
        "from gym_integrity.workers import PoolConfig, WorkerPool\n"
        f"pool = WorkerPool({HANDLER!r}, PoolConfig(num_workers=1, spare_workers=1))\n"
        "pool.start(); assert pool.wait_ready(60)\n"
        "pool.submit(('sleep', 120), run_timeout_s=300)\n"
        "while not pool.busy_worker_pids(): pass\n"
        "print(*pool.worker_pids(), flush=True)\n"
        "os.kill(os.getpid(), 9)\n"
    )
    import subprocess

    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    pids = [int(p) for p in result.stdout.split()]
    assert len(pids) == 2
    end = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < end:
        time.sleep(0.05)
    assert not any(_alive(p) for p in pids)


def test_handler_results_must_be_plain_data(pool):
    """A worker runs untrusted input: the parent unpickles its replies without looking up any class."""
    assert pool.run(("echo", (1, 2.5, "x", b"y", None, True, [1], {"k": {1, 2}}, frozenset({3})))).status is \
        PoolStatus.OK
    import fractions

    outcome = pool.run(("echo", fractions.Fraction(1, 3)))
    assert outcome.status is PoolStatus.ERROR and outcome.detail == "unreadable reply (UnpicklingError)"
    assert pool.run(("echo", "next")).value == "next"  # the refused worker was replaced


def test_close_racing_requests_never_hangs_or_breaks_the_pool():
    import threading

    pool = _started(PoolConfig(num_workers=1, spare_workers=0, run_timeout_s=5.0))
    outcomes: list[TaskOutcome] = []
    try:
        def client() -> None:
            for n in range(20):
                outcomes.append(pool.run(("echo", n)))

        thread = threading.Thread(target=client)
        thread.start()
        for _ in range(10):  # restarts racing the client's requests
            pool.close()
            time.sleep(0.05)
        thread.join(timeout=60)  # a request stranded by a close() would wait out run()'s worst case, 135 s
        assert not thread.is_alive() and len(outcomes) == 20
        assert {o.status for o in outcomes} <= {PoolStatus.OK, PoolStatus.INFRA_ERROR}
        assert pool.run(("echo", "alive")).value == "alive"
    finally:
        pool.close()


def test_a_closed_wake_pipe_never_writes_into_the_pipe_that_reuses_its_number():
    """With raw fds, a request racing close() could write its wake-up byte into a worker's request stream (the
    freed fd number goes to the worker's new pipe). A closed waker writes nowhere."""
    from gym_integrity.workers._worker_process import Waker as _Waker

    waker = _Waker()
    write_fd = waker._write_fd
    waker.close_write()
    waker.close_read()  # as its dispatcher does when it ends
    read_end, write_end = os.pipe()  # the lowest free numbers: the waker's, as a new worker's pipe gets them
    try:
        assert write_end == write_fd
        waker.wake()
        os.set_blocking(read_end, False)
        with pytest.raises(BlockingIOError):
            os.read(read_end, 1)  # nothing arrived
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_close_between_a_requests_restart_and_its_queueing_never_strands_it():
    """A request that finds the pool closed starts it; a close() landing before the request is queued must not
    leave it queued with no dispatcher (it waited out run()'s worst case, 135 s, in a stress run under load)."""

    class ClosedRightAfterStart(WorkerPool):
        closes_left = 1

        def start(self) -> None:
            super().start()
            if self.closes_left:
                self.closes_left -= 1
                self.close()  # another thread's close(), at the worst moment for the request that restarted us

    pool = ClosedRightAfterStart(HANDLER, PoolConfig(num_workers=1, spare_workers=0))
    try:
        outcome = pool.submit(("echo", 1)).result(timeout=30)
        assert (outcome.status, outcome.value) == (PoolStatus.OK, 1)
    finally:
        pool.close()


def test_a_worker_stopped_in_the_middle_of_its_reply_holds_neither_the_dispatcher_nor_the_pool(tmp_path):
    """A worker that stops after the first bytes of its reply (one over the pipe's 64 KB goes only as fast as the
    dispatcher reads it) is held to its run budget like any other: TIMEOUT, and the pool serves the next request.
    Waiting in the middle of the reply for the rest would hold the dispatcher and the pool's lock for good."""
    pool = _started(PoolConfig(num_workers=1, spare_workers=1, run_timeout_s=5.0))
    go = tmp_path / "go"
    stopped = None
    try:
        big = pool.submit(("bytes_when", (str(go), 8 << 20)))
        stopped = _busy_pid(pool)
        worker = next(w for w in list(pool._workers) if w.proc.pid == stopped)
        with pool._lock:  # the dispatcher reads nothing while this is held
            go.touch()
            while _unread_bytes(worker.recv_conn.fileno()) < 32 << 10:
                time.sleep(0.01)
            os.kill(stopped, signal.SIGSTOP)  # its pipe is full: the header and part of the body sent, not the rest
        outcome = big.result()  # a hang would be the test's timeout
        assert outcome.status is PoolStatus.TIMEOUT, outcome
        assert pool.run(("echo", "next")).value == "next"
    finally:
        if stopped:
            for sig in (signal.SIGKILL, signal.SIGCONT):
                try:
                    os.kill(stopped, sig)
                except ProcessLookupError:
                    pass
        pool.close()


def _unread_bytes(fd: int) -> int:
    """Bytes waiting in the pipe or socket ``fd`` (FIONREAD)."""
    return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0" * 4))[0]

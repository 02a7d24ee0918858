"""The answer verification service: real math_verify in real worker processes, deadlines, kills, backpressure."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

import pytest

from gym_integrity.protocol import Verdict
from gym_integrity.services.verifier import VerifierConfig, VerifierService, check_boxed, get_verifier

DEADLINE = 1.5  # per-request deadline of hostile answers
GENEROUS = 10.0  # everything else: a verdict must not depend on machine load
TOWER = r"\boxed{9^{9^{9^{9}}}}"
DEEP_NESTING = r"\boxed{" + "(" * 300 + "1" + ")" * 300 + "}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A killed child may linger as a zombie until reaped; treat that as dead.
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


@pytest.fixture(scope="module")
def service():
    svc = get_verifier(VerifierConfig(num_workers=2, deadline_s=GENEROUS, max_retries=1)).acquire()
    assert svc.wait_ready(60)
    yield svc
    svc.release()


@pytest.mark.parametrize(
    "gold, submission",
    [
        (r"\frac{1}{2}", "0.5"),
        (r"\frac{1}{2}", "1/2"),
        (r"\frac{1}{2}", r"\frac{1}{2}"),
        (r"\frac{1}{2}", r"\dfrac12"),
        ("0.5", r"\frac{1}{2}"),
        ("(2,3)", r"x \in (2, 3)"),
        ("[0,1)", "[0, 1)"),
        (r"\{-1, 0, 1\}", r"\{1, -1, 0\}"),
        (r"\{-1, 0, 1\}", "-1, 0, 1"),
        (r"\frac{1+\sqrt{5}}{2}", r"(1+\sqrt{5})/2"),
        (r"\pi", "3.14159265"),
    ],
)
def test_equivalent_forms_are_correct(service, gold, submission):
    outcome = service.verify(f"The answer is \\boxed{{{submission}}}.", gold, problem_id=f"eq:{gold}")
    assert outcome.grade.verdict is Verdict.CORRECT, outcome.grade


@pytest.mark.parametrize(
    "gold, submission",
    [(r"\frac{1}{2}", r"\frac{1}{3}"), ("(2,3)", "(2,3]"), ("(2,3)", "[2,3]"), (r"\{-1, 0, 1\}", r"\{0, 1\}"),
     (r"\pi", "3.14")],
)
def test_different_answers_are_incorrect(service, gold, submission):
    outcome = service.verify(f"\\boxed{{{submission}}}", gold, problem_id=f"ne:{gold}")
    assert outcome.grade.verdict is Verdict.INCORRECT
    assert not outcome.grade.no_verdict


def test_last_boxed_with_brace_matching_is_graded(service):
    text = r"First \boxed{7}, no wait: \boxed{\frac{\sqrt{4}}{4}}"
    assert service.verify(text, "1/2", problem_id="last").grade.verdict is Verdict.CORRECT


@pytest.mark.parametrize(
    "text, verdict",
    [
        ("I think it is one half", Verdict.NO_ANSWER),
        (r"\boxed{}", Verdict.UNPARSABLE),
        (r"\boxed{\frac{1}{2}", Verdict.UNPARSABLE),
        (r"\boxed{" + "1" * 5000 + "}", Verdict.UNPARSABLE),
    ],
)
def test_extraction_failures(service, text, verdict):
    outcome = service.verify(text, "1/2", problem_id="extract")
    assert outcome.grade.verdict is verdict
    assert not outcome.grade.no_verdict and outcome.grade.cause


def test_check_boxed_length_cap_names_the_cap():
    answer, failure = check_boxed(r"\boxed{12345}", max_chars=4)
    assert answer is None and failure.verdict is Verdict.UNPARSABLE and "4 characters" in failure.cause


@pytest.mark.parametrize("hostile", [TOWER, DEEP_NESTING], ids=["tower", "deep-nesting"])
def test_hostile_answer_times_out_within_deadline_and_next_request_succeeds(service, hostile):
    pids_before = set(service.worker_pids())
    restarts_before = service.stats()["verifier/worker_restarts"]
    start = time.monotonic()
    outcome = service.verify(hostile, "3", problem_id="hostile", deadline_s=DEADLINE)
    elapsed = time.monotonic() - start
    assert outcome.grade.verdict is Verdict.TIMEOUT and outcome.grade.no_verdict
    assert f"{DEADLINE:g}s deadline" in outcome.grade.cause
    assert elapsed <= DEADLINE + 1.0
    assert service.stats()["verifier/worker_restarts"] == restarts_before + 1
    killed = pids_before - set(service.worker_pids())
    assert len(killed) == 1 and not any(_alive(pid) for pid in killed)
    assert service.verify(r"\boxed{3}", "3", problem_id="after-hostile").grade.verdict is Verdict.CORRECT


def test_hostile_answers_from_threads_do_not_block_normal_ones(service):
    """Two hostile and four normal requests at once, from threads (math_verify's signal.alarm would refuse)."""
    results: dict[str, tuple[Verdict, float]] = {}

    def run(name: str, text: str, deadline: float | None) -> None:
        start = time.monotonic()
        verdict = service.verify(text, "3", problem_id="mix", deadline_s=deadline).grade.verdict
        results[name] = (verdict, time.monotonic() - start)

    threads = [threading.Thread(target=run, args=(f"h{i}", TOWER, DEADLINE)) for i in range(2)]
    threads += [threading.Thread(target=run, args=(f"n{i}", r"\boxed{3}", None)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(results) == 6  # nobody hung
    for name in ("h0", "h1"):
        verdict, latency = results[name]
        assert verdict is Verdict.TIMEOUT and latency <= DEADLINE + 1.0
    # Normal answers were served, at worst once the hostile ones were killed.
    assert all(results[f"n{i}"][0] is Verdict.CORRECT for i in range(4))


def _kill_busy_worker(svc: VerifierService, timeout: float = 5.0) -> int:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        busy = svc.busy_worker_pids()
        if busy:
            os.kill(busy[0], signal.SIGKILL)
            return busy[0]
        time.sleep(0.005)
    raise AssertionError("no worker became busy")


def test_worker_sigkilled_mid_request_is_replaced_and_request_retried(service):
    retries_before = service.stats()["verifier/retries"]
    future = service.submit("9^{9^{9^{9}}}", "3", problem_id="killed", deadline_s=DEADLINE)
    victim = _kill_busy_worker(service)
    grade = future.result(timeout=DEADLINE + 2)
    # The retry ran on a fresh worker, which the hostile answer held until the deadline.
    assert grade.verdict is Verdict.TIMEOUT
    assert service.stats()["verifier/retries"] == retries_before + 1
    assert victim not in service.worker_pids()
    assert service.verify(r"\boxed{0.5}", "1/2", problem_id="killed").grade.verdict is Verdict.CORRECT


def test_worker_death_beyond_retry_budget_is_a_grader_error():
    svc = VerifierService(VerifierConfig(num_workers=1, deadline_s=5.0, max_retries=0))
    try:
        svc.start()
        assert svc.wait_ready(60)
        start = time.monotonic()
        future = svc.submit("9^{9^{9^{9}}}", "3", problem_id="no-retry")
        _kill_busy_worker(svc)
        grade = future.result(timeout=10)
        assert grade.verdict is Verdict.GRADER_ERROR and grade.no_verdict
        assert "died" in grade.cause
        assert time.monotonic() - start < 5.0  # answered at once, not at the deadline
        assert svc.verify(r"\boxed{2}", "2", problem_id="no-retry").grade.verdict is Verdict.CORRECT
        assert svc.stats()["verifier/worker_restarts"] >= 1
    finally:
        svc.close()


def test_pool_whose_workers_all_died_is_rebuilt():
    # A deadline that covers a replacement's interpreter start: the request
    # waits for the rebuilt pool instead of timing out. A retry per process:
    # SIGKILL is not instant, so the request may still be handed to each of the
    # three killed workers (2 + 1 spare) before their pipes report EOF, and each
    # such hand-off is charged (an honest grader_error otherwise, never a verdict).
    svc = VerifierService(VerifierConfig(num_workers=2, deadline_s=10.0, max_retries=3))
    try:
        svc.start()
        assert svc.wait_ready(60)
        old = svc.worker_pids()
        for pid in old:
            os.kill(pid, signal.SIGKILL)
        outcome = svc.verify(r"\boxed{4}", "4", problem_id="rebuilt")
        assert outcome.grade.verdict is Verdict.CORRECT, outcome.grade
        assert svc.wait_ready(60) and len(svc.worker_pids()) == svc.config.processes == 3
        assert not set(old) & set(svc.worker_pids())
    finally:
        svc.close()


def test_bounded_in_flight_refuses_with_a_clear_no_verdict():
    svc = VerifierService(VerifierConfig(num_workers=1, deadline_s=DEADLINE, max_in_flight=1))
    try:
        svc.start()
        assert svc.wait_ready(60)
        hung = svc.submit("9^{9^{9^{9}}}", "3", problem_id="busy")
        refused = svc.submit("3", "3", problem_id="busy").result(timeout=1)
        assert refused.verdict is Verdict.GRADER_ERROR and "overloaded" in refused.cause
        assert svc.stats()["verifier/rejected"] == 1.0
        assert hung.result(timeout=DEADLINE + 2).verdict is Verdict.TIMEOUT
        assert svc.verify(r"\boxed{3}", "3", problem_id="busy").grade.verdict is Verdict.CORRECT
    finally:
        svc.close()


def test_gold_answer_is_parsed_once_per_worker_and_cached(service):
    # Sequential requests go to the first idle worker, so the second one finds its cache warm.
    first = service.verify(r"\boxed{1/2}", r"\frac{1}{2}", problem_id="cached")
    second = service.verify(r"\boxed{0.5}", r"\frac{1}{2}", problem_id="cached")
    other_id = service.verify(r"\boxed{0.5}", r"\frac{1}{2}", problem_id="cached-other")
    assert first.metrics["verifier/cache_hit"] == 0.0
    assert second.metrics["verifier/cache_hit"] == 1.0
    assert other_id.metrics["verifier/cache_hit"] == 0.0
    assert 0.0 < second.metrics["verifier/cache_hit_rate"] < 1.0


def test_unparsable_gold_is_a_grader_error_that_does_not_quote_it(service):
    grade = service.verify(r"\boxed{3}", "}{", problem_id="bad-gold").grade
    assert grade.verdict is Verdict.GRADER_ERROR and grade.no_verdict
    assert "bad-gold" in grade.cause and "}{" not in grade.cause


def test_metrics_are_flat_verifier_floats(service):
    outcome = service.verify(r"\boxed{1}", "1", problem_id="metrics")
    expected = {"verifier/requests", "verifier/latency_s", "verifier/timeouts", "verifier/errors",
                "verifier/queue_depth", "verifier/cache_hit_rate", "verifier/worker_restarts"}
    assert expected <= set(outcome.metrics)
    assert all(k.startswith("verifier/") and type(v) is float for k, v in outcome.metrics.items())


def test_last_release_shuts_workers_down_and_next_use_restarts():
    svc = get_verifier(VerifierConfig(num_workers=1, deadline_s=4.0))
    svc.acquire()
    svc.acquire()
    assert svc.wait_ready(60)
    pids = svc.worker_pids()
    svc.release()
    assert svc.running and all(_alive(p) for p in pids)
    svc.release()
    assert not svc.running
    deadline = time.monotonic() + 5
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not any(_alive(p) for p in pids)
    assert svc.verify(r"\boxed{5}", "5", problem_id="restart").grade.verdict is Verdict.CORRECT
    svc.close()


@pytest.mark.parametrize(
    "kwargs, field",
    [({"deadline_s": 0}, "deadline_s"), ({"num_workers": 0}, "num_workers"), ({"max_in_flight": "8"}, "max_in_flight"),
     ({"max_retries": -1}, "max_retries"), ({"strict": 1}, "strict")],
)
def test_bad_config_names_the_field(kwargs, field):
    with pytest.raises(ValueError, match=f"VerifierConfig.{field}"):
        VerifierConfig(**kwargs)


def test_workers_that_cannot_start_give_grader_error_not_a_spawn_loop(monkeypatch):
    # An interpreter that exits at once stands in for a broken environment (math_verify missing).
    monkeypatch.setattr(sys, "executable", "/bin/false")
    svc = VerifierService(VerifierConfig(num_workers=1, spare_workers=0, deadline_s=5.0))
    try:
        svc.start()
        start = time.monotonic()
        grade = svc.verify(r"\boxed{1}", "1", problem_id="broken").grade
        assert grade.verdict is Verdict.GRADER_ERROR and grade.no_verdict and "starting" in grade.cause
        assert time.monotonic() - start < 5.0
        restarts = svc.stats()["verifier/worker_restarts"]
        time.sleep(0.5)
        assert svc.stats()["verifier/worker_restarts"] <= restarts + 1  # backing off, not spinning
    finally:
        svc.close()


def test_per_request_deadline_must_be_positive(service):
    with pytest.raises(ValueError, match="deadline_s"):
        service.verify(r"\boxed{1}", "1", problem_id="d", deadline_s=0)

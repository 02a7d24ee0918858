"""The machine's grading pool: one server shared by client processes, its lifetime, its failures, its access control."""

from __future__ import annotations

import fcntl
import json
import os
import pickle
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from multiprocessing.connection import AuthenticationError, Client

import pytest

from forking import in_child
from gym_integrity.protocol import Verdict
from gym_integrity.workers import (MachinePool, PoolConfig, PoolStatus, WorkerPool, auth_key, get_pool,
                                   machine_stats, pool_dir, pool_scope, server_name)
from gym_integrity.workers import _machine_client, _machine_paths
from gym_integrity.services.verifier import VerifierConfig, VerifierService, grade_outcome

HANDLER = "gym_integrity.workers.scripted_handlers:handle"
CONFIG = {"num_workers": 2, "spare_workers": 1, "run_timeout_s": 5.0}
GRACE_S = 0.5
STOP_BOUND_S = 10.0  # a server must be gone this long after its last client (grace + its own shutdown, loaded machine)

# A client process: one pool, driven line by line over stdin (JSON commands), answering JSON lines on stdout.
CLIENT = """
import json, sys
from gym_integrity.workers import PoolConfig, get_pool
pool = get_pool(%r, PoolConfig(**json.loads(sys.argv[1]))).acquire()
for line in sys.stdin:
    command = json.loads(line)
    if command[0] == "info":
        out = {"ready": pool.wait_ready(60), "server": pool.server_pid(), "workers": sorted(pool.worker_pids())}
    elif command[0] == "run":
        outcome = pool.run(tuple(command[1]), run_timeout_s=command[2])
        out = {"status": outcome.status.value, "value": outcome.value, "detail": outcome.detail}
    else:
        break
    print(json.dumps(out), flush=True)
pool.release()
""" % HANDLER


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie waiting for its parent to reap it is dead
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def _gone(pids: list[int], within: float = STOP_BOUND_S) -> bool:
    end = time.monotonic() + within
    while any(_alive(pid) for pid in pids) and time.monotonic() < end:
        time.sleep(0.05)
    return not any(_alive(pid) for pid in pids)


@pytest.fixture
def pool_env(monkeypatch):
    """A pool directory of the test's own and a short grace; removing it at the end stops any server left."""
    directory = tempfile.mkdtemp(prefix="gi-mp-")
    monkeypatch.setenv("GYM_INTEGRITY_POOL_DIR", directory)
    monkeypatch.setenv("GYM_INTEGRITY_POOL_GRACE_S", str(GRACE_S))
    monkeypatch.delenv("GYM_INTEGRITY_POOL_SCOPE", raising=False)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


class ClientProcess:
    """A separate Python process holding the machine pool of CONFIG."""

    def __init__(self, config: dict = CONFIG) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", CLIENT, json.dumps(config)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def ask(self, *command) -> dict:
        self.proc.stdin.write(json.dumps(list(command)) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, self.proc.stderr.read()[-2000:]
        return json.loads(line)

    def exit(self) -> None:
        self.proc.stdin.write(json.dumps(["exit"]) + "\n")
        self.proc.stdin.close()
        assert self.proc.wait(timeout=60) == 0

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=60)


def _client(config: dict = CONFIG) -> MachinePool:
    return MachinePool(HANDLER, PoolConfig(**config))


def test_two_client_processes_share_one_server_which_stops_after_the_last_exits(pool_env):
    clients = [ClientProcess(), ClientProcess()]  # started at once: one starts the server, the other waits for it
    try:
        infos = [c.ask("info") for c in clients]
        assert all(i["ready"] for i in infos)
        server = infos[0]["server"]
        assert server and infos[1]["server"] == server and server not in (c.proc.pid for c in clients)
        assert infos[0]["workers"] == infos[1]["workers"] and len(infos[0]["workers"]) == 3  # 2 workers + 1 spare
        ran_on = {c.ask("run", ["pid", None], None)["value"] for c in clients}
        assert ran_on <= set(infos[0]["workers"])  # the same workers serve both processes
        clients[0].exit()
        time.sleep(GRACE_S + 1.0)
        assert _alive(server)  # the second client still holds it
        assert clients[1].ask("run", ["echo", "still here"], None)["value"] == "still here"
        clients[1].exit()
        assert _gone([server, *infos[0]["workers"]])  # the last one's exit stopped the server and its workers
        assert not [f for f in os.listdir(pool_env) if f.endswith(".sock")]  # and it removed its socket
    finally:
        for c in clients:
            if c.proc.poll() is None:
                c.kill()


def test_the_server_stops_when_every_client_is_sigkilled(pool_env):
    clients = [ClientProcess(), ClientProcess()]
    try:
        info = clients[0].ask("info")
        assert clients[1].ask("info")["server"] == info["server"]
    finally:
        for c in clients:
            c.kill()  # a crash of every user closes their sockets
    assert _gone([info["server"], *info["workers"]])


def test_a_server_killed_mid_request_is_a_no_verdict_and_the_next_request_restarts_it(pool_env):
    pool = _client().acquire()
    try:
        assert pool.wait_ready(60)
        server, workers = pool.server_pid(), pool.worker_pids()
        pending = pool.submit(("sleep", 30), run_timeout_s=60)
        end = time.monotonic() + 10
        while not pool.busy_worker_pids() and time.monotonic() < end:
            time.sleep(0.01)
        killed_at = time.monotonic()
        os.kill(server, signal.SIGKILL)
        outcome = pending.result(timeout=5)  # never a hang: the broken connection answers it
        assert time.monotonic() - killed_at < 5
        assert outcome.status is PoolStatus.INFRA_ERROR and "the machine grading pool died" in outcome.detail
        grade = grade_outcome(outcome, problem_id="p", budget=60)
        assert grade.verdict is Verdict.GRADER_ERROR and grade.no_verdict  # the grader's fault, never the answer's
        assert _gone(workers)  # the dead server's workers die with it (PDEATHSIG)
        again = pool.run(("echo", "after"))  # the next request restarts the server
        assert (again.status, again.value) == (PoolStatus.OK, "after")
        assert pool.server_pid() not in (None, server)
        stats = pool.stats()
        assert stats["pool/server_starts"] == 2 and stats["pool/connection_losses"] == 1
        assert stats["pool/infra_errors"] >= 1  # the client's own no-verdict is counted
    finally:
        pool.release()


def test_the_verifier_grades_on_the_machine_pool_and_its_death_is_a_no_verdict(pool_env):
    svc = VerifierService(VerifierConfig(num_workers=1, deadline_s=10.0, scope="machine"))
    try:
        svc.start()
        assert svc.wait_ready(60)
        assert svc.verify(r"\boxed{\frac{1}{2}}", "0.5", problem_id="m").grade.verdict is Verdict.CORRECT
        assert svc.stats()["verifier/requests"] == 1.0  # the service's own requests
        assert svc.sandbox.pool().stats()["pool/requests"] >= 1.0  # the server's figures, every client's
        tower = svc.submit("9^{9^{9^{9}}}", "3", problem_id="m")
        end = time.monotonic() + 10
        while not svc.busy_worker_pids() and time.monotonic() < end:
            time.sleep(0.01)
        os.kill(svc._pool.server_pid(), signal.SIGKILL)
        grade = tower.result(timeout=5)
        assert grade.verdict is Verdict.GRADER_ERROR and grade.no_verdict and "died" in grade.cause
        assert svc.verify(r"\boxed{3}", "3", problem_id="m").grade.verdict is Verdict.CORRECT
    finally:
        svc.close()


def test_the_run_budget_kills_a_hostile_input_without_touching_another_clients_requests(pool_env):
    other = ClientProcess()
    mine = _client().acquire()
    try:
        assert other.ask("info")["ready"] and mine.wait_ready(60)
        restarts = mine.stats()["pool/worker_restarts"]
        hostile = mine.submit(("sleep", 30), run_timeout_s=1.0)
        answers = [other.ask("run", ["echo", n], 1.0) for n in range(10)]  # the other process, meanwhile
        assert [a["status"] for a in answers] == ["ok"] * 10 and [a["value"] for a in answers] == list(range(10))
        outcome = hostile.result(timeout=30)
        assert outcome.status is PoolStatus.TIMEOUT and outcome.run_s == 1.0  # killed at its own budget
        assert mine.stats()["pool/worker_restarts"] == restarts + 1
        assert other.ask("run", ["echo", "after"], 1.0)["value"] == "after"
    finally:
        mine.release()
        other.exit()


def test_a_forked_child_reaches_the_same_server_on_a_connection_of_its_own(pool_env):
    pool = _client().acquire()
    try:
        assert pool.wait_ready(60)
        server, workers = pool.server_pid(), set(pool.worker_pids())
        def in_the_child() -> tuple:
            outcome = pool.run(("pid", None))  # the parent's connection was dropped here: a new one
            server_seen = pool.server_pid()
            pool.close()
            return server_seen, outcome.status.value, outcome.value

        child_server, status, worker = in_child(in_the_child)
        assert (child_server, status) == (server, "ok") and worker in workers
        assert pool.run(("echo", "parent")).value == "parent" and pool.server_pid() == server  # untouched
    finally:
        pool.release()


def test_a_foreign_client_without_the_key_cannot_connect(pool_env):
    pool = _client().acquire()
    try:
        assert pool.wait_ready(60)
        path = os.path.join(pool_env, server_name(HANDLER, pool.config) + ".sock")
        with pytest.raises(AuthenticationError):
            Client(path, "AF_UNIX", authkey=b"x" * 32)
        foreign = Client(path, "AF_UNIX")  # no key at all: it is challenged, and dropped when it does not answer
        foreign.send_bytes(pickle.dumps(("submit", 1, pickle.dumps(("echo", 1)), 1.0)))
        with pytest.raises((EOFError, ConnectionError)):
            for _ in range(3):  # the challenge, then the end of the connection: never an outcome
                assert not foreign.recv_bytes().startswith(b"\x80")
        foreign.close()
        assert pool.run(("echo", "served")).value == "served"  # the pool's own clients are unaffected
    finally:
        pool.release()


def test_a_directory_others_may_enter_is_refused_with_the_reason(pool_env):
    os.chmod(pool_env, 0o755)
    with pytest.raises(PermissionError, match=r"has mode 0755.*chmod 700"):
        pool_dir()
    pool = _client()
    start = time.monotonic()
    outcome = pool.run(("echo", 1))
    assert outcome.status is PoolStatus.INFRA_ERROR and "mode 0755" in outcome.detail
    assert time.monotonic() - start < 5 and pool.stats()["pool/server_starts"] == 0
    pool.close()
    os.chmod(pool_env, 0o700)
    elsewhere = tempfile.mkdtemp(prefix="gi-mp-")
    try:
        link = os.path.join(elsewhere, "link")
        os.symlink(pool_env, link)
        os.environ["GYM_INTEGRITY_POOL_DIR"] = link  # restored by the fixture's monkeypatch
        with pytest.raises(PermissionError, match="not a directory"):
            pool_dir()
    finally:
        shutil.rmtree(elsewhere, ignore_errors=True)


def test_a_directory_that_cannot_be_made_is_refused_naming_the_variable(pool_env, monkeypatch):
    missing = os.path.join(pool_env, "no", "such", "dir")
    monkeypatch.setenv("GYM_INTEGRITY_POOL_DIR", missing)
    with pytest.raises(PermissionError, match=r"parent directory does not exist.*set GYM_INTEGRITY_POOL_DIR"):
        pool_dir()
    pool = _client()
    outcome = pool.run(("echo", 1))
    pool.close()
    assert outcome.status is PoolStatus.INFRA_ERROR and "GYM_INTEGRITY_POOL_DIR" in outcome.detail


def test_the_start_lock_is_released_even_while_a_copy_of_its_fd_lives(pool_env):
    """A flock belongs to the open file: a child forked while a thread held the start lock shares it, and a plain
    close in the parent would leave every other process waiting out the 30 s spawn deadline."""
    path = os.path.join(pool_env, "start.lock")
    held = _machine_paths.flock(path, time.monotonic() + 1)
    copy = os.dup(held)  # what such a child keeps
    try:
        _machine_paths.unlock(held)
        again = _machine_paths.flock(path, time.monotonic() + 1)
        assert again is not None
        _machine_paths.unlock(again)
    finally:
        os.close(copy)


@pytest.mark.skipif(os.getuid() != 0, reason="making a directory of another user needs root")
def test_a_directory_of_another_user_is_refused(pool_env):
    os.chown(pool_env, 65534, -1)
    with pytest.raises(PermissionError, match="belongs to uid 65534"):
        pool_dir()


def test_a_key_file_others_may_read_is_refused(pool_env):
    key = auth_key(pool_dir())
    assert len(key) == 32 and auth_key(pool_env) == key  # made once
    path = os.path.join(pool_env, "authkey")
    assert os.stat(path).st_mode & 0o777 == 0o600
    os.chmod(path, 0o644)
    with pytest.raises(PermissionError, match="mode 0600"):
        auth_key(pool_env)


def test_a_server_that_cannot_start_is_a_fast_no_verdict_not_a_spawn_loop(pool_env, monkeypatch):
    monkeypatch.setattr(sys, "executable", "/bin/false")  # the server's interpreter exits at once
    pool = _client()
    try:
        start = time.monotonic()
        outcome = pool.run(("echo", 1))
        assert outcome.status is PoolStatus.INFRA_ERROR and "exited while starting (exit status 1)" in outcome.detail
        assert pool.run(("echo", 2)).status is PoolStatus.INFRA_ERROR  # backing off: no new server at once
        assert time.monotonic() - start < 5 and pool.stats()["pool/server_starts"] == 1
    finally:
        pool.close()


def test_the_server_exits_when_its_socket_file_is_removed(pool_env):
    pool = _client().acquire()
    try:
        assert pool.wait_ready(60)
        server, workers = pool.server_pid(), pool.worker_pids()
        os.unlink(os.path.join(pool_env, server_name(HANDLER, pool.config) + ".sock"))
        assert _gone([server, *workers], within=5)  # although a client is still connected
        # The process's first thread can be a zombie while the others still hold the sockets: a request sent then
        # reaches the dying server, and is its no-verdict. Wait for the client to hear the connection close.
        end = time.monotonic() + 5
        while pool.server_pid() is not None and time.monotonic() < end:
            time.sleep(0.02)
        assert pool.run(("echo", "new")).value == "new" and pool.server_pid() != server
    finally:
        pool.release()


def test_a_request_that_could_not_be_sent_is_sent_again_on_a_new_connection(pool_env):
    """A send that fails never reached a server (one dead since the client last heard from it): it is sent
    once more, on a new connection, and no no-verdict is counted."""
    pool = _client().acquire()
    try:
        assert pool.wait_ready(60)
        server = pool.server_pid()
        pool._link.sock.shutdown(socket.SHUT_WR)  # the next send fails with EPIPE; the reader hears nothing
        outcome = pool.run(("echo", "again"))
        assert (outcome.status, outcome.value) == (PoolStatus.OK, "again")
        assert pool.server_pid() == server  # the same server, on a new connection
        stats = pool.stats()
        assert stats["pool/connection_losses"] == 1 and stats["pool/infra_errors"] == 0
    finally:
        pool.release()


def test_a_wedged_server_is_a_no_verdict_within_the_bound(pool_env, monkeypatch):
    monkeypatch.setattr(_machine_client, "_SILENCE_S", 1.0)
    pool = _client().acquire()
    server = None
    try:
        assert pool.wait_ready(60)
        server = pool.server_pid()
        os.kill(server, signal.SIGSTOP)
        outcome = pool.run(("echo", 1))
        # Only the silence rule gives this detail: the bound held (a hang would be the test's timeout). Its
        # latency is not asserted: on a loaded machine a wall-clock bound measures the scheduler, not the rule.
        assert outcome.status is PoolStatus.INFRA_ERROR and "did not answer for 1 s" in outcome.detail
    finally:
        if server:
            os.kill(server, signal.SIGKILL)
            os.kill(server, signal.SIGCONT)
        pool.release()


def test_a_server_wedged_in_the_middle_of_a_message_is_a_no_verdict_within_the_bound(pool_env, monkeypatch):
    """The silence rule holds inside a message: a server stopped after the first bytes of an outcome (a message
    over 16 KB goes as its header, then its body) is dropped, not waited on for the rest forever."""
    pool = _client({**CONFIG, "num_workers": 1, "spare_workers": 0}).acquire()  # one worker: outcomes in order
    server = None
    release_reader = threading.Event()
    try:
        assert pool.wait_ready(60)
        server = pool.server_pid()
        link = pool._link
        os.kill(server, signal.SIGSTOP)  # the first request is not answered before the hook is set
        first = pool.submit(("echo", "first"))
        # The reader runs this when the first outcome arrives and reads nothing more until it returns.
        first.add_done_callback(lambda _: release_reader.wait())
        os.kill(server, signal.SIGCONT)
        big = pool.submit(("echo", b"x" * (8 << 20)))  # an 8 MB outcome: more than the socket buffer holds
        # Bytes of the big outcome wait unread: the server has sent its header and part of its body, and it
        # cannot send the rest (the socket's buffer is full) until the reader reads.
        while _unread_bytes(link.sock) < 64 << 10:
            assert not big.done(), big.result()
            time.sleep(0.01)
        os.kill(server, signal.SIGSTOP)  # wedged in the middle of the message
        monkeypatch.setattr(_machine_client, "_SILENCE_S", 1.0)
        release_reader.set()
        outcome = big.result()  # a hang would be the test's timeout
        assert first.result().status is PoolStatus.OK
        assert outcome.status is PoolStatus.INFRA_ERROR and "did not answer for 1 s" in outcome.detail, outcome
    finally:
        release_reader.set()
        if server:
            os.kill(server, signal.SIGKILL)
            os.kill(server, signal.SIGCONT)
        pool.release()


def _unread_bytes(sock: socket.socket) -> int:
    """Bytes waiting in ``sock``'s receive queue (FIONREAD)."""
    return struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0" * 4))[0]


def test_stats_and_pids_come_from_the_server(pool_env):
    a, b = _client().acquire(), _client().acquire()  # two connections, as two processes would hold
    try:
        assert a.wait_ready(60)
        before = a.stats()["pool/requests"]
        for n in range(3):
            assert a.run(("echo", n)).status is PoolStatus.OK
            assert b.run(("echo", n)).status is PoolStatus.OK
        assert b.stats()["pool/requests"] == before + 6  # every client's requests
        assert sorted(a.worker_pids()) == sorted(b.worker_pids()) and a.server_pid() == b.server_pid()
        assert all(k.startswith("pool/") and type(v) is float for k, v in a.stats().items())
        # The operator's call lists the pool once, with the server's figures, though no get_pool() made it.
        listed = [p for p in machine_stats() if p["handler"] == HANDLER and p["scope"] == "machine"
                  and p["stats"]["pool/requests"] == before + 6]
        assert len(listed) == 1, machine_stats()
    finally:
        a.release()
        b.release()


def test_scope_selects_the_machine_pool_by_default(monkeypatch):
    monkeypatch.delenv("GYM_INTEGRITY_POOL_SCOPE", raising=False)
    assert pool_scope() == "machine" and isinstance(get_pool(HANDLER, PoolConfig(num_workers=3)), MachinePool)
    assert isinstance(get_pool(HANDLER, PoolConfig(num_workers=3, scope="process")), WorkerPool)
    monkeypatch.setenv("GYM_INTEGRITY_POOL_SCOPE", "process")
    assert isinstance(get_pool(HANDLER, PoolConfig(num_workers=3)), WorkerPool)
    assert isinstance(get_pool(HANDLER, PoolConfig(num_workers=3, scope="machine")), MachinePool)
    monkeypatch.setenv("GYM_INTEGRITY_POOL_SCOPE", "cluster")
    with pytest.raises(ValueError, match="^GYM_INTEGRITY_POOL_SCOPE must be one of"):
        get_pool(HANDLER, PoolConfig(num_workers=3))


@pytest.mark.parametrize("cls, owner", [(PoolConfig, "PoolConfig"), (VerifierConfig, "VerifierConfig")])
def test_scope_follows_the_error_rule(cls, owner):
    with pytest.raises(TypeError, match=f"^{owner}.scope must be one of"):
        cls(scope=3)
    with pytest.raises(ValueError, match=f"^{owner}.scope must be one of .*got 'cluster'"):
        cls(scope="cluster")
    assert cls(scope="process").scope == "process"


def test_the_socket_name_follows_the_handler_and_config_but_not_the_scope():
    base = server_name(HANDLER, PoolConfig())
    assert base == server_name(HANDLER, PoolConfig(scope="machine")) == server_name(HANDLER, PoolConfig(scope="process"))
    assert base != server_name(HANDLER, PoolConfig(num_workers=1))
    assert base != server_name("gym_integrity.services.math_worker:verify", PoolConfig())


def test_one_process_flooding_the_pool_is_refused_alone_and_not_the_others(pool_env):
    # Each process has max_in_flight of its own (as its own pool gave it): a flood past it is OVERLOADED for the
    # flooding process only, and another process's request still runs.
    config = {**CONFIG, "max_in_flight": 4, "num_workers": 1, "spare_workers": 0}
    other = ClientProcess(config)
    flood = _client(config).acquire()
    try:
        assert other.ask("info")["ready"] and flood.wait_ready(60)
        queued = [flood.submit(("sleep", 2), run_timeout_s=5.0) for _ in range(4)]
        refused = flood.run(("echo", "one too many"), run_timeout_s=5.0)
        assert refused.status is PoolStatus.OVERLOADED and "of this process in flight (max_in_flight=4)" in refused.detail
        answer = other.ask("run", ["echo", "mine"], 5.0)
        assert (answer["status"], answer["value"]) == ("ok", "mine")
        assert [f.result(timeout=60).status for f in queued] == [PoolStatus.OK] * 4
    finally:
        flood.release()
        other.exit()


def test_a_process_that_dies_leaves_no_queued_request_behind(pool_env):
    # A killed process's queued requests are cancelled when its connection closes: they would hold the workers
    # against the processes still there. The one already on a worker runs to its budget.
    config = {**CONFIG, "num_workers": 1, "spare_workers": 0}
    dying, other = ClientProcess(config), ClientProcess(config)
    try:
        assert dying.ask("info")["ready"] and other.ask("info")["ready"]
        dying.proc.stdin.write("".join(json.dumps(["run", ["sleep", 3], 5.0]) + "\n" for _ in range(1)))
        dying.proc.stdin.flush()
        flood = ("import json, sys, time\n"
                 "from gym_integrity.workers import PoolConfig, get_pool\n"
                 f"pool = get_pool({HANDLER!r}, PoolConfig(**json.loads(sys.argv[1]))).acquire()\n"
                 "futures = [pool.submit(('sleep', 3), run_timeout_s=5.0) for _ in range(8)]\n"
                 "print('queued', flush=True); time.sleep(60)\n")
        flooder = subprocess.Popen([sys.executable, "-c", flood, json.dumps(config)], stdout=subprocess.PIPE, text=True)
        assert flooder.stdout.readline().strip() == "queued"
        time.sleep(0.5)
        flooder.kill()
        flooder.wait(timeout=30)
        start = time.monotonic()
        answer = other.ask("run", ["echo", "next"], 5.0)
        # Behind at most the sleeps already on the worker (3 s each, the dying client's and the flooder's first),
        # not behind the flooder's 7 queued ones (21 s more).
        assert answer["value"] == "next" and time.monotonic() - start < 12
    finally:
        dying.kill()
        other.exit()


def test_one_process_backlog_does_not_delay_another_process_request_behind_it(pool_env):
    # The server takes turns between connections (one per process): b's request runs right after the request of
    # a's already on the worker, not behind a's queued backlog. Order of runs, read from the worker's clock.
    config = {**CONFIG, "num_workers": 1, "spare_workers": 0}
    a, b = _client(config).acquire(), _client(config).acquire()  # two connections, as two processes would hold
    try:
        assert a.wait_ready(60) and b.wait_ready(60)
        backlog = [a.submit(("started_at", 0.3), run_timeout_s=5.0) for _ in range(4)]
        a.stats()  # a reply on a's connection: the server has queued all four of a's requests
        mine = b.run(("started_at", 0), run_timeout_s=5.0)
        assert mine.status is PoolStatus.OK
        started = [f.result(timeout=60).value for f in backlog]
        assert started == sorted(started)  # a's own requests in a's order
        assert started[0] < mine.value < started[1], "b's request waited behind a's queued backlog"
    finally:
        a.release()
        b.release()

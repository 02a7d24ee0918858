"""Soak: vector envs and a served session under honest and hostile answers, with the grading pool killed at random.

For ``--minutes`` (or ``--seconds``), one driver process plays, round after round:

- a threaded vector env of 4 QEDMath-v0 answer envs;
- an async vector env of 2 ReasoningGym-v0 ``simple_integration`` envs (forked
  sub-processes; the sympy scorer runs in the sandbox pool);
- one session of ``gym-integrity serve QEDMath-v0`` (a subprocess on
  127.0.0.1, played through ``RemoteEnv``), when the [serve] extra is installed;

all grading on one machine pool in a fresh pool directory. Each answer is the
gold (from a local twin reset to the same seed), a wrong answer, or hostile (a
tower, 5,000 characters of garbage, an answer the static check cannot bound and
that runs to the budget). Every ``--kill-every`` seconds a grading worker, or
one time in four the pool server itself, is SIGKILLed.

Every ``--sample-every`` seconds it prints processes, open file descriptors and
RSS by kind (driver, async sub-envs, serve, pool server, pool workers), verdicts
by kind and no-verdicts by cause. It fails (exit 1, saying why) if:

- processes, fds or any RSS grow past the first sample after warm-up by more
  than the allowance (``_ALLOW``);
- an honest answer gets a wrong verdict (a gold not ``correct``, a wrong answer
  ``correct``);
- an honest answer gets a no-verdict with no kill in the ``_KILL_WINDOW_S``
  before it;
- a step is lost (no step returns for ``_LOST_S``: the watchdog ends the run);
- after close, a pool socket is left or a pool server still runs.
  (``authkey`` and the servers' empty ``.lock``/``.alive`` files stay by design:
  unlinking a file other processes flock would race; see docs/workers.md.)

Run: ``python benchmarks/soak.py --minutes 20`` (docs/soak.md has a 20-minute run).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

QED_KWARGS = {"problem_types": ["answer"]}
RG_KWARGS = {"dataset": "simple_integration"}
THREADED_ENVS, ASYNC_ENVS = 4, 2

QED_HOSTILE = [r"The answer is \boxed{9^{9^{9^{9}}}}.", "The answer is \\boxed{" + "x+" * 2500 + "}",
               r"The answer is \boxed{\sin(x)^{16}\cos(x)^{16}+\sin(y)^{16}\cos(y)^{16}+\sin(z)^{16}\cos(z)^{16}}."]
QED_WRONG = r"The answer is \boxed{-987654321}."
RG_HOSTILE = ["(x+1)**999*(x-1)**999", "__import__('os').getpid()", "(" * 400 + "x" + ")" * 400]
RG_WRONG = "x**7/7 + 123456"

_KILL_WINDOW_S = 20.0  # a kill explains an honest no-verdict within this long after it (5 s budget, restart, load)
_LOST_S = 180.0  # no step returned for this long: an answer is lost
# growth allowed from the first sample after warm-up to the last: absolute + relative
_ALLOW = {"procs": (3, 0.0), "fds": (24, 0.10), "rss_mb": (64.0, 0.30)}


# ----------------------------------------------------------------------------- processes


def _children(pid: int) -> list[int]:
    """Every thread's children: a process started from another thread is listed under that thread only."""
    out = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out += [int(p) for p in f.read().split()]
        except OSError:
            pass
    return out


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        for child in _children(todo.pop()):
            out.append(child)
            todo.append(child)
    return out


def _fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def pool_servers(directory: str) -> list[int]:
    """Processes holding a file of the pool directory open: the pool servers (each holds its ``.alive`` lock)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            links = [os.readlink(f"/proc/{name}/fd/{fd}") for fd in os.listdir(f"/proc/{name}/fd")]
        except OSError:
            continue
        if any(link.startswith(directory + os.sep) and link.endswith(".alive") for link in links):
            found.append(int(name))
    return found


class Census:
    """Processes, fds and RSS by kind, read from /proc."""

    def __init__(self, directory: str, serve_pid: int | None) -> None:
        self.directory, self.serve_pid = directory, serve_pid

    def kinds(self) -> dict[str, list[int]]:
        me = os.getpid()
        servers = pool_servers(self.directory)
        pool_workers = [p for s in servers for p in _descendants(s)]
        serve = [] if self.serve_pid is None else [self.serve_pid]
        serve_tree = set(serve + [p for s in serve for p in _descendants(s)])
        mine = [p for p in _descendants(me) if p not in serve_tree and p not in servers and p not in pool_workers]
        return {"driver": [me], "async": mine, "serve": sorted(serve_tree), "pool_server": servers,
                "pool_workers": pool_workers}

    def sample(self) -> dict[str, Any]:
        kinds = self.kinds()
        pids = [p for group in kinds.values() for p in group]
        return {"procs": len(pids), "fds": sum(_fds(p) for p in pids),
                "rss_mb": {kind: round(sum(_rss_mb(p) for p in group), 1) for kind, group in kinds.items()}}


# ----------------------------------------------------------------------------- the tally


class Tally:
    """Verdicts by kind, honest no-verdicts by cause, and every failure, shared by the players and the killer."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.verdicts: collections.Counter[str] = collections.Counter()
        self.no_verdicts: collections.Counter[str] = collections.Counter()
        self.kills: list[tuple[float, str]] = []
        self.failures: list[str] = []
        self.steps = 0
        self.last_step = time.monotonic()

    def kill(self, what: str) -> None:
        with self.lock:
            self.kills.append((time.monotonic(), what))

    def record(self, where: str, kind: str, info: dict[str, Any]) -> None:
        """One graded answer: ``kind`` is gold, wrong or hostile."""
        verdict = str(info.get("verdict"))
        now = time.monotonic()
        with self.lock:
            self.steps += 1
            self.last_step = now
            self.verdicts[verdict] += 1
            if info.get("no_verdict"):
                cause = str(info.get("cause", ""))[:60]
                self.no_verdicts[f"{verdict}: {cause}"] += 1
                explained = any(0 <= now - t <= _KILL_WINDOW_S for t, _ in self.kills)
                if kind != "hostile" and not explained:
                    self.failures.append(f"{where}: an honest answer ({kind}) got a no-verdict with no kill in the "
                                         f"{_KILL_WINDOW_S:.0f} s before it: {verdict} ({cause})")
                return
            if kind == "gold" and verdict != "correct":
                self.failures.append(f"{where}: a gold was graded {verdict!r} ({info.get('cause')})")
            if kind == "wrong" and verdict == "correct":
                self.failures.append(f"{where}: a wrong answer was graded correct")


def _pick(rng: random.Random) -> str:
    roll = rng.random()
    return "gold" if roll < 0.45 else "wrong" if roll < 0.75 else "hostile"


# ----------------------------------------------------------------------------- players


def _play_vector(where: str, envs: Any, twin: Any, answers_for: dict[str, Any], stop: threading.Event,
                 tally: Tally, seed: int) -> None:
    """Round after round: every sub-env reset to its own seed, then one batch of gold, wrong or hostile answers."""
    rng = random.Random(seed)
    round_ = 0
    while not stop.is_set():
        seeds = [seed + round_ * envs.num_envs + i for i in range(envs.num_envs)]
        envs.reset(seed=seeds)
        kinds, answers = [], []
        for s in seeds:
            twin.reset(seed=s)
            kind = _pick(rng)
            kinds.append(kind)
            answers.append(answers_for[kind](twin.unwrapped.gold_answers()[0], rng))
        _, _, _, _, infos = envs.step(answers)
        for i, kind in enumerate(kinds):
            tally.record(where, kind, {k: infos[k][i] for k in ("verdict", "no_verdict", "cause") if k in infos})
        round_ += 1
    envs.close()
    twin.close()


QED_ANSWERS = {"gold": lambda gold, rng: f"The answer is \\boxed{{{gold}}}.", "wrong": lambda gold, rng: QED_WRONG,
               "hostile": lambda gold, rng: rng.choice(QED_HOSTILE)}
RG_ANSWERS = {"gold": lambda gold, rng: f"<answer>{gold}</answer>",
              "wrong": lambda gold, rng: f"<answer>{RG_WRONG}</answer>",
              "hostile": lambda gold, rng: f"<answer>{rng.choice(RG_HOSTILE)}</answer>"}


def play_threaded(stop: threading.Event, tally: Tally, seed: int) -> None:
    import gymnasium as gym

    from gym_integrity.vector import make_threaded_vec

    _play_vector("threaded", make_threaded_vec("QEDMath-v0", THREADED_ENVS, **QED_KWARGS),
                 gym.make("QEDMath-v0", **QED_KWARGS), QED_ANSWERS, stop, tally, seed)


def play_async(stop: threading.Event, tally: Tally, seed: int) -> None:
    import gymnasium as gym

    import gym_integrity

    envs = gym.make_vec("ReasoningGym-v0", ASYNC_ENVS, vectorization_mode="async",
                        vector_kwargs=gym_integrity.ASYNC_VECTOR_KWARGS, **RG_KWARGS)
    _play_vector("async", envs, gym.make("ReasoningGym-v0", **RG_KWARGS), RG_ANSWERS, stop, tally, seed)


def play_served(stop: threading.Event, tally: Tally, seed: int, url: str) -> None:
    import gymnasium as gym

    from gym_integrity.integrations.openenv import RemoteEnv

    rng = random.Random(seed)
    env = RemoteEnv(url)
    twin = gym.make("QEDMath-v0", **QED_KWARGS)
    round_ = 0
    while not stop.is_set():
        s = seed + round_
        env.reset(seed=s)
        twin.reset(seed=s)
        kind = _pick(rng)
        _, _, _, _, info = env.step(QED_ANSWERS[kind](twin.unwrapped.gold_answers()[0], rng))
        tally.record("served", kind, info)
        round_ += 1
    env.close()
    twin.close()


def killer(stop: threading.Event, tally: Tally, directory: str, every_s: float, seed: int) -> None:
    rng = random.Random(seed)
    while not stop.wait(every_s):
        servers = pool_servers(directory)
        if not servers:
            continue
        server = rng.choice(servers)
        workers = _descendants(server)
        if workers and rng.random() >= 0.25:
            victim, what = rng.choice(workers), "worker"
        else:
            victim, what = server, "pool server"
        try:
            os.kill(victim, signal.SIGKILL)
        except ProcessLookupError:
            continue
        tally.kill(what)


# ----------------------------------------------------------------------------- the run


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int) -> subprocess.Popen | None:
    try:
        import openenv  # noqa: F401
    except ImportError:
        print("serve: the [serve] extra (openenv) is not installed: no served session", flush=True)
        return None
    cli = os.path.join(os.path.dirname(sys.executable), "gym-integrity")
    command = [cli, "serve", "QEDMath-v0", "--port", str(port), "--env-kwargs", json.dumps(QED_KWARGS)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"serve exited at start: {process.stderr.read()[-2000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit("serve did not listen within 120 s")


def grown(first: dict[str, Any], last: dict[str, Any]) -> list[str]:
    """What grew past its allowance from ``first`` to ``last``."""
    out = []
    pairs = [("procs", first["procs"], last["procs"]), ("fds", first["fds"], last["fds"])]
    pairs += [(f"rss_mb[{k}]", v, last["rss_mb"].get(k, 0.0)) for k, v in first["rss_mb"].items()]
    for name, a, b in pairs:
        absolute, relative = _ALLOW[name.split("[")[0]]
        if b > a + absolute + relative * a:
            out.append(f"{name} grew from {a} to {b} (allowed {a + absolute + relative * a:.0f})")
    return out


def _line(t: float, sample: dict[str, Any], tally: Tally) -> str:
    with tally.lock:
        verdicts = ", ".join(f"{k} {v}" for k, v in sorted(tally.verdicts.items()))
        nv = "; ".join(f"{k} x{v}" for k, v in sorted(tally.no_verdicts.items())) or "none"
        kills = collections.Counter(what for _, what in tally.kills)
    rss = " ".join(f"{k} {v:.0f}" for k, v in sample["rss_mb"].items())
    return (f"t={t:5.0f}s procs {sample['procs']:3d}  fds {sample['fds']:4d}  rss MB: {rss}\n"
            f"        steps {tally.steps}  kills {dict(kills)}  verdicts: {verdicts}\n"
            f"        no-verdicts: {nv}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=None)
    parser.add_argument("--seconds", type=float, default=None)
    parser.add_argument("--sample-every", type=float, default=None,
                        help="seconds (default: 60, or a sixth of a shorter run)")
    parser.add_argument("--kill-every", type=float, default=10.0, help="seconds between kills (0: none)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    total = args.seconds if args.seconds is not None else 60.0 * (args.minutes if args.minutes is not None else 1.0)
    if total <= 0:
        parser.error("--minutes/--seconds: expected a positive duration")
    every = args.sample_every or min(60.0, max(5.0, total / 6))

    directory = tempfile.mkdtemp(prefix="gym-integrity-soak-")
    os.environ["GYM_INTEGRITY_POOL_DIR"] = directory  # one machine pool for the driver, its sub-envs and serve
    os.environ["GYM_INTEGRITY_POOL_SCOPE"] = "machine"
    os.environ.setdefault("GYM_INTEGRITY_POOL_GRACE_S", "1")

    import gym_integrity  # noqa: F401  (after the pool settings)

    port = _free_port()
    server = start_server(port)
    tally, stop = Tally(), threading.Event()
    errors: list[str] = []

    def guarded(play):
        def run(*play_args):
            try:
                play(*play_args)
            except BaseException as exc:  # noqa: BLE001  (a player's crash is a finding, reported below)
                errors.append(f"{play.__name__}: {type(exc).__name__}: {exc}")
                stop.set()
        return run

    plays = [(play_threaded, (stop, tally, args.seed)), (play_async, (stop, tally, args.seed + 10_000))]
    if server is not None:
        plays.append((play_served, (stop, tally, args.seed + 20_000, f"http://127.0.0.1:{port}")))
    players = [threading.Thread(target=guarded(play), args=play_args, name=play.__name__, daemon=True)
               for play, play_args in plays]
    for p in players:
        p.start()
    if args.kill_every > 0:
        threading.Thread(target=killer, args=(stop, tally, directory, args.kill_every, args.seed), daemon=True).start()

    census = Census(directory, None if server is None else server.pid)
    print(f"soak: {total:.0f} s, sample every {every:.0f} s, kill every {args.kill_every:.0f} s, pool dir {directory}",
          flush=True)
    start = time.monotonic()
    samples = []
    while not stop.is_set() and time.monotonic() - start < total:
        stop.wait(min(every, total - (time.monotonic() - start)))
        with tally.lock:
            silent = time.monotonic() - tally.last_step
        if silent > _LOST_S:
            errors.append(f"lost: no step returned for {silent:.0f} s")
            break
        samples.append(census.sample())
        print(_line(time.monotonic() - start, samples[-1], tally), flush=True)
    stop.set()
    for p in players:
        p.join(_LOST_S)
        if p.is_alive():
            errors.append(f"lost: {p.name} did not finish its last step within {_LOST_S:.0f} s")
    if server is not None:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            errors.append("serve did not exit within 30 s of SIGINT")

    failures = list(errors) + list(tally.failures)
    if len(samples) >= 3:
        failures += grown(samples[1], samples[-1])
    time.sleep(float(os.environ["GYM_INTEGRITY_POOL_GRACE_S"]) + 4.0)  # the pool server's grace after its last client
    left = [n for n in os.listdir(directory) if n.endswith(".sock")]
    if left:
        failures.append(f"pool sockets left after close: {left}")
    if pool_servers(directory):
        failures.append(f"pool servers still running after close: {pool_servers(directory)}")
    print(f"done: {tally.steps} steps, {len(tally.kills)} kills, {sum(tally.no_verdicts.values())} no-verdicts, "
          f"files left: {sorted(os.listdir(directory))}")
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures[:20]))
        return 1
    print("PASSED: nothing grew past its allowance, every honest verdict right, every no-verdict after a kill, "
          "no pool socket or server left")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""``gym-integrity serve`` episodes/s and latency over OpenEnv's protocol, beside OpenEnv's own reasoning_gym server.

One episode is ``reset(seed=i)`` and one answer step, as in
bench_reasoning_gym.py, but over the wire: each server runs in its own
process (uvicorn, ``ws="websockets-sansio"``, 127.0.0.1, a free port), and
every contender is driven by the same client in this process: openenv's
``GenericEnvClient`` (dict actions), its async API, with N sessions (one
WebSocket each) running episodes concurrently on one event loop. Reported per
contender: episodes/s (median over rounds), p50/p99 of each ``reset`` and
``step`` call as the client sees it (pooled over rounds) and the server
process's CPU per episode (from /proc: far less noisy than wall time on a
shared machine). Rounds are short, the contenders at one session count run
back to back, and the order rotates, so drift on a shared machine hits all
contenders alike; ratios are medians of per-round ratios.

Contenders:

* ours: ``build_app("ReasoningGym-v0", {"dataset": "leg_counting"})`` (the
  app ``gym-integrity serve`` runs); ``reset(seed=i)``, then
  ``{"text": "<answer>42</answer>"}``;
* OpenEnv's reasoning_gym server, if ``reasoning_gym_env`` is importable
  (``pip install openenv``, then OpenEnv's ``envs/reasoning_gym_env`` as
  the package ``reasoning_gym_env``; it is not on PyPI): its
  ``ReasoningGymEnvironment`` under openenv's ``create_app``, as its
  ``server/app.py`` builds it but with room for N sessions (that file ships
  ``max_concurrent_envs=1``). Per-episode seeds the way OpenEnv's own harness
  asks for them, ``reset(dataset_name="leg_counting", dataset_config={},
  seed=i, size=1)``, then ``{"answer": "42"}``; and its cheapest path, one
  dataset configured per session and a bare ``reset()`` cycling through it
  (no per-episode seed). The pure-MCP version of that package (reset takes
  ``task_name``; the question comes from the ``get_question`` tool) is
  measured too, with three calls per episode (reset, ``get_question``,
  ``submit_answer``; both tool calls count as steps), its env class marked
  ``SUPPORTS_CONCURRENT_SESSIONS`` (each session has its own env; that
  version does not say so, and openenv then refuses a second session);
* ours in process: ``gym_integrity.make("ReasoningGym-v0",
  dataset="leg_counting")``, the same episodes, for the over-the-wire cost.

Nothing is installed at run time: a peer that is not importable is skipped
with the line that installs it.

Target: ours >= 1.0x OpenEnv's server in episodes/s at each session count
(same client, same machine, same run), against its same episodes
(``reset(seed=i)``); the line against its bare ``reset()`` is printed too.
The over-the-wire cost per episode against in process is reported, not
bounded. ``--quick`` is a smoke run for the tests: most of its time is the
servers' start-up (importing openenv, which brings gradio).

``--baseline-python PYTHON`` runs our server a second time with another
interpreter (another install of gym-integrity, e.g. a clone at an older
commit in its own venv), side by side in the same rotated rounds: before and
after a change, with the ratio of episodes/s and the server CPU per episode.

``--neighbour``: what one session's expensive resets cost another. One
client (its own process) picks an expensive dataset (futoshiki; a maze at the
largest grid and distance the server allows; a 1500x1500 spiral_matrix; a maze
at grid 260) with OpenEnv's reset arguments and then resets it in a loop (a
server that refuses the config, as ours bounds it, gets the refused reset again
and again: the "refused" column);
meanwhile a probe session plays leg_counting episodes for ``--seconds``, and
the table gives the probe's round trips (p50/p99/max) and the expensive
client's resets, with a quiet row (no expensive client) for reference.
Target: the probe's p99 <= 50 ms.

    python benchmarks/bench_serve.py [--episodes 100] [--rounds 30] [--sessions 1,4] [--quick]
    python benchmarks/bench_serve.py --neighbour [--seconds 15] [--baseline-python /path/to/other/venv/bin/python]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import inspect
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Callable

ENV_ID = "ReasoningGym-v0"
DATASET = "leg_counting"
OURS_ANSWER = "<answer>42</answer>"
OPENENV_INSTALL = ("pip install openenv-core, then OpenEnv's envs/reasoning_gym_env as the package "
                   "reasoning_gym_env (it is not on PyPI)")
SERVE_INSTALL = "pip install 'gym-integrity[serve]' (openenv-core)"
#: Size of the dataset an OpenEnv session cycles through with a bare reset() (lazily generated).
OPENENV_CYCLE_SIZE = 100_000
#: The neighbour mode's expensive resets: (dataset, config); a client picks one, then resets in a loop.
#: A server bounds every numeric option by its own (else the dataset's default), so the last two are refused:
#: that client then sends its refused reset in a loop, the most a client can make the server do with it.
EXPENSIVE = {"futoshiki": ("futoshiki", {}),
             "maze_at_bound": ("maze", {"min_grid_size": 10, "max_grid_size": 10, "min_dist": 10, "max_dist": 10}),
             "spiral_matrix_1500": ("spiral_matrix", {"min_n": 1500, "max_n": 1500}),
             "maze_260": ("maze", {"min_grid_size": 260, "max_grid_size": 260})}
BASELINE_LABEL = " (baseline)"

# ---------------------------------------------------------------- the server processes


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def openenv_flavour() -> str:
    """``"classic"`` (ReasoningGymAction, reset(dataset_name, ...)), ``"mcp"`` (reset(task_name, ...), tools), or
    the reason it is not measured."""
    try:
        from reasoning_gym_env.server.reasoning_gym_environment import ReasoningGymEnvironment
    except ImportError as exc:
        return f"OpenEnv's reasoning_gym_env not importable ({exc}): {OPENENV_INSTALL}"
    params = inspect.signature(ReasoningGymEnvironment.reset).parameters
    if "dataset_name" in params:
        try:
            from reasoning_gym_env.models import ReasoningGymAction, ReasoningGymObservation  # noqa: F401
        except ImportError as exc:
            return f"OpenEnv's reasoning_gym_env has no models ({exc}); not measured"
        return "classic"
    if "task_name" in params:
        return "mcp"
    return f"OpenEnv's reasoning_gym_env reset{inspect.signature(ReasoningGymEnvironment.reset)} is not one this knows"


def build_server_app(kind: str, max_sessions: int) -> Any:
    """The ASGI app of one contender's server (runs in the server process)."""
    if kind == "ours":
        from gym_integrity.integrations.openenv import build_app

        # The neighbour mode's expensive datasets are open to clients' resets; the episodes measured are
        # DATASET's either way.
        return build_app(ENV_ID, {"dataset": DATASET}, max_sessions=max_sessions,
                         client_datasets=(DATASET,) + tuple(name for name, _ in EXPENSIVE.values()))
    from openenv.core.env_server.http_server import create_app
    from reasoning_gym_env.server.reasoning_gym_environment import ReasoningGymEnvironment

    if kind == "openenv-classic":
        from reasoning_gym_env.models import ReasoningGymAction, ReasoningGymObservation

        return create_app(ReasoningGymEnvironment, ReasoningGymAction, ReasoningGymObservation,
                          env_name="reasoning_gym", max_concurrent_envs=max_sessions)
    if kind == "openenv-mcp":
        from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation

        # Each session builds its own env (nothing shared), but this version does not declare it, and openenv-core
        # refuses more than one session for an env that does not.
        env_cls = type("ReasoningGymEnvironment", (ReasoningGymEnvironment,), {"SUPPORTS_CONCURRENT_SESSIONS": True})
        return create_app(env_cls, CallToolAction, CallToolObservation, env_name="reasoning_gym_env",
                          max_concurrent_envs=max_sessions)
    raise ValueError(f"unknown server kind {kind!r}")


def serve_child(kind: str, port: int, max_sessions: int) -> None:
    import uvicorn

    app = build_server_app(kind, max_sessions)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", ws="websockets-sansio")


class Server:
    """One server in its own process: the same uvicorn settings for every kind. ``python`` runs it (another
    install of gym-integrity, for ``--baseline-python``); ``label`` names it in the table."""

    def __init__(self, kind: str, max_sessions: int, log_dir: str, python: str = sys.executable,
                 label: str = "") -> None:
        self.kind = kind
        self.label = label
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = os.path.join(log_dir, f"{kind}{label.replace(' ', '_')}.log")
        env = {k: v for k, v in os.environ.items() if k != "ENABLE_WEB_INTERFACE"}  # no Gradio UI on either side
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [python, os.path.abspath(__file__), "--_server", kind, "--_port", str(self.port),
                 "--_max-sessions", str(max_sessions)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)

    def wait_ready(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                urllib.request.urlopen(self.url + "/health", timeout=1).read()
                return
            except OSError:
                time.sleep(0.1)
        self.stop()
        with open(self.log_path, encoding="utf-8", errors="replace") as log:
            tail = log.read()[-2000:]
        raise RuntimeError(f"the {self.kind} server did not start (exit {self.proc.returncode}):\n{tail}")

    def cpu_seconds(self) -> float | None:
        """User + system CPU of the server process so far (Linux /proc), or None."""
        try:
            with open(f"/proc/{self.proc.pid}/stat", encoding="ascii") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

# ---------------------------------------------------------------- contenders


@dataclass
class Contender:
    name: str
    sessions: int  # 0: in process
    server: Server | None = None
    reset_kwargs: Callable[[int], dict] = lambda seed: {}
    actions: tuple[dict, ...] = ()
    configure: dict | None = None  # a reset sent once per session before timing (OpenEnv's cycling dataset)
    check: Callable[[Any, Any], str | None] = lambda reset, step: None
    peer_of: str | None = None  # for ours: the name of the OpenEnv contender at the same session count
    clients: list = field(default_factory=list)
    inproc: Any = None
    rates: list[float] = field(default_factory=list)
    resets: list[float] = field(default_factory=list)
    steps: list[float] = field(default_factory=list)
    cpu: float = 0.0
    cpu_episodes: int = 0


def _check_ours(reset: Any, step: Any) -> str | None:
    if not (reset.observation.get("text") and step.done and step.reward is not None):
        return f"unexpected episode: reset {reset.observation!r}, step done={step.done} reward={step.reward}"
    return None


def _check_openenv_classic(reset: Any, step: Any) -> str | None:
    if not (reset.observation.get("question") and step.done and step.observation.get("score") is not None):
        return f"unexpected episode: reset {reset.observation!r}, step {step.observation!r} done={step.done}"
    return None


def _check_openenv_mcp(reset: Any, step: Any) -> str | None:
    result = step.observation.get("result") or {}
    data = result.get("structured_content") or result.get("data") if isinstance(result, dict) else None
    # Not step.done: over the WebSocket openenv-core awaits MCPEnvironment.step_async, which skips this version's
    # step() override that sets done (in process the same episode ends with done=True).
    if not (isinstance(data, dict) and "score" in data):
        return f"unexpected episode: submit_answer gave {step.observation!r}"
    return None


def ours_contenders(server: Server, sessions: list[int]) -> list[Contender]:
    return [Contender(f"ours{server.label}, over the server ({n} session{'s' * (n > 1)})", n, server,
                      reset_kwargs=lambda s: {"seed": s}, actions=({"text": OURS_ANSWER},), check=_check_ours)
            for n in sessions]


def openenv_contenders(flavour: str, server: Server, sessions: list[int]) -> list[Contender]:
    seeded_rows, cycling_rows = [], []
    for n in sessions:
        plural = "s" * (n > 1)
        if flavour == "classic":
            seeded = Contender(f"OpenEnv reasoning_gym, reset(seed=i) ({n} session{plural})", n, server,
                               reset_kwargs=lambda s: {"dataset_name": DATASET, "dataset_config": {}, "seed": s,
                                                       "size": 1},
                               actions=({"answer": "42"},), check=_check_openenv_classic)
            cycling = Contender(f"OpenEnv reasoning_gym, bare reset() ({n} session{plural})", n, server,
                                actions=({"answer": "42"},), check=_check_openenv_classic,
                                configure={"dataset_name": DATASET, "dataset_config": {}, "seed": 0,
                                           "size": OPENENV_CYCLE_SIZE})
        else:
            tools = ({"type": "call_tool", "tool_name": "get_question", "arguments": {}},
                     {"type": "call_tool", "tool_name": "submit_answer", "arguments": {"answer": "42"}})
            seeded = Contender(f"OpenEnv reasoning_gym MCP, reset(seed=i) ({n} session{plural})", n, server,
                               reset_kwargs=lambda s: {"task_name": DATASET, "seed": s, "dataset_size": 1},
                               actions=tools, check=_check_openenv_mcp)
            cycling = Contender(f"OpenEnv reasoning_gym MCP, bare reset() ({n} session{plural})", n, server,
                                actions=tools, check=_check_openenv_mcp)
        seeded_rows.append(seeded)
        cycling_rows.append(cycling)
    return seeded_rows + cycling_rows

# ---------------------------------------------------------------- measuring


async def connect(contender: Contender) -> None:
    from openenv.core import GenericEnvClient

    for _ in range(contender.sessions):
        client = GenericEnvClient(base_url=contender.server.url)
        await client.connect()
        if contender.configure is not None:
            await client.reset(**contender.configure)
        contender.clients.append(client)


async def _session(client: Any, contender: Contender, seeds: range, resets: list[float], steps: list[float]) -> None:
    reset_kwargs, actions, clock = contender.reset_kwargs, contender.actions, time.perf_counter
    for seed in seeds:
        t0 = clock()
        await client.reset(**reset_kwargs(seed))
        t1 = clock()
        resets.append(t1 - t0)
        for action in actions:
            t1 = clock()
            await client.step(action)
            steps.append(clock() - t1)


def _inproc_run(env: Any, seeds: range, resets: list[float], steps: list[float]) -> None:
    reset, step, clock = env.reset, env.step, time.perf_counter
    for seed in seeds:
        t0 = clock()
        reset(seed=seed)
        t1 = clock()
        resets.append(t1 - t0)
        step(OURS_ANSWER)
        steps.append(clock() - t1)


async def run_round(contender: Contender, seed0: int, episodes: int, record: bool) -> None:
    resets: list[float] = []
    steps: list[float] = []
    cpu0 = contender.server.cpu_seconds() if contender.server else None
    start = time.perf_counter()
    if contender.server is None:
        _inproc_run(contender.inproc, range(seed0, seed0 + episodes), resets, steps)
    else:
        n = contender.sessions
        await asyncio.gather(*(_session(client, contender, range(seed0 + k, seed0 + episodes, n), resets, steps)
                               for k, client in enumerate(contender.clients)))
    wall = time.perf_counter() - start
    cpu1 = contender.server.cpu_seconds() if contender.server else None
    if record:
        contender.rates.append(episodes / wall)
        contender.resets += resets
        contender.steps += steps
        if cpu0 is not None and cpu1 is not None:
            contender.cpu += cpu1 - cpu0
            contender.cpu_episodes += episodes


async def sanity_check(contender: Contender) -> None:
    """One episode per session, checked for the expected shape (a server that errors would be 'fast')."""
    for k, client in enumerate(contender.clients):
        reset = await client.reset(**contender.reset_kwargs(10_000_000 + k))
        step = None
        for action in contender.actions:
            step = await client.step(action)
        problem = contender.check(reset, step)
        if problem:
            raise RuntimeError(f"{contender.name}: {problem}")


async def measure(contenders: list[Contender], episodes: int, rounds: int, warmup: int) -> None:
    for c in contenders:
        if c.server is not None:
            await connect(c)
            await sanity_check(c)
        await run_round(c, 0, warmup, record=False)
    # Contenders at the same session count run next to each other (a burst of load from another process hits the
    # pair, and their per-round ratio survives it); the order rotates each round and reverses every other one.
    order = sorted(contenders, key=lambda c: (c.sessions == 0, c.sessions))
    for r in range(rounds):
        seed0 = 1_000_000 * (r + 1)
        k = r % len(order)
        sequence = order[k:] + order[:k]
        for c in reversed(sequence) if r % 2 else sequence:
            await run_round(c, seed0, episodes, record=True)
    for c in contenders:
        for client in c.clients:
            await client.close()

# ---------------------------------------------------------------- neighbour mode: one session's expensive resets


async def hog(url: str, scenario: str) -> None:
    """A client that picks an expensive dataset and resets it in a loop; prints ``ready`` once configured, then
    each reset's outcome and seconds (the parent reads them), until it is killed. A server that refuses the
    config gets the same configuring reset again and again."""
    from openenv.core import GenericEnvClient

    name, config = EXPENSIVE[scenario]
    configure = {"dataset_name": name, "dataset_config": config, "seed": 0, "size": 1000}
    client = GenericEnvClient(base_url=url, message_timeout_s=600)
    await client.connect()
    try:
        await client.reset(**configure)
        refused = False
    except Exception:  # an error frame: the server bounds this config
        refused = True
    print("ready", flush=True)
    while True:
        t0 = time.perf_counter()
        try:
            await (client.reset(**configure) if refused else client.reset())
            outcome = "ok"
        except Exception:
            outcome = "refused"
        print(f"{outcome} {time.perf_counter() - t0:.6f}", flush=True)


@dataclass
class NeighbourRow:
    server: Server
    scenario: str  # "quiet" or a key of EXPENSIVE
    calls: list[float] = field(default_factory=list)  # the probe's reset and step round trips
    hog_resets: list[float] = field(default_factory=list)
    hog_refused: int = 0


async def probe(url: str, seconds: float, calls: list[float]) -> None:
    """Episodes of the cheap dataset (reset(seed=i), one answer) for ``seconds``, each call's round trip kept."""
    from openenv.core import GenericEnvClient

    client = GenericEnvClient(base_url=url, message_timeout_s=600)
    await client.connect()
    clock, seed = time.perf_counter, 0
    end = clock() + seconds
    try:
        while clock() < end:
            t0 = clock()
            await client.reset(seed=seed)
            t1 = clock()
            await client.step({"text": OURS_ANSWER})
            calls += [t1 - t0, clock() - t1]
            seed += 1
    finally:
        await client.close()


def wait_quiet(server: Server) -> None:
    """Until the server's event loop answers /health again and a reset still generating has likely ended."""
    time.sleep(3.0)
    server.wait_ready(timeout=600)


def measure_neighbour(row: NeighbourRow, seconds: float) -> None:
    hog_proc = None
    if row.scenario != "quiet":
        hog_proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--_hog", row.scenario,
                                     "--_url", row.server.url], stdout=subprocess.PIPE, text=True)
        assert hog_proc.stdout is not None
        line = hog_proc.stdout.readline()
        if line.strip() != "ready":
            hog_proc.kill()
            raise RuntimeError(f"the {row.scenario} client did not start (it said {line!r})")
    try:
        asyncio.run(probe(row.server.url, seconds, row.calls))
    finally:
        if hog_proc is not None:
            hog_proc.kill()
            out, _ = hog_proc.communicate()
            outcomes = [line.split() for line in out.splitlines() if line.strip()]
            row.hog_resets = [float(seconds) for _, seconds in outcomes]
            row.hog_refused = sum(outcome == "refused" for outcome, _ in outcomes)
    wait_quiet(row.server)


def run_neighbour(args: argparse.Namespace) -> None:
    load = machine_load()
    with tempfile.TemporaryDirectory(prefix="bench_serve_") as log_dir:
        servers = [Server("ours", 4, log_dir)]
        if args.baseline_python:
            servers.append(Server("ours", 4, log_dir, python=args.baseline_python, label=BASELINE_LABEL))
        rows = []
        try:
            for server in servers:
                server.wait_ready()
            for k, scenario in enumerate(["quiet", *EXPENSIVE]):
                for server in servers if k % 2 == 0 else servers[::-1]:
                    row = NeighbourRow(server, scenario)
                    measure_neighbour(row, args.seconds)
                    rows.append(row)
        finally:
            for server in servers:
                server.stop()
    (l1, l5, l15), busy = load
    busy_text = f", {busy * 100:.0f}% of the CPUs busy just before the run" if busy is not None else ""
    print(f"{ENV_ID} over OpenEnv's protocol: another session's round trips while one client resets an expensive "
          f"dataset in a loop ({args.seconds:g} s each)")
    print(f"  probe: reset(seed=i) + one answer on {DATASET}, one session; the expensive client: its own process, "
          "reset(dataset_name=..., dataset_config=..., seed=0, size=1000), then bare reset() in a loop")
    print(f"  machine: {os.cpu_count()} CPUs, load average {l1:.2f} / {l5:.2f} / {l15:.2f}{busy_text}")
    print(f"  {'server':22s} {'expensive client':20s} {'probe calls':>11s} {'p50 ms':>8s} {'p99 ms':>9s} "
          f"{'max ms':>9s} {'s in calls > 50 ms':>18s} {'its resets':>10s} {'refused':>8s} {'reset s p50':>11s}")
    for row in rows:
        name = f"ours{row.server.label}"
        hog_p50 = f"{statistics.median(row.hog_resets):11.3f}" if row.hog_resets else f"{'-':>11s}"
        # p99 counts calls, so a few multi-second stalls among many quick calls hide in it: the time the probe
        # spent in slow calls says how long it was held.
        stalled = sum(c for c in row.calls if c > 0.050)
        print(f"  {name:22s} {row.scenario:20s} {len(row.calls):11d} {percentile(row.calls, 50) * 1e3:8.2f} "
              f"{percentile(row.calls, 99) * 1e3:9.2f} {max(row.calls) * 1e3:9.2f} {stalled:18.2f} "
              f"{len(row.hog_resets):10d} {row.hog_refused:8d} {hog_p50}")
    print("  target: the probe's p99 <= 50 ms while the expensive client runs:")
    for row in rows:
        if row.scenario != "quiet":
            p99 = percentile(row.calls, 99) * 1e3
            print(f"    ours{row.server.label}, {row.scenario}: {p99:.1f} ms {'met' if p99 <= 50 else 'NOT met'}")

# ---------------------------------------------------------------- reporting


def quartiles(values: list[float]) -> tuple[float, float, float]:
    if len(values) < 2:
        return values[0], values[0], values[0]
    q1, q2, q3 = statistics.quantiles(values, n=4)
    return q1, q2, q3


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]


def machine_load() -> tuple[tuple[float, float, float], float | None]:
    """(load averages, share of all CPUs busy over half a second) before the run."""
    load = os.getloadavg()
    try:
        def sample() -> tuple[int, int]:
            with open("/proc/stat", encoding="ascii") as f:
                values = [int(v) for v in f.readline().split()[1:]]
            return sum(values), values[3] + values[4]  # total, idle + iowait

        total0, idle0 = sample()
        time.sleep(0.5)
        total1, idle1 = sample()
        busy = 1 - (idle1 - idle0) / max(1, total1 - total0)
    except OSError:
        busy = None
    return load, busy


def print_report(contenders: list[Contender], args: argparse.Namespace, notes: list[str],
                 load: tuple[tuple[float, float, float], float | None]) -> None:
    by_name = {c.name: c for c in contenders}
    ncpu = os.cpu_count() or 1
    print(f"{ENV_ID} {DATASET} over OpenEnv's protocol: episode = reset(seed=i) + one answer; "
          f"{args.episodes} episodes x {args.rounds} rotated rounds per contender")
    print("  servers: openenv-core's server, uvicorn ws=websockets-sansio, one process each on 127.0.0.1; client "
          "(all rows): openenv-core's GenericEnvClient, async, one event loop in this process")
    (l1, l5, l15), busy = load
    busy_text = f", {busy * 100:.0f}% of the CPUs busy just before the run" if busy is not None else ""
    print(f"  machine: {ncpu} CPUs, load average {l1:.2f} / {l5:.2f} / {l15:.2f}{busy_text}")
    if l1 >= 0.5 * ncpu or (busy is not None and busy >= 0.25):
        print("  NOTE: the machine was busy with other processes before this run: episodes/s and latencies are "
              "noisy; the server CPU column and the per-round ratios are the steadier figures")
    header = (f"  {'contender':52s} {'episodes/s':>10s} {'reset p50/p99 ms':>17s} {'step p50/p99 ms':>16s} "
              f"{'srv CPU us/ep':>13s}  ratio vs OpenEnv (quartiles)")
    print(header)
    for c in contenders:
        rate = statistics.median(c.rates)
        reset = f"{percentile(c.resets, 50) * 1e3:.3f}/{percentile(c.resets, 99) * 1e3:.3f}"
        step = f"{percentile(c.steps, 50) * 1e3:.3f}/{percentile(c.steps, 99) * 1e3:.3f}"
        cpu = f"{c.cpu / c.cpu_episodes * 1e6:13.0f}" if c.cpu_episodes else f"{'-':>13s}"
        ratio = ""
        if c.peer_of in by_name:
            q1, q2, q3 = quartiles([a / b for a, b in zip(c.rates, by_name[c.peer_of].rates)])
            ratio = f"{q2:5.2f}x ({q1:.2f} .. {q3:.2f})"
        elif c.name.startswith("OpenEnv") and "reset(seed=i)" in c.name:
            ratio = " 1.00x"
        print(f"  {c.name:52s} {rate:10,.0f} {reset:>17s} {step:>16s} {cpu}  {ratio}")
    for note in notes:
        print(f"  skipped: {note}")

    inproc = by_name.get("ours, in process")
    wire = [c for c in contenders if c.name.startswith("ours, over") and c.sessions == 1]
    if inproc and wire:
        w = wire[0]
        cost = [(1 / a - 1 / b) * 1e6 for a, b in zip(w.rates, inproc.rates)]
        slow = [b / a for a, b in zip(w.rates, inproc.rates)]
        q1, q2, q3 = quartiles(cost)
        print(f"  over the wire (1 session) vs in process: {q2:+.0f} us per episode (quartiles {q1:+.0f} .. "
              f"{q3:+.0f}); in process is {statistics.median(slow):.1f}x the episodes/s")

    for c in contenders:
        base = by_name.get(c.name.replace("ours,", f"ours{BASELINE_LABEL},", 1))
        if c.name.startswith("ours, over") and base is not None:
            q1, q2, q3 = quartiles([a / b for a, b in zip(c.rates, base.rates)])
            print(f"  ours / ours{BASELINE_LABEL} ({c.sessions} session{'s' * (c.sessions > 1)}): {q2:.2f}x the "
                  f"episodes/s (quartiles {q1:.2f} .. {q3:.2f}), server CPU per episode "
                  f"{c.cpu / max(1, c.cpu_episodes) * 1e6:.0f} vs {base.cpu / max(1, base.cpu_episodes) * 1e6:.0f} us")

    print("  targets:")
    ours = [c for c in contenders if c.name.startswith("ours, over")]
    for c in ours:
        label = f"{c.sessions} session{'s' * (c.sessions > 1)}"
        if c.peer_of not in by_name:
            print(f"    ours / OpenEnv >= 1.0x ({label}): n/a (OpenEnv's reasoning_gym_env not installed)")
            continue
        for peer in [c.peer_of] + [p.name for p in contenders if p.name.startswith("OpenEnv") and
                                   "bare reset()" in p.name and p.sessions == c.sessions]:
            q1, q2, q3 = quartiles([a / b for a, b in zip(c.rates, by_name[peer].rates)])
            what = "same episodes, reset(seed=i)" if peer == c.peer_of else "its bare reset(), no per-episode seed"
            verdict = "met" if q2 >= 1.0 else "NOT met"
            print(f"    ours / OpenEnv >= 1.0x ({label}, {what}): {q2:.2f}x (quartiles {q1:.2f} .. {q3:.2f}) "
                  f"{verdict}")


def parse_sessions(text: str) -> list[int]:
    values = sorted({int(v) for v in text.split(",") if v.strip()})
    if not values or values[0] < 1:
        raise argparse.ArgumentTypeError("sessions: a comma-separated list of counts >= 1, e.g. 1,4")
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100, help="episodes per contender per round (all sessions)")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--sessions", type=parse_sessions, default=[1, 4],
                        help="concurrent sessions, comma-separated (default 1,4)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 40 episodes x 3 rounds (start-up takes most of it)")
    parser.add_argument("--neighbour", action="store_true",
                        help="measure another session's round trips while one client resets expensive datasets")
    parser.add_argument("--seconds", type=float, default=15.0, help="--neighbour: seconds per measurement")
    parser.add_argument("--baseline-python", metavar="PYTHON",
                        help="also run our server with this interpreter (another install of gym-integrity), side "
                             "by side: before and after a change")
    parser.add_argument("--_server", help=argparse.SUPPRESS)
    parser.add_argument("--_port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--_max-sessions", type=int, default=8, help=argparse.SUPPRESS)
    parser.add_argument("--_hog", help=argparse.SUPPRESS)
    parser.add_argument("--_url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args._server:
        serve_child(args._server, args._port, args._max_sessions)
        return
    if args._hog:
        asyncio.run(hog(args._url, args._hog))
        return
    if args.neighbour:
        run_neighbour(args)
        return
    if args.quick:
        args.episodes, args.rounds = 40, 3
    if importlib.util.find_spec("openenv") is None:
        sys.exit(f"bench_serve needs openenv-core (openenv is not importable): {SERVE_INSTALL}")
    # A session per (contender, client), all open for the whole run: room for every one of them.
    max_sessions = 2 * sum(args.sessions) + 1
    warmup = 10 if args.quick else 50

    load = machine_load()
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench_serve_") as log_dir:
        # Imports here overlap the servers' start-up: importing openenv-core (it brings gradio) takes seconds.
        servers = [Server("ours", max_sessions, log_dir)]
        baseline = None
        if args.baseline_python:
            baseline = Server("ours", max_sessions, log_dir, python=args.baseline_python, label=BASELINE_LABEL)
        try:
            flavour = openenv_flavour()
            if flavour in ("classic", "mcp"):
                servers.append(Server(f"openenv-{flavour}", max_sessions, log_dir))
            else:
                notes.append(flavour)
            import gym_integrity
            from openenv.core import GenericEnvClient  # noqa: F401

            for server in servers + ([baseline] if baseline else []):
                server.wait_ready()
            contenders = ours_contenders(servers[0], args.sessions)
            if baseline is not None:
                contenders += ours_contenders(baseline, args.sessions)
            if len(servers) > 1:
                peers = openenv_contenders(flavour, servers[1], args.sessions)
                for c in contenders:
                    c.peer_of = next(p.name for p in peers if p.sessions == c.sessions and "reset(seed=i)" in p.name)
                contenders += peers
            inproc = Contender("ours, in process", 0, inproc=gym_integrity.make(ENV_ID, dataset=DATASET))
            contenders.append(inproc)
            asyncio.run(measure(contenders, args.episodes, args.rounds, warmup))
        finally:
            for server in servers + ([baseline] if baseline else []):
                server.stop()
    print_report(contenders, args, notes, load)


if __name__ == "__main__":
    main()

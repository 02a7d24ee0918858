"""docs/serve.md's "Quick start": its client block, run against `gym-integrity serve` as written, prints its transcript."""

from __future__ import annotations

import contextlib
import io
import os
import pathlib
import re
import socket
import subprocess
import sys
import time

import pytest

if os.environ.get("GYM_INTEGRITY_REQUIRE_EXTRAS") == "1":
    import openenv  # noqa: F401  (the [serve] extra is installed: a missing openenv must fail, not skip)
else:
    pytest.importorskip("openenv")

pytestmark = pytest.mark.serve

PAGE = (pathlib.Path(__file__).resolve().parents[3] / "docs" / "serve.md").read_text(encoding="utf-8")
SECTION = PAGE.split("## Quick start", 1)[1].split("\n## ", 1)[0]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_the_serve_quick_start_client_block_prints_its_transcript():
    command = re.search(r"```bash\n(gym-integrity serve .*?)\n```", SECTION).group(1)
    block = re.search(r"```python\n(.*?)```", SECTION, re.S).group(1)
    transcript = re.search(r"A real run.*?```\n(.*?)```", SECTION, re.S).group(1).splitlines()
    port = _free_port()
    # The command as written (its JSON argument unquoted the way the shell would), on a free port.
    args = ["serve", "ReasoningGym-v0", "--env-kwargs", '{"dataset": "leg_counting"}', "--port", str(port)]
    assert command == "gym-integrity serve ReasoningGym-v0 --env-kwargs '{\"dataset\": \"leg_counting\"}' --port 8010"
    server = subprocess.Popen([sys.executable, "-m", "gym_integrity", *args], stderr=subprocess.PIPE, text=True)
    try:
        banner = [server.stderr.readline().strip() for _ in range(2)]  # printed just before uvicorn listens
        assert banner == [line.replace("8765", str(port)) for line in transcript[:2]]
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            assert time.monotonic() < deadline, "the server did not start listening"
            time.sleep(0.1)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block.replace("127.0.0.1:8010", f"127.0.0.1:{port}"), "docs/serve.md", "exec"), {})
        assert out.getvalue().splitlines() == transcript[2:]
    finally:
        server.terminate()
        server.wait(timeout=30)

"""Shared fixtures: every test sees the registered ids."""

import os
import pathlib
import sys
import tempfile

# The machine's pool servers (gym_integrity/workers/) of this test run live in a directory of its own: tests
# kill workers and count restarts, which must neither reach nor be reached by other runs or trainers of the user.
if "GYM_INTEGRITY_POOL_DIR" not in os.environ:
    import atexit
    import shutil

    os.environ["GYM_INTEGRITY_POOL_DIR"] = tempfile.mkdtemp(prefix="gi-pools-")

    def _remove_pool_dir(directory: str = os.environ["GYM_INTEGRITY_POOL_DIR"], pid: int = os.getpid()) -> None:
        if os.getpid() == pid:  # not in a forked child that exits normally while the run goes on
            shutil.rmtree(directory, ignore_errors=True)  # removing a socket file stops its server at once

    atexit.register(_remove_pool_dir)

import gym_integrity  # noqa: E402,F401  (registers the ids)

# Test-only envs (fourth_env.py) are imported by module name, as a user's env is from their package: this also
# lets the audit's child processes, which fork from a server started later with this sys.path, import them.
sys.path.insert(0, str(pathlib.Path(__file__).parent / "support"))

"""pytest at the repository root: which modules are collected, and a hard stop for a test that hangs.

The default suite collects every module of the package for its doctests; the
``[serve]`` integration imports openenv-core at import, so without that extra
it is left to ``.ci/run``'s ``[serve]`` step, which installs it.

pytest-timeout's ``signal`` method fails a test that runs too long by raising
in the main thread; a test whose clean-up then blocks again (a lock that a
wedged thread holds) hangs the run, and CI's 90 minutes went by that way once.
So each test also arms faulthandler's watchdog, a C thread that needs no
lock and no Python: ``_HARD_STOP_MARGIN_S`` past the test's timeout it writes
every thread's stack to the real stderr and ends the run with exit status 1.
"""

import faulthandler
import importlib.util
import os

import pytest

_HARD_STOP_MARGIN_S = 120.0
_stderr_copy: list = []  # the real stderr, kept at configure time (a test's fd 2 is pytest's capture file)


def pytest_configure(config: pytest.Config) -> None:
    _stderr_copy.append(os.fdopen(os.dup(2), "w"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: "pytest.Item | None"):
    marker = item.get_closest_marker("timeout")
    given = None if marker is None else marker.args[0] if marker.args else marker.kwargs.get("timeout")
    timeout = float(given if given is not None else item.config.getini("timeout") or 0)
    if timeout > 0 and _stderr_copy:
        faulthandler.dump_traceback_later(timeout + _HARD_STOP_MARGIN_S, exit=True, file=_stderr_copy[0])
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()

collect_ignore = []
if importlib.util.find_spec("openenv") is None:
    collect_ignore.append("gym_integrity/integrations/openenv")
    collect_ignore.append("tests/support/served_app.py")  # the serve tests' helper imports uvicorn
    collect_ignore.append("tests/support/openenv_sums.py")  # an OpenEnv MCP env server
    collect_ignore.append("gym_integrity/audit/adapters_openenv.py")
if importlib.util.find_spec("verifiers") is None:  # the [verifiers] extra
    collect_ignore.append("gym_integrity/integrations/verifiers.py")
    collect_ignore.append("gym_integrity/audit/adapters_verifiers.py")
    collect_ignore.append("tests/support/vf_sums.py")  # a verifiers taskset
    collect_ignore.append("tests/support/vf_runtime_sums.py")  # and one whose reward needs a runtime
if importlib.util.find_spec("skyrl_gym") is None:  # the [skyrl] extra
    collect_ignore.append("gym_integrity/integrations/skyrl.py")
    collect_ignore.append("gym_integrity/audit/adapters_skyrl.py")
if importlib.util.find_spec("gem") is None:  # the [gem] extra
    collect_ignore.append("gym_integrity/audit/adapters_gem.py")
if importlib.util.find_spec("verl") is None:  # the [verl] extra
    collect_ignore.append("gym_integrity/integrations/verl.py")

"""Shared fixtures: every test sees the registered ids."""

import pathlib
import sys

import gym_integrity  # noqa: F401  (registers the ids)

# Test-only envs (fourth_env.py) are imported by module name, as a user's env is from their package: this also
# lets the audit's child processes, which fork from a server started later with this sys.path, import them.
sys.path.insert(0, str(pathlib.Path(__file__).parent))

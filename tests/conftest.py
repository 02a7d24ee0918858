"""Shared fixtures: every test sees the registered ids."""

import gym_integrity  # noqa: F401  (registers the ids)

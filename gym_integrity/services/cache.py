"""ProcessCache's former import path, kept for callers not yet moved: :class:`gym_integrity.workers.ProcessCache`."""

from gym_integrity.workers import ProcessCache

__all__ = ["ProcessCache"]

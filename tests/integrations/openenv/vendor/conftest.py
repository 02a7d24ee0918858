"""Upstream source kept verbatim for the tests that drive it: never collected (its docstring examples assume a server
on localhost:8000, and ``--doctest-modules`` would run them)."""

collect_ignore_glob = ["*"]

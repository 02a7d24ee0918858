"""ProcessCache, the one per-process cache: built once per key, thread-safe, bounded, and empty in a forked child."""

from __future__ import annotations

import threading
import time

import pytest

from forking import in_child
from gym_integrity.workers import ProcessCache
from gym_integrity.services.judge import JudgeConfig, get_judge


def test_concurrent_callers_of_one_key_build_it_once():
    cache: ProcessCache[str, object] = ProcessCache("test")
    calls = []

    def build():
        calls.append(1)
        time.sleep(0.2)
        return object()

    results: list = [None] * 8
    threads = [threading.Thread(target=lambda i=i: results.__setitem__(i, cache.get_or_create("k", build)))
               for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and all(r is results[0] for r in results)


def test_different_keys_build_at_the_same_time():
    cache: ProcessCache[str, str] = ProcessCache("test")
    in_factory = threading.Barrier(2, timeout=5)  # both factories must be running at once to pass it

    def build(key):
        in_factory.wait()
        return key

    results: dict = {}
    threads = [threading.Thread(target=lambda k=k: results.__setitem__(k, cache.get_or_create(k, lambda: build(k))))
               for k in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {"a": "a", "b": "b"}


def test_a_factory_that_raises_stores_nothing():
    cache: ProcessCache[str, int] = ProcessCache("test")
    with pytest.raises(ZeroDivisionError):
        cache.get_or_create("k", lambda: 1 // 0)
    assert "k" not in cache and cache.get_or_create("k", lambda: 2) == 2


def test_bounded_cache_drops_the_least_recently_used():
    cache: ProcessCache[str, int] = ProcessCache("test", max_items=2)
    cache.setdefault("a", 1)
    cache.setdefault("b", 2)
    assert cache.get("a") == 1  # "a" is now the most recent
    cache.setdefault("c", 3)
    assert [k for k, _ in cache.items()] == ["a", "c"]
    assert cache.setdefault("c", 99) == 3  # the first stored value wins
    cache.resize(1)
    assert cache.values() == [3]
    with pytest.raises(ValueError, match="max_items"):
        ProcessCache("test", max_items=0)


def test_a_forked_child_starts_empty_even_if_a_build_was_under_way():
    cache: ProcessCache[str, str] = ProcessCache("test")
    cache.setdefault("parent", "value")
    entered, release = threading.Event(), threading.Event()

    def slow():
        entered.set()
        release.wait(10)
        return "late"

    builder = threading.Thread(target=lambda: cache.get_or_create("k", slow))
    builder.start()
    assert entered.wait(5)  # another thread is inside the factory, holding the key's build lock
    try:
        child = in_child(lambda: (len(cache), cache.get_or_create("k", lambda: "child's own")))
    finally:
        release.set()
        builder.join()
    assert child == (0, "child's own")  # nothing inherited, and no lock left held by a thread that is gone
    assert cache.get("k") == "late" and cache.get("parent") == "value"  # the parent is untouched


def test_a_forked_child_builds_its_own_judge_client():
    config = JudgeConfig.from_value({"base_url": "http://127.0.0.1:9/v1", "model": "m"})
    parent = get_judge(config)
    assert get_judge(config) is parent
    assert in_child(lambda: get_judge(config) is parent) is False

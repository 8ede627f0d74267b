"""The one way the package spreads independent work over threads: in order, every item once, errors kept."""
from __future__ import annotations

import threading

import pytest

from tanbias._threads import default_workers, thread_map


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_thread_map_returns_every_item_in_order(workers):
    seen = []
    lock = threading.Lock()

    def fn(i):
        with lock:
            seen.append(i)
        return i * i

    assert thread_map(fn, 7, workers=workers) == [i * i for i in range(7)]
    assert sorted(seen) == list(range(7))                 # each item once, whatever the threads' order


def test_thread_map_uses_threads_when_asked_and_the_caller_alone_otherwise():
    names = thread_map(lambda i: threading.current_thread().name, 3, workers=1)
    assert set(names) == {threading.current_thread().name}
    barrier = threading.Barrier(2, timeout=10)             # two items that wait for each other: a deadlock in one thread
    assert thread_map(lambda i: barrier.wait() >= 0, 2, workers=2) == [True, True]


def test_thread_map_passes_an_error_on_and_handles_nothing_to_do():
    def fn(i):
        if i == 2:
            raise ValueError("item 2")
        return i

    with pytest.raises(ValueError, match="item 2"):
        thread_map(fn, 4, workers=2)
    assert thread_map(fn, 0, workers=2) == []
    assert default_workers() >= 1

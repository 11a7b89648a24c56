"""The analytics' thread pool: one per process, bounded, whatever the number of calls."""

from __future__ import annotations

import datetime as dt
import os
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from analytics.generated_archive import START, Planned, document
from imixs_archive.analytics._pool import POOL_THREADS, ordered_map
from imixs_archive.analytics.aggregates import aggregate_days
from imixs_archive.archive.snapshots import Archive
from imixs_archive.storage.base import Backend, Row
from imixs_archive.storage.delegating import DelegatingBackend
from imixs_archive.storage.model import Table

LATER = dt.datetime(2024, 1, 1, 12, tzinfo=dt.UTC)


class ThreadsSeen(DelegatingBackend):
    """Delegates to a backend and keeps every thread that read through it."""

    def __init__(self, inner: Backend) -> None:
        super().__init__(inner)
        self.name = "threads-seen"
        self.threads: set[threading.Thread] = set()

    def get(
        self, table: Table, key: Mapping[str, Any], columns: Sequence[str] | None = None
    ) -> Row | None:
        self.threads.add(threading.current_thread())
        return super().get(table, key, columns)

    def scan(
        self, table: Table, partition: Mapping[str, Any] | None = None, **kw: Any
    ) -> Iterator[Row]:
        self.threads.add(threading.current_thread())
        return super().scan(table, partition, **kw)


def _open_files() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_many_calls_read_on_a_bounded_set_of_threads(
    backend: Backend, planned: list[Planned]
) -> None:
    """Each new thread opens a SQLite connection of its own (kept until the store
    closes): a pool per call made the open files of ``serve`` grow with every request."""
    seen = ThreadsSeen(backend)
    with Archive(seen) as archive:
        for p in planned:
            archive.store(document(p))
        last = START + dt.timedelta(days=8)
        aggregate_days(archive, START, last, now=LATER, recompute=True)  # the pool is made
        seen.threads.clear()
        files = _open_files()
        for _ in range(60):  # each call counts the 9 days again, 8 at a time
            aggregate_days(archive, START, last, now=LATER, recompute=True)
        # the pool's threads and this one; a pool per call: a few hundred
        assert len(seen.threads) <= POOL_THREADS + 1, len(seen.threads)
        if backend.name == "sqlite":
            # at most three files (the database, its log, its index of the log) per new
            # connection, and new ones only for pool threads not started yet
            assert _open_files() - files <= 3 * POOL_THREADS


def test_a_call_runs_at_most_its_workers_at_once() -> None:
    lock = threading.Lock()
    running = [0, 0]  # now, most

    def work(item: int) -> int:
        with lock:
            running[0] += 1
            running[1] = max(running[1], running[0])
        time.sleep(0.005)
        with lock:
            running[0] -= 1
        return item * 2

    assert list(ordered_map(work, range(40), workers=3)) == [i * 2 for i in range(40)]
    assert 1 < running[1] <= 3


def test_a_nested_call_runs_on_its_own_thread_not_waiting_for_a_full_pool() -> None:
    """Every pool thread runs an outer item that maps again: the inner calls run on
    their callers' threads (waiting for a pool thread there could wait for ever)."""

    def outer(item: int) -> list[int]:
        return list(ordered_map(lambda x: x + item, range(5), workers=4))

    width = POOL_THREADS
    results = list(ordered_map(outer, range(2 * width), workers=width))
    assert results == [[x + i for x in range(5)] for i in range(2 * width)]


def test_an_error_is_raised_once_the_items_still_running_have_ended() -> None:
    """The caller may close its store right after: nothing of the call may still read."""
    lock = threading.Lock()
    running = [0]

    def work(item: int) -> int:
        with lock:
            running[0] += 1
        try:
            time.sleep(0.05 if item != 2 else 0.0)
            if item == 2:
                raise ValueError("item 2")
            return item
        finally:
            with lock:
                running[0] -= 1

    with pytest.raises(ValueError, match="item 2"):
        list(ordered_map(work, range(20), workers=4, window=4))
    assert running[0] == 0

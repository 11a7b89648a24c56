"""Bounded concurrency for analytics reads, on threads shared by the whole process.

Backends are thread-safe (SQLite: a connection per thread; Cassandra: one session), so
independent reads - day partitions, snapshots - run on a thread pool. The pool is one per
process and lives as long as the process: its at most ``POOL_THREADS`` threads are
reused by every call, so the connections the store opens for them are bounded too (a
pool per call opened a SQLite connection per new thread: ``serve`` ran out of file
descriptors after a few hundred requests). Each call runs at most ``workers`` of its
items at once, and at most ``window`` results are in flight or waiting: memory does not
grow with the input.
"""

from __future__ import annotations

import contextvars
import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TypeVar

In = TypeVar("In")
Out = TypeVar("Out")

DEFAULT_WORKERS = 8
POOL_THREADS = 32
"""Threads of the process's analytics pool, at most (started as calls need them): a
call asking more ``workers`` runs this many items at once."""

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_here = threading.local()


def _mark_thread() -> None:
    _here.in_pool = True


def shared_pool() -> ThreadPoolExecutor:
    """The process's analytics pool (made on first use)."""
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(
                POOL_THREADS, thread_name_prefix="analytics", initializer=_mark_thread
            )
        return _pool


def _forget_pool() -> None:
    """A forked child has none of the parent's threads: it makes a pool of its own."""
    global _pool, _lock
    _pool, _lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_pool)


def ordered_map(
    function: Callable[[In], Out],
    items: Iterable[In],
    *,
    workers: int = DEFAULT_WORKERS,
    window: int | None = None,
) -> Iterator[Out]:
    """``map(function, items)`` on up to ``workers`` threads of the shared pool, results
    in input order.

    ``items`` is consumed lazily, at most ``window`` (default ``4 * workers``) ahead of
    the result being yielded. With ``workers <= 1``, or when called on a thread of the
    pool itself (a nested call: waiting there for the pool could wait for ever),
    everything runs on the caller's thread. An exception in ``function`` is raised here,
    for the item it failed on; items still running then end before it is raised.
    ``function`` runs in a copy of the caller's context (its request budget)."""
    if workers <= 1 or getattr(_here, "in_pool", False):
        yield from map(function, items)
        return
    limit = window or 4 * workers
    running = threading.BoundedSemaphore(min(workers, POOL_THREADS))

    def run(context: contextvars.Context, item: In) -> Out:
        try:
            return context.run(function, item)
        finally:
            running.release()

    pool = shared_pool()
    pending: deque[Future[Out]] = deque()
    try:
        for item in items:
            running.acquire()  # this call's share of the pool: ``workers`` at once
            # each item in a copy of the caller's context: the request's budget
            # (budget.checkpoint) holds on the pool's threads too
            pending.append(pool.submit(run, contextvars.copy_context(), item))
            if len(pending) >= limit:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for future in pending:
            future.cancel()
        wait(pending)  # what started ends before the caller goes on (and closes its store)

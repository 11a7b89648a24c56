"""Bounded concurrency for analytics reads.

Backends are thread-safe (SQLite: a connection per thread; Cassandra: one session), so
independent reads - day partitions, snapshots - run on a small thread pool. At most
``window`` results are in flight or waiting: memory does not grow with the input.
"""

from __future__ import annotations

import contextvars
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

In = TypeVar("In")
Out = TypeVar("Out")

DEFAULT_WORKERS = 8


def ordered_map(
    function: Callable[[In], Out],
    items: Iterable[In],
    *,
    workers: int = DEFAULT_WORKERS,
    window: int | None = None,
) -> Iterator[Out]:
    """``map(function, items)`` on ``workers`` threads, results in input order.

    ``items`` is consumed lazily, at most ``window`` (default ``4 * workers``) ahead of
    the result being yielded. With ``workers <= 1`` everything runs on the caller's thread.
    An exception in ``function`` is raised here, for the item it failed on. ``function``
    runs in a copy of the caller's context (its request budget)."""
    if workers <= 1:
        yield from map(function, items)
        return
    limit = window or 4 * workers
    pending: deque[Future[Out]] = deque()
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="analytics") as pool:
        try:
            for item in items:
                # each item in a copy of the caller's context: the request's budget
                # (budget.checkpoint) holds on the pool's threads too
                pending.append(pool.submit(contextvars.copy_context().run, function, item))
                if len(pending) >= limit:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()

"""Cooperative limits on the work one request started: a time budget and cancellation.

The web app gives each request a :class:`Budget` (``web/limits.py``): it runs out when the
request has taken longer than ``ARCHIVE_REQUEST_TIMEOUT`` seconds without starting its
answer, and is cancelled when the client goes away. Long loops (listings, parsing) call
:func:`checkpoint` between steps, which raises once the budget is spent, so a reader who
leaves or asks for too much stops costing anything. Outside a request (CLI, jobs) there is
no budget and :func:`checkpoint` does nothing.

The budget lives in a context variable: it follows the request into worker threads
(``run_in_threadpool`` copies the context) and into the iterators of streamed answers.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from imixs_archive.errors import ArchiveError


class BudgetSpentError(ArchiveError):
    """The request took longer than its time budget (answered 503)."""


class ClientGoneError(ArchiveError):
    """The client went away: the work it started stops (nobody reads the answer)."""


class Budget:
    """A deadline until the answer starts, and a cancellation flag for the whole request."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self._deadline = None if not seconds else time.monotonic() + seconds
        self._cancelled = threading.Event()
        self._reason = ""

    def cancel(self, reason: str) -> None:
        self._reason = reason
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def answered(self) -> None:
        """The answer has started: from now on only cancellation stops the work (a long
        download is not cut by the time budget)."""
        self._deadline = None

    def no_deadline(self) -> None:
        """The work is bounded otherwise (e.g. by the size of a body already received):
        only cancellation stops it."""
        self._deadline = None

    def check(self) -> None:
        if self._cancelled.is_set():
            raise ClientGoneError(self._reason or "the work was cancelled")
        if self._deadline is not None and time.monotonic() > self._deadline:
            raise BudgetSpentError(
                f"the request took longer than {self.seconds:g} s (ARCHIVE_REQUEST_TIMEOUT): "
                "ask for less (a shorter range, a smaller limit)"
            )


_CURRENT: ContextVar[Budget | None] = ContextVar("imixs_archive_budget", default=None)


def checkpoint() -> None:
    """Raise if the current request's budget is spent or its client gone; else nothing."""
    budget = _CURRENT.get()
    if budget is not None:
        budget.check()


def current() -> Budget | None:
    return _CURRENT.get()


@contextmanager
def within(budget: Budget) -> Iterator[Budget]:
    """Run the block (and what it starts in worker threads) under ``budget``."""
    token = _CURRENT.set(budget)
    try:
        yield budget
    finally:
        _CURRENT.reset(token)

"""Bounded memory for reading large snapshots at once.

A snapshot's items are read whole (the ``snapshots`` row is parsed into a ``Document``),
and one with hundreds of MB of text takes several times that while it is parsed and
written out again. So loads of large rows share a budget: each takes ``WEIGHT`` times its
row's size (rows under ``SMALL`` take nothing) from ``limit`` bytes, waits while the
budget is spent, and gives it back when its ``Document`` is gone (a weak reference's
finalizer: after the answer that streamed it has ended). Waiting honours the request's
time budget and cancellation (``budget.checkpoint``); one row larger than the whole limit
still loads, alone.
"""

from __future__ import annotations

import threading
import time
import weakref

from imixs_archive.budget import checkpoint, current

SMALL = 1024 * 1024
"""Rows below this size are read without the gate."""
WEIGHT = 4
"""Memory per byte of row while its document is parsed, held and written out (measured
about 3.5 for XML answers of text items)."""
DEFAULT_LIMIT = 1024 * 2**20
UNBUDGETED_WAIT = 30.0
"""Seconds a load outside any request waits for the budget before it goes ahead."""


class ReadGate:
    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self.limit = limit
        self._held = 0
        self._changed = threading.Condition()

    @property
    def held(self) -> int:
        return self._held

    def acquire(self, row_size: int) -> int:
        """Take the weight of a row of ``row_size`` bytes (waiting while the budget is
        spent); returns it, to pass to :meth:`release` or :meth:`release_with`."""
        if row_size < SMALL:
            return 0
        weight = min(row_size * WEIGHT, self.limit)
        # Outside a request (CLI, jobs) nothing stops a wait, and a caller holding one
        # large document while loading another would wait for itself: go ahead after a while.
        give_up = None if current() is not None else time.monotonic() + UNBUDGETED_WAIT
        with self._changed:
            while self._held and self._held + weight > self.limit:
                checkpoint()
                if give_up is not None and time.monotonic() > give_up:
                    break
                self._changed.wait(0.05)
            self._held += weight
        return weight

    def release_with(self, owner: object, weight: int) -> None:
        """Give ``weight`` back when ``owner`` is gone."""
        if weight:
            weakref.finalize(owner, self.release, weight)

    def release(self, weight: int) -> None:
        if not weight:
            return
        with self._changed:
            self._held -= weight
            self._changed.notify_all()

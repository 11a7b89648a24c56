"""Findings that compare two tables, read again before they are reported.

A check beside writers sees the store as it changes: it reads a snapshot's row, and by
the time it reads the snapshot's index row a delete may have removed both (the index row
first, on Cassandra, where a delete's rows go one by one), or a store may be half way.
So a check that finds two tables disagreeing does not report it at once: it holds the
finding with a function that reads both again and says whether it still stands (a row
that is gone now was deleted, not lost), and that function runs once the writes of one
store or delete are surely over:

- on SQLite at once: a snapshot's rows are stored and deleted in one transaction, so a
  read after the one that disagreed sees all of that transaction or none of it;
- on Cassandra ``RECHECK_SECONDS`` later, while the walk goes on (held findings are read
  again between two partitions once their time has come; before a walk's place is saved,
  and at its end, every held one is, after waiting for the last).

At most ``HELD`` findings wait at once: memory stays bounded whatever the damage.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from imixs_archive.storage.base import Backend

Again = Callable[[], str | None]
"""Reads the two tables again: the problem when it still stands, else None."""
RECHECK_SECONDS = 2.0
"""How long after a finding a store whose writes are not one transaction is read again."""
HELD = 1000
"""Findings held at once: with more, every held one is read again (after the wait)."""
ATOMIC_STORES = frozenset({"sqlite"})
"""Stores that write a snapshot's rows (or delete them) in one transaction."""


@dataclass(frozen=True)
class Held:
    due: float
    table: str
    where: Any
    again: Again


class Rechecks:
    def __init__(self, delay: float) -> None:
        self.delay = delay
        self._held: deque[Held] = deque()

    @classmethod
    def of(cls, backend: Backend) -> Rechecks:
        return cls(0.0 if backend.name in ATOMIC_STORES else RECHECK_SECONDS)

    def __len__(self) -> int:
        return len(self._held)

    def hold(self, table: str, where: Any, again: Again) -> None:
        self._held.append(Held(time.monotonic() + self.delay, table, where, again))

    def due(self, *, wait: bool = False) -> list[Held]:
        """The held findings whose time has come (``wait``: every one, after waiting for
        the last), taken off the list."""
        if wait and self._held:
            time.sleep(max(0.0, self._held[-1].due - time.monotonic()))
        now = time.monotonic()
        found = []
        while self._held and (wait or self._held[0].due <= now):
            found.append(self._held.popleft())
        return found

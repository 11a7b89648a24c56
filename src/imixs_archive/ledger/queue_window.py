"""What a sequencing round reads of the ledger's queue: whole minutes, up to a limit, and,
for a subject whose last entry read the store does not bear out, the entries queued about
it after those.

A round reads the queue from its oldest unfinished minute on, a few thousand entries at a
time (``Sequencer.run``'s limit). A subject's last entry read is checked against the store
(the snapshot there, or gone): one whose change never completed waits, then is dropped.
But when the round stopped at its limit, or the entry is old enough to be dropped, a later
entry about the subject may stand in the queue beyond what the round read: a snapshot
imported without a running ``serve`` and deleted minutes later, sequenced only then, has
its store in the first round's minutes and its deletion in a later one. Its store is not
a change that never happened: the deletion explains why the store no longer shows it.
:class:`Later` finds such entries, reading each further minute of the queue once a round,
and keeping only the rows of the subjects the round read.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from imixs_archive.ledger.books import LedgerBooks, Queued


@dataclass
class Window:
    """The queue as a round read it."""

    pending: dict[str, list[Queued]] = field(default_factory=dict)
    """The entries read, by subject."""
    last_read: int = 0
    """The last minute read."""
    cut: bool = False
    """The round stopped at its limit: later minutes hold more."""


def read_window(books: LedgerBooks, first: int, last: int, limit: int) -> Window:
    """The queue's minutes from ``first`` to ``last``, whole, until ``limit`` entries are
    read."""
    window = Window(last_read=first - 1)
    slot, read = first, 0
    while slot <= last:
        for queued in books.queued(slot):
            window.pending.setdefault(queued.subject, []).append(queued)
            read += 1
        window.last_read = slot
        slot += 1
        if read >= limit and slot <= last:
            window.cut = True
            break
    return window


class Later:
    """The entries queued about the subjects a round read after the ones it read (see the
    module's text); each minute of the queue is read at most once."""

    def __init__(self, books: LedgerBooks, window: Window, clock: Callable[[], int]) -> None:
        """``clock``: the time now (epoch ms): the queue is read up to the next minute."""
        self._books = books
        self._window = window
        self._clock = clock
        self._subjects: Collection[str] = window.pending.keys()
        self._minutes: dict[int, dict[str, list[Queued]]] = {}

    def after(self, queued: Queued) -> list[Queued]:
        """The entries queued about ``queued``'s subject that were made after the last one
        the round read, in the order made (damaged rows left out)."""
        last = max(q.entry_key for q in self._window.pending[queued.subject])
        found: list[Queued] = []
        for slot in range(queued.slot, self._clock() // 60_000 + 2):
            for other in self._minute(slot).get(queued.subject, ()):
                if other.entry_key > last and other.entry is not None:
                    found.append(other)
        return sorted(found, key=lambda q: q.entry_key)

    def _minute(self, slot: int) -> dict[str, list[Queued]]:
        rows = self._minutes.get(slot)
        if rows is None:
            rows = {}
            for queued in self._books.queued(slot):
                if queued.subject in self._subjects:
                    rows.setdefault(queued.subject, []).append(queued)
            self._minutes[slot] = rows
        return rows

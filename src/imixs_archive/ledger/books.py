"""The ledger's tables (``Archive.ledger``): its queue, its log, its tree's tiles (and the
node rows of logs older than the tiles), the last entry about each subject, its
checkpoints and its small books.

What each table holds and why is in ``storage/model.py`` (Q23 to Q28); how they are used
in ``ledger/`` (the sequencer, ledger verify, proofs) and ``docs/ledger.md``. This module
only reads and writes rows, typed; it decides nothing.
"""

from __future__ import annotations

import itertools
import logging
import os
import secrets
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass

from imixs_archive.ledger.entries import Entry
from imixs_archive.storage.base import Backend
from imixs_archive.storage.books import Books
from imixs_archive.storage.model import (
    ARCHIVE_LEDGER_CHECKPOINTS,
    ARCHIVE_LEDGER_ENTRIES,
    ARCHIVE_LEDGER_HEAD,
    ARCHIVE_LEDGER_NODES,
    ARCHIVE_LEDGER_QUEUE,
    ARCHIVE_LEDGER_SUBJECTS,
    ARCHIVE_LEDGER_TILES,
)
from imixs_archive.timezones import from_epoch_ms, now_ms

log = logging.getLogger(__name__)

BEFORE_LEDGER = "before-ledger"
"""The book saying the store held snapshots before the ledger existed (written when the
store's layout is raised, ``archive/versions.py``): until a ``ledger init`` (or a ledger
verify) has logged them, they are reported as not logged."""
BUCKET_BITS = 14
"""Log entries (and nodes of one level) to a partition: 16,384."""
_RANK = {"stored": 0, "found": 0, "hold-placed": 0, "deleted": 1, "hold-released": 1}
"""Of two changes to one subject in the same millisecond, the store comes first."""


class _Made:
    """The end of a queue key: this process's token and its count of entries queued, so
    that two entries one process queues in one millisecond keep the order they were made in
    (a random end ordered them by chance); another process's entries in that millisecond
    sort beside them by token, as no order between processes is known."""

    def __init__(self) -> None:
        self._token = secrets.token_hex(6)
        self._count = itertools.count()
        os.register_at_fork(after_in_child=self._renew)  # before the child's threads run

    def _renew(self) -> None:
        """A new process (a fork): a token of its own."""
        self._token = secrets.token_hex(6)

    def next(self) -> str:
        return f"{self._token}.{next(self._count):012d}"


_MADE = _Made()
"""This process's queue keys' ends: its token and a counter."""


@dataclass(frozen=True)
class Queued:
    """An entry waiting to be sequenced."""

    slot: int
    subject: str
    entry_key: str
    entry: Entry | None
    """None: a queue row that is not an entry (damaged); it is dropped."""


@dataclass(frozen=True)
class Logged:
    """Entry number ``idx`` of the log, as stored (its text and leaf hash)."""

    idx: int
    text: str
    leaf: bytes


@dataclass(frozen=True)
class Subject:
    """The last log entry about a subject."""

    subject: str
    idx: int
    kind: str
    digest: str


def bucket(idx: int) -> int:
    return idx >> BUCKET_BITS


class LedgerBooks:
    """Typed rows of the ledger's tables in one store."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend
        self.head = Books(backend, ARCHIVE_LEDGER_HEAD)
        """The ledger's small books by name (``tree``, ``lease``, ``verify`` ...: what each
        holds is in ``storage/model.py``); ``tree`` moves only by compare and set."""

    def grouped(self) -> AbstractContextManager[None]:
        """The writes of the block in one commit where the store can (``Backend.grouped``)."""
        return self._backend.grouped()

    # ---- the queue ----------------------------------------------------------------------

    def enqueue(self, entry: Entry) -> tuple[int, str]:
        """Queue an entry, with the change it records (before the change's last row); its
        place in the queue (slot, key)."""
        place, wait = self.enqueue_soon(entry)
        wait()
        return place

    def enqueue_soon(self, entry: Entry) -> tuple[tuple[int, str], Callable[[], None]]:
        """Start queueing an entry: its place, and what waits until it is queued
        (``Backend.put_soon``)."""
        slot = now_ms() // 60_000
        key = f"{entry.at:013d}.{_RANK[entry.kind]}.{_MADE.next()}"
        row = {"slot": slot, "subject": entry.subject, "entry_key": key, "entry": entry.queued()}
        return (slot, key), self._backend.put_soon(ARCHIVE_LEDGER_QUEUE, [row])

    def first_slot(self) -> int | None:
        """The oldest minute of the queue holding an entry (a pass over the whole queue:
        only when a ledger starts, to take in what was queued before)."""
        first: int | None = None
        for row in self._backend.scan(ARCHIVE_LEDGER_QUEUE, columns=["slot"]):
            slot = int(row["slot"])
            first = slot if first is None else min(first, slot)
        return first

    def queued(self, slot: int) -> Iterator[Queued]:
        """The entries queued in one minute (``slot``), by subject and in the order made."""
        for row in self._backend.scan(ARCHIVE_LEDGER_QUEUE, {"slot": slot}):
            try:
                entry: Entry | None = Entry.from_queue(row["entry"] or "")
            except ValueError:
                entry = None
            if entry is not None and entry.subject != row["subject"]:
                entry = None
            yield Queued(slot, row["subject"], row["entry_key"], entry)

    def unqueue(self, slot: int, subject: str, entry_key: str) -> None:
        key = {"slot": slot, "subject": subject, "entry_key": entry_key}
        self._backend.delete(ARCHIVE_LEDGER_QUEUE, key)

    # ---- the log ------------------------------------------------------------------------

    def write_entry(self, idx: int, text: str, leaf: bytes) -> Logged | None:
        """Write entry ``idx`` unless it is written: None when this call wrote it, else
        the entry there (never changed: the log is written once)."""
        row = {"bucket": bucket(idx), "idx": idx, "entry": text, "hash": leaf}
        found = self._backend.put_if_absent(ARCHIVE_LEDGER_ENTRIES, row)
        return None if found is None else Logged(idx, found["entry"], found["hash"])

    def entry(self, idx: int) -> Logged | None:
        row = self._backend.get(ARCHIVE_LEDGER_ENTRIES, {"bucket": bucket(idx), "idx": idx})
        return None if row is None else Logged(idx, row["entry"], row["hash"])

    def entries(self, start: int = 0, stop: int | None = None) -> Iterator[Logged]:
        """The stored entries from number ``start`` on, in order, up to ``stop``
        (exclusive; None: as long as they follow each other without a gap). Entries
        missing in between are skipped: callers check the numbers."""
        expected = start
        part = bucket(start)
        while True:
            after = {"idx": start - 1} if start > part << BUCKET_BITS else None
            rows = self._backend.scan(ARCHIVE_LEDGER_ENTRIES, {"bucket": part}, start_after=after)
            for row in rows:
                idx = int(row["idx"])
                if stop is not None and idx >= stop:
                    return
                if stop is None and idx != expected:
                    return  # a gap: the entries past the head end there
                expected = idx + 1
                yield Logged(idx, row["entry"], row["hash"])
            part += 1
            if stop is None and expected != part << BUCKET_BITS:
                return  # the partition ended short: so does the run
            if stop is not None and part << BUCKET_BITS >= stop:
                return

    # ---- the tree's nodes ---------------------------------------------------------------

    def put_nodes(self, nodes: Iterable[tuple[int, int, bytes]]) -> None:
        """(level, index, hash) of complete subtrees (level >= 1); written again as they
        are when a sequencer repeats the work of one that stopped."""
        rows = [
            {"level": level, "bucket": bucket(idx), "idx": idx, "hash": digest}
            for level, idx, digest in nodes
        ]
        if rows:
            self._backend.put(ARCHIVE_LEDGER_NODES, rows)

    def node_run(self, level: int, start: int, count: int) -> list[bytes]:
        """The hashes of the node rows ``start`` to ``start + count`` (exclusive) of a
        level >= 1, in order, as far as they follow each other (one partition read)."""
        found: list[bytes] = []
        part = {"level": level, "bucket": bucket(start)}
        after = {"idx": start - 1} if start & ((1 << BUCKET_BITS) - 1) else None
        rows = self._backend.scan(ARCHIVE_LEDGER_NODES, part, start_after=after, limit=count)
        for row in rows:
            if int(row["idx"]) != start + len(found):
                break
            found.append(row["hash"])
        return found

    # ---- the tree's tiles ---------------------------------------------------------------

    def put_tiles(self, tiles: Iterable[tuple[int, int, bytes]]) -> None:
        """(level, index, hashes) of tiles, each row keyed by its width (the hashes it
        holds); written again as they are when a sequencer repeats another's work."""
        rows = [
            {"level": level, "idx": idx, "width": len(data) // 32, "hashes": data}
            for level, idx, data in tiles
        ]
        if rows:
            self._backend.put(ARCHIVE_LEDGER_TILES, rows)

    def tile(self, level: int, idx: int) -> bytes | None:
        """The widest row of a tile (its hashes), or None when it has none."""
        part = {"level": level, "idx": idx}
        for row in self._backend.scan(ARCHIVE_LEDGER_TILES, part, descending=True, limit=1):
            data: bytes = row["hashes"]
            return data
        return None

    def tile_widths(self, level: int, idx: int) -> list[int]:
        part = {"level": level, "idx": idx}
        rows = self._backend.scan(ARCHIVE_LEDGER_TILES, part, columns=["width"])
        return [int(row["width"]) for row in rows]

    def drop_tile(self, level: int, idx: int, width: int) -> None:
        self._backend.delete(ARCHIVE_LEDGER_TILES, {"level": level, "idx": idx, "width": width})

    # ---- the last entry about each subject ----------------------------------------------

    def subject(self, subject: str) -> Subject | None:
        row = self._backend.get(ARCHIVE_LEDGER_SUBJECTS, {"subject": subject})
        return None if row is None else _subject(row)

    def put_subjects(self, subjects: Iterable[Subject]) -> None:
        rows = [
            {"subject": s.subject, "idx": s.idx, "kind": s.kind, "digest": s.digest}
            for s in subjects
        ]
        if rows:
            self._backend.put(ARCHIVE_LEDGER_SUBJECTS, rows)

    def subjects(self) -> Iterator[Subject]:
        for row in self._backend.scan(ARCHIVE_LEDGER_SUBJECTS):
            yield _subject(row)

    # ---- checkpoints --------------------------------------------------------------------

    def add_checkpoint(self, size: int, note: str, written: int) -> None:
        row = {"year": from_epoch_ms(written).year, "size": size, "note": note, "written": written}
        self._backend.put(ARCHIVE_LEDGER_CHECKPOINTS, [row])

    def checkpoints(self, year: int) -> Iterator[tuple[int, str, int]]:
        """(size, note, written) of the checkpoints written in a year, newest first."""
        rows = self._backend.scan(ARCHIVE_LEDGER_CHECKPOINTS, {"year": year}, descending=True)
        for row in rows:
            yield int(row["size"]), str(row["note"]), int(row["written"])


def _subject(row: dict[str, object]) -> Subject:
    return Subject(str(row["subject"]), int(str(row["idx"])), str(row["kind"]), str(row["digest"]))

"""The archive: snapshots in, snapshots out, snapshots deleted.

Write order for one snapshot (every step an idempotent upsert, so a re-run after a crash
at any point completes it): pieces (while the XML streams in), each file's piece refs,
``documents`` rows and ``archive_files`` (see ``filestore/files.py``), then
``snapshots_by_document`` (none for an empty file: it has no bytes to keep, and one
partition would get a row per snapshot) with ``archive_snapshot_files``, then
``snapshots_by_uniqueid``
with ``snapshots_by_modified`` (the rows of a step written at once, a step begun when
the one before it is durable: a delete finds a snapshot by its ``snapshots_by_uniqueid``
row and its files by ``archive_snapshot_files``), the day's change stamp (``days.py``)
and last the ``snapshots`` row: its presence means complete.

Nothing of a process instance under legal hold (``holds.py``) is deleted: ``delete``
refuses with ``LegalHoldError`` before it changes anything, and the history cleanup keeps
the snapshots it would have deleted, with a warning.

Deleting drops references only: index rows, the ``snapshots`` row, the snapshot's rows in
``snapshots_by_document``, then ``archive_snapshot_files`` (which lets a re-run find the
files of a snapshot whose row is already gone) and last its ``snapshots_by_uniqueid`` row.
Files and pieces nothing refers to any more are removed by the collector
(``filestore/gc.py``), never
by a delete: so a delete cannot race an ingest that reuses them, in this process or any
other, and needs no lock.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import os
import secrets
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol, Unpack

from imixs_archive.archive import snapshot_reads as reads
from imixs_archive.archive.content_digest import StoredDigest, stored_digest
from imixs_archive.archive.day_reads import MAX_DAYS_KNOWN, DayReads
from imixs_archive.archive.days import (
    record_day,
    stamp_day,
)
from imixs_archive.archive.fact_book import FactBook
from imixs_archive.archive.facts import (
    Carriers,
    count_fact,
    days_about,
    drop_fact,
    put_fact,
)
from imixs_archive.archive.gc_runs import GcAsked, GcRun, gc_part
from imixs_archive.archive.holds import Hold, Holds, holds_of
from imixs_archive.archive.index_reads import SnapshotIndex
from imixs_archive.archive.instance_newest import NewestSnapshots
from imixs_archive.archive.instance_runs import (
    InstanceJob,
    InstanceRun,
    OpenRun,
    RunAsked,
    open_instance_run,
    run_over_instances,
)
from imixs_archive.archive.last_runs import LastRuns
from imixs_archive.archive.read_gate import DEFAULT_LIMIT as DEFAULT_READ_MEMORY
from imixs_archive.archive.read_gate import ReadGate
from imixs_archive.archive.rebuild import rebuild_range
from imixs_archive.archive.scrub import ScrubReport, scrub_slice, scrub_status
from imixs_archive.archive.service_state import ServiceState
from imixs_archive.archive.snapshot_xml import (
    delete_snapshot_xml,
    load_row,
    put_snapshot_xml,
    render_inline,
    xml_size,
)
from imixs_archive.archive.snapshot_xml import digest as xml_digest
from imixs_archive.archive.stats import Stats, collect_stats
from imixs_archive.archive.store_door import StoreDoor
from imixs_archive.archive.stored_xml import StoredXml, load_with_files
from imixs_archive.archive.verify import WALKS, Walk, verify
from imixs_archive.archive.verify_report import VerifyReport
from imixs_archive.archive.verify_runs import VerifyAsked, VerifyRun, verify_part
from imixs_archive.document.conventions import (
    FILE_ITEM,
    FileEntry,
    implausible_time,
    item_integer,
    iter_files,
    modified_day,
    not_a_snapshot,
    origin_id,
    require_snapshot_id,
    snapshot_millis,
    snapshot_order,
)
from imixs_archive.document.model import BinaryStream, Document
from imixs_archive.document.xml_reader import BinarySink, iter_xml_documents
from imixs_archive.document.xml_safe import require_xml_safe
from imixs_archive.document.xml_writer import iter_xml
from imixs_archive.errors import (
    ArchiveError,
    DocumentError,
    IntegrityError,
    LegalHoldError,
    NotFoundError,
    StoreError,
)
from imixs_archive.filestore.content import IngestCounters, IngestedContent, PendingContent
from imixs_archive.filestore.reading import EMPTY_MD5, StoredContent
from imixs_archive.filestore.store import FileStore, store_cuts
from imixs_archive.ledger.books import LedgerBooks
from imixs_archive.ledger.entries import DELETED, ELSEWHERE, FOUND, Entry
from imixs_archive.ledger.store_entry import StoreEntry
from imixs_archive.storage.base import Backend, Row
from imixs_archive.storage.model import (
    ARCHIVE_SNAPSHOT_FILES,
    SNAPSHOTS,
    SNAPSHOTS_BY_DOCUMENT,
    SNAPSHOTS_BY_MODIFIED,
    SNAPSHOTS_BY_UNIQUEID,
)
from imixs_archive.sync.records import SyncRecords
from imixs_archive.timezones import now_ms

HISTORY_HORIZON_MS = 3600 * 1000
"""How far before its window the history cleanup looks for snapshots to delete."""
DEFAULT_GC_GRACE = 24 * 3600.0
"""Seconds (the setting ``ARCHIVE_GC_GRACE``, see ``config.py``)."""
log = logging.getLogger(__name__)


@dataclass
class StoreResult:
    """What archiving one snapshot did."""

    snapshot_id: str
    new: bool
    logical_bytes: int = 0
    new_bytes: int = 0
    files: int = 0
    deleted: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


Failure = tuple[str, ArchiveError]
"""Where (input and document) and why one document could not be archived."""


class Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


@dataclass
class DeleteResult:
    snapshot_id: str
    existed: bool


class Archive:
    """Archive operations over one backend; the same code for SQLite and Cassandra."""

    def __init__(
        self,
        backend: Backend,
        *,
        gc_grace: float = DEFAULT_GC_GRACE,
        read_memory: int = DEFAULT_READ_MEMORY,
        owns_backend: bool = False,
        actor: str = "",
        file_cuts: str = "auto",
        java_writes: bool = False,
    ) -> None:
        """``gc_grace``: the collector's grace period (seconds); an ingest that takes more
        than half of it checks the pieces it reused before it refers to them.
        ``read_memory``: bytes that loads of large snapshots may take together
        (``read_gate.py``). ``owns_backend``: closing the archive closes the store too (an
        archive the runtime opened, ``runtime.py``). ``actor``: who this process acts for, in
        the ledger's entries where a caller names no one (``user@host``). ``file_cuts``:
        ``ARCHIVE_FILE_CUTS`` (``auto``: by the store, ``store_cuts``). ``java_writes``:
        ``ARCHIVE_JAVA_WRITES`` (``StoreDoor.java_writes``). Programs build it with the
        runtime."""
        self.backend = backend
        self._owns_backend = owns_backend
        """The store: for the archive layer's own modules; nothing above it reaches it."""
        self.file_cuts = file_cuts if file_cuts != "auto" else store_cuts(backend)
        """The pieces new files are stored in (``ARCHIVE_FILE_CUTS``): ``java`` where the
        Java service may store files into the same keyspace, else ``content``."""
        self.files = FileStore(backend, confirmed_for=gc_grace / 4, cuts=self.file_cuts)
        """The piece store: every file this archive reads or writes goes through it. A
        piece it confirmed stored is trusted for a quarter of the grace period (on
        Cassandra, see ``PieceStore``): with an ingest of up to half of it, every
        reference is written within the grace period of the look that found it."""
        self.actor = actor
        self.ledger = LedgerBooks(backend)
        """The ledger's tables: its queue, log, tree and checkpoints (``ledger/``)."""
        self.holds = Holds(backend, self.ledger, actor)
        self.state = ServiceState(backend)
        """The service state ('0' row): the sync point, restore.*, resync.*."""
        self.sync_records = SyncRecords(backend)
        """The sync's books: claims, failures, gone snapshots, catch-up, counters."""
        self.runs = LastRuns(backend)
        """The last run of ``verify`` and ``backup``, whichever process ran it."""
        self.max_ingest = gc_grace / 2
        self._days_indexed: set[dt.date] = set()
        """Days whose ``archive_modified_days`` row this process wrote (rows never removed):
        not written again with every snapshot of the day."""
        self._carriers = Carriers()
        self._newest = NewestSnapshots()
        """What this process stored lately: a store needs no read to know it is not first."""
        who = actor if "@" in actor else f"{actor or 'archive'}@{socket.gethostname()}"
        self._holder = f"{who}:{os.getpid()}:{secrets.token_hex(4)}"
        """This archive object, as the leases of its jobs name it."""
        self.read_gate = ReadGate(read_memory)
        """Memory for loading large snapshots at once (``read_gate.py``)."""
        # Typed reads and doors, so no layer above reads table rows or takes the store:
        self.storage = StoreDoor(backend, java_writes=java_writes)
        """What the store says of itself, a copy of it, a bulk load (``store_door.py``)."""
        self.index = SnapshotIndex(backend)
        """Walks over the snapshots: by instance, by file, in store order (``index_reads.py``)."""
        self.days = DayReads(
            backend, functools.partial(self.load, with_files=False), self._days_indexed
        )
        """The day index, the days' change stamps, snapshots by day (``day_reads.py``)."""
        self.facts = FactBook(backend)
        """The snapshots' facts, by day, checked and counted again (``fact_book.py``)."""

    def verify(
        self,
        progress: Callable[[str], None] | None = None,
        checks: Sequence[Walk] = (),
    ) -> VerifyReport:
        """Re-read everything and check it against its hashes and references
        (``verify.py``); ``checks``: the walks of the layers above, after the archive's
        (``services/checks.py`` gives them)."""
        return verify(self.backend, progress, (*WALKS, *checks))

    def verify_part(
        self,
        part: int = 1,
        parts: int = 1,
        *,
        checks: Sequence[Walk] = (),
        **asked: Unpack[VerifyAsked],
    ) -> VerifyRun:
        """Verify everything (or part ``part`` of ``parts``), going on where a stopped
        run ended unless ``restart`` (``verify_runs.py``; ``full``: the store's file checked
        thoroughly; ``checks``: as :meth:`verify`)."""
        walks = (*WALKS, *checks)
        return verify_part(
            self.backend, holder=self._holder, part=part, parts=parts, walks=walks, **asked
        )

    def gc_part(self, part: int = 1, parts: int = 1, **asked: Unpack[GcAsked]) -> GcRun:
        """Collect what nothing uses (or part ``part`` of ``parts`` of it), going on where a
        stopped run ended unless ``restart`` (``gc_runs.py``)."""
        return gc_part(self.backend, holder=self._holder, part=part, parts=parts, **asked)

    def run_over_instances(
        self,
        job: InstanceJob,
        *,
        keep_book: bool = True,
        seen: Callable[[], None] | None = None,
        **asked: Unpack[RunAsked],
    ) -> InstanceRun:
        """Walk every process instance (or part ``part`` of ``parts`` of them) through
        ``job``, going on where a stopped run of ``name`` ended (``instance_runs.py``)."""
        return run_over_instances(
            self.backend, job, holder=self._holder, keep_book=keep_book, seen=seen, **asked
        )

    def open_instance_run(self, **asked: Unpack[RunAsked]) -> AbstractContextManager[OpenRun]:
        """Part ``part`` of ``parts`` of a run over the instances that walks on its own, its
        lease held for the block (``instance_runs.py``) by this run alone: a second run of
        the same part started meanwhile, in this process too (the scheduled backup and one
        asked from the API), is refused, never a race of two over one book."""
        holder = f"{self._holder}.{secrets.token_hex(3)}"
        return open_instance_run(self.backend, holder=holder, **asked)

    def scrub_slice(
        self,
        *,
        period: float,
        interval: float,
        rate: float = 0.0,
        stop: threading.Event | None = None,
        checks: Sequence[Walk] = (),
    ) -> ScrubReport:
        """Check the slice of the scrub's cycle that is due now (``scrub.py``; ``checks``:
        as :meth:`verify`)."""
        return scrub_slice(
            self.backend,
            period=period,
            interval=interval,
            holder=self._holder,
            rate=rate * 1_000_000,
            stop=stop,
            walks=(*WALKS, *checks),
        )

    def scrub_status(self, period: float) -> dict[str, Any]:
        """Where the scrub stands: its cycle, coverage and findings (``scrub.py``)."""
        return scrub_status(self.backend, period)

    def stats(self) -> Stats:
        """Totals from the tables (``stats.py``)."""
        return collect_stats(self.backend)

    def close(self) -> None:
        """Stop the piece threads; close the store when this archive owns it (else it is
        the caller's, and stays open)."""
        self.files.close()
        if self._owns_backend:
            self.backend.close()

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- in -------------------------------------------------------------------------

    def ingest(
        self, source: Readable | Iterable[bytes], *, name: str = "<input>"
    ) -> Iterator[StoreResult | Failure]:
        """Archive every snapshot of a streamed XML ``<document>`` or ``<data>``.

        A document that cannot be archived is yielded as a failure and the next one goes
        on; input that is not well-formed XML ends the stream with a ``DocumentError``;
        an unreachable store raises ``StoreError`` (nothing is skipped then)."""

        for where, doc in self.documents(source, name=name):
            try:
                yield self.store(doc)
            except StoreError:
                raise
            except ArchiveError as exc:
                yield (where, exc)

    def documents(
        self, source: Readable | Iterable[bytes], *, name: str = "<input>"
    ) -> Iterator[tuple[str, Document]]:
        """The snapshots of a streamed XML ``<document>`` or ``<data>``, parsed, each with
        where it is (``name (document n, $uniqueid)``, for an error); the bytes of their
        files go to the piece threads as they are read, and :meth:`store` takes them.
        Input that is not well-formed XML ends the stream with a ``DocumentError``."""

        def sink(_name: str) -> BinarySink:
            # Counters of their own: the reader may be documents ahead of the archive,
            # so a file's bytes are added to its snapshot's counters when it is stored.
            return self.files.sink()

        stream: Any = source
        for index, doc in enumerate(iter_xml_documents(stream, file_sink=sink), 1):
            uid = doc.get_first("$uniqueid")
            yield f"{name} (document {index}{f', {uid}' if uid else ''})", doc

    def store(
        self,
        doc: Document,
        counters: IngestCounters | None = None,
        *,
        copy: bool = False,
    ) -> StoreResult:
        """Archive one snapshot document (its file contents may be streams).

        A new snapshot whose id holds a time it cannot have been taken at (before 2000, or
        in the future: ``implausible_time``) is refused: the time orders an instance's
        snapshots and decides retention. ``copy=True`` (copying an archive) takes what the
        archive holds as it is, and ignores ``$snapshot.history`` (snapshots then arrive in
        no particular order)."""
        counters = counters or IngestCounters()
        snapshot_id = _snapshot_id_of(doc)
        if not copy and (why := implausible_time(snapshot_id, dt.datetime.now(dt.UTC))):
            raise DocumentError(f"snapshot id {snapshot_id}: {why}", "item '$uniqueid'")
        apply_history = not copy
        damaged: IntegrityError | None = None
        if self.exists(snapshot_id):
            try:
                archived = self.load(snapshot_id, with_files=False)
            except IntegrityError as exc:
                damaged = exc  # the archived copy failed its check: this one replaces it
            else:
                # Complete: nothing to write. A cleanup that died part-way is finished,
                # though, and a day only the Java service stored goes into the day index.
                self.days.note(modified_day(archived))
                self.log_if_unlogged(snapshot_id)
                result = StoreResult(snapshot_id, new=False, logical_bytes=counters.logical_bytes)
                if _emptied(archived) != _emptied(doc):
                    result.warnings.append(
                        "already archived with different content: the archived version is kept"
                    )
                if apply_history:
                    self._apply_history(doc, result, keep_this=False)
                return result
        require_xml_safe(doc)  # kept as XML: refused, never stored changed
        result = StoreResult(snapshot_id, new=damaged is None)
        if damaged is not None:
            result.warnings.append(f"the archived copy was damaged ({damaged}): written again")
        if not copy and (why := not_a_snapshot(doc)) is not None:
            result.warnings.append(f"archived, but {why} (a restore leaves it out)")
        day = modified_day(doc)
        files = iter_files(doc)
        # Pieces first, outside the group (written by the piece threads) ...
        contents = [(entry, self._ingest(entry, counters, result)) for entry in files]
        if time.monotonic() - counters.started > self.max_ingest:
            self.files.check_reused(c for _e, c in contents if not isinstance(c, str))
        # ... then every row that makes the snapshot, in order, as one group.
        with self.backend.grouped():
            file_rows = [
                {
                    "snapshot": snapshot_id,
                    "name": entry.name,
                    "md5": (content if isinstance(content, str) else self.files.register(content)),
                    "claimed_md5": entry.md5checksum or "",
                }
                for entry, content in contents
            ]
            stored_files = [(e, c, r["md5"]) for (e, c), r in zip(contents, file_rows, strict=True)]
            logged = StoreEntry(self.ledger, self.files, snapshot_id, self.actor, stored_files)
            whole, xml = render_inline(iter_xml(_emptied(doc)), self.backend.inline_limit)
            whole_digest = xml_digest(whole) if whole is not None else None
            if whole_digest is not None:
                logged.start(whole_digest)  # alongside the index rows, where it can
            # The index rows two tables at a time (on Cassandra each pair in flight at
            # once), each pair durable before the next starts: the order of the module.
            soon = self.backend.put_soon
            _settled(
                soon(
                    SNAPSHOTS_BY_DOCUMENT,  # none for an empty file (no bytes to keep)
                    [
                        {"md5": r["md5"], "snapshot": snapshot_id}
                        for r in file_rows
                        if r["md5"] != EMPTY_MD5
                    ],
                ),
                soon(ARCHIVE_SNAPSHOT_FILES, file_rows),
            )
            if day not in self._days_indexed:
                record_day(self.backend, day)
            _settled(
                soon(
                    SNAPSHOTS_BY_UNIQUEID,
                    [{"uniqueid": origin_id(snapshot_id), "snapshot": snapshot_id}],
                ),
                soon(SNAPSHOTS_BY_MODIFIED, [{"modified": day, "snapshot": snapshot_id}]),
            )
            # The day changed (figures of it are stale), and so did the instance's lead
            # time, filed under the day of its newest snapshot.
            other_day = self._newest.day_of_other(self.backend, origin_id(snapshot_id), snapshot_id)
            stamp_day(self.backend, day, other_day)
            written = put_snapshot_xml(
                self.backend,
                snapshot_id,
                xml,
                replace=damaged is not None,
                before_row=logged.finish,  # the ledger's entry, queued before the row
                known_digest=whole_digest,
            )
            if not written:  # another process stored it first: its entry logs it
                logged.withdraw()
            else:  # after the row: a fact names a complete snapshot (facts.py)
                keys = {r["name"]: r["md5"] for r in file_rows}
                known = {k: c.size for _e, c, k in stored_files if not isinstance(c, str)}
                fact = count_fact(self.backend, snapshot_id, doc, day, keys, known, self._carriers)
                put_fact(self.backend, day, snapshot_id, fact)
        self._notice_removed(snapshot_id)
        self._newest.note(origin_id(snapshot_id), snapshot_id)
        if len(self._days_indexed) > MAX_DAYS_KNOWN:
            self._days_indexed.clear()
        self._days_indexed.add(day)  # committed
        result.new = result.new and written  # else another process stored it first
        result.files = len(file_rows)
        result.logical_bytes = counters.logical_bytes
        result.new_bytes = counters.new_bytes
        if apply_history:
            self._apply_history(doc, result, keep_this=True)
        return result

    def _ingest(
        self, entry: FileEntry, counters: IngestCounters, result: StoreResult
    ) -> IngestedContent | str:
        """A file's content with its pieces stored, or the key of a stored file it names."""
        content = entry.content
        claimed = (entry.md5checksum or "").upper()
        if isinstance(content, PendingContent):
            pending, content = content, content.result()
            counters.logical_bytes += pending.counters.logical_bytes
            counters.new_bytes += pending.counters.new_bytes
        if isinstance(content, IngestedContent):
            ingested = content
        elif isinstance(content, bytes | bytearray):
            if not content and claimed and self.files.link_stored(claimed):
                return claimed  # left out on purpose: the archive (or Java) has it
            ingested = self.files.ingest([bytes(content)], counters)
        elif isinstance(content, BinaryStream):
            ingested = self.files.ingest(content.iter_bytes(), counters)
        else:
            raise DocumentError("file content must be base64 bytes", f"file {entry.name!r}")
        if claimed and claimed != ingested.md5:
            result.warnings.append(
                f"file {entry.name!r}: md5checksum {claimed} does not match its content "
                f"(MD5 {ingested.md5}); stored by its real checksum"
            )
        return ingested

    def _apply_history(self, doc: Document, result: StoreResult, *, keep_this: bool) -> None:
        """``$snapshot.history = N``: keep the N newest snapshots of the instance, and never
        delete the one just written (the Java service deleted it with N=1). A snapshot that
        arrives after a newer one (workers run concurrently) deletes nothing newer: it is
        kept too, and the next newer snapshot's cleanup removes it. Deleted ids go to
        ``result.deleted``; an instance under legal hold keeps them all (a warning says so).

        Never walks what earlier cleanups deleted (tombstones, on Cassandra, which past
        100,000 fail a read): the instance is read newest first, N + 1 rows, and then the
        rows of the ``HISTORY_HORIZON`` before the oldest of those (late arrivals, and
        deletes that died part-way); everything older was deleted by earlier cleanups."""
        keep = item_integer(doc, "$snapshot.history")  # "3" and 3.0 count, as in Java
        if keep <= 0:
            return
        snapshot_id = result.snapshot_id
        origin = origin_id(snapshot_id)
        partition = {"uniqueid": origin}
        rows = self.backend.scan(SNAPSHOTS_BY_UNIQUEID, partition, descending=True, limit=keep + 1)
        window = [row["snapshot"] for row in rows]
        if not window:
            return
        floor = min(snapshot_millis(sid) for sid in window) - HISTORY_HORIZON_MS
        bound = {"snapshot": f"{origin}-{max(floor, 0):013d}"}
        for row in self.backend.scan(SNAPSHOTS_BY_UNIQUEID, partition, start_after=bound):
            if row["snapshot"] not in window:
                window.append(row["snapshot"])
        window.sort(key=snapshot_order, reverse=True)
        kept = [sid for sid in window if self.exists(sid)][:keep]
        if keep_this and snapshot_id not in kept:
            kept.append(snapshot_id)
        oldest_kept = min(snapshot_order(s) for s in kept) if kept else None
        doomed = [
            sid
            for sid in window
            if sid not in kept and (oldest_kept is None or snapshot_order(sid) < oldest_kept)
        ]
        for index, old in enumerate(doomed):
            try:
                self.delete(old, reason="history")
            except LegalHoldError as held:
                result.warnings.append(
                    f"$snapshot.history={keep}: {len(doomed) - index} older snapshot(s) of "
                    f"{origin} kept: {held.why}"
                )
                return
            result.deleted.append(old)

    # ---- out ------------------------------------------------------------------------

    def exists(self, snapshot_id: str) -> bool:
        return reads.is_archived(self.backend, snapshot_id)

    def load(self, snapshot_id: str, *, with_files: bool = True) -> Document:
        """The snapshot; with files, their contents stream from the store when read."""
        row = self.backend.get(SNAPSHOTS, {"snapshot": require_snapshot_id(snapshot_id)})
        if row is None:
            raise NotFoundError(f"snapshot {snapshot_id} is not in the archive")
        weight = self.read_gate.acquire(xml_size(row))  # large rows share a budget
        try:
            doc = load_row(self.backend, row)
        except BaseException:
            self.read_gate.release(weight)
            raise
        self.read_gate.release_with(doc, weight)
        if with_files and doc.get_values(FILE_ITEM):  # the engine's nil $file has no map
            keys = self.index.file_keys(snapshot_id, doc)
            merged: dict[str, list[Any]] = {}
            for name, values in doc.get_values(FILE_ITEM)[0].items():
                values = list(values)
                if len(values) > 1 and keys.get(name):
                    where = f"snapshot {snapshot_id}, file {name!r}"
                    values[1] = self.files.content(keys[name], where=where)
                merged[name] = values
            doc[FILE_ITEM] = [merged]
        return doc

    def xml_with_files(self, snapshot_id: str) -> StoredXml:
        """The snapshot's XML with its files: the bytes of ``iter_xml(load(...))``, from
        the stored XML as it is when it can (``stored_xml``: no parse, no writing)."""
        found = load_with_files(
            self.backend, self.files, self.read_gate, require_snapshot_id(snapshot_id)
        )
        if found is not None:
            return found
        doc = self.load(snapshot_id, with_files=True)
        created = doc.get_first("$created") or doc.get_first("$modified")
        return StoredXml(created if isinstance(created, dt.datetime) else None, [iter_xml(doc)])

    def file_of_snapshot(self, snapshot_id: str, name: str) -> tuple[FileEntry, StoredContent]:
        doc = self.load(snapshot_id, with_files=True)
        for entry in iter_files(doc):
            if entry.name == name and isinstance(entry.content, StoredContent):
                return entry, entry.content
        raise NotFoundError(f"snapshot {snapshot_id} has no file named {name!r}")

    def file_digests(self, snapshot_id: str) -> dict[str, tuple[str, str | None]]:
        """File name -> (documents key, content digest when recorded: the ledger's, the
        same in any cuts) of a complete snapshot."""
        doc = self.load(snapshot_id, with_files=False)
        digests: dict[str, tuple[str, str | None]] = {}
        for name, key in self.index.file_keys(snapshot_id, doc).items():
            digests[name] = (key, self.files.content_digest(key))
        return digests

    def stored_digest(self, snapshot_id: str, *, read_all: bool = False) -> StoredDigest | None:
        """The snapshot's content digest from what is stored now (``content_digest.py``);
        None when it is not complete."""
        return stored_digest(self.backend, self.files, snapshot_id, read_all=read_all)

    def log_found(
        self, snapshot_id: str, by: str = "", digest: StoredDigest | None = None
    ) -> StoredDigest | None:
        """Queue a ``found`` entry for a complete snapshot the ledger has not logged (one
        stored before the ledger existed, or by the Java service); its digest, or None
        when the snapshot is not complete. ``digest``: the one just read, not read again."""
        found = digest or self.stored_digest(snapshot_id)
        if found is not None:
            entry = Entry(FOUND, snapshot_id, now_ms(), by or self.actor, found.digest)
            self.ledger.enqueue(entry)
        return found

    def log_if_unlogged(self, snapshot_id: str) -> None:
        """A snapshot met again (the sync, an import) that a row without a seal holds and
        the ledger never logged: the Java service wrote it into a shared keyspace. Logged
        as found, and its day added to the day index (the Java service writes none). (A
        sealed row this archive wrote is logged with its store.)"""
        if not self.storage.java_may_write or self.ledger.subject(snapshot_id) is not None:
            return
        try:
            found = self.stored_digest(snapshot_id)
            if found is None or found.sealed:
                return
            self.days.note(modified_day(self.load(snapshot_id, with_files=False)))
        except (IntegrityError, NotFoundError):
            return  # damaged (verify names it), or deleted meanwhile
        self.log_found(snapshot_id, digest=found)
        self._notice_removed(snapshot_id)
        self._newest.note(origin_id(snapshot_id), snapshot_id)

    def _notice_removed(self, snapshot_id: str) -> None:
        """Where the Java service writes (``ARCHIVE_JAVA_WRITES``): the newest snapshot of
        the instance this process stored or met before ``snapshot_id``, gone now while the
        ledger says it is there, was deleted by the Java service (its ``$snapshot.history``
        cleanup runs as it saves the next snapshot, keeping one fewer; its Inspect page
        deletes). Logged as deleted ``elsewhere`` and said in the log. Older ones, and
        those no process of the sync met, are left to ``ledger verify``, which does the
        same."""
        if not self.storage.java_writes:
            return
        origin = origin_id(snapshot_id)
        before = self._newest.known(origin)
        if before is None or before == snapshot_id or self.exists(before):
            return
        row = self.ledger.subject(before)
        if row is None or row.kind == DELETED:
            return  # not logged yet (its entry is queued), or its deletion is
        self._newest.forget(origin, before)
        self.ledger.enqueue(Entry(DELETED, before, now_ms(), self.actor, reason=ELSEWHERE))
        log.info(
            "snapshot %s: removed by another writer (the Java service), noticed as %s "
            "arrived; logged as deleted elsewhere",
            before,
            snapshot_id,
        )

    def list_instance(
        self,
        uniqueid: str,
        *,
        newest_first: bool = True,
        start_after: str | None = None,
        limit: int | None = None,
    ) -> list[str]:
        """Complete snapshots of one process instance, newest first by default."""
        found: list[str] = []
        bound = {"snapshot": start_after} if start_after else None
        rows = self.backend.scan(
            SNAPSHOTS_BY_UNIQUEID,
            {"uniqueid": uniqueid},
            start_after=bound,
            descending=newest_first,
        )
        for row in rows:
            if self.exists(row["snapshot"]):
                found.append(row["snapshot"])
                if limit is not None and len(found) >= limit:
                    break
        found.sort(key=snapshot_order, reverse=newest_first)
        return found

    def load_complete(self, snapshot_id: str) -> Document | None:
        """The snapshot without file contents, or None when it is not complete."""
        return reads.load_complete(self.backend, snapshot_id)

    def rebuild(
        self,
        name: str,
        after: Any,
        repaired: Counter[str],
        done: Callable[[Any], None],
    ) -> None:
        """Rebuild the index and derived rows of walk ``name`` (``rebuild.REBUILDS``) from
        the partition after ``after`` (a position ``done`` was given) to the end, counting
        what was written or removed by table in ``repaired`` (``rebuild.py``)."""
        rebuild_range(self.backend, name, after, repaired, done)

    # ---- delete ---------------------------------------------------------------------

    def delete(self, snapshot_id: str, *, reason: str = "delete", by: str = "") -> DeleteResult:
        """Remove a snapshot and its references; the files and pieces nothing refers to
        any more are left to the collector (``filestore/gc.py``). ``LegalHoldError`` (nothing
        changed) when the snapshot's process instance is under legal hold. ``reason`` and
        ``by`` go into the ledger's entry (``ledger/entries.py``: ``DELETE_REASONS``; ``by``: the
        archive's actor when not given)."""
        origin = origin_id(snapshot_id)
        holds = holds_of(self.backend, origin)
        if holds:
            index_key = {"uniqueid": origin, "snapshot": snapshot_id}
            if not self.exists(snapshot_id) and not self.backend.get(
                SNAPSHOTS_BY_UNIQUEID, index_key
            ):
                return DeleteResult(snapshot_id, existed=False)
            raise LegalHoldError(snapshot_id, _held(holds))
        with self.backend.grouped():
            row = self.backend.get(SNAPSHOTS, {"snapshot": snapshot_id})
            indexed = self.backend.get(
                SNAPSHOTS_BY_UNIQUEID, {"uniqueid": origin, "snapshot": snapshot_id}
            )
            doc = _readable(self.backend, row)
            keys = self._keys_for_delete(snapshot_id, doc)
            if row is None and indexed is None and not keys:
                return DeleteResult(snapshot_id, existed=False)
            entry = Entry(DELETED, snapshot_id, now_ms(), by or self.actor, reason=reason)
            self.ledger.enqueue(entry)  # first: the sequencer logs it once the row is gone
            # A row that failed its check names no day: the days about its id's time.
            days = [modified_day(doc)] if doc is not None else days_about(snapshot_id)
            drop_fact(self.backend, snapshot_id, days)  # before the rows: facts.py
            self._carriers.forget([origin, *keys], snapshot_id)
            if row is not None:
                for day in days:
                    self.backend.delete(
                        SNAPSHOTS_BY_MODIFIED, {"modified": day, "snapshot": snapshot_id}
                    )
                    stamp_day(self.backend, day)  # figures that counted it are stale
            delete_snapshot_xml(self.backend, snapshot_id, row)
            for key in sorted(set(keys) - {EMPTY_MD5}):  # the empty file has no rows
                self.backend.delete(SNAPSHOTS_BY_DOCUMENT, {"md5": key, "snapshot": snapshot_id})
            self.backend.delete(ARCHIVE_SNAPSHOT_FILES, {"snapshot": snapshot_id})
            self._newest.forget(origin, snapshot_id)
            other_day = self._newest.day_of_other(self.backend, origin, snapshot_id)
            if other_day is not None and other_day not in days:  # the instance's lead time
                stamp_day(self.backend, other_day)
            # Last: while this row is there, a re-run (or the history cleanup) finds a
            # delete that died part-way and finishes it.
            self.backend.delete(
                SNAPSHOTS_BY_UNIQUEID, {"uniqueid": origin, "snapshot": snapshot_id}
            )
            return DeleteResult(snapshot_id, existed=row is not None)

    def _keys_for_delete(self, snapshot_id: str, doc: Document | None) -> list[str]:
        """The documents keys of a snapshot's files, recorded before anything is deleted."""
        if doc is None:
            return [
                r["md5"]
                for r in self.backend.scan(ARCHIVE_SNAPSHOT_FILES, {"snapshot": snapshot_id})
            ]
        keys = self.index.file_keys(snapshot_id, doc)
        # A Java-written snapshot has no archive_snapshot_files rows: record them first, so
        # a delete that dies part-way can be finished by running it again.
        self.backend.put(
            ARCHIVE_SNAPSHOT_FILES,
            [
                {"snapshot": snapshot_id, "name": name, "md5": key, "claimed_md5": ""}
                for name, key in keys.items()
                if self.backend.get(ARCHIVE_SNAPSHOT_FILES, {"snapshot": snapshot_id, "name": name})
                is None
            ],
        )
        return list(keys.values())


def _settled(*waits: Callable[[], None]) -> None:
    """Wait for every write started (``Backend.put_soon``); then raise the first error
    met, if any: nothing is left in flight behind an error."""
    error: BaseException | None = None
    for wait in waits:
        try:
            wait()
        except BaseException as exc:
            error = error or exc
    if error is not None:
        raise error


def _readable(backend: Backend, row: Row | None) -> Document | None:
    """The snapshot of a row about to be deleted; None when there is no row, or when it
    failed its check (it is deleted all the same: damage must not make it permanent)."""
    if row is None:
        return None
    try:
        return load_row(backend, row)
    except IntegrityError:
        return None


def _held(holds: list[Hold]) -> str:
    """Why a delete is refused: the holds (one per case), and how to release them."""
    cases = []
    for hold in holds:
        placed = hold.placed.isoformat(timespec="seconds")
        by = f" by {hold.placed_by}" if hold.placed_by else ""
        cases.append(f"{hold.reason or 'no reason given'}; placed {placed}{by}")
    uniqueid = holds[0].uniqueid
    if len(holds) == 1:
        return (
            f"process instance {uniqueid} is under legal hold ({cases[0]}); release it "
            f"first: imixs-archive legal-hold release {uniqueid}"
        )
    return (
        f"process instance {uniqueid} is under legal hold for {len(holds)} cases "
        f"({'), ('.join(cases)}); release each first: imixs-archive legal-hold release "
        f"{uniqueid} --reason CASE"
    )


def _emptied(doc: Document) -> Document:
    """The snapshot as the ``snapshots`` row holds it: every file's content emptied (a
    ``$file`` without a value, as the engine writes for its own jobs, is kept as it is)."""
    stored = doc.copy()
    if doc.get_values(FILE_ITEM):
        emptied = {}
        for name, values in doc.get_values(FILE_ITEM)[0].items():
            values = list(values)
            if len(values) > 1:
                values[1] = b""
            emptied[name] = values
        stored[FILE_ITEM] = [emptied]
    return stored


def _snapshot_id_of(doc: Document) -> str:
    uid = doc.get_first("$uniqueid")
    if not isinstance(uid, str) or not uid:
        raise DocumentError("the document has no $uniqueid", "item '$uniqueid'")
    return require_snapshot_id(uid)

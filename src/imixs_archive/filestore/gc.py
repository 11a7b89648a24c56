"""The garbage collector: removes the files and pieces nothing refers to, beside any
number of ingesting processes, on SQLite and on Cassandra, without a lock.

Deleting a snapshot only drops references (``snapshots.py``). Each collection then:

1. **Removes** what it listed (``archive_garbage``, see ``garbage.py``) at least the grace
   period ago (``ARCHIVE_GC_GRACE``, default 24 h), if it is still listed with the same
   time and still unreferenced: a file's rows (its content-addressed pieces are listed as
   soon as nothing refers to them), or a piece.
2. **Lists** every file no snapshot uses and every piece no file uses that is not listed
   yet, with the time and its bytes; beside the Java service also the pieces it cut that
   no file lists and the references from snapshots that are gone (``gc_java.py``).

The run walks its tables (:data:`WALKS`: first the list, then ``archive_files``,
``documents``, ``documents_data``, ``snapshots_by_document``, ``archive_piece_refs``) in the
store's range order
(``Backend.scan_range``), one partition at a time, nothing of a table gathered:
:func:`collect` walks them whole, ``archive/gc_runs.py`` goes on where a stopped run ended
and splits one into parts (``--part K/N``). Every row passes :func:`budget.checkpoint` (a
run under a request stops when its budget is spent); the report counts each kind found,
listed and removed. Each item is stamped with the time it is listed (not the run's start).

Why nothing an ingest relies on can go:

* An ingest that found an item *not listed* relies on it for at most the length of the
  ingest; the item can be listed only after that look, and is removed only a grace
  period after its listing, so the ingest's reference is written before the collector
  checks for references a last time. An ingest that ran for more than half the grace
  period checks the pieces it reused again before referring to them (``snapshots.py``).
* An ingest that finds an item *listed* takes it off the list and writes it again
  (``garbage.py``). On SQLite the removal re-checks the list and the references in one
  transaction, so it sees either the item off the list or its new references. On
  Cassandra, where two processes' writes are not ordered by any transaction, the removal
  deletes only what was written before the listing (``USING TIMESTAMP``, less
  ``CLOCK_SKEW`` for the hosts' clocks): the ingest's rewrite is later and survives.

A file's references are read newest first, one row (``garbage.file_used``); the pieces of
a file, and every listed item, are read by key. The passes for what the Java service left
read ``documents`` (once, for two filters) and ``snapshots_by_uniqueid`` whole once a run
(each part of a parted run in full), holding Bloom filters, not sets, of what they met
(``gc_java.py``).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from imixs_archive.budget import checkpoint
from imixs_archive.errors import ArchiveError, StoreError
from imixs_archive.filestore.bloom import BloomFilter
from imixs_archive.filestore.files import piece_used, release_file
from imixs_archive.filestore.garbage import (
    CUT,
    FILE,
    PIECE,
    PIECE_REF,
    PIN,
    REF,
    file_used,
    listed,
    now_us,
    put_on_list,
    ref_id,
)
from imixs_archive.filestore.gc_java import (
    KEPT,
    REMOVED,
    drop_empty_references,
    indexed_snapshot_ids,
    is_dangling,
    is_unlisted_cut,
    listed_in_documents,
    pair,
    remove_cut,
    remove_piece_ref,
    remove_reference,
)
from imixs_archive.filestore.reading import EMPTY_MD5, is_hashed
from imixs_archive.humanize import human_bytes, unused_words
from imixs_archive.jsonable import Jsonable
from imixs_archive.storage.base import Backend, Position
from imixs_archive.storage.model import (
    ARCHIVE_FILES,
    ARCHIVE_GARBAGE,
    ARCHIVE_PIECE_REFS,
    DOCUMENTS,
    DOCUMENTS_DATA,
    SNAPSHOTS_BY_DOCUMENT,
    Table,
)

CLOCK_SKEW_US = 60 * 1_000_000
"""How far apart the clocks of the hosts writing one keyspace may be (60 s)."""


@dataclass
class GcReport(Jsonable):
    """What one collection did (or, in a dry run, would do)."""

    JSON_SKIP = ("listed_bytes", "waiting_bytes", "unused_bytes")
    JSON_EXTRA = ("reclaimable_bytes",)

    dry_run: bool = False
    removed_files: int = 0
    removed_pieces: int = 0
    bytes_freed: int = 0
    listed_files: int = 0
    listed_pieces: int = 0
    listed_bytes: int = 0
    waiting: int = 0
    """Listed earlier, grace period not over yet."""
    waiting_bytes: int = 0
    kept: int = 0
    """Listed earlier and in use again: taken off the list."""
    errors: list[str] = field(default_factory=list)
    unused_files: int = 0
    """After the collection (a dry run: now), the files no snapshot uses ..."""
    unused_pieces: int = 0
    """... and the pieces only they use or no file uses (:func:`unused_now`, counted as
    ``stats`` and ``verify`` count them)."""
    unused_bytes: int = 0
    java_pieces_found: int = 0
    """Pieces the Java service cut that no file lists, found by this run (``gc_java.py``;
    listed now or earlier) ..."""
    java_pieces_listed: int = 0
    """... listed by it (their bytes are in ``listed_bytes``) ..."""
    java_pieces_removed: int = 0
    """... and removed by it, a grace period after their listing (also in
    ``removed_pieces``), with their bytes (also in ``bytes_freed``)."""
    java_bytes_freed: int = 0
    dangling_refs_found: int = 0
    """References (``snapshots_by_document``) from snapshots that are gone: found ..."""
    dangling_refs_listed: int = 0
    dangling_refs_removed: int = 0
    empty_refs_removed: int = 0
    """Rows under the empty file's MD5, which older versions wrote: removed at once."""
    stale_piece_refs_found: int = 0
    """References of pieces (``archive_piece_refs``) their file no longer lists (the Java
    service's rows written over this archive's): found ..."""
    stale_piece_refs_listed: int = 0
    stale_piece_refs_removed: int = 0

    @property
    def reclaimable_bytes(self) -> int:
        """Bytes later collections free: those of the unused pieces, after this one."""
        return self.unused_bytes

    def lines(self, grace: float, *, whole: bool = True) -> list[str]:
        """What the collection did, in the words the CLI prints and ``serve`` logs
        (``whole``: it saw the whole archive, so what is left unused is known)."""
        verb = "would remove" if self.dry_run else "removed"
        listing = "would list" if self.dry_run else "listed"
        lines = [
            f"{verb} {self.removed_files} files and {self.removed_pieces} pieces "
            f"({human_bytes(self.bytes_freed)}); {listing} {self.listed_files} files and "
            f"{self.listed_pieces} pieces no longer used ({human_bytes(self.listed_bytes)}), "
            f"removed by a run {grace:g} s later; {self.waiting} listed "
            f"earlier still waiting; {self.kept} in use again"
        ]
        if whole:
            lines.append(f"{'now' if self.dry_run else 'after this run'}: {unused_words(self)}")
        counted = (
            ("pieces the Java service cut that no file lists", "java_pieces"),
            ("references from snapshots that are gone", "dangling_refs"),
            ("references of pieces their file no longer lists", "stale_piece_refs"),
        )
        for what, name in counted:
            found, listed, removed = (
                getattr(self, f"{name}_{kind}") for kind in ("found", "listed", "removed")
            )
            if found or removed:
                freed = f" ({human_bytes(self.java_bytes_freed)})" if name == "java_pieces" else ""
                lines.append(f"{what}: found {found}, {listing} {listed}, {verb} {removed}{freed}")
        if self.empty_refs_removed:
            lines.append(
                f"references to the empty file (none needed): {verb} {self.empty_refs_removed}"
            )
        return lines


def collect(
    backend: Backend,
    *,
    grace: float,
    dry_run: bool = False,
    clock: Callable[[], int] = now_us,
    clock_skew_us: int = CLOCK_SKEW_US,
) -> GcReport:
    """One collection: remove what was listed ``grace`` seconds ago or earlier and is
    still unreferenced, then list what is unreferenced now. ``dry_run`` changes nothing
    and reports what would be removed (as removed) and listed. ``clock_skew_us``: how far
    the clocks of the hosts may differ (tests on one host pass 0). The whole archive at
    once, remembering nothing (``archive/gc_runs.py`` goes on where a stopped one ended,
    and splits one into parts)."""
    run = GcPass.begin(backend, grace, dry_run, clock, clock_skew_us)
    for walk in WALKS:
        walk_range(backend, walk, None, None, run)
    return finish_whole(backend, run.report)


def finish_whole(backend: Backend, report: GcReport) -> GcReport:
    """What only a collection of the whole archive counts: what is unused after it."""
    # After a run every piece no file refers to is listed; a dry run listed none of them.
    unused = unused_now(backend, orphans=None if report.dry_run else 0)
    report.unused_files, report.unused_pieces = unused.files, unused.pieces
    report.unused_bytes = unused.bytes
    return report


class GcPass:
    """One run of the collector over its walks (or a part of them): its report, the time
    before which a listing is due, and the Bloom filters of the whole tables it needs
    (built once a run, by each part in full)."""

    def __init__(
        self,
        backend: Backend,
        report: GcReport,
        due: int,
        clock: Callable[[], int],
        clock_skew_us: int,
    ) -> None:
        self.backend, self.report, self.due = backend, report, due
        self.clock, self.clock_skew_us = clock, clock_skew_us
        self.began = clock()
        """Items listed after this were listed by this run: not counted as waiting."""
        self._documents: tuple[BloomFilter, BloomFilter] | None = None
        self._indexed: BloomFilter | None = None
        self.empty_dropped = False
        """Whether the empty file's references were dropped (counted) by this run."""

    @classmethod
    def begin(
        cls,
        backend: Backend,
        grace: float,
        dry_run: bool,
        clock: Callable[[], int] = now_us,
        clock_skew_us: int = CLOCK_SKEW_US,
        report: GcReport | None = None,
        *,
        removes: bool = True,
    ) -> GcPass:
        """A run from now (``report``: what a stopped run counted, to go on with;
        ``removes``: whether it walks the list, or goes on past that walk)."""
        due = clock() - int(grace * 1_000_000)
        run = cls(backend, report or GcReport(dry_run=dry_run), due, clock, clock_skew_us)
        if removes:  # after ``due``: what is due was listed before the pass over documents
            run.listed_ids()
        return run

    def listed_ids(self) -> BloomFilter:
        """The Java-cut ids ``documents`` lists (``gc_java.listed_in_documents``)."""
        return self._listed_in_documents()[0]

    def pairs(self) -> BloomFilter:
        """The (key, piece) pairs ``documents`` lists (``gc_java.listed_in_documents``)."""
        return self._listed_in_documents()[1]

    def _listed_in_documents(self) -> tuple[BloomFilter, BloomFilter]:
        """Both, from one pass over ``documents`` a run."""
        if self._documents is None:
            self._documents = listed_in_documents(self.backend)
        return self._documents

    def indexed(self) -> BloomFilter:
        """The snapshot ids ``snapshots_by_uniqueid`` names (``gc_java``), read once."""
        if self._indexed is None:
            self._indexed = indexed_snapshot_ids(self.backend)
        return self._indexed


@dataclass(frozen=True)
class Walk:
    """One table the collector walks in the store's range order (``Backend.scan_range``),
    one partition at a time: ``visit`` each partition's first row (``rows``: every row)."""

    name: str
    table: Table
    columns: tuple[str, ...]
    visit: Callable[[GcPass, dict[str, Any]], None]
    rows: bool = False


def walk_range(
    backend: Backend,
    walk: Walk,
    after: Position | None,
    upto: Position | None,
    run: GcPass,
    done: Callable[[Position], None] | None = None,
) -> None:
    """Walk the partitions of ``walk``'s table after ``after`` and up to ``upto``;
    ``done(position)`` after each (where a stopped walk goes on)."""
    key: tuple[Any, ...] | None = None
    at: Position | None = None
    for position, row in backend.scan_range(walk.table, after, upto, columns=walk.columns):
        checkpoint()
        this = tuple(row[name] for name in walk.table.partition_key)
        first = this != key
        if first and at is not None and done is not None:
            done(at)
        key, at = this, position
        if first or walk.rows:
            walk.visit(run, row)
    if at is not None and done is not None:
        done(at)


def _visit_listed(run: GcPass, row: dict[str, Any]) -> None:
    """Remove one listed item if its grace period is over and nothing uses it."""
    report, since = run.report, int(row["since"])
    if since > run.due:
        if since <= run.began:  # not listed by this run
            report.waiting += 1
            report.waiting_bytes += int(row["size"])
        return
    before = since - run.clock_skew_us
    try:
        if row["kind"] in (CUT, REF, PIECE_REF):
            _remove_java(run.backend, row, before, run.listed_ids(), report)
        else:
            _remove(run.backend, row, before, report, run.clock)
    except StoreError:
        raise
    except ArchiveError as exc:
        report.errors.append(f"{row['kind']} {row['id']}: {exc}")


def _visit_file(run: GcPass, row: dict[str, Any]) -> None:
    """List a file of this archive (``archive_files``) no snapshot uses."""
    _list_file(run, row["md5"])


def _visit_java_file(run: GcPass, row: dict[str, Any]) -> None:
    """List a file only ``documents`` holds (the Java service's) no snapshot uses."""
    key = row["md5"]
    if run.backend.get(ARCHIVE_FILES, {"md5": key}, ["md5"]) is None:
        _list_file(run, key)


def _list_file(run: GcPass, key: str) -> None:
    backend, report = run.backend, run.report
    if file_used(backend, key) or listed(backend, FILE, key) is not None:
        return
    size = _own_bytes(backend, key)
    report.listed_files += 1
    report.listed_bytes += size
    if not report.dry_run:
        put_on_list(backend, FILE, key, size, run.clock())


def _visit_piece(run: GcPass, row: dict[str, Any]) -> None:
    """List a piece no file refers to (``_loose_piece``)."""
    report = run.report
    found = _loose_piece(run.backend, row["data_id"], run.listed_ids())
    if found is None:
        return
    kind, piece_size = found
    report.java_pieces_found += kind == CUT
    if piece_size is None:
        return  # listed already
    report.listed_pieces += 1
    report.java_pieces_listed += kind == CUT
    report.listed_bytes += piece_size
    if not report.dry_run:
        put_on_list(run.backend, kind, row["data_id"], piece_size, run.clock())


def _visit_reference(run: GcPass, row: dict[str, Any]) -> None:
    """List a reference from a snapshot that is gone; drop the empty file's."""
    key, snapshot_id, report = row["md5"], row["snapshot"], run.report
    if key == EMPTY_MD5:
        if snapshot_id == PIN:  # before every snapshot id: the partition's first row
            return
        if not run.empty_dropped:  # the rest of the partition is gone with it
            run.empty_dropped = True
            report.empty_refs_removed += drop_empty_references(run.backend, report.dry_run)
        return
    if snapshot_id == PIN or not is_dangling(run.backend, snapshot_id, run.indexed()):
        return
    report.dangling_refs_found += 1
    report.dangling_refs_listed += _put_on_list(run, REF, ref_id(key, snapshot_id))


def _visit_piece_ref(run: GcPass, row: dict[str, Any]) -> None:
    """List a reference of a piece its file no longer lists (``gc_java.py``)."""
    data_id, key, report = row["data_id"], row["md5"], run.report
    if pair(key, data_id) in run.pairs():
        return
    report.stale_piece_refs_found += 1
    report.stale_piece_refs_listed += _put_on_list(run, PIECE_REF, ref_id(data_id, key))


def _put_on_list(run: GcPass, kind: str, item: str) -> bool:
    """List a reference not listed yet (a dry run only says it would); whether it was new."""
    if listed(run.backend, kind, item) is not None:
        return False
    if not run.report.dry_run:
        put_on_list(run.backend, kind, item, 0, run.clock())
    return True


WALKS = (
    Walk("listed", ARCHIVE_GARBAGE, ("id", "kind", "since", "size"), _visit_listed, rows=True),
    Walk("files", ARCHIVE_FILES, ("md5",), _visit_file),
    Walk("java files", DOCUMENTS, ("md5",), _visit_java_file),
    Walk("pieces", DOCUMENTS_DATA, ("data_id",), _visit_piece),
    Walk("references", SNAPSHOTS_BY_DOCUMENT, ("md5", "snapshot"), _visit_reference, rows=True),
    Walk("piece references", ARCHIVE_PIECE_REFS, ("data_id", "md5"), _visit_piece_ref, rows=True),
)
"""What a collection walks, in this order: first it removes, then it lists."""


def _remove_java(
    backend: Backend, row: dict[str, Any], before: int, listed_ids: BloomFilter, report: GcReport
) -> None:
    """Remove a listed Java-cut piece, dangling reference or stale piece reference
    (``gc_java.py``)."""
    item, since, dry_run = row["id"], int(row["since"]), report.dry_run
    if row["kind"] == CUT:
        outcome = remove_cut(backend, item, since, before, listed_ids, dry_run=dry_run)
        if outcome == REMOVED:
            size = int(row["size"])
            report.removed_pieces += 1
            report.java_pieces_removed += 1
            report.bytes_freed += size
            report.java_bytes_freed += size
    elif row["kind"] == PIECE_REF:
        outcome = remove_piece_ref(backend, item, since, before, dry_run=dry_run)
        report.stale_piece_refs_removed += outcome == REMOVED
    else:
        outcome = remove_reference(backend, item, since, before, dry_run=dry_run)
        report.dangling_refs_removed += outcome == REMOVED
    report.kept += outcome == KEPT


def _remove(
    backend: Backend,
    row: dict[str, Any],
    before: int,
    report: GcReport,
    clock: Callable[[], int],
) -> None:
    """Remove one listed item if it is still listed as it was and still unreferenced;
    on Cassandra only what was written ``before`` (see the module's text)."""
    item, kind, since, size = row["id"], row["kind"], int(row["since"]), int(row["size"])
    with backend.grouped():  # SQLite: the re-checks and the removal are one transaction
        if listed(backend, kind, item) != since:
            return  # taken off the list (reused) or listed again meanwhile
        used = file_used(backend, item) if kind == FILE else piece_used(backend, item)
        if used:
            report.kept += 1
            if not report.dry_run:
                backend.delete(ARCHIVE_GARBAGE, {"id": item, "kind": kind})
            return
        if report.dry_run:
            report.removed_files += kind == FILE
            report.removed_pieces += kind == PIECE
            report.bytes_freed += size if kind == PIECE else 0
            if kind == FILE:  # its own pieces would be listed in its stead
                for _data_id, piece_size in _own_pieces(backend, item):
                    report.listed_pieces += 1
                    report.listed_bytes += piece_size
            return
        if kind == PIECE:
            backend.delete(DOCUMENTS_DATA, {"data_id": item}, written_before=before)
            report.removed_pieces += 1
            report.bytes_freed += size
        else:
            pieces = release_file(backend, item, written_before=before)
            report.removed_files += 1
            now = clock()
            for data_id, piece_size in pieces:
                if not piece_used(backend, data_id) and listed(backend, PIECE, data_id) is None:
                    put_on_list(backend, PIECE, data_id, piece_size, now)
                    report.listed_pieces += 1  # listed in the file's stead: still to free
                    report.listed_bytes += piece_size
        backend.delete(ARCHIVE_GARBAGE, {"id": item, "kind": kind})


def _file_keys(backend: Backend) -> Iterator[str]:
    """Every stored file's key once: this archive's (``archive_files``) and Java's
    (``documents``). Both tables are partitioned by the file's key, so their range orders
    are one order (the token ring; the key on the embedded store): they are walked side
    by side and a key both hold comes out once, with nothing kept of the keys passed."""
    ours = _keys_in_range_order(backend, ARCHIVE_FILES)
    javas = _keys_in_range_order(backend, DOCUMENTS)
    last: tuple[Any, str] | None = None
    for position, key in heapq.merge(ours, javas):
        if (position, key) != last:
            yield key
        last = (position, key)


def _keys_in_range_order(backend: Backend, table: Table) -> Iterator[tuple[Any, str]]:
    """(position, key) of each partition of a table keyed by ``md5``, in range order
    (partitions of one token, if two keys ever share one, in the order of their keys)."""
    last = None
    for position, row in backend.scan_range(table, columns=["md5"]):
        if row["md5"] != last:
            yield position, row["md5"]
        last = row["md5"]


def unused_files(backend: Backend) -> Iterator[tuple[str, int]]:
    """(key, bytes only it holds) of every stored file no snapshot uses."""
    for key in _file_keys(backend):
        checkpoint()
        if not file_used(backend, key):
            yield key, _own_bytes(backend, key)


def _own_bytes(backend: Backend, key: str) -> int:
    """Bytes of the file's pieces that no other file refers to."""
    return sum(size for _data_id, size in _own_pieces(backend, key))


def _own_pieces(backend: Backend, key: str) -> Iterator[tuple[str, int]]:
    """(id, bytes) of the file's pieces that no other file refers to."""
    for row in backend.scan(DOCUMENTS, {"md5": key}, columns=["data_id"]):
        data_id = row["data_id"]
        refs = list(backend.scan(ARCHIVE_PIECE_REFS, {"data_id": data_id}, limit=2))
        if len(refs) == 1 and refs[0]["md5"] == key:
            yield data_id, int(refs[0]["size"])
        elif not refs and not is_hashed(data_id):  # Java's piece: its own
            piece = backend.get(DOCUMENTS_DATA, {"data_id": data_id})
            if piece is not None:
                yield data_id, len(piece["data"])


def _orphan_pieces(backend: Backend) -> Iterator[tuple[str, int]]:
    """(id, bytes) of content-addressed pieces no file refers to and not listed yet."""
    for _kind, data_id, size in _loose_pieces(backend, None):
        if size is not None:
            yield data_id, size


def _loose_pieces(
    backend: Backend, listed_ids: BloomFilter | None
) -> Iterator[tuple[str, str, int | None]]:
    """(kind, id, bytes) of the pieces no file refers to (:func:`_loose_piece`)."""
    for row in backend.scan(DOCUMENTS_DATA, columns=["data_id"]):
        checkpoint()
        found = _loose_piece(backend, row["data_id"], listed_ids)
        if found is not None:
            yield found[0], row["data_id"], found[1]


def _loose_piece(
    backend: Backend, data_id: str, listed_ids: BloomFilter | None
) -> tuple[str, int | None] | None:
    """(kind, bytes) of a piece no file refers to, else None: a content-addressed one
    (:data:`PIECE`) and, given ``listed_ids`` (``gc_java.listed_in_documents``), one the Java
    service cut that no file lists (:data:`CUT`). Bytes are None for one already listed."""
    if is_hashed(data_id):
        if piece_used(backend, data_id):
            return None
        kind = PIECE
    elif listed_ids is not None and is_unlisted_cut(backend, data_id, listed_ids):
        kind = CUT
    else:
        return None
    if listed(backend, kind, data_id) is not None:
        return kind, None
    piece = backend.get(DOCUMENTS_DATA, {"data_id": data_id})
    return None if piece is None else (kind, len(piece["data"]))


@dataclass(frozen=True)
class Unused:
    """What collections free, as of now: the files no snapshot uses (``files``), and the
    pieces (``pieces``, ``bytes``) that only those files use or that no file uses. What
    ``stats``, ``verify`` and ``gc`` call reclaimable."""

    files: int = 0
    file_pieces: int = 0
    """Pieces only unused files use (and their ``file_bytes``)."""
    file_bytes: int = 0
    loose_pieces: int = 0
    """Pieces no file refers to (and their ``loose_bytes``): a removed file's, listed in
    its stead, or an aborted write's; and those the Java service cut that a collection
    listed (no file lists them)."""
    loose_bytes: int = 0

    @property
    def pieces(self) -> int:
        return self.file_pieces + self.loose_pieces

    @property
    def bytes(self) -> int:
        return self.file_bytes + self.loose_bytes


def unused_now(backend: Backend, orphans: int | None = None) -> Unused:
    """:class:`Unused`, counted now. ``orphans``: how many content-addressed pieces no
    file refers to are stored, when the caller counted them (``stats``, ``verify``): they
    are then read from the collector's list, where a collection puts them, and looked for
    piece by piece only when the list holds fewer (an aborted write leaves one unlisted)."""
    files = pieces = size = 0
    for _key, own in _unused_file_pieces(backend):
        files += 1
        pieces += len(own)
        size += sum(own)
    found = [
        (row["id"], int(row["size"]))
        for row in backend.scan(ARCHIVE_GARBAGE)
        if row["kind"] == CUT or (row["kind"] == PIECE and not piece_used(backend, row["id"]))
    ]
    if orphans is None or sum(is_hashed(data_id) for data_id, _size in found) < orphans:
        found += list(_orphan_pieces(backend))
    return Unused(files, pieces, size, len(found), sum(piece for _id, piece in found))


def _unused_file_pieces(backend: Backend) -> Iterator[tuple[str, list[int]]]:
    """(key, sizes of the pieces only it holds) of every stored file no snapshot uses."""
    for key in _file_keys(backend):
        checkpoint()
        if not file_used(backend, key):
            yield key, [piece for _data_id, piece in _own_pieces(backend, key)]


def listed_bytes(backend: Backend) -> int:
    """Bytes of everything on the collector's list."""
    return sum(int(row["size"]) for row in backend.scan(ARCHIVE_GARBAGE, columns=["size"]))

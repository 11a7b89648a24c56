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

Progress: every loop over a table passes :func:`budget.checkpoint` (a run under a request
stops when its budget is spent); the report counts each kind found, listed and removed.

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
walk ``documents``, ``snapshots_by_uniqueid`` and ``snapshots_by_document`` once a run,
holding Bloom filters, not sets, of what they met (``gc_java.py``).
"""

from __future__ import annotations

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
    EmptyReferences,
    dangling_references,
    drop_empty_references,
    is_unlisted_cut,
    listed_cut_ids,
    remove_cut,
    remove_reference,
)
from imixs_archive.filestore.reading import is_hashed
from imixs_archive.jsonable import Jsonable
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import (
    ARCHIVE_FILES,
    ARCHIVE_GARBAGE,
    ARCHIVE_PIECE_REFS,
    DOCUMENTS,
    DOCUMENTS_DATA,
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

    @property
    def reclaimable_bytes(self) -> int:
        """Bytes later collections free: those of the unused pieces, after this one."""
        return self.unused_bytes


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
    the clocks of the hosts may differ (tests on one host pass 0)."""
    report = GcReport(dry_run=dry_run)
    due = clock() - int(grace * 1_000_000)
    listed_ids = listed_cut_ids(backend)  # after ``due``: what is due was listed before it
    for row in list(backend.scan(ARCHIVE_GARBAGE)):
        checkpoint()
        since = int(row["since"])
        if since > due:
            report.waiting += 1
            report.waiting_bytes += int(row["size"])
            continue
        try:
            if row["kind"] in (CUT, REF):
                _remove_java(backend, row, since - clock_skew_us, listed_ids, report)
            else:
                _remove(backend, row, since - clock_skew_us, report, clock)
        except StoreError:
            raise
        except ArchiveError as exc:
            report.errors.append(f"{row['kind']} {row['id']}: {exc}")
    now = clock()
    for key, size in unused_files(backend):
        if listed(backend, FILE, key) is None:
            report.listed_files += 1
            report.listed_bytes += size
            if not dry_run:
                put_on_list(backend, FILE, key, size, now)
    for kind, data_id, piece_size in _loose_pieces(backend, listed_ids):
        report.java_pieces_found += kind == CUT
        if piece_size is None:
            continue  # listed already
        report.listed_pieces += 1
        report.java_pieces_listed += kind == CUT
        report.listed_bytes += piece_size
        if not dry_run:
            put_on_list(backend, kind, data_id, piece_size, now)
    _list_references(backend, report, now)
    # After a run every piece no file refers to is listed; a dry run listed none of them.
    unused = unused_now(backend, orphans=None if dry_run else 0)
    report.unused_files, report.unused_pieces = unused.files, unused.pieces
    report.unused_bytes = unused.bytes
    return report


def _remove_java(
    backend: Backend, row: dict[str, Any], before: int, listed_ids: BloomFilter, report: GcReport
) -> None:
    """Remove a listed Java-cut piece or dangling reference (``gc_java.py``)."""
    item, since, dry_run = row["id"], int(row["since"]), report.dry_run
    if row["kind"] == CUT:
        outcome = remove_cut(backend, item, since, before, listed_ids, dry_run=dry_run)
        if outcome == REMOVED:
            size = int(row["size"])
            report.removed_pieces += 1
            report.java_pieces_removed += 1
            report.bytes_freed += size
            report.java_bytes_freed += size
    else:
        outcome = remove_reference(backend, item, since, before, dry_run=dry_run)
        report.dangling_refs_removed += outcome == REMOVED
    report.kept += outcome == KEPT


def _list_references(backend: Backend, report: GcReport, now: int) -> None:
    """List the references from snapshots that are gone; drop the empty file's."""
    empty = EmptyReferences()
    for key, snapshot_id in dangling_references(backend, empty):
        report.dangling_refs_found += 1
        item = ref_id(key, snapshot_id)
        if listed(backend, REF, item) is None:
            report.dangling_refs_listed += 1
            if not report.dry_run:
                put_on_list(backend, REF, item, 0, now)
    report.empty_refs_removed = empty.rows
    if empty.rows and not report.dry_run:
        drop_empty_references(backend)


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
    """Every stored file's key: this archive's (``archive_files``) and Java's."""
    seen: set[str] = set()
    for row in backend.scan(ARCHIVE_FILES, columns=["md5"]):
        seen.add(row["md5"])
        yield row["md5"]
    last = None
    for row in backend.scan(DOCUMENTS, columns=["md5"]):
        key = row["md5"]
        if key != last and key not in seen:
            yield key
        last = key


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
    """(kind, id, bytes) of the pieces no file refers to: content-addressed ones
    (:data:`PIECE`) and, given ``listed_ids`` (``gc_java.listed_cut_ids``), those the Java
    service cut that no file lists (:data:`CUT`). Bytes are None for one already listed."""
    for row in backend.scan(DOCUMENTS_DATA, columns=["data_id"]):
        checkpoint()
        data_id = row["data_id"]
        if is_hashed(data_id):
            if piece_used(backend, data_id):
                continue
            kind = PIECE
        elif listed_ids is not None and is_unlisted_cut(backend, data_id, listed_ids):
            kind = CUT
        else:
            continue
        if listed(backend, kind, data_id) is not None:
            yield kind, data_id, None
            continue
        piece = backend.get(DOCUMENTS_DATA, {"data_id": data_id})
        if piece is not None:
            yield kind, data_id, len(piece["data"])


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

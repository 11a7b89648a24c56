"""What the collector (``gc.py``) finds beside the Java service, which leaves rows that no
rule of this archive's own writes and deletes would leave:

* **Pieces the Java service cut that no file lists** (:data:`CUT`): random ids in
  ``documents_data`` that no ``documents`` row names any more (a Java write cut short, a
  file whose rows both services wrote, a partition this archive rewrote). Found by one pass
  over ``documents`` into a Bloom filter of the listed ids (bounded memory, ``bloom.py``),
  then one over ``documents_data``. The Java service writes a file's ``documents_data``
  rows before its ``documents`` rows: a piece being written is found unlisted, and is
  removed only if, a grace period after its listing, a new pass over ``documents`` still
  finds no row naming it (and no ``archive_piece_refs`` row of this archive does).
* **References from snapshots that are gone** (:data:`REF`): ``snapshots_by_document``
  rows naming a snapshot whose ``snapshots`` row is missing. The Java service's delete
  (``deleteDocuments``) stops at the first file that still has a reference, and every file
  of this archive has one (its pin, ``garbage.py``): the other files' rows of the deleted
  snapshot stay. Both services write those rows *before* the ``snapshots`` row (this
  archive: ``archive/snapshots.py``; on SQLite in the same transaction), so a snapshot
  being stored has them without its row for the length of its write. A reference is
  removed only if, a grace period after its listing, its snapshot is still missing; on
  Cassandra only as written before the listing (a store that writes it again survives).
  The pins are no references.
* **References of this archive's pieces that their file no longer lists**
  (:data:`PIECE_REF`): when both services store one new file at once, the Java service's
  ``documents`` rows may land over this archive's (the same bytes at every place, in
  Java's cuts: the file stays whole), and the ``archive_piece_refs`` rows of the pieces
  they replaced would keep those pieces for ever. Found by one pass over ``documents``
  into a Bloom filter of its (key, piece) pairs, then one over ``archive_piece_refs``.
  This archive writes a file's references *before* its ``documents`` rows, so a file
  being written has references its rows do not list yet: a reference is removed only if,
  a grace period after its listing, its file's rows still do not list the piece; on
  Cassandra only as written before the listing. The piece, if no file uses it then, is
  listed by the next collection as any piece.
* **The empty file's references**: older versions of this archive wrote a row per
  snapshot into the single partition of the empty file's MD5 (the Java service writes
  none, and an empty file needs no stored content). The collector deletes that partition
  whole (one partition tombstone), at once: nothing depends on those rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from imixs_archive.budget import checkpoint
from imixs_archive.filestore.bloom import BloomFilter
from imixs_archive.filestore.files import piece_used
from imixs_archive.filestore.garbage import CUT, PIECE_REF, PIN, REF, listed, ref_of
from imixs_archive.filestore.reading import EMPTY_MD5, is_hashed
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import (
    ARCHIVE_GARBAGE,
    ARCHIVE_PIECE_REFS,
    DOCUMENTS,
    DOCUMENTS_DATA,
    SNAPSHOTS,
    SNAPSHOTS_BY_DOCUMENT,
    SNAPSHOTS_BY_UNIQUEID,
    Table,
)

REMOVED = "removed"
KEPT = "kept"
"""In use again: taken off the list."""
GONE = "gone"
"""Removed by someone else meanwhile: taken off the list."""
MOVED = "moved"
"""Taken off the list or listed again meanwhile: left alone."""


def listed_in_documents(backend: Backend) -> tuple[BloomFilter, BloomFilter]:
    """What the ``documents`` rows list now, in one pass (Bloom filters): the ids of the
    Java-cut pieces, and every (key, piece) pair (:func:`pair`)."""
    cut_ids, pairs = BloomFilter(), BloomFilter()
    for row in backend.scan(DOCUMENTS, columns=["md5", "data_id"]):
        checkpoint()
        data_id = row["data_id"]
        if not is_hashed(data_id):
            cut_ids.add(data_id)
        pairs.add(pair(row["md5"], data_id))
    return cut_ids, pairs


def pair(key: str, data_id: str) -> str:
    """A (file key, piece) pair as :func:`listed_in_documents` holds it."""
    return f"{key} {data_id}"


def is_unlisted_cut(backend: Backend, data_id: str, listed_ids: BloomFilter) -> bool:
    """Whether a stored piece is one the Java service cut that no file lists (neither a
    ``documents`` row, as of ``listed_ids``, nor this archive's piece references)."""
    return not is_hashed(data_id) and data_id not in listed_ids and not piece_used(backend, data_id)


def remove_cut(
    backend: Backend,
    item: str,
    since: int,
    before: int,
    listed_ids: BloomFilter,
    *,
    dry_run: bool,
) -> str:
    """Remove a listed Java-cut piece if it is still listed as it was and still unlisted
    by any file (``listed_ids``: a pass over ``documents`` begun a grace period or more
    after its listing). The outcome: :data:`REMOVED`, :data:`KEPT` or :data:`MOVED`."""
    with backend.grouped():  # SQLite: the re-checks and the removal are one transaction
        if listed(backend, CUT, item) != since:
            return MOVED
        if not is_unlisted_cut(backend, item, listed_ids):
            if not dry_run:
                backend.delete(ARCHIVE_GARBAGE, {"id": item, "kind": CUT})
            return KEPT
        if not dry_run:
            backend.delete(DOCUMENTS_DATA, {"data_id": item}, written_before=before)
            backend.delete(ARCHIVE_GARBAGE, {"id": item, "kind": CUT})
        return REMOVED


def lists(backend: Backend, key: str, data_id: str) -> bool:
    """Whether the file ``key``'s ``documents`` rows list the piece now."""
    rows = backend.scan(DOCUMENTS, {"md5": key}, columns=["data_id"])
    return any(row["data_id"] == data_id for row in rows)


def remove_piece_ref(backend: Backend, item: str, since: int, before: int, *, dry_run: bool) -> str:
    """Remove a listed piece reference if it is still listed as it was and its file still
    does not list the piece. The outcome: :data:`REMOVED`, :data:`KEPT`, :data:`GONE` or
    :data:`MOVED`."""
    data_id, key = ref_of(item)
    row = {"data_id": data_id, "md5": key}
    # KEPT: the file's rows were written (again) meanwhile; GONE: the file was released
    kept = partial(lists, backend, key, data_id)
    ref = _Listed(PIECE_REF, item, ARCHIVE_PIECE_REFS, row, kept)
    return _remove_listed(backend, ref, since, before, dry_run)


@dataclass(frozen=True)
class _Listed:
    """A reference on the list (``item`` of ``kind``): its ``row`` of ``table``, and
    whether it is in use again (``kept``)."""

    kind: str
    item: str
    table: Table
    row: dict[str, Any]
    kept: Callable[[], bool]


def _remove_listed(backend: Backend, ref: _Listed, since: int, before: int, dry_run: bool) -> str:
    """Remove a listed reference if it is still listed as it was (else MOVED), not in use
    again (else KEPT) and still there (else GONE); ``dry_run``: only the outcome."""
    with backend.grouped():  # SQLite: the re-checks and the removal are one transaction
        if listed(backend, ref.kind, ref.item) != since:
            return MOVED
        if ref.kept():
            outcome = KEPT
        elif backend.get(ref.table, ref.row, list(ref.row)[:1]) is None:
            outcome = GONE
        else:
            outcome = REMOVED
        if not dry_run:
            if outcome == REMOVED:
                backend.delete(ref.table, ref.row, written_before=before)
            backend.delete(ARCHIVE_GARBAGE, {"id": ref.item, "kind": ref.kind})
        return outcome


def snapshot_exists(backend: Backend, snapshot_id: str) -> bool:
    return backend.get(SNAPSHOTS, {"snapshot": snapshot_id}, ["snapshot"]) is not None


def indexed_snapshot_ids(backend: Backend) -> BloomFilter:
    """The ids ``snapshots_by_uniqueid`` names now (a Bloom filter): a snapshot in it is
    taken as present without a look-up (a wrong "in it" only keeps a reference)."""
    ids = BloomFilter()
    for row in backend.scan(SNAPSHOTS_BY_UNIQUEID, columns=["snapshot"]):
        checkpoint()
        ids.add(row["snapshot"])
    return ids


def is_dangling(backend: Backend, snapshot_id: str, indexed: BloomFilter) -> bool:
    """Whether a reference names a snapshot that is missing now (``indexed``:
    :func:`indexed_snapshot_ids`)."""
    return snapshot_id not in indexed and not snapshot_exists(backend, snapshot_id)


def drop_empty_references(backend: Backend, dry_run: bool = False) -> int:
    """The empty file's partition, whole (rows written later survive on Cassandra); how
    many references it held (its pin not counted). ``dry_run``: only counted."""
    rows = backend.scan(SNAPSHOTS_BY_DOCUMENT, {"md5": EMPTY_MD5}, columns=["snapshot"])
    count = sum(1 for row in rows if row["snapshot"] != PIN)
    if count and not dry_run:
        backend.delete(SNAPSHOTS_BY_DOCUMENT, {"md5": EMPTY_MD5})
    return count


def remove_reference(backend: Backend, item: str, since: int, before: int, *, dry_run: bool) -> str:
    """Remove a listed reference if it is still listed as it was and its snapshot still
    missing. The outcome: :data:`REMOVED`, :data:`KEPT`, :data:`GONE` or :data:`MOVED`."""
    key, snapshot_id = ref_of(item)
    row = {"md5": key, "snapshot": snapshot_id}
    # KEPT: the snapshot was stored (again) meanwhile; GONE: a delete of this archive finished
    kept = partial(snapshot_exists, backend, snapshot_id)
    ref = _Listed(REF, item, SNAPSHOTS_BY_DOCUMENT, row, kept)
    return _remove_listed(backend, ref, since, before, dry_run)

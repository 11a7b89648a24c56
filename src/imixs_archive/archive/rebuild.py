"""Rebuild the index and derived tables from what they are derived from: the rows of each
snapshot from the snapshot, the piece references from each file's pieces (``stats
--reconcile`` runs it, ``services/reconcile.py``, before it counts the facts again and
drops the kept figures). What ``verify`` reports under these tables
(``derived_checks.py``) is what this writes or removes.

Walks in the store's range order, like verify's, one partition at a time (a stopped run
goes on after the last partition it finished):

- ``snapshots``: every stored snapshot gets its ``snapshots_by_uniqueid`` and
  ``snapshots_by_modified`` rows, its day in the day index, a ``snapshots_by_document`` row
  per stored file, and (a snapshot this archive stored) one ``archive_snapshot_files`` row
  per file and none more; a file whose row is missing is found by its ``md5checksum``
  (when no file is stored under it, the snapshot is counted as not rebuilt: archive it
  again);
- ``instances``, ``days``, ``facts``: rows filed under another instance or day than their
  snapshot's are removed, as are facts that cannot be read (counted again from the XML by
  the reconcile) and facts of snapshots that are not stored;
- ``files``: every file this archive recorded complete gets a reference per
  content-addressed piece, with the piece's size (read where no reference says it, or
  where the references do not add up to the file's size).

Beside writers: only rows a stored snapshot (or a recorded file) implies are written, and
read again afterwards: a snapshot deleted (a file collected) meanwhile has what was just
written for it removed. Only rows that contradict a stored snapshot are removed, never
those of a snapshot being written or deleted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from imixs_archive.archive.days import DAYS, record_day, stamp_day
from imixs_archive.archive.derived_checks import (
    day_fault,
    fact_fault,
    files_disagree,
    instance_fault,
    is_stored,
)
from imixs_archive.archive.snapshot_reads import keys_of, load_complete
from imixs_archive.archive.verify import partitions
from imixs_archive.document.conventions import (
    METADATA_ID,
    iter_files,
    modified_day,
    origin_id,
)
from imixs_archive.document.model import Document
from imixs_archive.errors import ArchiveError
from imixs_archive.filestore.reading import EMPTY_MD5, is_hashed
from imixs_archive.storage.base import Backend, Position, Row
from imixs_archive.storage.model import (
    ARCHIVE_FILES,
    ARCHIVE_MODIFIED_DAYS,
    ARCHIVE_PIECE_REFS,
    ARCHIVE_SNAPSHOT_FACTS,
    ARCHIVE_SNAPSHOT_FILES,
    DOCUMENTS,
    DOCUMENTS_DATA,
    SNAPSHOTS,
    SNAPSHOTS_BY_DOCUMENT,
    SNAPSHOTS_BY_MODIFIED,
    SNAPSHOTS_BY_UNIQUEID,
    Table,
)

Repaired = Counter[str]
"""Rows written or removed, by table (and ``not rebuilt``: snapshots left as they were)."""
NOT_REBUILT = "not rebuilt"


@dataclass(frozen=True)
class Rebuild:
    name: str
    table: Table
    columns: tuple[str, ...]
    repair: Callable[[Backend, Sequence[Row], Repaired], None]


def rebuild_range(
    backend: Backend,
    name: str,
    after: Position | None,
    repaired: Repaired,
    done: Callable[[Position], None],
) -> None:
    """Rebuild from the walk ``name`` after ``after`` to its end; ``done(position)`` after
    each partition."""
    walk = next(w for w in REBUILDS if w.name == name)
    for at, rows in partitions(backend, walk.table, after, None, walk.columns):
        walk.repair(backend, rows, repaired)
        done(at)


# ---- from each snapshot -----------------------------------------------------------------


def _from_snapshot(backend: Backend, rows: Sequence[Row], repaired: Repaired) -> None:
    snapshot_id = rows[0]["snapshot"]
    if snapshot_id == METADATA_ID:
        return
    try:
        doc = load_complete(backend, snapshot_id)
        if doc is None:
            return  # deleted since the scan
        day = modified_day(doc)
    except ArchiveError:
        repaired[NOT_REBUILT] += 1  # unreadable: verify names it; archive it again
        return
    written: list[tuple[Table, Row]] = []
    ensure = _ensurer(backend, written, repaired)
    ensure(SNAPSHOTS_BY_UNIQUEID, {"uniqueid": origin_id(snapshot_id), "snapshot": snapshot_id})
    if backend.get(ARCHIVE_MODIFIED_DAYS, {"bucket": DAYS, "day": day}) is None:
        record_day(backend, day)
        repaired[ARCHIVE_MODIFIED_DAYS.name] += 1
    ensure(SNAPSHOTS_BY_MODIFIED, {"modified": day, "snapshot": snapshot_id})
    files = _file_rows(backend, snapshot_id, doc, ensure, repaired)
    for key in sorted(set(keys_of(doc, files).values()) - {EMPTY_MD5}):
        ensure(SNAPSHOTS_BY_DOCUMENT, {"md5": key, "snapshot": snapshot_id})
    if written:
        stamp_day(backend, day)
        if not is_stored(backend, snapshot_id):  # deleted meanwhile: what it left goes
            for table, row in written:
                backend.delete(table, {name: row[name] for name in table.primary_key})


def _ensurer(
    backend: Backend, written: list[tuple[Table, Row]], repaired: Repaired
) -> Callable[[Table, Row], None]:
    def ensure(table: Table, row: Row) -> None:
        key = {name: row[name] for name in table.primary_key}
        if backend.get(table, key) is None:
            backend.put(table, [row])
            written.append((table, row))
            repaired[table.name] += 1

    return ensure


def _file_rows(
    backend: Backend,
    snapshot_id: str,
    doc: Document,
    ensure: Callable[[Table, Row], None],
    repaired: Repaired,
) -> list[Row]:
    """The snapshot's ``archive_snapshot_files`` rows, made whole (a snapshot without
    any is the Java service's: left so)."""
    rows = list(backend.scan(ARCHIVE_SNAPSHOT_FILES, {"snapshot": snapshot_id}))
    if not rows or files_disagree(doc, rows) is None:
        return rows
    entries = {entry.name: entry for entry in iter_files(doc)}
    for row in rows:
        if row["name"] not in entries:
            backend.delete(ARCHIVE_SNAPSHOT_FILES, {"snapshot": snapshot_id, "name": row["name"]})
            repaired[ARCHIVE_SNAPSHOT_FILES.name] += 1
    have = {row["name"] for row in rows}
    for name, entry in entries.items():
        key = (entry.md5checksum or "").upper()
        if name in have:
            continue
        if not key or not _file_stored(backend, key):
            repaired[NOT_REBUILT] += 1  # the file's key is unknown: archive it again
            continue
        claimed = entry.md5checksum or ""
        row = {"snapshot": snapshot_id, "name": name, "md5": key, "claimed_md5": claimed}
        ensure(ARCHIVE_SNAPSHOT_FILES, row)
    return list(backend.scan(ARCHIVE_SNAPSHOT_FILES, {"snapshot": snapshot_id}))


def _file_stored(backend: Backend, key: str) -> bool:
    if backend.get(ARCHIVE_FILES, {"md5": key}, ["md5"]) is not None:
        return True
    return next(backend.scan(DOCUMENTS, {"md5": key}, limit=1), None) is not None


# ---- rows filed where they do not belong ---------------------------------------------


def _instance_rows(backend: Backend, rows: Sequence[Row], repaired: Repaired) -> None:
    uniqueid = rows[0]["uniqueid"]
    for row in rows:
        if instance_fault(uniqueid, row["snapshot"]) is not None:
            backend.delete(
                SNAPSHOTS_BY_UNIQUEID, {"uniqueid": uniqueid, "snapshot": row["snapshot"]}
            )
            repaired[SNAPSHOTS_BY_UNIQUEID.name] += 1


def _day_rows(backend: Backend, rows: Sequence[Row], repaired: Repaired) -> None:
    day = rows[0]["modified"]
    for row in rows:
        if day_fault(backend, day, row["snapshot"]) is not None:
            backend.delete(SNAPSHOTS_BY_MODIFIED, {"modified": day, "snapshot": row["snapshot"]})
            stamp_day(backend, day)
            repaired[SNAPSHOTS_BY_MODIFIED.name] += 1


def _facts(backend: Backend, rows: Sequence[Row], repaired: Repaired) -> None:
    """Facts that cannot be read, of a snapshot filed under another day, or of one not
    stored (a store writes its fact after the snapshot's row, a delete removes it first)."""
    day = rows[0]["day"]
    for row in rows:
        if fact_fault(backend, row, day) is not None:
            backend.delete(ARCHIVE_SNAPSHOT_FACTS, {"day": day, "snapshot": row["snapshot"]})
            stamp_day(backend, day)
            repaired[ARCHIVE_SNAPSHOT_FACTS.name] += 1


# ---- the references of each file's pieces ----------------------------------------------


def _piece_refs(backend: Backend, rows: Sequence[Row], repaired: Repaired) -> None:
    key = rows[0]["md5"]
    info = backend.get(ARCHIVE_FILES, {"md5": key}, ["size"])
    if info is None:
        return  # not recorded complete by this archive: no references
    ids = [row["data_id"] for row in rows]
    refs = {
        data_id: backend.get(ARCHIVE_PIECE_REFS, {"data_id": data_id, "md5": key}, ["size"])
        for data_id in dict.fromkeys(ids)
    }
    known = {d: int(r["size"]) for d, r in refs.items() if r is not None}
    whole = len(known) == len(refs) and sum(known[d] for d in ids) == int(info["size"])
    wrote = []
    for data_id in refs:
        if not is_hashed(data_id) or (whole and data_id in known):
            continue
        piece = backend.get(DOCUMENTS_DATA, {"data_id": data_id})
        if piece is None or known.get(data_id) == len(piece["data"]):
            continue
        ref = {"data_id": data_id, "md5": key, "size": len(piece["data"])}
        backend.put(ARCHIVE_PIECE_REFS, [ref])
        wrote.append(ref)
        repaired[ARCHIVE_PIECE_REFS.name] += 1
    if wrote and backend.get(ARCHIVE_FILES, {"md5": key}, ["md5"]) is None:
        for ref in wrote:  # collected meanwhile: no reference of ours keeps its pieces
            backend.delete(ARCHIVE_PIECE_REFS, {"data_id": ref["data_id"], "md5": key})


REBUILDS: tuple[Rebuild, ...] = (
    Rebuild("snapshots", SNAPSHOTS, ("snapshot",), _from_snapshot),
    Rebuild("instances", SNAPSHOTS_BY_UNIQUEID, ("uniqueid", "snapshot"), _instance_rows),
    Rebuild("days", SNAPSHOTS_BY_MODIFIED, ("modified", "snapshot"), _day_rows),
    Rebuild("facts", ARCHIVE_SNAPSHOT_FACTS, ("day", "snapshot", "data"), _facts),
    Rebuild("files", DOCUMENTS, ("md5", "sort_id", "data_id"), _piece_refs),
)
"""What a rebuild walks, in this order."""

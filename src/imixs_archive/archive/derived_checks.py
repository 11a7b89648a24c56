"""Do the index and derived tables agree with the snapshots they are derived from?

Each is checked both ways, in walks over the store in range order like every other check
of ``verify.py`` (one partition at a time, nothing gathered, so a walk is cut into parts
and slices and goes on after a stop):

- **from each snapshot** (the ``snapshots`` walk, which has its XML parsed anyway): its
  rows in ``snapshots_by_uniqueid`` and ``snapshots_by_modified`` (under its instance and
  its UTC day of ``$modified``), a ``snapshots_by_document`` row per stored file, one
  ``archive_snapshot_files`` row per file and none more (a snapshot the Java service
  stored has none at all), and its fact (``archive_snapshot_facts``, ``facts.py``: its
  quarter-hour, dimension values and attachment bytes as counted from the XML, and files
  it brought that it carries, with their sizes). A snapshot without a fact is counted as
  a warning: the Java service's have none, and a writer that stopped between a snapshot
  and its fact leaves it to be counted with its day;
- **from each index row**: a ``snapshots_by_uniqueid`` row names a snapshot of its
  instance; a ``snapshots_by_modified`` row or a fact names a stored snapshot of its day
  (read from the snapshot's XML where nothing else says so: a row without a fact, or a
  fact at the first or last quarter-hour, where :func:`facts.slot_in_day` puts a snapshot
  counted under a day that is not its own, of a snapshot not taken that day), and a fact
  can be read;
- **from each file** (the ``files`` walk, which reads its pieces anyway): a file this
  archive recorded complete (``archive_files``) has a reference per content-addressed
  piece in ``archive_piece_refs`` with the piece's size (without it, the collector would
  remove a piece in use; the Java service's pieces are their file's alone).

Rows that name a snapshot not stored are what a write or delete under way, or one that
died (re-run it), leaves, and the Java service's deletes beside this archive: not
reported as problems (the ``snapshot files`` walk warns about unfinished ones, this one
about facts left; day figures never count such a fact). What disagrees is
held and read again before it is reported (``rechecks.py``), and is reported under the
table to rebuild (``stats --reconcile`` rebuilds every one, ``store_damage.REBUILD``).
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from imixs_archive.archive.facts import (
    SLOTS_PER_DAY,
    Fact,
    dimension_labels,
    file_sizes,
    logical_bytes,
    slot_in_day,
)
from imixs_archive.archive.snapshot_reads import keys_of, load_complete
from imixs_archive.archive.store_damage import REBUILD
from imixs_archive.archive.verify_report import VerifyReport
from imixs_archive.document.conventions import (
    is_snapshot_id,
    iter_files,
    modified_day,
    origin_id,
    snapshot_time,
)
from imixs_archive.document.model import Document
from imixs_archive.errors import ArchiveError
from imixs_archive.filestore.reading import EMPTY_MD5, is_hashed
from imixs_archive.storage.base import Backend, Row
from imixs_archive.storage.model import (
    ARCHIVE_FILES,
    ARCHIVE_PIECE_REFS,
    ARCHIVE_SNAPSHOT_FACTS,
    ARCHIVE_SNAPSHOT_FILES,
    SNAPSHOTS,
    SNAPSHOTS_BY_DOCUMENT,
    SNAPSHOTS_BY_MODIFIED,
    SNAPSHOTS_BY_UNIQUEID,
    Table,
)

EDGE_SLOTS = frozenset({0, SLOTS_PER_DAY - 1})
"""Quarter-hours a fact counted under another day than its snapshot's gets (day figures
count a snapshot without a fact from its XML under the day its index row names)."""


@dataclass(frozen=True)
class Snapshot:
    """A stored snapshot as the ``snapshots`` walk read it."""

    id: str
    doc: Document
    day: dt.date
    files: list[Row]
    """Its ``archive_snapshot_files`` rows."""
    verified: bool
    """Its row carried a digest (this archive's); False: the Java service's, unsealed."""

    @functools.cached_property
    def keys(self) -> dict[str, str]:
        """File name -> stored key (``snapshot_reads.keys_of``)."""
        return keys_of(self.doc, self.files)


def is_stored(backend: Backend, snapshot_id: str) -> bool:
    return backend.get(SNAPSHOTS, {"snapshot": snapshot_id}, ["snapshot"]) is not None


def check_snapshot_rows(
    backend: Backend, report: VerifyReport, snap: Snapshot, sizes: Mapping[str, int]
) -> None:
    """Every row derived from one stored snapshot (``sizes``: its files' sizes by key)."""
    sid = snap.id
    _index_row(backend, report, SNAPSHOTS_BY_UNIQUEID, {"uniqueid": origin_id(sid)}, sid)
    _index_row(backend, report, SNAPSHOTS_BY_MODIFIED, {"modified": snap.day}, sid)
    for key in sorted(set(snap.keys.values()) - {EMPTY_MD5}):
        _index_row(backend, report, SNAPSHOTS_BY_DOCUMENT, {"md5": key}, sid)
    # A snapshot without rows of its files is the Java service's (keys from md5checksum)
    if snap.files and files_disagree(snap.doc, snap.files):
        report.suspect(ARCHIVE_SNAPSHOT_FILES.name, lambda: _files_again(backend, snap))
    row = backend.get(ARCHIVE_SNAPSHOT_FACTS, {"day": snap.day, "snapshot": sid})
    if row is None:  # counted with its day (facts.py): a warning, once it stands
        report.suspect(ARCHIVE_SNAPSHOT_FACTS.name, lambda: _factless_again(backend, report, snap))
    elif _fact_problem(row, snap, sizes) is not None:
        report.suspect(ARCHIVE_SNAPSHOT_FACTS.name, lambda: _fact_again(backend, snap))


def _index_row(
    backend: Backend, report: VerifyReport, table: Table, partition: Row, snapshot_id: str
) -> None:
    key = {**partition, "snapshot": snapshot_id}
    if backend.get(table, key) is not None:
        return

    def again() -> str | None:
        if backend.get(table, key) is not None or not is_stored(backend, snapshot_id):
            return None  # written since, or the snapshot was deleted meanwhile
        where = ", ".join(f"{v}" for v in partition.values())
        return f"snapshot {snapshot_id} is missing (under {where})"

    report.suspect(table.name, again)


def files_disagree(doc: Document, rows: Sequence[Row]) -> str | None:
    names = [entry.name for entry in iter_files(doc)]
    missing = sorted(set(names) - {row["name"] for row in rows})
    stray = sorted({row["name"] for row in rows} - set(names))
    if missing:
        return f"no row for the file(s) {missing}"
    if stray:
        return f"rows for file(s) {stray} the snapshot does not have"
    return None


def _files_again(backend: Backend, snap: Snapshot) -> str | None:
    rows = list(backend.scan(ARCHIVE_SNAPSHOT_FILES, {"snapshot": snap.id}))
    what = files_disagree(snap.doc, rows)
    if what is None or not is_stored(backend, snap.id):
        return None
    return f"snapshot {snap.id}: {what}"


def _factless_again(backend: Backend, report: VerifyReport, snap: Snapshot) -> None:
    key = {"day": snap.day, "snapshot": snap.id}
    if backend.get(ARCHIVE_SNAPSHOT_FACTS, key) is None and is_stored(backend, snap.id):
        report.factless += 1


def _fact_again(backend: Backend, snap: Snapshot) -> str | None:
    row = backend.get(ARCHIVE_SNAPSHOT_FACTS, {"day": snap.day, "snapshot": snap.id})
    if row is None or not is_stored(backend, snap.id):
        return None  # rewritten by a reconcile or deleted meanwhile
    sizes = file_sizes(backend, snap.doc, snap.keys)
    what = _fact_problem(row, snap, sizes)
    return None if what is None else f"the fact of snapshot {snap.id} ({snap.day}): {what}"


def _fact_problem(row: Row, snap: Snapshot, sizes: Mapping[str, int]) -> str | None:
    """How a stored fact differs from what its snapshot's XML and files say (what a whole
    count gives of the fact's own figures; which snapshot brought a file or its instance
    depends on the others, which ``stats --reconcile`` counts again). A fact that cannot
    be read is the facts walk's to name."""
    try:
        fact = Fact.decode(row["data"])
    except (ValueError, TypeError, KeyError):
        return None
    slot = slot_in_day(snap.doc, snap.day)
    labels = tuple(dimension_labels(snap.doc).values())
    keys = snap.keys
    logical = logical_bytes(snap.doc, keys, sizes)
    if fact.slot != slot:
        return f"quarter-hour {fact.slot}, the snapshot's is {slot}"
    if fact.labels != labels:
        return f"dimension values {list(fact.labels)}, the snapshot's are {list(labels)}"
    if fact.logical != logical:
        return f"{fact.logical} attachment bytes, the snapshot carries {logical}"
    for key, size in sorted(fact.new_files.items()):
        if key not in keys.values():
            return f"brought file {key}, which the snapshot does not carry"
        if sizes.get(key) != size:
            return f"brought file {key} of {size} bytes, stored with {sizes.get(key)}"
    return None


def day_fact_problems(backend: Backend, day: dt.date) -> list[str]:
    """How the facts of one day's snapshots (those its index lists: what day figures sum)
    differ from what the snapshots' XML says, as the ``snapshots`` walk checks them."""
    problems = []
    for row in backend.scan(SNAPSHOTS_BY_MODIFIED, {"modified": day}, columns=["snapshot"]):
        snapshot_id = row["snapshot"]
        fact = backend.get(ARCHIVE_SNAPSHOT_FACTS, {"day": day, "snapshot": snapshot_id})
        try:
            doc = load_complete(backend, snapshot_id) if fact is not None else None
        except ArchiveError:
            continue  # unreadable: the snapshots walk names it
        if fact is None or doc is None:
            continue
        files = list(backend.scan(ARCHIVE_SNAPSHOT_FILES, {"snapshot": snapshot_id}))
        snap = Snapshot(snapshot_id, doc, day, files, verified=True)
        sizes = file_sizes(backend, doc, snap.keys, recorded_sizes(backend, snap.keys))
        what = _fact_problem(fact, snap, sizes)
        if what is not None:
            problems.append(f"the fact of snapshot {snapshot_id} ({day}): {what}")
    return problems


# ---- the walks from the index rows ----------------------------------------------------


def check_instance(backend: Backend, rows: Sequence[Row], report: VerifyReport) -> None:
    """A ``snapshots_by_uniqueid`` partition: each row names a snapshot of its instance."""
    uniqueid = rows[0]["uniqueid"]
    for row in rows:
        fault = instance_fault(uniqueid, row["snapshot"])
        if fault is not None:
            report.disagrees(SNAPSHOTS_BY_UNIQUEID.name, fault)


def instance_fault(uniqueid: str, snapshot_id: str) -> str | None:
    """What is wrong with the row (``uniqueid``, ``snapshot_id``) of the instances' index."""
    if not is_snapshot_id(snapshot_id):
        return f"{uniqueid}: {snapshot_id!r} is no snapshot id"
    if origin_id(snapshot_id) != uniqueid:
        return f"snapshot {snapshot_id} is filed under another instance ({uniqueid})"
    return None


def check_day(backend: Backend, rows: Sequence[Row], report: VerifyReport) -> None:
    """A ``snapshots_by_modified`` partition: each row names a snapshot of its day."""
    day = rows[0]["modified"]
    for row in rows:
        if day_fault(backend, day, row["snapshot"]) is not None:
            again = functools.partial(_day_again, backend, day, row["snapshot"])
            report.suspect(SNAPSHOTS_BY_MODIFIED.name, again)


def day_fault(backend: Backend, day: dt.date, snapshot_id: str) -> str | None:
    """What is wrong with the row (``day``, ``snapshot_id``) of the days' index: a stored
    snapshot of another day (its XML read only where its fact does not say)."""
    fact = backend.get(ARCHIVE_SNAPSHOT_FACTS, {"day": day, "snapshot": snapshot_id})
    if fact is not None and settled_fact(fact, day):
        return None  # counted under this day from its XML: it is the snapshot's
    real = real_day(backend, snapshot_id)
    if real is None or real == day:
        return None
    return f"snapshot {snapshot_id} is filed under {day}, its $modified is on {real}"


def _day_again(backend: Backend, day: dt.date, snapshot_id: str) -> str | None:
    key = {"modified": day, "snapshot": snapshot_id}
    if backend.get(SNAPSHOTS_BY_MODIFIED, key) is None:
        return None
    return day_fault(backend, day, snapshot_id)


NOT_STORED = "names a snapshot that is not stored"
"""A fact's fault that is no problem: its snapshot was deleted by the Java service, or by
a delete that did not finish (day figures never count it: its snapshot is not indexed)."""


def check_facts(backend: Backend, rows: Sequence[Row], report: VerifyReport) -> None:
    """An ``archive_snapshot_facts`` partition: each fact can be read and names a stored
    snapshot of its day."""
    day = rows[0]["day"]
    for row in rows:
        if fact_fault(backend, row, day) is not None:
            again = functools.partial(_facts_again, backend, report, day, row["snapshot"])
            report.suspect(ARCHIVE_SNAPSHOT_FACTS.name, again)


def fact_fault(backend: Backend, row: Row, day: dt.date) -> str | None:
    """What is wrong with a fact of ``day`` (:data:`NOT_STORED` among it); None when it
    names a stored snapshot of the day (its XML read only where nothing else says so)."""
    snapshot_id = row["snapshot"]
    key = {"modified": day, "snapshot": snapshot_id}
    if settled_fact(row, day) and backend.get(SNAPSHOTS_BY_MODIFIED, key) is not None:
        return None
    try:
        Fact.decode(row["data"])
    except (ValueError, TypeError, KeyError):
        return "cannot be read"
    if not is_snapshot_id(snapshot_id):
        return "names no snapshot id"
    real = real_day(backend, snapshot_id)
    if real is not None:
        return None if real == day else f"is under {day}, the snapshot's $modified is on {real}"
    return NOT_STORED if not is_stored(backend, snapshot_id) else None  # else unreadable


def _facts_again(
    backend: Backend, report: VerifyReport, day: dt.date, snapshot_id: str
) -> str | None:
    row = backend.get(ARCHIVE_SNAPSHOT_FACTS, {"day": day, "snapshot": snapshot_id})
    fault = None if row is None else fact_fault(backend, row, day)  # gone: deleted
    if fault == NOT_STORED:
        report.warn(
            f"snapshot {snapshot_id} has a fact ({day}) but is not stored (deleted by the "
            f"Java service, or a delete that did not finish): {REBUILD} drops it"
        )
        return None
    return None if fault is None else f"the fact of snapshot {snapshot_id!r} ({day}) {fault}"


def settled_fact(row: Row, day: dt.date) -> bool:
    """The fact decodes and says its snapshot is of ``day``: it lies at neither end of the
    day (see ``EDGE_SLOTS``), or the snapshot was taken that day (its id's time: what its
    ``$modified`` is, but for snapshots imported or written by another service)."""
    try:
        slot = Fact.decode(row["data"]).slot
    except (ValueError, TypeError, KeyError):
        return False
    if slot not in EDGE_SLOTS:
        return True
    try:
        return snapshot_time(row["snapshot"]).date() == day
    except (ArchiveError, ValueError, OverflowError, OSError):
        return False


def real_day(backend: Backend, snapshot_id: str) -> dt.date | None:
    """The UTC day of a stored snapshot's ``$modified``; None when it is not stored or
    cannot be read (the snapshots walk names that)."""
    try:
        doc = load_complete(backend, snapshot_id)
        return None if doc is None else modified_day(doc)
    except ArchiveError:
        return None


# ---- the pieces of a file ----------------------------------------------------------------


def check_piece_refs(
    backend: Backend, report: VerifyReport, key: str, pieces: Sequence[tuple[str, int]]
) -> None:
    """A file recorded complete: each of its pieces (id, size read) has its reference."""
    for data_id, size in pieces:
        if not is_hashed(data_id):
            continue  # the Java service's piece, its file's alone: no reference
        if _ref_disagrees(backend, key, data_id, size) is not None:
            report.suspect(
                ARCHIVE_PIECE_REFS.name, functools.partial(_ref_again, backend, key, data_id, size)
            )


def _ref_disagrees(backend: Backend, key: str, data_id: str, size: int) -> str | None:
    ref = backend.get(ARCHIVE_PIECE_REFS, {"data_id": data_id, "md5": key}, ["size"])
    if ref is None:
        return f"file {key}: piece {data_id} has no reference (the collector would remove it)"
    if int(ref["size"]) != size:
        return f"file {key}: piece {data_id} is referenced with {ref['size']} bytes, holds {size}"
    return None


def _ref_again(backend: Backend, key: str, data_id: str, size: int) -> str | None:
    if backend.get(ARCHIVE_FILES, {"md5": key}, ["md5"]) is None:
        return None  # the collector removed the file meanwhile
    return _ref_disagrees(backend, key, data_id, size)


def recorded_sizes(backend: Backend, keys: Mapping[str, str]) -> dict[str, int]:
    """The size of each of a snapshot's files this archive recorded complete
    (``archive_files``), by key; the others (the Java service's, or missing) left out."""
    found: dict[str, int] = {}
    for key in sorted(set(keys.values())):
        row = backend.get(ARCHIVE_FILES, {"md5": key}, ["size"])
        if row is not None:
            found[key] = int(row["size"])
    return found

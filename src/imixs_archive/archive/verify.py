"""``verify``: re-read everything and check it against its hashes and references.

Problems (corrupt or missing data) make ``verify`` fail. Warnings are facts worth knowing
that lose nothing: a document whose md5checksum was wrong, pieces no file uses, a
snapshot write or delete that died part-way (re-run it).

The checks are walks over five tables, each in the store's range order
(``Backend.scan_range``: the token ring on Cassandra, the partition key on SQLite), one
partition at a time, nothing gathered: a walk can be cut into ranges (parts of one verify,
the scrub's slices, ``verify_runs.py`` and ``scrub.py``) and go on after the last partition
it finished.

- ``pieces`` (documents_data): every piece read; one with a SHA-256 id must hash to it,
  and a file must use it;
- ``snapshots``: every row read, checked against its digest (or parsed: the Java
  service's rows carry none) and its index rows; its files must be stored;
- ``files`` (documents): every file's pieces read in order, its MD5 and its digest and
  size (archive_files) computed again;
- ``file records`` (archive_files): each must have its pieces' list;
- ``snapshot files`` (archive_snapshot_files): writes or deletes that did not finish, and
  md5checksums that were wrong;
- ``instances``, ``days``, ``facts`` (snapshots_by_uniqueid, snapshots_by_modified,
  archive_snapshot_facts): each row names a snapshot of its instance or day
  (``derived_checks.py``, which also checks, from each snapshot and each file, every row
  derived from it).

What disagrees between two tables is read again before it is reported (``rechecks.py``):
a check beside writers reports what is wrong, not what was being written or deleted. A
read the store refuses for damage in its own file is reported under the table it read and
the walk goes on (``store_damage.py``); a walk the damage stops is reported and the next
one begins.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from imixs_archive.archive.days import add_missing_days
from imixs_archive.archive.derived_checks import (
    Snapshot,
    check_day,
    check_facts,
    check_instance,
    check_piece_refs,
    check_snapshot_rows,
    recorded_sizes,
)
from imixs_archive.archive.facts import file_sizes
from imixs_archive.archive.rechecks import Rechecks
from imixs_archive.archive.snapshot_xml import parse_stored, read_stored, seal_row
from imixs_archive.archive.store_damage import (
    REBUILD,
    TableUnreadable,
    check_file,
    table_reads,
    unreadable,
)
from imixs_archive.archive.verify_report import VerifyReport
from imixs_archive.document.conventions import METADATA_ID, modified_day, origin_id
from imixs_archive.errors import ArchiveError, IntegrityError
from imixs_archive.filestore.gc import unused_now
from imixs_archive.filestore.reading import EMPTY_MD5, pieces_digest
from imixs_archive.storage.base import Backend, Position, Row
from imixs_archive.storage.model import (
    ARCHIVE_FILES,
    ARCHIVE_PIECE_REFS,
    ARCHIVE_SNAPSHOT_FACTS,
    ARCHIVE_SNAPSHOT_FILES,
    DOCUMENTS,
    DOCUMENTS_DATA,
    SNAPSHOTS,
    SNAPSHOTS_BY_MODIFIED,
    SNAPSHOTS_BY_UNIQUEID,
    Table,
)

SHA256_ID = re.compile(r"^[0-9a-f]{64}$")
Progress = Callable[[str], None]
Check = Callable[[Backend, Sequence[Row], VerifyReport], None]


@dataclass(frozen=True)
class Walk:
    """One table walked: the columns read in the walk, the check of each partition."""

    name: str
    table: Table
    columns: tuple[str, ...]
    check: Check
    counts: str
    """What one partition is, for progress: pieces, snapshots, files ('': not counted)."""


def walk_range(
    backend: Backend,
    walk: Walk,
    after: Position | None,
    upto: Position | None,
    report: VerifyReport,
    done: Callable[[Position], None] | None = None,
) -> None:
    """Check the partitions of ``walk``'s table after ``after`` and up to ``upto``, one at
    a time; ``done(position)`` after each (where a stopped walk goes on). What it held to
    read again is reported by its end (``rechecks.py``). A walk that damage in the store's
    file stops is reported, and ends there (``store_damage.py``)."""
    reads = table_reads(backend)
    if report.held is None:
        report.held = Rechecks.of(backend)
    at: Position | None = after
    try:
        for at, rows in partitions(reads, walk.table, after, upto, walk.columns):
            _check_group(reads, walk, at, rows, report, done)
    except TableUnreadable as exc:
        past = f" past {at}" if at is not None else ""
        unreadable(reads, report, exc, f"{walk.table.name}: the walk{past}")
    report.settle(wait=True)


def partitions(
    backend: Backend,
    table: Table,
    after: Position | None,
    upto: Position | None,
    columns: Sequence[str],
) -> Iterator[tuple[Position, list[Row]]]:
    """Each partition of ``table`` after ``after`` and up to ``upto`` in the store's range
    order (``Backend.scan_range``): its position and its rows, one partition at a time."""
    group: list[Row] = []
    key: tuple[Any, ...] | None = None
    at: Position | None = None
    for position, row in backend.scan_range(table, after, upto, columns=columns):
        this = tuple(row[name] for name in table.partition_key)
        if group and this != key:
            yield at, group
            group = []
        group.append(row)
        key, at = this, position
    if group:
        yield at, group


def _check_group(
    backend: Backend,
    walk: Walk,
    at: Position,
    rows: list[Row],
    report: VerifyReport,
    done: Callable[[Position], None] | None,
) -> None:
    report.where = (walk.name, at)
    try:
        walk.check(backend, rows, report)
    except TableUnreadable as exc:
        unreadable(backend, report, exc, f"{walk.name} at {at}")
    report.where = None
    report.settle()
    if done is not None:
        done(at)


def verify(
    backend: Backend, progress: Progress | None = None, walks: Sequence[Walk] | None = None
) -> VerifyReport:
    """The whole archive, at once, remembering nothing (``verify_runs.py`` goes on where a
    stopped one ended). ``walks``: :data:`WALKS` and those of the layers above (the kept
    figures' checks, ``analytics/figure_checks.py``)."""
    report = VerifyReport()
    start_whole(backend, report)
    tick = progress or (lambda _stage: None)
    for walk in walks or WALKS:
        walk_range(backend, walk, None, None, report, ticker(walk, tick))
    return finish(backend, report)


def ticker(walk: Walk, tick: Progress) -> Callable[[Position], None]:
    """``tick(what)`` for each partition of a walk that counts its partitions."""

    def done(_at: Position) -> None:
        if walk.counts:
            tick(walk.counts)

    return done


def start_whole(backend: Backend, report: VerifyReport, *, full: bool = False) -> None:
    """What a whole verify checks before the walks: damage the store found on its own,
    and its check of its own file (``full``: the thorough one, ``store_damage.py``)."""
    for finding in backend.findings():
        report.problem(finding)
    check_file(backend, report, full=full)


def finish(backend: Backend, report: VerifyReport, *, whole: bool = True) -> VerifyReport:
    """What only a whole verify counts once the walks are done (``whole``), and the
    warning about rows without a digest."""
    if whole:
        reads = table_reads(backend)
        try:
            _count_unused(reads, report)
        except TableUnreadable as exc:
            unreadable(reads, report, exc, "the count of unused files and pieces")
        try:
            _add_days(reads, report)
        except TableUnreadable as exc:
            unreadable(reads, report, exc, "the days of snapshots_by_modified")
    if report.factless:
        report.warn(
            f"{report.factless} snapshot(s) have no fact yet (the Java service's, or a writer "
            "stopped between a snapshot and its fact): each is counted when its day is, "
            f"or by {REBUILD}"
        )
    if report.unverified:
        report.warn(
            f"{report.unverified} snapshot row(s) had no digest (written by the Java service "
            f"or an earlier version of this archive): checked as XML only; {report.sealed} "
            "sealed now, so every later read checks them"
        )
    return report


def _count_unused(backend: Backend, report: VerifyReport) -> None:
    unused = unused_now(backend, orphans=report.loose_pieces)
    report.unused_files, report.unused_pieces = unused.files, unused.pieces
    report.reclaimable_bytes = unused.bytes


def _add_days(backend: Backend, report: VerifyReport) -> None:
    added = add_missing_days(backend)
    if added:
        report.warn(
            f"{len(added)} day(s) of snapshots were missing from the day index (stored "
            f"by another writer, e.g. the Java service: {', '.join(map(str, added[:5]))}"
            f"{', ...' if len(added) > 5 else ''}): added now, so that listings, ranged "
            "backups and analytics see them"
        )


# ---- the checks, one partition each ----------------------------------------------------


def _read_again(
    backend: Backend, table: Table, key: dict[str, Any], report: VerifyReport, named: str
) -> Row | None:
    """The row the scan met, read whole, one at a time: one that cannot be unpacked is a
    problem (``named: why``), not fatal; None for that and for one removed since the
    scan."""
    try:
        return backend.get(table, key)
    except IntegrityError as exc:
        report.problem(f"{named}: {exc}")
        return None


def _check_piece(backend: Backend, rows: Sequence[Row], report: VerifyReport) -> None:
    data_id = rows[0]["data_id"]
    report.pieces += 1
    row = _read_again(backend, DOCUMENTS_DATA, {"data_id": data_id}, report, f"piece {data_id}")
    if row is None:
        return
    report.bytes_read += len(row["data"])
    if SHA256_ID.match(data_id) and hashlib.sha256(row["data"]).hexdigest() != data_id:
        report.problem(f"piece {data_id}: bytes do not match its SHA-256")
    if (
        SHA256_ID.match(data_id)
        and next(backend.scan(ARCHIVE_PIECE_REFS, {"data_id": data_id}, limit=1), None) is None
    ):
        report.loose_pieces += 1
        report.warn(
            f"piece {data_id}: no file uses it (an aborted write, or a file removed by "
            "gc: the next gc runs remove it)"
        )


def _check_snapshot(backend: Backend, rows: Sequence[Row], report: VerifyReport) -> None:
    """A ``snapshots`` row (the service state's included); one whose packed cell cannot
    be unpacked (the embedded store) is a problem named by its id."""
    snapshot_id = rows[0]["snapshot"]
    if snapshot_id != METADATA_ID:
        report.snapshots += 1
    named = f"{_named(snapshot_id)}: damaged in the store"
    row = _read_again(backend, SNAPSHOTS, {"snapshot": snapshot_id}, report, named)
    if row is None:
        return
    report.bytes_read += len(row["data"] or b"")
    try:
        stored = read_stored(backend, row)
        doc = parse_stored(snapshot_id, stored)
    except ArchiveError as exc:
        report.problem(f"{_named(snapshot_id)}: {_without(snapshot_id, exc)}")
        return
    if not stored.verified:
        report.unverified += 1
        report.sealed += seal_row(backend, row, stored)
    if snapshot_id == METADATA_ID:
        return
    try:
        day = modified_day(doc)
        origin_id(snapshot_id)
    except ArchiveError as exc:
        report.problem(f"snapshot {snapshot_id}: unreadable: {exc}")
        return
    files = list(backend.scan(ARCHIVE_SNAPSHOT_FILES, {"snapshot": snapshot_id}))
    snap = Snapshot(snapshot_id, doc, day, files, stored.verified)
    recorded = recorded_sizes(backend, snap.keys)
    for name, key in snap.keys.items():
        if key not in recorded and not _file_present(backend, key):
            report.problem(f"snapshot {snapshot_id}: file {name!r} ({key}) is missing")
    sizes = file_sizes(backend, doc, snap.keys, recorded)
    check_snapshot_rows(backend, report, snap, sizes)


def _named(snapshot_id: str) -> str:
    return (
        "the service state (row '0')" if snapshot_id == METADATA_ID else f"snapshot {snapshot_id}"
    )


def _without(snapshot_id: str, exc: ArchiveError) -> str:
    """The error's message without the ``snapshot <id>: `` it starts with."""
    return str(exc).removeprefix(f"snapshot {snapshot_id}: ")


def _file_present(backend: Backend, key: str) -> bool:
    if key == EMPTY_MD5:
        return True  # no bytes to keep (the Java service stores no rows for empty content)
    if backend.get(ARCHIVE_FILES, {"md5": key}, ["md5"]) is not None:
        return True
    return next(backend.scan(DOCUMENTS, {"md5": key}, limit=1), None) is not None  # Java data


def _check_file(backend: Backend, rows: Sequence[Row], report: VerifyReport) -> None:
    """A file: its ``documents`` rows (the pieces in order), each piece read; one this
    archive recorded complete has a reference per piece (``derived_checks.py``)."""
    key = rows[0]["md5"]
    report.files += 1
    md5, size, ids = hashlib.md5(), 0, []
    sizes: dict[str, int] = {}
    missing = False
    for row in rows:
        try:
            piece = backend.get(DOCUMENTS_DATA, {"data_id": row["data_id"]})
        except IntegrityError:
            report.problem(f"file {key}: piece {row['data_id']} is damaged")
            missing = True
            continue
        ids.append(row["data_id"])
        if piece is None:
            report.problem(f"file {key}: piece {row['data_id']} is missing")
            missing = True
            continue
        md5.update(piece["data"])
        size += len(piece["data"])
        sizes[row["data_id"]] = len(piece["data"])
    report.bytes_read += size
    if missing:
        return
    if md5.hexdigest().upper() != key[:32]:
        report.problem(f"file {key}: content has MD5 {md5.hexdigest().upper()}")
    info = backend.get(ARCHIVE_FILES, {"md5": key})
    if info is None:
        return  # the Java service's: no digest to check
    check_piece_refs(backend, report, key, sorted(sizes.items()))
    ours = all(SHA256_ID.match(data_id) for data_id in ids)  # else cut by the Java service
    if info["size"] != size or (ours and info["digest"] != pieces_digest(ids)):
        report.problem(f"file {key}: content does not match its digest or size")


def _check_file_record(backend: Backend, rows: Sequence[Row], report: VerifyReport) -> None:
    """A file this archive recorded complete must have its pieces' list (checked, with
    its pieces, by the ``files`` walk)."""
    key = rows[0]["md5"]
    if key == EMPTY_MD5 or next(backend.scan(DOCUMENTS, {"md5": key}, limit=1), None):
        return
    report.files += 1
    report.problem(f"file {key}: its pieces are missing (no documents rows)")


def _check_snapshot_files(backend: Backend, rows: Sequence[Row], report: VerifyReport) -> None:
    snapshot_id = rows[0]["snapshot"]
    if backend.get(SNAPSHOTS, {"snapshot": snapshot_id}, ["snapshot"]) is None:
        report.warn(
            f"snapshot {snapshot_id}: a write or delete did not finish (import it again, "
            "or delete it again)"
        )
    for row in rows:
        if row["claimed_md5"] and row["claimed_md5"].upper() != row["md5"][:32]:
            report.warn(
                f"snapshot {snapshot_id}: file {row['name']!r} claimed md5checksum "
                f"{row['claimed_md5']} but has MD5 {row['md5'][:32]}"
            )


WALKS: tuple[Walk, ...] = (
    Walk("pieces", DOCUMENTS_DATA, ("data_id",), _check_piece, "pieces"),
    Walk("snapshots", SNAPSHOTS, ("snapshot",), _check_snapshot, "snapshots"),
    Walk("files", DOCUMENTS, ("md5", "sort_id", "data_id"), _check_file, "files"),
    Walk("file-records", ARCHIVE_FILES, ("md5",), _check_file_record, ""),
    Walk(
        "snapshot-files",
        ARCHIVE_SNAPSHOT_FILES,
        ("snapshot", "name", "md5", "claimed_md5"),
        _check_snapshot_files,
        "",
    ),
    Walk("instances", SNAPSHOTS_BY_UNIQUEID, ("uniqueid", "snapshot"), check_instance, ""),
    Walk("days", SNAPSHOTS_BY_MODIFIED, ("modified", "snapshot"), check_day, ""),
    Walk("facts", ARCHIVE_SNAPSHOT_FACTS, ("day", "snapshot", "data"), check_facts, ""),
)

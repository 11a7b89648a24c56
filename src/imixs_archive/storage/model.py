"""The archive's data model, declared once.

Both backends derive everything from these declarations: SQLite its DDL and statements
(``storage/sqlite/``), Cassandra its CQL (``storage/cassandra/``). The six tables of
the Java Imixs-Archive keyspace keep their names and columns exactly, so either service
can read a keyspace the other wrote. Extra tables, prefixed ``archive_``, hold what
the Java service does not record; it ignores them.

Service state (``sync.point``, ``sync.count``, ``restore.*`` ...) is kept as the Java
service keeps it: an XML document in the ``snapshots`` row with id ``'0'``
(see ``archive/service_state.py``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from enum import StrEnum


class ColumnType(StrEnum):
    """Logical column types; the names are CQL's."""

    TEXT = "text"
    BLOB = "blob"
    INT = "int"
    BIGINT = "bigint"
    DATE = "date"  # Python datetime.date


@dataclass(frozen=True)
class Column:
    name: str
    type: ColumnType


@dataclass(frozen=True)
class Packing:
    """A BLOB cell the embedded store keeps compressed where that pays (``storage/packing.py``).

    ``marker`` names the column, on the embedded store only, that records the choice per
    row: NULL for a cell stored as given (every row written before packing existed), else
    the size of the bytes its zstd frame holds. Readers never see it: the store unpacks the
    cell. Cassandra compresses whole tables instead (``storage/cassandra/cql.py``) and has no such
    column, so the Java tables keep their columns exactly."""

    cell: str
    marker: str


@dataclass(frozen=True)
class Table:
    """One table: one query it serves, keyed by partition key then clustering key."""

    name: str
    columns: tuple[Column, ...]
    partition_key: tuple[str, ...]
    clustering_key: tuple[str, ...] = ()
    serves: str = ""
    java: bool = True
    """Part of the Java Imixs-Archive keyspace (False: an ``archive_`` extra table)."""
    holds_pieces: bool = False
    """Holds attachment bytes: large cells, compressed with zstd where available."""
    packing: Packing | None = None
    """A cell the embedded store compresses per row when that pays (see :class:`Packing`)."""
    large_cells: bool = False
    """Holds other large, compressible cells (snapshot XML): zstd where available (on the
    embedded store through ``packing``)."""
    queue: bool = False
    """Rows come and go all the time (a work list scanned whole): on Cassandra its
    tombstones are purged after 3 hours instead of 10 days (``gc_grace_seconds``), so a
    scan never walks more than a few hours of deletes."""
    kept_by_readers: bool = False
    """Written by commands that only read: job books, figures and an index they keep so
    that the next asks cost the same. On a store that cannot be written (the embedded
    store on a read-only file system) such writes go to a copy of the table kept for the
    process's life (``storage/sqlite/read_only.py``); every other write is refused."""

    # Derived once: every row written or read asks (a frozen dataclass keeps them in its
    # __dict__), and a table hashes by its name (the stores key caches by table).
    @functools.cached_property
    def primary_key(self) -> tuple[str, ...]:
        return self.partition_key + self.clustering_key

    @functools.cached_property
    def column_names(self) -> tuple[str, ...]:
        return tuple(column.name for column in self.columns)

    @functools.cached_property
    def value_columns(self) -> tuple[str, ...]:
        return tuple(name for name in self.column_names if name not in self.primary_key)

    def __hash__(self) -> int:
        return hash(self.name)

    def column(self, name: str) -> Column:
        for column in self.columns:
            if column.name == name:
                return column
        raise KeyError(f"{self.name} has no column {name!r}")

    def __post_init__(self) -> None:
        names = self.column_names
        for key in self.primary_key:
            if key not in names:
                raise ValueError(f"{self.name}: key column {key!r} is not declared")
        if not self.partition_key:
            raise ValueError(f"{self.name}: a partition key is required")
        if self.packing is not None:
            cell, marker = self.packing.cell, self.packing.marker
            if cell not in names or self.column(cell).type is not ColumnType.BLOB:
                raise ValueError(f"{self.name}: packed cell {cell!r} is not a declared BLOB")
            if marker in names:
                raise ValueError(f"{self.name}: packing marker {marker!r} is a declared column")


def _cols(*pairs: tuple[str, ColumnType]) -> tuple[Column, ...]:
    return tuple(Column(name, kind) for name, kind in pairs)


T, B, N, BI, D = (
    ColumnType.TEXT,
    ColumnType.BLOB,
    ColumnType.INT,
    ColumnType.BIGINT,
    ColumnType.DATE,
)

SNAPSHOTS = Table(
    "snapshots",
    _cols(("snapshot", T), ("data", B)),
    partition_key=("snapshot",),
    serves="Q1: one snapshot's XML (file contents emptied) by snapshot id; "
    "its presence marks the snapshot complete. Row '0' holds the service state.",
    large_cells=True,
    packing=Packing(cell="data", marker="raw_size"),
)
SNAPSHOTS_BY_UNIQUEID = Table(
    "snapshots_by_uniqueid",
    _cols(("uniqueid", T), ("snapshot", T)),
    partition_key=("uniqueid",),
    clustering_key=("snapshot",),
    serves="Q2: the snapshots of one process instance, in time order (ids end in millis).",
)
SNAPSHOTS_BY_MODIFIED = Table(
    "snapshots_by_modified",
    _cols(("modified", D), ("snapshot", T)),
    partition_key=("modified",),
    clustering_key=("snapshot",),
    serves="Q3: the snapshots whose $modified falls on one UTC day.",
)
DOCUMENTS = Table(
    "documents",
    _cols(("md5", T), ("sort_id", N), ("data_id", T)),
    partition_key=("md5",),
    clustering_key=("sort_id",),
    serves="Q4: the ordered pieces of one file, by the file's MD5 (upper-case hex).",
)
DOCUMENTS_DATA = Table(
    "documents_data",
    _cols(("data_id", T), ("data", B)),
    partition_key=("data_id",),
    serves="Q5: the bytes of one piece, by its id (hex SHA-256 here; a UUID when Java wrote it).",
    holds_pieces=True,
    packing=Packing(cell="data", marker="raw_size"),
)
SNAPSHOTS_BY_DOCUMENT = Table(
    "snapshots_by_document",
    _cols(("md5", T), ("snapshot", T)),
    partition_key=("md5",),
    clustering_key=("snapshot",),
    serves="Q6: the snapshots that use one file (to delete files no longer used).",
)
ARCHIVE_FILES = Table(
    "archive_files",
    _cols(("md5", T), ("digest", T), ("size", BI), ("pieces", N)),
    partition_key=("md5",),
    serves="Q7: a file's digest (the SHA-256 over its ordered piece ids), size "
    "and piece count, by its documents key; written after its documents rows, so its "
    "presence marks the file complete.",
    java=False,
)
ARCHIVE_FILE_CUTS = Table(
    "archive_file_cuts",
    _cols(("md5", T), ("digest", T), ("ledger_digest", T)),
    partition_key=("md5",),
    serves="Q34: a file stored in other pieces than the content-defined ones (the Java "
    "service's 1 MiB cuts, filestore/chunking.py): the digest the ledger logs of it (over "
    "the SHA-256s of its content-defined cuts), valid while archive_files.digest is "
    "`digest`. No row: the file's archive_files.digest is that digest.",
    java=False,
)
ARCHIVE_SNAPSHOT_FILES = Table(
    "archive_snapshot_files",
    _cols(("snapshot", T), ("name", T), ("md5", T), ("claimed_md5", T)),
    partition_key=("snapshot",),
    clustering_key=("name",),
    serves="Q8: where each file of a snapshot is stored (its documents key) and the MD5 the "
    "document claimed, so a wrong md5checksum or an MD5 collision never returns wrong bytes.",
    java=False,
)

ARCHIVE_SNAPSHOT_PARTS = Table(
    "archive_snapshot_parts",
    _cols(("snapshot", T), ("part", N), ("data", B)),
    partition_key=("snapshot",),
    clustering_key=("part",),
    serves="Q15: the XML of a snapshot too large for its snapshots cell (over the node's "
    "mutation limit less 64 KiB, 16 MiB by default, files emptied), in 1 MiB parts; "
    "the snapshots row then holds a marker with their count, "
    "size and SHA-256 (see archive/snapshot_xml.py).",
    java=False,
    large_cells=True,
    packing=Packing(cell="data", marker="raw_size"),
)

ARCHIVE_PIECE_REFS = Table(
    "archive_piece_refs",
    _cols(("data_id", T), ("md5", T), ("size", BI)),
    partition_key=("data_id",),
    clustering_key=("md5",),
    serves="Q9: the files (documents keys) that use one piece, and the piece's size: a piece "
    "is deleted when its last file is; sizes give stored bytes without reading pieces.",
    java=False,
)
ARCHIVE_FILE_HEADS = Table(
    "archive_file_heads",
    _cols(("head", T), ("md5", T)),
    partition_key=("head",),
    clustering_key=("md5",),
    serves="Q13: the files (documents keys) whose first 32 KiB have this SHA-256: an "
    "attachment arriving again is compared byte by byte with its stored twin instead of "
    "being hashed and cut again. A hint only: rows may outlive their file.",
    java=False,
)

# The collector's list (filestore/gc.py): what nothing referred to when it was last looked
# at, and since when. Removed only after a grace period longer than any ingest; an ingest
# that reuses a listed item takes it off the list first. Small: only garbage is listed.
ARCHIVE_GARBAGE = Table(
    "archive_garbage",
    _cols(("id", T), ("kind", T), ("since", BI), ("size", BI)),
    partition_key=("id",),
    clustering_key=("kind",),
    serves="Q14: files (kind 'file', by documents key), pieces (kind 'piece', by id), "
    "pieces the Java service cut that no file lists (kind 'java-piece') and references "
    "from snapshots that are gone (kind 'reference', '<key> <snapshot>') "
    "that nothing referred to since a time (epoch microseconds), with their bytes: removed "
    "by the collector once the grace period has passed and they are still unreferenced.",
    java=False,
)

# The analytics' own table (analytics/day_store.py is the one module that reads and writes
# it). One serialized row per day rather than a row per (day, dimension, value): a day's
# figures are then written in one single-row mutation (atomic on both backends, so its
# presence means the day is complete), replaced by writing one row, and read ten years at a
# time as ~3,650 rows. The values of a dimension (creators, task ids) are open-ended, which
# per-value rows would spread over many rows with no completeness marker. Partitioned by
# year: at most 366 rows of a few KB each (a day with thousands of distinct creators: a
# few hundred KB), far under Cassandra's partition guidance. Row format 2 (the same
# columns) keeps UTC days in quarter-hour cells per process instance, so any time zone's
# days are assembled from them (analytics/cells.py): a row then grows with the day's
# snapshots, ~60 bytes per cell (a day with 10,000 snapshots: ~0.6 MB).
ARCHIVE_DAY_AGGREGATES = Table(
    "archive_day_aggregates",
    _cols(("year", N), ("day", D), ("version", N), ("data", B)),
    partition_key=("year",),
    clustering_key=("day",),
    serves="Q10: the analytics figures of one finished UTC day of $modified in quarter-hour "
    "cells (snapshots, process instances, new files and bytes, per dimension values), from "
    "which the days of any time zone are assembled; computed once and stored with the "
    "day's change stamp (Q21): computed again when the stamp differs (see "
    "analytics/day_store.py, row format 3).",
    java=False,
    kept_by_readers=True,
)

# What the analytics count of each snapshot, kept when it is stored (archive/facts.py):
# its quarter-hour, dimension values, attachment bytes, the files it brought into the archive
# and whether it brought its process instance. Partitioned like snapshots_by_modified (one
# partition per UTC day, a row per snapshot, ~150 bytes), so a day's figures are one
# partition read and never a parse of its snapshots' XML.
ARCHIVE_SNAPSHOT_FACTS = Table(
    "archive_snapshot_facts",
    _cols(("day", D), ("snapshot", T), ("data", B)),
    partition_key=("day",),
    clustering_key=("snapshot",),
    serves="Q29: the figures of each snapshot of one UTC day of $modified (slot, dimension "
    "values, logical bytes, new files, first of its instance), written with the snapshot, "
    "so day figures are counted without reading any snapshot (see archive/facts.py).",
    java=False,
)

# The analytics' whole-day figures without process instance ids (analytics/day_summary.py):
# quarter-hour sums and per dimension value sums of one UTC day, a few KB whatever the
# day's snapshots. Whole-archive views (stats, the Statistics page, the Monitor) read these
# only: a row per day, ~3,650 for ten years. Stored with the day's change stamp like the
# day aggregates, and counted again from the day's facts when the stamp differs.
ARCHIVE_DAY_SUMMARIES = Table(
    "archive_day_summaries",
    _cols(("year", N), ("day", D), ("version", N), ("data", B)),
    partition_key=("year",),
    clustering_key=("day",),
    serves="Q30: per UTC day of $modified, the day's figures summed per quarter-hour and "
    "per dimension value, with new process instances, and the change stamp they were "
    "counted at (see analytics/day_store.py).",
    java=False,
    kept_by_readers=True,
)

# The whole-archive figures of one UTC month in the days of one time zone, kept once all its
# days are over (analytics/archive_figures.py): a view of ten years reads ~120 of these and
# the day stamps, whatever the archive holds. Valid while the month's day stamps are the
# ones it was counted at (a digest of them is kept with it).
ARCHIVE_MONTH_FIGURES = Table(
    "archive_month_figures",
    _cols(("zone", T), ("month", T), ("data", B)),
    partition_key=("zone",),
    clustering_key=("month",),
    serves="Q32: per time zone and UTC month, the month's snapshots, files and bytes per "
    "local day, per dimension value and its new instances, with the digest of the day "
    "stamps they were counted at.",
    java=False,
    kept_by_readers=True,
)

# The last whole count of the store's own tables (pieces, stored bytes, unused files and
# pieces): ``stats --full``, and serve once a day, write it; views show it with its time.
ARCHIVE_CENSUS = Table(
    "archive_census",
    _cols(("name", T), ("data", B)),
    partition_key=("name",),
    serves="Q31: the last census of the store (what stats --full counted, and when), by "
    "name ('store').",
    java=False,
    kept_by_readers=True,
)

# The archive's own record that a day's snapshots changed, so that whoever keeps figures of
# a day (the analytics' archive_day_aggregates) knows when they are stale without the
# archive touching their table. Every store and delete of a snapshot writes its day's row
# of the process doing it (a new random stamp), after the index row and before the
# snapshots row: figures counted with the day's stamps read before their snapshots were
# read either saw the change or carry a stamp that no longer matches. A row per process
# (writer), not one per day: one process's writes are ordered by its own monotonic write
# times, while two processes' writes to one row would be ordered by their clocks (a later
# write from a host whose clock is behind would be lost). Partitioned by year like the
# figures: a row per day and process that changed it, a few KB a year.
ARCHIVE_DAY_CHANGES = Table(
    "archive_day_changes",
    _cols(("year", N), ("day", D), ("writer", T), ("stamp", T)),
    partition_key=("year",),
    clustering_key=("day", "writer"),
    serves="Q21: for each UTC day of $modified, a change stamp per process that stored or "
    "deleted a snapshot of it (the day's stamp is all of them), so stored day figures "
    "know when they are stale.",
    java=False,
)

# The sync's own bookkeeping (sync/service.py, docs/sync.md). A row per failing event, not
# items in the '0' state document: two sync processes update different events at once,
# and single-row upserts never lose each other's writes (a read-modify-write of one shared
# document would). Only the process whose claim on the event stands writes its row.
ARCHIVE_SYNC_FAILURES = Table(
    "archive_sync_failures",
    _cols(
        ("event_id", T),
        ("topic", T),
        ("ref", T),
        ("status", T),
        ("attempts", N),
        ("next_attempt", BI),
        ("first_failed", BI),
        ("last_failed", BI),
        ("error", T),
    ),
    partition_key=("event_id",),
    serves="Q11: workflow events whose archiving failed, by event id: attempts, when to try "
    "again (epoch ms), the last error; status 'retry' or 'dead' (the dead-letter list).",
    java=False,
    queue=True,
)
ARCHIVE_SYNC_INSTANCES = Table(
    "archive_sync_instances",
    _cols(
        ("instance", T),
        ("started", BI),
        ("updated", BI),
        ("state", T),
        ("events", BI),
        ("archived", BI),
        ("removed", BI),
        ("bytes", BI),
        ("failures", BI),
        ("retries", BI),
        ("dead_letters", BI),
        ("lag_ms", BI),
    ),
    partition_key=("instance",),
    serves="Q12: each sync process's counters since it started (epoch ms), written after "
    "every round, for `imixs-archive sync --status`.",
    java=False,
)

# Which days have snapshots, so that a listing over a long range of days costs what it
# returns rather than one query per calendar day (from year 1 that is 740,000 queries).
# One partition (bucket 0): a row per day that ever had a snapshot, a few KB a decade. The
# row (bucket 1, 0001-01-01) says the index is complete: written once the days of
# snapshots_by_modified that existed before this table were copied in
# (archive/snapshots.py). Rows outlive their snapshots: an emptied day costs one query.
ARCHIVE_MODIFIED_DAYS = Table(
    "archive_modified_days",
    _cols(("bucket", N), ("day", D)),
    partition_key=("bucket",),
    clustering_key=("day",),
    serves="Q16: the UTC days of $modified that have (or had) snapshots, in day order.",
    java=False,
    kept_by_readers=True,
)

# The sync's own record of the work it takes, so that nothing depends on the workflow's
# event log keeping an event (its release deletes locked events; see docs/sync.md).
ARCHIVE_SYNC_CLAIMS = Table(
    "archive_sync_claims",
    _cols(("event_id", T), ("topic", T), ("ref", T), ("instance", T), ("claimed", BI)),
    partition_key=("event_id",),
    serves="Q17: workflow events a sync process has taken, written before it works on them and "
    "deleted once the event is done: a claim left older than WORKFLOW_SYNC_DEADLOCK (its "
    "process died, or the event vanished) is finished by any process from its ref.",
    java=False,
    queue=True,
)
ARCHIVE_SYNC_GONE = Table(
    "archive_sync_gone",
    _cols(("ref", T), ("event_id", T), ("topic", T), ("gone_at", BI), ("instance", T)),
    partition_key=("ref",),
    serves="Q18: snapshots the workflow no longer held (404) when their event was handled: "
    "final, never retried (with SNAPSHOT_HISTORY=1 the workflow deletes intermediate ones).",
    java=False,
)
ARCHIVE_SYNC_PROGRESS = Table(
    "archive_sync_progress",
    _cols(("name", T), ("point", BI), ("updated", BI), ("owner", T), ("note", T)),
    partition_key=("name",),
    serves="Q19: the catch-up over /snapshot/syncpoint: 'catchup' holds the $modified (epoch "
    "ms) up to which every snapshot the workflow holds is archived; 'skipped:<from>' rows the "
    "ranges it could not read (more than 16 snapshots sharing one timestamp); 'resync-stop' "
    "a stop asked of the running resync (its own row, so no save of the state loses it).",
    java=False,
)

# Legal holds (services/retention.py, docs/retention.md): one row per held process instance.
# Its own table, not an item in the instance's snapshots (snapshots never change once
# written) nor in the '0' state document (two operators placing holds at once would lose
# one in a read-modify-write); a single-row upsert or delete per hold. Small: listed whole.
ARCHIVE_LEGAL_HOLDS = Table(
    "archive_legal_holds",
    _cols(("uniqueid", T), ("reason", T), ("placed", BI), ("placed_by", T)),
    partition_key=("uniqueid",),
    serves="Q20: whether a process instance is under legal hold (no snapshot of it is "
    "deleted while it is), why, since when (epoch ms) and by whom.",
    java=False,
)

# The version of what this archive keeps in a store (its own tables and the form of its
# rows), so that an older version of the archive refuses a store a newer one changed instead
# of misreading it (archive/versions.py). One row; the Java service ignores the table.
ARCHIVE_VERSIONS = Table(
    "archive_versions",
    _cols(("name", T), ("version", N), ("written_by", T)),
    partition_key=("name",),
    serves="Q22: the version of the store's layout ('store'), raised by an archive version "
    "that changes it, and the archive version that wrote it.",
    java=False,
)

# The ledger (archive/ledger_books.py, ledger/, docs/ledger.md): an append-only log of what
# the archive did, the leaves of an RFC 6962 Merkle tree whose heads are signed. An entry is
# queued with the change it records (a store or delete of a snapshot, a hold placed or
# released), then sequenced into the log by one process at a time; the log's rows are
# written once (insert if absent: a lightweight transaction on Cassandra), and the head
# row, which alone says how long the log is, moves by compare and set.
ARCHIVE_LEDGER_QUEUE = Table(
    "archive_ledger_queue",
    _cols(("slot", N), ("subject", T), ("entry_key", T), ("entry", T)),
    partition_key=("slot",),
    clustering_key=("subject", "entry_key"),
    serves="Q23: ledger entries written with their change and not yet in the log, by the "
    "minute they were written (slot: epoch minutes), then subject (a snapshot id, or "
    "'hold:' and a process instance) and the order they were made in (the key starts with "
    "the time, epoch ms). The sequencer reads the minutes since the oldest it has not "
    "finished (and always the last five), deleting what it logged: the deletes of minutes "
    "it has finished are never read again.",
    java=False,
    queue=True,
)
ARCHIVE_LEDGER_ENTRIES = Table(
    "archive_ledger_entries",
    _cols(("bucket", N), ("idx", BI), ("entry", T), ("hash", B)),
    partition_key=("bucket",),
    clustering_key=("idx",),
    serves="Q24: the log: entry number idx (bucket idx >> 14, 16,384 to a partition) and its "
    "RFC 6962 leaf hash, in log order. Written once; only entries below the head's size are "
    "in the log (rows past it were written by a sequencer that stopped before moving it, "
    "and are taken over as they are by the next one).",
    java=False,
)
ARCHIVE_LEDGER_NODES = Table(
    "archive_ledger_nodes",
    _cols(("level", N), ("bucket", N), ("idx", BI), ("hash", B)),
    partition_key=("level", "bucket"),
    clustering_key=("idx",),
    serves="Q25: the hash of each complete subtree of the log's tree with 2**level entries "
    "(level >= 1) starting at entry idx * 2**level: proofs read log2(size) of them.",
    java=False,
)
ARCHIVE_LEDGER_HEAD = Table(
    "archive_ledger_head",
    _cols(("name", T), ("state", T)),
    partition_key=("name",),
    serves="Q26: the ledger's small books as JSON, by name: 'tree' (size, root, the "
    "compact range of its subtrees, origin, the last checkpoint), 'lease' (which process "
    "sequences, until when), 'verify' (the last ledger verify).",
    java=False,
)
ARCHIVE_LEDGER_SUBJECTS = Table(
    "archive_ledger_subjects",
    _cols(("subject", T), ("idx", BI), ("kind", T), ("digest", T)),
    partition_key=("subject",),
    serves="Q27: the last log entry about each subject (a snapshot id, or 'hold:' and a "
    "process instance): its number, kind and digest. Derived from the log, checked "
    "against it by ledger verify.",
    java=False,
)
ARCHIVE_LEDGER_CHECKPOINTS = Table(
    "archive_ledger_checkpoints",
    _cols(("year", N), ("size", BI), ("note", T), ("written", BI)),
    partition_key=("year",),
    clustering_key=("size",),
    serves="Q28: every signed checkpoint (a C2SP signed note) by the year it was written "
    "and the tree size it signs, and when (epoch ms).",
    java=False,
)

# The books of verify and the scrub (archive/check_books.py, archive/scrub.py): where a
# stopped verify goes on, how a verify split into parts is cut, how far the scrub is, what
# it covered and found. A few small rows, written every few thousand rows checked.
ARCHIVE_CHECKS = Table(
    "archive_checks",
    _cols(("name", T), ("state", T)),
    partition_key=("name",),
    serves="Q33: the books of verify and the scrub as JSON, by name: 'verify/K/N' (where "
    "part K of N of an unfinished verify stands, with what it found so far), 'verify-plan/N' "
    "(where the parts of a verify split N ways are cut), 'scrub' (the scrub's cycle: where it "
    "stands in each table, what it covered when, its findings), 'scrub-lease' and "
    "'verify-lease/K/N' (which process scrubs, or runs that part, until when).",
    java=False,
    kept_by_readers=True,
)

TABLES: tuple[Table, ...] = (
    SNAPSHOTS,
    SNAPSHOTS_BY_UNIQUEID,
    SNAPSHOTS_BY_MODIFIED,
    DOCUMENTS,
    DOCUMENTS_DATA,
    SNAPSHOTS_BY_DOCUMENT,
    ARCHIVE_FILES,
    ARCHIVE_SNAPSHOT_FILES,
    ARCHIVE_PIECE_REFS,
    ARCHIVE_FILE_HEADS,
    ARCHIVE_GARBAGE,
    ARCHIVE_DAY_AGGREGATES,
    ARCHIVE_SYNC_FAILURES,
    ARCHIVE_SYNC_INSTANCES,
    ARCHIVE_SNAPSHOT_PARTS,
    ARCHIVE_MODIFIED_DAYS,
    ARCHIVE_SYNC_CLAIMS,
    ARCHIVE_SYNC_GONE,
    ARCHIVE_SYNC_PROGRESS,
    ARCHIVE_LEGAL_HOLDS,
    ARCHIVE_DAY_CHANGES,
    ARCHIVE_VERSIONS,
    ARCHIVE_LEDGER_QUEUE,
    ARCHIVE_LEDGER_ENTRIES,
    ARCHIVE_LEDGER_NODES,
    ARCHIVE_LEDGER_HEAD,
    ARCHIVE_LEDGER_SUBJECTS,
    ARCHIVE_LEDGER_CHECKPOINTS,
    ARCHIVE_SNAPSHOT_FACTS,
    ARCHIVE_DAY_SUMMARIES,
    ARCHIVE_CENSUS,
    ARCHIVE_MONTH_FIGURES,
    ARCHIVE_CHECKS,
    ARCHIVE_FILE_CUTS,
)
JAVA_TABLES = tuple(table for table in TABLES if table.java)


def table(name: str) -> Table:
    for candidate in TABLES:
        if candidate.name == name:
            return candidate
    raise KeyError(name)

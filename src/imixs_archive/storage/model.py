"""The archive's data model, declared once.

Everything about the tables is derived from these declarations: the SQLite DDL and
statements (``storage/sqlite/``), the Cassandra CQL (``storage/cassandra/``) and the page
``docs/data-model.md`` (``scripts/data_model_doc.py``). The six tables of
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


class Wing(StrEnum):
    """Who owns a table: only the modules of its wing's packages name it (checked by
    ``tests/test_layers.py``); another wing reaches it through the owner's typed books."""

    ARCHIVE = "archive"
    """The snapshot store and the file store, with what the archive derives from each
    snapshot in the write that stores it (indexes, day stamps, the analytics' facts), legal
    holds, the store's version and the books of its jobs (``archive/``, ``filestore/``)."""
    LEDGER = "ledger"
    """The ledger's queue, log, tree and books (``ledger/``; the queue is written with the
    change it records through ``ledger/books.py``)."""
    SYNC = "sync"
    """The sync's claims, failures, gone snapshots, progress and counters (``sync/``)."""
    ANALYTICS = "analytics"
    """Figures kept by the analytics: day aggregates and summaries, month figures, the
    census (``analytics/``)."""

    @property
    def packages(self) -> tuple[str, ...]:
        """The packages of ``imixs_archive`` whose modules may name the wing's tables."""
        return ("archive", "filestore") if self is Wing.ARCHIVE else (self.value,)


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
    query: int = 0
    """The number of the query it serves (Q1, Q2 ...): docs, comments and code cite it, so
    a number is never changed nor reused. 0: a table outside the model (tests)."""
    owner: Wing | None = None
    """The wing whose modules alone name it (see :class:`Wing`); None: a table outside the
    model (tests)."""
    serves: str = ""
    """What the query reads, and what a reader of the table must know (who writes it, in
    which order, what marks a row complete), in Markdown: docs/data-model.md prints it
    (``scripts/data_model_doc.py``)."""
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

    @property
    def java(self) -> bool:
        """Part of the Java Imixs-Archive keyspace: a table whose name has no ``archive_``
        prefix (the prefix marks this archive's extra tables)."""
        return not self.name.startswith("archive_")

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
    query=1,
    owner=Wing.ARCHIVE,
    serves="one snapshot's XML (file contents emptied) by snapshot id, followed by its "
    "SHA-256 in an XML comment (`<!--imixs-archive sha256:...-->`, checked on every read; "
    "rows the Java service wrote have none until `verify` adds it); a snapshot too large "
    "for the cell holds a marker of its parts instead (Q15). Written after the snapshot's "
    "files and index rows, so its presence marks the snapshot complete. Row `'0'` holds "
    "the service state (`archive/service_state.py`)",
    large_cells=True,
    packing=Packing(cell="data", marker="raw_size"),
)
SNAPSHOTS_BY_UNIQUEID = Table(
    "snapshots_by_uniqueid",
    _cols(("uniqueid", T), ("snapshot", T)),
    partition_key=("uniqueid",),
    clustering_key=("snapshot",),
    query=2,
    owner=Wing.ARCHIVE,
    serves="the snapshots of one process instance, in time order (snapshot ids end in "
    "epoch millis; newest first reads the partition in reverse). Written before the "
    "`snapshots` row and deleted last, so a delete that died part-way is found and "
    "finished (`archive/snapshots.py`)",
)
SNAPSHOTS_BY_MODIFIED = Table(
    "snapshots_by_modified",
    _cols(("modified", D), ("snapshot", T)),
    partition_key=("modified",),
    clustering_key=("snapshot",),
    query=3,
    owner=Wing.ARCHIVE,
    serves="the snapshots whose `$modified` falls on one UTC day (listings, restores and "
    "exports by date range; which days have any: Q16)",
)
DOCUMENTS = Table(
    "documents",
    _cols(("md5", T), ("sort_id", N), ("data_id", T)),
    partition_key=("md5",),
    clustering_key=("sort_id",),
    query=4,
    owner=Wing.ARCHIVE,
    serves="the ordered pieces of one file, by its documents key: the file's MD5 "
    "(upper-case hex), as the Java service reads it, or `<MD5>-SHA256:<digest>` when other "
    "bytes hold that MD5 (a collision); a file's rows are written in one mutation, up to "
    "10,000 pieces (`filestore/files.py`)",
)
DOCUMENTS_DATA = Table(
    "documents_data",
    _cols(("data_id", T), ("data", B)),
    partition_key=("data_id",),
    query=5,
    owner=Wing.ARCHIVE,
    serves="the bytes of one piece by its id: the piece's SHA-256 (hex) here, shared by "
    "every file that holds it; a random UUID when the Java service wrote it, used by that "
    "file alone and deleted with it",
    holds_pieces=True,
    packing=Packing(cell="data", marker="raw_size"),
)
SNAPSHOTS_BY_DOCUMENT = Table(
    "snapshots_by_document",
    _cols(("md5", T), ("snapshot", T)),
    partition_key=("md5",),
    clustering_key=("snapshot",),
    query=6,
    owner=Wing.ARCHIVE,
    serves="the snapshots that use one file, by documents key (none for the empty file), "
    "to collect files no longer used (read newest first, one row); plus one *pin* row "
    "(snapshot `!archive`) per file this archive registered, which keeps the Java "
    "service's delete off it (`filestore/garbage.py`)",
)
ARCHIVE_FILES = Table(
    "archive_files",
    _cols(("md5", T), ("digest", T), ("size", BI), ("pieces", N)),
    partition_key=("md5",),
    query=7,
    owner=Wing.ARCHIVE,
    serves="a file's digest (the SHA-256 over its ordered piece ids), size and piece count "
    "by its documents key; written after its `documents` rows, so its presence marks the "
    "file complete, and removed first when the collector releases the file",
)
ARCHIVE_FILE_CUTS = Table(
    "archive_file_cuts",
    _cols(("md5", T), ("digest", T), ("ledger_digest", T)),
    partition_key=("md5",),
    query=34,
    owner=Wing.ARCHIVE,
    serves="a file stored in other pieces than the content-defined ones (the Java "
    "service's 1 MiB cuts, `ARCHIVE_FILE_CUTS=java`, the default on Cassandra): the digest "
    "the ledger logs of it (over the SHA-256s of its content-defined cuts), valid while "
    "`archive_files.digest` is the row's `digest`; no row: `archive_files.digest` is that "
    "digest (see [java-compatibility.md](java-compatibility.md#one-file-stored-by-both-services))",
)
ARCHIVE_SNAPSHOT_FILES = Table(
    "archive_snapshot_files",
    _cols(("snapshot", T), ("name", T), ("md5", T), ("claimed_md5", T)),
    partition_key=("snapshot",),
    clustering_key=("name",),
    query=8,
    owner=Wing.ARCHIVE,
    serves="where each file of a snapshot is stored (its documents key) and the MD5 the "
    "document claimed, so a wrong `md5checksum` or an MD5 collision never returns wrong "
    "bytes; a delete removes it after the `snapshots` row, so a re-run still finds the "
    "files of a snapshot whose row is gone",
)

ARCHIVE_SNAPSHOT_PARTS = Table(
    "archive_snapshot_parts",
    _cols(("snapshot", T), ("part", N), ("data", B)),
    partition_key=("snapshot",),
    clustering_key=("part",),
    query=15,
    owner=Wing.ARCHIVE,
    serves="the XML of a snapshot too large for its `snapshots` cell (over the node's "
    "mutation limit less 64 KiB, 16 MiB by default, files emptied), in 1 MiB parts, written "
    "before the `snapshots` row and deleted after it; that row then holds a marker (a NUL "
    "byte first) with their count, size and SHA-256, checked on every read "
    "(`archive/snapshot_xml.py`)",
    large_cells=True,
    packing=Packing(cell="data", marker="raw_size"),
)

ARCHIVE_PIECE_REFS = Table(
    "archive_piece_refs",
    _cols(("data_id", T), ("md5", T), ("size", BI)),
    partition_key=("data_id",),
    clustering_key=("md5",),
    query=9,
    owner=Wing.ARCHIVE,
    serves="the files (documents keys) that use one piece, and the piece's size, written "
    "before the file's `documents` rows: the collector lists a piece once no file uses it "
    "(Q14); stored bytes are summed without reading pieces",
)
ARCHIVE_FILE_HEADS = Table(
    "archive_file_heads",
    _cols(("head", T), ("md5", T)),
    partition_key=("head",),
    clustering_key=("md5",),
    query=13,
    owner=Wing.ARCHIVE,
    serves="the files (documents keys) whose first 32 KiB have this SHA-256: on a store "
    "whose reads are local (SQLite), an attachment that arrives again is compared byte by "
    "byte with its stored twin instead of hashed and cut again (`filestore/twin.py`). A "
    "hint: a row may outlive its file, the lookup skips it",
)

# The collector's list (filestore/gc.py): what nothing referred to when it was last looked
# at, and since when. Removed only after a grace period longer than any ingest; an ingest
# that reuses a listed item takes it off the list first. Small: only garbage is listed.
ARCHIVE_GARBAGE = Table(
    "archive_garbage",
    _cols(("id", T), ("kind", T), ("since", BI), ("size", BI)),
    partition_key=("id",),
    clustering_key=("kind",),
    query=14,
    owner=Wing.ARCHIVE,
    serves="the files (kind `file`, by documents key), pieces (`piece`, by id), pieces "
    "the Java service cut that no file lists (`java-piece`), piece references their file "
    "no longer lists (`piece-reference`, id `<piece id> <documents key>`) and references "
    "from snapshots that are gone (`reference`, id `<documents key> <snapshot id>`) that "
    "nothing referred to when the collector last looked, since when (epoch µs) and their "
    "bytes: removed a grace period (`ARCHIVE_GC_GRACE`) later if still unreferenced; an "
    "ingest reusing one takes it off first (see [architecture.md]"
    "(architecture.md#deleting-and-garbage-collection))",
)

# The analytics' own table (analytics/day_store.py is the one module that reads and writes
# it). One serialized row per day rather than a row per (day, dimension, value): a day's
# figures are then written in one single-row mutation (atomic on both backends, so its
# presence means the day is complete), replaced by writing one row, and read ten years at a
# time as ~3,650 rows. The values of a dimension (creators, task ids) are open-ended, which
# per-value rows would spread over many rows with no completeness marker. Partitioned by
# year: at most 366 rows. Since row format 2 (the same columns) a row keeps the UTC day in
# cells of (quarter hour, process instance, dimension values), so any time zone's days are
# assembled from them (analytics/cells.py): a row grows with the day's snapshots, ~60
# bytes per cell (a day with 10,000 snapshots: ~0.6 MB).
ARCHIVE_DAY_AGGREGATES = Table(
    "archive_day_aggregates",
    _cols(("year", N), ("day", D), ("version", N), ("data", B)),
    partition_key=("year",),
    clustering_key=("day",),
    query=10,
    owner=Wing.ANALYTICS,
    serves="the analytics figures of one finished UTC day of `$modified` in cells of "
    "(quarter hour, process instance, dimension values) with their snapshots, new files "
    "and bytes and the bytes they carry, from which the days of any time zone are "
    "assembled (one row per day, partitioned by year): computed once and stored with the "
    "day's change stamp (Q21), computed again when the stamp differs or `version` is not "
    "the current row format (`analytics/day_store.py`); the analytics' own table, which "
    "the archive never touches",
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
    query=29,
    owner=Wing.ARCHIVE,
    serves="what the analytics count of each snapshot of one UTC day of `$modified` (its "
    "quarter hour, dimension values, attachment bytes, the files it brought into the "
    "archive and whether it brought its process instance), written after its `snapshots` "
    "row, removed first by a delete: a day is counted from one partition without parsing "
    "any XML (`archive/facts.py`)",
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
    query=30,
    owner=Wing.ANALYTICS,
    serves="the sums of one finished UTC day of `$modified` (per quarter hour and per "
    "dimension value, with the new process instances) without instance ids: a few KB "
    "whatever the day holds; what whole-archive views read, written after the day's "
    "aggregates with the same change stamp (Q21)",
    kept_by_readers=True,
)

# Figures of finished periods kept per time zone (analytics/month_cache.py,
# analytics/archive_figures.py), so that a view over ten years reads ~120 months of them
# and the day stamps, whatever the archive holds. A kept period is valid while the change
# stamps of the UTC days it covers are the ones it was counted at (a digest of them is kept
# with it). The partition is `<kind>@<zone>`: `sums` (the whole-archive figures of a UTC
# month), `days` (analyze aggregates), `leads` (lead times), `dfg:<group>` (a process map).
ARCHIVE_MONTH_FIGURES = Table(
    "archive_month_figures",
    _cols(("zone", T), ("month", T), ("data", B)),
    partition_key=("zone",),
    clustering_key=("month",),
    query=32,
    owner=Wing.ANALYTICS,
    serves="figures of a finished period in the days of one time zone, by kind and zone "
    "(`zone` is `<kind>@<zone>`) and period (`month`: `2025-03`, or a day `2025-03-07` of "
    "a month not over), with a digest of the day stamps (Q21) they were counted at: the "
    "whole-archive figures of a UTC month (`sums`: per local day and dimension value, new "
    "instances), a local month's day figures (`days`), lead-time samples (`leads`), a "
    "workflow group's process map events (`dfg:<group>`)",
    kept_by_readers=True,
)

# The last whole count of the store's own tables (pieces, stored bytes, unused files and
# pieces): `stats --full` writes it, and `serve` once it is older than
# ARCHIVE_CENSUS_INTERVAL; views show it with its time.
ARCHIVE_CENSUS = Table(
    "archive_census",
    _cols(("name", T), ("data", B)),
    partition_key=("name",),
    query=31,
    owner=Wing.ANALYTICS,
    serves="small records of the store's figures as JSON, by name: `store`, the last "
    "census (what `stats --full` counted of files, pieces and stored bytes, and when); "
    "`reconcile`, how far an unfinished `stats --reconcile` got",
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
# figures: a row per day and process that changed it (~100 bytes: one process, ~40 KB a
# year).
ARCHIVE_DAY_CHANGES = Table(
    "archive_day_changes",
    _cols(("year", N), ("day", D), ("writer", T), ("stamp", T)),
    partition_key=("year",),
    clustering_key=("day", "writer"),
    query=21,
    owner=Wing.ARCHIVE,
    serves="each UTC day's change stamp: a row per day of `$modified` and process that "
    "stored or deleted a snapshot of it (a new random stamp each time, written after the "
    "index row and before the `snapshots` row; also the day of the instance's newest other "
    "snapshot, whose lead time changed), so stored day figures know when they are stale "
    "(`archive/days.py`)",
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
    query=11,
    owner=Wing.SYNC,
    serves="workflow events whose archiving failed, by event id: attempts, when to try "
    "again (epoch ms), the first and last failure, the last error; status `retry` or "
    "`dead` (a dead letter, put back into the workflow's event log by `sync --retry`). One "
    "row per event, written only by the process whose claim on it (Q17) stands",
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
    query=12,
    owner=Wing.SYNC,
    serves="each sync process's counters since it started (times in epoch ms), written "
    "after every round, for `sync --status` and the monitor; a row not updated for a week "
    "is deleted when a sync starts",
)

# Which days have snapshots, so that a listing over a long range of days costs what it
# returns rather than one query per calendar day (from year 1 that is 740,000 queries).
# One partition (bucket 0): a row per day that ever had a snapshot, ~40 bytes (ten years:
# ~150 KB). The row (bucket 1, 0001-01-01) says the index is complete: written once the
# days of snapshots_by_modified that existed before this table were copied in
# (archive/days.py). Rows outlive their snapshots: an emptied day costs one query.
ARCHIVE_MODIFIED_DAYS = Table(
    "archive_modified_days",
    _cols(("bucket", N), ("day", D)),
    partition_key=("bucket",),
    clustering_key=("day",),
    query=16,
    owner=Wing.ARCHIVE,
    serves="the UTC days of `$modified` that have (or had) snapshots, in day order: a "
    "listing over a long range walks the days that exist instead of every calendar day; "
    "built from `snapshots_by_modified` at its first use, then written by a store before "
    "its index row (once per day and process: `archive/days.py`)",
    kept_by_readers=True,
)

# The sync's own record of the work it takes, so that nothing depends on the workflow's
# event log keeping an event (its release deletes locked events; see docs/sync.md).
ARCHIVE_SYNC_CLAIMS = Table(
    "archive_sync_claims",
    _cols(("event_id", T), ("topic", T), ("ref", T), ("instance", T), ("claimed", BI)),
    partition_key=("event_id",),
    query=17,
    owner=Wing.SYNC,
    serves="workflow events a sync process has taken, written before any work on them "
    "(the events are not locked: the workflow's lock keeps no one apart) and deleted once "
    "the event is done; of two processes that took one at once, the one whose claim stands "
    "goes on; a claim left older than `WORKFLOW_SYNC_DEADLOCK` (its process died, or the "
    "event vanished) is finished by any process from its ref "
    "([sync.md](sync.md#a-round))",
    queue=True,
)
ARCHIVE_SYNC_GONE = Table(
    "archive_sync_gone",
    _cols(("ref", T), ("event_id", T), ("topic", T), ("gone_at", BI), ("instance", T)),
    partition_key=("ref",),
    query=18,
    owner=Wing.SYNC,
    serves="snapshots the workflow answered 404 for when their event was handled: final, "
    "never retried (with the workflow's `SNAPSHOT_HISTORY=1` it deletes intermediate ones)",
)
# Rows by name like the books of storage/books.py, but typed columns, not JSON: the point is
# a number compared as one, and no row is set by compare and set; a JSON cell would change
# the layout (a new store version), so the sync's ProgressBook (sync/records.py) keeps them.
ARCHIVE_SYNC_PROGRESS = Table(
    "archive_sync_progress",
    _cols(("name", T), ("point", BI), ("updated", BI), ("owner", T), ("note", T)),
    partition_key=("name",),
    query=19,
    owner=Wing.SYNC,
    serves="the catch-up over `/snapshot/syncpoint`: row `catchup` holds the `$modified` "
    "(epoch ms) up to which every snapshot the workflow holds is archived; rows "
    "`skipped:<from>` the ranges the catch-up or a resync could not read (more than 16 "
    "snapshots sharing one timestamp); row `resync-stop` a stop asked of the running "
    "resync (its own row, so no save of the state document loses it)",
)

# Legal holds (archive/holds.py, docs/retention.md): one row per held process instance.
# Its own table, not an item in the instance's snapshots (snapshots never change once
# written) nor in the '0' state document (two operators placing holds at once would lose
# one in a read-modify-write); a single-row upsert or delete per hold. Small: listed whole.
ARCHIVE_LEGAL_HOLDS = Table(
    "archive_legal_holds",
    _cols(("uniqueid", T), ("reason", T), ("placed", BI), ("placed_by", T)),
    partition_key=("uniqueid",),
    query=20,
    owner=Wing.ARCHIVE,
    serves="whether a process instance is under legal hold (no snapshot of it is deleted "
    "while it is: a delete is refused, retention and the history cleanup keep them), why, "
    "since when (epoch ms) and by whom; written before store version 5, now read and "
    "released only (the holds per case: Q35)",
)

# Legal holds per case (store version 5): one row per process instance and case (the
# hold's reason), so that holds for different cases stack and releasing one leaves the
# others. A row of ``archive_legal_holds`` (written by versions before 5) is a hold too,
# its reason its case. Small: listed whole.
ARCHIVE_LEGAL_HOLD_CASES = Table(
    "archive_legal_hold_cases",
    _cols(("uniqueid", T), ("reason", T), ("placed", BI), ("placed_by", T)),
    partition_key=("uniqueid",),
    clustering_key=("reason",),
    query=35,
    owner=Wing.ARCHIVE,
    serves="the legal holds of a process instance, one per case (its reason): no snapshot "
    "of it is deleted while any is placed; since when (epoch ms) and by whom",
)

# The version of what this archive keeps in a store (its own tables and the form of its
# rows), so that an older version of the archive refuses a store a newer one changed instead
# of misreading it (archive/versions.py). One row; the Java service ignores the table. Typed
# columns, not a JSON book (storage/books.py): the layout version is what every version of
# the archive reads first, so its form never changes.
ARCHIVE_VERSIONS = Table(
    "archive_versions",
    _cols(("name", T), ("version", N), ("written_by", T)),
    partition_key=("name",),
    query=22,
    owner=Wing.ARCHIVE,
    serves="the version of the store's layout (row `store`), raised by an archive version "
    "that changes it, and the archive version that wrote it: an older archive refuses a "
    "newer store (`archive/versions.py`)",
)

# The ledger (ledger/books.py, ledger/, docs/ledger.md): an append-only log of what
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
    query=23,
    owner=Wing.LEDGER,
    serves="the ledger's queue: entries written with the change they record (a snapshot "
    "stored or deleted, a hold placed or released) and not yet in the log, by the minute "
    "written (`slot`: epoch minutes), subject (a snapshot id, or `hold:` and a process "
    "instance) and the order made in (the key starts with the time, epoch ms); the "
    "sequencer reads the minutes since the oldest it has not finished (and always the last "
    "five), deleting what it logged ([ledger.md](ledger.md))",
    queue=True,
)
ARCHIVE_LEDGER_ENTRIES = Table(
    "archive_ledger_entries",
    _cols(("bucket", N), ("idx", BI), ("entry", T), ("hash", B)),
    partition_key=("bucket",),
    clustering_key=("idx",),
    query=24,
    owner=Wing.LEDGER,
    serves="the ledger's log: entry number `idx` (`bucket` `idx >> 14`, 16,384 to a "
    "partition) and its RFC 6962 leaf hash, in log order; written once (insert if absent: "
    "a lightweight transaction on Cassandra); only entries below the head's size are in "
    "the log (rows past it were written by a sequencer that stopped before moving the "
    "head, and are taken over as they are by the next one)",
)
ARCHIVE_LEDGER_NODES = Table(
    "archive_ledger_nodes",
    _cols(("level", N), ("bucket", N), ("idx", BI), ("hash", B)),
    partition_key=("level", "bucket"),
    clustering_key=("idx",),
    query=25,
    owner=Wing.LEDGER,
    serves="the hash of each complete subtree of the log's tree with `2**level` entries "
    "(level >= 1) starting at entry `idx * 2**level` (`bucket` `idx >> 14`), as versions "
    "before store version 6 kept the tree: read until the log's tiles (Q36) are derived, "
    "written meanwhile for what is added, then no longer",
)
ARCHIVE_LEDGER_HEAD = Table(
    "archive_ledger_head",
    _cols(("name", T), ("state", T)),
    partition_key=("name",),
    query=26,
    owner=Wing.LEDGER,
    serves="the ledger's small books as JSON, by name: `tree` (size, root, compact range, "
    "origin, key, last checkpoint, the queue's oldest unfinished minute), moved only by "
    "compare and set; `lease` (which process sequences, until when); `verify` and "
    "`verify-progress` (the last ledger verify, an unfinished one); `before-ledger` (the "
    "store held snapshots before the ledger existed, until `ledger init` or a ledger "
    "verify has logged them)",
)
ARCHIVE_LEDGER_SUBJECTS = Table(
    "archive_ledger_subjects",
    _cols(("subject", T), ("idx", BI), ("kind", T), ("digest", T)),
    partition_key=("subject",),
    query=27,
    owner=Wing.LEDGER,
    serves="the last log entry about each subject (a snapshot id, or `hold:` and a "
    "process instance): its number, kind and digest; derived from the log and checked "
    "against it by ledger verify",
)
ARCHIVE_LEDGER_CHECKPOINTS = Table(
    "archive_ledger_checkpoints",
    _cols(("year", N), ("size", BI), ("note", T), ("written", BI)),
    partition_key=("year",),
    clustering_key=("size",),
    query=28,
    owner=Wing.LEDGER,
    serves="every signed checkpoint (a C2SP signed note) by the year it was written and "
    "the tree size it signs, and when (epoch ms): the record of every signed head; the "
    "ledger reads the last one from its `tree` book (Q26)",
)

ARCHIVE_LEDGER_TILES = Table(
    "archive_ledger_tiles",
    _cols(("level", N), ("idx", BI), ("width", N), ("hashes", B)),
    partition_key=("level", "idx"),
    clustering_key=("width",),
    query=36,
    owner=Wing.LEDGER,
    serves="the log's tree as C2SP tlog-tiles (store version 6): tile `idx` of `level` "
    "holds `width` (1 to 256) consecutive hashes of the subtrees of `256**level` entries "
    "starting at entry `idx * 256**(level+1)`, concatenated (32 bytes each); a full tile "
    "(256) never changes, the right edge's partial tiles get a row per width as the log "
    "grows (the narrower ones deleted after), and a reader takes the widest row: an "
    "inclusion or consistency proof reads about two tiles a level, and `/ledger/tile/` "
    "serves them as they are. Written by the sequencer before the head moves past them; "
    "for a log older than the table, derived from its entries a part per round (Q25 serves "
    "until then)",
)

# The books of the jobs that stop and go on (archive/check_books.py, archive/part_runs.py):
# where a stopped job goes on, how a job split into parts is cut, who runs each part. A few
# small rows per job, written every few seconds while it runs.
ARCHIVE_CHECKS = Table(
    "archive_checks",
    _cols(("name", T), ("state", T)),
    partition_key=("name",),
    query=33,
    owner=Wing.ARCHIVE,
    serves="the books of the jobs that stop and go on, as JSON by name: `JOB/K/N` (where "
    "part K of N of an unfinished job stands, with what it counted or found so far), "
    "`JOB-plan/N` (where the N parts are cut), `JOB-lease/K/N` (which process runs that "
    "part, until when), for `verify`, `gc` (`gc-dry-run`), `retention` "
    "(`retention-preview`), `backup.<hash>` and `export-table.<hash>`; and the scrub's "
    "`scrub` (its place in each table, what it covered when, its findings) and "
    "`scrub-lease` (`archive/part_runs.py`, `archive/scrub.py`); `last-run.verify` and "
    "`last-run.backup`, the last run of each, whichever process ran it (`archive/last_runs.py`)",
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
    ARCHIVE_LEGAL_HOLD_CASES,
    ARCHIVE_LEDGER_TILES,
)
JAVA_TABLES = tuple(table for table in TABLES if table.java)


def table(name: str) -> Table:
    for candidate in TABLES:
        if candidate.name == name:
            return candidate
    raise KeyError(name)

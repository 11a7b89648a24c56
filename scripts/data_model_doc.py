"""Print docs/data-model.md from the table declarations (run after changing a table or its
text in src/imixs_archive/storage/model.py):

.venv/bin/python scripts/data_model_doc.py > docs/data-model.md

What each table holds is its declaration's ``serves``; its columns, keys and flags come
from the declaration too. The text blocks here are about the design as a whole (the
diagram, the stores, sizes, consistency). The diagram's boxes and the sizes table are
checked against the declarations: a table or column that differs stops the script.
"""

from __future__ import annotations

import re
import sys
import textwrap

from imixs_archive.storage import packing
from imixs_archive.storage.cassandra import cql
from imixs_archive.storage.model import JAVA_TABLES, TABLES, Table
from imixs_archive.storage.sqlite import statements
from imixs_archive.storage.sqlite.backend import SCHEMA_VERSION

KEYSPACE = "imixs_archive"

INTRO = """# Data model

The tables are declared once, in `src/imixs_archive/storage/model.py`; the SQLite DDL
and the Cassandra CQL are derived from those declarations (`storage/sqlite/`,
`storage/cassandra/cql.py`), and so is this page (`scripts/data_model_doc.py`: change a
table's declaration or its text there, then run
`.venv/bin/python scripts/data_model_doc.py > docs/data-model.md`). {java} tables are those
of the Java Imixs-Archive keyspace, with the same names, columns and keys, so either
service reads what the other wrote. The {extra} tables prefixed `archive_` hold what the
Java service does not record; it ignores them.

The model follows Cassandra's rule: one table per query, each query reads one partition.
Each query keeps its number (Q1 ...) for good: other pages and the code cite them.
Each table has one owner, the wing whose modules alone name it (`Wing` in the model):
`archive` (`archive/`, `filestore/`), `ledger`, `sync` or `analytics` (their packages).

## Queries

| | query | table | owner |
|---|---|---|---|"""

TABLES_HEAD = """
## Tables

`K` partition key, `C↑` clustering column in ascending order (every clustering column
here is ascending; "newest first" reads a partition in reverse); the other columns in
declaration order, with their CQL types. In the last column: **Java**, a table of the Java
service's keyspace; **packed**, its blob cell compressed per row on the embedded store,
which adds the marker column named (see [the embedded store](#the-embedded-store-sqlite));
**zstd**, compressed with zstd on Cassandra; **queue**, rows written and deleted all the
time, whose tombstones Cassandra purges after {grace} hours, not 10 days; **kept by
readers**, written also by commands that only read (see
[stores that cannot be written](#stores-that-cannot-be-written)).

| | table | K | C↑ | other columns | |
|---|---|---|---|---|---|"""

DIAGRAM = """
## Logical model (Chebotko notation)

The tables of snapshots and files, and how a read goes from one to the next (the arrows).
The boxes are checked against the declarations when this page is generated.

```
  ┌──────────────────────────┐   Q2 / Q3 give snapshot ids   ┌──────────────────────────┐
  │ snapshots_by_uniqueid    │ ─────────────────────────────►│ snapshots            Q1  │
  ├──────────────────────────┤                               ├──────────────────────────┤
  │ uniqueid      text   K   │   ┌──────────────────────────┐│ snapshot      text   K   │
  │ snapshot      text   C↑  │   │ snapshots_by_modified    ││ data          blob       │
  └──────────────────Q2──────┘   ├──────────────────────────┤└────────────┬─────────────┘
                                 │ modified      date   K   │             │ snapshot id
                                 │ snapshot      text   C↑  │─────────────┤
                                 └──────────────────Q3──────┘             ▼
  ┌──────────────────────────┐                               ┌──────────────────────────┐
  │ snapshots_by_document Q6 │◄── file key (md5) ────────────│ archive_snapshot_files Q8│
  ├──────────────────────────┤                               ├──────────────────────────┤
  │ md5           text   K   │                               │ snapshot      text   K   │
  │ snapshot      text   C↑  │                               │ name          text   C↑  │
  └──────────────────────────┘                               │ md5           text       │
                                                             │ claimed_md5   text       │
  ┌──────────────────────────┐                               └────────────┬─────────────┘
  │ archive_files        Q7  │◄── file key (md5) ─────────────────────────┤
  ├──────────────────────────┤                                            ▼
  │ md5           text   K   │                               ┌──────────────────────────┐
  │ digest        text       │                               │ documents            Q4  │
  │ size          bigint     │                               ├──────────────────────────┤
  │ pieces        int        │                               │ md5           text   K   │
  └──────────────────────────┘                               │ sort_id       int    C↑  │
                                                             │ data_id       text       │
  ┌──────────────────────────┐                               └────────────┬─────────────┘
  │ archive_piece_refs   Q9  │◄── piece id (data_id) ─────────────────────┤ data_id
  ├──────────────────────────┤                                            ▼
  │ data_id       text   K   │                               ┌──────────────────────────┐
  │ md5           text   C↑  │                               │ documents_data       Q5  │
  │ size          bigint     │                               ├──────────────────────────┤
  └──────────────────────────┘                               │ data_id       text   K   │
                                                             │ data          blob       │
                                                             └──────────────────────────┘
```

Not drawn: a `snapshots` row that holds a marker leads to `archive_snapshot_parts` (Q15);
a file key to `archive_file_cuts` (Q34); the head of an arriving attachment to a stored
twin through `archive_file_heads` (Q13). The other tables stand alone: no query leads from
them to another table."""

CASSANDRA = """
## On Cassandra

The keyspace holds every table above, created with `CREATE TABLE IF NOT EXISTS` and an id
derived from the keyspace and table name, so that archives starting at once agree on it
(`cql.table_id`). The CQL of every table is asserted in `tests/storage/test_cql.py`; the six
tables of the Java service's keyspace, as this archive creates them on Cassandra 4.0 and
later (keyspace `imixs_archive`):

```sql
{java_cql}
```

The archive creates only the tables that are missing and never alters one: a keyspace the
Java service created keeps its tables as they are (see
[cassandra.md](cassandra.md#sharing-a-keyspace-with-the-java-service)). On Cassandra 4.0
and later the tables of large cells are compressed with zstd in 64 KiB chunks ({zstd}; on
3.x they get the default compressor); the pieces keep a compressed chunk only when it
saves a tenth (`min_compress_ratio` 1.1), so already-compressed attachments are stored
raw. Work
lists ({queues}) purge their tombstones after {grace} hours (`gc_grace_seconds`
{grace_seconds}, the default `max_hint_window`, so that a node down for less cannot bring
a deleted row back) instead of 10 days: a scan meets at most a few hours of deletes."""

SQLITE = """
## The embedded store (SQLite)

The embedded store is one SQLite database file, `archive.db` in the data directory, run by
the SQLite that APSW bundles (`storage/sqlite/engine.py`: the same, current SQLite on every
system, not the system's, which may have the WAL-reset bug), in WAL mode with
`synchronous=FULL`. Each declaration is a table of the same name and columns: `text` and
`date` are TEXT (a date as `YYYY-MM-DD`, which sorts like the date), `int` and `bigint`
INTEGER, `blob` BLOB (`storage/sqlite/statements.py`). A table with a blob column keeps
SQLite's rowid ({rowid}); every other table, all of whose rows are a few short strings and
integers, is `WITHOUT ROWID`.

Packed cells: {packed} have one more column, `raw_size`, declared with each table
(`Packing` in `storage/model.py`). A cell of at least {min_size} bytes is stored as a zstd
frame when that saves at least {saved}% of its bytes, and `raw_size` then holds its size;
NULL means the cell holds the bytes as given (already-compressed attachments, short cells,
and every cell written before schema 2, whose stores get the column on open). The store
unpacks on read, so every reader, and every hash check, sees the bytes that were put
(`storage/packing.py`). Cassandra has no such column: its rows stay as given for the Java
service, and the table's own compression does the work there. A store opened by this
version for writing is schema {schema} (`PRAGMA user_version`), which earlier versions
refuse to open rather than read packed cells as bytes. (That is the SQLite file's schema;
the version of the archive's layout in any store is the row `store` of
`archive_versions`, Q22.)

### Stores that cannot be written

Commands that only read still write a little for themselves: the books of a job that goes
on where it stopped, the figures they keep, the index of days. Those tables are declared
`kept_by_readers`: {kept}. On an embedded store on a read-only file system (a backup disk
mounted read-only, a file-system snapshot) each is copied, at its first use, into a store
of the process's own in a temporary folder and read and written there for the process's
life (`storage/sqlite/read_only.py`); a write to any other table is refused (exit 2)."""

SIZES_HEAD = """
## Partition sizes

Cassandra's guidance: cells well under a few MB, partitions under ~100 MB, a mutation
under half a commit-log segment (16 MiB by default). Estimates below count the stored
values plus about 30 to 50 bytes of per-row overhead.

| | table | rows per partition | row size | typical partition |
|---|---|---|---|---|"""

SIZES: dict[str, tuple[str, str, str]] = {
    "snapshots": (
        "1",
        "the snapshot XML without file contents: a few KB, rarely 1 MB; over the inline limit "
        "(~16 MiB) a marker of ~100 bytes (the XML goes to `archive_snapshot_parts`)",
        "one row",
    ),
    "snapshots_by_uniqueid": (
        "1 per snapshot of the instance",
        "~80 bytes",
        "100,000 snapshots ≈ 8 MB",
    ),
    "snapshots_by_modified": (
        "1 per snapshot saved that day",
        "~80 bytes",
        "100,000 a day ≈ 8 MB",
    ),
    "documents": (
        "1 per piece of the file",
        "~100 bytes",
        "10 GB file: ~65,000 rows in content-defined pieces (~160 KiB on average) ≈ 6.5 MB; "
        "in 1 MiB cuts (the Java service's, and this archive's on Cassandra by default): "
        "~10,000 rows ≈ 1 MB",
    ),
    "documents_data": (
        "1 (each piece its own partition)",
        "32 KiB to 1 MiB (1 MiB cuts: 1 MiB)",
        "≤ 1 MiB",
    ),
    "snapshots_by_document": (
        "1 per snapshot that carries the file, and the pin",
        "~90 bytes",
        "see below",
    ),
    "archive_files": ("1", "~150 bytes", "one row"),
    "archive_snapshot_files": ("1 per file of the snapshot", "~150 bytes", "a few rows"),
    "archive_piece_refs": (
        "1 per file that contains the piece",
        "~120 bytes",
        "usually 1 to a few rows",
    ),
    "archive_day_aggregates": (
        "1 per finished day of the year",
        "~60 bytes per cell (at most one per snapshot): a few KB, 10,000 snapshots a day "
        "up to ~0.6 MB",
        "366 rows; see below",
    ),
    "archive_sync_failures": (
        "1",
        "~300 bytes (the error is cut at 2,000 characters)",
        "one row; a few in all while the workflow answers",
    ),
    "archive_sync_instances": ("1", "~150 bytes", "one row per sync process"),
    "archive_file_heads": (
        "1 per file that starts with those 32 KiB",
        "~110 bytes",
        "usually 1 row",
    ),
    "archive_garbage": (
        "1 per kind listed under the id",
        "~120 bytes",
        "one or two rows; only unreferenced items are listed, for one grace period",
    ),
    "archive_snapshot_parts": (
        "1 per MiB of a large snapshot's XML",
        "≤ 1 MiB",
        "40 MB of items: 40 rows ≈ 40 MB (rare: only snapshots over ~16 MiB)",
    ),
    "archive_modified_days": (
        "1 per day that had snapshots (and the completion row, in a partition of its own)",
        "~40 bytes",
        "ten years: 3,650 rows ≈ 150 KB",
    ),
    "archive_sync_claims": (
        "1",
        "~150 bytes",
        "one row; in all the events in hand (a batch per process), but each archived "
        "snapshot writes and deletes one",
    ),
    "archive_sync_gone": (
        "1",
        "~150 bytes",
        "one row per snapshot the workflow deleted before the archive got it",
    ),
    "archive_sync_progress": (
        "1",
        "~100 bytes",
        "`catchup`, `resync-stop` and one row per range skipped",
    ),
    "archive_legal_holds": (
        "1",
        "~150 bytes",
        "one row per instance held before store version 5 (read, released, no longer written)",
    ),
    "archive_day_changes": (
        "1 per day and process that changed it",
        "~100 bytes",
        "366 days × the processes that wrote: with ten, ~3,700 rows ≈ 370 KB",
    ),
    "archive_versions": ("1", "~60 bytes", "one row (`store`)"),
    "archive_ledger_queue": (
        "1 per entry queued in that minute",
        "~300 bytes",
        "a minute of 10,000 changes ≈ 3 MB, deleted once logged",
    ),
    "archive_ledger_entries": (
        "16,384",
        "~300 bytes (the entry's JSON and its 32-byte hash)",
        "≈ 5 MB",
    ),
    "archive_ledger_nodes": (
        "up to 16,384",
        "~80 bytes",
        "≤ 1.3 MB; no longer written once a log's tiles are derived (Q36)",
    ),
    "archive_ledger_tiles": (
        "1 (a full tile); an edge tile its width's row, for a moment two",
        "8 KB (256 hashes) for a full tile",
        "one full tile of level 0 per 256 entries: 10 million entries ≈ 40,000 tiles ≈ 330 MB",
    ),
    "archive_ledger_head": (
        "1",
        "`tree`: up to ~3 KB (a hash per bit of the log's size); the others ~100 bytes",
        "one row",
    ),
    "archive_ledger_subjects": ("1", "~150 bytes", "one row per subject"),
    "archive_ledger_checkpoints": (
        "1 per checkpoint signed that year",
        "~250 bytes",
        "a checkpoint a minute while the log grows: a year ≈ 525,600 rows ≈ 130 MB; see below",
    ),
    "archive_snapshot_facts": (
        "1 per snapshot of the day",
        "~150 bytes",
        "100,000 a day ≈ 15 MB",
    ),
    "archive_day_summaries": ("1 per finished day of the year", "a few KB", "366 rows ≈ 1 MB"),
    "archive_census": ("1", "a few hundred bytes", "one row"),
    "archive_month_figures": (
        "1 per kept month (or day of a month not over)",
        "a few KB; a process map's month: ~20 bytes per snapshot of the group (~170 KB "
        "for 8,000 snapshots)",
        "ten years of a kind in one zone: ~120 rows",
    ),
    "archive_checks": (
        "1",
        "a few KB; a verify's book lists up to 1,000 problems and warnings found so far",
        "one row",
    ),
    "archive_file_cuts": (
        "1",
        "~200 bytes",
        "one row (files in 1 MiB cuts whose cuts differ from the content-defined ones: "
        "most files over 32 KiB stored in 1 MiB cuts)",
    ),
    "archive_legal_hold_cases": (
        "1 per case the instance is held for",
        "~150 bytes",
        "one or a few rows per held instance",
    ),
}
"""Per table: rows per partition, row size, a typical partition (estimates, kept here:
every table of the model has a row, checked)."""

GROWTH = """
Partitions that grow with use, and what to watch:

* **A day (`snapshots_by_modified`)** grows by ~80 bytes per snapshot saved that day:
  1 million snapshots a day is ~80 MB, near the 100 MB guideline. Beyond that, split the
  day further (a bucket by hour, or a small hash of the snapshot id, in the partition
  key). That changes the layout the Java service reads, so it would be a new `archive_`
  table next to the Java one, not a change to it. A day's facts
  (`archive_snapshot_facts`, ~150 bytes per snapshot) reach the guideline at ~650,000
  snapshots a day.
* **A process instance (`snapshots_by_uniqueid`)** grows by one row per save. A million
  saves of one instance is ~80 MB; use `$snapshot.history` to keep fewer. Deleting old
  snapshots leaves tombstones at the start of the partition until compaction after
  `gc_grace_seconds`: reading newest first (descending) does not walk over them.
* **A file (`snapshots_by_document`)** gets a row for every snapshot that carries it. An
  attachment stays on a workitem through all its later saves, and a template attached to
  every workitem is carried by every snapshot: a million snapshots is ~90 MB. This is the
  partition most likely to grow large; only its existence is read (is the file still
  used?), with a limit of one row. An empty file gets no row (as in the Java service): the
  partition of the empty file's MD5 would otherwise get one per snapshot with an empty
  attachment; the collector drops what older versions wrote there.
* **A year of day figures (`archive_day_aggregates`)** holds a row per day whose cells
  grow with the day's snapshots: at 10,000 snapshots a day up to ~0.6 MB a row, ~200 MB a
  year, over the guideline. It is read a slice of days at a time, never whole; the views
  of the whole archive read `archive_day_summaries` (a few KB a day) instead.
* **A year of checkpoints (`archive_ledger_checkpoints`)** gets a row per checkpoint: one
  at least every `ARCHIVE_LEDGER_CHECKPOINT_SECONDS` (60 s) or
  `ARCHIVE_LEDGER_CHECKPOINT_ENTRIES` (1,000) entries while the log grows, so a log that
  grows all year long writes ~525,600 rows, ~130 MB. The archive reads none of them back
  (ledger verify checks the `tree` book's last checkpoint, one given and the witness
  folder's newest).
* **A file's piece list (`documents`)** is bounded by the file size: ~6.5 MB for 10 GB.
* **A piece (`documents_data`)** is one cell of at most 1 MiB; on Cassandra each is
  written as its own mutation, never in a batch."""

CONSISTENCY_HEAD = """
## Consistency and replication

| cluster | keyspace replication | reads / writes | what it gives |
|---|---|---|---|"""

CLUSTERS = (
    ("1 node (development)", "`SimpleStrategy`, `1`", "`LOCAL_QUORUM` (= one node)",
     "no redundancy"),
    ("3 nodes, one datacenter",
     "`NetworkTopologyStrategy`, `dc1:3` (or `SimpleStrategy`, `3`)",
     "`LOCAL_QUORUM` / `LOCAL_QUORUM`",
     "any read sees every acknowledged write (2 + 2 > 3); one node may be down"),
    ("several datacenters", "`NetworkTopologyStrategy`, `dc1:3,dc2:3`",
     "`LOCAL_QUORUM` / `LOCAL_QUORUM`, `ARCHIVE_CLUSTER_LOCAL_DC` set for each archive",
     "each datacenter answers on its own and survives one node down; the other datacenters "
     "receive writes asynchronously"),
)  # fmt: skip

CONSISTENCY = """
* The defaults are `LOCAL_QUORUM` for reads and writes (`ARCHIVE_CLUSTER_CONSISTENCY_READ`,
  `ARCHIVE_CLUSTER_CONSISTENCY_WRITE`). The Java service sets no level (the driver's
  `LOCAL_ONE`), which with three replicas can read an older value than one just written;
  keep `LOCAL_QUORUM` unless a single node is all you have.
* With several datacenters, run the archive that syncs from the workflow in one
  datacenter at a time. Use `EACH_QUORUM` for writes only if a snapshot must be in every
  datacenter before it counts as archived; writes then fail while a datacenter is
  unreachable.
* `ONE` / `LOCAL_ONE` reads are faster but may miss a recent write; never combine them with
  `ONE` writes on more than one replica if the archive must see what it just wrote (it
  checks `archive_files` and `snapshots` to decide what is already stored).
* A replication factor of 3 per datacenter is the usual choice: `LOCAL_QUORUM` still works
  with one replica down. With 2, `LOCAL_QUORUM` needs both replicas. The keyspace is
  created with `ARCHIVE_CLUSTER_REPLICATION_CLASS` and `ARCHIVE_CLUSTER_REPLICATION_FACTOR`;
  unset, a one-node cluster gets one copy (with a warning) and a larger one is refused
  until the factor is set."""


class ModelMismatch(Exception):
    """A text block here says other than the declarations."""


def by_query() -> list[Table]:
    """The tables in query order; each must have a number of its own."""
    numbers = [table.query for table in TABLES]
    missing = [table.name for table in TABLES if table.query <= 0]
    if missing:
        raise ModelMismatch(f"give these tables a query number (query=): {missing}")
    twice = sorted({n for n in numbers if numbers.count(n) > 1})
    if twice:
        raise ModelMismatch(f"query numbers used twice: {twice}")
    if not all(table.serves for table in TABLES):
        raise ModelMismatch("every table needs its serves= text")
    return sorted(TABLES, key=lambda table: table.query)


def names(tables: list[Table]) -> str:
    """`a`, `b` and `c`."""
    quoted = [f"`{table.name}`" for table in tables]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} and {quoted[-1]}"


def cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def notes(table: Table) -> str:
    found = ["Java"] if table.java else []
    if table.packing is not None:
        found.append(f"packed (`{table.packing.marker}`)")
    if table.holds_pieces or table.large_cells:
        found.append("zstd")
    if table.queue:
        found.append("queue")
    if table.kept_by_readers:
        found.append("kept by readers")
    return ", ".join(found)


def columns_row(table: Table) -> str:
    def listed(column_names: tuple[str, ...]) -> str:
        return ", ".join(f"`{name}` {table.column(name).type.value}" for name in column_names)

    return (
        f"| Q{table.query} | `{table.name}` | {listed(table.partition_key)} | "
        f"{listed(table.clustering_key)} | {listed(table.value_columns)} | {notes(table)} |"
    )


BOX_COLUMN = re.compile(r"│ ([a-z_][a-z0-9_]*) +(text|blob|int|bigint|date) +(K|C↑)? *│")
BOX_TITLE = re.compile(r"│ ([a-z_][a-z0-9_]*)(?: +Q(\d+))? *│")


def check_diagram(text: str) -> None:
    """Each box of the diagram lists its table's columns, types and keys in order, under
    the table's own query number."""
    shown: dict[str, list[tuple[str, str, str]]] = {}
    above: dict[int, str] = {}  # the table of the box at each text column
    for line in text.splitlines():
        for found in BOX_TITLE.finditer(line):
            name, query = found.group(1), found.group(2)
            table = next((t for t in TABLES if t.name == name), None)
            if table is None:
                continue
            if query is not None and int(query) != table.query:
                raise ModelMismatch(f"the diagram calls {name} Q{query}, not Q{table.query}")
            above[found.start()] = name
            shown[name] = []
        for found in BOX_COLUMN.finditer(line):
            if found.start() not in above:
                raise ModelMismatch(f"a column of the diagram under no table: {found.group()}")
            name, kind, key = found.groups("")
            shown[above[found.start()]].append((name, kind, key))
    for name, listed in shown.items():
        table = next(t for t in TABLES if t.name == name)
        role = {**{k: "C↑" for k in table.clustering_key}, **{k: "K" for k in table.partition_key}}
        declared = [(c.name, c.type.value, role.get(c.name, "")) for c in table.columns]
        if listed != declared:
            raise ModelMismatch(f"the diagram's box of {name} shows {listed}, not {declared}")


def check_sizes() -> None:
    declared = {table.name for table in TABLES}
    if set(SIZES) != declared:
        raise ModelMismatch(
            f"SIZES in scripts/data_model_doc.py: add {sorted(declared - set(SIZES))}, "
            f"remove {sorted(set(SIZES) - declared)}"
        )


def page() -> list[str]:
    tables = by_query()
    check_diagram(DIAGRAM)
    check_sizes()
    grace = cql.QUEUE_GC_GRACE_SECONDS
    lines = [INTRO.format(java=_count(len(JAVA_TABLES)), extra=len(TABLES) - len(JAVA_TABLES))]
    lines += [
        f"| Q{t.query} | {cell(t.serves)} | `{t.name}` | {t.owner and t.owner.value} |"
        for t in tables
    ]
    lines += [TABLES_HEAD.format(grace=grace // 3600), *map(columns_row, tables)]
    lines.append(DIAGRAM)
    java_cql = ";\n".join(_wrapped(cql.create_table(KEYSPACE, t, zstd=True)) for t in JAVA_TABLES)
    lines.append(
        CASSANDRA.format(
            java_cql=java_cql + ";",
            zstd=names([t for t in tables if t.holds_pieces or t.large_cells]),
            queues=names([t for t in tables if t.queue]),
            grace=grace // 3600,
            grace_seconds=grace,
        )
    )
    lines.append(
        SQLITE.format(
            rowid=names([t for t in tables if not statements.without_rowid(t)]),
            packed=names([t for t in tables if t.packing is not None]),
            min_size=packing.MIN_SIZE,
            saved=round((1 - packing.KEEP_RATIO) * 100),
            schema=SCHEMA_VERSION,
            kept=names([t for t in tables if t.kept_by_readers]),
        )
    )
    lines.append(SIZES_HEAD)
    lines += [f"| Q{t.query} | `{t.name}` | {' | '.join(SIZES[t.name])} |" for t in tables]
    lines += [GROWTH, CONSISTENCY_HEAD, *(f"| {' | '.join(row)} |" for row in CLUSTERS)]
    lines.append(CONSISTENCY)
    return lines


def _count(number: int) -> str:
    words = ("No", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine")
    return words[number] if number < len(words) else str(number)


def _wrapped(statement: str) -> str:
    """A CREATE TABLE over a few lines: the columns, the key, each option."""
    head, _, rest = statement.partition(" (")
    body, _, options = rest.rpartition(") WITH ")
    lines = [f"{head}\n  ({body})"]
    lines += [f"  {'WITH' if n == 0 else 'AND'} {o}" for n, o in enumerate(options.split(" AND "))]
    return "\n".join(lines)


UNBROKEN = re.compile(r"`[^`]*`|\[[^\]]*\]\([^)]*\)")
"""Code and links: a line is never broken inside them."""


def reflowed(text: str, width: int = 90) -> str:
    """Paragraphs of plain text filled to ``width`` (a table's names interpolated into a
    line make it long); tables, code, headings and lists are left as they are."""
    blocks = []
    for block in text.split("\n\n"):
        if block.strip() and not block.lstrip("\n").startswith(("|", "```", "#", "* ")):
            lead = "\n" if block.startswith("\n") else ""
            words = UNBROKEN.sub(lambda m: m.group().replace(" ", "\0"), " ".join(block.split()))
            filled = textwrap.fill(words, width, break_long_words=False, break_on_hyphens=False)
            block = lead + filled.replace("\0", " ")
        blocks.append(block)
    return "\n\n".join(blocks)


def main() -> int:
    try:
        text = reflowed("\n".join(page()))
    except ModelMismatch as exc:
        print(f"data_model_doc.py: {exc}", file=sys.stderr)
        return 1
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

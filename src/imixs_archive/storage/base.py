"""The storage contract: the few operations the archive needs, typed, nothing more.

A backend stores rows of the tables declared in ``storage/model.py``. It knows no
document formats and no archive rules: ordering writes for crash safety, deduplication
and garbage collection live in ``archive/``. Every write is an idempotent upsert.

Rows are ``dict``s keyed by column name; values are ``str``, ``bytes``, ``int`` or
``datetime.date`` by the column's declared type.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, TypedDict

from imixs_archive.errors import ConfigError
from imixs_archive.jsonable import Jsonable
from imixs_archive.storage.model import Table

Row = dict[str, Any]
Position = Any
"""A place in a table's range order (:meth:`Backend.scan_range`), a JSON value only the
backend that gave it interprets: a token on Cassandra, the partition key (a list) on the
embedded store. Recorded by jobs that stop and go on (verify, the scrub)."""


class ScanOptions(TypedDict, total=False):
    """The keywords of :meth:`Backend.scan`, for a wrapper that hands them on as they
    came (``**options: Unpack[ScanOptions]``)."""

    start_after: Mapping[str, Any] | None
    descending: bool
    limit: int | None
    columns: Sequence[str] | None


@dataclass
class Scan:
    """One call of :meth:`Backend.scan`, past the checks every store makes: ``limit`` is
    not negative, ``start_after`` and ``descending`` come with a partition only. Not
    frozen: made for every scan, where a frozen one's set-up costs about 5 % of a short
    scan on the embedded store; nothing changes it."""

    table: Table
    partition: Mapping[str, Any] | None
    start_after: Mapping[str, Any] | None
    descending: bool
    limit: int | None
    columns: Sequence[str] | None

    def options(self) -> ScanOptions:
        """Its keywords, for handing it on to another store's :meth:`Backend.scan`."""
        return ScanOptions(
            start_after=self.start_after,
            descending=self.descending,
            limit=self.limit,
            columns=self.columns,
        )


@dataclass(frozen=True)
class RangeScan:
    """One call of :meth:`Backend.scan_range`."""

    table: Table
    after: Position | None
    upto: Position | None
    columns: Sequence[str] | None


@dataclass
class Compaction(Jsonable):
    """What ``compact`` did: the sizes of the database file and its log, before and
    after, in bytes; ``free_bytes``: the free pages found."""

    before_bytes: int
    after_bytes: int
    log_bytes: int
    free_bytes: int
    merged: bool = True
    """False when a reader kept the log from being merged into the database right away:
    the file shrinks at the next checkpoint."""


class Backend(ABC):
    """One store (an SQLite data directory, or a Cassandra keyspace)."""

    name: str = "backend"
    concurrency: int = 2
    """Requests worth having in flight at once from the piece threads: 2 for a local store
    (a CPU each), more where each request waits a network round trip (Cassandra)."""
    inline_limit: int = 16 * 1024 * 1024 - 64 * 1024
    """The largest snapshot XML kept whole in its ``snapshots`` cell, where the Java service
    reads it (``snapshot_xml.py``): Cassandra's default mutation limit (16 MiB) with room
    for the row's key and the write's framing; on Cassandra the node's own limit."""
    local_reads: bool = True
    """Reading a stored piece costs about what hashing it does (a local store): known
    content is compared with its stored twin. False where every read crosses the network
    and loads the server beside the client (Cassandra): known content is hashed and looked
    up piece by piece instead, which reads no piece back."""

    @abstractmethod
    def put(self, table: Table, rows: Iterable[Mapping[str, Any]]) -> int:
        """Upsert rows (every column given). Rows may be a lazy iterator of large rows:
        the backend consumes it with bounded memory. Returns how many rows were written.
        When it returns, the rows are durable."""

    @abstractmethod
    def get(
        self, table: Table, key: Mapping[str, Any], columns: Sequence[str] | None = None
    ) -> Row | None:
        """The row with this full primary key, or None. ``columns`` limits what is read."""

    def scan(
        self,
        table: Table,
        partition: Mapping[str, Any] | None = None,
        *,
        start_after: Mapping[str, Any] | None = None,
        descending: bool = False,
        limit: int | None = None,
        columns: Sequence[str] | None = None,
    ) -> Iterator[Row]:
        """Rows of one partition in clustering order (``descending`` reverses it), starting
        after the clustering key ``start_after``; or, with no partition, every row of the
        table in no particular order except that the rows of one partition come together.
        Always paged: results stream, never load whole."""
        if limit is not None and limit < 0:
            raise ValueError(f"limit must not be negative: {limit}")
        if partition is None and (start_after is not None or descending):
            raise ValueError("start_after and descending apply to a partition scan only")
        return self._scan(Scan(table, partition, start_after, descending, limit, columns))

    @abstractmethod
    def _scan(self, scan: Scan) -> Iterator[Row]:
        """What :meth:`scan` returns, for a call whose arguments passed its checks (the
        store checks the keys and columns it names)."""

    @abstractmethod
    def delete(
        self, table: Table, key: Mapping[str, Any], *, written_before: int | None = None
    ) -> None:
        """Delete the row with this full primary key, or the whole partition when only
        the partition key is given. Deleting what is not there is not an error.

        ``written_before`` (microseconds since the epoch): delete only what was written
        before then, so a write made later (by another process, whatever the order the
        two arrive in) survives. Stores that keep write times honour it (Cassandra's
        ``USING TIMESTAMP``); SQLite orders writes by its transactions instead, and the
        garbage collector re-checks inside one there (see ``filestore/gc.py``)."""

    read_only: bool = False
    """The store can be read but not written (the embedded store on a read-only file
    system): only tables ``kept_by_readers`` take writes, and those last the process."""
    partition_rows: int = 10_000
    """Rows :meth:`put_partition` writes as one mutation at most."""

    def put_partition(self, table: Table, rows: Sequence[Mapping[str, Any]]) -> int:
        """Upsert rows of one partition so that no reader sees some of them without the
        others: as one mutation (Cassandra applies a single-partition batch atomically
        and in isolation on every replica; SQLite commits them in one transaction), in groups of
        ``partition_rows`` beyond that. A file's piece list, which the Java service reads
        at consistency ONE and would serve cut short."""
        return self.put(table, rows)

    def put_soon(self, table: Table, rows: Sequence[Mapping[str, Any]]) -> Callable[[], None]:
        """Start writing ``rows``; the function returned waits until they are durable (and
        raises what the write met): call it, the rows are written when it returns. A store
        that writes no faster that way writes them now, or when the function is called
        (SQLite: inside a ``grouped`` block, in the group's one commit)."""
        self.put(table, rows)
        return _written

    def put_new(self, table: Table, row: Mapping[str, Any]) -> bool:
        """Write ``row`` unless a row with its key is there; True when this call wrote it,
        so that of several processes writing one row at once, one counts it as new. A store
        that cannot tell at the cost of a plain write (Cassandra: a lightweight transaction
        costs several) upserts it and says True: writers there may both count it."""
        self.put(table, [row])
        return True

    @abstractmethod
    def put_if_absent(self, table: Table, row: Mapping[str, Any]) -> Row | None:
        """Write ``row`` unless a row with its key is there, exactly, whatever the cost (a
        lightweight transaction on Cassandra, one transaction on SQLite): None when this
        call wrote it, else the row that is there (every column), which this call left as
        it was. For rows written once and never changed (the ledger's log): a writer that
        finds a row compares it with its own. A retry after a timeout may find the row its
        own first attempt wrote: equal, as a caller's comparison shows."""

    @abstractmethod
    def replace(
        self, table: Table, key: Mapping[str, Any], column: str, expected: Any, value: Any
    ) -> bool:
        """Set ``column`` of the row with this full primary key to ``value`` if it holds
        ``expected`` at that moment, as one atomic step (compare and set: a lightweight
        transaction on Cassandra, one transaction on SQLite). False, and nothing written,
        when the row is gone or holds anything else: a row deleted or rewritten meanwhile
        is never brought back or overwritten."""

    def scan_range(
        self,
        table: Table,
        after: Position | None = None,
        upto: Position | None = None,
        *,
        columns: Sequence[str] | None = None,
    ) -> Iterator[tuple[Position, Row]]:
        """The rows of the partitions that lie after ``after`` and up to ``upto`` (both
        included: ``None`` is the start, the end) in the table's range order, each with its
        partition's position; a partition's rows come together, partitions in that order.
        The range order is the store's own (Cassandra: the token ring; the embedded store:
        the partition key), so consecutive ranges cover every row exactly once, and several
        processes each scanning a range of their own share one pass. Paged. The rows carry
        the partition key whatever ``columns`` says."""
        return self._scan_range(RangeScan(table, after, upto, columns))

    def _scan_range(self, scan: RangeScan) -> Iterator[tuple[Position, Row]]:
        """What :meth:`scan_range` returns; a store without a range order cannot."""
        raise ConfigError(f"a {self.name} store cannot scan a table by ranges")

    def position_at(self, table: Table, share: Fraction) -> Position:
        """The position about ``share`` (0 to 1) of the way through ``table``'s range
        order: the range up to it holds about that share of the table's partitions
        (Cassandra: of the token ring; the embedded store: of the partitions there now)."""
        raise ConfigError(f"a {self.name} store cannot scan a table by ranges")

    def grouped(self) -> AbstractContextManager[None]:
        """Writes this thread makes inside the block become durable together when it ends
        (one commit) where the store can do that; elsewhere they stay what they are:
        each durable when its call returns, in the order made. Never required for
        correctness: every caller orders its writes so that each prefix is safe."""
        return nullcontext()

    def durable_at_end(self) -> AbstractContextManager[None]:
        """For a bulk load whose input stays where it is (files being imported): writes
        made in the block, by any thread of this backend object, become durable when the
        block ends instead of when each call returns. Each write still lands whole and in
        the order made, so a crash or a power loss keeps a prefix of them, which the next
        run completes. Never enter it where a write is a promise to someone else (the sync
        removes an event once the snapshot is stored). Where the store cannot defer, each
        write stays durable when its call returns."""
        return nullcontext()

    def copy_to(self, folder: Path) -> Path:
        """A consistent copy of the whole store in ``folder`` while others go on writing;
        the path of the copy. The embedded store does it (SQLite's online backup); a store
        that cannot answers why and what to use instead."""
        raise ConfigError(
            f"a {self.name} store is not copied by the archive: use the store's own tools "
            "(Cassandra: nodetool snapshot on every node, docs/cassandra.md)"
        )

    def compact(self, *, min_free: int = 0) -> Compaction:
        """Give the space of deleted rows back to the disk (``imixs-archive compact``),
        beside other processes; ``min_free``: bytes the store's disk keeps free besides
        what it needs. A store whose servers compact their own files answers why and what
        to use instead."""
        raise ConfigError(
            f"a {self.name} store is not compacted by the archive: its nodes compact their "
            "files themselves, and drop deleted rows once gc_grace_seconds passed; "
            "`nodetool compact` or `nodetool garbagecollect` on each node hurry that "
            "(docs/cassandra.md)"
        )

    def findings(self) -> list[str]:
        """Damage the store found on its own, below the rows (the embedded store: a
        write-ahead log that went missing with commits in it). ``verify`` reports each as a
        problem, until its cause is dealt with."""
        return []

    def file_problems(self, table: str | None = None, *, full: bool = False) -> list[str]:
        """Damage in the store's own file, below the rows, each naming its table: the
        embedded store runs SQLite's ``quick_check`` over one table and its indexes, or
        over the whole file when ``table`` is None (``full``: ``integrity_check``, which
        also compares every index with its table). A store whose servers check their own
        files (Cassandra) has none to report here."""
        return []

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """What the monitor shows: kind, location, versions, replication ..."""

    def close(self) -> None:  # noqa: B027 - optional for backends
        """Release connections."""

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _written() -> None:
    """Nothing to wait for: the rows were written."""


def key_of(table: Table, row: Mapping[str, Any]) -> Row:
    """The primary-key part of a row."""
    return {name: row[name] for name in table.primary_key}

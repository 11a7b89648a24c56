"""The embedded default backend: one SQLite database file in the data directory.

Layout: ``<data_dir>/archive.db`` (plus SQLite's ``-wal`` and ``-shm`` files), one table
per declaration of ``storage/model.py``, with DDL and statements derived in
``storage/sqlite/statements.py``.

Concurrency: the database runs in WAL mode, so readers never block the writer nor the
writer the readers. Each thread gets its own connection (one backend object may be shared
by threads). Writes take the write lock up front (``BEGIN IMMEDIATE``) and a second writer
- another thread, or another process on the same store - waits up to ``busy_timeout``
seconds for it; after that the operation fails with :class:`StoreUnavailableError`. The
threads of one process queue for it on a lock of their own (woken as soon as it is free);
another process's lock is polled every 0.1 to 2 ms (SQLite's own busy handler sleeps 1, 2,
5, 10, ... ms between tries, which cost two sync processes ~8 ms per transaction).

The file: a new store appears as ``archive.db`` only once it is whole; a file of that name
that holds no archive (emptied, another program's) is refused, never written into; the
write-ahead log ``archive.db-wal`` is part of the store, and its loss with commits in it is
found and reported (``storage/sqlite/store_file.py``).

Large writes: :meth:`SQLiteBackend.put` pulls rows from a possibly lazy iterator into a
batch of at most ``commit_bytes`` (or ``commit_rows`` rows) and writes each batch in one
short transaction. Memory is bounded by one batch, and the write lock is held only while a
batch is written, never while the caller produces the next rows (a slow download must not
stall the other writer). When ``put`` returns, every batch is committed and, with
``synchronous=FULL``, on disk (inside :meth:`SQLiteBackend.durable_at_end`: when the block
ends). A failure part-way leaves the earlier batches written;
as every write is an idempotent upsert, the caller simply repeats the ``put``.

Pieces are compressed: the cell of a table declared with a ``Packing`` (the pieces of
``documents_data``) is written as a zstd frame when that saves a tenth, else as given, the
choice in its marker column (``storage/packing.py``); reads unpack it, so callers see the
bytes they put. Stores written before (schema 1) get the marker column on open, NULL in
every old row: raw cells, read as they are.

Scans are keyset-paged: each page is one short query (``LIMIT``), so a scan holds no
statement or read transaction open between pages and never loads a whole table. Pages of
rows that carry a BLOB column are small (their cells may be 1 MiB each). A scan is not a
snapshot: rows written while it runs may or may not be seen.
"""

from __future__ import annotations

import atexit
import datetime
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from imixs_archive.durable import sync_folder
from imixs_archive.errors import (
    ConfigError,
    DamagedRowError,
    IntegrityError,
    StoreError,
    StoreUnavailableError,
)
from imixs_archive.storage import packing
from imixs_archive.storage.base import Backend, Compaction, Position, RangeScan, Row, Scan
from imixs_archive.storage.model import TABLES, ColumnType, Table
from imixs_archive.storage.sqlite import compact, engine
from imixs_archive.storage.sqlite import statements as sql
from imixs_archive.storage.sqlite.store_file import (
    LogGuard,
    check_ours,
    copy_store,
    create_atomically,
)

MiB = 1024 * 1024
DB_FILE = "archive.db"
SCHEMA_VERSION = 2
"""``PRAGMA user_version`` of a store this code writes; a newer store is refused.
2: packed cells (a marker column; version 1 code would not unpack them)."""

MERGE_LOCK_WAIT = 5.0
"""Seconds a closing process waits for the write lock to remove the log's mark."""
_JOURNAL_MODES = ("WAL", "DELETE", "TRUNCATE", "PERSIST")
_SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")


@dataclass(frozen=True)
class Tuning:
    """Settings of the SQLite store. The defaults come from ``bench/sqlite_tuning.py``
    (figures and command in ``bench/README.md``); the other values exist for it and tests."""

    page_size: int = 32768
    """Bytes per page; only takes effect when the database file is created. 4 KiB pages
    write 1 MiB blobs at about half the rate (a piece is a chain of 257 overflow pages);
    64 KiB write blobs no faster than 32 KiB but small commits at half the rate (each
    commit writes whole pages to the WAL)."""
    journal_mode: str = "WAL"
    """WAL: readers run while a process writes, and small commits are several times
    faster. DELETE writes blobs faster (WAL writes every page twice: to the WAL, then to
    the database at a checkpoint), but blocks readers while it commits."""
    synchronous: str = "FULL"
    """FULL: in WAL mode every commit is fsynced, so a returned ``put`` survives a power
    loss (NORMAL only survives a crash of the process). Measured cost: none for large
    puts, about half the rate of tiny ones."""
    commit_bytes: int = 32 * MiB
    """A ``put`` commits every this many bytes of values (and holds one such batch in
    memory). 1 MiB transactions write blobs at half the rate; 128 MiB gain little more."""
    commit_rows: int = 10_000
    """... or every this many rows, whichever comes first."""
    wal_bytes: int = 8 * MiB
    """The write-ahead log is merged into the database (a checkpoint) once it holds this
    many bytes, and cut back to this size once merged: it grows past it only for a
    transaction that is larger (a batch of ``commit_bytes``), or while a reader keeps
    the checkpoint from finishing. SQLite's default (1000 pages) is 32 MB of 32 KiB
    pages; 8 MiB costs an import 5% more bytes written (each page changed between two
    checkpoints is merged once), 4 MiB 11%, 1 MiB 40% (``bench/README.md``)."""
    busy_timeout: float = 60.0
    """Seconds a writer waits for another writer's lock before giving up."""
    page_rows: int = 1000
    """Rows per scan page (``blob_page_rows`` when a BLOB column is read)."""
    blob_page_rows: int = 16
    pack_level: int | None = packing.DEFAULT_LEVEL
    """zstd level of packed cells (pieces), each kept compressed only when that saves a
    tenth; None writes them as given (reads unpack either way)."""
    vfs: str | None = None
    """The SQLite layer to the files (None: the system's); tests record what SQLite syncs
    through one of their own."""

    def __post_init__(self) -> None:
        if self.page_size not in {512 << n for n in range(8)}:
            raise ValueError(f"page_size must be a power of two 512..65536: {self.page_size}")
        if self.journal_mode.upper() not in _JOURNAL_MODES:
            raise ValueError(f"journal_mode must be one of {_JOURNAL_MODES}")
        if self.synchronous.upper() not in _SYNCHRONOUS:
            raise ValueError(f"synchronous must be one of {_SYNCHRONOUS}")
        if self.wal_bytes < 1:
            raise ValueError("wal_bytes must be positive")
        if self.commit_bytes < 1 or self.commit_rows < 1:
            raise ValueError("commit_bytes and commit_rows must be positive")
        if self.page_rows < 1 or self.blob_page_rows < 1:
            raise ValueError("page_rows and blob_page_rows must be positive")
        if self.pack_level is not None and not 1 <= self.pack_level <= 19:
            raise ValueError(f"pack_level must be 1..19 or None: {self.pack_level}")


class SQLiteBackend(Backend):
    """The tables of ``storage/model.py`` in ``<data_dir>/archive.db``."""

    name = "sqlite"

    def __init__(
        self, data_dir: Path, tuning: Tuning | None = None, tables: Sequence[Table] = TABLES
    ) -> None:
        """Open (creating if need be) the store in ``data_dir``. ``tables`` is the model
        (tests pass their own declarations)."""
        self.data_dir = Path(data_dir)
        self.path = self.data_dir / DB_FILE
        self.tuning = tuning or Tuning()
        self._local = threading.local()
        self._connections: dict[threading.Thread, engine.Connection] = {}
        """Each thread's connection, closed when the backend closes or the thread has ended."""
        self._lock = threading.Lock()
        self._writer = threading.Lock()
        """Held by the thread of this process that writes (see the module's text)."""
        self._closed = False
        self._deferring = 0
        """Open ``durable_at_end`` blocks: commits skip their fsync while there are any."""
        self.tables = tuple(tables)
        level = self.tuning.pack_level
        self._codecs = {table.name: sql.Codec.of(table, level) for table in self.tables}
        self.read_only = engine.on_read_only_file_system(self.data_dir)
        """On a read-only file system the store is read as it is, and every write refused."""
        if self.read_only:
            self._refuse_read_only("open a store" if self.path.exists() else "create a store")
        else:
            self._make_directory()
        wal = self.tuning.journal_mode.upper() == "WAL" and not self.read_only
        self._log = LogGuard(self.path) if wal else None
        """The write-ahead log's guard (``store_file.py``); None in other journal modes."""
        if self._log is not None:
            self._log.check_at_open()
            # A program that ends without closing the store (its connections closed as the
            # interpreter goes) would leave the mark without a log: a loss reported that
            # never happened. Closed properly at exit instead.
            atexit.register(self.close)
        try:
            if not self.path.exists():
                with self._errors("create the store"):
                    create_atomically(self.path, self._prepare_new, self.tuning.busy_timeout)
            self._create_schema(self._connection())
        except BaseException:
            self.close()
            raise

    # --- connections, transactions, errors ----------------------------------------------

    def _make_directory(self) -> None:
        """A folder that cannot be made or written is a setting or argument to correct
        (exit 2, as any other path a command cannot write), not a store fault."""
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(
                f"cannot create the data directory {self.data_dir}: {exc.strerror or exc}"
            ) from exc
        try:
            # A name of its own: processes opening one store at once each probe.
            with tempfile.NamedTemporaryFile(dir=self.data_dir, prefix=".write-probe-"):
                pass
        except OSError as exc:
            raise ConfigError(
                f"the data directory {self.data_dir} is not writable: {exc.strerror or exc}"
            ) from exc

    def _refuse_read_only(self, action: str) -> None:
        """A write on a read-only file system is a data folder that cannot be written
        (exit 2, as any other); opening what is there to read it is not."""
        if action != "open a store":
            raise ConfigError(
                f"the data directory {self.data_dir} is on a read-only file system: cannot"
                f" {action} there (read-only commands such as get, list and backup still work)"
            )

    def _busy(self, action: str) -> StoreUnavailableError:
        return StoreUnavailableError(
            f"SQLite store {self.path}: cannot {action}: the store is locked by another"
            f" writer (waited {self.tuning.busy_timeout:g} s)"
        )

    def _error(self, action: str, exc: engine.Error) -> StoreError:
        if engine.is_busy(exc):
            return self._busy(action)
        reason = engine.reason(exc, self.data_dir)
        detail = f"{reason} ({exc})" if reason else str(exc)
        return StoreError(f"SQLite store {self.path}: cannot {action}: {detail}")

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        try:
            yield
        except engine.Error as exc:
            raise self._error(action, exc) from exc

    def _connection(self) -> engine.Connection:
        """This thread's connection, opened on first use. Opening one closes those of
        threads that have ended: a service that runs work on ever new threads keeps as
        many connections (and file descriptors) as it has threads alive, not as it ever
        had."""
        if self._closed:
            raise StoreError(f"SQLite store {self.path}: the backend is closed")
        connection: engine.Connection | None = getattr(self._local, "connection", None)
        if connection is not None:
            return connection
        with self._errors("open the database"):
            if self.read_only:
                connection = engine.connect_read_only(self.path, self.tuning.vfs)
            else:
                connection = engine.connect(self.path, self.tuning.busy_timeout, self.tuning.vfs)
            try:
                self._local.synchronous = self.tuning.synchronous.upper()
                connection.execute(f"PRAGMA synchronous = {self._local.synchronous}")
                # A checkpoint once the WAL holds this many bytes (SQLite counts pages: its
                # 1000 are 32 MB of 32 KiB pages), and the WAL cut back to it afterwards.
                limit = self.tuning.wal_bytes
                pages = max(1, limit // self.tuning.page_size)
                connection.execute(f"PRAGMA wal_autocheckpoint = {pages}")
                connection.execute(f"PRAGMA journal_size_limit = {limit}")
            except BaseException:
                connection.close()
                raise
        with self._lock:
            ended = [thread for thread in self._connections if not thread.is_alive()]
            finished = [self._connections.pop(thread) for thread in ended]
            self._connections[threading.current_thread()] = connection
        self._local.connection = connection
        for old in finished:  # after the new one opened: never the process's last
            with suppress(engine.Error):
                old.close()
        return connection

    def _prepare_new(self, connection: engine.Connection) -> None:
        """A new store's file, before it is put in place (``store_file.create_atomically``)."""
        connection.execute(f"PRAGMA page_size = {self.tuning.page_size}")
        connection.execute(f"PRAGMA journal_mode = {self.tuning.journal_mode.upper()}")
        connection.execute("BEGIN IMMEDIATE")
        for table in self.tables:
            connection.execute(sql.create_table(table))
        connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        connection.execute("COMMIT")

    def _create_schema(self, connection: engine.Connection) -> None:
        with self._errors("open the database"):
            check_ours(connection, self.path, (table.name for table in self.tables))
        version, existing = self._open_file(connection)
        if version == SCHEMA_VERSION and existing >= {table.name for table in self.tables}:
            return
        with self._transaction(connection, "create the tables"):
            version = self._check_version(connection)
            for table in self.tables:
                connection.execute(sql.create_table(table))
                self._add_marker(connection, table)
            if version < SCHEMA_VERSION:
                connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _open_file(self, connection: engine.Connection) -> tuple[int, set[str]]:
        """Set the file's page size and journal mode; its schema version and tables.

        Switching a new file to WAL needs an exclusive lock, and SQLite answers "busy" at
        once, without its busy handler, when processes opening one new store at once each
        hold a shared lock: so this polls, like ``_begin``, up to ``busy_timeout``."""
        tuning = self.tuning
        deadline = time.monotonic() + tuning.busy_timeout
        pause = 0.001
        while True:
            try:
                with self._errors("open the database"):
                    # page_size only applies to a new file, and must precede WAL mode.
                    connection.execute(f"PRAGMA page_size = {tuning.page_size}")
                    connection.execute(f"PRAGMA journal_mode = {tuning.journal_mode.upper()}")
                    # A store that has every table needs no write lock (a reader opening
                    # the store while another process writes must not wait for it).
                    version = self._check_version(connection)
                    rows = connection.execute("SELECT name FROM sqlite_master")
                    return version, {name for (name,) in rows}
            except StoreUnavailableError:
                if time.monotonic() >= deadline:
                    raise
            time.sleep(pause)
            pause = min(2 * pause, 0.05)

    def _add_marker(self, connection: engine.Connection, table: Table) -> None:
        """A table created before its cell was packed gets the marker column."""
        if table.packing is None:
            return
        present = {row[1] for row in connection.execute(f"PRAGMA table_info({table.name})")}
        if table.packing.marker not in present:
            connection.execute(sql.add_marker(table))

    def _check_version(self, connection: engine.Connection) -> int:
        version: int = engine.first(connection, "PRAGMA user_version")
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"SQLite store {self.path}: written by a newer version"
                f" (schema {version}, this version reads up to {SCHEMA_VERSION})"
            )
        return version

    @contextmanager
    def grouped(self) -> Iterator[None]:
        """One transaction for this thread's writes in the block: one commit, one fsync."""
        if getattr(self._local, "grouped", False):
            yield  # already inside a group
            return
        connection = self._connection()
        with self._transaction(connection, "write a group of rows"):
            self._local.grouped = True
            try:
                yield
            finally:
                self._local.grouped = False

    @contextmanager
    def _transaction(
        self, connection: engine.Connection, action: str, *, synced: bool = False
    ) -> Iterator[None]:
        """One write transaction holding the write lock from its start (inside a group:
        part of the group's transaction). ``synced``: its commit is fsynced whatever
        ``durable_at_end`` blocks are open."""
        if getattr(self._local, "grouped", False) and connection.in_transaction:
            with self._errors(action):
                yield
            return
        if self.read_only:
            self._refuse_read_only(action)
        deadline = time.monotonic() + self.tuning.busy_timeout
        if not self._writer.acquire(timeout=self.tuning.busy_timeout):
            raise self._busy(action)
        try:
            with self._errors(action):
                self._synchronous(connection, synced)
                self._begin(connection, action, deadline)
                try:
                    if self._log is not None:
                        self._log.before_commit(deferred=bool(self._deferring))
                    yield
                    connection.execute("COMMIT")
                except BaseException:
                    if connection.in_transaction:
                        # The original error is what the caller needs.
                        with suppress(engine.Error):
                            connection.execute("ROLLBACK")
                    raise
        finally:
            self._writer.release()

    @contextmanager
    def durable_at_end(self) -> Iterator[None]:
        """Commits in the block skip their fsync (``synchronous=NORMAL``); its end makes
        every commit before durable. A block inside another of the same thread leaves that
        to the outer block's end.

        In WAL mode SQLite keeps a store whole without the per-commit fsync: after a power
        loss it recovers the WAL up to the first commit not on disk, so the commits that
        survive are a prefix of those made. A rollback journal has no such guarantee, so
        other journal modes keep their fsyncs. An import into a store on disk spends a
        fifth of its time in fsyncs without this (``bench/README.md``)."""
        if self.tuning.journal_mode.upper() != "WAL" or self.tuning.synchronous.upper() in {
            "OFF",
            "NORMAL",
        }:
            yield
            return
        depth = getattr(self._local, "durable_depth", 0)
        self._local.durable_depth = depth + 1
        with self._lock:
            self._deferring += 1
        try:
            yield
        except BaseException:
            self._leave_durable(depth)
            if not depth:
                with suppress(StoreError):  # what was written stays a prefix; the error first
                    self._make_durable()
            raise
        self._leave_durable(depth)
        if not depth:
            self._make_durable()

    def _leave_durable(self, depth: int) -> None:
        self._local.durable_depth = depth
        with self._lock:
            self._deferring -= 1

    def _synchronous(self, connection: engine.Connection, synced: bool = False) -> None:
        """This thread's connection syncs as the open ``durable_at_end`` blocks want."""
        deferred = self._deferring and not synced
        wanted = "NORMAL" if deferred else self.tuning.synchronous.upper()
        if self._local.synchronous != wanted:
            connection.execute(f"PRAGMA synchronous = {wanted}")
            self._local.synchronous = wanted

    def _make_durable(self) -> None:
        """Every commit before durable, through SQLite itself: one commit with
        ``synchronous=FULL`` fsyncs the WAL, and with it every frame written before (a
        frame no longer in it was merged into the database file, which the merge syncs);
        then the folder, for the log guard's mark. The commit writes the schema version
        again: a commit that changes no page writes nothing and syncs nothing.

        Never by opening the files beside SQLite: closing any descriptor of a file drops
        every lock the process holds on it (``engine.py``), and the next process to close
        the store then takes itself for the last, merges and deletes a log still written."""
        connection = self._connection()
        with self._transaction(connection, "make the writes durable", synced=True):
            connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        try:
            sync_folder(self.data_dir)
        except OSError as exc:
            raise StoreError(
                f"SQLite store {self.path}: cannot make the writes durable: {exc.strerror or exc}"
            ) from exc

    def _begin(self, connection: engine.Connection, action: str, deadline: float) -> None:
        """``BEGIN IMMEDIATE``, polling while another process holds the write lock."""
        pause = 0.0001
        connection.execute("PRAGMA busy_timeout = 0")
        try:
            while True:
                try:
                    connection.execute("BEGIN IMMEDIATE")
                    return
                except engine.Error as exc:
                    if not engine.is_busy(exc):
                        raise
                if time.monotonic() >= deadline:
                    raise self._busy(action)
                time.sleep(pause)
                pause = min(2 * pause, 0.002)
        finally:
            connection.execute(f"PRAGMA busy_timeout = {int(self.tuning.busy_timeout * 1000)}")

    def _codec(self, table: Table) -> sql.Codec:
        codec = self._codecs.get(table.name)
        if codec is None or (codec.table is not table and codec.table != table):
            raise KeyError(f"{table.name} is not a table of this store")
        return codec

    # --- the contract -------------------------------------------------------------------

    def put(self, table: Table, rows: Iterable[Mapping[str, Any]]) -> int:
        codec = self._codec(table)
        statement = sql.upsert(table)
        limit_bytes, limit_rows = self.tuning.commit_bytes, self.tuning.commit_rows
        written = 0
        batch: list[tuple[Any, ...]] = []
        size = 0
        for row in rows:
            values = codec.encode_row(row)
            batch.append(values)
            size += sql.value_size(values)
            if size >= limit_bytes or len(batch) >= limit_rows:
                written += self._write_batch(table, statement, batch)
                batch, size = [], 0
        if batch:
            written += self._write_batch(table, statement, batch)
        return written

    def _write_batch(self, table: Table, statement: str, batch: list[tuple[Any, ...]]) -> int:
        connection = self._connection()
        with self._transaction(connection, f"write to {table.name}"):
            connection.executemany(statement, batch)
        return len(batch)

    def get(
        self, table: Table, key: Mapping[str, Any], columns: Sequence[str] | None = None
    ) -> Row | None:
        codec = self._codec(table)
        _check_key(table, key, (table.primary_key,))
        names = _projection(table, columns)
        statement = sql.select(table, codec.selected(names), table.primary_key)
        params = codec.encode_key(key, table.primary_key)
        with self._errors(f"read {table.name}"):
            found = self._connection().execute(statement, params).fetchone()
        if found is None:
            return None
        try:
            return codec.decode(names, found)
        except packing.UnpackError as exc:
            raise self._corrupt(table, key, exc) from None

    def _corrupt(self, table: Table, key: Mapping[str, Any], exc: Exception) -> IntegrityError:
        where = ", ".join(f"{name} {key.get(name)}" for name in table.primary_key)
        kind = DamagedRowError if isinstance(exc, sql.DamagedCell) else IntegrityError
        return kind(f"SQLite store {self.path}: {table.name} ({where}): {exc}")

    def _scan(self, scan: Scan) -> Iterator[Row]:
        table, start_after = scan.table, scan.start_after
        codec = self._codec(table)
        names = _projection(table, scan.columns)
        if scan.partition is None:
            return self._pages(_ScanPlan(table, names, (), (), table.primary_key), scan.limit)
        _check_key(table, scan.partition, (table.partition_key,))
        equal = codec.encode_key(scan.partition, table.partition_key)
        bound: tuple[Any, ...] | None = None
        if start_after is not None:
            if not table.clustering_key:
                raise ValueError(f"{table.name} has no clustering key to start after")
            _check_key(table, start_after, (table.clustering_key,))
            bound = codec.encode_key(start_after, table.clustering_key)
        order = table.clustering_key
        plan = _ScanPlan(table, names, table.partition_key, equal, order, scan.descending)
        return self._pages(plan, scan.limit, bound)

    def _scan_range(self, scan: RangeScan) -> Iterator[tuple[Position, Row]]:
        # The range order is the partition key's (positions: its stored values, a list).
        table, after, upto = scan.table, scan.after, scan.upto
        codec, key = self._codec(table), table.partition_key
        names = _projection(table, scan.columns)
        names += tuple(name for name in key if name not in names)
        bound = None if after is None else self._after_partition(table, tuple(after))
        last = None if upto is None else tuple(upto)
        plan = _ScanPlan(table, names, (), (), table.primary_key)
        for row in self._pages(plan, None, bound):
            position = codec.encode_key(row, key)
            if last is not None and position > last:
                return
            yield list(position), row

    def _after_partition(self, table: Table, position: tuple[Any, ...]) -> tuple[Any, ...]:
        """A bound on the whole primary key that every row of a later partition, and no
        row of this one, lies after: this partition's last row (any clustering values
        when it has none)."""
        if not table.clustering_key:
            return position
        codec = self._codec(table)
        partition = dict(zip(table.partition_key, position, strict=True))
        decoded = {name: codec.decoders[name](value) for name, value in partition.items()}
        found = self.scan(table, decoded, descending=True, limit=1, columns=table.primary_key)
        last = next(found, None)
        if last is None:
            return (*position, *(0 for _ in table.clustering_key))
        return codec.encode_key(last, table.primary_key)

    def position_at(self, table: Table, share: Fraction) -> Position:
        with self._errors(f"read {table.name}"):
            connection = self._connection()
            count = engine.first(connection, sql.count_partitions(table))
            before = min(count, int(count * Fraction(share)))
            if before <= 0:
                return [_lowest(table.column(name).type) for name in table.partition_key]
            found = connection.execute(sql.nth_partition(table), (before - 1,)).fetchone()
        return list(found) if found is not None else None

    def _pages(
        self, plan: _ScanPlan, limit: int | None, bound: tuple[Any, ...] | None = None
    ) -> Iterator[Row]:
        """Rows of a scan, one ``LIMIT`` query per page, each page starting after the
        ordering key of the previous page's last row."""
        codec = self._codec(plan.table)
        names = plan.columns
        wanted = codec.selected(names)
        selected = wanted + tuple(name for name in plan.order if name not in wanted)
        at = [selected.index(name) for name in plan.order]
        reads_blob = any(plan.table.column(n).type is ColumnType.BLOB for n in names)
        page_rows = self.tuning.blob_page_rows if reads_blob else self.tuning.page_rows
        remaining = limit
        while remaining is None or remaining > 0:
            size = page_rows if remaining is None else min(page_rows, remaining)
            if plan.order:
                statement = sql.select_page(
                    plan.table,
                    selected,
                    plan.equal,
                    plan.order,
                    after=bound is not None,
                    descending=plan.descending,
                )
                params = (*plan.equal_values, *(bound or ()), size)
            else:  # a partition scan of a table without clustering key: one row at most
                statement = sql.select(plan.table, selected, plan.equal)
                params = plan.equal_values
            with self._errors(f"read {plan.table.name}"):
                page = self._connection().execute(statement, params).fetchall()
            for values in page:
                try:
                    row = codec.decode(names, values[: len(wanted)])
                except packing.UnpackError as exc:
                    key = dict(zip(selected, values, strict=True))
                    raise self._corrupt(plan.table, key, exc) from None
                yield row
            if len(page) < size or not plan.order:
                return
            bound = tuple(page[-1][i] for i in at)
            if remaining is not None:
                remaining -= len(page)

    def delete(
        self, table: Table, key: Mapping[str, Any], *, written_before: int | None = None
    ) -> None:
        # written_before: see Backend.delete (one writer at a time orders writes here).
        codec = self._codec(table)
        names = _check_key(table, key, (table.primary_key, table.partition_key))
        connection = self._connection()
        with self._transaction(connection, f"delete from {table.name}"):
            connection.execute(sql.delete(table, names), codec.encode_key(key, names))

    def put_soon(self, table: Table, rows: Sequence[Mapping[str, Any]]) -> Callable[[], None]:
        """Written when the function returned is called: one writer at a time gains nothing
        from writing early, and a ``grouped`` block around the call commits the rows with
        the block's other writes (the ledger's entry with its snapshot's row)."""

        def write() -> None:
            self.put(table, rows)

        return write

    def put_new(self, table: Table, row: Mapping[str, Any]) -> bool:
        values = self._codec(table).encode_row(row)
        connection = self._connection()
        with self._transaction(connection, f"write to {table.name}"):
            connection.execute(sql.insert_new(table), values)
            written = connection.changes()
        return bool(written)

    def put_if_absent(self, table: Table, row: Mapping[str, Any]) -> Row | None:
        codec = self._codec(table)
        names = table.column_names
        statement = sql.select(table, codec.selected(names), table.primary_key)
        connection = self._connection()
        with self._transaction(connection, f"write to {table.name}"):
            connection.execute(sql.insert_new(table), codec.encode_row(row))
            if connection.changes():
                return None
            found = engine.row(connection, statement, codec.encode_key(row, table.primary_key))
            return codec.decode(names, found)

    def replace(
        self, table: Table, key: Mapping[str, Any], column: str, expected: Any, value: Any
    ) -> bool:
        if column in table.primary_key or column not in table.column_names:
            raise ValueError(f"{table.name}: {column!r} is not a value column")
        codec = self._codec(table)
        _check_key(table, key, (table.primary_key,))
        names = table.column_names
        statement = sql.select(table, codec.selected(names), table.primary_key)
        params = codec.encode_key(key, table.primary_key)
        connection = self._connection()
        with self._transaction(connection, f"replace in {table.name}"):
            found = connection.execute(statement, params).fetchone()
            if found is None:
                return False
            try:
                row = codec.decode(names, found)
            except packing.UnpackError:
                return False  # damaged: not what was read
            if row[column] != expected:
                return False
            row[column] = value
            connection.execute(sql.upsert(table), codec.encode_row(row))
        return True

    def describe(self) -> dict[str, Any]:
        connection = self._connection()
        with self._errors("describe the store"):
            page_size = engine.first(connection, "PRAGMA page_size")
            journal_mode = engine.first(connection, "PRAGMA journal_mode")
            synchronous = engine.first(connection, "PRAGMA synchronous")
        sizes = {"": 0, "-wal": 0}  # the database file and its write-ahead log, apart
        for suffix in sizes:
            with suppress(FileNotFoundError):
                sizes[suffix] = self.path.with_name(self.path.name + suffix).stat().st_size
        return {
            "kind": "sqlite",
            "path": str(self.path),
            "sqlite_version": engine.version(),
            "page_size": page_size,
            "journal_mode": journal_mode,
            "synchronous": _SYNCHRONOUS[synchronous] if 0 <= synchronous < 4 else synchronous,
            "size_bytes": sizes[""] + sizes["-wal"],
            "data_bytes": sizes[""],
            "log_bytes": sizes["-wal"],
        }

    def __enter__(self) -> SQLiteBackend:
        return self

    def findings(self) -> list[str]:
        return self._log.findings() if self._log is not None else []

    def file_problems(self, table: str | None = None, *, full: bool = False) -> list[str]:
        names = [t.name for t in self.tables]
        if table is not None:
            if table not in names:
                raise KeyError(f"{table} is not a table of this store")
            return [f"{table}: {line}" for line in self._check(table, full)]
        whole = self._check(None, full)
        if not whole:
            return []
        # SQLite names pages, not tables: each table checked on its own names them; what
        # only the whole file's check sees (pages in no table, the free list) stays its own.
        found = [f"{name}: {line}" for name in names for line in self._check(name, full)]
        beside = [line for line in whole if "never used" in line or "reelist" in line]
        return found + [f"the file: {line}" for line in beside or ([] if found else whole)]

    def _check(self, table: str | None, full: bool) -> list[str]:
        """The lines of SQLite's check of one table (or the whole file) that say something
        is wrong; a check that cannot go on for the damage is one such line."""
        pragma = "integrity_check" if full else "quick_check"
        argument = f"({table})" if table is not None else ""
        try:
            found = self._connection().execute(f"PRAGMA {pragma}{argument}").fetchall()
        except engine.Error as exc:
            if not engine.is_damage(exc):
                raise self._error(f"check {table or 'the file'}", exc) from exc
            return [f"cannot be read whole: {exc}"]
        lines = (part for (text,) in found for part in str(text).splitlines())
        return [line for line in lines if line not in {"ok", "*** in database main ***"}]

    def copy_to(self, folder: Path) -> Path:
        return copy_store(self.path, folder)

    def compact(self, *, min_free: int = 0) -> Compaction:
        """VACUUM beside other processes (``compact.py``): nothing written when the file
        has no free page."""
        if self.read_only:
            self._refuse_read_only("compact the store")
        connection = self._connection()
        with self._errors("compact the store"):
            pages = compact.pages_of(connection)
        before, log_before = compact.file_sizes(self.path)
        found = Compaction(before, before, log_before, pages.free * pages.size)
        if not pages.free:
            return found
        compact.check_room(self.path, pages, min_free)
        if not self._writer.acquire(timeout=self.tuning.busy_timeout):
            raise self._busy("compact the store")
        try:
            with self._errors("compact the store"):
                if self._log is not None:
                    self._log.before_commit(deferred=False)
                found.merged = compact.vacuum(connection)
        finally:
            self._writer.release()
        found.after_bytes, found.log_bytes = compact.file_sizes(self.path)
        return found

    def close(self) -> None:
        """Merge the log into the database where it can (``store_file.LogGuard.merge``),
        then close every thread's connection; the backend cannot be used afterwards."""
        if self._log is not None and not self._closed:
            atexit.unregister(self.close)
            self._merge_log()
        with self._lock:
            self._closed = True
            connections = list(self._connections.values())
            self._connections = {}
        for connection in connections:
            connection.close()
        if self._log is not None and connections:
            self._log.after_close()

    def _merge_log(self) -> None:
        assert self._log is not None
        if not self._writer.acquire(timeout=self.tuning.busy_timeout):
            return
        try:
            connection = self._connection()
            deadline = time.monotonic() + MERGE_LOCK_WAIT
            self._log.merge(connection, lambda: self._begin(connection, "merge", deadline))
        except StoreError:
            pass  # the store cannot be opened now: the mark stays, as it should
        finally:
            self._writer.release()


@dataclass(frozen=True)
class _ScanPlan:
    """What one scan reads: ``equal`` columns fixed to ``equal_values``, ordered by
    ``order`` (descending or not)."""

    table: Table
    columns: tuple[str, ...]
    equal: tuple[str, ...]
    equal_values: tuple[Any, ...]
    order: tuple[str, ...]
    descending: bool = False


def _lowest(kind: ColumnType) -> Any:
    """A stored value no key of this type sorts before (a date is stored as its ISO text:
    the first day there is, which decodes as a date)."""
    if kind is ColumnType.DATE:
        return datetime.date.min.isoformat()
    if kind is ColumnType.INT:  # 32 bits, as Cassandra's int (the encoder checks it)
        return -(2**31)
    return "" if kind is ColumnType.TEXT else b"" if kind is ColumnType.BLOB else -(2**63)


def _projection(table: Table, columns: Sequence[str] | None) -> tuple[str, ...]:
    if columns is None:
        return table.column_names
    names = tuple(columns)
    unknown = [name for name in names if name not in table.column_names]
    if unknown or not names:
        raise ValueError(f"{table.name}: cannot read columns {list(names)} (unknown {unknown})")
    return names


def _check_key(
    table: Table, key: Mapping[str, Any], allowed: tuple[tuple[str, ...], ...]
) -> tuple[str, ...]:
    """The allowed key (column names in declaration order) that ``key`` gives exactly."""
    given = set(key)
    for names in allowed:
        if given == set(names):
            return names
    expected = " or ".join(str(list(names)) for names in allowed)
    raise ValueError(f"{table.name}: key must give exactly {expected}, got {sorted(given)}")

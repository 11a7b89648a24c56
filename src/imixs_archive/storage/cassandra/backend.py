"""The Cassandra backend: the storage contract over a keyspace the Java service can share.

Every statement comes from ``storage/cassandra/cql.py`` and is prepared once (idempotent, at the
configured read or write consistency); values only ever travel as bound parameters.
Scans page through results; writes run concurrently with at most
``cluster_write_concurrency`` in flight (``ROW_WINDOW`` into a table without blobs),
pulling the next row only when a slot is free.
Requests that time out are retried with exponential backoff; an unreachable cluster or
too few live replicas raise :class:`StoreUnavailableError` so callers pause instead of
dropping work.

The driver is reached only through :class:`~imixs_archive.storage.cassandra.session.CqlSession`.
"""

from __future__ import annotations

import datetime
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Set
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from fractions import Fraction
from functools import partial
from typing import Any, TypeVar

from cassandra import (
    AuthenticationFailed,
    DriverException,
    OperationTimedOut,
    ReadTimeout,
    Unavailable,
    WriteTimeout,
    consistency_value_to_name,
)
from cassandra.cluster import NoHostAvailable
from cassandra.connection import ConnectionBusy, ConnectionException
from cassandra.protocol import OverloadedErrorMessage
from cassandra.timestamps import MonotonicTimestampGenerator
from cassandra.util import Date

from imixs_archive.config import Settings
from imixs_archive.errors import ConfigError, NotFoundError, StoreError, StoreUnavailableError
from imixs_archive.storage.base import Backend, Position, RangeScan, Row, Scan, key_of
from imixs_archive.storage.cassandra import cql, ranges
from imixs_archive.storage.cassandra.config import (
    CassandraConfig,
    choose_replication,
    consistency_level,
    load_config,
)
from imixs_archive.storage.cassandra.session import CqlSession, DriverSession, Page
from imixs_archive.storage.model import TABLES, ColumnType, Table

T = TypeVar("T")
log = logging.getLogger("imixs_archive.cassandra")
_END: Any = object()

RETRYABLE: tuple[type[BaseException], ...] = (OperationTimedOut, ReadTimeout, WriteTimeout)
UNAVAILABLE: tuple[type[BaseException], ...] = (NoHostAvailable, Unavailable, ConnectionException)
BACK_PRESSURE: tuple[type[BaseException], ...] = (OverloadedErrorMessage, ConnectionBusy)

PIECE_FETCH_SIZE = 4
"""Rows per page when reading pieces (each up to 1 MiB)."""
BLOB_FETCH_SIZE = 100
"""Rows per page when reading other blobs (snapshot XML)."""
MUTATION_ROOM = 64 * 1024
"""Of the node's mutation limit, what a ``snapshots`` row's XML leaves for its key, the
write's framing and a lightweight transaction's ballot."""
ROW_FETCH_SIZE = 1000
"""Rows per page for index tables (a few dozen bytes a row)."""
BATCH_BYTES = 4096
"""Consecutive rows of one partition in a table without blobs are written as one
unlogged batch (one request, applied as one mutation) of up to about this many bytes of
values: under the node's default ``batch_size_warn_threshold`` (5 KiB)."""
BATCH_ROWS = 100
PARTITION_ROWS = 10_000
"""Rows of one partition :meth:`CassandraBackend.put_partition` sends as one batch at most:
a file's piece list of up to 10,000 pieces (10 GB in Java's cuts), about 1.1 MB. A batch
into one partition is one mutation, which the node does not hold to
``batch_size_warn_threshold``/``batch_size_fail_threshold`` (those are for batches over
several partitions), only to ``max_mutation_size`` (16 MiB by default)."""
ROW_WINDOW = 32
"""Writes in flight at once into a table without blobs (rows of a few dozen bytes: a
file's piece references, one partition each); ``cluster_write_concurrency`` bounds the
writes of blobs, whose memory it is about."""


def supports_zstd(release_versions: Iterable[str]) -> bool:
    """True when every node runs Cassandra 4.0 or later (ZstdCompressor arrived in 4.0)."""
    versions = [_major_minor(text) for text in release_versions]
    return bool(versions) and min(versions) >= (4, 0)


def _major_minor(text: str) -> tuple[int, int]:
    parts = []
    for part in text.split(".")[:2]:
        digits = "".join(char for char in part if char.isdigit()) or "0"
        parts.append(int(digits) if part[:1].isdigit() else 0)
    parts += [0] * (2 - len(parts))
    return parts[0], parts[1]


def plan_schema(
    existing_tables: Set[str],
    keyspace_exists: bool,
    keyspace: str,
    replication: cql.Replication,
    *,
    zstd: bool = False,
    tables: Sequence[Table] = TABLES,
) -> list[str]:
    """The DDL that brings a keyspace up to the model: the keyspace when it is missing, then
    every missing table. Existing tables are never altered, so a keyspace the Java service
    created is upgraded in place without touching its data."""
    plan = [] if keyspace_exists else [cql.create_keyspace(keyspace, replication)]
    present = existing_tables if keyspace_exists else frozenset()
    plan += [cql.create_table(keyspace, t, zstd=zstd) for t in tables if t.name not in present]
    return plan


class CassandraBackend(Backend):
    """Rows of the model's tables in one Cassandra keyspace."""

    name = "cassandra"

    def __init__(
        self,
        session: CqlSession,
        config: CassandraConfig,
        *,
        sleep: Callable[[float], None] = time.sleep,
        backoff: float = 0.2,
        max_backoff: float = 10.0,
    ) -> None:
        self._session = session
        self._config = config
        self._keyspace = config.keyspace
        self._sleep = sleep
        self._backoff = backoff
        self._max_backoff = max_backoff
        self._read_level = consistency_level(config.consistency_read, write=False)
        self._write_level = consistency_level(config.consistency_write, write=True)
        self._prepared: dict[str, Any] = {}
        # The statements of the hot paths by table (and columns read), so a request does
        # not build and look up its CQL text each time.
        self._inserts: dict[str, Any] = {}
        self._selects: dict[tuple[str, tuple[str, ...] | None], tuple[Any, tuple[str, ...]]] = {}
        self._zstd: bool | None = None
        self._inline_limit: int | None = None
        # Write timestamps are taken here, once per write, and bound into the statement:
        # a retry then carries the first attempt's timestamp (the driver would stamp each
        # attempt anew). Monotonic, so a delete and a rewrite in this process keep order.
        self._clock = MonotonicTimestampGenerator()
        self.concurrency = max(2, config.write_concurrency)
        self.local_reads = False

    @classmethod
    def from_settings(cls, settings: Settings, *, create: bool = True) -> CassandraBackend:
        """Connect, create what is missing of the keyspace, and wait for schema agreement.
        ``create=False``: a keyspace that does not exist is a ``NotFoundError``."""
        config = load_config(settings)
        try:
            session = DriverSession.connect(config)
        except NoHostAvailable as exc:
            if exc.errors and all(isinstance(e, AuthenticationFailed) for e in exc.errors.values()):
                raise ConfigError(
                    f"Cassandra at {config.hosts} refused the credentials of "
                    f"user {config.user!r}: {_first_error(exc)}"
                ) from None
            raise _unavailable(config, "connecting", exc) from exc
        backend = cls(session, config)
        try:
            if not create and session.keyspace_tables(config.keyspace) is None:
                raise NotFoundError(
                    f"no archive in Cassandra keyspace {config.keyspace!r} at {config.hosts} "
                    "(nothing was created)"
                )
            backend.ensure_schema()
        except BaseException:
            backend.close()
            raise
        return backend

    # --- schema ---

    @property
    def inline_limit(self) -> int:
        """The largest XML a ``snapshots`` row holds whole here: the node's mutation limit
        (``max_mutation_size``, half the commit log segment unless set), less room for
        the key and framing, as the Java service writes up to it; the default limit's
        when the node does not say (before Cassandra 4: no ``system_views``). Asked once."""
        if self._inline_limit is None:
            self._inline_limit = self._node_inline_limit()
        return self._inline_limit

    @inline_limit.setter
    def inline_limit(self, value: int) -> None:
        self._inline_limit = value

    def _node_inline_limit(self) -> int:
        try:
            statement = self._session.prepare(
                "SELECT value FROM system_views.settings WHERE name = 'max_mutation_size_in_kb'",
                self._read_level,
            )
            rows = self._session.execute(statement, []).rows
            kib = int(rows[0][0]) if rows and rows[0][0] else 0
        except (DriverException, ValueError, TypeError, IndexError):
            return Backend.inline_limit
        return (
            kib * 1024 - MUTATION_ROOM if kib * 1024 > 2 * MUTATION_ROOM else Backend.inline_limit
        )

    def ensure_schema(self) -> list[str]:
        """Create the keyspace and every missing table; when anything was created, wait
        until all nodes agree. Returns the DDL that was run.

        Nothing missing (every start but the first): no DDL and no wait. Several
        processes creating at once are safe: tables carry deterministic ids
        (:func:`cql.table_id`), so concurrent ``CREATE TABLE IF NOT EXISTS`` agree."""
        existing = self._session.keyspace_tables(self._keyspace)
        info = self._session.info(self._keyspace)
        self._zstd = supports_zstd(info.release_versions)
        nodes = len(info.hosts)
        if existing is None:
            replication, warning = choose_replication(
                self._config.replication, self._keyspace, nodes, info.datacenters
            )
        else:
            replication = self._config.replication or cql.Replication(
                cql.SIMPLE, (("replication_factor", 1),)
            )
            warning = _single_copy_warning(self._keyspace, nodes, info.copies)
        if warning:
            log.warning("%s", warning)
        plan = plan_schema(
            existing or frozenset(),
            existing is not None,
            self._keyspace,
            replication,
            zstd=self._zstd,
        )
        if not plan:
            return plan
        first = plan[:1] if existing is None else []  # the keyspace, before its tables
        for statement in first:
            self._retrying("creating the schema", partial(self._session.execute_ddl, statement))
        self._create_tables(plan[len(first) :])
        agreement = self._session.wait_for_schema_agreement
        if not self._retrying("waiting for schema agreement", agreement):
            raise StoreUnavailableError(
                f"Cassandra nodes at {self._config.hosts} did not agree on the schema of "
                f"keyspace {self._keyspace!r} in time; retry when all nodes are up"
            )
        return plan

    def _create_tables(self, statements: Sequence[str]) -> None:
        """Every ``CREATE TABLE`` started at once. A node applies schema changes one after
        the other, but the round trips, and the driver's agreement check and metadata
        refresh after each change, overlap (28 tables on one node: 3.1-3.5 s one by one,
        2.0-2.4 s at once). Each statement is idempotent (``IF NOT EXISTS``, a fixed table
        id), so one that timed out is run again on its own."""
        started = {self._session.execute_ddl_async(text): text for text in statements}
        wait(started)
        again: list[str] = []
        for future, text in started.items():
            error = future.exception()
            if error is None:
                continue
            if not _retryable(error):
                raise self._error("creating the schema", error) from error
            again.append(text)
        for text in again:
            self._sleep(self._delay(1))
            create = partial(self._session.execute_ddl, text)
            self._retrying("creating the schema", create, attempt=2)

    def drop_keyspace(self) -> None:
        """Delete the whole keyspace and everything in it (test clean-up)."""
        statement = cql.drop_keyspace(self._keyspace)
        self._retrying("dropping the keyspace", partial(self._session.execute_ddl, statement))
        self._prepared.clear()
        self._inserts.clear()
        self._selects.clear()

    def truncate_all(self, tables: Sequence[Table] = TABLES) -> list[str]:
        """Empty the tables (every table of the model by default; test clean-up between
        tests: far cheaper than a keyspace per test), all at once, each on a thread of its
        own: rows and tombstones alike."""
        if not tables:
            return []
        with ThreadPoolExecutor(len(tables)) as pool:
            running = [
                pool.submit(
                    self._retrying,
                    f"emptying {table.name}",
                    partial(self._session.execute_ddl, cql.truncate(self._keyspace, table)),
                )
                for table in tables
            ]
            for future in running:
                future.result()  # raises the first failure
        return [table.name for table in tables]

    # --- the storage contract ---

    def _insert(self, table: Table) -> Any:
        """The prepared insert of ``table`` (prepared once)."""
        statement = self._inserts.get(table.name)
        if statement is None:
            statement = self._statement(cql.insert(self._keyspace, table), write=True)
            self._inserts[table.name] = statement
        return statement

    def put(self, table: Table, rows: Iterable[Mapping[str, Any]]) -> int:
        statement = self._insert(table)
        what = f"writing {table.name}"
        window: dict[Future[Any], tuple[list[list[Any]], int]] = {}
        written = 0
        requests = _requests(table, rows, self._clock)
        width = self._config.write_concurrency
        if not any(column.type is ColumnType.BLOB for column in table.columns):
            width = max(width, ROW_WINDOW)
        try:
            while True:
                while len(window) >= width:
                    written += self._settle(window, statement, what)
                group = next(requests, _END)
                if group is _END:
                    break
                window[self._start(statement, group, what)] = (group, 1)
            while window:
                written += self._settle(window, statement, what)
        except BaseException:
            wait(window)  # let what is in flight finish before reporting
            raise
        return written

    partition_rows = PARTITION_ROWS

    def put_partition(self, table: Table, rows: Sequence[Mapping[str, Any]]) -> int:
        statement = self._insert(table)
        what = f"writing {table.name}"
        params = [[*_params(table, row), self._clock()] for row in rows]
        window: dict[Future[Any], tuple[list[list[Any]], int]] = {}
        for start in range(0, len(params), PARTITION_ROWS):
            group = params[start : start + PARTITION_ROWS]
            window[self._start(statement, group, what)] = (group, 1)
        written = 0
        try:
            while window:
                written += self._settle(window, statement, what)
        except BaseException:
            wait(window)
            raise
        return written

    def put_soon(self, table: Table, rows: Sequence[Mapping[str, Any]]) -> Callable[[], None]:
        statement = self._insert(table)
        what = f"writing {table.name}"
        window: dict[Future[Any], tuple[list[list[Any]], int]] = {}
        for group in _requests(table, rows, self._clock):
            window[self._start(statement, group, what)] = (group, 1)

        def settle() -> None:
            try:
                while window:
                    self._settle(window, statement, what)
            except BaseException:
                wait(window)
                raise

        return settle

    def get(
        self, table: Table, key: Mapping[str, Any], columns: Sequence[str] | None = None
    ) -> Row | None:
        cached = (table.name, None if columns is None else tuple(columns))
        plan = self._selects.get(cached)
        if plan is None:
            names = _selected(table, columns)
            text = cql.select_row(self._keyspace, table, names)
            plan = self._selects[cached] = (self._statement(text, write=False), names)
        statement, names = plan
        params = _key_params(table, key, table.primary_key, "full primary key")
        page = self._retrying(
            f"reading {table.name}", partial(self._session.execute, statement, params)
        )
        return _row(table, names, page.rows[0]) if page.rows else None

    def _scan(self, scan: Scan) -> Iterator[Row]:
        table, limit = scan.table, scan.limit
        names = _selected(table, scan.columns)
        if scan.partition is None:
            text = cql.select_all(self._keyspace, table, names, limit=limit is not None)
            params: list[Any] = []
        else:
            params = _key_params(table, scan.partition, table.partition_key, "partition key")
            start_after = scan.start_after or {}
            after = _after(table, start_after)
            params += [_bind(table, name, start_after[name]) for name in after]
            text = cql.select_partition(
                self._keyspace,
                table,
                names,
                descending=scan.descending,
                after=len(after),
                limit=limit is not None,
            )
        if limit is not None:
            if limit == 0:
                return iter(())
            params.append(limit)
        statement = self._statement(text, write=False)
        fetch_size = _fetch_size(table, names)
        if limit is not None:
            fetch_size = min(fetch_size, limit)
        return self._pages(table, names, statement, params, fetch_size, limit)

    def _scan_range(self, scan: RangeScan) -> Iterator[tuple[Position, Row]]:
        # The range order is the token ring's (ranges.py): positions are tokens.
        table = scan.table
        names = _selected(table, scan.columns)
        names += tuple(name for name in table.partition_key if name not in names)
        text = ranges.select_token_range(self._keyspace, table, names)
        statement = self._statement(text, write=False)
        params = list(ranges.bounds(scan.after, scan.upto))
        rows = self._pages(
            table, ("token", *names), statement, params, _fetch_size(table, names), None
        )
        for row in rows:
            yield row.pop("token"), row

    def position_at(self, table: Table, share: Fraction) -> Position:
        return ranges.token_at(share)

    def delete(
        self, table: Table, key: Mapping[str, Any], *, written_before: int | None = None
    ) -> None:
        if set(key) == set(table.primary_key):
            text, names = cql.delete_row(self._keyspace, table), table.primary_key
        elif set(key) == set(table.partition_key):
            text, names = cql.delete_partition(self._keyspace, table), table.partition_key
        else:
            raise ValueError(
                f"{table.name}: delete takes the full primary key {table.primary_key} "
                f"or the partition key {table.partition_key}, not {tuple(key)}"
            )
        statement = self._statement(text, write=True)
        # Every delete carries its timestamp: the given one (only writes before it go), or
        # one taken now, once, so a retry cannot undo a write made after the first attempt.
        stamp = written_before if written_before is not None else self._clock()
        params = [stamp, *(_bind(table, name, key[name]) for name in names)]
        self._retrying(
            f"deleting from {table.name}", partial(self._session.execute, statement, params)
        )

    def put_if_absent(self, table: Table, row: Mapping[str, Any]) -> Row | None:
        statement = self._statement(cql.insert_if_absent(self._keyspace, table), write=True)
        params = [_bind(table, name, row[name]) for name in table.column_names]
        for _attempt in range(3):
            page = self._retrying(
                f"writing {table.name}", partial(self._session.execute, statement, params)
            )
            if page.rows and page.rows[0][0]:
                return None
            found = self.get(table, key_of(table, row))
            if found is not None:
                return found
            # Not written, and gone when read: deleted in between. Try again.
        raise StoreError(f"writing {table.name}: the row kept changing under this write")

    def replace(
        self, table: Table, key: Mapping[str, Any], column: str, expected: Any, value: Any
    ) -> bool:
        statement = self._statement(cql.replace_cell(self._keyspace, table, column), write=True)
        params = [
            _bind(table, column, value),
            *_key_params(table, key, table.primary_key, "full primary key"),
            _bind(table, column, expected),
        ]
        attempts = 0

        def attempt() -> Page:
            nonlocal attempts
            attempts += 1
            return self._session.execute(statement, params)

        page = self._retrying(f"replacing in {table.name}", attempt)
        if page.rows and page.rows[0][0]:
            return True
        # An attempt whose answer timed out may have been applied (a lightweight
        # transaction's outcome is then unknown): its retry finds the value this call was
        # to write where the expected one was. Set, by this call.
        found = page.rows[0] if page.rows else ()
        return attempts > 1 and len(found) > 1 and found[1] == params[0]

    def describe(self) -> dict[str, Any]:
        info = self._session.info(self._keyspace)
        return {
            "kind": "cassandra",
            "contact_points": self._config.hosts,
            "keyspace": self._keyspace,
            "replication": info.replication.get("cql")
            or (self._config.replication.literal() if self._config.replication else None),
            "consistency": {
                "read": self._config.consistency_read,
                "write": self._config.consistency_write,
            },
            "cluster_name": info.cluster_name,
            "release_versions": list(info.release_versions),
            "local_dc": info.local_dc or self._config.local_dc or None,
            "hosts": list(info.hosts),
            "zstd": self._zstd,
        }

    def close(self) -> None:
        self._session.close()

    # --- requests ---

    def _statement(self, text: str, *, write: bool) -> Any:
        prepared = self._prepared.get(text)
        if prepared is None:
            level = self._write_level if write else self._read_level
            prepare = partial(self._session.prepare, text, level)
            prepared = self._retrying("preparing a statement", prepare)
            self._prepared[text] = prepared
        return prepared

    def _pages(
        self,
        table: Table,
        names: Sequence[str],
        statement: Any,
        params: Sequence[Any],
        fetch_size: int,
        limit: int | None,
    ) -> Iterator[Row]:
        remaining = limit
        state: bytes | None = None
        while True:
            page = self._retrying(
                f"reading {table.name}",
                partial(
                    self._session.execute,
                    statement,
                    params,
                    fetch_size=fetch_size,
                    paging_state=state,
                ),
            )
            for values in page.rows:
                yield _row(table, names, values)
                if remaining is not None:
                    remaining -= 1
                    if remaining <= 0:
                        return
            state = page.paging_state
            if state is None:
                return

    def _retrying(self, what: str, request: Callable[[], T], *, attempt: int = 1) -> T:
        """Run ``request``; on a time-out, retry with exponential backoff. ``attempt``:
        the number of this attempt (an earlier one was made elsewhere)."""
        while True:
            try:
                return request()
            except (*RETRYABLE, *UNAVAILABLE, *BACK_PRESSURE, DriverException) as exc:
                if not _retryable(exc):
                    raise self._error(what, exc) from exc
                if attempt >= self._config.retries:
                    raise self._timed_out(what, attempt, exc) from exc
                self._sleep(self._delay(attempt))
                attempt += 1

    def _start(self, statement: Any, group: list[list[Any]], what: str) -> Future[Any]:
        try:
            if len(group) == 1:
                return self._session.execute_async(statement, group[0])
            return self._session.execute_batch_async(statement, group)
        except (*UNAVAILABLE, DriverException) as exc:
            raise self._error(what, exc) from exc

    def _settle(
        self, window: dict[Future[Any], tuple[list[list[Any]], int]], statement: Any, what: str
    ) -> int:
        """Wait for at least one write in ``window`` to finish; re-issue those that timed
        out (with the parameters, timestamps included, of their first attempt). Returns
        how many rows were written."""
        done, _ = wait(window, return_when=FIRST_COMPLETED)
        completed = 0
        for future in done:
            group, attempt = window.pop(future)
            error = future.exception()
            if error is None:
                completed += len(group)
            elif _retryable(error) and attempt < self._config.retries:
                self._sleep(self._delay(attempt))
                window[self._start(statement, group, what)] = (group, attempt + 1)
            elif _retryable(error):
                raise self._timed_out(what, attempt, error) from error
            else:
                raise self._error(what, error) from error
        return completed

    def _delay(self, attempt: int) -> float:
        return float(min(self._max_backoff, self._backoff * 2 ** (attempt - 1)))

    def _timed_out(self, what: str, attempts: int, exc: BaseException) -> StoreError:
        return StoreError(
            f"Cassandra timed out {attempts} times {what} in keyspace {self._keyspace!r} "
            f"at {self._config.hosts}: {exc}"
        )

    def _error(self, what: str, exc: BaseException) -> StoreError:
        if isinstance(exc, UNAVAILABLE):
            return _unavailable(self._config, what, exc)
        return StoreError(f"Cassandra refused {what} in keyspace {self._keyspace!r}: {exc}")


# --- rows and parameters ---


def _unavailable(config: CassandraConfig, what: str, exc: BaseException) -> StoreUnavailableError:
    if isinstance(exc, Unavailable):
        why = (
            f"only {exc.alive_replicas} of {exc.required_replicas} replicas needed for "
            f"{consistency_value_to_name(exc.consistency)} are alive"
            if exc.required_replicas is not None
            else str(exc)
        )
    elif isinstance(exc, NoHostAvailable):
        why = f"no host answered ({_first_error(exc)})"
    else:
        why = str(exc)
    return StoreUnavailableError(
        f"Cassandra is unavailable while {what} (hosts {config.hosts}, "
        f"keyspace {config.keyspace!r}): {why}; retry later"
    )


def _retryable(exc: BaseException) -> bool:
    """A time-out, or back-pressure: the coordinator said it is overloaded, or every
    connection's socket is full because the node stopped reading (it does so while a
    client has more request bytes in flight than it accepts). Both pass when waited for."""
    if isinstance(exc, (*RETRYABLE, *BACK_PRESSURE)):
        return True
    if isinstance(exc, NoHostAvailable) and exc.errors:
        return all(_retryable(error) for error in exc.errors.values())
    return False


def _single_copy_warning(keyspace: str, nodes: int, copies: Mapping[str, int]) -> str | None:
    if nodes > 1 and copies and min(copies.values()) < 2:
        return (
            f"keyspace {keyspace!r} keeps ONE copy of every row ({dict(copies)}) on a cluster "
            f"of {nodes} nodes: losing one disk loses archived data; raise its replication "
            "(ALTER KEYSPACE, then nodetool repair; see docs/cassandra.md)"
        )
    return None


def _first_error(exc: NoHostAvailable) -> str:
    if not exc.errors:
        return str(exc.args[0]) if exc.args else "no hosts"
    host, error = next(iter(exc.errors.items()))
    more = f" and {len(exc.errors) - 1} more" if len(exc.errors) > 1 else ""
    return f"{host}: {error}{more}"


def _selected(table: Table, columns: Sequence[str] | None) -> tuple[str, ...]:
    names = table.column_names if columns is None else tuple(columns)
    for name in names:
        if name not in table.column_names:
            raise ValueError(f"{table.name} has no column {name!r}")
    if not names:
        raise ValueError(f"{table.name}: no columns selected")
    return names


def _key_params(table: Table, key: Mapping[str, Any], names: Sequence[str], kind: str) -> list[Any]:
    if set(key) != set(names):
        raise ValueError(f"{table.name}: expected the {kind} {tuple(names)}, got {tuple(key)}")
    return [_bind(table, name, key[name]) for name in names]


def _after(table: Table, start_after: Mapping[str, Any]) -> tuple[str, ...]:
    """The clustering columns ``start_after`` names: a prefix of the clustering key."""
    count = len(start_after)
    if set(start_after) != set(table.clustering_key[:count]):
        raise ValueError(
            f"{table.name}: start_after must name a prefix of the clustering key "
            f"{table.clustering_key}, got {tuple(start_after)}"
        )
    return table.clustering_key[:count]


def _requests(
    table: Table, rows: Iterable[Mapping[str, Any]], clock: Callable[[], int]
) -> Iterator[list[list[Any]]]:
    """The parameters of each write request, the write timestamp last: one row each, or,
    in a table without blobs, consecutive rows of one partition together (see
    ``BATCH_BYTES``). Pulls a row only when the request before it is handed out."""
    batching = all(column.type is not ColumnType.BLOB for column in table.columns)
    partition = [table.column_names.index(name) for name in table.partition_key]
    group: list[list[Any]] = []
    size = 0
    for row in rows:
        params = [*_params(table, row), clock()]
        if not batching:
            yield [params]
            continue
        row_size = sum(len(v) if isinstance(v, str | bytes) else 8 for v in params)
        if group and (
            [params[i] for i in partition] != [group[0][i] for i in partition]
            or size + row_size > BATCH_BYTES
            or len(group) >= BATCH_ROWS
        ):
            yield group
            group, size = [], 0
        group.append(params)
        size += row_size
    if group:
        yield group


def _params(table: Table, row: Mapping[str, Any]) -> list[Any]:
    if set(row) != set(table.column_names):
        raise ValueError(
            f"{table.name}: a row needs exactly the columns {table.column_names}, got {tuple(row)}"
        )
    return [_bind(table, name, row[name]) for name in table.column_names]


def _bind(table: Table, name: str, value: Any) -> Any:
    if table.column(name).type is ColumnType.DATE and isinstance(value, datetime.datetime):
        raise ValueError(f"{table.name}.{name} is a date: give a datetime.date, not a datetime")
    return value


def _row(table: Table, names: Sequence[str], values: Sequence[Any]) -> Row:
    row = dict(zip(names, values, strict=True))
    for name in names:
        if isinstance(row[name], Date) and table.column(name).type is ColumnType.DATE:
            row[name] = row[name].date()
    return row


def _fetch_size(table: Table, names: Sequence[str]) -> int:
    if not any(table.column(name).type is ColumnType.BLOB for name in names):
        return ROW_FETCH_SIZE
    return PIECE_FETCH_SIZE if table.holds_pieces else BLOB_FETCH_SIZE

"""The Cassandra backend driven through its driver seam, without a server.

``FakeSession`` is a test double of the driver seam (``CqlSession``), not of a database:
it records the statements it is given and answers with scripted pages, scripted errors
and futures that a background thread completes.
"""

from __future__ import annotations

import datetime
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pytest
from cassandra import (
    AuthenticationFailed,
    ConsistencyLevel,
    InvalidRequest,
    OperationTimedOut,
    ReadTimeout,
    Unavailable,
    WriteTimeout,
)
from cassandra.cluster import NoHostAvailable
from cassandra.connection import ConnectionBusy
from cassandra.protocol import OverloadedErrorMessage
from cassandra.util import Date

from imixs_archive.config import load_settings
from imixs_archive.errors import ConfigError, StoreError, StoreUnavailableError
from imixs_archive.storage.cassandra import backend as cassandra_module
from imixs_archive.storage.cassandra.backend import (
    BATCH_BYTES,
    ROW_WINDOW,
    CassandraBackend,
    plan_schema,
    supports_zstd,
)
from imixs_archive.storage.cassandra.config import CassandraConfig, load_config
from imixs_archive.storage.cassandra.cql import SIMPLE, Replication
from imixs_archive.storage.cassandra.session import ClusterInfo, DriverSession, Page
from imixs_archive.storage.model import (
    ARCHIVE_FILES,
    ARCHIVE_PIECE_REFS,
    DOCUMENTS,
    DOCUMENTS_DATA,
    JAVA_TABLES,
    SNAPSHOTS,
    SNAPSHOTS_BY_MODIFIED,
    SNAPSHOTS_BY_UNIQUEID,
    TABLES,
)

KS = "imixs_archive"


@dataclass(frozen=True)
class Prepared:
    cql: str
    consistency: int


@dataclass
class Call:
    cql: str
    params: list[Any]
    fetch_size: int | None = None
    paging_state: bytes | None = None


@dataclass
class FakeSession:
    """Records statements; answers from ``pages`` (by CQL text) and fails with ``errors``."""

    tables: frozenset[str] | None = None
    versions: tuple[str, ...] = ("4.1.5",)
    agreed: bool = True
    pages: dict[str, list[list[tuple[Any, ...]]]] = field(default_factory=dict)
    errors: list[BaseException] = field(default_factory=list)
    """Raised by the next ``execute`` / ``execute_ddl`` calls, one each."""
    async_errors: list[BaseException] = field(default_factory=list)
    """Failures of the next ``execute_async`` futures, one each."""
    hosts: tuple[str, ...] = ("10.0.0.1:9042",)
    copies: dict[str, int] = field(default_factory=lambda: {"replication_factor": 1})
    attempted: list[list[Any]] = field(default_factory=list)
    """The parameters of every ``execute_async``, failed ones included."""
    write_delay: float = 0.0
    prepared: list[Prepared] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    written: list[list[Any]] = field(default_factory=list)
    batches: list[list[list[Any]]] = field(default_factory=list)
    outstanding: int = 0
    max_outstanding: int = 0
    completed: int = 0
    closed: bool = False

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=32)

    def prepare(self, cql: str, consistency: int) -> Any:
        statement = Prepared(cql, consistency)
        self.prepared.append(statement)
        return statement

    def execute(
        self,
        statement: Any,
        params: Sequence[Any],
        *,
        fetch_size: int | None = None,
        paging_state: bytes | None = None,
    ) -> Page:
        self.calls.append(Call(statement.cql, list(params), fetch_size, paging_state))
        if self.errors:
            raise self.errors.pop(0)
        pages = self.pages.get(statement.cql, [[]])
        index = 0 if paging_state is None else int(paging_state)
        more = str(index + 1).encode() if index + 1 < len(pages) else None
        return Page(rows=pages[index], paging_state=more)

    def execute_async(self, statement: Any, params: Sequence[Any]) -> Future[Any]:
        return self.execute_batch_async(statement, [params], batch=False)

    def execute_batch_async(
        self, statement: Any, rows: Sequence[Sequence[Any]], *, batch: bool = True
    ) -> Future[Any]:
        """One request writing ``rows`` (a batch: recorded in ``batches``)."""
        future: Future[Any] = Future()
        with self._lock:
            self.outstanding += 1
            self.max_outstanding = max(self.max_outstanding, self.outstanding)
            error = self.async_errors.pop(0) if self.async_errors else None
            self.attempted.extend(list(params) for params in rows)
            if batch:
                self.batches.append([list(params) for params in rows])

        def complete() -> None:
            time.sleep(self.write_delay)
            with self._lock:
                self.outstanding -= 1
                if error is None:
                    self.completed += len(rows)
                    self.written.extend(list(params) for params in rows)
            if error is None:
                future.set_result([])
            else:
                future.set_exception(error)

        self._pool.submit(complete)
        return future

    def execute_ddl(self, cql: str) -> bool:
        self.events.append(cql)
        if self.errors:
            raise self.errors.pop(0)
        return self.agreed

    def execute_ddl_async(self, cql: str) -> Future[bool]:
        future: Future[bool] = Future()
        try:
            future.set_result(self.execute_ddl(cql))
        except BaseException as exc:
            future.set_exception(exc)
        return future

    def wait_for_schema_agreement(self) -> bool:
        self.events.append("wait for schema agreement")
        return self.agreed

    def keyspace_tables(self, keyspace: str) -> frozenset[str] | None:
        return self.tables

    def info(self, keyspace: str) -> ClusterInfo:
        return ClusterInfo(
            cluster_name="Test Cluster",
            local_dc="datacenter1",
            release_versions=self.versions,
            hosts=self.hosts,
            replication={"cql": "{'class': 'SimpleStrategy', 'replication_factor': '1'}"},
            datacenters={"datacenter1": len(self.hosts)},
            copies=self.copies if self.tables is not None else {},
        )

    def close(self) -> None:
        self.closed = True
        self._pool.shutdown(wait=True)


def make_config(**changes: Any) -> CassandraConfig:
    values: dict[str, Any] = {
        "contact_points": (("cass1", 9042), ("cass2", 9042)),
        "keyspace": KS,
        "replication": Replication(SIMPLE, (("replication_factor", 1),)),
        "consistency_read": "ONE",
        "consistency_write": "QUORUM",
        "write_concurrency": 4,
        "retries": 3,
    }
    values.update(changes)
    return CassandraConfig(**values)


@pytest.fixture
def fake() -> Iterator[FakeSession]:
    session = FakeSession(tables=frozenset(t.name for t in TABLES))
    yield session
    session.close()


@dataclass
class Sleeps:
    delays: list[float] = field(default_factory=list)

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


def backend_for(session: FakeSession, sleeps: Sleeps, **changes: Any) -> CassandraBackend:
    return CassandraBackend(session, make_config(**changes), sleep=sleeps)


# --- reads: paging, bounds, conversion ------------------------------------------------


def test_paging_yields_every_row_once(fake: FakeSession, sleeps: Sleeps) -> None:
    text = (
        "SELECT uniqueid, snapshot FROM imixs_archive.snapshots_by_uniqueid "
        "WHERE uniqueid = ? ORDER BY snapshot ASC"
    )
    rows = [("u", f"u-{n:013d}") for n in range(7)]
    fake.pages[text] = [rows[0:3], rows[3:6], [], rows[6:]]
    backend = backend_for(fake, sleeps)
    found = list(backend.scan(SNAPSHOTS_BY_UNIQUEID, {"uniqueid": "u"}))
    assert found == [{"uniqueid": u, "snapshot": s} for u, s in rows]
    assert [c.paging_state for c in fake.calls] == [None, b"1", b"2", b"3"]
    assert all(c.params == ["u"] and c.fetch_size == 1000 for c in fake.calls)
    assert fake.prepared == [Prepared(text, ConsistencyLevel.ONE)]


def test_scans_stream_page_by_page(fake: FakeSession, sleeps: Sleeps) -> None:
    text = "SELECT md5, digest, size, pieces FROM imixs_archive.archive_files"
    fake.pages[text] = [[("A", "a", 1, 1)] * 3 for _ in range(100)]
    rows = backend_for(fake, sleeps).scan(ARCHIVE_FILES)
    assert fake.calls == []  # nothing is read before the first row is asked for
    for _ in range(4):
        next(rows)
    assert len(fake.calls) == 2


def test_descending_after_a_bound_with_a_limit(fake: FakeSession, sleeps: Sleeps) -> None:
    text = (
        "SELECT snapshot FROM imixs_archive.snapshots_by_uniqueid "
        "WHERE uniqueid = ? AND snapshot < ? ORDER BY snapshot DESC LIMIT ?"
    )
    fake.pages[text] = [[("u-4",), ("u-3",)], [("u-2",), ("u-1",)]]
    found = backend_for(fake, sleeps).scan(
        SNAPSHOTS_BY_UNIQUEID,
        {"uniqueid": "u"},
        start_after={"snapshot": "u-5"},
        descending=True,
        limit=3,
        columns=["snapshot"],
    )
    assert [row["snapshot"] for row in found] == ["u-4", "u-3", "u-2"]
    assert fake.calls[0] == Call(text, ["u", "u-5", 3], 3, None)
    assert fake.calls[1].paging_state == b"1"


def test_ascending_after_a_bound(fake: FakeSession, sleeps: Sleeps) -> None:
    list(backend_for(fake, sleeps).scan(DOCUMENTS, {"md5": "M"}, start_after={"sort_id": 7}))
    assert fake.calls == [
        Call(
            "SELECT md5, sort_id, data_id FROM imixs_archive.documents "
            "WHERE md5 = ? AND sort_id > ? ORDER BY sort_id ASC",
            ["M", 7],
            1000,
        )
    ]


def test_scan_arguments_are_checked(fake: FakeSession, sleeps: Sleeps) -> None:
    backend = backend_for(fake, sleeps)
    with pytest.raises(ValueError):
        backend.scan(ARCHIVE_FILES, start_after={"md5": "x"})
    with pytest.raises(ValueError):
        backend.scan(ARCHIVE_FILES, descending=True)
    with pytest.raises(ValueError):
        backend.scan(DOCUMENTS, {"md5": "M"}, start_after={"data_id": "x"})
    with pytest.raises(ValueError):
        backend.scan(DOCUMENTS, {"sort_id": 1})
    with pytest.raises(ValueError):
        backend.scan(DOCUMENTS, {"md5": "M"}, limit=-1)
    with pytest.raises(ValueError):
        backend.scan(DOCUMENTS, {"md5": "M"}, columns=["md5; DROP TABLE x"])
    assert list(backend.scan(DOCUMENTS, {"md5": "M"}, limit=0)) == []
    assert fake.calls == []


def test_page_sizes_follow_row_sizes(fake: FakeSession, sleeps: Sleeps) -> None:
    backend = backend_for(fake, sleeps)
    list(backend.scan(DOCUMENTS_DATA))
    list(backend.scan(DOCUMENTS_DATA, columns=["data_id"]))
    list(backend.scan(SNAPSHOTS))
    list(backend.scan(SNAPSHOTS, limit=10))
    assert [call.fetch_size for call in fake.calls] == [4, 1000, 100, 10]


def test_dates_in_and_out(fake: FakeSession, sleeps: Sleeps) -> None:
    text = (
        "SELECT modified, snapshot FROM imixs_archive.snapshots_by_modified "
        "WHERE modified = ? ORDER BY snapshot ASC"
    )
    day = datetime.date(2024, 2, 29)
    fake.pages[text] = [[(Date(day), "s1")]]
    backend = backend_for(fake, sleeps)
    found = list(backend.scan(SNAPSHOTS_BY_MODIFIED, {"modified": day}))
    assert found == [{"modified": day, "snapshot": "s1"}]
    assert type(found[0]["modified"]) is datetime.date
    assert fake.calls[0].params == [day]
    with pytest.raises(ValueError, match=r"datetime\.date"):
        backend.scan(SNAPSHOTS_BY_MODIFIED, {"modified": datetime.datetime(2024, 2, 29)})


def test_get(fake: FakeSession, sleeps: Sleeps) -> None:
    text = "SELECT size FROM imixs_archive.archive_files WHERE md5 = ?"
    fake.pages[text] = [[(42,)]]
    backend = backend_for(fake, sleeps)
    assert backend.get(ARCHIVE_FILES, {"md5": "A"}, columns=["size"]) == {"size": 42}
    assert backend.get(ARCHIVE_FILES, {"md5": "B"}, columns=["size"]) == {"size": 42}
    assert backend.get(SNAPSHOTS, {"snapshot": "missing"}) is None
    assert len(fake.prepared) == 2  # each statement is prepared once
    with pytest.raises(ValueError, match="full primary key"):
        backend.get(DOCUMENTS, {"md5": "A"})


def test_java_piece_ids_are_opaque(fake: FakeSession, sleeps: Sleeps) -> None:
    """The Java service names pieces by random UUIDs; nothing assumes SHA-256 ids."""
    data_id = "3f2b8c1e-9d4a-4b7e-8f21-0c5d6e7a8b9c"
    fake.pages["SELECT data_id, data FROM imixs_archive.documents_data WHERE data_id = ?"] = [
        [(data_id, b"piece")]
    ]
    backend = backend_for(fake, sleeps)
    assert backend.get(DOCUMENTS_DATA, {"data_id": data_id}) == {
        "data_id": data_id,
        "data": b"piece",
    }
    assert backend.put(DOCUMENTS_DATA, [{"data_id": data_id, "data": b"piece"}]) == 1
    assert [params[:2] for params in fake.written] == [[data_id, b"piece"]]


# --- writes: bounded concurrency ------------------------------------------------------


def test_bounded_in_flight_writes(fake: FakeSession, sleeps: Sleeps) -> None:
    fake.write_delay = 0.0005
    pulled = 0
    ahead: list[int] = []

    def rows() -> Iterator[dict[str, Any]]:
        nonlocal pulled
        for n in range(1000):
            pulled += 1
            ahead.append(pulled - fake.completed)
            yield {"data_id": f"piece-{n}", "data": n.to_bytes(4, "big") * 256}

    written = backend_for(fake, sleeps, write_concurrency=4).put(DOCUMENTS_DATA, rows())
    assert written == 1000
    assert fake.max_outstanding <= 4
    assert max(ahead) <= 4  # a row is pulled only when a write slot is free
    assert sorted(params[0] for params in fake.written) == sorted(f"piece-{n}" for n in range(1000))
    assert fake.prepared == [
        Prepared(
            "INSERT INTO imixs_archive.documents_data (data_id, data) VALUES (?, ?) "
            "USING TIMESTAMP ?",
            ConsistencyLevel.QUORUM,
        )
    ]


def test_rows_without_blobs_go_more_at_once(fake: FakeSession, sleeps: Sleeps) -> None:
    """A file's piece references, one partition each: the window is ``ROW_WINDOW``, not
    the blobs' ``write_concurrency`` (their memory is what that one bounds)."""
    fake.write_delay = 0.005
    rows = [{"data_id": f"piece-{n}", "md5": "A", "size": n} for n in range(200)]
    assert backend_for(fake, sleeps, write_concurrency=4).put(ARCHIVE_PIECE_REFS, rows) == 200
    assert 4 < fake.max_outstanding <= ROW_WINDOW


def test_put_nothing(fake: FakeSession, sleeps: Sleeps) -> None:
    assert backend_for(fake, sleeps).put(DOCUMENTS, iter(())) == 0


def test_write_timeouts_are_retried_with_backoff(fake: FakeSession, sleeps: Sleeps) -> None:
    fake.async_errors = [WriteTimeout("slow", write_type=0), OperationTimedOut("slow")]
    rows = [{"md5": "A", "sort_id": n, "data_id": f"d{n}"} for n in range(10)]
    assert backend_for(fake, sleeps, write_concurrency=1).put(DOCUMENTS, rows) == 10
    assert sorted(p[1] for p in fake.written) == list(range(10))
    assert sleeps.delays == [0.2, 0.4]  # the first row timed out twice, then was written


def test_a_retried_write_keeps_its_first_timestamp(fake: FakeSession, sleeps: Sleeps) -> None:
    """The timestamp is bound when the write is first issued: a timed-out attempt that was
    in fact applied late cannot then win over a later write, nor over a later delete."""
    fake.async_errors = [WriteTimeout("slow", write_type=0), OperationTimedOut("slow")]
    backend = backend_for(fake, sleeps, write_concurrency=1)
    assert backend.put(SNAPSHOTS, [{"snapshot": "s", "data": b"x"}]) == 1
    assert len(fake.attempted) == 3
    assert {tuple(params) for params in fake.attempted} == {tuple(fake.written[0])}
    backend.delete(SNAPSHOTS, {"snapshot": "s"})
    assert fake.calls[-1].params[0] > fake.written[0][-1]  # the delete is later


@pytest.mark.parametrize(
    "busy",
    [
        ConnectionBusy("Connection 127.0.0.1:9042 is overloaded"),
        NoHostAvailable("busy", {"127.0.0.1:9042": ConnectionBusy("overloaded")}),
        OverloadedErrorMessage(0x1001, "overloaded", None),
    ],
)
def test_back_pressure_is_waited_out(
    fake: FakeSession, sleeps: Sleeps, busy: BaseException
) -> None:
    """A node that stops reading (too many request bytes in flight) or says it is
    overloaded is waited for, not reported as unavailable."""
    fake.async_errors = [busy]
    assert backend_for(fake, sleeps).put(SNAPSHOTS, [{"snapshot": "s", "data": b"x"}]) == 1
    assert sleeps.delays == [0.2]
    fake.errors = [busy]
    assert backend_for(fake, sleeps).get(SNAPSHOTS, {"snapshot": "s"}) is None
    assert sleeps.delays == [0.2, 0.2]


def test_a_node_that_is_down_is_not_waited_for(fake: FakeSession, sleeps: Sleeps) -> None:
    fake.errors = [NoHostAvailable("down", {"127.0.0.1:9042": ConnectionRefusedError()})]
    with pytest.raises(StoreUnavailableError):
        backend_for(fake, sleeps).get(SNAPSHOTS, {"snapshot": "s"})
    assert sleeps.delays == []


def test_backoff_grows_exponentially(fake: FakeSession, sleeps: Sleeps) -> None:
    fake.errors = [ReadTimeout("slow")] * 4
    backend = backend_for(fake, sleeps, retries=5)
    assert backend.get(SNAPSHOTS, {"snapshot": "x"}) is None
    assert sleeps.delays == [0.2, 0.4, 0.8, 1.6]


def test_repeated_write_timeouts_raise_store_error(fake: FakeSession, sleeps: Sleeps) -> None:
    fake.async_errors = [WriteTimeout("slow", write_type=0)] * 3
    with pytest.raises(StoreError) as caught:
        backend_for(fake, sleeps, write_concurrency=1).put(
            SNAPSHOTS, [{"snapshot": "s", "data": b"x"}]
        )
    assert not isinstance(caught.value, StoreUnavailableError)
    assert "timed out 3 times writing snapshots" in str(caught.value)
    assert fake.outstanding == 0


def test_a_failed_write_lets_the_others_finish(fake: FakeSession, sleeps: Sleeps) -> None:
    fake.write_delay = 0.01
    fake.async_errors = [InvalidRequest("bad")]
    rows = ({"snapshot": f"s{n}", "data": b"x"} for n in range(100))
    with pytest.raises(StoreError, match="refused writing snapshots"):
        backend_for(fake, sleeps).put(SNAPSHOTS, rows)
    assert fake.outstanding == 0


def test_rows_must_give_every_column(fake: FakeSession, sleeps: Sleeps) -> None:
    with pytest.raises(ValueError, match="exactly the columns"):
        backend_for(fake, sleeps).put(SNAPSHOTS, [{"snapshot": "s"}])


# --- retries and unavailability --------------------------------------------------------


def test_read_timeouts_are_retried_then_succeed(fake: FakeSession, sleeps: Sleeps) -> None:
    text = "SELECT md5, digest, size, pieces FROM imixs_archive.archive_files"
    fake.pages[text] = [[("A", "a", 1, 1)], [("B", "b", 2, 1)]]
    fake.errors = [OperationTimedOut("slow"), ReadTimeout("slow")]
    found = list(backend_for(fake, sleeps).scan(ARCHIVE_FILES))
    assert [row["md5"] for row in found] == ["A", "B"]
    assert [c.paging_state for c in fake.calls] == [None, None, None, b"1"]


def test_a_page_fetch_is_retried_from_its_paging_state(fake: FakeSession, sleeps: Sleeps) -> None:
    text = "SELECT md5, digest, size, pieces FROM imixs_archive.archive_files"
    fake.pages[text] = [[("A", "a", 1, 1)], [("B", "b", 2, 1)]]
    rows = backend_for(fake, sleeps).scan(ARCHIVE_FILES)
    assert next(rows)["md5"] == "A"
    fake.errors = [ReadTimeout("slow")]
    assert [row["md5"] for row in rows] == ["B"]
    assert [c.paging_state for c in fake.calls] == [None, b"1", b"1"]


def test_repeated_read_timeouts_raise_store_error(fake: FakeSession, sleeps: Sleeps) -> None:
    fake.errors = [ReadTimeout("slow")] * 3
    with pytest.raises(StoreError, match="timed out 3 times reading snapshots") as caught:
        backend_for(fake, sleeps).get(SNAPSHOTS, {"snapshot": "x"})
    assert not isinstance(caught.value, StoreUnavailableError)
    assert len(sleeps.delays) == 2


def test_no_host_available_names_hosts_and_keyspace(fake: FakeSession, sleeps: Sleeps) -> None:
    fake.errors = [NoHostAvailable("Unable to connect", {"10.0.0.1:9042": OSError("refused")})]
    with pytest.raises(StoreUnavailableError) as caught:
        backend_for(fake, sleeps).get(SNAPSHOTS, {"snapshot": "x"})
    message = str(caught.value)
    assert "cass1:9042, cass2:9042" in message
    assert "'imixs_archive'" in message
    assert "10.0.0.1:9042: refused" in message
    assert sleeps.delays == []  # not retried: the caller pauses


def test_unavailable_replicas_on_write(fake: FakeSession, sleeps: Sleeps) -> None:
    fake.async_errors = [Unavailable("down", ConsistencyLevel.QUORUM, 2, 1)]
    with pytest.raises(StoreUnavailableError, match="only 1 of 2 replicas needed for QUORUM"):
        backend_for(fake, sleeps).put(SNAPSHOTS, [{"snapshot": "s", "data": b"x"}])


def test_other_driver_errors_are_store_errors(fake: FakeSession, sleeps: Sleeps) -> None:
    fake.errors = [InvalidRequest("unconfigured table snapshots")]
    with pytest.raises(StoreError, match="unconfigured table") as caught:
        backend_for(fake, sleeps).delete(SNAPSHOTS, {"snapshot": "x"})
    assert not isinstance(caught.value, StoreUnavailableError)


def test_connecting_to_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(config: CassandraConfig) -> DriverSession:
        raise NoHostAvailable("Unable to connect", {"cass1:9042": ConnectionRefusedError(111)})

    monkeypatch.setattr(cassandra_module.DriverSession, "connect", refuse)
    settings = load_settings({"ARCHIVE_CLUSTER_CONTACTPOINTS": "cass1"})
    with pytest.raises(StoreUnavailableError, match=r"cass1:9042.*'imixs_archive'"):
        CassandraBackend.from_settings(settings)


def test_wrong_credentials_are_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(config: CassandraConfig) -> DriverSession:
        raise NoHostAvailable("Unable to connect", {"cass1:9042": AuthenticationFailed("bad")})

    monkeypatch.setattr(cassandra_module.DriverSession, "connect", refuse)
    settings = load_settings(
        {"ARCHIVE_CLUSTER_CONTACTPOINTS": "cass1", "ARCHIVE_CLUSTER_AUTH_USER": "archive"}
    )
    with pytest.raises(ConfigError, match="credentials of user 'archive'"):
        CassandraBackend.from_settings(settings)


def test_from_settings_creates_the_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    session = FakeSession(tables=None)
    monkeypatch.setattr(cassandra_module.DriverSession, "connect", lambda config: session)
    settings = load_settings({"ARCHIVE_CLUSTER_CONTACTPOINTS": "cass1"})
    backend = CassandraBackend.from_settings(settings)
    assert session.events[0].startswith("CREATE KEYSPACE IF NOT EXISTS imixs_archive ")
    assert session.events[-1] == "wait for schema agreement"
    backend.close()
    assert session.closed


# --- delete, describe ------------------------------------------------------------------


def test_delete_row_or_partition(fake: FakeSession, sleeps: Sleeps) -> None:
    backend = backend_for(fake, sleeps)
    backend.delete(DOCUMENTS, {"md5": "A", "sort_id": 3})
    backend.delete(DOCUMENTS, {"md5": "A"})
    first, second = (call.params[0] for call in fake.calls)
    assert first < second  # write timestamps: microseconds, increasing
    assert fake.calls == [
        Call(
            "DELETE FROM imixs_archive.documents USING TIMESTAMP ? WHERE md5 = ? AND sort_id = ?",
            [first, "A", 3],
        ),
        Call("DELETE FROM imixs_archive.documents USING TIMESTAMP ? WHERE md5 = ?", [second, "A"]),
    ]
    assert {p.consistency for p in fake.prepared} == {ConsistencyLevel.QUORUM}
    with pytest.raises(ValueError, match="full primary key"):
        backend.delete(DOCUMENTS, {"sort_id": 3})


def test_a_delete_of_the_collector_binds_its_written_before(
    fake: FakeSession, sleeps: Sleeps
) -> None:
    """``delete(written_before=...)``: the tombstone carries that time, so only what was
    written before it goes (a later rewrite survives)."""
    backend_for(fake, sleeps).delete(DOCUMENTS, {"md5": "A"}, written_before=1_700_000_000_000_000)
    assert fake.calls == [
        Call(
            "DELETE FROM imixs_archive.documents USING TIMESTAMP ? WHERE md5 = ?",
            [1_700_000_000_000_000, "A"],
        )
    ]


def test_describe(fake: FakeSession, sleeps: Sleeps) -> None:
    backend = backend_for(fake, sleeps)
    backend.ensure_schema()
    assert backend.describe() == {
        "kind": "cassandra",
        "contact_points": "cass1:9042, cass2:9042",
        "keyspace": KS,
        "replication": "{'class': 'SimpleStrategy', 'replication_factor': '1'}",
        "consistency": {"read": "ONE", "write": "QUORUM"},
        "cluster_name": "Test Cluster",
        "release_versions": ["4.1.5"],
        "local_dc": "datacenter1",
        "hosts": ["10.0.0.1:9042"],
        "zstd": True,
    }
    assert backend.describe()["kind"] == backend.name


def test_drop_keyspace(fake: FakeSession, sleeps: Sleeps) -> None:
    backend_for(fake, sleeps).drop_keyspace()
    assert fake.events == ["DROP KEYSPACE IF EXISTS imixs_archive"]


# --- schema: plan, upgrade in place, agreement, zstd ----------------------------------

REPLICATION = Replication(SIMPLE, (("replication_factor", 1),))
JAVA_NAMES = frozenset(t.name for t in JAVA_TABLES)
EXTRA_NAMES = [t.name for t in TABLES if not t.java]


def test_plan_for_a_new_keyspace() -> None:
    plan = plan_schema(frozenset(), False, KS, REPLICATION)
    assert plan[0] == (
        "CREATE KEYSPACE IF NOT EXISTS imixs_archive "
        "WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"
    )
    assert len(plan) == 1 + len(TABLES)
    for statement, t in zip(plan[1:], TABLES, strict=True):
        assert statement.startswith(f"CREATE TABLE IF NOT EXISTS imixs_archive.{t.name} (")


def test_plan_for_a_keyspace_the_java_service_created() -> None:
    assert len(JAVA_NAMES) == 6
    plan = [s.split(" WITH ID = ")[0] for s in plan_schema(JAVA_NAMES, True, KS, REPLICATION)]
    assert plan == [
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_files "
        "(md5 text, digest text, size bigint, pieces int, PRIMARY KEY (md5))",
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_snapshot_files "
        "(snapshot text, name text, md5 text, claimed_md5 text, PRIMARY KEY (snapshot, name))",
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_piece_refs "
        "(data_id text, md5 text, size bigint, PRIMARY KEY (data_id, md5))",
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_file_heads "
        "(head text, md5 text, PRIMARY KEY (head, md5))",
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_garbage "
        "(id text, kind text, since bigint, size bigint, PRIMARY KEY (id, kind))",
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_day_aggregates "
        "(year int, day date, version int, data blob, PRIMARY KEY (year, day))",
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_sync_failures "
        "(event_id text, topic text, ref text, status text, attempts int, next_attempt bigint, "
        "first_failed bigint, last_failed bigint, error text, PRIMARY KEY (event_id))",
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_sync_instances "
        "(instance text, started bigint, updated bigint, state text, events bigint, "
        "archived bigint, removed bigint, bytes bigint, failures bigint, retries bigint, "
        "dead_letters bigint, lag_ms bigint, PRIMARY KEY (instance))",
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_snapshot_parts "
        "(snapshot text, part int, data blob, PRIMARY KEY (snapshot, part))",
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_modified_days "
        "(bucket int, day date, PRIMARY KEY (bucket, day))",
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_sync_claims "
        "(event_id text, topic text, ref text, instance text, claimed bigint, "
        "PRIMARY KEY (event_id))",
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_sync_gone "
        "(ref text, event_id text, topic text, gone_at bigint, instance text, PRIMARY KEY (ref))",
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_sync_progress "
        "(name text, point bigint, updated bigint, owner text, note text, PRIMARY KEY (name))",
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_legal_holds "
        "(uniqueid text, reason text, placed bigint, placed_by text, PRIMARY KEY (uniqueid))",
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_day_changes "
        "(year int, day date, writer text, stamp text, PRIMARY KEY (year, day, writer))",
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_versions "
        "(name text, version int, written_by text, PRIMARY KEY (name))",
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_ledger_queue "
        "(slot int, subject text, entry_key text, entry text, "
        "PRIMARY KEY (slot, subject, entry_key))",
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_ledger_entries "
        "(bucket int, idx bigint, entry text, hash blob, PRIMARY KEY (bucket, idx))",
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_ledger_nodes "
        "(level int, bucket int, idx bigint, hash blob, PRIMARY KEY ((level, bucket), idx))",
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_ledger_head "
        "(name text, state text, PRIMARY KEY (name))",
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_ledger_subjects "
        "(subject text, idx bigint, kind text, digest text, PRIMARY KEY (subject))",
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_ledger_checkpoints "
        "(year int, size bigint, note text, written bigint, PRIMARY KEY (year, size))",
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_snapshot_facts "
        "(day date, snapshot text, data blob, PRIMARY KEY (day, snapshot))",
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_day_summaries "
        "(year int, day date, version int, data blob, PRIMARY KEY (year, day))",
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_census "
        "(name text, data blob, PRIMARY KEY (name))",
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_month_figures "
        "(zone text, month text, data blob, PRIMARY KEY (zone, month))",
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_checks "
        "(name text, state text, PRIMARY KEY (name))",
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_file_cuts "
        "(md5 text, digest text, ledger_digest text, PRIMARY KEY (md5))",
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_legal_hold_cases "
        "(uniqueid text, reason text, placed bigint, placed_by text, "
        "PRIMARY KEY (uniqueid, reason))",
        "CREATE TABLE IF NOT EXISTS imixs_archive.archive_ledger_tiles "
        "(level int, idx bigint, width int, hashes blob, PRIMARY KEY ((level, idx), width))",
    ]
    assert [s.split()[5].split(".")[1] for s in plan] == EXTRA_NAMES


def test_plan_when_nothing_is_missing() -> None:
    names = frozenset(t.name for t in TABLES) | {"someone_elses_table"}
    assert plan_schema(names, True, KS, REPLICATION, zstd=True) == []


def test_plan_ignores_tables_of_a_missing_keyspace() -> None:
    plan = plan_schema(JAVA_NAMES, False, KS, REPLICATION)
    assert len(plan) == 1 + len(TABLES)


def test_plan_compresses_pieces_with_zstd() -> None:
    plan = plan_schema(frozenset(), False, KS, REPLICATION, zstd=True)
    compressed = [s.split()[5] for s in plan if "ZstdCompressor" in s]
    assert compressed == [
        "imixs_archive.snapshots",
        "imixs_archive.documents_data",
        "imixs_archive.archive_snapshot_parts",
    ]


@pytest.mark.parametrize(
    ("versions", "zstd"),
    [
        ((), False),
        (("3.11.16",), False),
        (("3.0.29",), False),
        (("4.0.0",), True),
        (("4.1.5", "5.0.2"), True),
        (("5.0-beta1",), True),
        (("3.11.4", "4.1.3"), False),  # a mixed cluster during an upgrade
        (("10.0.1",), True),
        (("unknown",), False),
    ],
)
def test_zstd_only_from_cassandra_4(versions: tuple[str, ...], zstd: bool) -> None:
    assert supports_zstd(versions) is zstd


def test_upgrade_of_a_java_keyspace_in_place(sleeps: Sleeps) -> None:
    session = FakeSession(tables=JAVA_NAMES, versions=("3.11.16",))
    applied = backend_for(session, sleeps).ensure_schema()
    assert applied == plan_schema(JAVA_NAMES, True, KS, REPLICATION)
    assert session.events == [*applied, "wait for schema agreement"]
    assert not any("KEYSPACE" in e or "ZstdCompressor" in e for e in session.events)


def test_new_keyspace_on_cassandra_4_uses_zstd(sleeps: Sleeps) -> None:
    session = FakeSession(tables=None, versions=("4.1.5",))
    applied = backend_for(session, sleeps).ensure_schema()
    assert applied == plan_schema(frozenset(), False, KS, REPLICATION, zstd=True)
    assert session.events[-1] == "wait for schema agreement"


def test_a_complete_keyspace_runs_no_ddl_and_does_not_wait(
    fake: FakeSession, sleeps: Sleeps
) -> None:
    assert backend_for(fake, sleeps).ensure_schema() == []
    assert fake.events == []


THREE_NODES = ("10.0.0.1:9042", "10.0.0.2:9042", "10.0.0.3:9042")


def test_unset_replication_on_one_node_is_one_copy_with_a_warning(
    sleeps: Sleeps, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    session = FakeSession(tables=None)
    applied = backend_for(session, sleeps, replication=None).ensure_schema()
    assert applied[0].endswith("{'class': 'SimpleStrategy', 'replication_factor': 1}")
    assert "ONE copy" in caplog.text and "one-node cluster" in caplog.text


def test_unset_replication_on_several_nodes_creates_nothing(sleeps: Sleeps) -> None:
    session = FakeSession(tables=None, hosts=THREE_NODES)
    with pytest.raises(ConfigError, match="REPLICATION_FACTOR is not set and the cluster has 3"):
        backend_for(session, sleeps, replication=None).ensure_schema()
    assert session.events == []


def test_one_copy_chosen_on_several_nodes_is_warned_loudly(
    sleeps: Sleeps, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    backend_for(FakeSession(tables=None, hosts=THREE_NODES), sleeps).ensure_schema()
    assert "ONE copy of every row" in caplog.text and "cluster of 3 nodes" in caplog.text
    caplog.clear()
    existing = FakeSession(tables=frozenset(t.name for t in TABLES), hosts=THREE_NODES)
    assert backend_for(existing, sleeps, replication=None).ensure_schema() == []
    assert "keeps ONE copy of every row" in caplog.text
    caplog.clear()
    three = FakeSession(tables=None, hosts=THREE_NODES)
    chosen = Replication(SIMPLE, (("replication_factor", 3),))
    backend_for(three, sleeps, replication=chosen).ensure_schema()
    assert "ONE copy" not in caplog.text


def test_no_schema_agreement_is_unavailable(sleeps: Sleeps) -> None:
    session = FakeSession(tables=None, agreed=False)
    with pytest.raises(StoreUnavailableError, match="did not agree on the schema"):
        backend_for(session, sleeps).ensure_schema()


def test_ddl_timeouts_are_retried(sleeps: Sleeps) -> None:
    session = FakeSession(tables=JAVA_NAMES, errors=[OperationTimedOut("slow")])
    applied = backend_for(session, sleeps).ensure_schema()
    # Every table started at once; the one that timed out is run again after them.
    assert session.events == [*applied, applied[0], "wait for schema agreement"]
    assert sleeps.delays == [0.2]


def test_a_new_keyspace_is_created_before_its_tables(sleeps: Sleeps) -> None:
    session = FakeSession(tables=None, errors=[OperationTimedOut("slow")])
    applied = backend_for(session, sleeps).ensure_schema()
    assert applied[0].startswith("CREATE KEYSPACE")
    assert session.events == [applied[0], *applied, "wait for schema agreement"]


def test_a_refused_table_is_an_error_once_every_table_was_tried(sleeps: Sleeps) -> None:
    session = FakeSession(tables=JAVA_NAMES, errors=[InvalidRequest("bad table")])
    with pytest.raises(StoreError, match="refused creating the schema"):
        backend_for(session, sleeps).ensure_schema()
    assert session.events == plan_schema(JAVA_NAMES, True, KS, REPLICATION, zstd=True)


def test_load_config_defaults_match_the_backend() -> None:
    config = load_config(load_settings({"ARCHIVE_CLUSTER_CONTACTPOINTS": "cass1"}))
    session = FakeSession(tables=frozenset(t.name for t in TABLES))
    backend = CassandraBackend(session, config)
    backend.get(SNAPSHOTS, {"snapshot": "x"})
    backend.delete(SNAPSHOTS, {"snapshot": "x"})
    assert [p.consistency for p in session.prepared] == [ConsistencyLevel.LOCAL_QUORUM] * 2
    session.close()


def test_rows_of_one_partition_without_blobs_go_as_batches(
    fake: FakeSession, sleeps: Sleeps
) -> None:
    """One request per batch of a partition's small rows (each row with its own write
    timestamp, under ``BATCH_BYTES``); a new partition starts a new request; rows with
    blobs always go alone."""
    rows = [{"md5": "A" * 32, "sort_id": n, "data_id": f"{n:064x}"} for n in range(60)]
    rows.append({"md5": "B" * 32, "sort_id": 0, "data_id": "f" * 64})
    assert backend_for(fake, sleeps).put(DOCUMENTS, rows) == 61
    assert sorted((p[0], p[1]) for p in fake.written) == sorted(
        (r["md5"], r["sort_id"]) for r in rows
    )
    sizes = [len(batch) for batch in fake.batches]
    assert len(fake.batches) >= 2 and sum(sizes) == 60  # the B row alone, not batched
    for batch in fake.batches:
        assert {params[0] for params in batch} == {"A" * 32}
        assert sum(len(p[0]) + 8 + len(p[2]) + 8 for p in batch) <= BATCH_BYTES
    stamps = [p[-1] for p in fake.written]
    assert len(set(stamps)) == 61
    fake.batches.clear()
    blobs = [{"snapshot": f"s{n}", "data": b"x"} for n in range(3)]
    assert backend_for(fake, sleeps).put(SNAPSHOTS, blobs) == 3
    assert fake.batches == []


def test_a_timed_out_batch_is_retried_whole_with_its_timestamps(
    fake: FakeSession, sleeps: Sleeps
) -> None:
    fake.async_errors = [WriteTimeout("slow", write_type=0)]
    rows = [{"md5": "A", "sort_id": n, "data_id": f"d{n}"} for n in range(5)]
    assert backend_for(fake, sleeps).put(DOCUMENTS, rows) == 5
    assert len(fake.batches) == 2
    assert fake.batches[0] == fake.batches[1]
    assert sorted(p[1] for p in fake.written) == list(range(5))
    assert sleeps.delays == [0.2]


def test_a_compare_and_set_that_timed_out_yet_landed_was_set(
    fake: FakeSession, sleeps: Sleeps
) -> None:
    """A lightweight transaction whose answer timed out may have been applied; its retry
    then finds the value it was to write, not the one expected, and is not applied. That
    value is there: the set was made (the torture met the other answer under load: a
    verify's lease taken so said "runs in another process", exit 75, with no other)."""
    from imixs_archive.storage.cassandra import cql
    from imixs_archive.storage.model import ARCHIVE_CHECKS

    backend = backend_for(fake, sleeps)
    text = cql.replace_cell(KS, ARCHIVE_CHECKS, "state")
    key = {"name": "verify-lease/1/1"}

    def cas(found: str, *, timed_out: bool) -> bool:
        fake.pages[text] = [[(False, found)]]
        fake.errors = [WriteTimeout("slow", write_type=5)] if timed_out else []
        return backend.replace(ARCHIVE_CHECKS, key, "state", "old", "mine")

    assert cas("mine", timed_out=True)  # the first attempt landed
    assert not cas("theirs", timed_out=True)  # another process's value: not set
    assert not cas("mine", timed_out=False)  # no attempt of this call wrote it

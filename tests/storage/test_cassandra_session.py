"""``DriverSession``: the thin adapter between the seam and the DataStax driver.

The driver's own objects are replaced by stubs that record what the adapter sets and
calls; one test runs the real driver against a closed port.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from cassandra import ConsistencyLevel, WriteTimeout
from cassandra.query import SimpleStatement

from imixs_archive.config import load_settings
from imixs_archive.errors import StoreUnavailableError
from imixs_archive.storage.cassandra.backend import CassandraBackend
from imixs_archive.storage.cassandra.config import CassandraConfig
from imixs_archive.storage.cassandra.cql import SIMPLE, Replication
from imixs_archive.storage.cassandra.session import DriverSession


@dataclass
class StubBound:
    prepared: StubPrepared
    values: list[Any]
    fetch_size: int | None = None


@dataclass
class StubPrepared:
    cql: str
    consistency_level: int | None = None
    is_idempotent: bool = False

    def bind(self, values: list[Any]) -> StubBound:
        return StubBound(self, values)


@dataclass
class StubResponseFuture:
    is_schema_agreed: bool = True
    callbacks: tuple[Any, Any] | None = None

    def add_callbacks(self, callback: Any, errback: Any) -> None:
        self.callbacks = (callback, errback)


@dataclass
class StubResult:
    current_rows: list[tuple[Any, ...]]
    has_more_pages: bool
    paging_state: bytes | None
    response_future: StubResponseFuture = field(default_factory=StubResponseFuture)


@dataclass
class StubDriverSession:
    executed: list[tuple[Any, dict[str, Any]]] = field(default_factory=list)
    result: StubResult = field(default_factory=lambda: StubResult([], False, None))
    response: StubResponseFuture = field(default_factory=StubResponseFuture)

    def prepare(self, cql: str) -> StubPrepared:
        return StubPrepared(cql)

    def execute(self, statement: Any, **kwargs: Any) -> StubResult:
        self.executed.append((statement, kwargs))
        return self.result

    def execute_async(self, statement: Any) -> StubResponseFuture:
        self.executed.append((statement, {}))
        return self.response


CONFIG = CassandraConfig(
    contact_points=(("cass1", 9042),),
    keyspace="imixs_archive",
    replication=Replication(SIMPLE, (("replication_factor", 1),)),
)


def stub_cluster(**metadata: Any) -> Any:
    host = SimpleNamespace(release_version="4.1.5", endpoint="10.0.0.1:9042", datacenter="dc1")
    old = SimpleNamespace(release_version="4.0.11", endpoint="10.0.0.2:9042", datacenter="dc1")
    strategy = SimpleNamespace(
        export_for_schema=lambda: "{'class': 'SimpleStrategy', 'replication_factor': '3'}"
    )
    keyspace = SimpleNamespace(
        tables={"snapshots": 1, "documents": 2}, replication_strategy=strategy
    )
    policy = SimpleNamespace(_child_policy=SimpleNamespace(local_dc="dc-auto"))
    cluster = SimpleNamespace(
        metadata=SimpleNamespace(
            keyspaces={"imixs_archive": keyspace},
            cluster_name="Test Cluster",
            all_hosts=lambda: [host, old],
        ),
        profile_manager=SimpleNamespace(default=SimpleNamespace(load_balancing_policy=policy)),
        agreement=True,
        refreshed=0,
        shut=False,
    )
    cluster.control_connection = SimpleNamespace(
        wait_for_schema_agreement=lambda wait_time: cluster.agreement
    )

    def refresh() -> None:
        cluster.refreshed += 1

    def shutdown() -> None:
        cluster.shut = True

    cluster.refresh_schema_metadata = refresh
    cluster.shutdown = shutdown
    vars(cluster).update(metadata)
    return cluster


def test_prepared_statements_are_idempotent_at_their_level() -> None:
    session = DriverSession(stub_cluster(), StubDriverSession(), CONFIG)
    prepared = session.prepare("SELECT 1", ConsistencyLevel.LOCAL_QUORUM)
    assert prepared.is_idempotent is True
    assert prepared.consistency_level == ConsistencyLevel.LOCAL_QUORUM


def test_execute_returns_one_page_and_the_next_paging_state() -> None:
    driver = StubDriverSession(result=StubResult([("a",), ("b",)], True, b"next"))
    session = DriverSession(stub_cluster(), driver, CONFIG)
    statement = StubPrepared("SELECT x")
    page = session.execute(statement, ["k"], fetch_size=2, paging_state=b"this")
    assert list(page.rows) == [("a",), ("b",)]
    assert page.paging_state == b"next"
    bound, kwargs = driver.executed[0]
    assert (bound.values, bound.fetch_size) == (["k"], 2)
    assert kwargs == {"paging_state": b"this"}

    driver.result = StubResult([("c",)], False, b"stale")
    assert session.execute(statement, ["k"]).paging_state is None


def test_execute_async_completes_a_standard_future() -> None:
    driver = StubDriverSession()
    session = DriverSession(stub_cluster(), driver, CONFIG)
    future = session.execute_async(StubPrepared("INSERT"), ["k", b"v"])
    assert not future.done()
    assert driver.response.callbacks is not None
    callback, _ = driver.response.callbacks
    callback([])
    assert future.result(timeout=1) == []

    failed = session.execute_async(StubPrepared("INSERT"), ["k", b"v"])
    driver.response.callbacks[1](WriteTimeout("slow", write_type=0))
    assert isinstance(failed.exception(timeout=1), WriteTimeout)


def test_ddl_reports_schema_agreement() -> None:
    driver = StubDriverSession()
    session = DriverSession(stub_cluster(), driver, CONFIG)
    assert session.execute_ddl("CREATE TABLE x") is True
    statement, kwargs = driver.executed[0]
    assert isinstance(statement, SimpleStatement)
    assert statement.is_idempotent
    assert kwargs["timeout"] > 0
    driver.result.response_future.is_schema_agreed = False
    assert session.execute_ddl("CREATE TABLE y") is False


def test_schema_agreement_refreshes_the_metadata() -> None:
    cluster = stub_cluster()
    session = DriverSession(cluster, StubDriverSession(), CONFIG)
    assert session.wait_for_schema_agreement() is True
    assert cluster.refreshed == 1
    cluster.agreement = False
    assert session.wait_for_schema_agreement() is False
    assert cluster.refreshed == 1


def test_metadata() -> None:
    cluster = stub_cluster()
    session = DriverSession(cluster, StubDriverSession(), CONFIG)
    assert session.keyspace_tables("imixs_archive") == frozenset({"snapshots", "documents"})
    assert session.keyspace_tables("other") is None
    info = session.info("imixs_archive")
    assert info.cluster_name == "Test Cluster"
    assert info.release_versions == ("4.0.11", "4.1.5")
    assert info.local_dc == "dc-auto"
    assert info.hosts == ("10.0.0.1:9042", "10.0.0.2:9042")
    assert info.replication == {"cql": "{'class': 'SimpleStrategy', 'replication_factor': '3'}"}
    session.close()
    assert cluster.shut


def test_the_real_driver_reports_a_closed_port_as_unavailable() -> None:
    """Builds the real ``Cluster`` with our options; nothing listens on port 1."""
    settings = load_settings(
        {
            "ARCHIVE_CLUSTER_CONTACTPOINTS": "127.0.0.1:1",
            "ARCHIVE_CLUSTER_LOCAL_DC": "dc1",
            "ARCHIVE_CLUSTER_REQUEST_TIMEOUT": "5",
        }
    )
    with pytest.raises(StoreUnavailableError, match=r"127\.0\.0\.1:1.*'imixs_archive'"):
        CassandraBackend.from_settings(settings)

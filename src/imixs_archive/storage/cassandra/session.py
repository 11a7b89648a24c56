"""The seam between the Cassandra backend and the driver.

:class:`CqlSession` is everything ``storage/cassandra/backend.py`` asks of the driver: prepare,
execute one page, execute asynchronously, run DDL, wait for schema agreement, read the
schema and topology metadata. :class:`DriverSession` implements it over the DataStax
``cassandra-driver``; unit tests implement it with a fake that records statements and
returns pages, so paging, retries, bounded concurrency and the schema upgrade are tested
without a server.

Driver exceptions (``OperationTimedOut``, ``ReadTimeout``, ``NoHostAvailable`` ...) pass
through this seam unchanged; the backend maps them to the project's errors.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Protocol

from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
from cassandra.policies import DCAwareRoundRobinPolicy, TokenAwarePolicy
from cassandra.query import BatchStatement, BatchType, SimpleStatement, tuple_factory

from imixs_archive.storage.cassandra.config import CassandraConfig, auth_provider, ssl_context

DDL_TIMEOUT = 120.0
"""Seconds a schema change may take (it waits for every node to agree)."""
SOCKET_BUFFER = 64 * 1024
"""Bytes the driver reads from or hands to the socket at once (its default is 4 KiB:
256 system calls and as many Python steps on the event loop's thread per MiB of piece)."""


@dataclass(frozen=True)
class Page:
    """One page of a query: rows as tuples in the selected column order, and the driver's
    paging state for the next page (None: this was the last page)."""

    rows: Sequence[Sequence[Any]]
    paging_state: bytes | None = None


@dataclass(frozen=True)
class ClusterInfo:
    cluster_name: str | None = None
    local_dc: str | None = None
    release_versions: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()
    replication: dict[str, str] = field(default_factory=dict)
    datacenters: dict[str, int] = field(default_factory=dict)
    """Nodes per datacenter."""
    copies: dict[str, int] = field(default_factory=dict)
    """The keyspace's replication factor per datacenter (``replication_factor`` for
    SimpleStrategy); empty when the keyspace does not exist."""


class CqlSession(Protocol):
    """What the backend needs from a connected driver session."""

    def prepare(self, cql: str, consistency: int) -> Any:
        """A prepared statement, idempotent, at this consistency level."""

    def execute(
        self,
        statement: Any,
        params: Sequence[Any],
        *,
        fetch_size: int | None = None,
        paging_state: bytes | None = None,
    ) -> Page:
        """One page of the statement's result (the first, or the one ``paging_state`` names)."""

    def execute_async(self, statement: Any, params: Sequence[Any]) -> Future[Any]:
        """Start the statement; the future completes when it has been applied or failed."""

    def execute_batch_async(self, statement: Any, rows: Sequence[Sequence[Any]]) -> Future[Any]:
        """Start one unlogged batch of ``statement`` with each row's parameters (rows of
        one partition: the node applies them as one mutation); completes like
        :meth:`execute_async`."""

    def execute_ddl(self, cql: str) -> bool:
        """Run a schema change; True when the nodes agreed on the new schema in time."""

    def execute_ddl_async(self, cql: str) -> Future[bool]:
        """Start a schema change; the future completes as :meth:`execute_ddl` returns."""

    def wait_for_schema_agreement(self) -> bool:
        """Wait until every node reports the same schema version; False on time-out."""

    def keyspace_tables(self, keyspace: str) -> frozenset[str] | None:
        """The tables of ``keyspace``, or None when it does not exist."""

    def info(self, keyspace: str) -> ClusterInfo:
        """Cluster name, local datacenter, node versions and the keyspace's replication."""

    def close(self) -> None:
        """Shut the connections down."""


class DriverSession:
    """:class:`CqlSession` over ``cassandra.cluster.Session``."""

    def __init__(self, cluster: Any, session: Any, config: CassandraConfig) -> None:
        self._cluster = cluster
        self._session = session
        self._config = config

    @classmethod
    def connect(cls, config: CassandraConfig) -> DriverSession:
        """Connect to the cluster (raises the driver's ``NoHostAvailable`` when none answers)."""
        policy = TokenAwarePolicy(DCAwareRoundRobinPolicy(local_dc=config.local_dc or None))
        profile = ExecutionProfile(
            load_balancing_policy=policy,
            request_timeout=config.request_timeout,
            row_factory=tuple_factory,
        )
        cluster = Cluster(
            contact_points=list(config.contact_points),
            execution_profiles={EXEC_PROFILE_DEFAULT: profile},
            auth_provider=auth_provider(config),
            ssl_context=ssl_context(config),
            connect_timeout=min(config.request_timeout, 30.0),
            protocol_version=config.protocol_version,
            max_schema_agreement_wait=int(DDL_TIMEOUT),
            connection_class=QueueingConnection,
        )
        try:
            session = cluster.connect()
        except BaseException:
            cluster.shutdown()
            raise
        return cls(cluster, session, config)

    def prepare(self, cql: str, consistency: int) -> Any:
        prepared = self._session.prepare(cql)
        prepared.consistency_level = consistency
        prepared.is_idempotent = True
        return prepared

    def execute(
        self,
        statement: Any,
        params: Sequence[Any],
        *,
        fetch_size: int | None = None,
        paging_state: bytes | None = None,
    ) -> Page:
        bound = statement.bind(list(params))
        if fetch_size is not None:
            bound.fetch_size = fetch_size
        result = self._session.execute(bound, paging_state=paging_state)
        state = result.paging_state if result.has_more_pages else None
        page = Page(rows=list(result.current_rows), paging_state=state)
        _forget_rows(result.response_future)
        result._current_rows = []
        return page

    def execute_async(self, statement: Any, params: Sequence[Any]) -> Future[Any]:
        return self._started(statement.bind(list(params)))

    def execute_batch_async(self, statement: Any, rows: Sequence[Sequence[Any]]) -> Future[Any]:
        batch = BatchStatement(BatchType.UNLOGGED, consistency_level=statement.consistency_level)
        batch.is_idempotent = True
        for params in rows:
            batch.add(statement, list(params))
        return self._started(batch)

    def _started(self, request: Any) -> Future[Any]:
        done: Future[Any] = Future()
        response = self._session.execute_async(request)

        def answered(rows: Any) -> None:
            done.set_result(rows)
            _forget_rows(response)

        def failed(error: BaseException) -> None:
            done.set_exception(error)
            _forget_rows(response)

        response.add_callbacks(answered, failed)
        return done

    def execute_ddl(self, cql: str) -> bool:
        statement = SimpleStatement(cql, is_idempotent=True)
        result = self._session.execute(statement, timeout=DDL_TIMEOUT)
        return bool(result.response_future.is_schema_agreed)

    def execute_ddl_async(self, cql: str) -> Future[bool]:
        done: Future[bool] = Future()
        statement = SimpleStatement(cql, is_idempotent=True)
        response = self._session.execute_async(statement, timeout=DDL_TIMEOUT)
        response.add_callbacks(
            lambda _rows: done.set_result(bool(response.is_schema_agreed)), done.set_exception
        )
        return done

    def wait_for_schema_agreement(self) -> bool:
        agreed = self._cluster.control_connection.wait_for_schema_agreement(wait_time=DDL_TIMEOUT)
        if agreed:
            self._cluster.refresh_schema_metadata()
        return bool(agreed)

    def keyspace_tables(self, keyspace: str) -> frozenset[str] | None:
        metadata = self._cluster.metadata.keyspaces.get(keyspace)
        return None if metadata is None else frozenset(metadata.tables)

    def info(self, keyspace: str) -> ClusterInfo:
        metadata = self._cluster.metadata
        hosts = list(metadata.all_hosts())
        versions = sorted({str(h.release_version) for h in hosts if h.release_version})
        local_dc = self._config.local_dc or _profile_local_dc(self._cluster)
        replication: dict[str, str] = {}
        copies: dict[str, int] = {}
        keyspace_meta = metadata.keyspaces.get(keyspace)
        if keyspace_meta is not None and keyspace_meta.replication_strategy is not None:
            strategy = keyspace_meta.replication_strategy
            replication = {"cql": strategy.export_for_schema()}
            copies = _copies(strategy)
        datacenters: dict[str, int] = {}
        for host in hosts:
            name = str(host.datacenter or "")
            datacenters[name] = datacenters.get(name, 0) + 1
        return ClusterInfo(
            cluster_name=metadata.cluster_name,
            local_dc=local_dc,
            release_versions=tuple(versions),
            hosts=tuple(sorted(str(h.endpoint) for h in hosts)),
            replication=replication,
            datacenters=datacenters,
            copies=copies,
        )

    def close(self) -> None:
        self._cluster.shutdown()


class QueueingConnection(Cluster.connection_class):  # type: ignore[misc]
    """The driver's connection (libev where built), queueing a request while the socket's
    send buffer is full instead of refusing it.

    The driver marks a connection unwritable whenever a send would block (the node reads
    slower than the client writes: a few 1 MiB pieces in flight fill a loopback socket) and
    fails every request started meanwhile with ``ConnectionBusy``, without giving back the
    request id it took for it: each refusal leaks one of the connection's 32,768 ids, and
    once they are gone the connection takes no request at all. Here the request waits in
    the connection's queue and goes out when the socket drains; what is queued is bounded
    by what the backend keeps in flight (``cluster_write_concurrency`` writes, the reader
    threads' reads). Larger socket reads and writes than the driver's 4 KiB, too."""

    in_buffer_size = SOCKET_BUFFER
    out_buffer_size = SOCKET_BUFFER

    @property
    def _socket_writable(self) -> bool:
        return True

    @_socket_writable.setter
    def _socket_writable(self, value: bool) -> None:
        """The driver's flag is set by its write handler; nothing reads it but the check
        that refuses requests, which is what this class leaves out."""


def _forget_rows(response: Any) -> None:
    """Drop the driver's own references to a finished request and its rows.

    The driver's response future sits in a reference cycle, so it lives until the cyclic
    garbage collector runs, which allocating a few large blobs does not trigger: every
    1 MiB piece written or read stayed in memory with it (a 300 MiB scan peaked at
    120 MiB, a put at 112-152 MiB). The rows go with the page or future we return; the
    request is done. Measured after: scan 20 MiB, put of 8 in flight 17 MiB."""
    for name in ("_final_result", "message", "query", "query_plan"):
        if getattr(response, name, None) is not None:
            setattr(response, name, None)


def _copies(strategy: Any) -> dict[str, int]:
    """Replication factor per datacenter of the driver's strategy object."""
    per_dc = getattr(strategy, "dc_replication_factors", None)
    if isinstance(per_dc, dict):
        return {str(dc): int(str(factor).split("/")[0]) for dc, factor in per_dc.items()}
    factor = getattr(strategy, "replication_factor", None)
    if factor is None:
        return {}
    return {"replication_factor": int(str(factor).split("/")[0])}


def _profile_local_dc(cluster: Any) -> str | None:
    """The datacenter the load-balancing policy chose (from the first contact point)."""
    policy = cluster.profile_manager.default.load_balancing_policy
    child = getattr(policy, "_child_policy", policy)
    local_dc = getattr(child, "local_dc", None)
    return str(local_dc) if local_dc else None

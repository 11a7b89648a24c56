"""Each private point of cassandra-driver that ``storage/cassandra/session.py`` relies on,
checked on the installed driver (``pyproject.toml`` bounds it to the versions tested): a
driver release that renames or drops one fails here, by name, rather than quietly (a
connection that leaks request ids, rows kept in memory, the local datacenter unknown).

The driver's behaviour is checked where it can be without a server; what needs one runs on
the test node (``ARCHIVE_TEST_CASSANDRA``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from cassandra import __version__ as driver_version
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
from cassandra.connection import ConnectionBusy
from cassandra.policies import DCAwareRoundRobinPolicy, RoundRobinPolicy, TokenAwarePolicy

from imixs_archive.config import load_settings
from imixs_archive.storage.cassandra.config import load_config
from imixs_archive.storage.cassandra.session import (
    DriverSession,
    QueueingConnection,
    _forget_rows,
    _profile_local_dc,
)
from support.backends import cassandra_env, cassandra_target, random_keyspace


def test_the_driver_is_a_version_the_bound_admits() -> None:
    major, minor, *_ = (int(part) for part in driver_version.split(".")[:3])
    assert (major, minor) == (3, 30), driver_version


def _unconnected(cls: type) -> Any:
    """A connection object of ``cls`` without a socket, as far as ``send_msg`` looks."""
    connection = cls.__new__(cls)
    connection.is_defunct = False
    connection.is_closed = False
    connection.endpoint = "test"
    connection._requests = {}
    connection.compressor = None
    connection.protocol_version = 5
    connection.allow_beta_protocol_version = False
    connection._is_checksumming_enabled = False
    connection.pushed = []
    connection.push = connection.pushed.append
    return connection


def _encode(_msg: Any, _request_id: int, _version: int, **_options: Any) -> bytes:
    return b"frame"


def test_the_driver_refuses_a_request_while_its_socket_is_unwritable() -> None:
    """The point ``QueueingConnection`` takes out: the driver's ``send_msg`` refuses with
    ``ConnectionBusy`` while ``_socket_writable`` is false (taking a request id with it)."""
    driver = _unconnected(Cluster.connection_class)
    driver._socket_writable = False
    with pytest.raises(ConnectionBusy):
        driver.send_msg("msg", 7, None, encoder=_encode)


def test_a_queueing_connection_queues_it_instead() -> None:
    assert issubclass(QueueingConnection, Cluster.connection_class)
    connection = _unconnected(QueueingConnection)
    connection._socket_writable = False  # the driver's write handler sets it so
    assert connection.send_msg("msg", 7, None, encoder=_encode) == len(b"frame")
    assert connection.pushed == [b"frame"] and 7 in connection._requests


def test_the_connection_buffer_sizes_are_the_drivers_to_set() -> None:
    base = Cluster.connection_class
    assert isinstance(base.in_buffer_size, int) and isinstance(base.out_buffer_size, int)
    assert QueueingConnection.in_buffer_size > base.in_buffer_size


def _cluster(policy: Any) -> Cluster:
    profile = ExecutionProfile(load_balancing_policy=policy)
    return Cluster(contact_points=["127.0.0.1"], execution_profiles={EXEC_PROFILE_DEFAULT: profile})


def test_the_local_datacenter_is_read_from_the_drivers_policy() -> None:
    """Nothing connects: the cluster's profile and the token-aware policy's child."""
    chosen = _cluster(TokenAwarePolicy(DCAwareRoundRobinPolicy(local_dc="dc-west")))
    assert _profile_local_dc(chosen) == "dc-west"
    assert _profile_local_dc(_cluster(TokenAwarePolicy(DCAwareRoundRobinPolicy()))) is None
    assert _profile_local_dc(_cluster(RoundRobinPolicy())) is None


@pytest.fixture
def session() -> Iterator[DriverSession]:
    if not cassandra_target():
        pytest.skip("set ARCHIVE_TEST_CASSANDRA=host:port to run it on a real node")
    config = load_config(load_settings(cassandra_env(random_keyspace())))
    connected = DriverSession.connect(config)
    try:
        yield connected
    finally:
        connected.close()


@pytest.mark.cassandra
def test_a_finished_request_lets_go_of_its_rows(session: DriverSession) -> None:
    """``_forget_rows`` clears the response future's references by their names in this
    driver, and ``execute`` empties the result set's ``_current_rows``: the rows live
    with the page returned, nowhere else."""
    driver = session._session
    future = driver.execute_async("SELECT release_version FROM system.local")
    result = future.result()
    names = ("_final_result", "message", "query", "query_plan")
    assert all(getattr(future, name, None) is not None for name in names[1:3])
    assert hasattr(future, "_final_result") and hasattr(future, "query_plan")
    assert result._current_rows  # the rows the driver holds
    _forget_rows(future)
    assert all(getattr(future, name) is None for name in names)
    statement = session.prepare("SELECT release_version FROM system.local", 1)
    page = session.execute(statement, [])
    assert len(page.rows) == 1 and page.rows[0][0]

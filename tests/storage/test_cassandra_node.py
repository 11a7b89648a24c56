"""The Cassandra backend against a real node: schema creation by several processes at once,
starts that create nothing, the replication decision.

Each test works on a keyspace of its own (these tests are about creating keyspaces) and
drops it afterwards.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from typing import Any

import pytest

from imixs_archive.storage.cassandra import cql
from imixs_archive.storage.model import DOCUMENTS, DOCUMENTS_DATA, TABLES
from support.backends import (
    CASSANDRA_SKIP,
    cassandra_env,
    cassandra_target,
    open_cassandra,
    random_keyspace,
)

pytestmark = pytest.mark.cassandra


@pytest.fixture
def keyspace() -> Iterator[str]:
    if not cassandra_target():
        pytest.skip(CASSANDRA_SKIP)
    name = random_keyspace("archive_node_")
    yield name
    store = open_cassandra(name)
    try:
        store.drop_keyspace()
    finally:
        store.close()


def _schema_rows(store: Any, keyspace: str) -> dict[str, str]:
    session = store._session._session  # the driver session, to read system_schema
    rows = session.execute(
        "SELECT table_name, id FROM system_schema.tables WHERE keyspace_name = %s", [keyspace]
    )
    return {name: str(table_id) for name, table_id in rows}


OPENER = textwrap.dedent(
    """
    import sys, time
    from imixs_archive.config import load_settings
    from imixs_archive.storage.cassandra.backend import CassandraBackend
    start = float(sys.argv[1])
    settings = load_settings()
    while time.time() < start:
        time.sleep(0.001)
    store = CassandraBackend.from_settings(settings)
    store.put(
        __import__("imixs_archive.storage.model", fromlist=["SNAPSHOTS"]).SNAPSHOTS,
        [{"snapshot": "written-by-" + sys.argv[2], "data": b"x"}],
    )
    store.close()
    """
)


def test_three_processes_create_one_schema_at_once(keyspace: str) -> None:
    """Three archives start on a new keyspace in the same instant: every one of them
    succeeds, and every table has exactly the deterministic id."""
    env = {**os.environ, **cassandra_env(keyspace)}
    start = time.time() + 4.0  # all three are connected and waiting by then
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", OPENER, str(start), str(n)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(3)
    ]
    outputs = [p.communicate(timeout=240) for p in processes]
    for process, (_, err) in zip(processes, outputs, strict=True):
        assert process.returncode == 0, err[-2000:]
    store = open_cassandra(keyspace)
    try:
        assert store.ensure_schema() == []  # nothing missing, nothing run again
        ids = _schema_rows(store, keyspace)
        assert ids == {t.name: str(cql.table_id(keyspace, t)) for t in TABLES}
        written = {row["snapshot"] for row in store.scan(TABLES[0])}
        assert written == {f"written-by-{n}" for n in range(3)}
        agreed = store._session.wait_for_schema_agreement()
        assert agreed is True
    finally:
        store.close()


def test_a_start_on_a_complete_keyspace_runs_no_ddl(keyspace: str) -> None:
    first = open_cassandra(keyspace)
    first.close()
    began = time.monotonic()
    second = open_cassandra(keyspace)
    try:
        assert second.ensure_schema() == []
    finally:
        second.close()
    assert time.monotonic() - began < 60  # no 120 s agreement wait (generous: noisy CI)


def test_unset_replication_on_one_node_is_one_copy_and_said(
    keyspace: str, caplog: pytest.LogCaptureFixture
) -> None:
    env = cassandra_env(keyspace)
    del env["ARCHIVE_CLUSTER_REPLICATION_FACTOR"]
    with caplog.at_level(logging.WARNING, logger="imixs_archive.cassandra"):
        store = open_cassandra(keyspace, env)
    try:
        described = store.describe()
    finally:
        store.close()
    assert "'replication_factor': '1'" in described["replication"]
    assert "ONE copy of every row" in caplog.text


def test_tables_of_large_cells_are_compressed_with_zstd(keyspace: str) -> None:
    store = open_cassandra(keyspace)
    try:
        session = store._session._session
        rows = session.execute(
            "SELECT table_name, compression FROM system_schema.tables WHERE keyspace_name = %s",
            [keyspace],
        )
        compression = {name: dict(options) for name, options in rows}
    finally:
        store.close()
    assert compression["documents_data"]["class"].endswith("ZstdCompressor")
    assert compression["documents_data"]["min_compress_ratio"] == "1.1"
    assert compression["snapshots"]["class"].endswith("ZstdCompressor")
    assert not compression["documents"]["class"].endswith("ZstdCompressor")


def test_a_full_socket_queues_writes_and_leaks_no_request_ids(keyspace: str) -> None:
    """The driver refuses a request (``ConnectionBusy``) while its socket's send buffer is
    full and keeps the request id it took for it; with the send buffer shrunk, writes of
    1 MiB pieces fill it at once. They must go out as the socket drains: no refusal, no
    retry, every request id back when they are done."""
    store = open_cassandra(keyspace)
    slept: list[float] = []
    store._sleep = slept.append  # a retry sleeps first
    try:
        pools = store._session._session.get_pools()
        connections = [pool._connection for pool in pools]
        for connection in connections:
            connection._socket.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        pieces = [os.urandom(1 << 20) for _ in range(4)]
        rows = [{"data_id": f"{n:064x}", "data": pieces[n % 4]} for n in range(48)]
        assert store.put(DOCUMENTS_DATA, rows) == 48
        assert slept == []
        assert [c.in_flight for c in connections] == [0] * len(connections)
        row = store.get(DOCUMENTS_DATA, {"data_id": f"{47:064x}"})
        assert row is not None and row["data"] == pieces[3]
    finally:
        store.close()


def test_batched_rows_of_one_partition_keep_their_own_write_times(keyspace: str) -> None:
    """Rows of one partition go to the node as unlogged batches, each row with its own
    ``USING TIMESTAMP``: the node takes them, and a delete of what was written before a
    time between two puts keeps the later rows."""
    store = open_cassandra(keyspace)
    try:
        key = "A" * 32
        first = [{"md5": key, "sort_id": n, "data_id": f"{n:064x}"} for n in range(150)]
        assert store.put(DOCUMENTS, first) == 150
        between = store._clock()
        later = [{"md5": key, "sort_id": n, "data_id": f"{n:064x}"} for n in range(150, 300)]
        assert store.put(DOCUMENTS, later) == 150
        found = [row["sort_id"] for row in store.scan(DOCUMENTS, {"md5": key})]
        assert found == list(range(300))
        store.delete(DOCUMENTS, {"md5": key}, written_before=between)
        found = [row["sort_id"] for row in store.scan(DOCUMENTS, {"md5": key})]
        assert found == list(range(150, 300))
    finally:
        store.close()

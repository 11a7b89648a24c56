"""The ``backend`` fixture, shared by every suite: each test runs on each backend where
it faces the store (``STORE_FACING``), on SQLite where it tests logic above it.

SQLite runs always, on a fresh store in ``tmp_path``. Cassandra runs when
``ARCHIVE_TEST_CASSANDRA=host:port`` names a server (``.ci/run`` starts one with
``scripts/cassandra-node``): one keyspace per test session (per xdist worker: each is a
session of its own), created once, emptied with ``TRUNCATE`` before each test and dropped
at the end. Creating thirteen tables per test would cost more than most tests; so would
truncating every table each time (some 35, a second or more a test on the 2-core
machines): only the tables written since the last emptying are truncated, as the node
counts writes per table (``system_views.local_write_latency``: every write, delete and
lightweight transaction by any process or connection, counted where it is applied; one
node, so every write is counted there).
"""

from __future__ import annotations

import importlib
import os
import random
import string
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from cassandra import DriverException

from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import Settings, load_settings
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import TABLES
from imixs_archive.storage.sqlite.backend import SQLiteBackend

CASSANDRA_ENV = "ARCHIVE_TEST_CASSANDRA"
CASSANDRA_SKIP = "set ARCHIVE_TEST_CASSANDRA=host:port to run the contract suite on Cassandra"


def cassandra_target() -> str:
    """The test server's ``host:port``, or "" when none is configured."""
    return os.environ.get(CASSANDRA_ENV, "").strip()


def random_keyspace(prefix: str = "archive_test_") -> str:
    # Keyspace names must match ^[a-z_]*[^-]$: letters and underscores only. From the
    # system's randomness, not the random module's state (which a test may seed): each
    # pytest process (each xdist worker) makes its own keyspace.
    return prefix + "".join(random.SystemRandom().choices(string.ascii_lowercase, k=12))


def cassandra_env(keyspace: str, **extra: str) -> dict[str, str]:
    """The settings that point the archive at the test server and ``keyspace``."""
    return {
        "ARCHIVE_CLUSTER_CONTACTPOINTS": cassandra_target(),
        "ARCHIVE_CLUSTER_KEYSPACE": keyspace,
        "ARCHIVE_CLUSTER_REPLICATION_FACTOR": "1",
        "ARCHIVE_CLUSTER_CONSISTENCY_READ": "ONE",
        "ARCHIVE_CLUSTER_CONSISTENCY_WRITE": "ONE",
        **extra,
    }


def open_cassandra(keyspace: str, env: Mapping[str, str] | None = None) -> Any:
    """A Cassandra backend on the test server (keyspace created when missing)."""
    module = importlib.import_module("imixs_archive.storage.cassandra.backend")
    settings = load_settings(dict(env) if env is not None else cassandra_env(keyspace))
    return module.CassandraBackend.from_settings(settings)


@pytest.fixture(scope="session")
def cassandra_session_keyspace() -> str:
    """The name of the session's keyspace on the test server."""
    return random_keyspace()


@pytest.fixture(scope="session")
def cassandra_session_store(cassandra_session_keyspace: str) -> Iterator[Backend]:
    """The session's keyspace on the test server; skips when none is configured. Created
    by the archive as any keyspace, then made ``durable_writes = false``: its writes skip
    the commit log, and a TRUNCATE (each test's clean-up, :func:`empty_written_tables`)
    drops the memtable instead of flushing it to an SSTable first (measured over 279
    Cassandra items: the node's CPU 34 s to 24 s, the wall 69 s to 63 s). Reads, writes,
    compare-and-set and paging are the same; what is lost is only what a killed node had
    not flushed, and no test kills this node."""
    if not cassandra_target():
        pytest.skip(CASSANDRA_SKIP)
    store = open_cassandra(cassandra_session_keyspace)
    store._session._session.execute(  # the driver's session: a test's own statement
        f"ALTER KEYSPACE {cassandra_session_keyspace} WITH durable_writes = false"
    )
    try:
        yield store
    finally:
        try:
            store.drop_keyspace()
        finally:
            store.close()


STORE_FACING = ("storage", "archive", "ledger", "filestore")
"""The test folders whose tests face the store (its contract, the archive's tables, crash
orders, leases and compare-and-set, the piece store): each test runs on each store. The
rest test logic above the archive (analytics, recovery, services, sync, the CLI, the
web): on SQLite only, unless a module is marked ``both_stores`` (processes at once, kills
and resumes) or names Cassandra itself. ``ARCHIVE_TEST_EVERY_STORE=1`` runs every test
on each store."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("ARCHIVE_TEST_EVERY_STORE"):
        return
    once = [item for item in items if _logic_on_cassandra(item)]
    if once:
        config.hook.pytest_deselected(items=once)
        dropped = {id(item) for item in once}
        items[:] = [item for item in items if id(item) not in dropped]


def _logic_on_cassandra(item: pytest.Item) -> bool:
    """Whether ``item`` is the Cassandra half of a test of logic above the store."""
    callspec = getattr(item, "callspec", None)
    if callspec is None or "cassandra" not in callspec.params.values():
        return False
    if item.get_closest_marker("both_stores") is not None:
        return False
    parts = Path(str(item.path)).parts
    if "tests" not in parts or len(parts) - parts.index("tests") < 3:
        return False  # a module of the suite's own (the torture, the layers): kept whole
    return parts[parts.index("tests") + 1] not in STORE_FACING


@pytest.fixture(params=["sqlite", pytest.param("cassandra", marks=pytest.mark.cassandra)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "sqlite":
        with SQLiteBackend(tmp_path / "store") as sqlite_store:
            yield sqlite_store
        return
    store = request.getfixturevalue("cassandra_session_store")
    empty_written_tables(store)
    yield store


_WRITES_SEEN: dict[str, dict[str, int]] = {}
"""Per keyspace: each table's write count when its tables were last emptied."""


def empty_written_tables(store: Any) -> list[str]:
    """Truncate the tables of ``store``'s keyspace written since this was last called for
    it (all of them the first time, or when the node's counts cannot be had or the
    cluster has more than one node). The counts are read before the truncation: a write
    landing meanwhile counts as one since, and its table is emptied the next time."""
    keyspace = store._keyspace
    counts = _write_counts(store, keyspace)
    seen = _WRITES_SEEN.get(keyspace)
    if counts is None or seen is None:
        tables = list(TABLES)
    else:
        tables = [t for t in TABLES if counts.get(t.name, -1) != seen.get(t.name, -2)]
    emptied = store.truncate_all(tables)
    if counts is None:
        _WRITES_SEEN.pop(keyspace, None)
    else:
        _WRITES_SEEN[keyspace] = counts
    return list(emptied)


def _write_counts(store: Any, keyspace: str) -> dict[str, int] | None:
    session = store._session._session  # the driver's: a test's look at the node's metrics
    if len(session.cluster.metadata.all_hosts()) != 1:
        return None
    try:
        rows = session.execute(
            "SELECT table_name, count FROM system_views.local_write_latency "
            "WHERE keyspace_name = %s",
            [keyspace],
        )
    except DriverException:  # an older node without the view: empty everything
        return None
    return {str(row[0]): int(row[1]) for row in rows}


@pytest.fixture
def store_settings(backend: Backend, request: pytest.FixtureRequest) -> Settings:
    """Settings naming the ``backend``'s store, for code that opens it again itself (worker
    processes)."""
    if isinstance(backend, SQLiteBackend):
        return load_settings({"ARCHIVE_DATA_DIR": str(backend.data_dir)})
    return load_settings(cassandra_env(request.getfixturevalue("cassandra_session_keyspace")))


@pytest.fixture
def archive(backend: Backend) -> Iterator[Archive]:
    """An archive over the ``backend`` under test."""
    with Archive(backend) as opened:
        yield opened

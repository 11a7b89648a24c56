"""The ``backend`` fixture, shared by every suite: each test runs on each backend.

SQLite runs always, on a fresh store in ``tmp_path``. Cassandra runs when
``ARCHIVE_TEST_CASSANDRA=host:port`` names a server; each test gets its own keyspace,
dropped afterwards.
"""

from __future__ import annotations

import importlib
import os
import random
import string
from collections.abc import Iterator
from pathlib import Path

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import load_settings
from imixs_archive.storage.base import Backend
from imixs_archive.storage.sqlite import SQLiteBackend

CASSANDRA_ENV = "ARCHIVE_TEST_CASSANDRA"
CASSANDRA_SKIP = "set ARCHIVE_TEST_CASSANDRA=host:port to run the contract suite on Cassandra"


def _cassandra_backend(target: str) -> Backend:
    # Keyspace names must match ^[a-z_]*[^-]$: letters and underscores only.
    keyspace = "archive_test_" + "".join(random.choices(string.ascii_lowercase, k=12))
    settings = load_settings(
        {
            "ARCHIVE_CLUSTER_CONTACTPOINTS": target,
            "ARCHIVE_CLUSTER_KEYSPACE": keyspace,
            "ARCHIVE_CLUSTER_CONSISTENCY_READ": "ONE",
            "ARCHIVE_CLUSTER_CONSISTENCY_WRITE": "ONE",
        }
    )
    module = importlib.import_module("imixs_archive.storage.cassandra")
    backend: Backend = module.CassandraBackend.from_settings(settings)
    return backend


@pytest.fixture(params=["sqlite", pytest.param("cassandra", marks=pytest.mark.cassandra)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "sqlite":
        with SQLiteBackend(tmp_path / "store") as sqlite_store:
            yield sqlite_store
        return
    target = os.environ.get(CASSANDRA_ENV, "").strip()
    if not target:
        pytest.skip(CASSANDRA_SKIP)
    store = _cassandra_backend(target)
    try:
        yield store
    finally:
        drop = getattr(store, "drop_keyspace", None)
        try:
            if callable(drop):
                drop()
        finally:
            store.close()


@pytest.fixture
def archive(backend: Backend) -> Iterator[Archive]:
    """An archive over the ``backend`` under test."""
    with Archive(backend) as opened:
        yield opened

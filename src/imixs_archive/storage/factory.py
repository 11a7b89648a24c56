"""Which backend a command uses: Cassandra when a contact point is set, else SQLite."""

from __future__ import annotations

import importlib

from imixs_archive.config import Settings
from imixs_archive.storage.base import Backend
from imixs_archive.storage.sqlite import SQLiteBackend


def open_backend(settings: Settings) -> Backend:
    """The store the settings name: the Cassandra keyspace when
    ``ARCHIVE_CLUSTER_CONTACTPOINTS`` is set, otherwise the SQLite store in ``data_dir``."""
    if settings.uses_cassandra:
        # Imported here: the Cassandra driver is loaded only by those who use it.
        cassandra = importlib.import_module("imixs_archive.storage.cassandra")
        backend: Backend = cassandra.CassandraBackend.from_settings(settings)
        return backend
    return SQLiteBackend(settings.data_dir)

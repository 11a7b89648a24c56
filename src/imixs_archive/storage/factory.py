"""Which backend a command uses: Cassandra when a contact point is set, else SQLite."""

from __future__ import annotations

import importlib

from imixs_archive.config import Settings
from imixs_archive.errors import NotFoundError
from imixs_archive.storage.base import Backend
from imixs_archive.storage.sqlite.backend import DB_FILE, SQLiteBackend
from imixs_archive.storage.sqlite.read_only import ReadOnlyStore


def open_backend(settings: Settings, *, create: bool = True) -> Backend:
    """The store the settings name: the Cassandra keyspace when
    ``ARCHIVE_CLUSTER_CONTACTPOINTS`` is set, otherwise the SQLite store in ``data_dir``.
    ``create=False`` (commands that only read): a store that does not exist is a
    ``NotFoundError`` and nothing is created."""
    if settings.uses_cassandra:
        # Imported here: the Cassandra driver is loaded only by those who use it.
        cassandra = importlib.import_module("imixs_archive.storage.cassandra.backend")
        opener = cassandra.CassandraBackend.from_settings
        backend: Backend = opener(settings) if create else opener(settings, create=False)
        return backend
    if not create and not (settings.data_dir / DB_FILE).is_file():
        raise NotFoundError(
            f"no archive in {settings.data_dir} (nothing was created; set --data-dir or "
            "ARCHIVE_DATA_DIR to the folder of an archive)"
        )
    store = SQLiteBackend(settings.data_dir)
    return ReadOnlyStore(store) if store.read_only else store

"""The embedded store on SQLite: ``backend.py`` (``SQLiteBackend``, derived from the model)
and ``statements.py`` (its SQL and the codec of values)."""

from imixs_archive.storage.sqlite.backend import DB_FILE, SQLiteBackend, Tuning

__all__ = ["DB_FILE", "SQLiteBackend", "Tuning"]

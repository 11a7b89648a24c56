"""A hand at the embedded store's file, as an operator's tool or a failing disk would have
it: a connection of its own, through the same SQLite the archive runs on (APSW's). Never
the standard library's ``sqlite3`` beside an open store: two copies of SQLite in one process
drop each other's locks (``storage/sqlite/engine.py``). Autocommit: each statement outside
an explicit ``BEGIN`` is its own transaction."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import apsw


def connect(path: Path | str) -> apsw.Connection:
    """Waiting for the store's writers as long as a store does (60 s)."""
    connection = apsw.Connection(str(path))
    connection.setbusytimeout(60_000)
    return connection


@contextmanager
def opened(path: Path | str) -> Iterator[apsw.Connection]:
    """A connection closed at the end of the block."""
    connection = connect(path)
    try:
        yield connection
    finally:
        connection.close()

"""The SQLite the embedded store runs on: APSW's, one copy, its version checked, its errors
told apart.

**Why APSW.** Python's ``sqlite3`` module uses whatever SQLite the system has: Debian 12 and
many other systems ship releases with the WAL-reset bug (SQLite 3.7.0 to 3.51.2, fixed in
3.51.3, https://sqlite.org/wal.html#walresetbug), a race between a checkpoint and a commit
of another connection that can corrupt the database file or lose commits: exactly the
several processes on one store this archive runs (an import beside ``serve`` and its
schedules). APSW's wheels carry a current SQLite of their own, the same on every system.

**One copy.** Two copies of SQLite in one process corrupt a database they both open
(SQLite's "How To Corrupt An SQLite Database File", 2.3): each keeps its own table of the
POSIX locks it holds, and closing a connection of one drops the locks of the other. So the
archive opens its store through this module only, and no module of the package imports
the standard library's ``sqlite3`` (``tests/test_layers.py`` checks it).

**Never beside it.** Nothing outside SQLite opens, closes, renames or links ``archive.db``,
its ``-wal`` or its ``-shm`` while the process has a connection (ibid., 2.2, 2.5, 2.6):
closing any descriptor of the file drops every lock the process holds on it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

import apsw

Connection = apsw.Connection
Error = apsw.Error

FIXED = (3, 51, 3)
"""The first SQLite without the WAL-reset bug."""

_BUSY = (apsw.BusyError, apsw.LockedError)
_REASONS: tuple[tuple[type[apsw.Error], str], ...] = (
    (apsw.NotADBError, "the file is not an SQLite database"),
    (apsw.CorruptError, "the database file is corrupt"),
    (apsw.CantOpenError, "the database file cannot be opened (is the data directory writable?)"),
    (apsw.ReadOnlyError, "the store is read-only (check the permissions of the data directory)"),
    (apsw.FullError, "the disk is full"),
    (apsw.IOError, "an I/O error occurred"),
)
FULL_BELOW = 1024 * 1024
"""Free bytes under which an I/O error is told as a full disk: SQLite reports a write that
found no room as an I/O error of the kind of write (the log, its index) as often as
``SQLITE_FULL``."""


def version() -> str:
    return str(apsw.sqlite_lib_version())


def has_wal_reset_bug(text: str | None = None) -> bool:
    """Whether this SQLite (or the version ``text``) is one of those with the WAL-reset bug."""
    numbers = tuple(int(part) for part in (text or version()).split(".")[:3])
    return numbers < FIXED


def connect(
    path: Path, busy_timeout: float, vfs: str | None = None, *, create: bool = False
) -> apsw.Connection:
    """A connection to the database at ``path``, waiting up to ``busy_timeout`` seconds for
    another writer's lock; ``vfs``: SQLite's name of the layer to the files (None: the
    system's). ``create``: made when missing (a new store's file under its temporary
    name); otherwise a missing file fails (``CantOpenError``), so that a store whose file
    was moved or deleted beside it is not given a new empty one by the next connection."""
    flags = apsw.SQLITE_OPEN_READWRITE | (apsw.SQLITE_OPEN_CREATE if create else 0)
    connection = apsw.Connection(str(path), flags=flags, vfs=vfs)
    connection.setbusytimeout(int(busy_timeout * 1000))
    return connection


def copy_database(source: Path, target: Path) -> None:
    """The database at ``source`` copied to a new file ``target`` in one step of SQLite's
    online backup: one read transaction, the store at one moment (in WAL mode the writers
    go on meanwhile; what only the log holds is copied too)."""
    # Not "with": an APSW connection's context is a transaction, not its lifetime.
    reading = apsw.Connection(str(source), flags=apsw.SQLITE_OPEN_READWRITE)
    try:
        copy = apsw.Connection(str(target))
        try:
            with copy.backup("main", reading, "main") as backup:
                backup.step(-1)
        finally:
            copy.close()
    finally:
        reading.close()


def code_name(exc: apsw.Error) -> str:
    """SQLite's name of the error (``SQLITE_IOERR_SHMSIZE``), or ""."""
    for code, names in (
        (getattr(exc, "extendedresult", None), apsw.mapping_extended_result_codes),
        (getattr(exc, "result", None), apsw.mapping_result_codes),
    ):
        if isinstance(code, int) and code in names:
            return str(names[code])
    return ""


def is_busy(exc: BaseException) -> bool:
    return isinstance(exc, _BUSY)


def is_damage(exc: BaseException) -> bool:
    """The file is damaged (or is no database): the error is the finding, not a fault."""
    return isinstance(exc, apsw.CorruptError | apsw.NotADBError)


def reason(exc: apsw.Error, folder: Path) -> str:
    """What the error means, for a person: a full disk told as such whatever SQLite called
    it (an import into a full disk used to say "disk I/O error", as did every read)."""
    if isinstance(exc, apsw.FullError | apsw.IOError):
        free = free_bytes(folder)
        if free is not None and free < FULL_BELOW:
            return f"the disk is full ({free} bytes free in {folder})"
    return next((text for kind, text in _REASONS if isinstance(exc, kind)), "")


def free_bytes(folder: Path) -> int | None:
    try:
        found = os.statvfs(folder)
    except OSError:
        return None
    return found.f_bavail * found.f_frsize


def first(connection: apsw.Connection, statement: str, params: tuple[Any, ...] = ()) -> Any:
    """The first column of the one row ``statement`` gives (a count, a PRAGMA's value)."""
    return row(connection, statement, params)[0]


def row(connection: apsw.Connection, statement: str, params: tuple[Any, ...] = ()) -> Any:
    """The first row ``statement`` gives, which it must give."""
    found = connection.execute(statement, params).fetchone()
    if found is None:
        raise apsw.SQLError(f"no row from {statement}")
    return found


def on_read_only_file_system(folder: Path) -> bool:
    """Whether ``folder`` lies on a file system mounted read-only (a backup mount, a
    snapshot): nothing there can change, nor be written."""
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def connect_read_only(path: Path, vfs: str | None = None) -> apsw.Connection:
    """A connection that only reads the database at ``path`` on a read-only file system,
    where SQLite cannot make the log's index (``-shm``) it reads a WAL store through. With
    no commits in the log the file is all there is (``immutable``: no locks, no index);
    with a log and its index, both are read as they are (``mode=ro``). A log without its
    index cannot be read there, nor left out (its commits are part of the store):
    ``apsw.CantOpenError``, said as such."""
    wal, shm = (path.with_name(path.name + suffix) for suffix in ("-wal", "-shm"))
    logged = wal.exists() and wal.stat().st_size > 0
    if logged and not shm.exists():
        raise apsw.CantOpenError(
            f"its log {wal.name} holds commits, and on a read-only file system SQLite cannot"
            f" read them without the log's index {shm.name}: copy the folder to a writable"
            " place and read the copy"
        )
    query = "mode=ro" if logged else "immutable=1"
    flags = apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI
    return apsw.Connection(f"file:{quote(str(path))}?{query}", flags=flags, vfs=vfs)

"""The embedded store's files: ``archive.db`` made whole before anyone sees it, told apart
from files that are not an archive, and its write-ahead log guarded.

**Made whole.** A new store is written under a name of its own in the data directory (its
tables, its page size, WAL mode, :data:`APPLICATION_ID`), closed, and only then linked to
``archive.db``. So a file named ``archive.db`` is always a finished store, however many
processes create one at once (the first link wins, the others open it), and a file of that
name that holds no archive (emptied to 0 bytes, an empty database, another program's
database) is one: :func:`check_ours` refuses it with a ``StoreError`` instead of writing
new tables into it, for every command, reading or writing.

**The log.** In WAL mode a commit lands in ``archive.db-wal`` and reaches ``archive.db`` only
at a checkpoint. The log is part of the store: a committed snapshot may live only there.
:class:`LogGuard` makes its loss visible. Every write transaction, holding the write lock,
makes sure the mark ``archive.db-unmerged`` exists (a stat; created, with the folder
synced, at the first write after the log was last merged). A process that closes the store
merges the log (``wal_checkpoint(TRUNCATE)``) and, when that leaves it empty, removes the
mark under the write lock, so no other writer commits in between; the last process to
close (SQLite deletes the log then, after merging it) removes it too. A store opened with
the mark but no log lost commits that were only in the log: the mark becomes
``archive.db-log-lost``, which :meth:`LogGuard.findings` reports (``verify`` fails with it)
until the operator has archived again what was lost and removes the file.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable
from contextlib import suppress
from pathlib import Path

from imixs_archive.durable import sync_folder
from imixs_archive.errors import StoreError
from imixs_archive.storage.sqlite import engine

log = logging.getLogger("imixs_archive.sqlite")

APPLICATION_ID = 0x494D5841
"""``PRAGMA application_id`` of a store this archive created ("IMXA")."""
MARK_SUFFIX = "-unmerged"
LOST_SUFFIX = "-log-lost"
RECHECK = 0.05
"""Seconds to wait before taking a mark without a log for a loss: a process closing at
that moment may be between SQLite's deleting the merged log and its removing the mark."""
MERGE_TIMEOUT_MS = 5000
"""How long a closing process waits for readers and writers to let it merge the log."""


def create_atomically(
    path: Path, prepare: Callable[[engine.Connection], None], busy_timeout: float
) -> bool:
    """Make a new store at ``path`` unless one is there: ``prepare`` sets up a database
    under a temporary name, which then appears as ``path`` whole. False when another
    process made it first."""
    temporary = path.with_name(f".{path.name}.new-{os.getpid()}-{time.monotonic_ns()}")
    try:
        connection = engine.connect(temporary, busy_timeout, create=True)
        try:
            prepare(connection)
            connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        finally:
            connection.close()  # the last connection: the log is merged and removed
        try:
            os.link(temporary, path)
        except FileExistsError:
            return False
        sync_folder(path.parent)
        return True
    finally:
        for leftover in (temporary, *_companions(temporary)):
            with suppress(FileNotFoundError):
                leftover.unlink()


def _companions(database: Path) -> tuple[Path, ...]:
    return tuple(database.with_name(database.name + suffix) for suffix in ("-wal", "-shm"))


def check_ours(connection: engine.Connection, path: Path, tables: Iterable[str]) -> None:
    """A StoreError unless the database holds this archive: made by it, or holding its
    tables (stores made before the application id was set)."""
    application_id = engine.first(connection, "PRAGMA application_id")
    present = {name for (name,) in connection.execute("SELECT name FROM sqlite_master")}
    if application_id == APPLICATION_ID or (application_id == 0 and present & set(tables)):
        return
    size = path.stat().st_size if path.exists() else 0
    if application_id == 0 and not present:
        what = "it is empty (0 bytes)" if size == 0 else "it is an empty database"
    else:
        what = "it is another program's database"
    raise StoreError(
        f"SQLite store {path}: the file is not an archive: {what}. Nothing was changed. If "
        "it was the archive, restore it (with its -wal file) from a backup; to start a new "
        "archive, move it away"
    )


class LogGuard:
    """The mark of commits not yet merged from the log (see the module's text)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.wal = path.with_name(path.name + "-wal")
        self.mark = path.with_name(path.name + MARK_SUFFIX)
        self.lost = path.with_name(path.name + LOST_SUFFIX)

    def check_at_open(self) -> None:
        """Before the store is opened (opening makes a new, empty log): a mark without a
        log means a log with commits went missing."""
        if not self.mark.exists() or self.wal.exists():
            return
        time.sleep(RECHECK)
        try:
            since = self.mark.stat().st_mtime
        except FileNotFoundError:
            return  # a closing process had merged the log and removed it
        if self.wal.exists():
            return
        when = time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(since))
        message = (
            f"SQLite store {self.path}: its write-ahead log ({self.wal.name}) went missing "
            f"while it held commits (writes since {when}): snapshots archived since then may "
            "be lost. Put the log back if you have it (with archive.db, before opening the "
            "store), or archive them again (imixs-archive resync, or the import), then "
            f"remove {self.lost}"
        )
        with suppress(OSError):
            self.lost.write_text(message + "\n")
            self.mark.unlink()
            sync_folder(self.path.parent)
        log.error("%s", message)

    def findings(self) -> list[str]:
        """What was found lost, until the operator removes the record of it."""
        try:
            return [self.lost.read_text().strip()]
        except FileNotFoundError:
            return []
        except OSError as exc:
            return [f"SQLite store {self.path}: {self.lost} cannot be read: {exc}"]

    def before_commit(self, *, deferred: bool) -> None:
        """Inside a write transaction: the mark exists before anything is committed, and
        is durable before the commit is (``deferred``: commits are made durable later, by
        a sync of the log and the folder, which takes the mark's entry along)."""
        if self.mark.exists():
            return
        try:
            os.close(os.open(self.mark, os.O_WRONLY | os.O_CREAT, 0o644))
            if not deferred:
                sync_folder(self.path.parent)
        except OSError as exc:
            raise StoreError(
                f"SQLite store {self.path}: cannot write {self.mark.name}: {exc.strerror or exc}"
            ) from exc

    def merge(self, connection: engine.Connection, begin: Callable[[], None]) -> None:
        """At close: merge the log into the database and, when it is then empty, remove
        the mark under the write lock (``begin`` takes it). Best effort: a log that
        cannot be merged now keeps its mark."""
        try:
            connection.execute(f"PRAGMA busy_timeout = {MERGE_TIMEOUT_MS}")
            busy, _frames, _merged = engine.row(connection, "PRAGMA wal_checkpoint(TRUNCATE)")
            if busy or not self.mark.exists():
                return
            begin()
            try:
                if not self.wal.exists() or self.wal.stat().st_size == 0:
                    self.mark.unlink(missing_ok=True)
            finally:
                connection.execute("ROLLBACK")
        except (engine.Error, OSError, StoreError) as exc:
            log.debug("the log of %s was not merged at close: %s", self.path, exc)

    def after_close(self) -> None:
        """Every connection of this process closed: a log that is gone was merged by the
        last one (SQLite deletes it only then), so the mark goes too."""
        if not self.wal.exists():
            with suppress(OSError):
                self.mark.unlink(missing_ok=True)


def copy_store(path: Path, folder: Path) -> Path:
    """A consistent copy of the store at ``path`` as ``folder/archive.db`` (SQLite's online
    backup: one read transaction, so it is the store at one moment, and in WAL mode the
    writers go on meanwhile; what only the log held is in it too). Written under a name of
    its own, made durable and then linked in place: the copy is whole or not there. A
    folder that already holds a store is refused."""
    target = folder / path.name
    if target.exists():
        raise StoreError(f"{target} exists: copy into a folder without an archive")
    folder.mkdir(parents=True, exist_ok=True)
    temporary = folder / f".{path.name}.copy-{os.getpid()}-{time.monotonic_ns()}"
    try:
        engine.copy_database(path, temporary)
        fd = os.open(temporary, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.link(temporary, target)
        sync_folder(folder)
    except engine.Error as exc:
        raise StoreError(f"cannot copy the store {path}: {exc}") from exc
    except FileExistsError:
        raise StoreError(f"{target} exists: copy into a folder without an archive") from None
    finally:
        for leftover in (temporary, *_companions(temporary)):
            with suppress(FileNotFoundError):
                leftover.unlink()
    return target

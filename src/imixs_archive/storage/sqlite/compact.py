"""Giving the embedded store's free pages back to the disk (``imixs-archive compact``).

SQLite keeps the pages of deleted rows in the file (its free list) and reuses them for new
rows: a deleted snapshot's pieces, once ``gc`` removed them, never shrink ``archive.db``.
``VACUUM`` writes the rows into a new copy of the database (a temporary file) and then
that copy back over the database, through the write-ahead log like any transaction; the
checkpoint that follows cuts the file to its new size. So it needs free disk for two
copies of what is stored (not of the free pages): the temporary copy (SQLite's temporary
folder: ``SQLITE_TMPDIR``, else ``TMPDIR``, else ``/var/tmp``) and the log beside the
store, and it holds the store's write lock throughout (other writers wait for it, up to
their busy timeout; readers go on, on what was committed before). A crash or a kill during
it leaves the store as before: the copy is one transaction.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from imixs_archive.errors import StoreError
from imixs_archive.storage.base import Compaction
from imixs_archive.storage.sqlite import engine


@dataclass
class Pages:
    size: int
    count: int
    free: int

    @property
    def used_bytes(self) -> int:
        return (self.count - self.free) * self.size


def pages_of(connection: engine.Connection) -> Pages:
    return Pages(
        engine.first(connection, "PRAGMA page_size"),
        engine.first(connection, "PRAGMA page_count"),
        engine.first(connection, "PRAGMA freelist_count"),
    )


def check_room(path: Path, pages: Pages, min_free: int) -> None:
    """StoreError unless the store's disk has room for the log of a whole copy (and
    ``min_free`` left), and the temporary folder for the copy itself."""
    needed = pages.used_bytes
    folders = {path.parent: needed + min_free}
    temporary = Path(tempfile.gettempdir())
    folders[temporary] = folders.get(temporary, 0) + needed
    for folder, wanted in folders.items():
        free = shutil.disk_usage(folder).free
        if free < wanted:
            raise StoreError(
                f"SQLite store {path}: compacting needs {wanted:,} bytes free in {folder} "
                f"(a copy of the {needed:,} bytes stored), {free:,} are: make room, or set "
                "SQLITE_TMPDIR to a folder on a disk with room for the temporary copy"
            )


def vacuum(connection: engine.Connection) -> bool:
    """VACUUM, then merge the log into the database (which cuts the file to its size);
    whether the merge was whole (no reader kept it from finishing)."""
    connection.execute("VACUUM")
    busy, _frames, _merged = engine.row(connection, "PRAGMA wal_checkpoint(TRUNCATE)")
    return not busy


__all__ = ["Compaction", "check_room", "file_sizes", "pages_of", "vacuum"]


def file_sizes(path: Path) -> tuple[int, int]:
    """The database file's size and its log's."""
    sizes = []
    for name in (path.name, f"{path.name}-wal"):
        try:
            sizes.append(path.with_name(name).stat().st_size)
        except FileNotFoundError:
            sizes.append(0)
    return sizes[0], sizes[1]

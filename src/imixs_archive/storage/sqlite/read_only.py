"""The embedded store on a read-only file system (a backup disk mounted read-only, a
file-system snapshot): read as it is, by every command that only reads.

Commands that only read still write a little for themselves: the books of a job that goes
on where it stopped (``verify``, ``backup``, ``export-table``), the figures ``stats`` and
the analytics keep, the index of days with snapshots. The tables those go to are declared
``kept_by_readers`` in ``storage/model.py``. Here, each such table is copied, at its first
use, into a store of the process's own in a temporary folder, and read and written there
for the process's life: the command runs as on a writable store, and leaves nothing
behind (a stopped job starts again). A write to any other table is refused by the store
itself (``SQLiteBackend.read_only``: exit 2, a data folder that cannot be written).
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from contextlib import AbstractContextManager
from pathlib import Path

from imixs_archive.errors import ConfigError
from imixs_archive.storage.base import Backend
from imixs_archive.storage.delegating import DelegatingBackend
from imixs_archive.storage.model import Table
from imixs_archive.storage.sqlite.backend import SQLiteBackend


class ReadOnlyStore(DelegatingBackend):
    """``inner`` (a store on a read-only file system), with the tables kept by readers in a
    store of this process's own."""

    def __init__(self, inner: SQLiteBackend) -> None:
        super().__init__(inner)
        self.read_only = True
        kept = [table for table in inner.tables if table.kept_by_readers]
        try:
            self._folder = Path(tempfile.mkdtemp(prefix="imixs-archive-kept-"))
        except OSError as exc:
            raise ConfigError(
                f"the store in {inner.data_dir} is on a read-only file system, and no"
                f" temporary folder can be made for what reading commands keep: {exc}"
            ) from exc
        self._kept = SQLiteBackend(self._folder, tables=kept)
        self._copied: set[str] = set()
        self._lock = threading.Lock()

    def store_for(self, table: Table) -> Backend:
        """The store that holds ``table`` for this process (every read and write of the
        contract goes through here: ``DelegatingBackend``)."""
        if not table.kept_by_readers:
            return self.inner
        with self._lock:
            if table.name not in self._copied:
                self._kept.put(table, self.inner.scan(table))
                self._copied.add(table.name)
        return self._kept

    def grouped(self) -> AbstractContextManager[None]:
        return self._kept.grouped()  # only kept tables can be written

    def durable_at_end(self) -> AbstractContextManager[None]:
        return self._kept.durable_at_end()

    def close(self) -> None:
        try:
            self._kept.close()
        finally:
            shutil.rmtree(self._folder, ignore_errors=True)
            self.inner.close()

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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from fractions import Fraction
from pathlib import Path
from typing import Any

from imixs_archive.errors import ConfigError
from imixs_archive.storage.base import Backend, Position, Row
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

    def _for(self, table: Table) -> Backend:
        """The store that holds ``table`` for this process."""
        if not table.kept_by_readers:
            return self.inner
        with self._lock:
            if table.name not in self._copied:
                self._kept.put(table, self.inner.scan(table))
                self._copied.add(table.name)
        return self._kept

    def put(self, table: Table, rows: Iterable[Mapping[str, Any]]) -> int:
        return self._for(table).put(table, rows)

    def get(
        self, table: Table, key: Mapping[str, Any], columns: Sequence[str] | None = None
    ) -> Row | None:
        return self._for(table).get(table, key, columns)

    def scan(
        self,
        table: Table,
        partition: Mapping[str, Any] | None = None,
        *,
        start_after: Mapping[str, Any] | None = None,
        descending: bool = False,
        limit: int | None = None,
        columns: Sequence[str] | None = None,
    ) -> Iterator[Row]:
        return self._for(table).scan(
            table,
            partition,
            start_after=start_after,
            descending=descending,
            limit=limit,
            columns=columns,
        )

    def scan_range(
        self,
        table: Table,
        after: Position | None = None,
        upto: Position | None = None,
        *,
        columns: Sequence[str] | None = None,
    ) -> Iterator[tuple[Position, Row]]:
        return self._for(table).scan_range(table, after, upto, columns=columns)

    def position_at(self, table: Table, share: Fraction) -> Position:
        return self._for(table).position_at(table, share)

    def delete(
        self, table: Table, key: Mapping[str, Any], *, written_before: int | None = None
    ) -> None:
        self._for(table).delete(table, key, written_before=written_before)

    def put_partition(self, table: Table, rows: Sequence[Mapping[str, Any]]) -> int:
        return self._for(table).put_partition(table, rows)

    def put_soon(self, table: Table, rows: Sequence[Mapping[str, Any]]) -> Callable[[], None]:
        return self._for(table).put_soon(table, rows)

    def put_new(self, table: Table, row: Mapping[str, Any]) -> bool:
        return self._for(table).put_new(table, row)

    def put_if_absent(self, table: Table, row: Mapping[str, Any]) -> Row | None:
        return self._for(table).put_if_absent(table, row)

    def replace(
        self, table: Table, key: Mapping[str, Any], column: str, expected: Any, value: Any
    ) -> bool:
        return self._for(table).replace(table, key, column, expected, value)

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

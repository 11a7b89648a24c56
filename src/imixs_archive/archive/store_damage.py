"""Damage in the store's own file, below the rows: found by the store's check of its file
(``Backend.file_problems``: SQLite's ``quick_check``, or ``integrity_check`` with
``verify --full``), or met by a read that fails for it ("database disk image is
malformed"). ``verify`` reports either as an integrity problem naming the table (exit 5),
never as a store that cannot be reached (exit 6), and goes on with what it can read.

What gets a store out of it (:func:`way_out`): rows that disagree with the snapshots are
rebuilt from them (``stats --reconcile``), but a damaged SQLite file is not mended by
writing rows into it: SQLite cannot even delete the rows of a damaged table. What works is
a new store made of what can be read: ``export --to NEWDIR`` copies every snapshot (each
file's bytes checked on both sides) with the legal holds, the service state and the sync's
records, and the new store builds every index, fact and figure anew; the damaged folder is
then moved aside and the new one put in its place. What export cannot read (a damaged
``snapshots``, ``documents`` or ``documents_data``) it names: archived again from the
workflow (``resync``) or from a backup (``import``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any

from imixs_archive.archive.verify_report import VerifyReport
from imixs_archive.errors import DamagedRowError, StoreError, StoreUnavailableError
from imixs_archive.storage.base import Backend, Position, Row
from imixs_archive.storage.delegating import DelegatingBackend
from imixs_archive.storage.model import Table

THE_FILE = "the file"
"""Where damage that belongs to no table is reported (SQLite's free list, stray pages)."""
REBUILD = "imixs-archive stats --reconcile"
"""The command that rebuilds every index and derived table from the snapshots."""


class TableUnreadable(StoreError):
    """A read of ``table`` that the store refused (not for being busy or away), or that
    gave back what cannot be a row of it (a key that is NULL: what a damaged SQLite page
    can give)."""

    def __init__(self, table: str, error: Exception) -> None:
        super().__init__(str(error))
        self.table = table
        self.error = error


FAILED_READS = (StoreError, ValueError, DamagedRowError)
"""What a read of a damaged store raises: the store's error, or a row the backend could
not take (raised as it was when the store's file is not damaged)."""


class TableReads(DelegatingBackend):
    """The store, each read that fails naming the table it read (:class:`TableUnreadable`);
    writes, and a store that is busy or away, as they are."""

    def get(
        self, table: Table, key: Mapping[str, Any], columns: Sequence[str] | None = None
    ) -> Row | None:
        try:
            return self.inner.get(table, key, columns)
        except (StoreUnavailableError, TableUnreadable):
            raise
        except FAILED_READS as exc:
            raise TableUnreadable(table.name, exc) from exc

    def scan(self, table: Table, *args: Any, **kwargs: Any) -> Iterator[Row]:
        return _named(table, lambda: self.inner.scan(table, *args, **kwargs))

    def scan_range(self, table: Table, *args: Any, **kwargs: Any) -> Iterator[tuple[Position, Row]]:
        return _named(table, lambda: self.inner.scan_range(table, *args, **kwargs))


def _named(table: Table, rows: Callable[[], Iterable[Any]]) -> Iterator[Any]:
    try:
        yield from rows()
    except (StoreUnavailableError, TableUnreadable):
        raise
    except FAILED_READS as exc:
        raise TableUnreadable(table.name, exc) from exc


def damaged_tables(problems: Iterable[str]) -> list[str]:
    """The tables ``Backend.file_problems`` lines name (``the file`` for the others)."""
    return sorted({line.partition(": ")[0] for line in problems})


def table_reads(backend: Backend) -> TableReads:
    return backend if isinstance(backend, TableReads) else TableReads(backend)


def check_file(
    backend: Backend, report: VerifyReport, *, table: str | None = None, full: bool = False
) -> list[str]:
    """Report what the store's check of its file (or of one table) finds, each problem
    under its table; the tables found damaged."""
    found = []
    for line in backend.file_problems(table, full=full):
        name, _, what = line.partition(": ")
        report.damage(name, f"damaged in the store's file: {what or line}")
        found.append(name)
    if table is None:
        report.file_checked = True
    return sorted(set(found))


def unreadable(backend: Backend, report: VerifyReport, exc: TableUnreadable, what: str) -> None:
    """A read failed while checking ``what``: damage in the store's file when its check
    finds some (checked once a run), reported under the table read (or the file); else the
    store's error stands (raised: exit 6)."""
    if not report.file_checked:
        check_file(backend, report)
    if not report.damaged:
        raise exc.error
    table = exc.table if exc.table in report.damaged else THE_FILE
    report.damage(table, f"{what} could not be read: {exc.error}")


def way_out(damaged: Collection[str], disagreeing: Collection[str] = ()) -> list[str]:
    """What to do about what a verify found, in a few lines (``verify`` and ``doctor``)."""
    lines = []
    if set(disagreeing) - set(damaged):  # a damaged table is not mended by writing rows
        lines.append(f"tables that disagree with the snapshots are rebuilt from them: {REBUILD}")
    damaged = sorted(damaged)
    if damaged:
        lines.append(
            f"the store's file is damaged ({', '.join(damaged)}): writing rows does not mend "
            "it; stop every archive process, copy what can be read into a new store with "
            "`imixs-archive export --to NEWDIR` (indexes, facts and figures are built anew "
            "there; the ledger starts a new log), move the data folder aside and put NEWDIR "
            "in its place"
        )
        lost = sorted(set(damaged) & PRIMARY)
        if lost:
            lines.append(
                f"{', '.join(lost)} hold archived data: what export could not read is "
                "archived again from the workflow (`imixs-archive resync --from DATE`) or "
                "from a backup (`imixs-archive import DIR`)"
            )
    return lines


PRIMARY = frozenset({"snapshots", "archive_snapshot_parts", "documents", "documents_data"})
"""Tables of archived data (not derived from other rows): damage there may lose data."""

"""A backend that hands every call to another one: the base of wrappers that observe or
alter calls (metrics, fault injection in tests) without re-implementing the contract."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from fractions import Fraction
from pathlib import Path
from typing import Any

from imixs_archive.storage.base import Backend, Compaction, Position, RangeScan, Row, Scan
from imixs_archive.storage.model import Table


class DelegatingBackend(Backend):
    """Every operation of the contract, ``grouped()`` and ``durable_at_end()`` included,
    goes to ``inner`` (``scan`` after the checks of :meth:`Backend.scan`, which ``inner``
    makes again). Backend-specific extras (e.g. Cassandra's ``drop_keyspace``) stay
    reachable."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.name = inner.name
        self.concurrency = inner.concurrency
        self.local_reads = inner.local_reads
        self.inline_limit = inner.inline_limit
        self.partition_rows = inner.partition_rows

    def store_for(self, table: Table) -> Backend:
        """The store that holds ``table`` (``inner``; a wrapper may keep some elsewhere)."""
        return self.inner

    def put(self, table: Table, rows: Iterable[Mapping[str, Any]]) -> int:
        return self.store_for(table).put(table, rows)

    def get(
        self, table: Table, key: Mapping[str, Any], columns: Sequence[str] | None = None
    ) -> Row | None:
        return self.store_for(table).get(table, key, columns)

    def _scan(self, scan: Scan) -> Iterator[Row]:
        return self.store_for(scan.table).scan(scan.table, scan.partition, **scan.options())

    def _scan_range(self, scan: RangeScan) -> Iterator[tuple[Position, Row]]:
        store = self.store_for(scan.table)
        return store.scan_range(scan.table, scan.after, scan.upto, columns=scan.columns)

    def position_at(self, table: Table, share: Fraction) -> Position:
        return self.store_for(table).position_at(table, share)

    def delete(
        self, table: Table, key: Mapping[str, Any], *, written_before: int | None = None
    ) -> None:
        self.store_for(table).delete(table, key, written_before=written_before)

    def put_partition(self, table: Table, rows: Sequence[Mapping[str, Any]]) -> int:
        return self.store_for(table).put_partition(table, rows)

    def put_soon(self, table: Table, rows: Sequence[Mapping[str, Any]]) -> Callable[[], None]:
        return self.store_for(table).put_soon(table, rows)

    def put_new(self, table: Table, row: Mapping[str, Any]) -> bool:
        return self.store_for(table).put_new(table, row)

    def put_if_absent(self, table: Table, row: Mapping[str, Any]) -> Row | None:
        return self.store_for(table).put_if_absent(table, row)

    def replace(
        self, table: Table, key: Mapping[str, Any], column: str, expected: Any, value: Any
    ) -> bool:
        return self.store_for(table).replace(table, key, column, expected, value)

    def grouped(self) -> AbstractContextManager[None]:
        return self.inner.grouped()

    def durable_at_end(self) -> AbstractContextManager[None]:
        return self.inner.durable_at_end()

    def findings(self) -> list[str]:
        return self.inner.findings()

    def copy_to(self, folder: Path) -> Path:
        return self.inner.copy_to(folder)

    def compact(self, *, min_free: int = 0) -> Compaction:
        return self.inner.compact(min_free=min_free)

    def file_problems(self, table: str | None = None, *, full: bool = False) -> list[str]:
        return self.inner.file_problems(table, full=full)

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

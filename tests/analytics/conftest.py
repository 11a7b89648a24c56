"""Fixtures for the analytics tests: the generated archive, and a backend that counts."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from analytics.generated_archive import Planned, document, plan
from imixs_archive.archive.snapshots import Archive
from imixs_archive.storage.base import Backend, Row
from imixs_archive.storage.delegating import DelegatingBackend
from imixs_archive.storage.model import Table


class CountingBackend(DelegatingBackend):
    """Delegates to a backend and counts reads per table (``scans`` and ``gets``) and row
    deletes (``deletes``)."""

    def __init__(self, inner: Backend) -> None:
        super().__init__(inner)
        self.name = "counting"
        self.scans: Counter[str] = Counter()
        self.gets: Counter[str] = Counter()
        self.deletes: Counter[str] = Counter()

    def reset(self) -> None:
        self.scans.clear()
        self.gets.clear()
        self.deletes.clear()

    def delete(
        self, table: Table, key: Mapping[str, Any], *, written_before: int | None = None
    ) -> None:
        self.deletes[table.name] += 1
        super().delete(table, key, written_before=written_before)

    def get(
        self, table: Table, key: Mapping[str, Any], columns: Sequence[str] | None = None
    ) -> Row | None:
        self.gets[table.name] += 1
        return super().get(table, key, columns)

    def scan(
        self, table: Table, partition: Mapping[str, Any] | None = None, **kw: Any
    ) -> Iterator[Row]:
        self.scans[table.name] += 1
        return super().scan(table, partition, **kw)


@pytest.fixture
def planned() -> list[Planned]:
    return plan()


@pytest.fixture
def counting(backend: Backend) -> CountingBackend:
    return CountingBackend(backend)


@pytest.fixture
def generated(counting: CountingBackend, planned: list[Planned]) -> Iterator[Archive]:
    """The generated archive, over the counting backend."""
    with Archive(counting) as archive:
        for p in planned:
            archive.store(document(p))
        counting.reset()
        yield archive

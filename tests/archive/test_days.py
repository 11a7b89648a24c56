"""Listings by $modified day cost what they return, not one query per calendar day."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.storage.base import Backend, Row
from imixs_archive.storage.delegating import DelegatingBackend
from imixs_archive.storage.model import ARCHIVE_MODIFIED_DAYS, Table
from support.snapshots import CET, make_snapshot

FIRST, LAST = dt.date(1, 1, 1), dt.date(9999, 12, 31)


class CountingBackend(DelegatingBackend):
    """Counts partition scans; fails fast past ``allowed`` (one per calendar day would
    be millions)."""

    def __init__(self, inner: Backend, allowed: int = 200) -> None:
        super().__init__(inner)
        self.scans = 0
        self.allowed = allowed

    def scan(
        self, table: Table, partition: Mapping[str, Any] | None = None, **kw: Any
    ) -> Iterator[Row]:
        self.scans += 1
        if self.scans > self.allowed:
            raise AssertionError(f"more than {self.allowed} scans for one listing")
        return super().scan(table, partition, **kw)


def _store_far_apart(archive: Archive) -> list[str]:
    ids = []
    for step, year in enumerate((1, 2023, 9999)):
        when = dt.datetime(year, 6, 1, 12, tzinfo=CET)
        doc = make_snapshot(step, modified=when)
        archive.store(doc)
        ids.append(doc["$uniqueid"][0])
    return ids


def test_a_listing_over_all_days_costs_what_it_returns(backend: Backend) -> None:
    ids = _store_far_apart(Archive(backend))
    counting = CountingBackend(backend)
    found = [sid for _day, sid in Archive(counting).days.iter_days(FIRST, LAST)]
    assert found == ids
    assert counting.scans < 10
    counting.scans = 0
    middle = Archive(counting).days.iter_days(dt.date(2, 1, 1), dt.date(9000, 1, 1))
    assert [sid for _day, sid in middle] == ids[1:2]


def test_the_day_index_is_built_for_a_store_written_without_it(backend: Backend) -> None:
    """A store written before the index (or by the Java service) is indexed on first use."""
    ids = _store_far_apart(Archive(backend))
    backend.delete(ARCHIVE_MODIFIED_DAYS, {"bucket": 0})
    backend.delete(ARCHIVE_MODIFIED_DAYS, {"bucket": 1})
    counting = CountingBackend(backend)
    assert [sid for _day, sid in Archive(counting).days.iter_days(FIRST, LAST)] == ids
    later = make_snapshot(5, modified=dt.datetime(5000, 1, 1, tzinfo=CET))
    Archive(backend).store(later)
    assert len(list(Archive(counting).days.iter_days(FIRST, LAST))) == 4


@pytest.mark.parametrize("span", [0, 1, 61, 62, 400])
def test_short_and_long_ranges_list_the_same(backend: Backend, span: int) -> None:
    archive = Archive(backend)
    start = dt.date(2023, 3, 1)
    for step in range(0, 420, 7):
        day = start + dt.timedelta(days=step)
        archive.store(
            make_snapshot(
                step, modified=dt.datetime(day.year, day.month, day.day, 12, tzinfo=dt.UTC)
            )
        )
    last = start + dt.timedelta(days=span)
    expected = sorted(
        (start + dt.timedelta(days=step)) for step in range(0, 420, 7) if step <= span
    )
    assert [day for day, _sid in archive.days.iter_days(start, last)] == expected


def test_each_store_and_delete_changes_its_days_stamp_only(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    from imixs_archive.archive import days

    first, second = dt.date(2022, 12, 31), dt.date(2023, 1, 2)
    assert archive.days.stamps(first, second) == {}
    doc = make_snapshot(0, modified=dt.datetime(2022, 12, 31, 12, tzinfo=dt.UTC))
    archive.store(doc)
    before = archive.days.stamps(first, second)
    assert list(before) == [first]
    archive.store(make_snapshot(1, modified=dt.datetime(2023, 1, 2, 8, tzinfo=dt.UTC)))
    after = archive.days.stamps(first, second)
    assert after[first] == before[first] and list(after) == [first, second]
    assert archive.days.stamps(second, second) == {second: after[second]}  # range kept
    archive.delete(doc["$uniqueid"][0])  # this process's row of that day again
    deleted = archive.days.stamps(first, second)
    assert deleted[first] != after[first] and deleted[second] == after[second]
    # another process's stamp of the day changes the day's stamp too, and stays in it
    monkeypatch.setattr(days, "_writer", (os.getpid(), "other-host:1:x"))
    archive.store(make_snapshot(2, modified=dt.datetime(2022, 12, 31, 9, tzinfo=dt.UTC)))
    other = archive.days.stamps(first, second)
    assert other[first] != deleted[first] and other[second] == after[second]

"""Range scans (``Backend.scan_range``, ``position_at``) on every backend:
the ranges a pass is cut into cover every row exactly once, partitions whole, and a scan
that goes on after a recorded position reads exactly what follows it."""

from __future__ import annotations

from fractions import Fraction

import pytest
from tests.storage.test_contract import rows_of

from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import (
    ARCHIVE_DAY_SUMMARIES,
    ARCHIVE_FILES,
    ARCHIVE_SNAPSHOT_FACTS,
    DOCUMENTS,
    DOCUMENTS_DATA,
    SNAPSHOTS,
    SNAPSHOTS_BY_MODIFIED,
    Table,
)


def _keys(table: Table, rows: list[dict[str, object]]) -> list[tuple[object, ...]]:
    return sorted(tuple(row[name] for name in table.primary_key) for row in rows)


@pytest.mark.parametrize("parts", [1, 2, 3, 7])
@pytest.mark.parametrize("table", [DOCUMENTS, DOCUMENTS_DATA], ids=lambda t: t.name)
def test_parts_cover_every_row_exactly_once(backend: Backend, table: Table, parts: int) -> None:
    rows = rows_of(table, 40, 5)
    backend.put(table, iter(rows))
    cuts = [backend.position_at(table, Fraction(k, parts)) for k in range(1, parts)]
    bounds = list(zip([None, *cuts], [*cuts, None], strict=True))
    found: list[dict[str, object]] = []
    for after, upto in bounds:
        got = list(backend.scan_range(table, after, upto))
        positions = [position for position, _row in got]
        assert positions == sorted(positions)  # the range order
        found += [row for _position, row in got]
    assert _keys(table, found) == _keys(table, rows)
    order = [row[table.partition_key[0]] for row in found]
    runs = [key for i, key in enumerate(order) if i == 0 or order[i - 1] != key]
    assert len(runs) == len(set(runs))  # each partition whole, in one range


@pytest.mark.parametrize(
    "table",
    [SNAPSHOTS_BY_MODIFIED, ARCHIVE_SNAPSHOT_FACTS, ARCHIVE_DAY_SUMMARIES],
    ids=lambda t: t.name,
)
def test_a_cut_before_the_first_partition_of_days(backend: Backend, table: Table) -> None:
    """Tables partitioned by a day (or a year, an int): a cut before their first partition
    (a share of less than one partition, as the scrub's first slices and a verify in more
    parts than days cut them) is a position the range scans compare with the keys."""
    rows = rows_of(table, 3, 2)
    backend.put(table, iter(rows))
    first = backend.position_at(table, Fraction(1, 7))
    assert list(backend.scan_range(table, None, first)) == []
    assert _keys(table, [row for _p, row in backend.scan_range(table, first)]) == _keys(table, rows)


@pytest.mark.parametrize("table", [DOCUMENTS, SNAPSHOTS], ids=lambda t: t.name)
def test_going_on_after_a_position_reads_what_follows(backend: Backend, table: Table) -> None:
    rows = rows_of(table, 30, 4)
    backend.put(table, iter(rows))
    whole = list(backend.scan_range(table, columns=list(table.primary_key)))
    assert len(whole) == len(rows)
    middle = len(whole) // 2
    stop = whole[middle][0]
    first = [row for position, row in whole if position <= stop]
    rest = [row for _p, row in backend.scan_range(table, stop, columns=list(table.primary_key))]
    assert _keys(table, first + rest) == _keys(table, rows)
    assert not {tuple(r.values()) for r in first} & {tuple(r.values()) for r in rest}


def test_after_a_partition_deleted_since(backend: Backend) -> None:
    rows = rows_of(DOCUMENTS, 10, 3)
    backend.put(DOCUMENTS, iter(rows))
    whole = list(backend.scan_range(DOCUMENTS, columns=["md5", "sort_id"]))
    stop, gone = whole[10][0], whole[10][1]["md5"]
    backend.delete(DOCUMENTS, {"md5": gone})
    rest = [row for _p, row in backend.scan_range(DOCUMENTS, stop, columns=["md5", "sort_id"])]
    expected = [row for position, row in whole if position > stop]
    assert _keys(DOCUMENTS, rest) == _keys(DOCUMENTS, expected)


def test_shares_follow_the_range_order(backend: Backend) -> None:
    backend.put(ARCHIVE_FILES, iter(rows_of(ARCHIVE_FILES, 200, 1)))
    half = backend.position_at(ARCHIVE_FILES, Fraction(1, 2))
    first = len(list(backend.scan_range(ARCHIVE_FILES, None, half)))
    assert 60 < first < 140  # hashes spread the ring: about half

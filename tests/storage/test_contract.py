"""The storage contract (``storage/base.py``), run on every backend (see ``conftest.py``).

Rows are made from the table declarations, so every table of ``TABLES`` is covered and a
table added to the model is covered without a new test.
"""

from __future__ import annotations

import datetime
import os
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from imixs_archive.errors import ConfigError
from imixs_archive.storage.base import Backend, Row, key_of
from imixs_archive.storage.delegating import DelegatingBackend
from imixs_archive.storage.model import (
    ARCHIVE_FILES,
    ARCHIVE_LEDGER_ENTRIES,
    ARCHIVE_LEDGER_HEAD,
    ARCHIVE_LEDGER_QUEUE,
    DOCUMENTS,
    DOCUMENTS_DATA,
    SNAPSHOTS,
    SNAPSHOTS_BY_MODIFIED,
    SNAPSHOTS_BY_UNIQUEID,
    TABLES,
    Column,
    ColumnType,
    Table,
)

MiB = 1024 * 1024
CLUSTERED = [table for table in TABLES if table.clustering_key]
DAY0 = datetime.date(2024, 1, 1)


def _ids(tables: list[Table] | tuple[Table, ...]) -> list[str]:
    return [table.name for table in tables]


def _value(table: Table, column: Column, partition: int, n: int) -> Any:
    """A value of the column's type: keys by partition / clustering number, so that the
    clustering order is the order of ``n``; other columns by both."""
    if column.name in table.partition_key:
        number, text = partition, f"part-{partition:04d}"
    elif column.name in table.clustering_key:
        number, text = n, f"c-{n:06d}"
    else:
        number, text = partition * 10_000 + n, f"value {partition}/{n} ü"
    kinds: dict[ColumnType, Any] = {
        ColumnType.TEXT: text,
        ColumnType.INT: number,
        ColumnType.BIGINT: 2**40 + number,
        ColumnType.DATE: DAY0 + datetime.timedelta(days=number % 2_000_000),
        ColumnType.BLOB: text.encode(),
    }
    return kinds[column.type]


def make_row(table: Table, partition: int, n: int = 0) -> Row:
    return {column.name: _value(table, column, partition, n) for column in table.columns}


def rows_of(table: Table, partitions: int, per_partition: int) -> list[Row]:
    """Rows with distinct keys (one row per partition when there is no clustering key)."""
    if not table.clustering_key:
        return [make_row(table, p) for p in range(partitions * per_partition)]
    return [make_row(table, p, n) for p in range(partitions) for n in range(per_partition)]


def partition_of(table: Table, row: Row) -> Row:
    return {name: row[name] for name in table.partition_key}


def clustering_of(table: Table, row: Row) -> Row:
    return {name: row[name] for name in table.clustering_key}


def _sort_key(table: Table, row: Row) -> tuple[Any, ...]:
    return tuple(row[name] for name in table.primary_key)


# --- round trips ------------------------------------------------------------------------


@pytest.mark.parametrize("table", TABLES, ids=_ids(TABLES))
def test_round_trip_every_table(backend: Backend, table: Table) -> None:
    rows = rows_of(table, 3, 4)
    assert backend.put(table, iter(rows)) == len(rows)
    for row in rows:
        found = backend.get(table, key_of(table, row))
        assert found == row
        assert found is not None
        for column in table.columns:
            assert type(found[column.name]) is type(row[column.name]), column.name


def test_put_nothing(backend: Backend) -> None:
    assert backend.put(DOCUMENTS, []) == 0
    assert backend.put(DOCUMENTS, iter(())) == 0


def test_text_and_blob_values(backend: Backend) -> None:
    rows = [
        {"snapshot": "Grüße ✓ 日本語 😀 ñ", "data": "<document>ä</document>".encode()},
        {"snapshot": "empty", "data": b""},
        {"snapshot": "binary", "data": bytes(range(256)) * 4},
        {"snapshot": "one-mib", "data": os.urandom(MiB)},
    ]
    backend.put(SNAPSHOTS, rows)
    for row in rows:
        assert backend.get(SNAPSHOTS, {"snapshot": row["snapshot"]}) == row


def test_integer_values(backend: Backend) -> None:
    files = [
        {"md5": "A" * 32, "digest": "a" * 64, "size": 2**32 + 1, "pieces": 2**31 - 1},
        {"md5": "B" * 32, "digest": "b" * 64, "size": 2**63 - 1, "pieces": 0},
        {"md5": "C" * 32, "digest": "c" * 64, "size": 0, "pieces": -1},
    ]
    backend.put(ARCHIVE_FILES, files)
    for row in files:
        assert backend.get(ARCHIVE_FILES, {"md5": row["md5"]}) == row
    pieces = [{"md5": "D" * 32, "sort_id": n, "data_id": str(n)} for n in (2**31 - 1, -7, 0)]
    backend.put(DOCUMENTS, pieces)
    found = list(backend.scan(DOCUMENTS, {"md5": "D" * 32}))
    assert [row["sort_id"] for row in found] == [-7, 0, 2**31 - 1]


def test_date_values(backend: Backend) -> None:
    days = [datetime.date(1970, 1, 1), datetime.date(2024, 2, 29), datetime.date(9999, 12, 31)]
    rows = [{"modified": day, "snapshot": f"s-{day.isoformat()}"} for day in days]
    backend.put(SNAPSHOTS_BY_MODIFIED, rows)
    for row in rows:
        found = list(backend.scan(SNAPSHOTS_BY_MODIFIED, {"modified": row["modified"]}))
        assert found == [row]
        assert type(found[0]["modified"]) is datetime.date


@pytest.mark.parametrize("table", TABLES, ids=_ids(TABLES))
def test_upsert_is_idempotent(backend: Backend, table: Table) -> None:
    row = make_row(table, 1, 1)
    backend.put(table, [row])
    backend.put(table, [row, row])
    assert list(backend.scan(table, partition_of(table, row))) == [row]
    if table.value_columns:
        changed = {
            **row,
            **{k: v for k, v in make_row(table, 2, 2).items() if k in table.value_columns},
        }
        backend.put(table, [changed])
        assert backend.get(table, key_of(table, row)) == changed
        assert list(backend.scan(table, partition_of(table, row))) == [changed]


# --- partition scans --------------------------------------------------------------------


@pytest.mark.parametrize("table", CLUSTERED, ids=_ids(CLUSTERED))
def test_partition_scan_orders_and_bounds(backend: Backend, table: Table) -> None:
    ours = [make_row(table, 0, n) for n in range(20)]
    others = [make_row(table, 1, n) for n in range(5)]
    backend.put(table, reversed(ours + others))
    partition = partition_of(table, ours[0])
    after = clustering_of(table, ours[5])

    assert list(backend.scan(table, partition)) == ours
    assert list(backend.scan(table, partition, descending=True)) == ours[::-1]
    assert list(backend.scan(table, partition, start_after=after)) == ours[6:]
    assert (
        list(backend.scan(table, partition, start_after=after, descending=True)) == (ours[:5][::-1])
    )
    assert list(backend.scan(table, partition, limit=3)) == ours[:3]
    assert list(backend.scan(table, partition, descending=True, limit=3)) == ours[-3:][::-1]
    assert list(backend.scan(table, partition, start_after=after, limit=2)) == ours[6:8]
    assert list(backend.scan(table, partition, limit=0)) == []
    last = clustering_of(table, ours[-1])
    assert list(backend.scan(table, partition, start_after=last)) == []
    assert list(backend.scan(table, partition_of(table, others[0]))) == others
    assert list(backend.scan(table, partition_of(table, make_row(table, 9, 0)))) == []


def test_start_after_a_key_that_is_not_stored(backend: Backend) -> None:
    rows = [{"md5": "E" * 32, "sort_id": n, "data_id": str(n)} for n in range(0, 20, 2)]
    backend.put(DOCUMENTS, rows)
    partition = {"md5": "E" * 32}
    found = backend.scan(DOCUMENTS, partition, start_after={"sort_id": 7})
    assert [row["sort_id"] for row in found] == [8, 10, 12, 14, 16, 18]
    found = backend.scan(DOCUMENTS, partition, start_after={"sort_id": 7}, descending=True)
    assert [row["sort_id"] for row in found] == [6, 4, 2, 0]


@pytest.mark.parametrize("descending", [False, True], ids=["asc", "desc"])
@pytest.mark.parametrize("table", CLUSTERED, ids=_ids(CLUSTERED))
def test_paging_a_partition_gives_every_row_once(
    backend: Backend, table: Table, descending: bool
) -> None:
    rows = [make_row(table, 3, n) for n in range(1000)]
    backend.put(table, iter(rows))
    partition = partition_of(table, rows[0])
    seen: list[Row] = []
    after: Row | None = None
    while True:
        page = list(
            backend.scan(table, partition, start_after=after, descending=descending, limit=100)
        )
        if not page:
            break
        assert len(page) == 100
        seen.extend(page)
        after = clustering_of(table, page[-1])
    assert seen == (rows[::-1] if descending else rows)


def test_partition_scan_streams_past_one_page_with_projection(backend: Backend) -> None:
    rows = [{"md5": "F" * 32, "sort_id": n, "data_id": f"d{n}"} for n in range(2500)]
    backend.put(DOCUMENTS, iter(rows))
    found = list(backend.scan(DOCUMENTS, {"md5": "F" * 32}, columns=["data_id"]))
    assert found == [{"data_id": f"d{n}"} for n in range(2500)]
    found = list(backend.scan(DOCUMENTS, {"md5": "F" * 32}, descending=True, limit=1200))
    assert found == rows[::-1][:1200]


@pytest.mark.parametrize("wrapped", [False, True], ids=["store", "wrapper"])
def test_scan_arguments_every_store_refuses_alike(backend: Backend, wrapped: bool) -> None:
    """The checks of ``Backend.scan`` itself: the same error on every store, and through
    a wrapper that hands the call on."""
    store = DelegatingBackend(backend) if wrapped else backend
    with pytest.raises(ValueError, match=r"^limit must not be negative: -1$"):
        store.scan(DOCUMENTS, {"md5": "M"}, limit=-1)
    only = r"^start_after and descending apply to a partition scan only$"
    with pytest.raises(ValueError, match=only):
        store.scan(DOCUMENTS, descending=True)
    with pytest.raises(ValueError, match=only):
        store.scan(DOCUMENTS, start_after={"sort_id": 1})
    with pytest.raises(ValueError, match="md5"):
        store.scan(DOCUMENTS, {"sort_id": 1}, limit=0)
    assert list(store.scan(DOCUMENTS, {"md5": "M"}, limit=0)) == []


# --- whole-table scans ------------------------------------------------------------------


@pytest.mark.parametrize("table", [DOCUMENTS, ARCHIVE_FILES], ids=["clustered", "unclustered"])
def test_whole_table_scan(backend: Backend, table: Table) -> None:
    rows = rows_of(table, 30, 100)
    assert len(rows) == 3000
    backend.put(table, iter(rows))
    found = list(backend.scan(table))
    assert len(found) == len(rows)
    key = _sort_key
    assert sorted(found, key=lambda row: key(table, row)) == sorted(
        rows, key=lambda row: key(table, row)
    )
    assert len(list(backend.scan(table, limit=1234))) == 1234
    names = list(table.primary_key)
    keys = list(backend.scan(table, columns=names))
    assert all(set(row) == set(names) for row in keys)
    assert len({tuple(row.values()) for row in keys}) == len(rows)


def test_whole_table_scan_keeps_each_partition_together(backend: Backend) -> None:
    rows = rows_of(DOCUMENTS, 20, 150)
    backend.put(DOCUMENTS, iter(rows))
    order = [row["md5"] for row in backend.scan(DOCUMENTS)]
    runs = [md5 for i, md5 in enumerate(order) if i == 0 or order[i - 1] != md5]
    assert len(runs) == len(set(runs)) == 20


def test_whole_table_scan_of_an_empty_table(backend: Backend) -> None:
    assert list(backend.scan(SNAPSHOTS)) == []


# --- delete and missing rows ------------------------------------------------------------


@pytest.mark.parametrize("table", CLUSTERED, ids=_ids(CLUSTERED))
def test_delete_row_and_partition(backend: Backend, table: Table) -> None:
    ours = [make_row(table, 0, n) for n in range(10)]
    others = [make_row(table, 1, n) for n in range(3)]
    backend.put(table, ours + others)
    partition = partition_of(table, ours[0])

    backend.delete(table, key_of(table, ours[4]))
    assert backend.get(table, key_of(table, ours[4])) is None
    assert list(backend.scan(table, partition)) == ours[:4] + ours[5:]

    backend.delete(table, partition)
    assert list(backend.scan(table, partition)) == []
    assert backend.get(table, key_of(table, ours[0])) is None
    assert list(backend.scan(table, partition_of(table, others[0]))) == others


@pytest.mark.parametrize("table", TABLES, ids=_ids(TABLES))
def test_missing_rows(backend: Backend, table: Table) -> None:
    stored = make_row(table, 1, 1)
    backend.put(table, [stored])
    missing = make_row(table, 2, 2)
    assert backend.get(table, key_of(table, missing)) is None
    backend.delete(table, key_of(table, missing))
    backend.delete(table, partition_of(table, missing))
    assert list(backend.scan(table, partition_of(table, missing))) == []
    assert backend.get(table, key_of(table, stored)) == stored


def test_delete_a_partition_without_clustering_key(backend: Backend) -> None:
    backend.put(SNAPSHOTS, [{"snapshot": "a", "data": b"1"}, {"snapshot": "b", "data": b"2"}])
    backend.delete(SNAPSHOTS, {"snapshot": "a"})
    assert backend.get(SNAPSHOTS, {"snapshot": "a"}) is None
    assert backend.get(SNAPSHOTS, {"snapshot": "b"}) == {"snapshot": "b", "data": b"2"}


# --- compare and set --------------------------------------------------------------------


def test_replace_sets_a_cell_only_while_it_holds_what_was_read(backend: Backend) -> None:
    big = os.urandom(300) * 40  # packed on the embedded store: compared as read
    backend.put(SNAPSHOTS, [{"snapshot": "a", "data": big}])
    key = {"snapshot": "a"}
    assert backend.replace(SNAPSHOTS, key, "data", b"something else", b"new") is False
    assert backend.get(SNAPSHOTS, key) == {"snapshot": "a", "data": big}
    assert backend.replace(SNAPSHOTS, key, "data", big, b"new") is True
    assert backend.get(SNAPSHOTS, key) == {"snapshot": "a", "data": b"new"}
    assert backend.replace(SNAPSHOTS, key, "data", big, b"newer") is False  # read before
    assert backend.get(SNAPSHOTS, key) == {"snapshot": "a", "data": b"new"}


def test_replace_never_brings_a_deleted_row_back(backend: Backend) -> None:
    backend.put(SNAPSHOTS, [{"snapshot": "a", "data": b"old"}])
    backend.delete(SNAPSHOTS, {"snapshot": "a"})
    assert backend.replace(SNAPSHOTS, {"snapshot": "a"}, "data", b"old", b"new") is False
    assert backend.get(SNAPSHOTS, {"snapshot": "a"}) is None
    assert backend.replace(SNAPSHOTS, {"snapshot": "never"}, "data", b"", b"new") is False
    assert list(backend.scan(SNAPSHOTS)) == []


def test_put_if_absent_writes_once_and_answers_what_is_there(backend: Backend) -> None:
    first = {"bucket": 0, "idx": 7, "entry": "first", "hash": b"\x01" * 32}
    assert backend.put_if_absent(ARCHIVE_LEDGER_ENTRIES, first) is None
    second = {**first, "entry": "second", "hash": b"\x02" * 32}
    assert backend.put_if_absent(ARCHIVE_LEDGER_ENTRIES, second) == first  # left as it was
    assert backend.get(ARCHIVE_LEDGER_ENTRIES, {"bucket": 0, "idx": 7}) == first
    assert backend.put_if_absent(ARCHIVE_LEDGER_ENTRIES, first) == first  # a retry finds itself
    other = {**second, "idx": 8}
    assert backend.put_if_absent(ARCHIVE_LEDGER_ENTRIES, other) is None
    assert [row["entry"] for row in backend.scan(ARCHIVE_LEDGER_ENTRIES, {"bucket": 0})] == [
        "first",
        "second",
    ]


def test_put_if_absent_of_many_writers_lets_one_win(backend: Backend) -> None:
    """Threads racing for one key: exactly one writes, every other is told what it wrote."""
    from concurrent.futures import ThreadPoolExecutor

    rows = [{"name": "head", "state": f"writer {n}"} for n in range(8)]
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda row: backend.put_if_absent(ARCHIVE_LEDGER_HEAD, row), rows))
    winners = [row for row, answer in zip(rows, answers, strict=True) if answer is None]
    assert len(winners) == 1
    assert all(answer in (None, winners[0]) for answer in answers)
    assert backend.get(ARCHIVE_LEDGER_HEAD, {"name": "head"}) == winners[0]


def test_put_soon_has_written_when_waited_for(backend: Backend) -> None:
    rows = [
        {"slot": 5, "subject": f"s{n}", "entry_key": f"k{n}", "entry": f"e{n}"} for n in range(3)
    ]
    waits = [backend.put_soon(ARCHIVE_LEDGER_QUEUE, [row]) for row in rows]
    for wait in waits:
        wait()
    found = list(backend.scan(ARCHIVE_LEDGER_QUEUE, {"slot": 5}))
    assert [row["entry"] for row in found] == ["e0", "e1", "e2"]


def test_replace_takes_a_value_column_only(backend: Backend) -> None:
    with pytest.raises(ValueError):
        backend.replace(SNAPSHOTS, {"snapshot": "a"}, "snapshot", "a", "b")


# --- projection -------------------------------------------------------------------------


def test_projection(backend: Backend) -> None:
    row = {"md5": "A" * 32, "digest": "f" * 64, "size": 2**33, "pieces": 9}
    backend.put(ARCHIVE_FILES, [row])
    key = {"md5": row["md5"]}
    assert backend.get(ARCHIVE_FILES, key, columns=["size"]) == {"size": 2**33}
    assert backend.get(ARCHIVE_FILES, key, columns=["pieces", "md5"]) == {
        "pieces": 9,
        "md5": row["md5"],
    }
    assert list(backend.scan(ARCHIVE_FILES, key, columns=["digest"])) == [{"digest": "f" * 64}]
    assert list(backend.scan(ARCHIVE_FILES, columns=["size"])) == [{"size": 2**33}]
    uniq = [{"uniqueid": "u", "snapshot": f"u-{n:013d}"} for n in range(5)]
    backend.put(SNAPSHOTS_BY_UNIQUEID, uniq)
    found = backend.scan(
        SNAPSHOTS_BY_UNIQUEID, {"uniqueid": "u"}, columns=["snapshot"], descending=True
    )
    assert list(found) == [{"snapshot": row["snapshot"]} for row in uniq[::-1]]


# --- large rows, bounded memory ---------------------------------------------------------


def _pieces(count: int) -> Iterator[Row]:
    """``count`` rows of 1 MiB each, made one at a time."""
    for i in range(count):
        yield {"data_id": f"{i:064x}", "data": i.to_bytes(4, "big") * (MiB // 4)}


def test_lazy_large_rows_with_bounded_memory(backend: Backend) -> None:
    count = 300
    tracemalloc.start()
    try:
        written = backend.put(DOCUMENTS_DATA, _pieces(count))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert written == count
    assert peak < 100 * MiB, f"put held {peak / MiB:.0f} MiB for {count} MiB of rows"

    for i in (0, 150, count - 1):
        found = backend.get(DOCUMENTS_DATA, {"data_id": f"{i:064x}"})
        assert found is not None
        assert found["data"] == i.to_bytes(4, "big") * (MiB // 4)

    tracemalloc.start()
    try:
        total = sum(len(row["data"]) for row in backend.scan(DOCUMENTS_DATA))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert total == count * MiB
    assert peak < 100 * MiB, f"scan held {peak / MiB:.0f} MiB"
    ids = {row["data_id"] for row in backend.scan(DOCUMENTS_DATA, columns=["data_id"])}
    assert ids == {f"{i:064x}" for i in range(count)}


def _kinds_of_pieces() -> dict[str, bytes]:
    """Pieces that compress well, not at all, partly, or look like a zstd frame."""
    text = b"".join(b"line %06d of an invoice: amount due, approved\n" % n for n in range(25_000))
    noise = os.urandom(MiB)
    return {
        "empty": b"",
        "tiny": b"x",
        "text": text,
        "noise": noise,
        "half": text[: MiB // 2] + noise[: MiB // 2],
        "zstd-magic": b"\x28\xb5\x2f\xfd" + text[:4096],
        "just-below-min": b"a" * 255,
    }


def test_pieces_read_back_as_put_whatever_they_compress_to(backend: Backend) -> None:
    """The embedded store keeps compressible pieces as zstd frames (``storage/packing.py``);
    no reader sees that, through a get, a scan or a projection."""
    pieces = _kinds_of_pieces()
    rows = [{"data_id": name, "data": data} for name, data in pieces.items()]
    backend.put(DOCUMENTS_DATA, rows)
    for name, data in pieces.items():
        assert backend.get(DOCUMENTS_DATA, {"data_id": name}) == {"data_id": name, "data": data}
        assert backend.get(DOCUMENTS_DATA, {"data_id": name}, ["data"]) == {"data": data}
        assert backend.get(DOCUMENTS_DATA, {"data_id": name}, ["data_id"]) == {"data_id": name}
    assert {row["data_id"]: row["data"] for row in backend.scan(DOCUMENTS_DATA)} == pieces
    scanned = backend.scan(DOCUMENTS_DATA, {"data_id": "text"}, columns=["data"])
    assert list(scanned) == [{"data": pieces["text"]}]
    backend.put(DOCUMENTS_DATA, rows)  # again: idempotent, still the same bytes
    assert {row["data_id"]: row["data"] for row in backend.scan(DOCUMENTS_DATA)} == pieces


def test_describe(backend: Backend) -> None:
    info = backend.describe()
    assert isinstance(info.get("kind"), str)
    assert info["kind"] == backend.name


def test_a_copy_of_the_store_is_the_embedded_stores_alone(backend: Backend, tmp_path: Path) -> None:
    target = tmp_path / "copy"
    if backend.name == "cassandra":
        with pytest.raises(ConfigError, match="nodetool snapshot"):
            backend.copy_to(target)
        assert not target.exists()
        return
    backend.put(SNAPSHOTS, [{"snapshot": "a", "data": b"x"}])
    copied = backend.copy_to(target)
    assert copied == target / "archive.db" and copied.is_file()

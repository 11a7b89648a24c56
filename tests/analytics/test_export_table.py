"""Export for analysts: typed columns, read back with pyarrow and the csv module."""

from __future__ import annotations

import csv
import datetime as dt
import io
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from analytics.conftest import CountingBackend
from analytics.generated_archive import START, Planned
from imixs_archive.analytics.columns import ColumnSpec, parse_items
from imixs_archive.analytics.export_table import ExportSpec, ExportSummary, export_table
from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.conventions import modified_day
from imixs_archive.document.model import Long
from imixs_archive.errors import ConfigError
from support.snapshots import BASE_MILLIS, CET, ORIGIN, make_snapshot

UTC = dt.UTC


def typed_snapshots(archive: Archive, count: int = 7) -> list[str]:
    ids = []
    for step in range(count):
        doc = make_snapshot(
            step,
            amount=1.5 * step,
            count=Long(step),
            approved=step % 2 == 0,
            due=dt.datetime(2024, 1, 1 + step, 12, tzinfo=CET),
            namteam=["anna", "bob"][: 1 + step % 2],
            price=Decimal("10.05"),
        )
        archive.store(doc)
        ids.append(str(doc["$uniqueid"][0]))
    return ids


def run(archive: Archive, tmp_path: Path, spec: ExportSpec) -> tuple[Path, ExportSummary]:
    target = tmp_path / f"out.{spec.format}"
    with target.open("wb") as out:
        summary = export_table(archive, spec, out)
    return target, summary


ITEMS = "subject,$taskid,amount,count,approved,due,namteam,price,missing"


def test_parquet_has_typed_columns_and_one_row_group_per_batch(
    archive: Archive, tmp_path: Path
) -> None:
    ids = typed_snapshots(archive)
    spec = ExportSpec(parse_items(ITEMS), batch_rows=3)
    target, summary = run(archive, tmp_path, spec)
    table = pq.read_table(target)
    assert pq.ParquetFile(target).metadata.num_row_groups == 3
    assert table.schema.field("snapshot").type == pa.string()
    assert table.schema.field("modified").type == pa.timestamp("us", tz="UTC")
    assert table.schema.field("$taskid").type == pa.int64()
    assert table.schema.field("amount").type == pa.float64()
    assert table.schema.field("count").type == pa.int64()
    assert table.schema.field("approved").type == pa.bool_()
    assert table.schema.field("due").type == pa.timestamp("us", tz="UTC")
    assert table.schema.field("namteam").type == pa.list_(pa.string())
    assert table.schema.field("price").type == pa.string()
    assert table.schema.field("missing").type == pa.string()
    rows = sorted(table.to_pylist(), key=lambda r: r["snapshot"])
    assert [r["snapshot"] for r in rows] == sorted(ids)
    for step, row in enumerate(rows):
        millis = BASE_MILLIS + step * 60_000
        assert row["uniqueid"] == ORIGIN
        assert row["modified"] == dt.datetime.fromtimestamp(millis / 1000, UTC)
        assert row["subject"] == f"step {step}"
        assert row["$taskid"] == 1000 + step
        assert row["amount"] == 1.5 * step and row["count"] == step
        assert row["approved"] is (step % 2 == 0)
        assert row["due"] == dt.datetime(2024, 1, 1 + step, 11, tzinfo=UTC)
        assert row["namteam"] == ["anna", "bob"][: 1 + step % 2]
        assert row["price"] == "10.05" and row["missing"] is None
    assert summary.rows == 7 and summary.batches == 3 and not summary.warnings


def test_csv_cells(archive: Archive, tmp_path: Path) -> None:
    typed_snapshots(archive, 2)
    spec = ExportSpec(parse_items("amount,approved,due,namteam"), format="csv")
    target, _summary = run(archive, tmp_path, spec)
    rows = list(csv.DictReader(io.StringIO(target.read_text("utf-8"))))
    assert list(rows[0]) == [
        "snapshot",
        "uniqueid",
        "modified",
        "amount",
        "approved",
        "due",
        "namteam",
    ]
    by_amount = {row["amount"]: row for row in rows}
    assert by_amount["0.0"]["approved"] == "true"
    assert by_amount["0.0"]["due"] == "2024-01-01T11:00:00.000Z"
    assert by_amount["0.0"]["namteam"] == '["anna"]'
    assert by_amount["1.5"]["namteam"] == '["anna", "bob"]'
    assert by_amount["1.5"]["modified"].endswith("Z")


def test_declared_types_and_values_that_do_not_fit(archive: Archive, tmp_path: Path) -> None:
    for step in range(4):
        archive.store(make_snapshot(step, code=step if step < 2 else f"x{step}"))
    # A day range reads in (day, snapshot id) order on every backend (a whole-store export
    # comes in the store's order: token order on Cassandra), so the first batch is known.
    day = modified_day(make_snapshot(0))
    spec = ExportSpec(
        [ColumnSpec("code"), ColumnSpec("subject", "str", True)],
        batch_rows=2,
        format="parquet",
        first=day,
        last=day,
    )
    target, summary = run(archive, tmp_path, spec)
    table = pq.read_table(target)
    assert table.schema.field("code").type == pa.int64()  # inferred from the first batch
    assert table.schema.field("subject").type == pa.list_(pa.string())
    assert sorted(table.column("code").to_pylist(), key=str) == [0, 1, None, None]
    assert summary.warnings == {"code: str value in a int column written as null": 2}


def test_by_day_range_and_newest_of_each_instance(
    generated: Archive, planned: list[Planned], tmp_path: Path
) -> None:
    first, last = START + dt.timedelta(days=1), START + dt.timedelta(days=2)
    spec = ExportSpec(parse_items("$workflowgroup"), first=first, last=last, format="csv")
    target, _ = run(generated, tmp_path, spec)
    rows = list(csv.DictReader(io.StringIO(target.read_text("utf-8"))))
    in_range = sorted((p for p in planned if first <= p.day <= last), key=lambda p: p.day)
    assert [r["snapshot"] for r in rows] == [
        p.snapshot_id for p in sorted(in_range, key=lambda p: (p.day, p.snapshot_id))
    ]

    newest = ExportSpec(parse_items("$workflowstatus"), newest_only=True, format="csv")
    target, _ = run(generated, tmp_path, newest)
    rows = list(csv.DictReader(io.StringIO(target.read_text("utf-8"))))
    last_steps = {p.snapshot_id for p in planned if p.step == p.steps - 1}
    assert {r["snapshot"] for r in rows} == last_steps and len(rows) == len(last_steps)

    ranged = ExportSpec(parse_items("subject"), first=first, last=first, newest_only=True)
    target, _ = run(generated, tmp_path, ranged)
    got = set(pq.read_table(target).column("snapshot").to_pylist())
    want: dict[str, Planned] = {}
    for p in sorted(planned, key=lambda p: p.millis):
        if p.day == first:
            want[p.origin] = p
    assert got == {p.snapshot_id for p in want.values()}


def test_one_bound_filters_a_pass_over_every_snapshot(
    generated: Archive, planned: list[Planned], tmp_path: Path
) -> None:
    since = START + dt.timedelta(days=5)
    _target, summary = run(generated, tmp_path, ExportSpec(parse_items("subject"), first=since))
    assert summary.rows == sum(1 for p in planned if p.day >= since)


def test_a_range_of_centuries_reads_the_days_the_archive_holds(
    counting: CountingBackend, tmp_path: Path
) -> None:
    """A generated call of the export API asked for 1000-2999 and walked every calendar
    day (730,000 scans; it ran for minutes past its client and hung test_fuzz.py)."""
    with Archive(counting) as archive:
        archive.store(make_snapshot(0, modified=dt.datetime(1990, 1, 2, 8, tzinfo=UTC)))
        archive.store(make_snapshot(1, modified=dt.datetime(2023, 6, 29, 8, tzinfo=UTC)))
        counting.reset()
        first, last = dt.date(1000, 1, 1), dt.date(2999, 12, 31)
        spec = ExportSpec(parse_items("subject"), first=first, last=last, format="csv")
        _target, summary = run(archive, tmp_path, spec)
    assert summary.rows == 2
    assert counting.scans["snapshots_by_modified"] <= 4  # the two days (and their edges)


@pytest.mark.parametrize("text", ["", "a,a", "a:integer", ":int", "snapshot"])
def test_bad_column_specs(archive: Archive, tmp_path: Path, text: str) -> None:
    with pytest.raises(ConfigError):
        run(archive, tmp_path, ExportSpec(parse_items(text)))


def test_spec_syntax() -> None:
    assert parse_items(" A , b:INT, c:str[] ,") == [
        ColumnSpec("a"),
        ColumnSpec("b", "int", False),
        ColumnSpec("c", "str", True),
    ]


class Spy(io.BytesIO):
    """Records how many snapshots had been read when each write came."""

    def __init__(self, counting: CountingBackend) -> None:
        super().__init__()
        self.counting = counting
        self.reads_at_write: list[int] = []

    def write(self, data: bytes) -> int:  # type: ignore[override]
        self.reads_at_write.append(self.counting.gets["snapshots"])
        return super().write(data)


def test_rows_are_streamed_not_collected(
    generated: Archive, counting: CountingBackend, planned: list[Planned]
) -> None:
    spy = Spy(counting)
    spec = ExportSpec(
        parse_items("subject"),
        first=START,
        last=START + dt.timedelta(days=7),
        format="csv",
        batch_rows=2,
        workers=2,
    )
    summary = export_table(generated, spec, spy)
    assert summary.rows == len(planned) and summary.batches == 25
    # the first rows went out when a batch plus the read-ahead window (4 x workers) was read
    assert spy.reads_at_write[0] <= 2 + 8 + 2
    assert counting.gets["snapshots"] == len(planned)

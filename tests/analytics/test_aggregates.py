"""Day aggregates over a generated archive whose true figures are known."""

from __future__ import annotations

import datetime as dt
import hashlib

import pytest

from analytics.conftest import CountingBackend
from analytics.generated_archive import START, Planned, expected_days
from imixs_archive.analytics.aggregates import (
    aggregate_days,
    compute_cells,
    compute_day,
)
from imixs_archive.analytics.archive_figures import RECENT_DAYS, archive_figures
from imixs_archive.analytics.day_store import is_final, store_day
from imixs_archive.archive.snapshots import Archive
from imixs_archive.storage.model import (
    ARCHIVE_DAY_AGGREGATES,
    ARCHIVE_MONTH_FIGURES,
    ARCHIVE_SNAPSHOT_FACTS,
    SNAPSHOTS,
)
from support.snapshots import make_snapshot

LAST = START + dt.timedelta(days=6)
LATER = dt.datetime(2024, 1, 1, 12, tzinfo=dt.UTC)
SNAPSHOT_READS = ("snapshots_by_modified",)


def as_expected(report_days: list) -> dict[dt.date, dict]:  # type: ignore[type-arg]
    result = {}
    for figures in report_days:
        if figures.total.snapshots == 0:
            continue
        by = {
            dimension: {value: m.as_list() for value, m in values.items()}
            for dimension, values in figures.by.items()
        }
        result[figures.day] = {"total": figures.total.as_list(), "by": by}
    return result


def test_figures_match_the_plan(generated: Archive, planned: list[Planned]) -> None:
    report = aggregate_days(
        generated, START - dt.timedelta(days=1), LAST + dt.timedelta(days=1), now=LATER
    )
    assert as_expected(report.days) == expected_days(planned)
    assert report.count("computed") == 9 and report.count("stored") == 0
    # every new file counted once in the whole range: each instance's two a.pdf
    # versions (one version when it has fewer than three steps) and the template once
    totals = report.rows(per="total")
    assert len(totals) == 1
    owns = {p.origin: p.steps for p in planned}
    assert totals[0].measures.new_files == sum(2 if s >= 3 else 1 for s in owns.values()) + 1
    assert totals[0].measures.snapshots == len(planned)


def test_a_stored_day_is_read_not_recomputed(
    generated: Archive, counting: CountingBackend, planned: list[Planned]
) -> None:
    first = aggregate_days(generated, START, LAST, now=LATER)
    assert counting.scans["snapshots_by_modified"] == 31  # its month, counted whole once
    counting.reset()
    again = aggregate_days(generated, START, LAST, now=LATER)
    assert counting.scans["snapshots_by_modified"] == 0
    assert counting.gets["snapshots"] == 0
    assert counting.scans["archive_day_aggregates"] == 0  # the month's kept figures
    assert counting.gets["archive_month_figures"] == 1  # its month, one row
    assert [d.source for d in again.days] == ["stored"] * 7
    assert as_expected(again.days) == as_expected(first.days) == expected_days(planned)
    counting.reset()
    forced = aggregate_days(generated, START, LAST, now=LATER, recompute=True)
    assert counting.scans["snapshots_by_modified"] == 7
    assert as_expected(forced.days) == expected_days(planned)


def test_days_within_the_grace_period_are_live(
    generated: Archive, counting: CountingBackend, backend: object
) -> None:
    now = dt.datetime.combine(START + dt.timedelta(days=5), dt.time(9), dt.UTC)
    report = aggregate_days(generated, START, LAST, now=now)
    # days after today are left out; today and yesterday are live; the rest stored
    assert [d.day for d in report.days][-1] == START + dt.timedelta(days=5)
    assert [d.source for d in report.days] == ["computed"] * 4 + ["live"] * 2
    stored = [row["day"] for row in counting.inner.scan(ARCHIVE_DAY_AGGREGATES, {"year": 2023})]
    assert stored == [START + dt.timedelta(days=n) for n in range(4)]
    counting.reset()
    aggregate_days(generated, START, LAST, now=now)
    assert counting.scans["snapshots_by_modified"] == 2  # only the live days


def test_grace_rule() -> None:
    today = dt.date(2024, 5, 10)
    assert not is_final(today, today)
    assert not is_final(dt.date(2024, 5, 9), today)
    assert is_final(dt.date(2024, 5, 8), today)
    assert not is_final(dt.date(2024, 5, 8), today, grace_days=2)
    assert is_final(dt.date(2024, 5, 9), today, grace_days=0)


def test_deleting_a_snapshot_invalidates_its_day(
    generated: Archive, counting: CountingBackend, planned: list[Planned]
) -> None:
    aggregate_days(generated, START, LAST, now=LATER)
    # the last step of an instance with four steps: its files were carried before
    doomed = next(p for p in planned if p.steps == 4 and p.step == 3)
    day = doomed.day
    key = {"year": day.year, "day": day}
    before = counting.inner.get(ARCHIVE_DAY_AGGREGATES, key)
    generated.delete(doomed.snapshot_id)
    assert counting.inner.get(ARCHIVE_DAY_AGGREGATES, key) == before  # not the archive's
    counting.reset()
    report = aggregate_days(generated, START, LAST, now=LATER)
    assert counting.scans["snapshots_by_modified"] == 1  # only that day is recomputed
    remaining = [p for p in planned if p is not doomed]
    assert as_expected(report.days) == expected_days(remaining)
    assert {d.day: d.source for d in report.days}[day] == "computed"


def test_rollups_by_dimension_and_period(generated: Archive, planned: list[Planned]) -> None:
    report = aggregate_days(generated, START, LAST, now=LATER)
    by_group = {row.value: row.measures for row in report.rows("group", "total")}
    for group in ("Invoice", "Contract", "Ticket"):
        mine = [p for p in planned if p.group == group]
        assert by_group[group].snapshots == len(mine)
        # instance-days: distinct instances per day, summed
        assert by_group[group].instances == len({(p.day, p.origin) for p in mine})
    months = report.rows(per="month")
    assert [row.period for row in months] == ["2023-03"]
    per_task = report.rows("task", "year")
    assert {row.value for row in per_task} == {"1000", "1010", "1020", "1030"}
    data = report.to_json("status", "month")
    assert data["rows"][0]["value"] == "Open" and "instance_days" in data["rows"][0]
    assert data["days"] == {"stored": 0, "computed": 7, "live": 0}
    with pytest.raises(ValueError, match="unknown dimension"):
        report.rows("colour")


def test_a_range_over_years_reads_one_partition_per_year(
    generated: Archive, counting: CountingBackend
) -> None:
    aggregate_days(generated, dt.date(2021, 12, 30), dt.date(2023, 3, 2), now=LATER)
    counting.reset()
    report = aggregate_days(generated, dt.date(2021, 12, 30), dt.date(2023, 3, 2), now=LATER)
    assert counting.gets["archive_month_figures"] == 16  # 16 months kept, a row each
    assert counting.scans["archive_day_changes"] == 3  # the stamps: one partition a year
    assert counting.scans["archive_day_aggregates"] == 0
    assert counting.scans["snapshots_by_modified"] == 0
    assert len(report.days) == 428 and report.count("stored") == 428


def test_the_same_content_is_one_new_file(archive: Archive) -> None:
    pdf = b"%PDF shared " * 100
    origin_b = "11111111-2222-4333-8444-555555555555"
    archive.store(make_snapshot(0, files={"a.pdf": pdf, "again.pdf": pdf}))
    archive.store(make_snapshot(1, origin=origin_b, files={"b.pdf": pdf}))
    day = dt.datetime.fromtimestamp(1_700_000_000, dt.UTC).date()
    figures = compute_day(archive, day)
    assert figures.total.as_list() == [2, 2, 1, len(pdf)]
    md5 = hashlib.md5(pdf).hexdigest().upper()
    assert archive.files.exists(md5)


def test_a_row_of_another_format_version_is_recomputed(generated: Archive) -> None:
    store_day(generated, compute_cells(generated, START))
    row = generated.backend.get(ARCHIVE_DAY_AGGREGATES, {"year": 2023, "day": START})
    assert row is not None
    generated.backend.put(ARCHIVE_DAY_AGGREGATES, [{**row, "version": 999}])
    report = aggregate_days(generated, START, START, now=LATER)
    assert report.days[0].source == "computed"


def test_a_late_snapshot_invalidates_its_stored_day(archive: Archive) -> None:
    day = dt.datetime(2022, 5, 3, 10, 0, tzinfo=dt.UTC)
    archive.store(make_snapshot(0, modified=day))
    now = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    first = aggregate_days(archive, day.date(), day.date(), now=now)
    assert first.count("computed") == 1 and first.rows(per="total")[0].measures.snapshots == 1
    assert aggregate_days(archive, day.date(), day.date(), now=now).count("stored") == 1
    archive.store(make_snapshot(1, modified=day + dt.timedelta(hours=1)))  # arrives late
    again = aggregate_days(archive, day.date(), day.date(), now=now)
    assert again.count("computed") == 1 and again.rows(per="total")[0].measures.snapshots == 2


def _one_day_report(archive: Archive, day: dt.datetime) -> tuple[str, int]:
    report = aggregate_days(archive, day.date(), day.date(), now=LATER)
    rows = report.rows(per="total")
    return report.days[0].source, rows[0].measures.snapshots if rows else 0


def test_a_snapshot_stored_while_its_day_is_counted_is_counted_next_time(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process stores a snapshot of the day after the day's ids were read and
    before its figures are stored: the stored figures miss it, and are not used again."""
    day = dt.datetime(2022, 5, 3, 10, 0, tzinfo=dt.UTC)
    archive.store(make_snapshot(0, modified=day))
    listed = archive.days.snapshot_ids

    def list_then_store(on: dt.date) -> list[str]:
        ids = listed(on)
        if on == day.date():  # right after the day's ids were read
            archive.store(make_snapshot(1, modified=day + dt.timedelta(hours=1)))
        return ids

    monkeypatch.setattr(archive.days, "snapshot_ids", list_then_store)
    assert _one_day_report(archive, day) == ("computed", 1)
    monkeypatch.undo()
    assert _one_day_report(archive, day) == ("computed", 2)
    assert _one_day_report(archive, day) == ("stored", 2)


def test_a_snapshot_deleted_while_its_day_is_counted_is_left_out_next_time(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    day = dt.datetime(2022, 5, 3, 10, 0, tzinfo=dt.UTC)
    archive.store(make_snapshot(0, modified=day))
    doomed = make_snapshot(1, modified=day + dt.timedelta(hours=1))
    archive.store(doomed)
    listed = archive.days.snapshot_ids

    def list_then_delete(utc_day: dt.date) -> list[str]:
        ids = listed(utc_day)
        archive.delete(doomed["$uniqueid"][0])  # after its id was read, before its fact
        return ids

    monkeypatch.setattr(archive.days, "snapshot_ids", list_then_delete)
    assert _one_day_report(archive, day) == ("computed", 1)  # its fact went: not counted
    monkeypatch.undo()
    assert _one_day_report(archive, day) == ("computed", 1)  # not kept: counted again
    assert _one_day_report(archive, day) == ("stored", 1)


def test_figures_that_met_a_half_written_snapshot_are_not_stored(archive: Archive) -> None:
    day = dt.datetime(2022, 5, 3, 10, 0, tzinfo=dt.UTC)
    archive.store(make_snapshot(0, modified=day))
    half = make_snapshot(1, modified=day + dt.timedelta(hours=1))
    archive.store(half)
    # a writer that died before the snapshot's row (its fact comes after the row)
    archive.backend.delete(SNAPSHOTS, {"snapshot": half["$uniqueid"][0]})
    archive.backend.delete(
        ARCHIVE_SNAPSHOT_FACTS, {"day": day.date(), "snapshot": half["$uniqueid"][0]}
    )
    assert _one_day_report(archive, day) == ("computed", 1)
    assert _one_day_report(archive, day) == ("computed", 1)  # computed again, not stored
    archive.store(half)  # the writer's next run completes it
    assert _one_day_report(archive, day) == ("computed", 2)
    assert _one_day_report(archive, day) == ("stored", 2)


def test_the_whole_archive_reads_the_days_it_holds_not_every_calendar_day(
    counting: CountingBackend,
) -> None:
    now = dt.datetime(2023, 6, 30, 12, tzinfo=dt.UTC)
    with Archive(counting) as archive:
        archive.store(make_snapshot(0, modified=dt.datetime(1990, 1, 2, 8, tzinfo=dt.UTC)))
        archive.store(make_snapshot(1, modified=dt.datetime(2023, 6, 29, 8, tzinfo=dt.UTC)))
        counting.reset()
        figures = archive_figures(archive, now=now)
    counted = {d.day: d.snapshots for d in figures.days}
    assert counted == {dt.date(1990, 1, 2): 1, dt.date(2023, 6, 29): 1}
    # the old day, and the last RECENT_DAYS days (one scan each), not 12,000 days
    assert counting.scans["snapshots_by_modified"] <= RECENT_DAYS + 3
    assert counting.scans["archive_day_changes"] <= 3  # the years asked for: 1990, 2023


def test_finished_days_of_a_month_not_over_are_kept_one_by_one(
    generated: Archive, counting: CountingBackend, planned: list[Planned]
) -> None:
    """While its month goes on, a range's finished days are each counted once and kept;
    when the month is over it is counted whole, and its days' rows go."""
    during = dt.datetime.combine(START + dt.timedelta(days=19), dt.time(12), dt.UTC)
    first = aggregate_days(generated, START, LAST, now=during)
    assert as_expected(first.days) == expected_days(planned)
    counting.reset()
    again = aggregate_days(generated, START, LAST, now=during)
    assert as_expected(again.days) == expected_days(planned)
    assert counting.scans["snapshots_by_modified"] == 0  # the days' kept rows, a get each
    assert counting.gets["archive_month_figures"] == 7
    assert [d.source for d in again.days] == ["stored"] * 7
    counting.reset()
    aggregate_days(generated, START, LAST, now=LATER)  # the month over: kept whole
    rows = list(generated.backend.scan(ARCHIVE_MONTH_FIGURES))
    assert [row["month"] for row in rows] == [f"{START:%Y-%m}"]
    assert counting.deletes["archive_month_figures"] == 31  # each day of March, once
    late = dt.datetime.combine(START + dt.timedelta(days=3), dt.time(9), dt.UTC)
    generated.store(make_snapshot(900, modified=late))
    counting.reset()
    recounted = aggregate_days(generated, START, LAST, now=LATER)
    counted = sum(d.total.snapshots for d in first.days)
    assert sum(d.total.snapshots for d in recounted.days) == counted + 1
    assert counting.scans["snapshots_by_modified"] > 0  # the month counted again
    # and no day dropped again: each delete is a tombstone a read of the table walks
    assert counting.deletes["archive_month_figures"] == 0

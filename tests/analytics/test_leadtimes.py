"""Lead times per workflow group, with percentiles checked against the standard library."""

from __future__ import annotations

import datetime as dt
import statistics
from zoneinfo import ZoneInfo

import pytest

from analytics.conftest import CountingBackend
from analytics.generated_archive import STEP_HOURS, Planned
from imixs_archive.analytics.leadtimes import Finished, lead_times, percentile
from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.conventions import snapshot_time
from support.snapshots import make_snapshot


def expected(planned: list[Planned], statuses: set[str]) -> dict[str, list[float]]:
    groups: dict[str, list[float]] = {}
    for p in planned:
        if p.step == p.steps - 1 and p.status.lower() in statuses:
            groups.setdefault(p.group, []).append(p.step * STEP_HOURS * 3600.0)
    return groups


def test_lead_times_per_group(generated: Archive, planned: list[Planned]) -> None:
    want = expected(planned, {"completed"})
    found = {g.group: g for g in lead_times(generated)}
    assert set(found) == set(want)
    for group, samples in want.items():
        assert sorted(found[group].samples) == sorted(samples)
        data = found[group].to_json()
        assert data["count"] == len(samples)
        assert data["min"] == min(samples) and data["max"] == max(samples)
        assert data["mean"] == pytest.approx(statistics.fmean(samples))
        if len(samples) > 1:
            cuts = statistics.quantiles(samples, n=100, method="inclusive")
            for q in (50, 75, 90, 95, 99):
                assert data[f"p{q}"] == pytest.approx(cuts[q - 1])


def test_one_group_and_another_finished_rule(generated: Archive, planned: list[Planned]) -> None:
    only = lead_times(generated, group="invoice")
    assert [g.group for g in only] == ["Invoice"]
    everything = lead_times(generated, finished=Finished.of(["open", "completed"]))
    assert sum(g.count for g in everything) == len({p.origin for p in planned})


def test_finished_range(generated: Archive, planned: list[Planned]) -> None:
    day = dt.date(2023, 3, 4)
    found = lead_times(generated, finished_from=day, finished_to=day)
    finished = [
        p for p in planned if p.step == p.steps - 1 and p.status == "Completed" and p.day == day
    ]
    assert sum(g.count for g in found) == len(finished)


def test_an_archived_workitem_is_finished(archive: Archive) -> None:
    archive.store(make_snapshot(0))
    archive.store(make_snapshot(30, type="snapshot-workitemarchive"))
    (invoice,) = lead_times(archive)
    assert invoice.group == "Invoice" and list(invoice.samples) == [30 * 60.0]
    assert lead_times(archive, finished=Finished.of(["completed"], types=[])) == []


def test_percentile_interpolates_between_ranks() -> None:
    values = [1.0, 2.0, 3.0, 4.0]
    assert percentile(values, 50) == 2.5
    assert percentile(values, 0) == 1.0 and percentile(values, 100) == 4.0
    assert percentile([7.0], 90) == 7.0
    with pytest.raises(ValueError):
        percentile([], 50)


@pytest.mark.parametrize("tz", [dt.UTC, ZoneInfo("Pacific/Auckland")])
def test_a_range_reads_its_days_and_agrees_with_the_whole_archive(
    generated: Archive, counting: CountingBackend, tz: dt.tzinfo
) -> None:
    """A range is answered from its days (their facts, one instance partition per
    instance met), not from every instance, while its month is not over; a finished month
    is counted once and its samples kept. Either way: the same groups and samples as the
    whole archive's instances filtered by the day of their last snapshot."""
    whole = {ids[-1]: ids for ids in generated.index.iter_instances()}
    days = sorted({snapshot_time(last).astimezone(tz).date() for last in whole})
    first = last = days[len(days) // 2]
    expected_groups: dict[str, list[float]] = {}
    for newest, ids in whole.items():
        if not first <= snapshot_time(newest).astimezone(tz).date() <= last:
            continue
        doc = generated.load(newest, with_files=False)
        if Finished().matches(str(doc.get_first("$workflowstatus")), str(doc.get_first("type"))):
            seconds = (snapshot_time(newest) - snapshot_time(ids[0])).total_seconds()
            group = str(doc.get_first("$workflowgroup"))
            expected_groups.setdefault(group, []).append(seconds)
    want = {group: sorted(samples) for group, samples in expected_groups.items()}
    assert want  # the range holds finished instances

    def ranged(now: dt.datetime | None = None) -> dict[str, list[float]]:
        found = lead_times(generated, finished_from=first, finished_to=last, tz=tz, now=now)
        return {g.group: sorted(g.samples) for g in found}

    during = dt.datetime.combine(days[-1], dt.time(12), dt.UTC)  # the month not over yet
    counting.reset()
    assert ranged(now=during) == want
    assert counting.scans["snapshots_by_uniqueid"] < len(whole)  # not every instance
    assert counting.gets["snapshots"] == 0  # status, type and group from the facts
    assert ranged() == want  # the month over: counted whole, kept
    counting.reset()
    assert ranged() == want
    assert counting.scans["snapshots_by_uniqueid"] == 0  # the kept samples
    assert counting.gets["archive_month_figures"] == 1  # its month's row


def test_the_whole_archive_is_read_by_its_kept_months(
    generated: Archive, counting: CountingBackend, planned: list[Planned]
) -> None:
    """Without a range, the default rule reads the archive's whole span by months: once
    counted, a second answer reads the kept samples, no instance and no snapshot; another
    rule still reads every instance."""
    first = {g.group: sorted(g.samples) for g in lead_times(generated)}
    counting.reset()
    again = {g.group: sorted(g.samples) for g in lead_times(generated)}
    assert again == first and first
    assert counting.scans["snapshots_by_uniqueid"] == 0 and counting.gets["snapshots"] == 0
    other = lead_times(generated, finished=Finished.of(["open", "completed"]))
    assert sum(g.count for g in other) == len({p.origin for p in planned})
    assert counting.scans["snapshots_by_uniqueid"] > 0


def test_a_range_to_a_far_year_reads_the_archive_s_months_only(
    generated: Archive, counting: CountingBackend
) -> None:
    """A range ending (or starting) far from the archive's days is read as the archive's
    span: as many months as it has, not the thousands of the calendar (an API call with
    ``to=7265-11-04`` once outlasted its request's budget)."""
    whole = {g.group: sorted(g.samples) for g in lead_times(generated)}
    counting.reset()
    far = lead_times(generated, finished_from=dt.date(1, 1, 1), finished_to=dt.date(7265, 11, 4))
    assert {g.group: sorted(g.samples) for g in far} == whole and whole
    assert sum(counting.scans.values()) + sum(counting.gets.values()) < 500
    assert lead_times(generated, finished_from=dt.date(7000, 1, 1)) == []
    assert lead_times(generated, finished_to=dt.date(1000, 1, 1)) == []
    other = Finished.of(["open", "completed"])
    assert lead_times(generated, finished=other, finished_to=dt.date(1000, 1, 1)) == []


DAY_STEPS = 24 * 60  # make_snapshot's steps are minutes


@pytest.mark.parametrize("later", [40 * DAY_STEPS, -40 * DAY_STEPS], ids=["newer", "older"])
def test_a_kept_month_is_counted_again_when_its_instance_changes_later(
    archive: Archive, later: int
) -> None:
    """An instance finished in November (a kept month once December is over) gets a
    snapshot in another month: archived in December (the workitem archived later), or an
    older one in October arriving late. Its lead time is then not November's any more or
    not the same: November is counted again, and the instance is counted once."""
    archive.store(make_snapshot(0, dollar_workflowstatus="Open"))
    archive.store(make_snapshot(30, dollar_workflowstatus="Completed"))
    now = dt.datetime(2024, 3, 1, tzinfo=dt.UTC)
    autumn = (dt.date(2023, 10, 1), dt.date(2023, 12, 31))
    november = (dt.date(2023, 11, 1), dt.date(2023, 11, 30))

    def samples(bounds: tuple[dt.date, dt.date]) -> list[float]:
        found = lead_times(archive, finished_from=bounds[0], finished_to=bounds[1], now=now)
        return sorted(s for g in found for s in g.samples)

    assert samples(autumn) == samples(november) == [30 * 60.0]  # November kept
    if later > 0:
        archive.store(make_snapshot(later, type="snapshot-workitemarchive"))
        assert samples(november) == []
        assert samples(autumn) == [later * 60.0]
    else:
        archive.store(make_snapshot(later, dollar_workflowstatus="Open"))
        assert samples(november) == samples(autumn) == [(30 - later) * 60.0]


def test_a_kept_month_is_counted_again_when_its_instance_loses_its_newest(
    archive: Archive,
) -> None:
    """An instance finished in November and archived in December: December holds its lead
    time. The December snapshot deleted in March, November (kept without it) holds it."""
    archive.store(make_snapshot(0, dollar_workflowstatus="Open"))
    archive.store(make_snapshot(30, dollar_workflowstatus="Completed"))
    archived = make_snapshot(40 * DAY_STEPS, type="snapshot-workitemarchive")
    archive.store(archived)
    now = dt.datetime(2024, 3, 1, tzinfo=dt.UTC)

    def samples(first: dt.date, last: dt.date) -> list[float]:
        found = lead_times(archive, finished_from=first, finished_to=last, now=now)
        return sorted(s for g in found for s in g.samples)

    november = (dt.date(2023, 11, 1), dt.date(2023, 11, 30))
    autumn = (dt.date(2023, 10, 1), dt.date(2023, 12, 31))
    assert samples(*november) == [] and samples(*autumn) == [40 * DAY_STEPS * 60.0]  # kept
    assert archive.delete(str(archived.get_first("$uniqueid"))).existed
    assert samples(*november) == samples(*autumn) == [30 * 60.0]

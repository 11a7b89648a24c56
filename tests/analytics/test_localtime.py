"""Days, months and years of a time zone, across both daylight-saving changes of
Europe/Berlin and America/New_York, assembled from the stored quarter-hour cells."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from zoneinfo import ZoneInfo

import pytest

from analytics.conftest import CountingBackend
from imixs_archive.analytics.aggregates import aggregate_days
from imixs_archive.analytics.day_store import FORMAT_VERSION
from imixs_archive.analytics.localtime import segments
from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import load_settings
from imixs_archive.errors import ConfigError
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import ARCHIVE_DAY_AGGREGATES
from imixs_archive.timezones import day_bounds, zone
from support.snapshots import make_snapshot

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")
KATHMANDU = ZoneInfo("Asia/Kathmandu")
LATER = dt.datetime(2025, 6, 1, tzinfo=dt.UTC)
CHANGES = {
    # zone: (the 23-hour day in spring, the 25-hour day in autumn), 2024
    "Europe/Berlin": (dt.date(2024, 3, 31), dt.date(2024, 10, 27)),
    "America/New_York": (dt.date(2024, 3, 10), dt.date(2024, 11, 3)),
}


D = dt.date


@pytest.mark.parametrize(
    ("tz", "day", "hours", "pieces"),
    [
        (BERLIN, D(2024, 3, 31), 23, [(D(2024, 3, 30), 92, 96), (D(2024, 3, 31), 0, 88)]),
        (BERLIN, D(2024, 10, 27), 25, [(D(2024, 10, 26), 88, 96), (D(2024, 10, 27), 0, 92)]),
        (NEW_YORK, D(2024, 3, 10), 23, [(D(2024, 3, 10), 20, 96), (D(2024, 3, 11), 0, 16)]),
        (NEW_YORK, D(2024, 11, 3), 25, [(D(2024, 11, 3), 16, 96), (D(2024, 11, 4), 0, 20)]),
        (KATHMANDU, D(2024, 1, 2), 24, [(D(2024, 1, 1), 73, 96), (D(2024, 1, 2), 0, 73)]),
        (ZoneInfo("UTC"), D(2024, 1, 2), 24, [(D(2024, 1, 2), 0, 96)]),
    ],
)
def test_a_local_day_in_quarter_hours_of_utc_days(
    tz: ZoneInfo, day: dt.date, hours: int, pieces: list[tuple[dt.date, int, int]]
) -> None:
    start, end = day_bounds(day, tz)
    assert end - start == dt.timedelta(hours=hours)
    assert segments(day, tz) == pieces
    assert sum(b - a for _, a, b in pieces) == hours * 4


def test_unknown_zones_are_refused() -> None:
    too_long = "Z" + "\u0335\u0317" * 200  # a file name longer than the system takes
    for bad in ("Mars/Olympus", "../etc/passwd", "/etc/localtime", too_long):
        with pytest.raises(ValueError, match="unknown time zone"):
            zone(bad)
    assert zone(None).key == "UTC" and zone("").key == "UTC"


def local_times(day: dt.date, tz: ZoneInfo) -> list[dt.datetime]:
    """Snapshot times around a day with a clock change: either side of both midnights,
    either side of the change, and (autumn) both occurrences of the repeated hour."""
    times = [
        dt.datetime.combine(day - dt.timedelta(days=1), dt.time(23, 50), tz),
        dt.datetime.combine(day, dt.time(0, 10), tz),
        dt.datetime.combine(day, dt.time(1, 40), tz),
        dt.datetime.combine(day, dt.time(3, 20), tz),
        dt.datetime.combine(day, dt.time(12, 0), tz),
        dt.datetime.combine(day, dt.time(23, 50), tz),
        dt.datetime.combine(day + dt.timedelta(days=1), dt.time(0, 10), tz),
    ]
    for hour in (1, 2):
        repeated = dt.datetime.combine(day, dt.time(hour, 30), tz)
        later = repeated.replace(fold=1)
        if later.utcoffset() != repeated.utcoffset() and _exists(later):
            times += [repeated, later]
    return times


def _exists(when: dt.datetime) -> bool:
    """False for a wall time skipped by a clock change (it does not survive a round trip)."""
    back = when.astimezone(dt.UTC).astimezone(when.tzinfo)
    return back.replace(tzinfo=None) == when.replace(tzinfo=None)


def store_around_changes(archive: Archive) -> list[tuple[str, dt.datetime]]:
    """Snapshots of a few instances around all four changes: each instance has snapshots
    on one local day in more than one UTC day. Returns (origin, UTC time) of each."""
    stored: list[tuple[str, dt.datetime]] = []
    step = 0
    for n, (name, days) in enumerate(sorted(CHANGES.items())):
        tz = ZoneInfo(name)
        for m, day in enumerate(days):
            for k, when in enumerate(local_times(day, tz)):
                origin = f"{n:08x}-0000-4000-8000-{m * 16 + k % 3:012x}"
                utc = when.astimezone(dt.UTC)
                archive.store(make_snapshot(step, origin=origin, modified=utc))
                stored.append((origin, utc))
                step += 1
    return stored


def expected(stored: list[tuple[str, dt.datetime]], tz: ZoneInfo) -> dict[dt.date, list[int]]:
    """day -> [snapshots, distinct instances], each instant converted on its own."""
    snapshots: dict[dt.date, int] = defaultdict(int)
    origins: dict[dt.date, set[str]] = defaultdict(set)
    for origin, utc in stored:
        day = utc.astimezone(tz).date()
        snapshots[day] += 1
        origins[day].add(origin)
    return {day: [snapshots[day], len(origins[day])] for day in snapshots}


def report_days(archive: Archive, tz: str) -> dict[dt.date, list[int]]:
    report = aggregate_days(archive, dt.date(2024, 3, 8), dt.date(2024, 11, 5), now=LATER, tz=tz)
    assert report.zone == tz
    return {f.day: [f.total.snapshots, f.total.instances] for f in report.days if f.total.snapshots}


def test_days_across_clock_changes_in_two_zones(backend: Backend) -> None:
    counting = CountingBackend(backend)
    with Archive(counting) as archive:
        stored = store_around_changes(archive)
        counting.reset()
        for name in ("Europe/Berlin", "America/New_York", "UTC", "Asia/Kathmandu"):
            assert report_days(archive, name) == expected(stored, ZoneInfo(name)), name
        # the UTC days were computed for the first zone; the others reassembled them
        first_pass = counting.scans["snapshots_by_modified"]
        assert first_pass > 0
        counting.reset()
        assert report_days(archive, "America/New_York") == expected(stored, NEW_YORK)
        assert counting.scans["snapshots_by_modified"] == 0
        assert counting.gets["archive_month_figures"] > 0  # its finished months, kept
        assert counting.scans["archive_day_aggregates"] == 0


def test_the_23_and_25_hour_days_hold_all_their_hours(archive: Archive) -> None:
    stored = store_around_changes(archive)
    for name, (spring, autumn) in CHANGES.items():
        tz = ZoneInfo(name)
        days = report_days(archive, name)
        # 0:10, 1:40, 3:20, 12:00, 23:50 (+ the repeated half hour twice in autumn)
        assert days[spring][0] == expected(stored, tz)[spring][0] == 5
        assert days[autumn][0] == expected(stored, tz)[autumn][0] == 7


def test_months_and_years_end_at_local_midnight(archive: Archive) -> None:
    # 2024-03-31 23:30 in Berlin is March there and in UTC; 2024-04-01 00:30 in Berlin is
    # 2024-03-31 22:30 UTC: April in Berlin, March in UTC. Likewise for the new year in
    # New York, where 2023-12-31 20:00 is already 2024 in UTC.
    times = [
        dt.datetime(2024, 3, 31, 23, 30, tzinfo=BERLIN),
        dt.datetime(2024, 4, 1, 0, 30, tzinfo=BERLIN),
        dt.datetime(2023, 12, 31, 20, 0, tzinfo=NEW_YORK),
    ]
    for step, when in enumerate(times):
        archive.store(make_snapshot(step, modified=when.astimezone(dt.UTC)))
    first, last = dt.date(2023, 12, 1), dt.date(2024, 4, 30)

    def per(tz: str, period: str) -> dict[str, int]:
        report = aggregate_days(archive, first, last, now=LATER, tz=tz)
        rows = report.rows(None, period)
        return {row.period: row.measures.snapshots for row in rows if row.measures.snapshots}

    assert per("UTC", "month") == {"2024-01": 1, "2024-03": 2}
    assert per("Europe/Berlin", "month") == {"2024-01": 1, "2024-03": 1, "2024-04": 1}
    assert per("America/New_York", "month") == {"2023-12": 1, "2024-03": 2}
    assert per("America/New_York", "year") == {"2023": 1, "2024": 2}
    assert per("UTC", "year") == {"2024": 3}


def test_stored_rows_are_utc_days_of_the_current_format(archive: Archive) -> None:
    archive.store(make_snapshot(0, modified=dt.datetime(2024, 3, 31, 1, 0, tzinfo=dt.UTC)))
    day = dt.date(2024, 3, 31)
    aggregate_days(archive, day, day, now=LATER, tz="Europe/Berlin")
    rows = list(archive.backend.scan(ARCHIVE_DAY_AGGREGATES, {"year": 2024}))
    # the local month, counted whole once: the UTC days of Berlin's March
    start, end = dt.date(2024, 2, 29), dt.date(2024, 3, 31)
    assert [row["day"] for row in rows] == [
        start + dt.timedelta(days=n) for n in range((end - start).days + 1)
    ]
    assert {row["version"] for row in rows} == {FORMAT_VERSION}


def test_the_setting_takes_iana_names_only() -> None:
    assert load_settings({}).timezone == "UTC"
    assert load_settings({"ARCHIVE_TIMEZONE": "America/New_York"}).timezone == "America/New_York"
    with pytest.raises(ConfigError, match="ARCHIVE_TIMEZONE: unknown time zone"):
        load_settings({"ARCHIVE_TIMEZONE": "CEST+2"})

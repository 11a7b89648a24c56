"""Listing snapshots by day of $modified in a time zone, on every backend: a local day runs
from local midnight to local midnight, 23 hours in spring and 25 in autumn, in Berlin and
New York; the stored index is by UTC day, so these days straddle two UTC days each."""

from __future__ import annotations

import datetime as dt
import uuid
from zoneinfo import ZoneInfo

import pytest

from imixs_archive.archive.snapshots import Archive
from support.snapshots import make_snapshot

MINUTE = dt.timedelta(minutes=1)


def utc(*args: int) -> dt.datetime:
    return dt.datetime(*args, tzinfo=dt.UTC)


# zone, local day, its first instant and the first instant of the next day (UTC, by hand)
DAYS = [
    ("Europe/Berlin", dt.date(2024, 3, 31), utc(2024, 3, 30, 23), utc(2024, 3, 31, 22)),  # 23 h
    ("Europe/Berlin", dt.date(2024, 10, 27), utc(2024, 10, 26, 22), utc(2024, 10, 27, 23)),  # 25 h
    ("America/New_York", dt.date(2024, 3, 10), utc(2024, 3, 10, 5), utc(2024, 3, 11, 4)),  # 23 h
    ("America/New_York", dt.date(2024, 11, 3), utc(2024, 11, 3, 4), utc(2024, 11, 4, 5)),  # 25 h
]


def put(archive: Archive, when: dt.datetime, tz: ZoneInfo) -> str:
    """A snapshot modified at ``when``, its $modified written with the zone's offset."""
    origin = str(uuid.uuid4())
    doc = make_snapshot(0, origin=origin, modified=when.astimezone(tz))
    doc["$uniqueid"] = f"{origin}-{int(when.timestamp() * 1000)}"
    return archive.store(doc).snapshot_id


@pytest.mark.parametrize(("zone", "day", "start", "end"), DAYS, ids=lambda v: str(v))
def test_a_local_day_is_midnight_to_midnight_across_a_clock_change(
    archive: Archive, zone: str, day: dt.date, start: dt.datetime, end: dt.datetime
) -> None:
    tz = ZoneInfo(zone)
    before = put(archive, start - MINUTE, tz)
    first = put(archive, start, tz)
    middle = put(archive, start + (end - start) / 2, tz)
    last = put(archive, end - MINUTE, tz)
    after = put(archive, end, tz)
    found = [sid for _day, sid in archive.days.iter_local_days(day, day, tz)]
    assert sorted(found) == sorted([first, middle, last])
    assert len(found) == len(set(found))
    # the days either side hold the snapshots just outside
    previous = [
        sid
        for _d, sid in archive.days.iter_local_days(
            day - dt.timedelta(1), day - dt.timedelta(1), tz
        )
    ]
    following = [
        sid
        for _d, sid in archive.days.iter_local_days(
            day + dt.timedelta(1), day + dt.timedelta(1), tz
        )
    ]
    assert previous == [before] and following == [after]
    # in UTC the same snapshots fall on other days
    utc_day = [sid for _d, sid in archive.days.iter_local_days(day, day, ZoneInfo("UTC"))]
    assert utc_day != found
    # paging: resuming after each one yields the rest, in the same order
    whole = list(archive.days.iter_local_days(day - dt.timedelta(1), day + dt.timedelta(1), tz))
    assert [sid for _d, sid in whole].count(first) == 1 and len(whole) == 5
    for index, mark in enumerate(whole):
        rest = list(
            archive.days.iter_local_days(
                day - dt.timedelta(1), day + dt.timedelta(1), tz, resume=mark
            )
        )
        assert rest == whole[index + 1 :]


def test_the_repeated_hour_of_autumn_counts_once_on_its_day(archive: Archive) -> None:
    berlin = ZoneInfo("Europe/Berlin")
    # 02:30 local twice: 00:30 UTC (summer time) and 01:30 UTC (winter time)
    twice = [
        put(archive, utc(2024, 10, 27, 0, 30), berlin),
        put(archive, utc(2024, 10, 27, 1, 30), berlin),
    ]
    found = [
        sid
        for _d, sid in archive.days.iter_local_days(
            dt.date(2024, 10, 27), dt.date(2024, 10, 27), berlin
        )
    ]
    assert sorted(found) == sorted(twice)

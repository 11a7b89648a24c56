"""Restore ranges are days of ARCHIVE_TIMEZONE: the web request's days and the CLI's
times without an offset, across a 23-hour and a 25-hour day."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

from imixs_archive.cli.context import in_zone, instant_arg, instant_end_arg
from imixs_archive.web.api_restore import RestoreRequest

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")
MS = dt.timedelta(milliseconds=1)


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0, s: int = 0) -> dt.datetime:
    return dt.datetime(year, month, day, hour, minute, s, tzinfo=dt.UTC)


def test_request_days_are_local_days() -> None:
    body = RestoreRequest.model_validate({"from": "2024-03-31", "to": "2024-03-31"})
    wanted = body.to_range(BERLIN)
    assert wanted.first == utc(2024, 3, 30, 23)
    assert utc(2024, 3, 31, 21, 59, 59) < wanted.last < utc(2024, 3, 31, 22)  # 23 hours
    assert wanted.contains(utc(2024, 3, 30, 23, 30)) and not wanted.contains(utc(2024, 3, 31, 22))
    autumn = RestoreRequest.model_validate({"from": "2024-11-03", "to": "2024-11-03"})
    span = autumn.to_range(NEW_YORK)
    assert span.first == utc(2024, 11, 3, 4)
    assert utc(2024, 11, 4, 4, 59, 59) < span.last < utc(2024, 11, 4, 5)  # 25 hours
    default = body.to_range()
    assert default.first == utc(2024, 3, 31)


def test_cli_times_without_offset_are_read_in_the_zone() -> None:
    first = in_zone(instant_arg("2024-10-27"), "Europe/Berlin")
    last = in_zone(instant_end_arg("2024-10-27"), "Europe/Berlin")
    assert first.astimezone(dt.UTC) == utc(2024, 10, 26, 22)
    assert last.astimezone(dt.UTC) + MS == utc(2024, 10, 27, 23)  # 25 hours
    given = in_zone(instant_arg("2024-10-27T12:00:00+05:00"), "Europe/Berlin")
    assert given.astimezone(dt.UTC) == utc(2024, 10, 27, 7)
    assert in_zone(instant_arg("2024-01-01"), "UTC") == utc(2024, 1, 1)

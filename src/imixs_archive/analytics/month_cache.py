"""Finished local months kept per time zone, so that figures over a range cost what the
range's months cost, not what they hold.

A range (``analyze aggregates``, lead times, the Statistics page's range) is cut into the
local months it touches. A month whose days are all over (its UTC days past the grace
period) is counted once, whole, by the caller's count, and kept in
``archive_month_figures`` under ``<kind>:<YYYY-MM>`` for the time zone, with a digest of
the change stamps of the UTC days it covers: while they hold, a range reads the kept row
and takes its days; when a snapshot of the month is stored or deleted (its day's stamp
changes), the month is counted again at its next use. A month not over yet, or counted
while a snapshot was half written, is counted for the range each time and not kept.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Callable, Iterator
from typing import Any

from imixs_archive.analytics.day_store import (
    DEFAULT_GRACE_DAYS,
    is_final,
    read_months,
    store_month,
)
from imixs_archive.archive.snapshots import Archive
from imixs_archive.timezones import day_bounds, zone_label


def local_months(
    first: dt.date, last: dt.date
) -> Iterator[tuple[dt.date, dt.date, dt.date, dt.date]]:
    """(month's first day, its last, the range's first day in it, its last) of each local
    month the range ``[first, last]`` touches."""
    start = first.replace(day=1)
    while start <= last:
        following = (start.replace(day=28) + dt.timedelta(days=4)).replace(day=1)
        end = following - dt.timedelta(days=1)
        yield start, end, max(first, start), min(last, end)
        start = following


class MonthCache:
    """The kept months of one time zone (one partition read), and the day stamps of the
    years asked for (one partition each)."""

    def __init__(
        self,
        archive: Archive,
        tz: dt.tzinfo,
        now: dt.datetime,
        grace_days: int = DEFAULT_GRACE_DAYS,
    ) -> None:
        self.archive = archive
        self.tz = tz
        self.zone = zone_label(tz)
        self.today = now.astimezone(dt.UTC).date()
        self.grace_days = grace_days
        self._kept: dict[str, dict[str, Any]] | None = None
        self._stamps: dict[int, dict[dt.date, str]] = {}

    def get(
        self,
        kind: str,
        month: tuple[dt.date, dt.date],
        count: Callable[[], tuple[Any, bool]],
    ) -> Any | None:
        """The kept figures of a finished month, else counted by ``count`` (its figures as
        JSON and whether they may be kept) and kept; None for a month not over yet."""
        start = day_bounds(month[0], self.tz)[0].date()
        end = (day_bounds(month[1], self.tz)[1] - dt.timedelta(microseconds=1)).date()
        if not is_final(end, self.today, self.grace_days):
            return None
        digest = self._digest(start, end)
        key = f"{kind}:{month[0]:%Y-%m}"
        kept = self._kept_rows().get(key)
        if kept is not None and kept.get("digest") == digest:
            return kept.get("data")
        data, settled = count()
        if settled:
            store_month(self.archive, self.zone, key, {"digest": digest, "data": data})
        return data

    def _kept_rows(self) -> dict[str, dict[str, Any]]:
        if self._kept is None:
            self._kept = read_months(self.archive, self.zone)
        return self._kept

    def _digest(self, start: dt.date, end: dt.date) -> str:
        """The change stamps of the UTC days ``[start, end]``, as one digest."""
        parts = []
        day = start
        while day <= end:
            if day.year not in self._stamps:
                year = dt.date(day.year, 1, 1), dt.date(day.year, 12, 31)
                self._stamps[day.year] = self.archive.day_stamps(*year)
            parts.append(f"{day.isoformat()}={self._stamps[day.year].get(day, '')}")
            day += dt.timedelta(days=1)
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]

"""Finished local months and days kept per time zone, so that figures over a range cost
what the range's months cost, not what they hold.

A range (``analyze aggregates``, lead times, the Statistics page's range) is cut into
units (:meth:`PeriodCache.units`): each local month the range touches whose days are all
over (its UTC days past the grace period), else each finished day of it, and the rest not
over yet. A finished unit is counted once, whole, by the caller's count, and kept in
``archive_month_figures`` (partition ``<kind>@<zone>``, key ``2025-03`` or
``2025-03-07``) with a digest of the change stamps of the UTC days it covers: while they
hold, a range reads the kept row and takes its days; when a snapshot of it is stored or
deleted (its day's stamp changes), it is counted again at its next use. Once a month is
kept whole, its days' rows go (once: a month counted again has none). What is not over
yet, or was counted while a snapshot was half written, is counted for the range each
time and not kept.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Callable, Iterator
from typing import Any

from imixs_archive.analytics.day_store import (
    DEFAULT_GRACE_DAYS,
    drop_period,
    is_final,
    read_month,
    store_month,
)
from imixs_archive.archive.snapshots import Archive
from imixs_archive.budget import checkpoint
from imixs_archive.timezones import day_bounds, zone_label

Unit = tuple[dt.date, dt.date, dt.date, dt.date]
"""(the unit's first local day, its last, the range's first day in it, its last)."""


def local_months(first: dt.date, last: dt.date) -> Iterator[Unit]:
    """(month's first day, its last, the range's first day in it, its last) of each local
    month the range ``[first, last]`` touches."""
    start = first.replace(day=1)
    while start <= last:
        following = (start.replace(day=28) + dt.timedelta(days=4)).replace(day=1)
        end = following - dt.timedelta(days=1)
        yield start, end, max(first, start), min(last, end)
        start = following


class PeriodCache:
    """The kept months and days of one time zone, read by key; the day stamps of the
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
        self._stamps: dict[int, dict[dt.date, str]] = {}

    def units(self, first: dt.date, last: dt.date) -> Iterator[Unit]:
        """The units of ``[first, last]``: finished months whole, else finished days, and
        the rest not over yet as one (see the module docstring)."""
        for month in local_months(first, last):
            checkpoint()
            if self._final(month[0], month[1]):
                yield month
                continue
            day = month[2]
            while day <= month[3]:
                if not self._final(day, day):
                    yield day, month[3], day, month[3]
                    break
                yield day, day, day, day
                day += dt.timedelta(days=1)

    def get(
        self,
        kind: str,
        unit: tuple[dt.date, dt.date],
        count: Callable[[], tuple[Any, bool]],
    ) -> Any | None:
        """The kept figures of a finished unit (a month or a day), else counted by
        ``count`` (its figures as JSON and whether they may be kept) and kept; None for
        a unit not over yet."""
        if not self._final(*unit):
            return None
        month = unit[0].day == 1 and (unit[1] + dt.timedelta(days=1)).day == 1
        if not month and unit[0] != unit[1]:
            return None  # only months and days are kept
        key = f"{unit[0]:%Y-%m}" if month else unit[0].isoformat()
        digest = self._digest(*self._utc(*unit))
        kept = read_month(self.archive, self.zone, kind, key)
        if kept is not None and kept.get("digest") == digest:
            return kept.get("data")
        data, settled = count()
        if settled:
            store_month(self.archive, self.zone, kind, key, {"digest": digest, "data": data})
            if month and kept is None:  # its days' rows are no longer read: dropped once,
                # when the month is first kept (a month counted again has none: a delete
                # of each of its days each time left a tombstone each on Cassandra, which
                # a read of the table walks, and past 100,000 refuses)
                day = unit[0]
                while day <= unit[1]:
                    drop_period(self.archive, self.zone, kind, day.isoformat())
                    day += dt.timedelta(days=1)
        return data

    def _utc(self, first: dt.date, last: dt.date) -> tuple[dt.date, dt.date]:
        """The UTC days local days ``[first, last]`` cover."""
        start = day_bounds(first, self.tz)[0].date()
        end = (day_bounds(last, self.tz)[1] - dt.timedelta(microseconds=1)).date()
        return start, end

    def _final(self, first: dt.date, last: dt.date) -> bool:
        return is_final(self._utc(first, last)[1], self.today, self.grace_days)

    def _digest(self, start: dt.date, end: dt.date) -> str:
        """The change stamps of the UTC days ``[start, end]``, as one digest."""
        parts = []
        day = start
        while day <= end:
            if day.year not in self._stamps:
                year = dt.date(day.year, 1, 1), dt.date(day.year, 12, 31)
                self._stamps[day.year] = self.archive.days.stamps(*year)
            parts.append(f"{day.isoformat()}={self._stamps[day.year].get(day, '')}")
            day += dt.timedelta(days=1)
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]

"""Local days in quarter-hour slots, for the stored figures: a day, month or year of a
report is one of the report's time zone (``timezones.py``), with daylight-saving days of 23
and 25 hours.

Stored figures are kept per UTC day in quarter-hour slots (``cells.py``): every zone's
offset from UTC is a multiple of 15 minutes (Asia/Kathmandu +05:45, Australia/Eucla
+08:45), so a local day is always a whole number of slots of one, two or three UTC days,
and changing the zone only reassembles stored slots.
"""

from __future__ import annotations

import datetime as dt

from imixs_archive.archive.facts import SLOT_MINUTES, SLOTS_PER_DAY
from imixs_archive.timezones import day_bounds

__all__ = ["SLOTS_PER_DAY", "SLOT_MINUTES", "segments"]


def segments(day: dt.date, tz: dt.tzinfo) -> list[tuple[dt.date, int, int]]:
    """A local day as (UTC day, first slot, end slot) pieces, end exclusive."""
    start, end = day_bounds(day, tz)
    pieces: list[tuple[dt.date, int, int]] = []
    utc_day = start.date()
    while True:
        midnight = dt.datetime.combine(utc_day, dt.time(0), dt.UTC)
        if midnight >= end:
            return pieces
        first = _slot_since(midnight, start)
        last = _slot_since(midnight, end)
        if last > first:
            pieces.append((utc_day, first, last))
        utc_day += dt.timedelta(days=1)


def _slot_since(midnight: dt.datetime, moment: dt.datetime) -> int:
    minutes = (moment - midnight).total_seconds() / 60
    return max(0, min(SLOTS_PER_DAY, round(minutes / SLOT_MINUTES)))

"""Local time for reports: a day, month or year is one of the report's time zone (an IANA
name, ``ARCHIVE_TIMEZONE``, default UTC), with daylight-saving days of 23 and 25 hours.

Stored figures are kept per UTC day in quarter-hour slots (``cells.py``): every zone's
offset from UTC is a multiple of 15 minutes (Asia/Kathmandu +05:45, Australia/Eucla
+08:45), so a local day is always a whole number of slots of one, two or three UTC days,
and changing the zone only reassembles stored slots.
"""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

SLOT_MINUTES = 15
SLOTS_PER_DAY = 24 * 60 // SLOT_MINUTES
DEFAULT_ZONE = "UTC"


def zone(name: str | None) -> ZoneInfo:
    """The time zone of an IANA name (``Europe/Berlin``); ValueError when unknown."""
    text = (name or DEFAULT_ZONE).strip() or DEFAULT_ZONE
    if text.startswith("/") or ".." in text:
        raise ValueError(f"unknown time zone {text!r}: give an IANA name like Europe/Berlin")
    try:
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(
            f"unknown time zone {text!r}: give an IANA name like Europe/Berlin"
        ) from exc


def check_zone(text: str) -> str:
    """A settings parser: the name, once it is known to be a time zone."""
    zone(text)
    return text.strip() or DEFAULT_ZONE


def day_bounds(day: dt.date, tz: dt.tzinfo) -> tuple[dt.datetime, dt.datetime]:
    """The UTC instants where a local day starts and ends (23, 24 or 25 hours apart).
    A midnight skipped by a clock change starts the day when the clock jumps; a midnight
    that occurs twice starts it at the first."""
    start = dt.datetime.combine(day, dt.time(0), tz).astimezone(dt.UTC)
    end = dt.datetime.combine(day + dt.timedelta(days=1), dt.time(0), tz).astimezone(dt.UTC)
    return start, end


def slot_of(moment: dt.datetime) -> int:
    """The quarter-hour slot (0..95) of an aware time within its UTC day."""
    utc = moment.astimezone(dt.UTC)
    return (utc.hour * 60 + utc.minute) // SLOT_MINUTES


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


def local_today(now: dt.datetime, tz: dt.tzinfo) -> dt.date:
    return now.astimezone(tz).date()


def zone_label(tz: dt.tzinfo) -> str:
    """The name to show beside dates: ``Europe/Berlin``, ``UTC``."""
    return getattr(tz, "key", None) or str(tz)

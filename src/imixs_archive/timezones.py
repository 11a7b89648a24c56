"""Time zones as people name them (IANA names, ``ARCHIVE_TIMEZONE``, default UTC): the zone
of a name, a local day's bounds, and the label shown beside local dates. Used by every
layer that reads or shows days (settings, listings, backups, reports), so it sits below
them all."""

from __future__ import annotations

import datetime as dt
import time
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

DEFAULT_ZONE = "UTC"


def zone(name: str | None) -> ZoneInfo:
    """The time zone of an IANA name (``Europe/Berlin``); ValueError when unknown."""
    text = (name or DEFAULT_ZONE).strip() or DEFAULT_ZONE
    if text.startswith("/") or ".." in text:
        raise ValueError(f"unknown time zone {text!r}: give an IANA name like Europe/Berlin")
    try:
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:  # OSError: a name too long
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


def local_today(now: dt.datetime, tz: dt.tzinfo) -> dt.date:
    return now.astimezone(tz).date()


def day_span(first: dt.date | None, last: dt.date | None, tz: dt.tzinfo) -> tuple[dt.date, dt.date]:
    """The days from ``first`` to ``last`` with an end not given open: from 1970, to today
    (in ``tz``)."""
    return first or dt.date(1970, 1, 1), last or dt.datetime.now(tz).date()


def zone_label(tz: dt.tzinfo) -> str:
    """The name to show beside dates: ``Europe/Berlin``, ``UTC``."""
    return getattr(tz, "key", None) or str(tz)


EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MILLISECOND = dt.timedelta(milliseconds=1)


def epoch_ms(when: dt.datetime) -> int:
    """Milliseconds since 1970 of a time (one without an offset is read as UTC), exactly:
    integer arithmetic (a float timestamp times 1000 can fall a millisecond short)."""
    aware = when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)
    return (aware - EPOCH) // _MILLISECOND


def epoch_ms_of(value: object) -> int | None:
    """:func:`epoch_ms` of a value that is a time (an item's ``$modified``), else None."""
    return epoch_ms(value) if isinstance(value, dt.datetime) else None


def from_epoch_ms(millis: int) -> dt.datetime:
    """The UTC time of milliseconds since 1970."""
    return EPOCH + dt.timedelta(milliseconds=millis)


def now_ms() -> int:
    """Now, in milliseconds since 1970."""
    return time.time_ns() // 1_000_000

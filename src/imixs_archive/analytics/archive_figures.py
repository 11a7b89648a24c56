"""The figures of the whole archive: what ``stats``, ``/api/stats``, the Statistics page
and the Monitor show.

Kept at three levels, each counted from the one below once and kept while the day
stamps it was counted at hold (a snapshot stored or deleted changes its day's stamp):

* each snapshot's fact (``archive/facts.py``), written with the snapshot;
* each UTC day's summary (``day_summary.py``), once the day is over: a few KB whatever
  the day holds;
* each UTC month's figures in the days of one time zone, once the month is over: per
  local day and per dimension value (``archive_month_figures``).

A view reads the day stamps (a row per day and writing process), the kept months of its
zone (~120 rows for ten years) and the summaries of the months not over or changed; it
counts only days whose summary is missing or stale, from their facts. Its cost and its
memory follow the months and days the archive spans, not its snapshots.

The totals follow from the facts' rules: ``instances`` sums the instances each day
brought, ``files`` and ``file_bytes`` the files in use (each brought by one snapshot).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from imixs_archive.analytics._pool import DEFAULT_WORKERS, ordered_map
from imixs_archive.analytics.aggregates import compute_cells, count_and_keep
from imixs_archive.analytics.day_store import (
    DEFAULT_GRACE_DAYS,
    is_final,
    read_months,
    read_summaries,
    store_month,
)
from imixs_archive.analytics.day_summary import DaySummary
from imixs_archive.analytics.localtime import SLOT_MINUTES, SLOTS_PER_DAY
from imixs_archive.archive.snapshots import Archive
from imixs_archive.timezones import zone, zone_label

RECENT_DAYS = 62
"""Every one of these last days is counted, the older ones from the day index."""


@dataclass
class DayPoint:
    """One local day: snapshots, files brought, their bytes, attachment bytes carried."""

    day: dt.date
    snapshots: int = 0
    new_files: int = 0
    new_bytes: int = 0
    logical_bytes: int = 0


@dataclass
class ArchiveFigures:
    zone: str
    days: list[DayPoint] = field(default_factory=list)
    """The local days with snapshots (or files), in order."""
    by: dict[str, dict[str, DayPoint]] = field(default_factory=dict)
    """Dimension -> value -> its sums over the whole archive (``day`` unused)."""
    instances: int = 0
    unreadable: int = 0
    counted: dict[str, int] = field(default_factory=dict)
    """How many UTC days were ``stored``, counted and stored (``computed``), or
    counted and not stored (``live``: not over, or met a snapshot being written)."""

    @property
    def snapshots(self) -> int:
        return sum(point.snapshots for point in self.days)

    @property
    def files(self) -> int:
        return sum(point.new_files for point in self.days)

    @property
    def file_bytes(self) -> int:
        return sum(point.new_bytes for point in self.days)

    @property
    def logical_bytes(self) -> int:
        return sum(point.logical_bytes for point in self.days)

    def ranked(self, dimension: str) -> list[tuple[str, int]]:
        """(value, snapshots) of a dimension, most first."""
        values = self.by.get(dimension, {})
        return sorted(
            ((value, point.snapshots) for value, point in values.items()),
            key=lambda kv: (-kv[1], kv[0]),
        )

    def totals(self) -> dict[str, int]:
        """The whole archive's totals: what a reconcile compares before and after."""
        return {
            "snapshots": self.snapshots,
            "instances": self.instances,
            "files": self.files,
            "file_bytes": self.file_bytes,
            "logical_bytes": self.logical_bytes,
        }


def archive_figures(
    archive: Archive,
    *,
    tz: dt.tzinfo | str | None = None,
    now: dt.datetime | None = None,
    workers: int = DEFAULT_WORKERS,
    grace_days: int = DEFAULT_GRACE_DAYS,
) -> ArchiveFigures:
    """The whole archive's figures in the days of ``tz`` (default UTC)."""
    now = now or dt.datetime.now(dt.UTC)
    zone_info = tz if isinstance(tz, dt.tzinfo) else zone(tz)
    figures = ArchiveFigures(zone_label(zone_info))
    today = now.astimezone(dt.UTC).date()
    days = _days(archive, today)
    if not days:
        return figures
    stamps: dict[dt.date, str] = {}
    for year in sorted({day.year for day in days}):  # the years with days only
        first, last = max(days[0], dt.date(year, 1, 1)), min(today, dt.date(year, 12, 31))
        stamps.update(archive.days.stamps(first, last))
    by_month: dict[str, list[dt.date]] = {}
    for day in days:
        by_month.setdefault(f"{day:%Y-%m}", []).append(day)
    kept = read_months(archive, figures.zone, "sums")
    total = _Sums()
    for month, month_days in by_month.items():
        closed = is_final(_month_end(month_days[0]), today, grace_days)
        digest = _digest(month_days, stamps)
        found = kept.get(month)
        if closed and found is not None and found.get("digest") == digest:
            total.add(_Sums.from_json(found))
            figures.counted["months"] = figures.counted.get("months", 0) + 1
            continue
        sums = _Sums()
        for summary in _summaries(archive, month_days, stamps, today, now, grace_days, workers):
            sums.add_day(summary, zone_info)
            source = summary.source if summary.settled else "live"
            figures.counted[source] = figures.counted.get(source, 0) + 1
        if closed and sums.settled:
            store_month(archive, figures.zone, "sums", month, {**sums.to_json(), "digest": digest})
        total.add(sums)
    total.finish(figures)
    return figures


def kept_month_problem(
    archive: Archive,
    zone_name: str,
    month: str,
    kept: dict[str, Any],
    days: list[dt.date],
    stamps: dict[dt.date, str],
) -> str | None:
    """How a kept month of the whole-archive figures (``sums@<zone>``) differs from its UTC
    days (``days``: :func:`archive_days`) counted again from their facts, nothing stored;
    None when it agrees, is stale (a day's stamp moved on since: counted again at its next
    use) or a day of it has a snapshot without a fact (being written: not kept either)."""
    month_days = [day for day in days if f"{day:%Y-%m}" == month]
    if not month_days or kept.get("digest") != _digest(month_days, stamps):
        return None
    tz = zone(zone_name)
    sums = _Sums()
    for day in month_days:
        cells = compute_cells(archive, day, "computed", repair=False)
        if not cells.settled:
            return None
        sums.add_day(DaySummary.of(cells), tz)
    counted = json.loads(json.dumps(sums.to_json()))
    differing = sorted(name for name, value in counted.items() if kept.get(name) != value)
    if not differing:
        return None
    return f"{month} in {zone_name}: its {', '.join(differing)} differ from its days' facts"


def archive_days(archive: Archive, today: dt.date) -> list[dt.date]:
    """The UTC days the whole-archive figures count (the digest of a kept month covers
    those of its month)."""
    return _days(archive, today)


def _summaries(
    archive: Archive,
    days: list[dt.date],
    stamps: dict[dt.date, str],
    today: dt.date,
    now: dt.datetime,
    grace_days: int,
    workers: int,
) -> list[DaySummary]:
    """The summaries of some days of one month: stored ones while their stamp holds, the
    others counted from the facts (and stored when the day is over)."""
    found: dict[dt.date, DaySummary] = {}
    for summary in read_summaries(archive, days[0], days[-1]):
        final = is_final(summary.day, today, grace_days)
        if final and summary.stamp == stamps.get(summary.day, ""):
            found[summary.day] = summary

    def count(day: dt.date) -> DaySummary:
        return DaySummary.of(count_and_keep(archive, day, stamps.get(day, ""), now, grace_days))

    missing = [day for day in days if day not in found]
    for summary in ordered_map(count, missing, workers=workers):
        found[summary.day] = summary
    return [found[day] for day in days]


def _month_end(day: dt.date) -> dt.date:
    following = (day.replace(day=28) + dt.timedelta(days=4)).replace(day=1)
    return following - dt.timedelta(days=1)


def _digest(days: list[dt.date], stamps: dict[dt.date, str]) -> str:
    """What a month's figures were counted at: its days and their change stamps."""
    text = "\n".join(f"{day.isoformat()}={stamps.get(day, '')}" for day in days)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class _Sums:
    """Sums over some UTC days in the days of one zone (a month's, or all of them)."""

    def __init__(self) -> None:
        self.points: dict[dt.date, list[int]] = {}
        self.by: dict[str, dict[str, list[int]]] = {}
        self.instances = 0
        self.unreadable = 0
        self.settled = True

    def add_day(self, summary: DaySummary, tz: dt.tzinfo) -> None:
        local_day = _local_days(summary.day, tz)
        for slot, sums in summary.slots.items():
            _add(self.points.setdefault(local_day(slot), [0, 0, 0, 0]), sums)
        self._count(summary.by, summary.new_instances, summary.unreadable)
        self.settled = self.settled and summary.settled

    def add(self, other: _Sums) -> None:
        for day, sums in other.points.items():
            _add(self.points.setdefault(day, [0, 0, 0, 0]), sums)
        self._count(other.by, other.instances, other.unreadable)

    def _count(self, by: dict[str, dict[str, list[int]]], instances: int, unreadable: int) -> None:
        for dimension, values in by.items():
            into = self.by.setdefault(dimension, {})
            for value, sums in values.items():
                _add(into.setdefault(value, [0, 0, 0, 0]), sums)
        self.instances += instances
        self.unreadable += unreadable

    def finish(self, figures: ArchiveFigures) -> None:
        figures.days = [
            DayPoint(day, *sums) for day, sums in sorted(self.points.items()) if sums[0]
        ]
        figures.by = {
            dimension: {value: DayPoint(dt.date.min, *sums) for value, sums in values.items()}
            for dimension, values in self.by.items()
        }
        figures.instances = self.instances
        figures.unreadable = self.unreadable

    # Own JSON: the stored layout, read back by from_json.
    def to_json(self) -> dict[str, Any]:
        return {
            "points": {day.isoformat(): sums for day, sums in sorted(self.points.items())},
            "by": self.by,
            "instances": self.instances,
            "unreadable": self.unreadable,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> _Sums:
        sums = cls()
        sums.points = {dt.date.fromisoformat(d): list(v) for d, v in data["points"].items()}
        sums.by = data["by"]
        sums.instances = int(data["instances"])
        sums.unreadable = int(data["unreadable"])
        return sums


def _add(into: list[int], values: list[int]) -> None:
    for n, value in enumerate(values):
        into[n] += value


def _days(archive: Archive, today: dt.date) -> list[dt.date]:
    """The UTC days that may have snapshots: the day index's, and every recent day (a
    Java service beside may have added one the index does not know)."""
    recent = today - dt.timedelta(days=RECENT_DAYS)
    days = {day for day in archive.days.with_snapshots(last=today)}
    if days:
        days.update(recent + dt.timedelta(days=n) for n in range((today - recent).days + 1))
    return sorted(days)


def _local_days(utc_day: dt.date, tz: dt.tzinfo) -> Callable[[int], dt.date]:
    """slot -> the local day it falls on: arithmetic when the zone's offset is the same
    all day (every zone's offset is whole quarter-hours), else slot by slot."""
    midnight = dt.datetime.combine(utc_day, dt.time(0), dt.UTC)
    start = midnight.astimezone(tz).utcoffset()
    end = (midnight + dt.timedelta(days=1)).astimezone(tz).utcoffset()
    if start is not None and start == end:
        shift = int(start.total_seconds()) // 60 // SLOT_MINUTES
        return lambda slot: utc_day + dt.timedelta(days=(slot + shift) // SLOTS_PER_DAY)
    return lambda slot: (midnight + dt.timedelta(minutes=SLOT_MINUTES * slot)).astimezone(tz).date()

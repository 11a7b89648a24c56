"""Day aggregates: snapshots, process instances, new attachments and bytes, per day and
per dimension (``type``, workflow group, status, task, creator).

Days are those of the report's time zone (``timezones.py``, default UTC). Finished UTC
days are computed once and stored in quarter-hour cells (``cells.py``, ``day_store.py``),
from which any zone's days are assembled; a report over ten years reads ~3,650 stored
rows. The days not stored yet are computed from the by-day index
(one partition per day, several days concurrently) and stored when they are over; today
and the grace period are computed live each time. Counting rules: ``figures.py``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from typing import Any

from imixs_archive.analytics._pool import DEFAULT_WORKERS, ordered_map
from imixs_archive.analytics.cells import CellCollector, DayCells
from imixs_archive.analytics.day_facts import read_day_facts
from imixs_archive.analytics.day_store import (
    DEFAULT_GRACE_DAYS,
    is_final,
    read_stored,
    store_day,
)
from imixs_archive.analytics.figures import (
    DIMENSIONS,
    DayCounter,
    DayFigures,
    Measures,
)
from imixs_archive.analytics.localtime import SLOTS_PER_DAY, segments
from imixs_archive.analytics.month_cache import PeriodCache
from imixs_archive.archive.snapshots import Archive
from imixs_archive.budget import checkpoint
from imixs_archive.document.conventions import origin_id
from imixs_archive.timezones import local_today, zone, zone_label

PERIODS = ("day", "month", "year", "total")


@dataclass
class AggregateRow:
    """One line of a report: a period, a dimension value (None: all), its measures.

    For periods longer than a day ``instances`` is the sum of the daily counts (an
    instance with snapshots on three days counts three times): instance-days."""

    period: str
    value: str | None
    measures: Measures

    # Own JSON: a key named by the period asked for (instances or instance_days).
    def to_json(self, per: str = "day") -> dict[str, Any]:
        m = self.measures
        return {
            "period": self.period,
            "value": self.value,
            "snapshots": m.snapshots,
            "instances" if per == "day" else "instance_days": m.instances,
            "new_files": m.new_files,
            "new_bytes": m.new_bytes,
            "logical_bytes": m.logical_bytes,
        }


@dataclass
class AggregateReport:
    first: dt.date
    last: dt.date
    days: list[DayFigures] = field(default_factory=list)
    zone: str = "UTC"
    """The time zone of the days, months and years (an IANA name)."""
    unreadable: int = 0
    """Snapshots left out because they could not be read (``verify`` says why)."""
    settled: bool = True
    """False when a day met a snapshot being written or deleted (not to be kept)."""

    def drop_empty_tail(self) -> None:
        """Leave out the days after the last one with snapshots (``last`` becomes that
        day): a range open to today ends where the data does. Empty days before it stay
        (a time axis is a time axis)."""
        while self.days and self.days[-1].total.snapshots == 0:
            self.days.pop()
        if self.days:
            self.last = self.days[-1].day

    def count(self, source: str) -> int:
        """How many days came from ``stored``, ``computed`` or ``live``."""
        return sum(1 for day in self.days if day.source == source)

    def rows(self, by: str | None = None, per: str = "day") -> list[AggregateRow]:
        """Lines per period (``day``, ``month``, ``year``, ``total``) and, with ``by``, per
        value of that dimension; ordered by period, then by snapshots (most first)."""
        if by is not None and by not in DIMENSIONS:
            raise ValueError(f"unknown dimension {by!r}; one of {', '.join(DIMENSIONS)}")
        if per not in PERIODS:
            raise ValueError(f"unknown period {per!r}; one of {', '.join(PERIODS)}")
        sums: dict[str, dict[str | None, Measures]] = {}
        for figures in self.days:
            period = _period(figures.day, per, self)
            bucket = sums.setdefault(period, {})
            if by is None:
                bucket.setdefault(None, Measures()).add(figures.total)
                continue
            for value, measures in figures.by.get(by, {}).items():
                bucket.setdefault(value, Measures()).add(measures)
        rows: list[AggregateRow] = []
        for period in sorted(sums):
            ordered = sorted(sums[period].items(), key=lambda kv: (-kv[1].snapshots, kv[0] or ""))
            rows += [AggregateRow(period, value, m) for value, m in ordered]
        return rows

    # Own JSON: rows summed by the dimension and period asked for.
    def to_json(self, by: str | None = None, per: str = "day") -> dict[str, Any]:
        return {
            "from": self.first.isoformat(),
            "to": self.last.isoformat(),
            "tz": self.zone,
            "by": by,
            "per": per,
            "days": {s: self.count(s) for s in ("stored", "computed", "live")},
            "rows": [row.to_json(per) for row in self.rows(by, per)],
        }


def _period(day: dt.date, per: str, report: AggregateReport) -> str:
    if per == "day":
        return day.isoformat()
    if per == "month":
        return day.strftime("%Y-%m")
    if per == "year":
        return str(day.year)
    return f"{report.first.isoformat()}..{report.last.isoformat()}"


def aggregate_days(
    archive: Archive,
    first: dt.date,
    last: dt.date,
    *,
    now: dt.datetime | None = None,
    grace_days: int = DEFAULT_GRACE_DAYS,
    workers: int = DEFAULT_WORKERS,
    recompute: bool = False,
    tz: dt.tzinfo | str | None = None,
    only_days: Collection[dt.date] | None = None,
) -> AggregateReport:
    """The figures of every day in ``[first, last]`` of the time zone ``tz`` (default
    UTC; days after today there are left out). ``only_days``: the UTC days that may have
    snapshots; the others are counted empty without asking the store. Finished local
    months come whole from their kept figures (``month_cache.py``: counted once, from the
    days' cells); the others are counted (:func:`_count_days`). ``recompute``: count and
    store every finished UTC day again, keeping no month."""
    zone_info = tz if isinstance(tz, dt.tzinfo) else zone(tz)
    now = now or dt.datetime.now(dt.UTC)
    last = min(last, local_today(now, zone_info))
    how = _Counting(now, zone_info, grace_days, workers, recompute, only_days)
    if recompute or first > last:
        return _count_days(archive, first, last, how)
    report = AggregateReport(first, last, zone=zone_label(zone_info))
    months = PeriodCache(archive, zone_info, now, grace_days)

    def count(a: dt.date, b: dt.date) -> AggregateReport:
        return _count_days(archive, a, b, how)

    for month_first, month_last, part_first, part_last in months.units(first, last):
        counted: list[AggregateReport] = []

        def count_month(
            a: dt.date = month_first, b: dt.date = month_last, into: list[Any] = counted
        ) -> tuple[Any, bool]:
            into.append(count(a, b))
            whole = into[0]
            return [_day_json(d) for d in whole.days], whole.settled and not whole.unreadable

        kept = months.get("days", (month_first, month_last), count_month)
        if kept is None:  # not over: the range's days of it, counted now
            counted.append(count(part_first, part_last))
        if counted:  # counted now: the days as counted, with their sources
            report.days += [d for d in counted[0].days if part_first <= d.day <= part_last]
            report.unreadable += counted[0].unreadable
            report.settled = report.settled and counted[0].settled
        elif kept is not None:
            days = map(_day_of, kept)
            report.days += [day for day in days if part_first <= day.day <= part_last]
    return report


def _day_json(day: DayFigures) -> list[Any]:
    """A day's figures in a month's kept row: [day, total, {dimension: {value: sums}}]."""
    by = {d: {v: _sums(m) for v, m in values.items()} for d, values in day.by.items()}
    return [day.day.isoformat(), _sums(day.total), by]


def _sums(m: Measures) -> list[int]:
    return [m.snapshots, m.instances, m.new_files, m.new_bytes, m.logical_bytes]


def _day_of(data: list[Any]) -> DayFigures:
    day, total, by = data
    return DayFigures(
        dt.date.fromisoformat(day),
        Measures(*total),
        {d: {v: Measures(*sums) for v, sums in values.items()} for d, values in by.items()},
        source="stored",
    )


@dataclass(frozen=True)
class _Counting:
    """How :func:`aggregate_days` counts, as it was asked (``now`` and the zone settled)."""

    now: dt.datetime
    zone: dt.tzinfo
    grace_days: int
    workers: int
    recompute: bool
    only_days: Collection[dt.date] | None


def _count_days(archive: Archive, first: dt.date, last: dt.date, how: _Counting) -> AggregateReport:
    """The figures of every day in ``[first, last]`` of the zone, counted from the cells
    of the UTC days they cover (``only_days``: as :func:`aggregate_days`).

    The UTC days the local days cover are read from the store; the others are computed,
    and stored when they are over (``recompute``: compute and store every finished UTC
    day again). Local days are assembled from their quarter-hour cells."""
    now, zone_info, only_days = how.now, how.zone, how.only_days
    utc_today = now.astimezone(dt.UTC).date()
    last = min(last, local_today(now, zone_info))
    report = AggregateReport(first, last, zone=zone_label(zone_info))
    if first > last:
        return report
    pieces = {day: segments(day, zone_info) for day in _days(first, last)}
    needed = sorted({u for segs in pieces.values() for u, _, _ in segs if u <= utc_today})
    if not needed:
        return report
    asked = needed if only_days is None else [u for u in needed if u in only_days]
    cells = _utc_days(archive, asked, how) if asked else {}
    for utc_day in needed:
        cells.setdefault(utc_day, DayCells(utc_day, source="stored"))
    report.days = [_assemble(day, pieces[day], cells, now) for day in _days(first, last)]
    report.unreadable = sum(c.unreadable for c in cells.values())
    report.settled = all(c.settled for c in cells.values())
    return report


def _utc_days(archive: Archive, needed: list[dt.date], how: _Counting) -> dict[dt.date, DayCells]:
    """The cells of the UTC days: stored ones read while the day's change stamp is theirs,
    the others computed (and stored). The stamps are read before anything else."""
    stamps: dict[dt.date, str] = {}
    for year in sorted({day.year for day in needed}):  # the years asked for only
        start, end = dt.date(year, 1, 1), dt.date(year, 12, 31)
        stamps.update(archive.days.stamps(max(needed[0], start), min(needed[-1], end)))
    stored = {} if how.recompute else read_stored(archive, needed, workers=how.workers)
    found = {day: c for day, c in stored.items() if c.stamp == stamps.get(day, "")}
    missing = [day for day in needed if day not in found]

    def compute(day: dt.date) -> DayCells:
        return count_and_keep(archive, day, stamps.get(day, ""), how.now, how.grace_days)

    found.update({c.day: c for c in ordered_map(compute, missing, workers=how.workers)})
    return found


def count_and_keep(
    archive: Archive, day: dt.date, stamp: str, now: dt.datetime, grace_days: int
) -> DayCells:
    """Count one UTC day (:func:`compute_cells`) with the change stamp read before, and
    store its cells and summary when it is over and met nothing half written. Stops here
    when the request (or ``serve``) does (``budget.checkpoint``)."""
    checkpoint()
    final = is_final(day, now.astimezone(dt.UTC).date(), grace_days)
    cells = compute_cells(archive, day, "computed" if final else "live", now)
    cells.stamp = stamp
    if final and cells.settled:
        store_day(archive, cells)
    return cells


def _assemble(
    day: dt.date,
    pieces: list[tuple[dt.date, int, int]],
    cells: dict[dt.date, DayCells],
    now: dt.datetime,
) -> DayFigures:
    """One local day from the cells of the UTC days it covers. Its source: ``live`` when
    any part is, else ``computed`` when any part was computed now, else ``stored``."""
    counter = DayCounter(day)
    sources: set[str] = set()
    computed_at: list[dt.datetime] = []
    for utc_day, first_slot, end_slot in pieces:
        part = cells.get(utc_day)
        if part is None:
            continue  # after today: nothing archived yet
        part.add_to(counter, first_slot, end_slot)
        sources.add(part.source)
        if part.computed_at is not None:
            computed_at.append(part.computed_at)
    source = next((s for s in ("live", "computed", "stored") if s in sources), "live")
    return counter.finish(source, min(computed_at, default=now))


def _days(first: dt.date, last: dt.date) -> Iterator[dt.date]:
    day = first
    while day <= last:
        yield day
        day += dt.timedelta(days=1)


def compute_day(
    archive: Archive,
    day: dt.date,
    source: str = "live",
    now: dt.datetime | None = None,
) -> DayFigures:
    """The figures of one whole UTC day, counted from the archive."""
    now = now or dt.datetime.now(dt.UTC)
    counter = DayCounter(day)
    compute_cells(archive, day, source, now).add_to(counter, 0, SLOTS_PER_DAY)
    return counter.finish(source, now)


def compute_cells(
    archive: Archive,
    day: dt.date,
    source: str = "live",
    now: dt.datetime | None = None,
    *,
    repair: bool = True,
) -> DayCells:
    """Count one UTC day from the archive, per quarter-hour of ``$modified``: its index
    partition and its snapshots' facts (``archive/facts.py``; no XML is read). A snapshot
    without a fact has it counted from its XML and written (``repair``; else left out);
    figures that needed one, or met a snapshot being written or deleted, are not kept
    (``settled``)."""
    collector = CellCollector(day)
    read = read_day_facts(archive, day, repair=repair)
    firsts = 0
    for snapshot_id, fact in read:
        firsts += fact.first
        collector.add(
            fact.slot,
            origin_id(snapshot_id),
            fact.label_map(),
            len(fact.new_files),
            fact.new_bytes,
            fact.logical,
        )
    cells = collector.finish(source, now or dt.datetime.now(dt.UTC))
    cells.settled, cells.unreadable, cells.new_instances = read.settled, read.unreadable, firsts
    return cells

"""Lead times: per workflow group, the time from the first to the last snapshot of each
finished process instance, with percentiles.

An instance is *finished* when its newest snapshot matches :class:`Finished`: its
``$workflowstatus`` is one of ``statuses`` (case-insensitive), or its ``type`` is one of
``types`` (``snapshot-workitemarchive``: Imixs archived the workitem). Its group is the
``$workflowgroup`` of that newest snapshot. Times are those of the snapshot ids. An
instance whose older snapshots were removed (``$snapshot.history``) reports the time
from its oldest snapshot still archived.

Over the whole archive: one streaming pass over ``snapshots_by_uniqueid`` (paged; the
rows of an instance come together), then one snapshot read per instance, several at a
time. Over a range of days (``finished_from`` / ``finished_to``): the snapshots of the
range's days (the day index and their facts, ``archive/facts.py``), then one partition
read per process instance met there to find its first and last snapshot; the newest
snapshot's status, type and group come from its fact (its XML is read only when it has
none). That costs what the range holds, not what the archive does.
"""

from __future__ import annotations

import datetime as dt
import math
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from imixs_archive.analytics._pool import DEFAULT_WORKERS, ordered_map
from imixs_archive.analytics.day_facts import instances_on_days, within_archive
from imixs_archive.analytics.month_cache import PeriodCache
from imixs_archive.archive.facts import Fact
from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.conventions import snapshot_time
from imixs_archive.document.labels import label
from imixs_archive.document.model import Document
from imixs_archive.timezones import day_bounds

DEFAULT_FINISHED_STATUSES = ("completed", "closed", "finished", "archived")
DEFAULT_FINISHED_TYPES = ("snapshot-workitemarchive",)
PERCENTILES = (50, 75, 90, 95, 99)


@dataclass(frozen=True)
class Finished:
    """When a process instance counts as finished (see the module docstring)."""

    statuses: frozenset[str] = frozenset(DEFAULT_FINISHED_STATUSES)
    types: frozenset[str] = frozenset(DEFAULT_FINISHED_TYPES)

    @classmethod
    def of(cls, statuses: Iterable[str], types: Iterable[str] = DEFAULT_FINISHED_TYPES) -> Finished:
        return cls(
            frozenset(s.strip().lower() for s in statuses if s.strip()),
            frozenset(t.strip().lower() for t in types if t.strip()),
        )

    def matches(self, status: str, kind: str) -> bool:
        return status.lower() in self.statuses or kind.lower() in self.types


@dataclass
class LeadTimes:
    """Lead times of one workflow group, in seconds."""

    group: str
    samples: array[float] = field(default_factory=lambda: array("d"), repr=False)

    @property
    def count(self) -> int:
        return len(self.samples)

    def percentile(self, q: float) -> float:
        return percentile(sorted(self.samples), q)

    # Own JSON: percentiles of the samples, not the samples.
    def to_json(self) -> dict[str, Any]:
        """Seconds to the millisecond (the precision of the snapshots' times): no
        ``528679.6433500001`` from interpolating percentiles."""
        ordered = sorted(self.samples)
        data: dict[str, Any] = {"group": self.group, "count": len(ordered)}
        if ordered:
            figures = {"min": ordered[0], "max": ordered[-1], "mean": sum(ordered) / len(ordered)}
            figures.update({f"p{q}": percentile(ordered, q) for q in PERCENTILES})
            data.update({name: round(value, 3) for name, value in figures.items()})
        return data


def percentile(ordered: list[float], q: float) -> float:
    """The q-th percentile of sorted values, interpolating linearly between the two
    nearest ranks (numpy's default, Excel's PERCENTILE.INC)."""
    if not ordered:
        raise ValueError("no values")
    position = (len(ordered) - 1) * q / 100
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def lead_times(
    archive: Archive,
    *,
    group: str | None = None,
    finished: Finished | None = None,
    finished_from: dt.date | None = None,
    finished_to: dt.date | None = None,
    workers: int = DEFAULT_WORKERS,
    tz: dt.tzinfo = dt.UTC,
    now: dt.datetime | None = None,
) -> list[LeadTimes]:
    """Lead times per workflow group (only ``group`` when given), largest group first.
    ``finished_from`` / ``finished_to`` keep instances whose last snapshot (its day in
    the time zone ``tz``) is in that range. With the default rule of what is finished,
    the range (the archive's whole span when open) is read by local months, finished ones
    from their kept samples (``month_cache.py``); another rule reads every instance."""
    finished = finished or Finished()
    wanted = (group or "").strip().lower() or None
    if finished == Finished() or (finished_from is not None and finished_to is not None):
        # a range (the archive's whole span when open; its finished months are kept),
        # never wider than the days that may have snapshots: a range ending in a far
        # year reads as many months as the archive has, not as the calendar has
        today = (now or dt.datetime.now(dt.UTC)).astimezone(tz).date()
        days = within_archive(archive, finished_from, finished_to, today)
        if days is None:
            return []
        finished_from, finished_to = days
    groups: dict[str, LeadTimes] = {}

    def take(name: str, seconds: float) -> None:
        """A sample into its group's array (8 bytes each: memory flat as years add up)."""
        if wanted is None or name.lower() == wanted:
            groups.setdefault(name, LeadTimes(name)).samples.append(seconds)

    bounds = (finished_from, finished_to)
    if finished_from is not None and finished_to is not None:
        _range_samples(archive, (finished_from, finished_to), tz, finished, workers, now, take)
    else:  # another rule with an open end: every instance
        every = archive.index.iter_instances()
        for _day, name, seconds in _samples(archive, every, {}, bounds, tz, finished, workers):
            take(name, seconds)
    return sorted(groups.values(), key=lambda g: (-g.count, g.group))


Sample = tuple[str, str, float]
"""(local day of the last snapshot, ISO; workflow group; seconds from first to last)."""


def _range_samples(
    archive: Archive,
    bounds: tuple[dt.date, dt.date],
    tz: dt.tzinfo,
    finished: Finished,
    workers: int,
    now: dt.datetime | None,
    take: Callable[[str, float], None],
) -> None:
    """The samples (group, seconds) of the instances finished in a range, to ``take``:
    per local month, the kept ones of a finished month (default rule only), else counted
    from the month's days; a month's at a time in memory."""

    def count(first: dt.date, last: dt.date) -> list[Sample]:
        labels: dict[str, tuple[str, str, str]] = {}
        ids = _instances_of_range(archive, first, last, tz, labels)
        return _samples(archive, ids, labels, (first, last), tz, finished, workers)

    months = PeriodCache(archive, tz, now or dt.datetime.now(dt.UTC))
    for month_first, month_last, part_first, part_last in months.units(*bounds):
        kept = None
        if finished == Finished():

            def count_month(a: dt.date = month_first, b: dt.date = month_last) -> Any:
                return count(a, b), True  # a month's samples need no settled days

            kept = months.get("leads", (month_first, month_last), count_month)
        samples = kept if kept is not None else count(part_first, part_last)
        first, last = part_first.isoformat(), part_last.isoformat()
        for day, group, seconds in samples:
            if first <= day <= last:
                take(group, float(seconds))


def _samples(
    archive: Archive,
    instances: Iterable[list[str]],
    labels: dict[str, tuple[str, str, str]],
    bounds: tuple[dt.date | None, dt.date | None],
    tz: dt.tzinfo,
    finished: Finished,
    workers: int,
) -> list[Sample]:
    """A sample per finished instance of ``instances`` (ids oldest first) whose last
    snapshot's local day is within ``bounds``; ``labels``: (status, type, group) of
    snapshots known from their facts (else the newest complete one is read)."""

    def day_of(ids: list[str]) -> dt.date:
        return snapshot_time(ids[-1]).astimezone(tz).date()

    def in_range(ids: list[str]) -> bool:
        day = day_of(ids)
        return (bounds[0] is None or day >= bounds[0]) and (bounds[1] is None or day <= bounds[1])

    def judge(ids: list[str]) -> Sample | None:
        newest_id = ids[-1]
        known = labels.get(newest_id)
        if known is None:
            newest = _newest_complete(archive, ids)
            if newest is None:
                return None
            doc, newest_id = newest
            known = (
                label(doc.get_first("$workflowstatus")),
                label(doc.get_first("type")),
                label(doc.get_first("$workflowgroup")),
            )
        status, kind, name = known
        if not finished.matches(status, kind):
            return None
        seconds = (snapshot_time(newest_id) - snapshot_time(ids[0])).total_seconds()
        return day_of(ids).isoformat(), name, seconds

    ranged = (ids for ids in instances if in_range(ids))
    return [s for s in ordered_map(judge, ranged, workers=workers) if s is not None]


def _instances_of_range(
    archive: Archive,
    first: dt.date,
    last: dt.date,
    tz: dt.tzinfo,
    labels: dict[str, tuple[str, str, str]],
) -> Iterator[list[str]]:
    """The ids (oldest first) of each process instance with a snapshot on the UTC days
    about the local days ``[first, last]``; ``labels`` gets (status, type, group) of each
    snapshot met there that has a fact (its newest, when that is in the range)."""

    def note(snapshot_id: str, fact: Fact | None) -> bool:
        if fact is not None:
            values = fact.label_map()
            labels[snapshot_id] = (values["status"], values["type"], values["group"])
        return True

    start = day_bounds(first, tz)[0].date() - dt.timedelta(days=1)
    end = day_bounds(last, tz)[1].date() + dt.timedelta(days=1)
    return instances_on_days(archive, start, end, note)


def _newest_complete(archive: Archive, ids: list[str]) -> tuple[Document, str] | None:
    for snapshot_id in reversed(ids):
        doc = archive.load_complete(snapshot_id)
        if doc is not None:
            return doc, snapshot_id
    return None

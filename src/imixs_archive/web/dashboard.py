"""The figures behind the Statistics page, computed from the store and cached briefly.

Counts and bytes come from :func:`archive_stats` (the store's own tables). Types and the
growth over time per day of ``ARCHIVE_TIMEZONE`` (snapshots, the attachment bytes they
carry, the bytes of files first seen that day) are the analytics' day figures over the
whole archive (:func:`whole_archive`, finished days read from their stored cells): the
same count as ``stats --json``, ``/api/stats`` and ``/api/analytics/aggregates``.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from imixs_archive.analytics.aggregates import AggregateReport, whole_archive
from imixs_archive.archive.snapshots import Archive
from imixs_archive.services.statistics import archive_stats

T = TypeVar("T")


@dataclass
class GrowthPoint:
    day: dt.date
    snapshots: int = 0
    logical_bytes: int = 0
    new_file_bytes: int = 0


@dataclass
class Dashboard:
    computed: dt.datetime
    seconds: float
    stats: dict[str, Any]
    types: list[tuple[str, int]] = field(default_factory=list)
    growth: list[GrowthPoint] = field(default_factory=list)
    unreadable: int = 0
    tz: str = "UTC"
    """The time zone of the days (``ARCHIVE_TIMEZONE``)."""

    def cumulative(self) -> list[tuple[dt.date, int, int, int]]:
        """(day, snapshots, logical bytes, distinct file bytes) up to and including day."""
        out: list[tuple[dt.date, int, int, int]] = []
        snapshots = logical = stored = 0
        for point in self.growth:
            snapshots += point.snapshots
            logical += point.logical_bytes
            stored += point.new_file_bytes
            out.append((point.day, snapshots, logical, stored))
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "computed": self.computed.isoformat(timespec="seconds"),
            "seconds": round(self.seconds, 3),
            "tz": self.tz,
            "per_day": {point.day.isoformat(): point.snapshots for point in self.growth},
            "new_bytes_per_day": {
                point.day.isoformat(): point.new_file_bytes for point in self.growth
            },
            "stats": self.stats,
            "types": [{"type": name, "snapshots": count} for name, count in self.types],
            "growth": [
                {
                    "day": day.isoformat(),
                    "snapshots": snapshots,
                    "logical_bytes": logical,
                    "file_bytes": stored,
                }
                for day, snapshots, logical, stored in self.cumulative()
            ],
            "unreadable": self.unreadable,
        }


def growth_of(report: AggregateReport) -> list[GrowthPoint]:
    """The days of a report that have snapshots or new bytes, as growth points."""
    return [
        GrowthPoint(d.day, d.total.snapshots, d.total.logical_bytes, d.total.new_bytes)
        for d in report.days
        if d.total.snapshots or d.total.new_bytes
    ]


def compute_dashboard(archive: Archive, tz: dt.tzinfo = dt.UTC) -> Dashboard:
    start = time.perf_counter()
    report = whole_archive(archive, tz=tz)
    stats = archive_stats(archive, report=report)
    types = [(r.value or "(none)", r.measures.snapshots) for r in report.rows("type", "total")]
    return Dashboard(
        computed=dt.datetime.now(dt.UTC),
        seconds=time.perf_counter() - start,
        stats=stats,
        types=types,
        growth=growth_of(report),
        unreadable=report.unreadable,
        tz=report.zone,
    )


class DashboardCache:
    """The last dashboard, recomputed when older than ``ttl`` seconds (one at a time)."""

    def __init__(self, archive: Archive, ttl: float = 30.0, tz: dt.tzinfo = dt.UTC) -> None:
        self.archive = archive
        self.tz = tz
        self.ttl = ttl
        self._value: Dashboard | None = None
        self._at = 0.0
        self._lock = threading.Lock()

    def get(self, *, refresh: bool = False) -> Dashboard:
        with self._lock:
            fresh = self._value is not None and time.monotonic() - self._at < self.ttl
            if self._value is not None and fresh and not refresh:
                return self._value
            self._value = compute_dashboard(self.archive, self.tz)
            self._at = time.monotonic()
            return self._value

    def peek(self) -> Dashboard | None:
        return self._value


class TimedCache:
    """Recent results by key (e.g. the analytics of the Statistics page for one range),
    each kept ``ttl`` seconds; at most ``size`` keys, the oldest dropped first."""

    def __init__(self, ttl: float = 60.0, size: int = 16) -> None:
        self.ttl = ttl
        self.size = size
        self._values: OrderedDict[Hashable, tuple[float, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, compute: Callable[[], T], *, refresh: bool = False) -> T:
        with self._lock:
            found = self._values.get(key)
        if found is not None and not refresh and time.monotonic() - found[0] < self.ttl:
            value: T = found[1]
            return value
        computed = compute()  # outside the lock: other keys are not held up
        with self._lock:
            self._values[key] = (time.monotonic(), computed)
            self._values.move_to_end(key)
            while len(self._values) > self.size:
                self._values.popitem(last=False)
        return computed

"""The figures behind the Statistics page and the Monitor, cached briefly.

Counts and bytes come from :func:`archive_stats`; types and the growth over time per day
of ``ARCHIVE_TIMEZONE`` (snapshots, the attachment bytes they carry, the bytes of the
files they brought) from the same day summaries (:func:`archive_figures`): the same count
as ``stats --json`` and ``/api/stats``, at a cost that follows the days the archive
spans, not its snapshots.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from imixs_archive.analytics.archive_figures import DayPoint, archive_figures
from imixs_archive.archive.snapshots import Archive
from imixs_archive.services.statistics import archive_stats

T = TypeVar("T")


@dataclass
class Dashboard:
    computed: dt.datetime
    seconds: float
    stats: dict[str, Any]
    types: list[tuple[str, int]] = field(default_factory=list)
    growth: list[DayPoint] = field(default_factory=list)
    """The days with snapshots."""
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
            stored += point.new_bytes
            out.append((point.day, snapshots, logical, stored))
        return out

    # Own JSON: the growth series and per-day maps are derived from the days.
    def to_json(self) -> dict[str, Any]:
        return {
            "computed": self.computed.isoformat(timespec="seconds"),
            "seconds": round(self.seconds, 3),
            "tz": self.tz,
            "per_day": {point.day.isoformat(): point.snapshots for point in self.growth},
            "new_bytes_per_day": {point.day.isoformat(): point.new_bytes for point in self.growth},
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


def compute_dashboard(archive: Archive, tz: dt.tzinfo = dt.UTC) -> Dashboard:
    start = time.perf_counter()
    figures = archive_figures(archive, tz=tz)
    stats = archive_stats(archive, figures=figures)
    types = [(value or "(none)", count) for value, count in figures.ranked("type")]
    return Dashboard(
        computed=dt.datetime.now(dt.UTC),
        seconds=time.perf_counter() - start,
        stats=stats,
        types=types,
        growth=figures.days,
        unreadable=figures.unreadable,
        tz=figures.zone,
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
        """The dashboard: the kept one while fresh, or while another thread counts a new
        one (a viewer does not wait for it); else counted now."""
        value = self._value
        if value is not None and not refresh and (self._fresh() or self._lock.locked()):
            return value
        with self._lock:
            if self._value is not None and not refresh and self._fresh():
                return self._value  # counted while this one waited
            self._value = compute_dashboard(self.archive, self.tz)
            self._at = time.monotonic()
            return self._value

    def _fresh(self) -> bool:
        return time.monotonic() - self._at < self.ttl

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

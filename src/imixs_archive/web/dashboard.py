"""The figures behind the Statistics page, computed from the store and cached briefly.

Counts and bytes come from :func:`collect_stats` (the store's own tables). Types and the
growth over time need one pass over the snapshots (each read without file contents): per
``$modified`` day (days of ``ARCHIVE_TIMEZONE``), the snapshots added, their attachment
bytes (the ``size`` attribute of each ``$file`` entry) and the bytes of files first seen
that day (by ``md5checksum``).
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from imixs_archive.analytics.localtime import zone_label
from imixs_archive.archive.snapshots import Archive
from imixs_archive.archive.stats import collect_stats
from imixs_archive.document.conventions import iter_files, modified_time
from imixs_archive.errors import ArchiveError

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
    stats = collect_stats(archive.backend).to_json()
    types: Counter[str] = Counter()
    points: dict[dt.date, GrowthPoint] = {}
    first_seen: dict[str, tuple[dt.date, int]] = {}
    unreadable = 0
    for snapshot_id in archive.iter_snapshot_ids():
        try:
            doc = archive.load(snapshot_id, with_files=False)
            day = modified_time(doc).astimezone(tz).date()
            entries = list(iter_files(doc))
        except ArchiveError:
            unreadable += 1
            continue
        types[str(doc.get_first("type", "") or "(none)")] += 1
        point = points.setdefault(day, GrowthPoint(day))
        point.snapshots += 1
        for entry in entries:
            size = entry.size or 0
            point.logical_bytes += size
            key = (entry.md5checksum or f"{snapshot_id}/{entry.name}").upper()
            seen = first_seen.get(key)
            if seen is None or day < seen[0]:
                first_seen[key] = (day, size)
    for day, size in first_seen.values():
        points.setdefault(day, GrowthPoint(day)).new_file_bytes += size
    return Dashboard(
        computed=dt.datetime.now(dt.UTC),
        seconds=time.perf_counter() - start,
        stats=stats,
        types=types.most_common(),
        growth=[points[day] for day in sorted(points)],
        unreadable=unreadable,
        tz=zone_label(tz),
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

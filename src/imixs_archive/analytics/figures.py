"""The figures of one day, per dimension, and how they are counted.

A snapshot belongs to the day of its ``$modified`` in the report's time zone
(``timezones.py``). For a day, and for each value of each dimension on that day:

* ``snapshots``: snapshots of the day (with that value);
* ``instances``: distinct process instances (origin ids) with a snapshot that day (with
  that value). An instance whose status changed during the day counts once under each
  status, and once in the day's total;
* ``new_files`` / ``new_bytes``: attachments that one of the day's snapshots (with that
  value) brought into the archive, and their sizes. A file is identified by its stored
  key (``archive_snapshot_files.md5``: its MD5, or a collision key), so the same content
  attached to two instances is new once. A snapshot brings a file when no other snapshot
  referred to it as it was stored; when that snapshot is deleted, another one carrying the
  file brings it in its place (``archive/facts.py``). Sizes come from ``archive_files``
  (the ``size`` attribute for files the Java service wrote);
* ``logical_bytes``: the attachment bytes the day's snapshots carry (each file's stored
  size, else its ``size`` attribute; a file in ten snapshots ten times).

Dimensions are items of the snapshot, first value, as text (missing: ``""``); ``creator``
is ``$creator``, else ``namcreator`` (older data).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from imixs_archive.archive.facts import DIMENSIONS

__all__ = ["DIMENSIONS", "DayCounter", "DayFigures", "Measures"]


@dataclass
class Measures:
    snapshots: int = 0
    instances: int = 0
    new_files: int = 0
    new_bytes: int = 0
    logical_bytes: int = 0

    def add(self, other: Measures) -> None:
        """Five sums written out: called for every snapshot and label a day counts (a
        field walk, ``tallies.add_up``, cost 12 times as much there)."""
        self.snapshots += other.snapshots
        self.instances += other.instances
        self.new_files += other.new_files
        self.new_bytes += other.new_bytes
        self.logical_bytes += other.logical_bytes

    def as_list(self) -> list[int]:
        return [self.snapshots, self.instances, self.new_files, self.new_bytes]

    @classmethod
    def from_list(cls, values: list[Any]) -> Measures:
        snapshots, instances, new_files, new_bytes = (int(v) for v in values)
        return cls(snapshots, instances, new_files, new_bytes)


@dataclass
class DayFigures:
    """What one day holds. ``source``: ``stored`` (read back), ``computed`` (computed now
    and stored: the day is over), ``live`` (computed now, not stored: the day may still
    receive snapshots)."""

    day: dt.date
    total: Measures = field(default_factory=Measures)
    by: dict[str, dict[str, Measures]] = field(default_factory=dict)
    source: str = "live"
    computed_at: dt.datetime | None = None

    # Own JSON: the stored layout (measures as lists), read back by from_json.
    def to_json(self) -> dict[str, Any]:
        return {
            "day": self.day.isoformat(),
            "source": self.source,
            "computed_at": self.computed_at.isoformat() if self.computed_at else None,
            "total": self.total.as_list(),
            "by": {
                dimension: {value: m.as_list() for value, m in sorted(values.items())}
                for dimension, values in sorted(self.by.items())
            },
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], *, source: str) -> DayFigures:
        computed = data.get("computed_at")
        return cls(
            day=dt.date.fromisoformat(data["day"]),
            total=Measures.from_list(data["total"]),
            by={
                dimension: {value: Measures.from_list(m) for value, m in values.items()}
                for dimension, values in data["by"].items()
            },
            source=source,
            computed_at=dt.datetime.fromisoformat(computed) if computed else None,
        )


class DayCounter:
    """Adds up the snapshots of one day."""

    def __init__(self, day: dt.date) -> None:
        self.day = day
        self._total = Measures()
        self._origins: set[str] = set()
        self._by: dict[str, dict[str, Measures]] = {d: {} for d in DIMENSIONS}
        self._by_origins: dict[tuple[str, str], set[str]] = {}

    def add(
        self,
        origin: str,
        labels: dict[str, str],
        new_files: int,
        new_bytes: int,
        snapshots: int = 1,
        logical_bytes: int = 0,
    ) -> None:
        one = Measures(snapshots, 0, new_files, new_bytes, logical_bytes)
        self._total.add(one)
        self._origins.add(origin)
        for dimension, value in labels.items():
            self._by[dimension].setdefault(value, Measures()).add(one)
            self._by_origins.setdefault((dimension, value), set()).add(origin)

    def finish(self, source: str, now: dt.datetime) -> DayFigures:
        self._total.instances = len(self._origins)
        for (dimension, value), origins in self._by_origins.items():
            self._by[dimension][value].instances = len(origins)
        return DayFigures(self.day, self._total, self._by, source, now)

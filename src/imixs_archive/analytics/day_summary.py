"""One UTC day's figures without process instance ids: what whole-archive views read.

A day's cells (``cells.py``) keep the process instance of every cell, so that the
distinct instances of any local day can be counted; they grow with the day's snapshots.
The views of the whole archive (``stats``, the Statistics page, the Monitor) need sums
only: snapshots, new files and bytes and the bytes carried per quarter-hour (from which
the days of any time zone are assembled), the same per value of each dimension over the
day, and the process instances the day brought into the archive. That is this summary: a
few KB whatever the day holds, so a view over ten years reads ~3,650 of them.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from imixs_archive.analytics.cells import DayCells
from imixs_archive.analytics.figures import DIMENSIONS
from imixs_archive.analytics.localtime import SLOT_MINUTES

SUMS = ("snapshots", "new_files", "new_bytes", "logical_bytes")
"""What each list of sums holds, in order."""


def _add(into: list[int], values: list[int]) -> None:
    for n, value in enumerate(values):
        into[n] += value


@dataclass
class DaySummary:
    day: dt.date
    slots: dict[int, list[int]] = field(default_factory=dict)
    """Quarter-hour -> the sums (``SUMS``) of its snapshots; empty slots left out."""
    by: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    """Dimension -> value -> the sums of the day's snapshots with that value."""
    new_instances: int = 0
    stamp: str = ""
    unreadable: int = 0
    source: str = "stored"
    settled: bool = True

    @classmethod
    def of(cls, cells: DayCells) -> DaySummary:
        summary = cls(
            cells.day,
            by={d: {} for d in DIMENSIONS},
            new_instances=cells.new_instances,
            stamp=cells.stamp,
            unreadable=cells.unreadable,
            source=cells.source,
            settled=cells.settled,
        )
        for slot, _origin, labels, snapshots, new_files, new_bytes, logical in cells.cells:
            sums = [snapshots, new_files, new_bytes, logical]
            _add(summary.slots.setdefault(slot, [0, 0, 0, 0]), sums)
            for dimension, value in zip(DIMENSIONS, cells.labels[labels], strict=True):
                _add(summary.by[dimension].setdefault(value, [0, 0, 0, 0]), sums)
        return summary

    # Own JSON: the stored layout with its layout marks, read back by from_json.
    def to_json(self) -> dict[str, Any]:
        return {
            "day": self.day.isoformat(),
            "slot_minutes": SLOT_MINUTES,
            "sums": list(SUMS),
            "stamp": self.stamp,
            "new_instances": self.new_instances,
            "slots": {str(slot): sums for slot, sums in sorted(self.slots.items())},
            "by": self.by,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DaySummary:
        if data.get("slot_minutes") != SLOT_MINUTES or data.get("sums") != list(SUMS):
            raise ValueError("a stored day summary of another layout")
        return cls(
            dt.date.fromisoformat(data["day"]),
            slots={int(slot): [int(v) for v in sums] for slot, sums in data["slots"].items()},
            by={
                str(dimension): {str(v): [int(n) for n in sums] for v, sums in values.items()}
                for dimension, values in data["by"].items()
            },
            new_instances=int(data["new_instances"]),
            stamp=str(data["stamp"]),
        )

"""What is stored of one UTC day: its snapshots grouped into cells of (quarter-hour slot,
process instance, dimension values), each with its snapshots, new files and new bytes.

Snapshots, files and bytes of any span of slots are sums; distinct process instances are
counted from the instance ids the cells keep, so a local day assembled from the end of
one UTC day and the start of the next counts an instance active in both once. Any time
zone's days are therefore assembled from stored cells without reading a snapshot again.
The size of a row grows with the day's cells (at most its snapshots).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from imixs_archive.analytics.figures import DIMENSIONS, DayCounter
from imixs_archive.analytics.localtime import SLOT_MINUTES

_DIMENSION_NAMES = tuple(DIMENSIONS)


@dataclass
class DayCells:
    """One UTC day. ``source``: ``stored``, ``computed`` (now, and stored) or ``live``."""

    day: dt.date
    origins: list[str] = field(default_factory=list)
    labels: list[list[str]] = field(default_factory=list)
    """Distinct dimension values, in the order of ``DIMENSIONS``."""
    cells: list[list[int]] = field(default_factory=list)
    """``[slot, origin index, labels index, snapshots, new_files, new_bytes,
    logical_bytes]``."""
    source: str = "live"
    computed_at: dt.datetime | None = None
    stamp: str = ""
    """The day's change stamp (``Archive.days.stamps``) read before it was counted."""
    settled: bool = True
    """False when a snapshot of the day was being written or deleted as it was counted,
    or could not be read: such figures are not stored."""
    unreadable: int = 0
    """Snapshots of the day that could not be read (left out; ``verify`` says why)."""
    new_instances: int = 0
    """Process instances the day's snapshots brought into the archive (``facts.py``)."""

    def add_to(self, counter: DayCounter, first_slot: int, end_slot: int) -> None:
        """Count the cells whose slot is in ``[first_slot, end_slot)``."""
        label_maps = [dict(zip(_DIMENSION_NAMES, v, strict=True)) for v in self.labels]
        for slot, origin, labels, snapshots, new_files, new_bytes, logical in self.cells:
            if first_slot <= slot < end_slot:
                counter.add(
                    self.origins[origin],
                    label_maps[labels],
                    new_files,
                    new_bytes,
                    snapshots,
                    logical,
                )

    # Own JSON: the stored layout with its layout marks, read back by from_json.
    def to_json(self) -> dict[str, Any]:
        return {
            "day": self.day.isoformat(),
            "slot_minutes": SLOT_MINUTES,
            "dimensions": list(_DIMENSION_NAMES),
            "computed_at": self.computed_at.isoformat() if self.computed_at else None,
            "stamp": self.stamp,
            "new_instances": self.new_instances,
            "origins": self.origins,
            "labels": self.labels,
            "cells": self.cells,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], *, source: str) -> DayCells:
        if data.get("slot_minutes") != SLOT_MINUTES or data.get("dimensions") != list(
            _DIMENSION_NAMES
        ):
            raise ValueError("stored day cells of another layout")
        computed = data.get("computed_at")
        return cls(
            day=dt.date.fromisoformat(data["day"]),
            origins=[str(o) for o in data["origins"]],
            labels=[[str(v) for v in values] for values in data["labels"]],
            cells=[[int(v) for v in cell] for cell in data["cells"]],
            source=source,
            computed_at=dt.datetime.fromisoformat(computed) if computed else None,
            stamp=str(data["stamp"]),
            new_instances=int(data["new_instances"]),
        )


class CellCollector:
    """Builds the cells of one UTC day, snapshot by snapshot."""

    def __init__(self, day: dt.date) -> None:
        self.day = day
        self._origins: dict[str, int] = {}
        self._labels: dict[tuple[str, ...], int] = {}
        self._cells: dict[tuple[int, int, int], list[int]] = {}

    def add(
        self,
        slot: int,
        origin: str,
        labels: dict[str, str],
        new_files: int,
        new_bytes: int,
        logical_bytes: int,
    ) -> None:
        o = self._origins.setdefault(origin, len(self._origins))
        values = tuple(labels.get(name, "") for name in _DIMENSION_NAMES)
        v = self._labels.setdefault(values, len(self._labels))
        cell = self._cells.setdefault((slot, o, v), [0, 0, 0, 0])
        cell[0] += 1
        cell[1] += new_files
        cell[2] += new_bytes
        cell[3] += logical_bytes

    def finish(self, source: str, now: dt.datetime) -> DayCells:
        return DayCells(
            day=self.day,
            origins=list(self._origins),
            labels=[list(values) for values in self._labels],
            cells=[[*key, *sums] for key, sums in sorted(self._cells.items())],
            source=source,
            computed_at=now,
        )

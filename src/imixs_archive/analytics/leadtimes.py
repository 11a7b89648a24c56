"""Lead times: per workflow group, the time from the first to the last snapshot of each
finished process instance, with percentiles.

An instance is *finished* when its newest snapshot matches :class:`Finished`: its
``$workflowstatus`` is one of ``statuses`` (case-insensitive), or its ``type`` is one of
``types`` (``snapshot-workitemarchive``: Imixs archived the workitem). Its group is the
``$workflowgroup`` of that newest snapshot. Times are those of the snapshot ids. An
instance whose older snapshots were removed (``$snapshot.history``) reports the time
from its oldest snapshot still archived.

One streaming pass over ``snapshots_by_uniqueid`` (paged; the rows of an instance come
together), then one snapshot read per instance, several at a time.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from imixs_archive.analytics._pool import DEFAULT_WORKERS, ordered_map
from imixs_archive.analytics.labels import label
from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.conventions import snapshot_time
from imixs_archive.document.model import Document

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
    samples: list[float] = field(default_factory=list, repr=False)

    @property
    def count(self) -> int:
        return len(self.samples)

    def percentile(self, q: float) -> float:
        return percentile(sorted(self.samples), q)

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
) -> list[LeadTimes]:
    """Lead times per workflow group (only ``group`` when given), largest group first.
    ``finished_from`` / ``finished_to`` keep instances whose last snapshot (its day in
    the time zone ``tz``) is in that range."""
    finished = finished or Finished()
    wanted = (group or "").strip().lower() or None

    def in_range(ids: list[str]) -> bool:
        day = snapshot_time(ids[-1]).astimezone(tz).date()
        return (finished_from is None or day >= finished_from) and (
            finished_to is None or day <= finished_to
        )

    def evaluate(ids: list[str]) -> tuple[str, float] | None:
        newest = _newest_complete(archive, ids)
        if newest is None:
            return None
        doc, newest_id = newest
        status, kind = label(doc.get_first("$workflowstatus")), label(doc.get_first("type"))
        name = label(doc.get_first("$workflowgroup"))
        if not finished.matches(status, kind) or (wanted and name.lower() != wanted):
            return None
        seconds = (snapshot_time(newest_id) - snapshot_time(ids[0])).total_seconds()
        return name, seconds

    groups: dict[str, LeadTimes] = {}
    instances = (ids for ids in archive.iter_instances() if in_range(ids))
    for result in ordered_map(evaluate, instances, workers=workers):
        if result is not None:
            groups.setdefault(result[0], LeadTimes(result[0])).samples.append(result[1])
    return sorted(groups.values(), key=lambda g: (-g.count, g.group))


def _newest_complete(archive: Archive, ids: list[str]) -> tuple[Document, str] | None:
    for snapshot_id in reversed(ids):
        doc = archive.load_complete(snapshot_id)
        if doc is not None:
            return doc, snapshot_id
    return None

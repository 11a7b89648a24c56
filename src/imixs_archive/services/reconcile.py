"""``stats --reconcile``: rebuild every index and derived table from the snapshots, count
the whole archive again from the snapshots themselves, find where the kept figures
drifted, and repair them. It is the one command that repairs what ``verify`` reports as
disagreeing with the snapshots.

First it rebuilds the rows derived from each snapshot and each file (``archive/rebuild.py``:
``snapshots_by_uniqueid``, ``snapshots_by_modified`` and the day index,
``snapshots_by_document``, ``archive_snapshot_files``, ``archive_piece_refs``; facts
filed under another day, unreadable or of snapshots not stored go). The figures views show
are kept as snapshots are stored and deleted (``archive/facts.py``, the day summaries):
exact as long as every write goes through this archive and finishes. What can leave them
off: snapshots the Java service wrote into a shared keyspace (no fact, no day stamp), a
writer that died between a snapshot's row and its fact, two processes bringing the same
new file or instance at the same moment on Cassandra, damage. So then it reads every
snapshot of every day of the day index, rewrites each fact that differs from a whole
count's (``facts.exact_fact``), drops every day's kept figures (cells and summaries,
``analytics/day_store.py``) and the kept months (``analytics/month_cache.py``: lead times
kept for a finished month do not see an instance that changed after it), which are counted
again from the facts, and takes the store's census. It reports the totals before and
after: equal totals mean nothing had drifted (facts may still be rewritten when a file or
instance was attributed to another of its snapshots than the earliest).

A job over everything: it shows progress, and resumes where it was stopped (Ctrl-C, a
kill): in the rebuild after the last partition it recorded (every few seconds), then
after the last finished day; it is safe while other processes write (a day written
meanwhile is stamped, and counted again from its facts at the next view).

A damaged SQLite file is not mended by it: ``archive/store_damage.py`` says what is.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from imixs_archive.analytics.archive_figures import archive_figures
from imixs_archive.analytics.day_store import census, drop_days, drop_months
from imixs_archive.archive.part_runs import SaveClock
from imixs_archive.archive.rebuild import REBUILDS
from imixs_archive.archive.snapshots import Archive
from imixs_archive.budget import checkpoint
from imixs_archive.jsonable import Jsonable
from imixs_archive.services.statistics import take_census

PROGRESS = "reconcile"
"""The name of the record of how far a reconcile got (``archive_census``)."""


@dataclass
class ReconcileReport(Jsonable):
    JSON_EXTRA = ("drift",)

    before: dict[str, int] = field(default_factory=dict)
    after: dict[str, int] = field(default_factory=dict)
    days: int = 0
    facts_changed: int = 0
    days_changed: list[str] = field(default_factory=list)
    resumed_after: str | None = None
    """The day a stopped reconcile had finished, where this one went on."""
    days_indexed: list[str] = field(default_factory=list)
    """Days only another writer (the Java service) stored snapshots of, added to the day
    index first (``days.add_missing_days``)."""
    rebuilt: dict[str, int] = field(default_factory=dict)
    """Rows of the index and derived tables written or removed, by table (``not rebuilt``:
    snapshots that could not be, to archive again: see ``archive/rebuild.py``)."""

    @property
    def drift(self) -> dict[str, tuple[int, int]]:
        """Totals that differed: name -> (before, after)."""
        return {
            name: (self.before.get(name, 0), value)
            for name, value in self.after.items()
            if self.before.get(name, 0) != value
        }


def _totals(archive: Archive) -> dict[str, int]:
    return archive_figures(archive).totals()


def reconcile(
    archive: Archive,
    progress: Callable[[int, int], None] | None = None,
    *,
    restart: bool = False,
    tick: Callable[[str], None] | None = None,
) -> ReconcileReport:
    """Rebuild the derived tables (``tick(walk)`` after each partition), then reconcile
    every day of the archive (``progress(done, days)`` after each); go on where a stopped
    run was unless ``restart``."""
    report = ReconcileReport()
    record = None if restart else census(archive).read(PROGRESS)
    if record is None:
        record = {"before": _totals(archive), "walk": 0, "after": None, "done": None}
        census(archive).write(PROGRESS, record)
    else:
        report.resumed_after = _resumed(record)
    report.before = {k: int(v) for k, v in record.get("before", {}).items()}
    report.days_indexed = [day.isoformat() for day in archive.days.add_missing()]
    _rebuild(archive, record, tick or (lambda _walk: None))
    report.rebuilt = dict(record.get("rebuilt", {}))
    after = dt.date.fromisoformat(record["done"]) if record.get("done") else None
    days = [day for day in archive.days.with_snapshots() if after is None or day > after]
    earliest = archive.facts.earliest_complete()
    for done, day in enumerate(days, 1):
        checkpoint()
        changed = archive.facts.reconcile(day, earliest)
        report.days += 1
        if changed:
            report.facts_changed += changed
            report.days_changed.append(day.isoformat())
        census(archive).write(PROGRESS, {**record, "done": day.isoformat()})
        if progress is not None:
            progress(done, len(days))
    drop_days(archive)  # counted again from the repaired facts at the next view
    drop_months(archive)  # counted again from the repaired days (lead times too)
    take_census(archive)
    report.after = _totals(archive)
    census(archive).drop(PROGRESS)  # finished: the next one starts from the beginning
    return report


def _rebuild(archive: Archive, record: dict[str, Any], tick: Callable[[str], None]) -> None:
    """The walks of ``rebuild.REBUILDS`` from where ``record`` stands, which keeps their
    place (saved every few seconds) and the rows written or removed."""
    repaired: Counter[str] = Counter(record.get("rebuilt", {}))
    clock = SaveClock()
    while int(record.get("walk", 0)) < len(REBUILDS):
        name = REBUILDS[int(record["walk"])].name

        def done(at: Any, name: str = name) -> None:
            checkpoint()
            tick(name)
            if clock.due():
                census(archive).write(PROGRESS, {**record, "after": at, "rebuilt": dict(repaired)})

        archive.rebuild(name, record.get("after"), repaired, done)
        record.update(walk=int(record["walk"]) + 1, after=None, rebuilt=dict(repaired))
        census(archive).write(PROGRESS, record)


def _resumed(record: dict[str, Any]) -> str | None:
    """Where a stopped reconcile stood: the last day it finished, or its rebuild's walk."""
    if record.get("done"):
        return str(record["done"])
    walk = int(record.get("walk", 0))
    if walk < len(REBUILDS):
        return f"the rebuild of {REBUILDS[walk].name}"
    return "the rebuild"

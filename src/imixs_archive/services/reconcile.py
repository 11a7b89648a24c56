"""``stats --reconcile``: count the whole archive again from the snapshots themselves,
find where the kept figures drifted, and repair them.

The figures views show are kept as snapshots are stored and deleted (``archive/facts.py``,
the day summaries): exact as long as every write goes through this archive and finishes.
What can leave them off: snapshots the Java service wrote into a shared keyspace (no
fact, no day stamp), a writer that died between a snapshot's row and its fact, two
processes bringing the same new file or instance at the same moment on Cassandra. The
reconcile reads every snapshot of every day of the day index, rewrites each fact that
differs from a whole count's (``facts.exact_fact``), counts the days that changed again,
forgets the kept months (``analytics/month_cache.py``: lead times kept for a finished
month do not see an instance that changed after it) and takes the store's census. It
reports the totals before and after: equal totals mean nothing had drifted (facts may
still be rewritten when a file or instance was attributed to another of its snapshots
than the earliest).

A job over everything: it shows progress, and resumes after the last finished day when
it was stopped (Ctrl-C, a kill); it is safe while other processes write (a day written
meanwhile is stamped, and counted again from its facts at the next view).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from imixs_archive.analytics.archive_figures import archive_figures
from imixs_archive.analytics.day_store import drop_months, keep, kept
from imixs_archive.archive.snapshots import Archive
from imixs_archive.budget import checkpoint
from imixs_archive.services.statistics import take_census

PROGRESS = "reconcile"
"""The name of the record of how far a reconcile got (``archive_census``)."""


@dataclass
class ReconcileReport:
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

    @property
    def drift(self) -> dict[str, tuple[int, int]]:
        """Totals that differed: name -> (before, after)."""
        return {
            name: (self.before.get(name, 0), value)
            for name, value in self.after.items()
            if self.before.get(name, 0) != value
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "before": self.before,
            "after": self.after,
            "drift": {name: list(pair) for name, pair in self.drift.items()},
            "days": self.days,
            "facts_changed": self.facts_changed,
            "days_changed": self.days_changed,
            "resumed_after": self.resumed_after,
            "days_indexed": self.days_indexed,
        }


def _totals(archive: Archive) -> dict[str, int]:
    return archive_figures(archive).totals()


def reconcile(
    archive: Archive,
    progress: Callable[[int, int], None] | None = None,
    *,
    restart: bool = False,
) -> ReconcileReport:
    """Reconcile every day of the archive (``progress(done, days)`` after each); go on
    after the last day a stopped run finished unless ``restart``."""
    report = ReconcileReport()
    record = None if restart else kept(archive, PROGRESS)
    if record is not None:
        report.before = {k: int(v) for k, v in record.get("before", {}).items()}
        report.resumed_after = str(record.get("done") or "") or None
    else:
        report.before = _totals(archive)
        keep(archive, PROGRESS, {"before": report.before, "done": None})
    after = dt.date.fromisoformat(report.resumed_after) if report.resumed_after else None
    report.days_indexed = [day.isoformat() for day in archive.add_missing_days()]
    days = [day for day in archive.days_with_snapshots() if after is None or day > after]
    carriers = archive.earliest_carriers()
    for done, day in enumerate(days, 1):
        checkpoint()
        changed = archive.reconcile_facts(day, carriers)
        report.days += 1
        if changed:
            report.facts_changed += changed
            report.days_changed.append(day.isoformat())
        keep(archive, PROGRESS, {"before": report.before, "done": day.isoformat()})
        if progress is not None:
            progress(done, len(days))
    drop_months(archive)  # counted again from the repaired days (lead times too)
    take_census(archive)
    report.after = _totals(archive)
    keep(archive, PROGRESS, None)  # finished: the next one starts from the beginning
    return report

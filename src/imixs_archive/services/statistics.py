"""What the archive holds, with its snapshots per day: ``stats`` (CLI), ``/api/stats`` and
the Statistics page call this, so every one counts a day the same way.

The totals are :func:`collect_stats` (the store's own tables); the days are the
analytics' day figures over the whole archive (:func:`whole_archive`: finished days from
their stored cells), in the days of ``tz``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from imixs_archive.analytics.aggregates import AggregateReport, whole_archive
from imixs_archive.archive.snapshots import Archive


def archive_stats(
    archive: Archive, tz: dt.tzinfo | str | None = None, report: AggregateReport | None = None
) -> dict[str, Any]:
    """The archive's totals, ``by_day`` (snapshots per day with any) and ``tz``; pass the
    ``report`` of :func:`whole_archive` when there is one already."""
    report = report if report is not None else whole_archive(archive, tz=tz)
    data = archive.stats().to_json()
    data["tz"] = report.zone
    data["by_day"] = {
        d.day.isoformat(): d.total.snapshots for d in report.days if d.total.snapshots
    }
    return data

"""What the archive holds: ``stats`` (CLI), ``/api/stats``, the Statistics page and the
Monitor call this, so every one counts the same way.

Two kinds of figures, each as cheap to read at ten million snapshots as at ten thousand:

* **the archive's content**, exact and current: snapshots, process instances, files in
  use and their bytes, the attachment bytes the snapshots carry, and the snapshots per
  day (in the days of ``tz``). They are the day summaries' sums
  (:func:`archive_figures`), kept as snapshots are stored and deleted;
* **the store's census**: pieces, stored bytes, unused files and pieces and what a
  collection would free. Those need every row of the piece tables, so they are counted
  by ``stats --full`` (and by ``serve`` once a day, and by ``stats --reconcile``), kept
  with the time they were counted (``counted``), and shown as of then.

``stats --reconcile`` counts everything from the store itself, compares, and repairs the
day figures where they drifted (``services/reconcile.py``).
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from imixs_archive.analytics.archive_figures import ArchiveFigures, archive_figures
from imixs_archive.analytics.day_store import read_census, store_census
from imixs_archive.archive.snapshots import Archive
from imixs_archive.archive.stats import Stats

CENSUS_FIELDS = (
    "stored_files",
    "pieces",
    "unused_files",
    "unused_pieces",
    "stored_bytes",
    "reclaimable_bytes",
)
"""The figures of the census (as of ``counted``); the others are current. ``stored_files``:
files stored, in use or not (``files`` are those in use)."""

log = logging.getLogger(__name__)


def take_census(archive: Archive) -> Stats:
    """Count the store's tables now (one pass over each) and keep the count; on the way,
    add to the day index the days only the Java service stored snapshots of."""
    added = archive.days.add_missing()
    if added:
        log.info("census: %d day(s) another writer stored added to the day index", len(added))
    stats = archive.stats()
    store_census(archive, stats, dt.datetime.now(dt.UTC))
    return stats


def refresh_figures(archive: Archive) -> None:
    """Count and keep the figures of every day whose kept ones are stale (after an import:
    from the snapshots' facts, no XML read), so that the next view reads them."""
    archive_figures(archive)


def archive_stats(
    archive: Archive,
    tz: dt.tzinfo | str | None = None,
    figures: ArchiveFigures | None = None,
    *,
    full: bool = False,
) -> dict[str, Any]:
    """The archive's figures, its census (``full``: counted now), ``by_day`` (snapshots
    per day with any, in the days of ``tz``) and ``tz``; pass the :func:`archive_figures`
    when there are some already."""
    figures = figures if figures is not None else archive_figures(archive, tz=tz)
    if full:
        census: tuple[Stats, dt.datetime] | None = (take_census(archive), dt.datetime.now(dt.UTC))
    else:
        census = read_census(archive)
    data: dict[str, Any] = {
        "snapshots": figures.snapshots,
        "instances": figures.instances,
        "files": figures.files,
        "file_bytes": figures.file_bytes,
        "logical_bytes": figures.logical_bytes,
    }
    if census is None:
        data.update(dict.fromkeys(CENSUS_FIELDS), dedup_ratio=None, counted=None)
    else:
        stats, counted = census
        data.update(
            {name: getattr(stats, name) for name in CENSUS_FIELDS if name != "stored_files"}
        )
        data["stored_files"] = stats.files
        data["dedup_ratio"] = round(stats.dedup_ratio, 3)
        data["counted"] = counted.isoformat(timespec="seconds")
    data["tz"] = figures.zone
    data["by_day"] = {point.day.isoformat(): point.snapshots for point in figures.days}
    return data

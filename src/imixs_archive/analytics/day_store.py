# table module: archive_day_aggregates, the analytics' own (storage/model.py)
"""Stored day figures: one ``archive_day_aggregates`` row per finished UTC day. The one
module of the analytics that touches a table, its own (declared in ``storage/model.py``);
everything else they read through the ``Archive``.

A day is stored once it is over: when it lies more than ``grace_days`` (default 1) days
before today (UTC), so that snapshots arriving late - a sync that was paused, a workflow
clock a little off - are counted without a second computation. A stored day is used only
while the archive's change stamp of the day (``Archive.day_stamps``, read before the day's
snapshots were) is the one stored with it: a snapshot of that day stored or deleted since,
by any process, changed the stamp, and the day is computed again and stored anew. Figures
that met a snapshot half written are not stored. Snapshots the Java service writes stamp
nothing: ``recompute=True`` (CLI ``--recompute``) counts every finished day again.

The row holds the day's cells (``cells.py``: quarter-hour slots, from which the days of
any time zone are assembled) and the stamp as JSON in ``data``; ``version`` is the format
of that JSON and of the counting rules: a row of another version is ignored and
recomputed. Version 1 held whole UTC days' figures; version 2 the quarter-hour cells;
version 3 adds the stamp and each cell's logical bytes.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator

from imixs_archive.analytics._pool import ordered_map
from imixs_archive.analytics.cells import DayCells
from imixs_archive.archive.snapshots import Archive
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import ARCHIVE_DAY_AGGREGATES

FORMAT_VERSION = 3
DEFAULT_GRACE_DAYS = 1


def is_final(day: dt.date, today: dt.date, grace_days: int = DEFAULT_GRACE_DAYS) -> bool:
    """True when the day is over and past the grace period: its figures may be stored."""
    return (today - day).days > grace_days


def store_day(archive: Archive, figures: DayCells) -> None:
    """Write one UTC day's cells: a single row, so it is there whole or not at all."""
    data = json.dumps(figures.to_json(), separators=(",", ":"), sort_keys=True)
    archive.backend.put(
        ARCHIVE_DAY_AGGREGATES,
        [
            {
                "year": figures.day.year,
                "day": figures.day,
                "version": FORMAT_VERSION,
                "data": data.encode("utf-8"),
            }
        ],
    )


def read_stored(
    archive: Archive, days: list[dt.date], *, workers: int = 4
) -> dict[dt.date, DayCells]:
    """The stored figures of the days in ``[days[0], days[-1]]`` (in order): one partition
    read per year that has one of ``days``, the years read concurrently."""
    first, last = days[0], days[-1]
    years = sorted({day.year for day in days})

    def read_year(year: int) -> list[DayCells]:
        return list(_read_year(archive.backend, year, first, last))

    found: dict[dt.date, DayCells] = {}
    for figures_of_year in ordered_map(read_year, years, workers=min(workers, len(years))):
        for figures in figures_of_year:
            found[figures.day] = figures
    return found


def _read_year(backend: Backend, year: int, first: dt.date, last: dt.date) -> Iterator[DayCells]:
    after = None
    if first.year == year and first > dt.date(year, 1, 1):
        after = {"day": first - dt.timedelta(days=1)}
    for row in backend.scan(ARCHIVE_DAY_AGGREGATES, {"year": year}, start_after=after):
        day = row["day"]
        if day > last:
            return
        if day < first or row["version"] != FORMAT_VERSION:
            continue
        try:
            yield DayCells.from_json(json.loads(row["data"]), source="stored")
        except (ValueError, KeyError, TypeError):
            continue  # unreadable: computed again, and the row rewritten

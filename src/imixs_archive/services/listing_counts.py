"""How many snapshots a listing by ``$modified`` covers, without reading them.

The index of days (``archive/days.py``) knows which UTC days have snapshots, not how many.
The counts come from two cheap places instead:

* the analytics' stored figures of a finished UTC day (``analytics/day_store.py``), while
  the day's change stamp is the one stored with them: quarter-hour cells of snapshots,
  so the part of a UTC day a local day covers is counted exactly (one partition read per
  year for every such day);
* otherwise the ids filed under the day (``snapshots_by_modified``, keys only, no snapshot
  read): every id of a day the range covers whole, and for a day it covers in part the ids
  whose millisecond suffix (the time the snapshot was taken) falls in the range.

A count from the ids includes a snapshot still being written; a count from a day's stored
figures leaves out one that could not be read. The number is a total for people ("152
snapshots"), the listing itself is exact.
"""

from __future__ import annotations

import datetime as dt

from imixs_archive.analytics.day_store import read_stored
from imixs_archive.analytics.localtime import SLOT_MINUTES, SLOTS_PER_DAY
from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.conventions import is_snapshot_id, snapshot_millis
from imixs_archive.timezones import epoch_ms

DAY = dt.timedelta(days=1)


def count_modified(archive: Archive, start: dt.datetime, end: dt.datetime) -> int:
    """The snapshots whose ``$modified`` is in [``start``, ``end``) (aware instants)."""
    first = start.astimezone(dt.UTC).date()
    last = (end - dt.timedelta(microseconds=1)).astimezone(dt.UTC).date()
    days = list(archive.days.with_snapshots(first, last))
    if not days:
        return 0
    stamps = archive.days.stamps(days[0], days[-1])
    stored = read_stored(archive, days)
    total = 0
    for day in days:
        midnight = dt.datetime.combine(day, dt.time(0), dt.UTC)
        figures = stored.get(day)
        slots = _slots(midnight, start, end)
        if figures is not None and figures.stamp and figures.stamp == stamps.get(day) and slots:
            first_slot, end_slot = slots
            total += sum(c[3] for c in figures.cells if first_slot <= c[0] < end_slot)
            continue
        ids = archive.days.snapshot_ids(day)
        if start <= midnight and midnight + DAY <= end:
            total += len(ids)
            continue
        low, high = epoch_ms(start), epoch_ms(end)
        total += sum(1 for sid in ids if is_snapshot_id(sid) and low <= snapshot_millis(sid) < high)
    return total


def _slots(midnight: dt.datetime, start: dt.datetime, end: dt.datetime) -> tuple[int, int] | None:
    """The quarter-hour slots of the UTC day at ``midnight`` that [start, end) covers, or
    None when a bound falls inside a slot (an offset that is no multiple of 15 minutes)."""
    bounds = []
    for moment in (start, end):
        minutes = (moment - midnight).total_seconds() / 60
        if 0 < minutes < 24 * 60 and minutes % SLOT_MINUTES:
            return None
        bounds.append(max(0, min(SLOTS_PER_DAY, int(minutes // SLOT_MINUTES))))
    return bounds[0], bounds[1]

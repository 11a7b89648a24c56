# table module: the analytics' own tables (storage/model.py): day aggregates, summaries, census
"""Stored day figures: one ``archive_day_aggregates`` row per finished UTC day. The one
module of the analytics that touches a table, its own (declared in ``storage/model.py``);
everything else they read through the ``Archive``.

A day is stored once it is over: when it lies more than ``grace_days`` (default 1) days
before today (UTC), so that snapshots arriving late - a sync that was paused, a workflow
clock a little off - are counted without a second computation. A stored day is used only
while the archive's change stamp of the day (``Archive.days.stamps``, read before the day's
snapshots were) is the one stored with it: a snapshot of that day stored or deleted since,
by any process, changed the stamp, and the day is computed again and stored anew. Figures
that met a snapshot half written are not stored. Snapshots the Java service writes stamp
nothing: ``recompute=True`` (CLI ``--recompute``) counts every finished day again.

Beside each day's cells, its summary (``day_summary.py``: the same sums without process
instance ids, a few KB whatever the day holds) goes into ``archive_day_summaries``, written
after the cells with the same stamp: whole-archive views read the summaries only. The
store's census (``archive_census``: what ``stats --full`` counted of pieces and stored
bytes, and when) is kept here too.

The row holds the day's cells (``cells.py``: quarter-hour slots, from which the days of
any time zone are assembled) and the stamp as JSON in ``data``; ``version`` is the format
of that JSON and of the counting rules: a row of another version is ignored and
recomputed. Version 1 held whole UTC days' figures; version 2 the quarter-hour cells;
version 3 adds the stamp and each cell's logical bytes; version 4 the day's new process
instances, with files and instances counted from the snapshots' facts.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from typing import Any

from imixs_archive.analytics._pool import ordered_map
from imixs_archive.analytics.cells import DayCells
from imixs_archive.analytics.day_summary import DaySummary
from imixs_archive.archive.snapshots import Archive
from imixs_archive.archive.stats import Stats
from imixs_archive.archive.verify import Check, Walk
from imixs_archive.storage.base import Backend, Row
from imixs_archive.storage.books import Books
from imixs_archive.storage.model import (
    ARCHIVE_CENSUS,
    ARCHIVE_DAY_AGGREGATES,
    ARCHIVE_DAY_SUMMARIES,
    ARCHIVE_MONTH_FIGURES,
)

FORMAT_VERSION = 4
DEFAULT_GRACE_DAYS = 1


def is_final(day: dt.date, today: dt.date, grace_days: int = DEFAULT_GRACE_DAYS) -> bool:
    """True when the day is over and past the grace period: its figures may be stored."""
    return (today - day).days > grace_days


def store_day(archive: Archive, figures: DayCells) -> DaySummary:
    """Write one UTC day's cells, then its summary: a single row each, so each is there
    whole or not at all. Returns the summary."""
    summary = DaySummary.of(figures)
    for table, data in (
        (ARCHIVE_DAY_AGGREGATES, figures.to_json()),
        (ARCHIVE_DAY_SUMMARIES, summary.to_json()),
    ):
        row = {
            "year": figures.day.year,
            "day": figures.day,
            "version": FORMAT_VERSION,
            "data": json.dumps(data, separators=(",", ":"), sort_keys=True).encode(),
        }
        archive.backend.put(table, [row])
    return summary


def read_summaries(archive: Archive, first: dt.date, last: dt.date) -> Iterator[DaySummary]:
    """The stored summaries of the days in ``[first, last]``, in order: one partition
    read per year, streamed (unreadable rows and rows of another version left out)."""
    for year in range(first.year, last.year + 1):
        after = (
            {"day": first - dt.timedelta(days=1)}
            if first.year == year and first > dt.date(year, 1, 1)
            else None
        )
        for row in archive.backend.scan(ARCHIVE_DAY_SUMMARIES, {"year": year}, start_after=after):
            if row["day"] > last:
                return
            try:
                summary = summary_of(row)
            except ValueError:
                continue  # counted again, and the row rewritten
            if summary is not None:
                yield summary


def summary_of(row: Row) -> DaySummary | None:
    """The summary an ``archive_day_summaries`` row holds; None for a row of another
    version (ignored: counted again); ValueError for one that cannot be read."""
    if row["version"] != FORMAT_VERSION:
        return None
    try:
        return DaySummary.from_json(json.loads(row["data"]))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"a day summary that cannot be read ({exc})") from exc


def read_months(archive: Archive, zone: str, kind: str) -> dict[str, dict[str, Any]]:
    """The kept periods of one kind for a time zone, by key (``2025-03``): one partition
    (``<kind>@<zone>``)."""
    months: dict[str, dict[str, Any]] = {}
    for row in archive.backend.scan(ARCHIVE_MONTH_FIGURES, {"zone": f"{kind}@{zone}"}):
        data = _kept_json(row["data"])
        if data is not None:
            months[row["month"]] = data
    return months


def read_month(archive: Archive, zone: str, kind: str, key: str) -> dict[str, Any] | None:
    """One kept period (a month ``2025-03`` or a day ``2025-03-07``); None when none."""
    row = archive.backend.get(ARCHIVE_MONTH_FIGURES, {"zone": f"{kind}@{zone}", "month": key})
    return _kept_json(row["data"]) if row is not None else None


def kept_figure_walks(summaries: Check, months: Check) -> tuple[Walk, ...]:
    """``verify``'s walks over the kept day summaries and months, with their checks
    (``analytics/figure_checks.py``): the partitions of each table in range order."""
    return (
        Walk("day summaries", ARCHIVE_DAY_SUMMARIES, ("year", "day", "version", "data"),
             summaries, ""),
        Walk("kept months", ARCHIVE_MONTH_FIGURES, ("zone", "month", "data"), months, ""),
    )  # fmt: skip


def kept_of(row: Row) -> tuple[str, str, dict[str, Any] | None]:
    """(kind, zone, figures) of an ``archive_month_figures`` row; figures None for a row of
    another version (ignored: counted again); ValueError for one that cannot be read."""
    kind, _, zone = str(row["zone"]).partition("@")
    try:
        data = json.loads(row["data"])
    except ValueError as exc:
        raise ValueError(f"kept figures that cannot be read ({exc})") from exc
    if not isinstance(data, dict):
        raise ValueError("kept figures that cannot be read (not an object)")
    return kind, zone, data if data.get("version") == FORMAT_VERSION else None


def _kept_json(raw: bytes) -> dict[str, Any] | None:
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    ok = isinstance(data, dict) and data.get("version") == FORMAT_VERSION
    return data if ok else None


def store_month(archive: Archive, zone: str, kind: str, key: str, data: dict[str, Any]) -> None:
    """Keep one period's figures in the days of ``zone`` (one row)."""
    text = json.dumps({**data, "version": FORMAT_VERSION}, separators=(",", ":"))
    row = {"zone": f"{kind}@{zone}", "month": key, "data": text.encode()}
    archive.backend.put(ARCHIVE_MONTH_FIGURES, [row])


def drop_period(archive: Archive, zone: str, kind: str, key: str) -> None:
    """Forget one kept period (a month or a day: counted again at its next use)."""
    archive.backend.delete(ARCHIVE_MONTH_FIGURES, {"zone": f"{kind}@{zone}", "month": key})


def drop_days_of(archive: Archive, zone: str, kind: str, month: str) -> int:
    """Delete the kept days of ``month`` (``2025-03``) that are there, how many: read
    first (at most the month's days, in key order right after the month's own row), so
    that no delete is written for a day never kept (each a tombstone on Cassandra, which a
    read of the table walks, and past 100,000 refuses)."""
    partition = {"zone": f"{kind}@{zone}"}
    found = []
    rows = archive.backend.scan(
        ARCHIVE_MONTH_FIGURES, partition, start_after={"month": month}, columns=["month"]
    )
    for row in rows:
        if not str(row["month"]).startswith(f"{month}-"):
            break
        found.append(str(row["month"]))
    for day in found:
        archive.backend.delete(ARCHIVE_MONTH_FIGURES, {**partition, "month": day})
    return len(found)


def drop_days(archive: Archive) -> int:
    """Forget every kept day (its cells and its summary: counted again from the day's facts
    at their next use); how many years had some."""
    years: set[int] = set()
    for table in (ARCHIVE_DAY_AGGREGATES, ARCHIVE_DAY_SUMMARIES):
        found = {row["year"] for row in archive.backend.scan(table, columns=["year"])}
        for year in sorted(found):
            archive.backend.delete(table, {"year": year})
        years |= found
    return len(years)


def drop_months(archive: Archive) -> int:
    """Forget every kept month of every zone (counted again at their next use): how many
    zones had some."""
    zones = {row["zone"] for row in archive.backend.scan(ARCHIVE_MONTH_FIGURES, columns=["zone"])}
    for name in sorted(zones):
        archive.backend.delete(ARCHIVE_MONTH_FIGURES, {"zone": name})
    return len(zones)


def census(archive: Archive) -> Books:
    """The small JSON records kept in ``archive_census`` by name: ``store``, the last
    census (:func:`store_census`); ``reconcile``, how far a ``stats --reconcile`` got."""
    return Books(archive.backend, ARCHIVE_CENSUS)


def store_census(archive: Archive, stats: Stats, counted: dt.datetime) -> None:
    """Keep a whole count of the store (``stats --full``) with the time it ended."""
    census(archive).write("store", {"counted": counted.isoformat(), "stats": stats.to_json()})


def read_census(archive: Archive) -> tuple[Stats, dt.datetime] | None:
    """The last census of the store and when it was counted; None before the first."""
    data = census(archive).read("store")
    try:
        assert data is not None
        fields = {k: int(v) for k, v in data["stats"].items() if k in Stats.__dataclass_fields__}
        return Stats(**fields), dt.datetime.fromisoformat(data["counted"])
    except (AssertionError, ValueError, KeyError, TypeError, AttributeError):
        return None


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

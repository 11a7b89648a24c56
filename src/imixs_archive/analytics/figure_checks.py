"""``verify``'s checks of the figures the analytics keep: each kept day summary
(``archive_day_summaries``) and each kept month of the whole-archive figures
(``archive_month_figures``, kind ``sums``) agrees with the facts it was counted from,
counted again now (``archive/facts.py``; nothing is stored or repaired by the check).

A kept figure is read only while the day stamps it was counted at hold (``day_store.py``,
``archive_figures.py``): one whose stamps moved on is stale, not damaged (counted again at
its next use), and so is one whose days have a snapshot without a fact (being written). What
remains and differs is damage in the kept row, unless the day's facts themselves disagree
with their snapshots (``Archive.facts.problems``): then the facts are reported (by the
``snapshots`` walk), not the figures counted from them. The stamps are read again before a
difference is reported: a snapshot stored or deleted meanwhile makes it stale.

Kept months of the other kinds (the aggregates' days, lead times, process maps) are checked
to be readable; ``stats --reconcile`` drops and recounts every kept day and month.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Sequence
from typing import Any

from imixs_archive.analytics.aggregates import compute_cells
from imixs_archive.analytics.archive_figures import archive_days, kept_month_problem
from imixs_archive.analytics.day_store import (
    kept_figure_walks,
    kept_of,
    read_month,
    read_summaries,
    summary_of,
)
from imixs_archive.analytics.day_summary import DaySummary
from imixs_archive.archive.snapshots import Archive
from imixs_archive.archive.verify import Walk
from imixs_archive.archive.verify_report import VerifyReport
from imixs_archive.storage.base import Backend, Row

SUMMARIES = "archive_day_summaries"
MONTHS = "archive_month_figures"


def figure_walks(archive: Archive) -> tuple[Walk, ...]:
    """The walks over the kept figures, to add to ``verify``'s and the scrub's."""
    days = _Days(archive)
    return kept_figure_walks(
        functools.partial(_check_summaries, archive),
        functools.partial(_check_months, archive, days),
    )


def _check_summaries(
    archive: Archive, _backend: Backend, rows: Sequence[Row], report: VerifyReport
) -> None:
    for row in rows:
        day = row["day"]
        try:
            summary = summary_of(row)
        except ValueError as exc:
            report.disagrees(SUMMARIES, f"{day}: {exc}")
            continue
        if summary is not None and _summary_differs(archive, day, summary):
            report.suspect(SUMMARIES, functools.partial(_summary_again, archive, day))


def _summary_differs(archive: Archive, day: dt.date, summary: DaySummary) -> str | None:
    """How a current summary differs from its day counted again (None: it agrees, or it is
    stale, or the day has a snapshot without a fact)."""
    if summary.stamp != _stamp(archive, day):
        return None
    cells = compute_cells(archive, day, "computed", repair=False)
    if not cells.settled:
        return None
    counted = DaySummary.of(cells)
    differing = [
        name
        for name in ("slots", "by", "new_instances")
        if getattr(summary, name) != getattr(counted, name)
    ]
    return f"its {', '.join(differing)} differ from the day's facts" if differing else None


def _summary_again(archive: Archive, day: dt.date) -> str | None:
    stamp = _stamp(archive, day)
    summary = next(read_summaries(archive, day, day), None)
    what = None if summary is None else _summary_differs(archive, day, summary)
    if what is None or _stamp(archive, day) != stamp or archive.facts.problems(day):
        return None  # stale meanwhile, or the facts are what disagrees
    return f"{day}: {what}"


def _stamp(archive: Archive, day: dt.date) -> str:
    return archive.days.stamps(day, day).get(day, "")


class _Days:
    """The UTC days the whole-archive figures count, read once a walk (a few thousand)."""

    def __init__(self, archive: Archive) -> None:
        self._archive = archive
        self._days: list[dt.date] | None = None

    def __call__(self) -> list[dt.date]:
        if self._days is None:
            self._days = archive_days(self._archive, dt.datetime.now(dt.UTC).date())
        return self._days


def _check_months(
    archive: Archive, days: _Days, _backend: Backend, rows: Sequence[Row], report: VerifyReport
) -> None:
    for row in rows:
        month = str(row["month"])
        try:
            kind, zone, kept = kept_of(row)
        except ValueError as exc:
            report.disagrees(MONTHS, f"{row['zone']} {month}: {exc}")
            continue
        if kind == "sums" and kept is not None and _month_differs(archive, days, zone, month, kept):
            report.suspect(MONTHS, functools.partial(_month_again, archive, days, zone, month))


def _month_differs(
    archive: Archive, days: _Days, zone: str, month: str, kept: dict[str, Any]
) -> str | None:
    try:
        first = dt.date.fromisoformat(f"{month}-01")
    except ValueError:
        return f"{month!r} is no month"
    stamps = archive.days.stamps(first, (first + dt.timedelta(days=31)).replace(day=1))
    return kept_month_problem(archive, zone, month, kept, days(), stamps)


def _month_again(archive: Archive, days: _Days, zone: str, month: str) -> str | None:
    kept = read_month(archive, zone, "sums", month)
    what = None if kept is None else _month_differs(archive, days, zone, month, kept)
    if what is None:
        return None  # gone, rewritten or stale meanwhile
    for day in days():
        if f"{day:%Y-%m}" == month and archive.facts.problems(day):
            return None  # the facts are what disagrees: the snapshots walk names them
    return what

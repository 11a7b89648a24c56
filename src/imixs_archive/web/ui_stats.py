"""The Statistics page and the history of one process instance.

Statistics: the archive's own figures (``dashboard.py``: counts, growth, bytes, types),
and over a chosen range of UTC days the analytics (``imixs_archive.analytics``): snapshots
per day (per month past a year), per type and per workflow group, and the lead-time
percentiles of the instances finished in the range, per group. All drawn on the server as
inline SVG (``charts.py``); the range is a plain GET form, so no script is needed.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

from fastapi import APIRouter, Query
from markupsafe import Markup
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from imixs_archive.analytics.aggregates import aggregate_days
from imixs_archive.analytics.history import InstanceHistory, instance_history
from imixs_archive.analytics.leadtimes import lead_times
from imixs_archive.humanize import human_bytes, human_duration
from imixs_archive.timezones import zone, zone_label
from imixs_archive.web import charts
from imixs_archive.web.dashboard import Dashboard
from imixs_archive.web.dependencies import Services, Svc
from imixs_archive.web.ui import User, page
from imixs_archive.web.ui_labels import local_time, values_text

router = APIRouter(include_in_schema=False)

DEFAULT_DAYS = 30
LONGEST_DAILY = 366
"""Ranges longer than this are charted per month."""
MAX_DAYS = 7306
LEAD_PERCENTILES = (50, 75, 90, 95)
Day = Annotated[dt.date | None, Query()]


def time_axis(
    data: dict[str, Any], today: dt.date
) -> tuple[str, list[tuple[str, int]], list[dict[str, Any]]]:
    """The overview's time axis: every day from the first with snapshots to ``today`` (or
    the newest day, should it be later), a day without snapshots drawn as 0 and the growth
    carried forward through it, so a stop of the archiving shows. Spans longer than
    ``LONGEST_DAILY`` days are drawn per month (the growth at each month's end). Returns
    the unit ("day" or "month"), the snapshots per period and the growth per period."""
    per_day: dict[str, int] = data["per_day"]
    growth = {point["day"]: point for point in data["growth"]}
    if not per_day and not growth:
        return "day", [], []
    days = sorted({*per_day, *growth})
    first = dt.date.fromisoformat(days[0])
    last = max(dt.date.fromisoformat(days[-1]), today)
    unit = "day" if (last - first).days < LONGEST_DAILY else "month"
    counts: dict[str, int] = {}
    carried: dict[str, dict[str, Any]] = {}
    point: dict[str, Any] = {"snapshots": 0, "logical_bytes": 0, "file_bytes": 0}
    day = first
    while day <= last:
        key = day.isoformat()
        period = key if unit == "day" else key[:7]
        counts[period] = counts.get(period, 0) + per_day.get(key, 0)
        point = {**growth.get(key, point), "day": period}
        carried[period] = point
        day += dt.timedelta(days=1)
    return unit, list(counts.items()), list(carried.values())


def dashboard_charts(data: dict[str, Any], today: dt.date | None = None) -> dict[str, Markup]:
    unit, periods, growth = time_axis(data, today or dt.datetime.now(dt.UTC).date())
    s = data["stats"]
    return {
        "unit": Markup(unit),
        "per_day": charts.bar_chart(
            f"Snapshots per {unit}", [(period, float(n)) for period, n in periods]
        ),
        "growth": charts.line_chart(
            "Storage growth",
            [point["day"] for point in growth],
            [
                ("logical", [p["logical_bytes"] for p in growth]),
                ("distinct files", [p["file_bytes"] for p in growth]),
            ],
            human_bytes,
        ),
        "bytes": charts.hbar_chart(
            "Logical vs stored bytes",
            [
                ("logical (as carried)", s["logical_bytes"]),
                ("distinct files", s["file_bytes"]),
                *([("stored pieces", s["stored_bytes"])] if s["stored_bytes"] is not None else []),
            ],
            human_bytes,
        ),
        "types": charts.hbar_chart(
            "Snapshot types", [(t["type"], t["snapshots"]) for t in data["types"]]
        ),
    }


def chosen_range(
    board: Dashboard, first: dt.date | None, last: dt.date | None
) -> tuple[dt.date, dt.date, str]:
    """The range to chart (default: the 30 days up to the newest day with snapshots) and
    an error message when the one asked for cannot be used."""
    newest = board.growth[-1].day if board.growth else dt.datetime.now(dt.UTC).date()
    last = last or (first + dt.timedelta(days=DEFAULT_DAYS - 1) if first else newest)
    first = first or last - dt.timedelta(days=DEFAULT_DAYS - 1)
    if first > last:
        return last - dt.timedelta(days=DEFAULT_DAYS - 1), last, "from is after to"
    if (last - first).days >= MAX_DAYS:
        return last - dt.timedelta(days=DEFAULT_DAYS - 1), last, "at most 20 years"
    return first, last, ""


def range_analytics(
    svc: Services, first: dt.date, last: dt.date, *, refresh: bool = False
) -> dict[str, Any]:
    """Aggregates and lead times of one range, as chart inputs (cached a minute;
    ``refresh``: counted now)."""

    tz = zone(svc.settings.timezone)

    def compute() -> dict[str, Any]:
        report = aggregate_days(svc.archive, first, last, tz=tz)
        per = "day" if (last - first).days < LONGEST_DAILY else "month"
        groups = lead_times(svc.archive, finished_from=first, finished_to=last, tz=tz)
        return {
            "per": per,
            "tz": zone_label(tz),
            "periods": [(r.period, r.measures.snapshots) for r in report.rows(None, per)],
            "types": [
                (r.value or "(none)", r.measures.snapshots) for r in report.rows("type", "total")
            ],
            "groups": [
                (r.value or "(none)", r.measures.snapshots) for r in report.rows("group", "total")
            ],
            "lead_times": [
                (g.group or "(none)", g.count, [g.percentile(q) for q in LEAD_PERCENTILES])
                for g in groups
            ],
        }

    key = ("range", first, last, str(tz))
    figures: dict[str, Any] = svc.analytics.get(key, compute, refresh=refresh)
    return figures


def warm(svc: Services) -> None:
    """Count what the Statistics page shows first (the whole archive, and its default
    range), so that a viewer reads kept figures: ``serve`` calls this in the background."""
    board = svc.dashboard.get(refresh=True)
    if board.growth:  # an empty archive has no range to count
        first, last, _error = chosen_range(board, None, None)
        range_analytics(svc, first, last, refresh=True)


def analytics_charts(figures: dict[str, Any]) -> dict[str, Markup]:
    unit = "day" if figures["per"] == "day" else "month"
    lead = figures["lead_times"]
    return {
        "periods": charts.bar_chart(
            f"Snapshots per {unit} ({figures['tz']})",
            [(p, float(n)) for p, n in figures["periods"]],
        ),
        "by_type": charts.hbar_chart("Snapshots per type", figures["types"]),
        "by_group": charts.hbar_chart("Snapshots per workflow group", figures["groups"]),
        "lead_times": charts.grouped_bar_chart(
            "Lead-time percentiles per workflow group",
            [f"{name} ({count})" for name, count, _ in lead],
            [
                (f"p{q}", [values[i] for _n, _c, values in lead])
                for i, q in enumerate(LEAD_PERCENTILES)
            ],
            human_duration,
        ),
    }


@router.get("/ui/stats")
async def stats(
    request: Request,
    svc: Svc,
    user: User,
    refresh: bool = False,
    from_day: Annotated[dt.date | None, Query(alias="from")] = None,
    to_day: Annotated[dt.date | None, Query(alias="to")] = None,
) -> Response:
    board = await run_in_threadpool(lambda: svc.dashboard.get(refresh=refresh))
    data = board.to_json()
    first, last, problem = chosen_range(board, from_day, to_day)
    figures = await run_in_threadpool(range_analytics, svc, first, last)
    return page(
        request,
        svc,
        user,
        "stats.html",
        nav="stats",
        data=data,
        charts=dashboard_charts(data, dt.datetime.now(zone(svc.settings.timezone)).date()),
        analytics=analytics_charts(figures),
        figures=figures,
        first=first,
        last=last,
        percentiles=LEAD_PERCENTILES,
        range_error=problem,
    )


def history_rows(history: InstanceHistory, tz: dt.tzinfo = dt.UTC) -> list[dict[str, Any]]:
    """The steps as the history page shows them: each snapshot by its time in ``tz`` (the
    page names the zone) and task and status, values whole and their times in ``tz``
    (``ui_labels.py``)."""
    rows = []
    for step in history.steps:
        items = []
        for c in step.items:
            old, old_whole = values_text(c.old, tz)
            new, new_whole = values_text(c.new, tz)
            items.append(
                {
                    "name": c.name,
                    "kind": c.kind,
                    "old": old,
                    "new": new,
                    "whole": (old_whole, new_whole),
                }
            )
        rows.append(
            {
                "index": step.index,
                "snapshot": step.snapshot_id,
                "time": local_time(step.time, tz),
                "label": " · ".join(part for part in (step.task, step.status) if part),
                "after": "" if step.since_previous is None else human_duration(step.since_previous),
                "task": step.task,
                "status": step.status,
                "items": items,
                "files": step.files,
            }
        )
    return rows


@router.get("/ui/history/{uniqueid}")
async def history(request: Request, uniqueid: str, svc: Svc, user: User) -> Response:
    found = await run_in_threadpool(instance_history, svc.archive, uniqueid)
    return page(
        request,
        svc,
        user,
        "history.html",
        nav="inspect",
        uniqueid=found.uniqueid,
        steps=history_rows(found, zone(svc.settings.timezone)),
        tz=zone_label(zone(svc.settings.timezone)),
        duration=human_duration(found.duration),
    )

"""``/api/analytics``: the analytics service layer as JSON, and the table export as a
streamed download. Every call needs a reader; bad parameters are answered 400.

* ``aggregates``: snapshots, instances, new files and bytes per period and dimension;
* ``history/{uniqueid}``: one process instance step by step (404 when unknown);
* ``leadtimes``: first to last snapshot of finished instances, per workflow group;
* ``export``: chosen items of every snapshot as Parquet or CSV, streamed;
* ``eventlog``: the event log for process mining (XES, XES.gz, OCEL 2.0), streamed;
* ``process-map``: a workflow group's directly-follows graph and variants over a range.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import IO, Annotated, Any
from zoneinfo import ZoneInfo

from fastapi import APIRouter, Query
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response, StreamingResponse

from imixs_archive.analytics.aggregates import PERIODS, AggregateReport, aggregate_days
from imixs_archive.analytics.columns import ColumnSpec, parse_items
from imixs_archive.analytics.event_log import FORMATS as LOG_FORMATS
from imixs_archive.analytics.event_log import MEDIA_TYPES as LOG_MEDIA_TYPES
from imixs_archive.analytics.event_log import EventLogSpec, write_event_log
from imixs_archive.analytics.export_table import (
    FIXED_COLUMNS,
    FORMATS,
    ExportSpec,
    export_table,
)
from imixs_archive.analytics.figures import DIMENSIONS
from imixs_archive.analytics.history import instance_history
from imixs_archive.analytics.leadtimes import (
    DEFAULT_FINISHED_STATUSES,
    DEFAULT_FINISHED_TYPES,
    Finished,
    LeadTimes,
    lead_times,
)
from imixs_archive.analytics.process_map import process_map
from imixs_archive.analytics.process_steps import check_groups
from imixs_archive.archive.snapshots import Archive
from imixs_archive.errors import ConfigError
from imixs_archive.timezones import zone, zone_label
from imixs_archive.web.api_models import download
from imixs_archive.web.dependencies import Reader, Services, Svc
from imixs_archive.web.export_stream import Pipe, iter_rest, start_writer
from imixs_archive.web.problems import PROBLEM_RESPONSES, BadRequestError

router = APIRouter(prefix="/api/analytics", tags=["analytics"], responses=PROBLEM_RESPONSES)

MAX_DAYS = 7306
"""The longest aggregate range (20 years): each day not stored yet is computed."""
UTC_ZONE = ZoneInfo("UTC")
MEDIA_TYPES = {"parquet": "application/vnd.apache.parquet", "csv": "text/csv; charset=utf-8"}

FromDay = Annotated[dt.date | None, Query(alias="from", description="first day (tz)")]
ToDay = Annotated[dt.date | None, Query(alias="to", description="last day (tz), included")]
Tz = Annotated[
    str | None,
    Query(description="IANA time zone of the days (default: the ARCHIVE_TIMEZONE setting)"),
]


def request_zone(svc: Services, tz: str | None) -> ZoneInfo:
    """``tz`` when given, else the configured zone; 400 for an unknown name."""
    try:
        return zone(tz if tz else svc.settings.timezone)
    except ValueError as exc:
        raise BadRequestError(f"tz: {exc}") from None


def check_range(first: dt.date | None, last: dt.date | None) -> None:
    if first is not None and last is not None and first > last:
        raise BadRequestError(f"from ({first}) is after to ({last})")


def aggregate_report(
    archive: Archive,
    first: dt.date,
    last: dt.date | None,
    by: str | None,
    per: str,
    tz: ZoneInfo = UTC_ZONE,
) -> AggregateReport:
    """Validated parameters -> the report (``last`` defaults to today in ``tz``)."""
    last = last or dt.datetime.now(tz).date()
    check_range(first, last)
    if (last - first).days >= MAX_DAYS:
        raise BadRequestError(f"at most {MAX_DAYS} days (20 years) per request")
    if by is not None and by not in DIMENSIONS:
        raise BadRequestError(f"by: one of {', '.join(DIMENSIONS)}, not {by!r}")
    if per not in PERIODS:
        raise BadRequestError(f"per: one of {', '.join(PERIODS)}, not {per!r}")
    return aggregate_days(archive, first, last, tz=tz)


def finished_rule(statuses: str | None, types: str | None) -> Finished:
    status_list = (statuses or ",".join(DEFAULT_FINISHED_STATUSES)).split(",")
    type_list = DEFAULT_FINISHED_TYPES if types is None else types.split(",")
    rule = Finished.of(status_list, type_list)
    if not rule.statuses and not rule.types:
        raise BadRequestError("finished: give at least one status or type")
    return rule


def lead_time_groups(
    archive: Archive,
    group: str | None,
    finished: Finished,
    first: dt.date | None,
    last: dt.date | None,
    tz: ZoneInfo = UTC_ZONE,
) -> list[LeadTimes]:
    check_range(first, last)
    return lead_times(
        archive, group=group, finished=finished, finished_from=first, finished_to=last, tz=tz
    )


@router.get("/aggregates", summary="Snapshots, instances, new files and bytes per period")
def get_aggregates(
    svc: Svc,
    _who: Reader,
    from_day: Annotated[dt.date, Query(alias="from", description="first day (tz)")],
    to_day: ToDay = None,
    by: Annotated[str | None, Query(description="type|group|status|task|creator")] = None,
    per: Annotated[str, Query(description="day|month|year|total")] = "day",
    tz: Tz = None,
) -> dict[str, Any]:
    """Per day of ``$modified`` in ``tz`` (summed per month, year or the whole range), and
    with ``by`` per value of that item. ``to`` defaults to today; at most 20 years."""
    zone_info = request_zone(svc, tz)
    report = aggregate_report(svc.archive, from_day, to_day, by or None, per, zone_info)
    return report.to_json(by or None, per)


@router.get("/history/{uniqueid}", summary="One process instance step by step")
def get_history(uniqueid: str, svc: Svc, _who: Reader, tz: Tz = None) -> dict[str, Any]:
    """Every snapshot in time order: time (in ``tz``) and time since the previous one,
    task, status, the items changed (old and new values) and the files added, replaced or
    removed."""
    zone_info = request_zone(svc, tz)
    return instance_history(svc.archive, uniqueid).to_json(zone_info)


@router.get("/leadtimes", summary="Lead times of finished instances per workflow group")
def get_lead_times(
    svc: Svc,
    _who: Reader,
    group: Annotated[str | None, Query(description="only this $workflowgroup")] = None,
    finished: Annotated[
        str | None, Query(description="finished $workflowstatus values, comma-separated")
    ] = None,
    finished_type: Annotated[
        str | None, Query(description="finished snapshot types, comma-separated")
    ] = None,
    from_day: FromDay = None,
    to_day: ToDay = None,
    tz: Tz = None,
) -> dict[str, Any]:
    """Seconds from first to last snapshot: count, min, p50..p99, max, mean per group.
    ``from``/``to`` select by the day (in ``tz``) of the last snapshot."""
    rule = finished_rule(finished, finished_type)
    zone_info = request_zone(svc, tz)
    groups = lead_time_groups(svc.archive, group or None, rule, from_day, to_day, zone_info)
    return {
        "unit": "seconds",
        "tz": zone_label(zone_info),
        "finished": {"statuses": sorted(rule.statuses), "types": sorted(rule.types)},
        "groups": [g.to_json() for g in groups],
    }


def export_spec(
    items: str,
    first: dt.date | None,
    last: dt.date | None,
    format: str,
    newest: bool,
    tz: ZoneInfo = UTC_ZONE,
) -> ExportSpec:
    if format not in FORMATS:
        raise BadRequestError(f"format: one of {', '.join(FORMATS)}, not {format!r}")
    check_range(first, last)
    try:
        specs: list[ColumnSpec] = parse_items(items)
    except ConfigError as exc:
        raise BadRequestError(str(exc)) from None
    if not specs:
        raise BadRequestError("items: name at least one item, e.g. items=$workflowgroup,$taskid")
    clash = {s.item for s in specs} & {c.name for c in FIXED_COLUMNS}
    if clash:
        raise BadRequestError(f"{', '.join(sorted(clash))}: already a column of every export")
    return ExportSpec(items=specs, first=first, last=last, newest_only=newest, format=format, tz=tz)


def export_filename(spec: ExportSpec) -> str:
    parts = ["imixs-archive-export"]
    if spec.first is not None:
        parts.append(f"from-{spec.first.isoformat()}")
    if spec.last is not None:
        parts.append(f"to-{spec.last.isoformat()}")
    if spec.newest_only:
        parts.append("newest")
    return "-".join(parts) + f".{spec.format}"


@router.get(
    "/export",
    summary="Chosen items of every snapshot as Parquet or CSV (streamed)",
    response_class=Response,
    responses=download("the table, as a download", MEDIA_TYPES.values()),
)
async def get_export(
    svc: Svc,
    _who: Reader,
    items: Annotated[str, Query(description="a,b:int,c:str[] (types optional)")],
    from_day: FromDay = None,
    to_day: ToDay = None,
    format: Annotated[str, Query(description="parquet or csv")] = "parquet",
    newest: Annotated[bool, Query(description="the newest snapshot of each instance")] = False,
    tz: Tz = None,
) -> Response:
    """One row per snapshot (``newest``: per instance): ``snapshot``, ``uniqueid``,
    ``modified``, then the items. Written in batches while it is sent; an error after the
    first bytes ends the download early (the file is then incomplete)."""
    spec = export_spec(items, from_day, to_day, format, newest, request_zone(svc, tz))
    return await _streamed(
        lambda out: export_table(svc.archive, spec, out),
        MEDIA_TYPES[spec.format],
        export_filename(spec),
    )


@router.get(
    "/eventlog",
    summary="The event log for process mining: XES, XES.gz or OCEL 2.0 JSON (streamed)",
    response_class=Response,
    responses=download("the event log, as a download", sorted(set(LOG_MEDIA_TYPES.values()))),
)
async def get_event_log(
    svc: Svc,
    _who: Reader,
    from_day: FromDay = None,
    to_day: ToDay = None,
    group: Annotated[list[str] | None, Query(description="only this $workflowgroup")] = None,
    items: Annotated[str, Query(description="items written as event attributes: a,b")] = "",
    format: Annotated[str, Query(description="xes, xes.gz or jsonocel")] = "xes.gz",
    tz: Tz = None,
) -> Response:
    """One trace per process instance, one event per snapshot whose ``$modified`` falls
    on the range's days (docs/analytics.md, "Event logs"); 404 for an unknown group or a
    range without snapshots. An error after the first bytes ends the download early."""
    if format not in LOG_FORMATS:
        raise BadRequestError(f"format: one of {', '.join(LOG_FORMATS)}, not {format!r}")
    check_range(from_day, to_day)
    zone_info = request_zone(svc, tz)
    spec = EventLogSpec(
        format=format,
        first=from_day,
        last=to_day,
        tz=zone_info,
        groups=frozenset(g.strip() for g in group or () if g.strip()),
        items=[item.strip() for item in items.split(",") if item.strip()],
    )
    await run_in_threadpool(check_groups, svc.archive, spec.groups, zone_info)
    name = "-".join(
        ["imixs-archive-eventlog"]
        + [f"from-{from_day}"] * (from_day is not None)
        + [f"to-{to_day}"] * (to_day is not None)
    )
    return await _streamed(
        lambda out: write_event_log(svc.archive, spec, out),
        LOG_MEDIA_TYPES[format],
        f"{name}.{format}",
    )


async def _streamed(
    write: Callable[[IO[bytes]], object], media_type: str, filename: str
) -> StreamingResponse:
    """A download that ``write`` writes on a writer thread while it is sent: an error
    before its first bytes is answered as a problem, a later one ends it early."""
    pipe = Pipe()
    try:
        start_writer(write, pipe)
        first = await run_in_threadpool(pipe.next_chunk)
    except BaseException:
        pipe.close()
        raise
    return StreamingResponse(
        iter_rest(pipe, first) if first is not None else iter(()),
        media_type=media_type,
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


@router.get("/process-map", summary="A workflow group's process map over a range of days")
def get_process_map(
    svc: Svc,
    _who: Reader,
    group: Annotated[str, Query(description="the $workflowgroup")],
    from_day: Annotated[dt.date, Query(alias="from", description="first day (tz)")],
    to_day: Annotated[dt.date, Query(alias="to", description="last day (tz), included")],
    tz: Tz = None,
) -> dict[str, Any]:
    """Steps, arrows (how often one step followed another, median seconds between them),
    start and end steps, variants with counts and median throughput seconds; 404 for an
    unknown group."""
    check_range(from_day, to_day)
    zone_info = request_zone(svc, tz)
    check_groups(svc.archive, [group], zone_info)
    return process_map(svc.archive, group, from_day, to_day, tz=zone_info).to_json()

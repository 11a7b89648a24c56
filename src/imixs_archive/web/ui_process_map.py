"""The Process map page: one workflow group over a range of days, its directly-follows
graph laid out by Graphviz (``process_graph.py``), its start and end steps and variants
(``analytics/process_map.py``), and for an arrow the instances that took it. A plain GET
form; no script. The figures of a group and range are kept a minute (``svc.analytics``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Query
from markupsafe import Markup
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from imixs_archive.analytics.process_map import ProcessMap, process_map
from imixs_archive.analytics.process_steps import workflow_groups
from imixs_archive.timezones import zone
from imixs_archive.web.dependencies import Services, Svc
from imixs_archive.web.process_graph import (
    MAX_STEPS,
    LayoutMissing,
    dot_source,
    render_svg,
)
from imixs_archive.web.ui import User, page

router = APIRouter(include_in_schema=False)

DEFAULT_DAYS = 365
MAX_DAYS = 7306
"""At most 20 years, as the Statistics page."""
SHOWN_INSTANCES = 500
SHOWN_VARIANTS = 50
Day = Annotated[dt.date | None, Query()]


def chosen(
    svc: Services, group: str | None, first: dt.date | None, last: dt.date | None
) -> tuple[list[str], str, dt.date, dt.date, str]:
    """The groups to choose from, the group and range shown (default: the largest group,
    the year up to the newest day with snapshots), and why the asked range is not used."""
    tz = zone(svc.settings.timezone)
    groups = svc.analytics.get(("groups", str(tz)), lambda: workflow_groups(svc.archive, tz))
    span = svc.archive.days.span()
    newest = span[1] if span else dt.datetime.now(tz).date()
    last = last or (first + dt.timedelta(days=DEFAULT_DAYS - 1) if first else newest)
    first = first or last - dt.timedelta(days=DEFAULT_DAYS - 1)
    problem = ""
    if first > last:
        first, last, problem = last - dt.timedelta(days=DEFAULT_DAYS - 1), last, "from is after to"
    elif (last - first).days >= MAX_DAYS:
        first, problem = last - dt.timedelta(days=DEFAULT_DAYS - 1), "at most 20 years"
    name = group if group is not None else (groups[0] if groups else "")
    if group is not None and group not in groups:
        problem = f"no workflow group {group!r} in the archive"
    return groups, name, first, last, problem


def mapped(svc: Services, group: str, first: dt.date, last: dt.date) -> ProcessMap:
    tz = zone(svc.settings.timezone)
    found: ProcessMap = svc.analytics.get(
        ("process-map", group, first, last, str(tz)),
        lambda: process_map(svc.archive, group, first, last, tz=tz),
    )
    return found


def warm(svc: Services) -> None:
    """Count the default map (the last year) of every workflow group, so that a viewer
    reads kept months, even the first: ``serve`` calls this in the background (a first
    count at 10^6 snapshots takes seconds per group)."""
    groups, _name, first, last, _problem = chosen(svc, None, None, None)
    for group in groups:
        mapped(svc, group, first, last)


def edge_href(group: str, first: dt.date, last: dt.date) -> Callable[[str, str], str]:
    def href(source: str, target: str) -> str:
        query = {"group": group, "from": first, "to": last, "source": source, "target": target}
        return "/ui/process-map/edge?" + urlencode(query)

    return href


def drawn(svc: Services, found: ProcessMap) -> tuple[Markup, str]:
    """The graph as SVG, or why it is not drawn."""
    if not found.edges and not found.steps:
        return Markup(""), ""
    source = dot_source(found, edge_href(found.group, found.first, found.last))
    try:
        return Markup(render_svg(svc.settings.graphviz_dot, source)), ""
    except LayoutMissing as exc:
        return Markup(""), str(exc)


@router.get("/ui/process-map")
async def process_map_page(
    request: Request,
    svc: Svc,
    user: User,
    group: str | None = None,
    from_day: Annotated[dt.date | None, Query(alias="from")] = None,
    to_day: Annotated[dt.date | None, Query(alias="to")] = None,
) -> Response:
    groups, name, first, last, problem = await run_in_threadpool(
        chosen, svc, group, from_day, to_day
    )
    found = None
    svg, layout_problem = Markup(""), ""
    if name and name in groups:
        found = await run_in_threadpool(mapped, svc, name, first, last)
        svg, layout_problem = await run_in_threadpool(drawn, svc, found)
    return page(
        request,
        svc,
        user,
        "process_map.html",
        nav="stats",
        groups=groups,
        group=name,
        first=first,
        last=last,
        range_error=problem,
        found=found,
        svg=svg,
        layout_problem=layout_problem,
        max_steps=MAX_STEPS,
        shown_variants=SHOWN_VARIANTS,
        edge_href=edge_href(name, first, last),
    )


@router.get("/ui/process-map/edge")
async def edge_page(
    request: Request,
    svc: Svc,
    user: User,
    group: str,
    source: str,
    target: str,
    from_day: Annotated[dt.date, Query(alias="from")],
    to_day: Annotated[dt.date, Query(alias="to")],
) -> Response:
    _groups, name, first, last, problem = await run_in_threadpool(
        chosen, svc, group, from_day, to_day
    )
    edge = None
    if not problem:
        found = await run_in_threadpool(mapped, svc, name, first, last)
        edge = found.edge(source, target)
    return page(
        request,
        svc,
        user,
        "process_map_edge.html",
        nav="stats",
        group=name,
        first=first,
        last=last,
        source=source,
        target=target,
        range_error=problem,
        edge=edge,
        shown=SHOWN_INSTANCES,
    )

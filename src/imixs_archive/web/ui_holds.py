"""The Legal holds page: every hold (instance, reason, who, when), a form to place one and a
button to release each (managers; the actions check the role again), and the retention
preview: what ``ARCHIVE_RETENTION`` would delete now, as ``retention --dry-run`` reports
it (the same service functions as the CLI's ``legal-hold`` and ``retention``:
``Archive.holds`` and ``services/retention.py``).

The preview reads the newest snapshot of every instance, so it runs when asked for (a
button), not on every visit of the page.
"""

from __future__ import annotations

import datetime as dt
from typing import Any
from zoneinfo import ZoneInfo

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from imixs_archive.errors import ArchiveError
from imixs_archive.humanize import human_bytes
from imixs_archive.services.retention import Policy, RetentionReport, preview_retention
from imixs_archive.timezones import zone, zone_label
from imixs_archive.web.dependencies import Services, Svc
from imixs_archive.web.ui import User, page
from imixs_archive.web.ui_actions import UiManager, back, read_form
from imixs_archive.web.ui_labels import local_time

router = APIRouter(include_in_schema=False)
PREVIEW_LISTED = 200
"""Instances of the retention preview listed on the page (the counts cover all)."""


def _holds(svc: Services, tz: ZoneInfo) -> list[dict[str, Any]]:
    """The holds as the page shows them (read on a worker thread: a store read each)."""
    return [
        {
            "uniqueid": hold.uniqueid,
            "reason": hold.reason,
            "placed": local_time(hold.placed, tz),
            "placed_by": hold.placed_by,
            "has_snapshots": svc.archive.holds.holds_snapshots_of(hold.uniqueid),
        }
        for hold in svc.archive.holds.list()
    ]


@router.get("/ui/holds")
async def holds_page(request: Request, svc: Svc, user: User, preview: bool = False) -> Response:
    tz = zone(svc.settings.timezone)
    holds = await run_in_threadpool(_holds, svc, tz)
    policy_text = svc.settings.retention
    report, policy_error = None, ""
    if preview:
        try:
            policy = Policy.parse(policy_text)
            report = await run_in_threadpool(preview_retention, svc.archive, policy)
        except ArchiveError as exc:
            policy_error = str(exc)
    return page(
        request,
        svc,
        user,
        "holds.html",
        nav="holds",
        holds=holds,
        policy=policy_text,
        preview=_preview(report, tz) if report is not None else None,
        policy_error=policy_error,
        tz=zone_label(tz),
    )


def _preview(report: RetentionReport, tz: dt.tzinfo) -> dict[str, Any]:
    return {
        "instances_seen": report.instances_seen,
        "instances": report.expired_count,
        "snapshots": report.expired_snapshots,
        "files": report.files,
        "bytes": human_bytes(report.bytes),
        "held": report.held,
        "held_count": report.held_count,
        "untimed": report.untimed,
        "listed": [
            {
                "uniqueid": e.uniqueid,
                "snapshots": len(e.snapshots),
                "group": e.group,
                "type": e.type,
                "rule": e.rule,
                "last": local_time(e.last, tz),
                "expired": local_time(e.expired, tz),
            }
            for e in report.expired[:PREVIEW_LISTED]
        ],
    }


@router.post("/ui/actions/hold")
async def place(request: Request, svc: Svc, who: UiManager) -> Response:
    form = await read_form(request)
    uniqueid, reason = form.get("uniqueid", "").strip(), form.get("reason", "").strip()
    ahead = form.get("ahead") == "yes"
    if not uniqueid or not reason:
        return back("/ui/holds", error="give the process instance ($uniqueid) and a reason")
    try:
        hold = await run_in_threadpool(
            lambda: svc.archive.holds.place(
                uniqueid, reason, who.name, dt.datetime.now(dt.UTC), ahead=ahead
            )
        )
    except ArchiveError as exc:
        return back("/ui/holds", error=str(exc))
    return back("/ui/holds", notice=f"{hold.uniqueid}: held ({hold.reason})")


@router.post("/ui/actions/release/{uniqueid}")
async def release(request: Request, uniqueid: str, svc: Svc, who: UiManager) -> Response:
    form = await read_form(request)
    if form.get("confirm") != "yes":
        return back("/ui/holds", error="tick the box to confirm the release")
    try:
        case = form.get("reason")
        released = await run_in_threadpool(svc.archive.holds.release, uniqueid, who.name, case)
    except ArchiveError as exc:
        return back("/ui/holds", error=str(exc))
    if released is None:
        return back("/ui/holds", error=f"{uniqueid}: no hold")
    return back("/ui/holds", notice=f"{uniqueid}: released ({released.reason})")

"""The web UI: server-rendered pages (Jinja2), a little progressive JavaScript.

Pages: Monitor, Inspect (search, list, one snapshot), Resync, Restore, Backup, and the API
reference; Statistics and an instance's history are in ``ui_stats.py``, Legal holds and
the retention preview in ``ui_holds.py``. Every page needs a
reader; buttons that change something are shown to managers only (and the actions check
again: ``ui_actions.py``).
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from imixs_archive.document.conventions import SNAPSHOT_ID, is_snapshot_id, iter_files, origin_id
from imixs_archive.document.xml_writer import to_xml
from imixs_archive.errors import ArchiveError
from imixs_archive.ledger.schedule import ledger_status
from imixs_archive.services.retention import Policy, instance_retention, retention_sentence
from imixs_archive.timezones import zone
from imixs_archive.web.api_archive import doc_rows, list_by_modified, list_instance
from imixs_archive.web.auth import AccessDeniedError, Principal
from imixs_archive.web.credentials import Role, grants
from imixs_archive.web.dependencies import Services, Svc, services
from imixs_archive.web.flash import shown
from imixs_archive.web.health import store_check
from imixs_archive.web.integrations import restore_overview, sync_overview
from imixs_archive.web.problems import LoginRequiredError
from imixs_archive.web.ui_labels import hold_badge, snapshot_entry
from imixs_archive.web.ui_monitor import (
    backup_card,
    ftps_target,
    glance,
    scrub_card,
    store_details,
)

router = APIRouter(include_in_schema=False)


def ui_user(request: Request) -> Principal:
    svc = services(request)
    svc.auth.check_origin(request, request.method)
    principal = svc.auth.identify(request)
    if principal is None:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        raise LoginRequiredError(target)
    if not grants(principal.role, Role.READER):
        raise AccessDeniedError(
            f"{principal.name} is an {principal.role}: the pages are for readers"
        )
    return principal


User = Annotated[Principal, Depends(ui_user)]


def page(request: Request, svc: Services, user: Principal, name: str, **context: Any) -> Response:
    return svc.templates.TemplateResponse(
        request,
        name,
        {
            "user": user,
            "open_mode": svc.auth.open,
            "notice": shown(request.query_params, "notice"),
            "error": shown(request.query_params, "error"),
            "tz": svc.settings.timezone,
            **context,
        },
    )


@router.get("/")
def home() -> RedirectResponse:
    return RedirectResponse("/ui/monitor", status_code=307)


@router.get("/ui/monitor")
def monitor(request: Request, svc: Svc, user: User) -> Response:
    try:
        store: dict[str, Any] = svc.archive.storage.describe()
        store_error = ""
    except Exception as exc:  # the page still renders: the store's trouble is the news
        store, store_error = {}, f"{type(exc).__name__}: {exc}"
    findings = svc.archive.storage.findings()  # a lost log: shown until the operator deals with it
    reachable, why, _seconds = store_check(svc)
    if not reachable:
        store_error = f"Store unavailable: {why}"
    try:
        sync = sync_overview(svc.archive, svc.workflow)
    except ArchiveError as exc:  # the store is down: what this process knows, no more
        link = svc.workflow
        sync = defaultdict(lambda: None)  # what the store would say is unknown: shown empty
        sync.update(
            configured=link is not None,
            endpoint=link.endpoint if link is not None else None,
            message=f"sync state unknown while the store is unavailable ({exc})",
            counters=link.sync.counters.as_dict() if link is not None else None,
            instances=[],
            dead_letters=[],
        )
        sync["sync.count"] = "–"
    try:
        ledger, ledger_error = ledger_status(svc.archive, svc.ledger), ""
    except ArchiveError as exc:  # the store is down, or the ledger's head damaged
        ledger, ledger_error = {}, f"ledger state unknown: {exc}"
    local = svc.templates.env.filters["local"]
    scrub_rows, scrub_findings, scrub_error = scrub_card(svc, local)
    return page(
        request,
        svc,
        user,
        "monitor.html",
        nav="monitor",
        scrub_rows=scrub_rows,
        scrub_findings=scrub_findings,
        scrub_error=scrub_error,
        backup=backup_card(svc, local),
        glance=glance(svc, sync, ledger, store, local),
        store_details=store_details(store),
        ledger=ledger,
        ledger_error=ledger_error,
        store=store,
        store_error=store_error,
        findings=findings,
        sync=sync,
        jobs=[s.to_json() for s in svc.jobs.statuses()],
        started=svc.started,
    )


@router.get("/ui/inspect")
def inspect(
    request: Request,
    svc: Svc,
    user: User,
    q: str = "",
    after: str | None = None,
    from_day: Annotated[dt.date | None, Query(alias="from")] = None,
    to_day: Annotated[dt.date | None, Query(alias="to")] = None,
    cursor: str | None = None,
) -> Response:
    q = q.strip()
    # an old-format snapshot id may also be an instance's uniqueid: a snapshot only if stored
    if q and (SNAPSHOT_ID.match(q) or (is_snapshot_id(q) and svc.archive.exists(q))):
        return RedirectResponse(f"/ui/snapshot/{q}", status_code=303)
    listing: dict[str, Any] | None = None
    live: tuple[str | None, str | None] = (None, None)
    held = None
    retention = None
    if q:
        listing = list_instance(q, svc, user, limit=25, after=after)
        held = hold_badge(svc.archive, q, zone(svc.settings.timezone))
        found = instance_retention(svc.archive, Policy.parse(svc.settings.retention), q)
        if found is not None:
            retention = retention_sentence(found, zone(svc.settings.timezone))
        if listing["snapshots"] and svc.workflow is not None:
            live = svc.workflow.live_snapshot_id(q)
    elif from_day is not None:
        listing = list_by_modified(svc, user, from_day, to_day, limit=25, cursor=cursor)
    return page(
        request,
        svc,
        user,
        "inspect.html",
        nav="inspect",
        q=q,
        listing=listing,
        from_day=from_day,
        to_day=to_day,
        restore_configured=svc.workflow is not None,
        live_snapshot=live[0],
        live_unknown=live[1],
        held=held,
        retention=retention,
    )


@router.get("/ui/snapshot/{snapshot_id}")
def snapshot(request: Request, snapshot_id: str, svc: Svc, user: User) -> Response:
    doc = svc.archive.load(snapshot_id, with_files=False)
    files = []
    digests = svc.archive.file_digests(snapshot_id)
    for entry in iter_files(doc):
        key, _sha = digests.get(entry.name, ("", None))
        files.append(
            {"name": entry.name, "type": entry.content_type, "size": entry.size, "md5": key[:32]}
        )
    xml = to_xml(doc).decode("utf-8", "replace")
    tz = zone(svc.settings.timezone)
    others = [  # each by its time and task and status; the id is the link and tooltip
        snapshot_entry(svc.archive, other, tz, doc if other == snapshot_id else None)
        for other in svc.archive.list_instance(origin_id(snapshot_id), limit=50)
    ]
    return page(
        request,
        svc,
        user,
        "snapshot.html",
        nav="inspect",
        snapshot_id=snapshot_id,
        rows=doc_rows(doc, tz),
        files=files,
        xml=xml,
        uniqueid=origin_id(snapshot_id),
        others=others,
        restore=restore_overview(svc.archive, svc.workflow),
        held=hold_badge(svc.archive, origin_id(snapshot_id), tz),
    )


@router.get("/ui/resync")
def resync(request: Request, svc: Svc, user: User) -> Response:
    sync = sync_overview(svc.archive, svc.workflow)
    return _job_page(request, svc, user, "resync", sync=sync)


@router.get("/ui/restore")
def restore(request: Request, svc: Svc, user: User) -> Response:
    overview = restore_overview(svc.archive, svc.workflow)
    return _job_page(request, svc, user, "restore", restore=overview, **_backup_places(svc))


@router.get("/ui/backup")
def backup(request: Request, svc: Svc, user: User) -> Response:
    verify = _job(svc, "verify")
    return _job_page(request, svc, user, "backup", verify=verify, **_backup_places(svc))


@router.get("/api/docs")
def api_docs(request: Request, svc: Svc, user: User) -> Response:
    schema = request.app.openapi()
    endpoints = []
    for path, methods in schema.get("paths", {}).items():
        for method, spec in methods.items():
            endpoints.append(
                {
                    "method": method.upper(),
                    "path": path,
                    "summary": spec.get("summary", ""),
                    "description": spec.get("description", ""),
                    "parameters": [p.get("name") for p in spec.get("parameters", [])],
                    "tag": (spec.get("tags") or [""])[0],
                }
            )
    return page(request, svc, user, "api_docs.html", nav="api", endpoints=endpoints)


def _job(svc: Services, name: str) -> dict[str, Any] | None:
    status = svc.jobs.status(name)
    return status.to_json() if status else None


def _job_page(
    request: Request, svc: Services, user: Principal, name: str, **context: Any
) -> Response:
    """The page of the job ``name`` (``<name>.html``, its entry of the menu): its current
    or last run here (``job``) and ``context``."""
    return page(request, svc, user, f"{name}.html", nav=name, job=_job(svc, name), **context)


def _backup_places(svc: Services) -> dict[str, Any]:
    """Where backups are written and read: the folder (``ARCHIVE_BACKUP_DIR``) and the
    FTPS target (None without ``BACKUP_FTP_HOST``)."""
    return {"backup_dir": str(svc.settings.backup_dir), "ftps_target": ftps_target(svc)}

"""What the UI's forms post: login, logout, and the actions of managers.

Plain HTML forms (``application/x-www-form-urlencoded``, read here without a multipart
library, at most 64 KiB), each answered with a redirect back to its page with a notice:
the UI works without JavaScript, which only adds live progress. Same-site checks and
roles are those of the API (``auth.py``).
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Annotated
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, Depends
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from imixs_archive.document.conventions import origin_id
from imixs_archive.errors import ArchiveError
from imixs_archive.recovery import restore_jobs
from imixs_archive.sync.jobs import resync_job
from imixs_archive.sync.status import retry_dead_letters
from imixs_archive.timezones import epoch_ms, zone, zone_label
from imixs_archive.web.api_jobs import BackupRequest, backup_job, verify_job, workflow
from imixs_archive.web.api_restore import (
    AsOfRequest,
    RestoreRequest,
    backup_tree,
    require_instance,
    start_as_of_job,
)
from imixs_archive.web.auth import (
    SESSION_COOKIE,
    SESSION_SECONDS,
    Principal,
    TooManyLoginsError,
)
from imixs_archive.web.dependencies import Services, Svc, manager, services
from imixs_archive.web.flash import flash_query, shown
from imixs_archive.web.problems import BadRequestError, PayloadTooLargeError

log = logging.getLogger(__name__)
router = APIRouter(include_in_schema=False)
FORM_LIMIT = 64 * 1024
UiManager = Annotated[Principal, Depends(manager)]


async def read_form(request: Request) -> dict[str, str]:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > FORM_LIMIT:
        raise PayloadTooLargeError("form too large")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > FORM_LIMIT:
            raise PayloadTooLargeError("form too large")
    fields = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    return {name: values[-1] for name, values in fields.items()}


def back(path: str, *, notice: str = "", error: str = "") -> RedirectResponse:
    query = (
        flash_query("notice", notice) if notice else flash_query("error", error) if error else ""
    )
    return RedirectResponse(f"{path}?{query}" if query else path, status_code=303)


def _safe_next(target: str) -> str:
    """Only paths of this site (no scheme, no //host): no open redirect."""
    if target.startswith("/") and not target.startswith("//") and "\\" not in target:
        return target
    return "/ui/monitor"


@router.get("/login")
def login_page(request: Request, svc: Svc) -> Response:
    return svc.templates.TemplateResponse(
        request,
        "login.html",
        {
            "user": None,
            "nav": "",
            "next": _safe_next(request.query_params.get("next", "")),
            "error": shown(request.query_params, "error"),
            "open_mode": svc.auth.open,
        },
    )


@router.post("/login")
async def login(request: Request, svc: Svc) -> Response:
    svc.auth.check_origin(request, "POST")
    form = await read_form(request)
    target = _safe_next(form.get("next", ""))
    try:
        principal = await run_in_threadpool(  # the hashing must not stop the event loop
            svc.auth.check_password, form.get("username", ""), form.get("password", "")
        )
        error = "" if principal is not None else "wrong user name or password"
    except TooManyLoginsError as exc:
        principal, error = None, exc.message
    if principal is None:
        return RedirectResponse(
            f"/login?{flash_query('error', error)}&next={quote(target)}", status_code=303
        )
    response = RedirectResponse(target, status_code=303)
    return with_session(response, request, svc, principal)


def with_session(
    response: Response,
    request: Request,
    svc: Services,
    principal: Principal,
    cookie: str = SESSION_COOKIE,
) -> Response:
    """The response, setting a login's session cookie (``cookie``: under another name)."""
    response.set_cookie(
        cookie,
        svc.auth.make_session(principal),
        max_age=SESSION_SECONDS,
        httponly=True,
        samesite="strict",
        secure=svc.auth.secure_cookies(request),
        path="/",
    )
    return response


@router.post("/logout")
async def logout(request: Request) -> Response:
    auth = services(request).auth
    auth.check_origin(request, "POST")
    cookie = request.cookies.get(SESSION_COOKIE)
    if cookie:
        auth.end_session(cookie)
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response


@router.post("/ui/actions/delete/{snapshot_id}")
async def delete(request: Request, snapshot_id: str, svc: Svc, who: UiManager) -> Response:
    form = await read_form(request)
    if form.get("confirm") != "yes":
        return back(f"/ui/snapshot/{snapshot_id}", error="tick the box to confirm the delete")
    try:
        result = await run_in_threadpool(svc.archive.delete, snapshot_id, by=who.name)
    except ArchiveError as exc:
        return back(f"/ui/snapshot/{snapshot_id}", error=str(exc))
    uniqueid = origin_id(snapshot_id)
    if not result.existed:
        return back("/ui/inspect", error=f"snapshot {snapshot_id} is not in the archive")
    return RedirectResponse(
        f"/ui/inspect?q={quote(uniqueid)}&{flash_query('notice', f'deleted {snapshot_id}')}",
        status_code=303,
    )


@router.post("/ui/actions/restore/{snapshot_id}")
async def restore_one(request: Request, snapshot_id: str, svc: Svc, _who: UiManager) -> Response:
    form = await read_form(request)
    if form.get("confirm") != "yes":
        return back(f"/ui/snapshot/{snapshot_id}", error="tick the box to confirm the restore")
    try:
        sent = await run_in_threadpool(workflow(svc, "restore").restore_snapshot, snapshot_id)
    except ArchiveError as exc:
        return back(f"/ui/snapshot/{snapshot_id}", error=str(exc))
    done = "restored into the workflow" if sent else "the workflow already is at this snapshot"
    return back(f"/ui/snapshot/{snapshot_id}", notice=done)


def form_filters(form: dict[str, str]) -> list[dict[str, str]]:
    """``ITEM=REGEX`` lines of the ``filters`` box (and the older one-filter fields)."""
    filters = []
    for line in form.get("filters", "").splitlines():
        if not line.strip():
            continue
        item, sep, regex = line.strip().partition("=")
        if not sep or not item.strip():
            raise BadRequestError(f"a filter is ITEM=REGEX, one per line; got {line.strip()!r}")
        filters.append({"item": item.strip(), "regex": regex or ".*"})
    if form.get("filter_item", "").strip():
        filters.append(
            {"item": form["filter_item"].strip(), "regex": form.get("filter_regex", "") or ".*"}
        )
    return filters


@router.post("/ui/actions/restore")
async def start_restore(request: Request, svc: Svc, _who: UiManager) -> Response:
    form = await read_form(request)
    dry_run = form.get("dry_run") == "yes"
    try:
        body = RestoreRequest.model_validate(
            {
                "from": _day(form.get("from", "")),
                "to": _day(form.get("to", "")),
                "filters": form_filters(form),
                "dry_run": dry_run,
            }
        )
        link = workflow(svc, "restore")
        wanted = body.to_range(zone(svc.settings.timezone))
        job = restore_jobs.range_job(link.archive, link.client, wanted, dry_run=dry_run)
        svc.jobs.start("restore", job, message="planning" if dry_run else "restoring")
    except (ArchiveError, ValueError) as exc:
        return back("/ui/restore", error=str(exc))
    return back("/ui/restore", notice="dry run started" if dry_run else "restore started")


@router.post("/ui/actions/restore-as-of")
async def restore_as_of(request: Request, svc: Svc, _who: UiManager) -> Response:
    """The plan (``dry_run``), or the restore of a plan shown: ``confirm`` holds its token
    and the box ``confirmed`` must be ticked."""
    form = await read_form(request)
    dry_run = form.get("dry_run") == "yes"
    if not dry_run and form.get("confirmed") != "yes":
        return back("/ui/restore", error="tick the box to confirm the restore as planned")
    try:
        body = AsOfRequest.model_validate(
            {
                "as_of": form.get("as_of", ""),
                "changed_until": form.get("changed_until") or None,
                "groups": form.get("groups", "").replace(",", "\n").splitlines(),
                "filters": form_filters(form),
                "dry_run": dry_run,
                "confirm": None if dry_run else form.get("confirm", ""),
            }
        )
        await run_in_threadpool(start_as_of_job, svc, body)
    except (ArchiveError, ValueError) as exc:
        return back("/ui/restore", error=str(exc))
    return back("/ui/restore", notice="planning started" if dry_run else "restore started")


@router.post("/ui/actions/restore-instance/{uniqueid}")
async def restore_instance(request: Request, uniqueid: str, svc: Svc, _who: UiManager) -> Response:
    form = await read_form(request)
    here = f"/ui/inspect?q={quote(uniqueid)}"
    if form.get("confirm") != "yes":
        return RedirectResponse(
            f"{here}&{flash_query('error', 'tick the box to confirm the restore')}",
            status_code=303,
        )
    try:
        uniqueid = await run_in_threadpool(require_instance, svc, uniqueid)
        link = workflow(svc, "restore")
        job = restore_jobs.instance_job(link.archive, link.client, uniqueid)
        svc.jobs.start("restore", job, message=f"restoring {uniqueid}")
    except ArchiveError as exc:
        return RedirectResponse(f"{here}&{flash_query('error', str(exc))}", status_code=303)
    return back("/ui/restore", notice=f"restore of every snapshot of {uniqueid} started")


@router.post("/ui/actions/restore-source")
async def restore_source(request: Request, svc: Svc, _who: UiManager) -> Response:
    form = await read_form(request)
    try:
        root = backup_tree(svc.settings, form.get("path", ""), form.get("ftps") == "yes")
        job = restore_jobs.tree_job(workflow(svc, "restore").client, root, svc.settings)
        svc.jobs.start("restore", job, message=f"restoring from {root}")
    except ArchiveError as exc:
        return back("/ui/restore", error=str(exc))
    return back("/ui/restore", notice=f"restore from {root} started")


@router.post("/ui/actions/resync")
async def start_resync(request: Request, svc: Svc, _who: UiManager) -> Response:
    form = await read_form(request)
    text = form.get("from", "").strip()
    try:
        link = workflow(svc, "resync")
        start = _sync_point(text, zone(svc.settings.timezone)) if text else None
        job = resync_job(link.archive, link.client, link.settings, start)
        svc.jobs.start("resync", job, message="resyncing")
    except ArchiveError as exc:
        return back("/ui/resync", error=str(exc))
    return back("/ui/resync", notice="resync started")


def _sync_point(text: str, tz: dt.tzinfo) -> int:
    """A date and time as the CLI takes it (in ``tz``, ``ARCHIVE_TIMEZONE``, unless it has
    an offset; what a datetime-local field sends), or epoch milliseconds: the sync point
    in milliseconds."""
    if text.isdigit():
        return int(text)
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise BadRequestError(
            f"not a date and time: {text!r} (e.g. 2024-04-01T08:00, in {zone_label(tz)}"
            " unless an offset is given)"
        ) from None
    when = when if when.tzinfo else when.replace(tzinfo=tz)
    return epoch_ms(when)


@router.post("/ui/actions/retry/{event_id}")
async def retry(request: Request, event_id: str, svc: Svc, _who: UiManager) -> Response:
    await read_form(request)
    try:
        client = workflow(svc, "sync").client
        letters = await run_in_threadpool(retry_dead_letters, svc.archive, client, [event_id])
    except ArchiveError as exc:
        return back("/ui/monitor", error=str(exc))
    if not letters:
        return back("/ui/monitor", error=f"no dead letter {event_id}")
    return back("/ui/monitor", notice=f"re-queued {letters[0].ref}")


@router.post("/ui/actions/backup")
async def start_backup(request: Request, svc: Svc, _who: UiManager) -> Response:
    form = await read_form(request)
    try:
        body = BackupRequest.model_validate(
            {
                "from": _day(form.get("from", "")),
                "to": _day(form.get("to", "")),
                "all_snapshots": form.get("all_snapshots") == "yes",
                "folder": form.get("folder", "").strip(),
                "ftps": form.get("ftps") == "yes",
            }
        )
        svc.jobs.start("backup", backup_job(svc, body), message="backing up")
    except (ArchiveError, ValueError) as exc:
        return back("/ui/backup", error=str(exc))
    return back("/ui/backup", notice="backup started")


@router.post("/ui/actions/verify")
async def start_verify(request: Request, svc: Svc, _who: UiManager) -> Response:
    await read_form(request)
    try:
        svc.jobs.start("verify", verify_job(svc), message="verifying")
    except ArchiveError as exc:
        return back("/ui/backup", error=str(exc))
    return back("/ui/backup", notice="verify started")


@router.post("/ui/actions/stop/{name}")
async def stop(request: Request, name: str, svc: Svc, _who: UiManager) -> Response:
    form = await read_form(request)
    page = _safe_next(form.get("back", "/ui/monitor"))
    try:
        svc.jobs.stop(name)
    except ArchiveError as exc:
        return back(page, error=str(exc))
    return back(page, notice=f"asked {name} to stop")


def _day(text: str) -> dt.date | None:
    if not text.strip():
        return None
    try:
        return dt.date.fromisoformat(text.strip())
    except ValueError:
        raise BadRequestError(f"not a date (YYYY-MM-DD): {text!r}") from None

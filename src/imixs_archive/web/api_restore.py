"""``/api/restore``: restore into the workflow, every variant as the job ``restore``.

A ``$modified`` range with filters (or its dry run: the plan, nothing sent), every
snapshot of one process instance, the snapshots of a backup folder on the server, and one
snapshot at once (short: answered directly). ``/api/restore/as-of``: back to a point in
time, in two steps: the dry run (the default) makes the plan, whose ``token`` a second
request sends back as ``confirm`` to send it (409-like failure of the job when the plan
changed meanwhile: nothing is sent). One restore runs at a time (409 otherwise);
``POST /api/restore/stop`` stops whichever runs.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from imixs_archive.config import Settings
from imixs_archive.errors import ConfigError, NotFoundError
from imixs_archive.recovery import restore_jobs
from imixs_archive.recovery.as_of import AsOf, check_as_of
from imixs_archive.recovery.as_of_jobs import as_of_job, parse_as_of
from imixs_archive.recovery.ftps import FtpsLocation
from imixs_archive.recovery.restore import RestoreRange, parse_filter
from imixs_archive.services.jobs import JobStatus
from imixs_archive.timezones import zone
from imixs_archive.web.api_jobs import answers_job, job_status, starts_job, workflow
from imixs_archive.web.api_models import RestoreOne
from imixs_archive.web.backup_folders import inside_backup_dir
from imixs_archive.web.dependencies import Manager, Reader, Services, Svc
from imixs_archive.web.integrations import restore_overview
from imixs_archive.web.problems import PROBLEM_RESPONSES, BadRequestError

router = APIRouter(prefix="/api/restore", tags=["restore"], responses=PROBLEM_RESPONSES)
JOB = "restore"


class Filter(BaseModel):
    item: str = Field(min_length=1)
    regex: str = ".*"


class RestoreRequest(BaseModel):
    from_day: dt.date = Field(alias="from", description="first $modified day (in ARCHIVE_TIMEZONE)")
    to_day: dt.date = Field(
        alias="to", description="last $modified day (in ARCHIVE_TIMEZONE), included"
    )
    filters: list[Filter] = Field(
        default_factory=list,
        description="[{item, regex}]: every value of item must contain a match; an instance "
        "without the item passes (the Java rule)",
    )
    strict: bool = Field(
        False, description="filters match whole values and an instance needs the item"
    )
    dry_run: bool = Field(False, description="send nothing; the job's result is the plan")

    def to_range(self, tz: dt.tzinfo = dt.UTC) -> RestoreRange:
        """The days as instants: local midnight of ``from`` to the end of ``to`` in ``tz``."""
        first = dt.datetime.combine(self.from_day, dt.time(), tz)
        last = dt.datetime.combine(self.to_day, dt.time.max, tz)
        try:
            filters = tuple(parse_filter(f"{f.item}={f.regex}") for f in self.filters)
            return RestoreRange(first, last, filters, strict=self.strict)
        except ConfigError as exc:
            raise BadRequestError(str(exc)) from None


class AsOfRequest(BaseModel):
    as_of: str = Field(
        description="ISO 8601 date-time: the state to go back to (ARCHIVE_TIMEZONE unless it "
        "carries an offset)"
    )
    changed_until: str | None = Field(
        None, description="only instances changed after as_of and up to this time"
    )
    groups: list[str] = Field(default_factory=list, description="only these $workflowgroup")
    filters: list[Filter] = Field(
        default_factory=list, description="[{item, regex}], on the snapshot coming back"
    )
    strict: bool = Field(False, description="filters match whole values; the item is needed")
    dry_run: bool = Field(True, description="make the plan only (the default)")
    confirm: str | None = Field(
        None, description="to send: the token of the dry run's plan (its result's `token`)"
    )

    def to_request(self, tz_name: str) -> AsOf:
        try:
            return parse_as_of(
                self.as_of,
                tz_name,
                changed_until=self.changed_until,
                groups=tuple(self.groups),
                filters=tuple(f"{f.item}={f.regex}" for f in self.filters),
                strict=self.strict,
            )
        except ConfigError as exc:
            raise BadRequestError(str(exc)) from None


def start_as_of_job(svc: Services, body: AsOfRequest) -> JobStatus:
    """Check ``body`` (400 for a bad or future time, 404 for a point before the first
    snapshot; an unknown group fails the job, before anything is sent) and start the job
    ``restore`` (409 when a restore runs)."""
    request = body.to_request(svc.settings.timezone)
    try:
        check_as_of(svc.archive, request, dt.datetime.now(dt.UTC))
    except ConfigError as exc:
        raise BadRequestError(str(exc)) from None
    if not body.dry_run and not body.confirm:
        raise BadRequestError("to send, confirm with the token of the dry run's plan")
    link = workflow(svc, "restore")
    job = as_of_job(
        link.archive,
        link.client,
        request,
        dry_run=body.dry_run,
        tz=zone(svc.settings.timezone),
        confirm=body.confirm,
        save_every=svc.settings.restore_save_every,
    )
    message = "planning a restore as of a point in time" if body.dry_run else "restoring"
    return svc.jobs.start(JOB, job, message=message)


class SourceRequest(BaseModel):
    path: str = Field(
        "", description="a folder inside ARCHIVE_BACKUP_DIR: relative to it, or absolute"
    )
    ftps: bool = Field(
        False,
        description="the FTPS target of the settings (BACKUP_FTP_*) instead of a folder",
    )


def backup_tree(settings: Settings, path: str, ftps: bool) -> Path | str:
    """What a restore from a backup tree reads: the FTPS target of the settings (its URL,
    never one the caller names: the server connects only where it was configured to), or
    a folder inside ``ARCHIVE_BACKUP_DIR``."""
    if ftps:
        if path.strip():
            raise BadRequestError("give either a folder or ftps, not both")
        return FtpsLocation.from_settings(settings).url()
    return backup_source(settings, path)


def backup_source(settings: Settings, text: str) -> Path:
    """The backup folder ``text`` names, which must exist inside ``ARCHIVE_BACKUP_DIR``
    (relative paths are taken from there; ``.`` is all of it)."""
    if not text.strip():
        raise BadRequestError("give a folder (relative to ARCHIVE_BACKUP_DIR; '.' for all of it)")
    return inside_backup_dir(settings, text, must_exist=True)


def require_instance(svc: Services, uniqueid: str) -> str:
    uniqueid = uniqueid.strip()
    if not uniqueid or not svc.archive.list_instance(uniqueid, limit=1):
        raise NotFoundError(f"process instance {uniqueid!r} has no snapshots in the archive")
    return uniqueid


@router.get("", summary="Restore state (restore.* items) and the restore job")
def get_restore(svc: Svc, _who: Reader) -> dict[str, Any]:
    status = svc.jobs.status(JOB)
    return {
        **restore_overview(svc.archive, svc.workflow),
        "job": status.to_json() if status else None,
    }


@starts_job(router, "", "Start a restore (or dry run) of a $modified range")
def start_restore(body: RestoreRequest, svc: Svc, _who: Manager) -> dict[str, Any]:
    """The job's result holds the counts; a dry run's also ``planned`` (instance,
    snapshot, bytes; the first 1,000), ``planned_count`` and ``planned_bytes``."""
    wanted = body.to_range(zone(svc.settings.timezone))
    link = workflow(svc, "restore")
    job = restore_jobs.range_job(link.archive, link.client, wanted, dry_run=body.dry_run)
    message = "planning a restore (dry run)" if body.dry_run else "restoring"
    return svc.jobs.start(JOB, job, message=message).to_json()


@starts_job(
    router, "/as-of", "Back to a point in time: the plan (dry run), then the restore (confirmed)"
)
def start_as_of(body: AsOfRequest, svc: Svc, _who: Manager) -> dict[str, Any]:
    """Every instance changed after ``as_of`` back to its newest snapshot at or before it.
    The dry run's result: ``back`` (per instance the snapshot coming back, ``changes``
    item by item against the newest snapshot, ``files``), ``not_yet`` (instances that did
    not exist yet: not deleted, the workflow cannot), the counts and ``token``. Sending
    needs ``dry_run: false`` and ``confirm: <token>``; the job plans again and sends only
    when the plan is the one confirmed."""
    return start_as_of_job(svc, body).to_json()


@answers_job(router, "POST", "/stop", "Stop a running restore (any kind)")
def stop_restore(svc: Svc, _who: Manager) -> dict[str, Any]:
    workflow(svc, "restore")
    if svc.jobs.status(JOB) is None:  # nothing to stop
        return job_status(svc, JOB)
    return svc.jobs.stop(JOB).to_json()


@router.post(
    "/snapshot/{snapshot_id}",
    summary="Restore one snapshot",
    response_model=None,
    responses={200: {"model": RestoreOne}},
)
def restore_snapshot(snapshot_id: str, svc: Svc, _who: Manager) -> dict[str, Any]:
    svc.archive.load(snapshot_id, with_files=False)  # 404 for an unknown snapshot first
    link = workflow(svc, "restore")
    sent = link.restore_snapshot(snapshot_id)
    return {
        "snapshot": snapshot_id,
        "restored": sent,
        "message": "restored" if sent else "the workflow's instance already is at it",
    }


@starts_job(router, "/instance/{uniqueid}", "Restore every snapshot of one instance")
def restore_instance(uniqueid: str, svc: Svc, _who: Manager) -> dict[str, Any]:
    """Oldest first, each snapshot the workflow does not hold (404 for an instance with no
    snapshots in the archive)."""
    uniqueid = require_instance(svc, uniqueid)
    link = workflow(svc, "restore")
    job = restore_jobs.instance_job(link.archive, link.client, uniqueid)
    return svc.jobs.start(JOB, job, message=f"restoring {uniqueid}").to_json()


@starts_job(
    router, "/source", "Restore from a backup folder on the server, or from the FTPS target"
)
def restore_source(body: SourceRequest, svc: Svc, _who: Manager) -> dict[str, Any]:
    """Posts each snapshot of the folder's XML files (or the FTPS target's) that the
    workflow does not have."""
    root = backup_tree(svc.settings, body.path, body.ftps)
    link = workflow(svc, "restore")
    job = restore_jobs.tree_job(link.client, root, svc.settings)
    return svc.jobs.start(JOB, job, message=f"restoring from {root}").to_json()

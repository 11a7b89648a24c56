"""``/api``: long operations run as jobs (verify, backup, resync) and their status, the sync
status and dead letters. Restore: ``api_restore.py``."""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter
from fastapi.types import DecoratedCallable
from pydantic import BaseModel, Field

from imixs_archive.errors import ArchiveError, NotFoundError
from imixs_archive.recovery.backup import DayRange, backup
from imixs_archive.recovery.backup_book import BackupSummary
from imixs_archive.recovery.backup_ftps import backup_to_location
from imixs_archive.recovery.ftps import FtpsLocation
from imixs_archive.services.checks import verify_once, verify_result, verify_words
from imixs_archive.services.job_runs import RECORDED
from imixs_archive.services.jobs import JOB_NAMES, MAX_LISTED, Job
from imixs_archive.sync.jobs import resync_job
from imixs_archive.sync.resync import request_cancel
from imixs_archive.sync.status import dead_letters, retry_dead_letters
from imixs_archive.timezones import zone
from imixs_archive.web.api_models import CONFLICT, JobStatusAnswer, Responses
from imixs_archive.web.backup_folders import inside_backup_dir
from imixs_archive.web.dependencies import Manager, Reader, Services, Svc
from imixs_archive.web.integrations import WorkflowLink, not_configured, sync_overview
from imixs_archive.web.problems import PROBLEM_RESPONSES, BadRequestError

router = APIRouter(prefix="/api", tags=["jobs"], responses=PROBLEM_RESPONSES)


NOT_RUN = "not_run"
"""The state of a job that has not run since the service started (runs are kept in
memory: a restart forgets them)."""


def job_status(svc: Services, name: str, last: dict[str, Any] | None = None) -> dict[str, Any]:
    """The current or last run of ``name``; before its first run since the service started,
    state ``not_run`` (200, not 404: nothing is missing) with the fields of a run empty,
    and ``last``, the last result the store keeps of it, where it keeps one."""
    status = svc.jobs.status(name)
    if status is not None:
        return status.to_json()
    if name not in JOB_NAMES:
        raise NotFoundError(f"there is no job {name!r} (jobs: {', '.join(JOB_NAMES)})")
    answer: dict[str, Any] = {
        "name": name,
        "state": NOT_RUN,
        "started": None,
        "finished": None,
        "progress": {},
        "message": f"{name} has not run since the service started",
        "error": None,
        "result": {},
        "active": False,
    }
    if last is not None:
        answer["last"] = last
    return answer


def starts_job(
    router: APIRouter, path: str, summary: str, conflict: Responses = CONFLICT
) -> Callable[[DecoratedCallable], DecoratedCallable]:
    """Declares ``POST path``, a route that starts a job: 202 and its status, or 409
    (``conflict``) while a job of that name runs."""
    return router.post(
        path,
        status_code=202,
        summary=summary,
        response_model=None,
        responses={202: {"model": JobStatusAnswer}, **conflict},
    )


def answers_job(
    router: APIRouter, method: str, path: str, summary: str
) -> Callable[[DecoratedCallable], DecoratedCallable]:
    """Declares ``method path``, a route that answers a job's status."""
    return router.api_route(
        path,
        methods=[method],
        summary=summary,
        response_model=None,
        responses={200: {"model": JobStatusAnswer}},
    )


def _status(svc: Services, name: str) -> dict[str, Any]:
    """:func:`job_status`, with ``last``: the last run the store recorded of a job it
    records (``verify``, ``backup``: whichever process ran it)."""
    try:
        run = svc.archive.runs.get(name) if name in RECORDED else None
    except ArchiveError:
        run = None  # the store is down: this process's jobs all the same
    return job_status(svc, name, last=run.to_json() if run is not None else None)


@router.get(
    "/jobs",
    summary="Every job's current or last run",
    response_model=None,
    responses={200: {"model": list[JobStatusAnswer]}},
)
def list_jobs(svc: Svc, _who: Reader) -> list[dict[str, Any]]:
    """Every job this service runs, in the order of ``JOB_NAMES``; one that has not run
    since the service started has state ``not_run``."""
    return [_status(svc, name) for name in JOB_NAMES]


@answers_job(router, "GET", "/jobs/{name}", "One job's current or last run")
def get_job(name: str, svc: Svc, _who: Reader) -> dict[str, Any]:
    return _status(svc, name)


@answers_job(router, "POST", "/jobs/{name}/stop", "Ask a running job to stop")
def stop_job(name: str, svc: Svc, _who: Manager) -> dict[str, Any]:
    """A no-op for a job that is not running (its status is answered as is)."""
    if svc.jobs.status(name) is None:
        return job_status(svc, name)
    return svc.jobs.stop(name).to_json()


# ---- verify --------------------------------------------------------------------------


def verify_job(svc: Services) -> Any:
    def run(job: Job) -> str:
        def tick(stage: str) -> None:
            job.add(**{stage: 1})
            job.check_stop()

        report = verify_once(svc.archive, progress=tick, record=True)
        job.set_result(verify_result(report))
        return verify_words(report)

    return run


@starts_job(router, "/verify", "Start verifying the whole archive")
def start_verify(svc: Svc, _who: Manager) -> dict[str, Any]:
    return svc.jobs.start("verify", verify_job(svc), message="verifying").to_json()


@answers_job(router, "GET", "/verify", "Status and findings of the last verify")
def get_verify(svc: Svc, _who: Reader) -> dict[str, Any]:
    return _status(svc, "verify")


@router.get(
    "/scrub",
    summary="The scrub: coverage within the period, its cycle and pace, findings",
)
def get_scrub(svc: Svc, _who: Reader) -> dict[str, Any]:
    """What ``imixs-archive verify --slice`` and the Monitor's Scrub card show (any
    process's slices), and this process's last slice."""
    status = svc.archive.scrub_status(svc.settings.scrub_period)
    schedule = svc.scrub
    status["interval_seconds"] = svc.settings.scrub_interval
    status["this_process"] = {
        "last_slice": schedule.last.to_json() if schedule and schedule.last else None,
        "last_error": (schedule.last_error or None) if schedule else None,
    }
    return status


# ---- backup --------------------------------------------------------------------------


class BackupRequest(BaseModel):
    from_day: dt.date | None = Field(
        None, alias="from", description="first $modified day (ARCHIVE_TIMEZONE)"
    )
    to_day: dt.date | None = Field(
        None, alias="to", description="last $modified day (ARCHIVE_TIMEZONE)"
    )
    all_snapshots: bool = Field(False, description="every snapshot, not the newest per instance")
    folder: str = Field(
        "",
        description="a folder inside ARCHIVE_BACKUP_DIR, relative to it or absolute "
        "(default: the backup folder itself); anything outside it is refused",
    )
    ftps: bool = Field(
        False,
        description="to the FTPS target of the settings (BACKUP_FTP_*) instead of a folder: "
        "the newest snapshot of each instance (from and to apply; folder and all_snapshots "
        "do not)",
    )


def backup_job(svc: Services, request: BackupRequest) -> Any:
    """The backup job; a 400 when the folder is outside ``ARCHIVE_BACKUP_DIR``, a 503 for
    FTPS without ``BACKUP_FTP_HOST``."""
    days = DayRange(request.from_day, request.to_day, zone(svc.settings.timezone))
    if request.ftps:
        return ftps_backup_job(svc, request, days)
    root = inside_backup_dir(svc.settings, request.folder, must_exist=False)
    write = functools.partial(
        backup, svc.archive, root, days=days, all_snapshots=request.all_snapshots
    )
    return _backup_run(str(root), write)


def ftps_backup_job(svc: Services, request: BackupRequest, days: DayRange) -> Any:
    """The full backup to the FTPS target (``backup ftps://...``), as a job."""
    if request.all_snapshots or request.folder.strip():
        raise BadRequestError("an FTPS backup takes neither a folder nor all_snapshots")
    location = FtpsLocation.from_settings(svc.settings)
    write = functools.partial(
        backup_to_location,
        svc.archive,
        location,
        days=days,
        overwrite=svc.settings.backup_ftp_overwrite,
    )
    return _backup_run(str(location), write)


def _backup_run(target: str, write: Callable[..., BackupSummary]) -> Callable[[Job], str]:
    """The job of a backup to ``target``: ``write`` called with ``on_snapshot``, which
    counts each snapshot written and stops the backup there when a stop was asked."""

    def run(job: Job) -> str:
        job.progress(snapshots=0, target=target)

        def seen(_snapshot_id: str) -> None:
            job.add(snapshots=1)
            job.check_stop()

        summary = write(on_snapshot=seen)
        job.set_result(summary.result(target, MAX_LISTED))
        return summary.words(target)

    return run


@starts_job(router, "/backup", "Start a backup to ARCHIVE_BACKUP_DIR or to the FTPS target")
def start_backup(body: BackupRequest, svc: Svc, _who: Manager) -> dict[str, Any]:
    if body.from_day and body.to_day and body.from_day > body.to_day:
        raise BadRequestError("from is after to")
    return svc.jobs.start("backup", backup_job(svc, body), message="backing up").to_json()


@answers_job(router, "GET", "/backup", "Status of the last backup")
def get_backup(svc: Svc, _who: Reader) -> dict[str, Any]:
    return _status(svc, "backup")


# ---- sync, resync, dead letters -----------------------------------------------------


def workflow(svc: Services, feature: str) -> WorkflowLink:
    """The workflow link, or 503 saying what to configure."""
    if svc.workflow is None:
        raise not_configured(feature)
    return svc.workflow


class ResyncRequest(BaseModel):
    from_millis: int | None = Field(
        None, alias="from", ge=0, description="sync point (epoch ms) to start at; default: on"
    )


@router.get("/sync/status", summary="Sync state, lag, counters and dead letters")
def get_sync_status(svc: Svc, _who: Reader) -> dict[str, Any]:
    return sync_overview(svc.archive, svc.workflow)


@router.get("/sync/deadletters", summary="Events that could not be archived")
def get_dead_letters(svc: Svc, _who: Reader) -> dict[str, Any]:
    workflow(svc, "sync")
    letters = dead_letters(svc.archive)
    return {
        "dead_letters": [vars(letter) for letter in letters[:MAX_LISTED]],
        "count": len(letters),
    }


@router.post("/sync/deadletters/{event_id}/retry", summary="Re-queue one dead letter")
def retry_dead_letter(event_id: str, svc: Svc, _who: Manager) -> dict[str, Any]:
    link = workflow(svc, "sync")
    letters = retry_dead_letters(svc.archive, link.client, [event_id])
    if not letters:
        raise NotFoundError(f"no dead letter {event_id}")
    return {"requeued": [vars(letter) for letter in letters]}


@starts_job(router, "/sync/resync", "Start a resync (syncpoint walk)")
def start_resync(body: ResyncRequest, svc: Svc, _who: Manager) -> dict[str, Any]:
    link = workflow(svc, "resync")
    job = resync_job(link.archive, link.client, link.settings, body.from_millis)
    return svc.jobs.start("resync", job, message="resyncing").to_json()


@router.post("/sync/resync/stop", summary="Stop a running resync")
def stop_resync(svc: Svc, _who: Manager) -> dict[str, Any]:
    workflow(svc, "resync")
    if svc.jobs.status("resync") is None:
        return {"stopped": request_cancel(svc.archive), "state": None}  # another process's
    return svc.jobs.stop("resync").to_json()

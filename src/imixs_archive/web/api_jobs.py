"""``/api``: long operations run as jobs (verify, backup), their status, and the sync and
restore endpoints, which answer 503 until those services are wired into the web app."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from imixs_archive.archive.verify import verify
from imixs_archive.errors import NotFoundError
from imixs_archive.services.backup import backup
from imixs_archive.services.jobs import Job
from imixs_archive.web.integrations import (
    require_restore,
    require_sync,
    restore_overview,
    sync_overview,
)
from imixs_archive.web.problems import BadRequestError
from imixs_archive.web.state import Manager, Reader, Services, Svc

router = APIRouter(prefix="/api", tags=["jobs"])

MAX_LISTED = 200
_FOLDER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def _status(svc: Services, name: str) -> dict[str, Any]:
    status = svc.jobs.status(name)
    if status is None:
        raise NotFoundError(f"{name} has not run since the service started")
    return status.to_json()


@router.get("/jobs", summary="Every job's current or last run")
def list_jobs(svc: Svc, _who: Reader) -> list[dict[str, Any]]:
    return [status.to_json() for status in svc.jobs.statuses()]


@router.get("/jobs/{name}", summary="One job's current or last run")
def get_job(name: str, svc: Svc, _who: Reader) -> dict[str, Any]:
    return _status(svc, name)


@router.post("/jobs/{name}/stop", summary="Ask a running job to stop")
def stop_job(name: str, svc: Svc, _who: Manager) -> dict[str, Any]:
    return svc.jobs.stop(name).to_json()


# ---- verify --------------------------------------------------------------------------


def verify_job(svc: Services) -> Any:
    def run(job: Job) -> str:
        def tick(stage: str) -> None:
            job.add(**{stage: 1})
            job.check_stop()

        report = verify(svc.backend, progress=tick)
        job.set_result(
            {
                "ok": report.ok,
                "snapshots": report.snapshots,
                "files": report.files,
                "pieces": report.pieces,
                "problems": report.problems[:MAX_LISTED],
                "warnings": report.warnings[:MAX_LISTED],
                "problem_count": len(report.problems),
                "warning_count": len(report.warnings),
            }
        )
        verdict = "clean" if report.ok else f"{len(report.problems)} problems"
        return (
            f"checked {report.snapshots} snapshots, {report.files} files, "
            f"{report.pieces} pieces: {verdict}"
        )

    return run


@router.post("/verify", status_code=202, summary="Start verifying the whole archive")
def start_verify(svc: Svc, _who: Manager) -> dict[str, Any]:
    return svc.jobs.start("verify", verify_job(svc), message="verifying").to_json()


@router.get("/verify", summary="Status and findings of the last verify")
def get_verify(svc: Svc, _who: Reader) -> dict[str, Any]:
    return _status(svc, "verify")


# ---- backup --------------------------------------------------------------------------


class BackupRequest(BaseModel):
    from_day: dt.date | None = Field(None, alias="from", description="first $modified day")
    to_day: dt.date | None = Field(None, alias="to", description="last $modified day")
    all_snapshots: bool = Field(False, description="every snapshot, not the newest per instance")
    folder: str = Field("", description="sub-folder of ARCHIVE_BACKUP_DIR (default: none)")


def backup_job(svc: Services, request: BackupRequest) -> Any:
    root = svc.settings.backup_dir / request.folder if request.folder else svc.settings.backup_dir

    def run(job: Job) -> str:
        job.progress(snapshots=0, target=str(root))

        def seen(_snapshot_id: str) -> None:
            job.add(snapshots=1)
            job.check_stop()

        summary = backup(
            svc.archive,
            root,
            first=request.from_day,
            last=request.to_day,
            all_snapshots=request.all_snapshots,
            on_snapshot=seen,
        )
        job.set_result(
            {
                "target": str(root),
                "written": summary.written,
                "current": summary.current,
                "failed": summary.failed,
                "bytes_written": summary.bytes_written,
                "failures": summary.failures[:MAX_LISTED],
            }
        )
        return (
            f"{summary.written} written, {summary.current} already current, "
            f"{summary.failed} failed, to {root}"
        )

    return run


@router.post("/backup", status_code=202, summary="Start a backup to ARCHIVE_BACKUP_DIR")
def start_backup(body: BackupRequest, svc: Svc, _who: Manager) -> dict[str, Any]:
    if body.folder and (not _FOLDER.match(body.folder) or ".." in body.folder):
        raise BadRequestError("folder must be a plain name (letters, digits, . _ -)")
    if body.from_day and body.to_day and body.from_day > body.to_day:
        raise BadRequestError("from is after to")
    return svc.jobs.start("backup", backup_job(svc, body), message="backing up").to_json()


@router.get("/backup", summary="Status of the last backup")
def get_backup(svc: Svc, _who: Reader) -> dict[str, Any]:
    return _status(svc, "backup")


# ---- sync and restore: not wired yet -------------------------------------------------


class ResyncRequest(BaseModel):
    from_millis: int | None = Field(None, alias="from", description="sync point to start at")


class RestoreRequest(BaseModel):
    from_day: dt.date = Field(alias="from")
    to_day: dt.date = Field(alias="to")
    filters: list[dict[str, str]] = Field(
        default_factory=list, description="[{item, regex}]: every value must match"
    )


@router.get("/sync/status", summary="Sync state, lag and whether sync runs")
def get_sync_status(svc: Svc, _who: Reader) -> dict[str, Any]:
    return sync_overview(svc)


@router.get("/sync/deadletters", summary="Events that could not be archived")
def get_dead_letters(svc: Svc, _who: Reader) -> dict[str, Any]:
    require_sync(svc)


@router.post("/sync/deadletters/{event_id}/retry", summary="Retry one dead letter")
def retry_dead_letter(event_id: str, svc: Svc, _who: Manager) -> dict[str, Any]:
    require_sync(svc)


@router.post("/sync/resync", status_code=202, summary="Start a resync")
def start_resync(body: ResyncRequest, svc: Svc, _who: Manager) -> dict[str, Any]:
    require_sync(svc)


@router.post("/sync/resync/stop", summary="Stop a running resync")
def stop_resync(svc: Svc, _who: Manager) -> dict[str, Any]:
    require_sync(svc)


@router.get("/restore", summary="Restore state (restore.* items) and whether restore runs")
def get_restore(svc: Svc, _who: Reader) -> dict[str, Any]:
    return restore_overview(svc)


@router.post("/restore", status_code=202, summary="Start a restore of a $modified range")
def start_restore(body: RestoreRequest, svc: Svc, _who: Manager) -> dict[str, Any]:
    require_restore(svc)


@router.post("/restore/stop", summary="Stop a running restore")
def stop_restore(svc: Svc, _who: Manager) -> dict[str, Any]:
    require_restore(svc)


@router.post("/restore/snapshot/{snapshot_id}", summary="Restore one snapshot")
def restore_snapshot(snapshot_id: str, svc: Svc, _who: Manager) -> dict[str, Any]:
    svc.archive.load(snapshot_id, with_files=False)  # 404 for an unknown snapshot first
    require_restore(svc)

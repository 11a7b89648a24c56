"""The workflow side wired from the settings, once, for the CLI and the web app: the sync
service and the resync, and the resync as a job function for the app's job runner (the
restore variants are in ``restore_jobs``)."""

from __future__ import annotations

import dataclasses
import threading

from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import Settings
from imixs_archive.services.jobs import MAX_LISTED, Job, JobFunction
from imixs_archive.sync.resync import Resync, request_cancel
from imixs_archive.sync.service import SyncConfig, SyncService
from imixs_archive.workflow.client import WorkflowClient


def open_sync(archive: Archive, settings: Settings, *, workers: int | None = None) -> SyncService:
    """The sync service the settings describe (``workers`` overrides
    ``WORKFLOW_SYNC_WORKERS``), with a workflow client of its own: close both
    (``service.close()``, then ``service.client.close()``)."""
    config = SyncConfig.from_settings(settings)
    if workers:
        config = dataclasses.replace(config, workers=max(1, workers))
    client = WorkflowClient.from_settings(settings, workers=config.workers)
    return SyncService(archive, client, config)


def new_resync(
    archive: Archive,
    client: WorkflowClient,
    settings: Settings,
    *,
    stopping: threading.Event | None = None,
) -> Resync:
    """The resync the settings describe (attempts, and a retry delay no longer than the
    sync interval)."""
    return Resync(
        archive,
        client,
        max_attempts=settings.workflow_sync_maxattempts,
        retry_delay_ms=min(settings.workflow_sync_retrydelay, settings.workflow_sync_interval),
        stopping=stopping,
    )


def resync_job(
    archive: Archive, client: WorkflowClient, settings: Settings, start: int | None
) -> JobFunction:
    """The resync from ``start`` (None: the saved sync point) as a job function."""

    def run(job: Job) -> str:
        result = new_resync(archive, client, settings, stopping=job.stop_event).run(start)
        job.set_result(
            {
                "status": result.status,
                "point": result.point,
                "walked": result.walked,
                "new": result.new,
                "bytes": result.bytes,
                "failures": result.failures[:MAX_LISTED],
                "warnings": result.warnings[:MAX_LISTED],
                "skipped": [
                    {"from": first, "to": last} for first, last in result.skipped[:MAX_LISTED]
                ],
            }
        )
        if job.stop_requested:
            request_cancel(archive)  # leave no 'running' flag behind
        passed = (
            f", {len(result.skipped)} range(s) the feed could not answer" if result.skipped else ""
        )
        return (
            f"resync {result.status} at {result.point}: {result.walked} walked, "
            f"{result.new} newly archived{passed}"
        )

    return run

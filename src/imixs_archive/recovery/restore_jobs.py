"""Restores, one way in: :func:`run_restore` takes a :class:`RestoreRequest` (one snapshot,
one process instance, a ``$modified`` range, or a backup tree in a folder or on FTPS) and
runs the matching restore; ``imixs-archive restore`` calls it, and so do the job functions
below, run by the web app's job runner under the one name ``restore`` (one restore at a
time, whatever its kind; ``/api/restore/stop`` stops it).

* ``range_job``: a ``$modified`` range with filters; with ``dry_run`` nothing is sent and
  the result lists the plan (instance, snapshot, attachment bytes);
* ``instance_job``: every archived snapshot of one process instance the workflow lacks;
* ``tree_job``: the snapshots of a backup tree on the server (``restore_files.py``) or on
  the FTPS target.

Each reports its counters as progress while it runs (shown live by the UI) and its
outcome as the job's result, with ``kind`` saying which restore it was.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import Settings
from imixs_archive.errors import ConfigError
from imixs_archive.recovery.backup_ftps import ftps_files
from imixs_archive.recovery.ftps import FtpsLocation, FtpsTarget, is_ftps
from imixs_archive.recovery.restore import Restorer, RestoreRange, RestoreReport
from imixs_archive.recovery.restore_files import TreeRestoreReport, restore_files, tree_files
from imixs_archive.services.jobs import MAX_LISTED, Job, JobFunction
from imixs_archive.workflow.client import WorkflowClient

MAX_PLANNED = 1000
"""A dry run's result lists at most this many planned snapshots (the counts are whole)."""


@dataclass(frozen=True)
class RestoreRequest:
    """What to restore: ``source`` (a backup tree: a folder, or an ``ftps://`` URL), else
    ``snapshot``, else ``uniqueid`` (every snapshot of the instance the workflow lacks),
    else the range ``wanted``. ``dry_run``: send nothing, report what would be sent."""

    snapshot: str | None = None
    uniqueid: str | None = None
    wanted: RestoreRange | None = None
    source: str | None = None
    dry_run: bool = False
    workers: int = 4


@dataclass
class RestoreOutcome:
    """What a restore did: ``kind`` (``snapshot``, ``instance``, ``range``, ``dry-run``,
    ``source``); ``report`` for the archive's snapshots, ``tree`` for a backup tree,
    ``sent`` for one snapshot (False: already current in the workflow)."""

    kind: str
    report: RestoreReport | None = None
    tree: TreeRestoreReport | None = None
    sent: bool = False


def run_restore(
    request: RestoreRequest,
    archive: Archive | None,
    client: WorkflowClient,
    *,
    settings: Settings | None = None,
    stop: threading.Event | None = None,
    on_progress: Callable[[RestoreReport], None] | None = None,
    on_tree_progress: Callable[[TreeRestoreReport], None] | None = None,
) -> RestoreOutcome:
    """Run the restore ``request`` asks for (``settings``: for an FTPS source; a backup
    tree needs no ``archive``)."""
    dry_run = request.dry_run
    if request.source is not None:
        tree_kw: dict[str, Any] = {"stop": stop, "on_progress": on_tree_progress}
        if not is_ftps(request.source):
            tree = restore_files(
                client, tree_files(Path(request.source)), dry_run=dry_run, **tree_kw
            )
            return RestoreOutcome("source", tree=tree)
        if settings is None:
            raise ConfigError("an FTPS source needs the FTPS settings")
        with FtpsTarget(FtpsLocation.from_settings(settings, request.source)) as target:
            tree = restore_files(client, ftps_files(target), dry_run=dry_run, **tree_kw)
        return RestoreOutcome("source", tree=tree)
    if archive is None:
        raise ConfigError("a restore from the archive needs the archive")
    restorer = Restorer(
        archive,
        client,
        workers=request.workers,
        stop=stop,
        on_progress=on_progress,
        wait=not dry_run,
    )
    if request.snapshot:
        sent = restorer.restore_snapshot(request.snapshot, dry_run=dry_run)
        return RestoreOutcome("snapshot", sent=sent)
    if request.uniqueid:
        return RestoreOutcome(
            "instance", report=restorer.restore_instance(request.uniqueid, dry_run=dry_run)
        )
    if request.wanted is None:
        raise ConfigError("restore what? a snapshot, an instance, a range or a source")
    report = restorer.restore_range(request.wanted, dry_run=dry_run)
    return RestoreOutcome("dry-run" if dry_run else "range", report=report)


def report_json(report: RestoreReport, *, full: bool) -> dict[str, Any]:
    """Counters of a restore report; ``full`` adds the failures (capped) and ``stopped``."""
    data: dict[str, Any] = {
        "restored": report.restored,
        "skipped": report.skipped,
        "filtered": report.filtered,
        "bytes": report.bytes,
        "failed": len(report.failed),
        "day": report.point.isoformat() if report.point else None,
    }
    if full:
        data["failures"] = dict(list(report.failed.items())[:MAX_LISTED])
        data["stopped"] = report.stopped
    return data


def plan_json(report: RestoreReport) -> dict[str, Any]:
    """What a dry run would send: sorted by instance, at most ``MAX_PLANNED`` entries."""
    planned = sorted(report.planned)
    return {
        "planned_count": len(planned),
        "planned_bytes": report.planned_bytes,
        "planned": [
            {"instance": origin, "snapshot": snapshot_id, "bytes": size}
            for origin, snapshot_id, size in planned[:MAX_PLANNED]
        ],
    }


def range_job(
    archive: Archive, client: WorkflowClient, wanted: RestoreRange, *, dry_run: bool = False
) -> JobFunction:
    def run(job: Job) -> str:
        def progress(report: RestoreReport) -> None:
            job.progress(**report_json(report, full=False), planned=len(report.planned))

        request = RestoreRequest(wanted=wanted, dry_run=dry_run)
        done = run_restore(request, archive, client, stop=job.stop_event, on_progress=progress)
        report = _report_of(done)
        result = {"kind": done.kind, **report_json(report, full=True)}
        if dry_run:
            result.update(plan_json(report))
        job.set_result(result)
        state = "stopped" if report.stopped else "done"
        if dry_run:
            return (
                f"dry run {state}: {len(report.planned)} would be restored, "
                f"{report.skipped} already current, {report.filtered} filtered out, "
                f"{len(report.failed)} failed"
            )
        return (
            f"restore {state}: {report.restored} restored, {report.skipped} already "
            f"current, {report.filtered} filtered out, {len(report.failed)} failed"
        )

    return run


def instance_job(archive: Archive, client: WorkflowClient, uniqueid: str) -> JobFunction:
    def run(job: Job) -> str:
        job.progress(instance=uniqueid)

        def progress(report: RestoreReport) -> None:
            job.progress(**report_json(report, full=False))

        request = RestoreRequest(uniqueid=uniqueid)
        done = run_restore(request, archive, client, stop=job.stop_event, on_progress=progress)
        report = _report_of(done)
        job.set_result({"kind": "instance", "instance": uniqueid, **report_json(report, full=True)})
        state = "stopped" if report.stopped else "done"
        return (
            f"restore of {uniqueid} {state}: {report.restored} snapshots restored, "
            f"{report.skipped} already in the workflow, {len(report.failed)} failed"
        )

    return run


def tree_job(
    client: WorkflowClient, root: Path | str, settings: Settings | None = None
) -> JobFunction:
    """A restore from a backup tree: a folder on the server, or an ``ftps://`` URL (with
    ``settings`` for the FTPS password and CA)."""

    def run(job: Job) -> str:
        job.progress(source=str(root))

        def progress(report: TreeRestoreReport) -> None:
            job.progress(**_tree_json(report))

        request = RestoreRequest(source=str(root))
        done = run_restore(
            request,
            None,
            client,
            settings=settings,
            stop=job.stop_event,
            on_tree_progress=progress,
        )
        report = done.tree or TreeRestoreReport()
        job.set_result(
            {
                "kind": "source",
                "source": str(root),
                **_tree_json(report),
                "failures": report.failed[:MAX_LISTED],
                "stopped": report.stopped,
            }
        )
        state = "stopped" if report.stopped else "done"
        return (
            f"restore from {root} {state}: {report.restored} restored, {report.present} "
            f"already in the workflow, {len(report.failed)} failed"
        )

    return run


def _report_of(done: RestoreOutcome) -> RestoreReport:
    """The report of an instance's or a range's restore (always there for those)."""
    return done.report if done.report is not None else RestoreReport()


def _tree_json(report: TreeRestoreReport) -> dict[str, Any]:
    return {"restored": report.restored, "present": report.present, "failed": len(report.failed)}

"""The restore variants as job functions, run by the web app's job runner under the one name
``restore`` (one restore at a time, whatever its kind; ``/api/restore/stop`` stops it).

* ``range_job``: a ``$modified`` range with filters; with ``dry_run`` nothing is sent and
  the result lists the plan (instance, snapshot, attachment bytes);
* ``instance_job``: every archived snapshot of one process instance the workflow lacks;
* ``tree_job``: the snapshots of a backup tree on the server (``restore_files.py``).

Each reports its counters as progress while it runs (shown live by the UI) and its
outcome as the job's result, with ``kind`` saying which restore it was.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from imixs_archive.archive.snapshots import Archive
from imixs_archive.services.jobs import MAX_LISTED, Job, JobFunction
from imixs_archive.services.restore import Restorer, RestoreRange, RestoreReport
from imixs_archive.services.restore_files import TreeRestoreReport, restore_tree
from imixs_archive.workflow.client import WorkflowClient

MAX_PLANNED = 1000
"""A dry run's result lists at most this many planned snapshots (the counts are whole)."""


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
        "planned_bytes": sum(size for _o, _s, size in planned),
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

        restorer = Restorer(archive, client, stop=job.stop_event, on_progress=progress)
        report = restorer.restore_range(wanted, dry_run=dry_run)
        kind = "dry-run" if dry_run else "range"
        result = {"kind": kind, **report_json(report, full=True)}
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

        restorer = Restorer(archive, client, stop=job.stop_event, on_progress=progress)
        report = restorer.restore_instance(uniqueid)
        job.set_result({"kind": "instance", "instance": uniqueid, **report_json(report, full=True)})
        state = "stopped" if report.stopped else "done"
        return (
            f"restore of {uniqueid} {state}: {report.restored} snapshots restored, "
            f"{report.skipped} already in the workflow, {len(report.failed)} failed"
        )

    return run


def tree_job(client: WorkflowClient, root: Path) -> JobFunction:
    def run(job: Job) -> str:
        job.progress(source=str(root))

        def progress(report: TreeRestoreReport) -> None:
            job.progress(**_tree_json(report))

        report = restore_tree(client, root, stop=job.stop_event, on_progress=progress)
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


def _tree_json(report: TreeRestoreReport) -> dict[str, Any]:
    return {"restored": report.restored, "present": report.present, "failed": len(report.failed)}

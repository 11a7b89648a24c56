"""Restore to a point in time, one way in for the CLI, the API and the Restore page.

:func:`parse_as_of` reads the request (times in ``ARCHIVE_TIMEZONE`` unless they carry
their zone); :func:`run_as_of` plans it (``as_of.plan_as_of``) and, unless it is a dry
run, sends the plan (``plan_run.PlanRunner``; resumable, ``workers`` requests in flight).
``confirm``: the token of a plan shown before (:meth:`AsOfPlan.token`); the restore runs
only when the plan made now has that token, else :class:`ConflictError` and nothing is
sent (the API and the page always confirm; the command line's operator reads the dry run
and runs the command again). :func:`as_of_job` is the same as the web app's job
``restore`` (progress with the time left; the result: the plan or the counts, and the
instances that did not exist yet).
"""

from __future__ import annotations

import datetime as dt
import threading
from dataclasses import dataclass
from typing import Any

from imixs_archive.archive.snapshots import Archive
from imixs_archive.errors import ConfigError, ConflictError
from imixs_archive.recovery.as_of import AsOf, AsOfPlan, plan_as_of
from imixs_archive.recovery.item_diff import show_values
from imixs_archive.recovery.plan_run import SAVE_EVERY, PlanProgress, PlanReport, PlanRunner, Send
from imixs_archive.recovery.restore import parse_filter
from imixs_archive.services.jobs import MAX_LISTED, Job, JobFunction
from imixs_archive.timezones import zone
from imixs_archive.workflow.client import WorkflowClient

MAX_SHOWN = 1000
"""A plan's JSON lists at most this many instances of each kind (the counts are whole)."""


def parse_point(text: str, tz_name: str, what: str) -> dt.datetime:
    """An ISO date or date-time; without an offset it is read in ``tz_name``."""
    try:
        when = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise ConfigError(f"{what} {text!r}: not a date or date-time") from None
    return when if when.tzinfo else when.replace(tzinfo=zone(tz_name))


def parse_as_of(
    point: str,
    tz_name: str,
    *,
    changed_until: str | None = None,
    groups: tuple[str, ...] = (),
    filters: tuple[str, ...] = (),
    strict: bool = False,
) -> AsOf:
    """The request as people give it: times as text, filters as ``ITEM=REGEX``."""
    until = changed_until.strip() if changed_until else ""
    return AsOf(
        parse_point(point, tz_name, "as-of"),
        parse_point(until, tz_name, "changed-until") if until else None,
        tuple(g.strip() for g in groups if g.strip()),
        tuple(parse_filter(f) for f in filters),
        strict=strict,
    )


@dataclass
class AsOfOutcome:
    """The plan, and what its run did (None for a dry run)."""

    plan: AsOfPlan
    report: PlanReport | None = None


def run_as_of(
    archive: Archive,
    client: WorkflowClient | None,
    request: AsOf,
    *,
    dry_run: bool,
    confirm: str | None = None,
    workers: int = 4,
    stop: threading.Event | None = None,
    on_progress: PlanProgress | None = None,
    save_every: float = SAVE_EVERY,
) -> AsOfOutcome:
    """Plan the restore; unless ``dry_run``, send it (``client`` needed then)."""
    plan = plan_as_of(archive, request, workers=workers)
    if dry_run:
        return AsOfOutcome(plan)
    if confirm is not None and confirm != plan.token():
        raise ConflictError(
            "the archive changed since the plan was shown (another plan now): nothing was "
            "sent; make the dry run again"
        )
    if client is None:
        raise ConfigError("a restore needs the workflow")
    runner = PlanRunner(
        archive,
        client,
        key=request.key(),
        workers=workers,
        stop=stop,
        on_progress=on_progress,
        save_every=save_every,
    )
    sends = [Send(entry.origin, entry.snapshot) for entry in plan.back]
    return AsOfOutcome(plan, runner.run(sends))


def as_of_job(
    archive: Archive,
    client: WorkflowClient,
    request: AsOf,
    *,
    dry_run: bool,
    tz: dt.tzinfo,
    confirm: str | None = None,
    save_every: float = SAVE_EVERY,
) -> JobFunction:
    def run(job: Job) -> str:
        def progress(report: PlanReport) -> None:
            job.progress(**report_json(report))

        done = run_as_of(
            archive,
            client,
            request,
            dry_run=dry_run,
            confirm=confirm,
            stop=job.stop_event,
            on_progress=progress,
            save_every=save_every,
        )
        plan = done.plan
        result: dict[str, Any] = {"kind": "as-of-plan" if dry_run else "as-of"}
        result.update(plan_json(plan, tz))
        if done.report is None:
            job.set_result(result)
            return (
                f"dry run: {len(plan.back)} would go back, {len(plan.not_yet)} did not exist "
                f"yet, {plan.filtered} filtered out"
            )
        report = done.report
        result.update(report_json(report, full=True))
        job.set_result(result)
        state = "stopped" if report.stopped else "done"
        return (
            f"restore as of {_at(request.point, tz)} {state}: {report.restored} restored, "
            f"{report.current} already current, {len(report.failed)} failed, "
            f"{len(plan.not_yet)} did not exist yet (not deleted)"
        )

    return run


def report_json(report: PlanReport, *, full: bool = False) -> dict[str, Any]:
    """Counters of a plan's run, with its pace and the time left."""
    left = report.seconds_left()
    data: dict[str, Any] = {
        "total": report.total,
        "done": report.done,
        "restored": report.restored,
        "current": report.current,
        "resumed": report.resumed,
        "failed": len(report.failed),
        "bytes": report.bytes,
        "per_second": round(report.rate(), 1),
        "seconds_left": round(left) if left is not None else None,
    }
    if full:
        data["failures"] = dict(sorted(report.failed.items())[:MAX_LISTED])
        data["stopped"] = report.stopped
    return data


def plan_json(plan: AsOfPlan, tz: dt.tzinfo) -> dict[str, Any]:
    """The plan as shown before anything is sent: per instance the snapshot coming back
    and the changes; the instances that did not exist yet; the token to confirm it."""
    request = plan.request
    return {
        "request": {
            "as_of": _at(request.point, tz),
            "changed_until": _at(request.changed_until, tz) if request.changed_until else None,
            "groups": list(request.groups),
            "filters": [f"{name}={pattern.pattern}" for name, pattern in request.filters],
            "strict": request.strict,
        },
        "token": plan.token(),
        "back_count": len(plan.back),
        "not_yet_count": len(plan.not_yet),
        "filtered": plan.filtered,
        "planned_bytes": plan.planned_bytes,
        "back": [
            {
                "instance": entry.origin,
                "snapshot": entry.snapshot,
                "modified": _at(entry.modified, tz),
                "newest": entry.newest,
                "bytes": entry.bytes,
                "changed_later": entry.changed_later,
                "refused": entry.refused or None,
                "changes": [
                    {
                        "item": change.name,
                        "now": show_values(change.current, tz),
                        "restored": show_values(change.restored, tz),
                    }
                    for change in entry.diff.items
                ],
                "files": [{"name": f.name, "change": f.change} for f in entry.diff.files],
            }
            for entry in plan.back[:MAX_SHOWN]
        ],
        "not_yet": [
            {
                "instance": new.origin,
                "created": _at(new.created, tz),
                "group": new.group,
                "newest": new.newest,
            }
            for new in plan.not_yet[:MAX_SHOWN]
        ],
    }


def _at(when: dt.datetime, tz: dt.tzinfo) -> str:
    return when.astimezone(tz).isoformat(timespec="seconds")

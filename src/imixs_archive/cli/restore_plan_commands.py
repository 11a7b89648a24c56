"""``restore --as-of`` (back to a point in time) and ``restore --all`` (the newest snapshot
of every instance: the whole-workflow restore), both planned first and run by
``recovery.plan_run`` (resumable after a kill, ``--workers`` requests in flight, progress
with the time left on standard error).

Exit codes: 0 done (instances that did not exist yet are listed, not failures); 1 some
instance failed; 5 archived bytes did not check out; 2 a point in the future or
``--changed-until`` not after ``--as-of``; 4 a point before the archive's first snapshot,
or a ``--group`` no snapshot carries. On exit 2 and 4 nothing was sent (nor asked).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from imixs_archive.cli.context import Context
from imixs_archive.cli.output import human_bytes, print_problems
from imixs_archive.errors import ConfigError
from imixs_archive.humanize import human_duration
from imixs_archive.recovery.as_of import AsOfPlan, NotYet
from imixs_archive.recovery.as_of_jobs import parse_as_of, run_as_of
from imixs_archive.recovery.plan_run import (
    PlanReport,
    PlanRunner,
    check_plan,
    newest_of_every_instance,
)
from imixs_archive.timezones import zone
from imixs_archive.workflow.client import WorkflowClient

PROGRESS_EVERY = 1.0
"""Seconds between two progress lines on standard error."""


def add_plan_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--changed-until",
        metavar="DATETIME",
        help="--as-of: only instances changed up to this time (default: up to now)",
    )
    p.add_argument(
        "--group",
        action="append",
        default=[],
        metavar="G",
        help="--as-of: only instances of this $workflowgroup (repeatable)",
    )
    p.add_argument(
        "--not-yet-file",
        type=Path,
        metavar="FILE",
        help="--as-of: where to list the instances that did not exist yet at the point "
        "(default: not-yet-<point>.tsv in the current folder)",
    )


def refuse_plan_options(args: argparse.Namespace) -> None:
    """--changed-until, --group and --not-yet-file belong to --as-of."""
    if args.as_of is not None:
        return
    given = [
        name
        for name, value in (
            ("--changed-until", args.changed_until),
            ("--group", args.group),
            ("--not-yet-file", args.not_yet_file),
        )
        if value
    ]
    if given:
        raise ConfigError(f"{', '.join(given)} only apply to --as-of")


def cmd_restore_as_of(args: argparse.Namespace, ctx: Context) -> int:
    request = parse_as_of(
        args.as_of,
        ctx.settings.timezone,
        changed_until=args.changed_until,
        groups=tuple(args.group),
        filters=tuple(args.filter),
        strict=args.strict_filters,
    )
    tz = zone(ctx.settings.timezone)
    if args.dry_run:
        plan = run_as_of(ctx.archive, None, request, dry_run=True, workers=args.workers or 4).plan
        print_plan(plan, tz)
        listed = write_not_yet(plan, tz, args.not_yet_file)
        refused = [entry for entry in plan.back if entry.refused]
        print_problems(failures=(f"{e.origin}: {e.snapshot}: {e.refused}" for e in refused))
        print(
            f"{len(plan.back) - len(refused)} would go back to {_at(request.point, tz)}, "
            + (f"{len(refused)} would fail, " if refused else "")
            + f"{len(plan.not_yet)} did not exist yet (not deleted), "
            f"{plan.filtered} filtered out; {human_bytes(plan.planned_bytes)} of attachments"
            + (f"; not yet existing listed in {listed}" if listed else "")
        )
        return 1 if refused else 0
    with _progress(args, ctx) as (client, options):
        done = run_as_of(ctx.archive, client, request, dry_run=False, **options)
    listed = write_not_yet(done.plan, tz, args.not_yet_file)
    report = done.report or PlanReport(total=0)
    print(
        f"{_summary(report)}; {len(done.plan.not_yet)} did not exist yet (not deleted)"
        + (f", listed in {listed}" if listed else "")
    )
    return _exit_code(report)


def cmd_restore_all(args: argparse.Namespace, ctx: Context) -> int:
    sends = newest_of_every_instance(ctx.archive)
    if args.dry_run:
        with WorkflowClient.from_settings(ctx.settings) as client:
            check = check_plan(ctx.archive, client, sends, workers=args.workers or 4)
        print_problems(failures=(f"{o}: {why}" for o, why in sorted(check.failed.items())))
        print(
            f"{check.planned} instances would be restored (the newest snapshot of each), "
            f"{check.current} already current, {len(check.failed)} would fail; "
            f"{human_bytes(check.bytes)} of attachments"
        )
        return 5 if check.corrupt else 1 if check.failed else 0
    with _progress(args, ctx) as (client, options):
        report = PlanRunner(ctx.archive, client, key="all", **options).run(sends)
    print(_summary(report))
    return _exit_code(report)


def print_plan(plan: AsOfPlan, tz: dt.tzinfo) -> None:
    for entry in plan.back:
        if entry.refused:
            continue  # would fail: said with the failures
        later = " (also changed after --changed-until: undone too)" if entry.changed_later else ""
        print(
            f"back {entry.origin}: {entry.snapshot} of {_at(entry.modified, tz)} "
            f"({human_bytes(entry.bytes)}){later}"
        )
        for line in entry.diff.lines(tz) or ["(no item differs from the newest snapshot)"]:
            print(f"    {line}")
    for new in plan.not_yet:
        print(f"not yet {new.origin}: created {_at(new.created, tz)} ({new.group or 'no group'})")


def write_not_yet(plan: AsOfPlan, tz: dt.tzinfo, path: Path | None) -> Path | None:
    """The instances that did not exist yet, one per line (tab-separated, a ``#`` header),
    written whole or not at all; None when there are none."""
    if not plan.not_yet:
        return None
    point = plan.request.point.astimezone(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    target = path or Path(f"not-yet-{point}.tsv")
    lines = [
        f"# process instances that did not exist yet at {_at(plan.request.point, tz)}: "
        "restore --as-of does not delete them (the workflow API cannot)",
        "# uniqueid\tcreated\tworkflowgroup\tnewest snapshot",
        *(_not_yet_line(new, tz) for new in plan.not_yet),
    ]
    partial = target.with_name(f".{target.name}.{os.getpid()}.part")
    try:
        partial.write_text("\n".join(lines) + "\n", encoding="utf-8")
        partial.replace(target)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise ConfigError(f"--not-yet-file {target}: {exc.strerror or exc}") from None
    return target


def _not_yet_line(new: NotYet, tz: dt.tzinfo) -> str:
    return f"{new.origin}\t{_at(new.created, tz)}\t{new.group}\t{new.newest}"


@contextmanager
def _progress(
    args: argparse.Namespace, ctx: Context
) -> Iterator[tuple[WorkflowClient, dict[str, Any]]]:
    """The workflow client and the runner's options: ``--workers``, the save interval, a
    stop on Ctrl-C and a progress line on standard error every ``PROGRESS_EVERY``."""
    stop = threading.Event()
    shown = [time.monotonic()]

    def progress(report: PlanReport) -> None:
        now = time.monotonic()
        if now - shown[0] >= PROGRESS_EVERY:
            shown[0] = now
            print(progress_line(report, now), file=sys.stderr, flush=True)

    options: dict[str, Any] = {
        "workers": args.workers or 4,
        "stop": stop,
        "on_progress": progress,
        "save_every": ctx.settings.restore_save_every,
    }
    with WorkflowClient.from_settings(ctx.settings) as client:
        try:
            yield client, options
        except KeyboardInterrupt:
            stop.set()
            raise


def progress_line(report: PlanReport, now: float | None = None) -> str:
    """``restore: 1,234 of 10,000 (12%), 81.2 instances/s, about 1 min 48 s left``."""
    share = 100 * report.done // report.total if report.total else 100
    left = report.seconds_left(now)
    eta = f", about {human_duration(left)} left" if left is not None else ""
    return (
        f"restore: {report.done:,} of {report.total:,} ({share}%), "
        f"{report.rate(now):.1f} instances/s{eta}"
    )


def _summary(report: PlanReport) -> str:
    print_problems(failures=(f"{o}: {why}" for o, why in sorted(report.failed.items())))
    resumed = f", {report.resumed} done by the run resumed" if report.resumed else ""
    return (
        f"{report.restored} restored, {report.current} already current{resumed}, "
        f"{len(report.failed)} failed; {human_bytes(report.bytes)} of attachments"
        + (" (stopped)" if report.stopped else "")
    )


def _exit_code(report: PlanReport) -> int:
    return 5 if report.corrupt else 1 if report.failed else 0


def _at(when: dt.datetime, tz: dt.tzinfo) -> str:
    return when.astimezone(tz).isoformat(timespec="seconds")

"""The FTPS backup target on the command line: ``backup ftps://...``,
``restore --source ftps://...`` (called from ``recovery_commands``) and ``backup-events``,
the consumer of the sync's ``snapshot.backup`` events that replaces the Java backup
service."""

from __future__ import annotations

import argparse
import threading

from imixs_archive.cli.context import Context, store_options
from imixs_archive.cli.output import human_bytes, print_problems
from imixs_archive.services.backup_ftps import (
    BackupEvents,
    EventRound,
    backup_to_ftps,
)
from imixs_archive.services.ftps import FtpsLocation, FtpsTarget
from imixs_archive.services.restore_files import TreeRestoreReport
from imixs_archive.timezones import zone
from imixs_archive.workflow.client import WorkflowClient


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "backup-events",
        parents=[store_options()],
        help="write the snapshots of snapshot.backup events to the FTPS target (BACKUP_FTP_*)",
    )
    p.add_argument("--once", action="store_true", help="one round, then exit")
    p.set_defaults(handler=cmd_backup_events)


def backup_ftps(args: argparse.Namespace, ctx: Context) -> int:
    location = FtpsLocation.from_settings(ctx.settings, args.directory)
    overwrite = args.overwrite or ctx.settings.backup_ftp_overwrite
    with FtpsTarget(location) as target:
        summary = backup_to_ftps(
            ctx.archive,
            target,
            first=args.from_day,
            last=args.to_day,
            tz=zone(ctx.settings.timezone),
            overwrite=overwrite,
        )
    print_problems(failures=summary.failures)
    print(
        f"{summary.written} written, {summary.current} already current, {summary.failed} failed; "
        f"{human_bytes(summary.bytes_written)} written to {location}"
    )
    return 1 if summary.failed else 0


def print_tree_restore(tree: TreeRestoreReport, dry_run: bool) -> int:
    """The report of a restore from a backup tree (a folder or FTPS)."""
    for snapshot_id in tree.planned:
        print(f"would restore {snapshot_id}")
    print_problems(failures=tree.failed)
    sent = f"{len(tree.planned)} would be restored" if dry_run else f"{tree.restored} restored"
    print(f"{sent}, {tree.present} already in the workflow, {len(tree.failed)} failed")
    return 1 if tree.failed else 0


def _report(done: EventRound) -> None:
    print_problems(failures=done.failed)
    if done.written or done.current or done.failed:
        print(f"{done.written} written, {done.current} already current, {len(done.failed)} failed")


def cmd_backup_events(args: argparse.Namespace, ctx: Context) -> int:
    settings = ctx.settings
    location = FtpsLocation.from_settings(settings)
    with WorkflowClient.from_settings(settings) as client, FtpsTarget(location) as target:
        events = BackupEvents(
            ctx.archive,
            client,
            target,
            mirror=settings.backup_mirror_id.strip(),
            overwrite=settings.backup_ftp_overwrite,
            batch=settings.workflow_sync_batch,
        )
        if args.once:
            done = events.run_round()
            _report(done)
            return 1 if done.failed else 0
        stop = threading.Event()
        try:
            events.run(settings.workflow_sync_interval / 1000, stop, _report)
        except KeyboardInterrupt:
            stop.set()
            raise
    return 0

"""The FTPS backup target on the command line: ``backup ftps://...``,
``restore --source ftps://...`` (called from ``recovery_commands``) and ``backup-events``,
the consumer of the sync's ``snapshot.backup`` events that replaces the Java backup
service."""

from __future__ import annotations

import argparse
import threading

from imixs_archive.cli.context import Context, store_options
from imixs_archive.cli.output import count_progress, human_bytes, print_problems
from imixs_archive.config import Settings
from imixs_archive.recovery.backup import DayRange
from imixs_archive.recovery.backup_events import EventRound, consume_backup_events
from imixs_archive.recovery.backup_ftps import backup_to_location
from imixs_archive.recovery.ftps import FtpsLocation
from imixs_archive.recovery.ftps_tls import tls_warnings
from imixs_archive.recovery.full_backup import queue_events_of_workflow
from imixs_archive.recovery.restore_files import TreeRestoreReport


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "backup-events",
        parents=[store_options()],
        help="write the snapshots of snapshot.backup events to the FTPS target (BACKUP_FTP_*)",
    )
    p.add_argument("--once", action="store_true", help="one round, then exit")
    p.add_argument(
        "--full",
        action="store_true",
        help="first queue an event (NO_OVERWRITE) for every workitem of the workflow, as "
        "the Java full backup does: the full backup without an archive (BACKUP_ONLY)",
    )
    p.set_defaults(handler=cmd_backup_events)


def warn_weak_tls(settings: Settings) -> None:
    """The weaker FTPS choices of the settings, one warning each (before it connects)."""
    print_problems(warnings=tls_warnings(settings))


def backup_ftps(args: argparse.Namespace, ctx: Context, days: DayRange) -> int:
    warn_weak_tls(ctx.settings)
    location = FtpsLocation.from_settings(ctx.settings, args.directory)
    overwrite = args.overwrite or ctx.settings.backup_ftp_overwrite
    summary = backup_to_location(ctx.archive, location, days=days, overwrite=overwrite)
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
    if done.read or done.released or not done.ok:
        print(done.summary())


def cmd_backup_events(args: argparse.Namespace, ctx: Context) -> int:
    warn_weak_tls(ctx.settings)
    if args.full:
        with count_progress("full backup: workflow documents walked") as tick:
            walked = queue_events_of_workflow(ctx.settings, progress=tick)
        print(walked.summary())
    archive = None if ctx.settings.backup_only else ctx.archive  # no store opened then
    if args.once:
        done = consume_backup_events(ctx.settings, archive, once=True)
        assert done is not None
        _report(done)
        return 0 if done.ok else 1
    stop = threading.Event()
    try:
        consume_backup_events(ctx.settings, archive, stop=stop, on_round=_report)
    except KeyboardInterrupt:
        stop.set()
        raise
    return 0

"""Commands that bring data back or out: restore into the workflow, backup to files,
export to another store."""

from __future__ import annotations

import argparse
import datetime as dt
import threading
from pathlib import Path

from imixs_archive.cli.context import (
    RESTART_HELP,
    Context,
    add_jobs_option,
    check_range,
    day_range_options,
    in_zone,
    instant_arg,
    instant_end_arg,
    part_of,
    part_words,
    require_snapshots_between,
    require_snapshots_in,
    resumable_options,
    spread,
    store_command,
    went_on,
)
from imixs_archive.cli.ftps_commands import backup_ftps, print_tree_restore, warn_weak_tls
from imixs_archive.cli.output import (
    count_progress,
    human_bytes,
    print_json,
    print_problems,
    snapshot_total,
)
from imixs_archive.cli.restore_plan_commands import (
    add_plan_options,
    cmd_restore_all,
    cmd_restore_as_of,
    refuse_plan_options,
)
from imixs_archive.config import same_store, settings_for_store
from imixs_archive.errors import ConfigError
from imixs_archive.recovery.backup import DayRange, backup, check_parts
from imixs_archive.recovery.backup_book import BackupSummary
from imixs_archive.recovery.durable_files import existing_ancestor
from imixs_archive.recovery.export import ExportSummary, export
from imixs_archive.recovery.ftps import is_ftps
from imixs_archive.recovery.restore import RestoreRange, RestoreReport, parse_filter
from imixs_archive.recovery.restore_jobs import RestoreRequest, run_restore
from imixs_archive.runtime import open_archive
from imixs_archive.timezones import zone
from imixs_archive.workflow.client import WorkflowClient


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = store_command(sub, "backup", help="write snapshots to files (the Java backup layout)")
    p.add_argument("directory", metavar="DIR", help="a folder, or ftps://[user@]host[:port]/path")
    day_range_options(p, "ARCHIVE_TIMEZONE")
    p.add_argument("--all-snapshots", action="store_true", help="every snapshot, not the newest")
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="ftps: write files again that hold the same or a newer snapshot",
    )
    p.add_argument(
        "--create",
        action="store_true",
        help="a folder: make DIR (and the folders to it) if it does not exist; without, a "
        "missing DIR is refused (a drive not mounted would be written to its mount point)",
    )
    resumable_options(
        p,
        "a folder, everything: write part K of N of the instances (the token ring on "
        "Cassandra): N processes share one backup",
        restart_help=f"a folder, everything: {RESTART_HELP}",
    )
    add_jobs_option(p)
    p.add_argument("--json", action="store_true", help="the summary as JSON")
    p.set_defaults(handler=cmd_backup, reads_only=True)

    p = store_command(sub, "restore", help="send archived snapshots to the workflow")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--from",
        dest="first",
        type=instant_arg,
        help="range start (in ARCHIVE_TIMEZONE if no offset)",
    )
    what.add_argument("--snapshot", help="one snapshot id")
    what.add_argument("--uniqueid", help="every snapshot of one process instance")
    what.add_argument(
        "--source", help="a backup tree instead of the archive: a folder or ftps://host/path"
    )
    what.add_argument(
        "--as-of",
        metavar="DATETIME",
        help="every instance changed after this time back to how it was then (in "
        "ARCHIVE_TIMEZONE if no offset); exit 2: a time in the future, 4: before the "
        "archive's first snapshot or an unknown --group; nothing is sent then",
    )
    what.add_argument(
        "--all",
        dest="whole",
        action="store_true",
        help="the newest snapshot of every instance (a whole-workflow restore; resumes "
        "after a kill)",
    )
    p.add_argument("--to", dest="last", type=instant_end_arg, help="range end (default: now)")
    p.add_argument(
        "--filter",
        action="append",
        default=[],
        metavar="ITEM=REGEX",
        help="only instances whose item values all contain a match; an instance without the "
        "item passes, as in the Java service (repeatable)",
    )
    p.add_argument(
        "--strict-filters",
        action="store_true",
        help="filters must match whole values, and an instance without the item is left out",
    )
    p.add_argument("--dry-run", action="store_true", help="print what would be sent, send nothing")
    p.add_argument(
        "--workers",
        type=int,
        help="instances restored at once: requests in flight (--from, --as-of, --all; default 4)",
    )
    add_plan_options(p)
    p.set_defaults(handler=cmd_restore, reads_only=True)

    p = store_command(sub, "export", help="copy this archive into another store")
    p.add_argument(
        "--to",
        dest="target",
        required=True,
        help="a folder (embedded store) or cassandra://host[:port]/keyspace",
    )
    p.add_argument("--json", action="store_true", help="the summary as JSON")
    p.set_defaults(handler=cmd_export, reads_only=True)


def _refuse_range_options(args: argparse.Namespace) -> None:
    """--to belongs to a range (--from); --filter and --strict-filters to a range or
    --as-of; --workers to those and --all."""
    if args.workers is not None and args.workers < 1:
        raise ConfigError("--workers must be at least 1")
    refuse_plan_options(args)
    ranged = args.first is not None
    given = [
        name
        for name, value, allowed in (
            ("--to", args.last, ranged),
            ("--filter", args.filter, ranged or args.as_of is not None),
            ("--strict-filters", args.strict_filters, ranged or args.as_of is not None),
            ("--workers", args.workers, ranged or args.as_of is not None or args.whole),
        )
        if value and not allowed
    ]
    if given:
        also = "" if given == ["--to"] else " or --as-of"
        raise ConfigError(f"{', '.join(given)} only apply to a range restore (--from){also}")


def cmd_restore(args: argparse.Namespace, ctx: Context) -> int:
    _refuse_range_options(args)
    if args.as_of is not None:
        return cmd_restore_as_of(args, ctx)
    if args.whole:
        return cmd_restore_all(args, ctx)
    request = RestoreRequest(
        snapshot=args.snapshot or None,
        uniqueid=args.uniqueid or None,
        wanted=None if args.source or args.snapshot or args.uniqueid else _range(args, ctx),
        source=args.source,
        dry_run=args.dry_run,
        workers=args.workers or 4,
    )
    stop = threading.Event()
    if args.source is not None and is_ftps(args.source):
        warn_weak_tls(ctx.settings)
    archive = None if args.source is not None else ctx.archive
    with WorkflowClient.from_settings(ctx.settings) as client:
        try:
            done = run_restore(request, archive, client, settings=ctx.settings, stop=stop)
        except KeyboardInterrupt:
            stop.set()
            raise
    if done.tree is not None:
        return print_tree_restore(done.tree, args.dry_run)
    if done.report is None:
        state = ("would be restored" if args.dry_run else "restored") if done.sent else None
        print(f"{args.snapshot}: {state or 'already current in the workflow'}")
        return 0
    return _print_restore(done.report, args.dry_run)


def _range(args: argparse.Namespace, ctx: Context) -> RestoreRange:
    tz = ctx.settings.timezone
    last = in_zone(args.last, tz) if args.last else dt.datetime.now(dt.UTC)
    filters = tuple(parse_filter(f) for f in args.filter)
    wanted = RestoreRange(in_zone(args.first, tz), last, filters, strict=args.strict_filters)
    end = wanted.last + dt.timedelta(microseconds=1)  # the range holds its last instant
    span = f"from {wanted.first.isoformat()} to {wanted.last.isoformat()}"
    require_snapshots_between(ctx.archive, wanted.first, end, span)
    return wanted


def _print_restore(report: RestoreReport, dry_run: bool) -> int:
    for instance, snapshot_id, size in sorted(report.planned):
        print(f"would restore {instance}: {snapshot_id} ({human_bytes(size)})")
    print_problems(failures=(f"{o}: {why}" for o, why in sorted(report.failed.items())))
    sent = f"{len(report.planned)} would be restored" if dry_run else f"{report.restored} restored"
    size = report.planned_bytes if dry_run else report.bytes
    print(
        f"{sent}, {report.skipped} already current, {report.filtered} filtered out, "
        f"{len(report.failed)} failed; {human_bytes(size)} of attachments"
        + (" (stopped)" if report.stopped else "")
    )
    return _exit_code(report.failed, report.corrupt)


def _exit_code(failed: object, corrupt: int) -> int:
    """5 when stored bytes did not check out (an integrity error), 1 for other failures."""
    return 5 if corrupt else 1 if failed else 0


BACKUP_SPREAD_FROM = 16
"""Fewer snapshots than this are written by the process itself unless ``--jobs`` is given."""


def cmd_backup(args: argparse.Namespace, ctx: Context) -> int:
    check_range(args.from_day, args.to_day)
    days = DayRange(args.from_day, args.to_day, zone(ctx.settings.timezone))
    part, parts = part_of(args)
    if is_ftps(args.directory):
        if args.all_snapshots:
            raise ConfigError("--all-snapshots is for a folder, not an FTPS target")
        if parts > 1 or args.restart:
            raise ConfigError("--part and --restart are for a folder, not an FTPS target")
        return backup_ftps(args, ctx, days)
    check_parts(days, parts)
    archive = ctx.archive  # first: no archive is 4, whatever the folder
    _require_folder(Path(args.directory), create=args.create)
    require_snapshots_in(archive, days.first, days.last, days.tz)
    whole = parts == 1 and days.whole
    try:
        total = (
            (lambda: snapshot_total(archive, instances=not args.all_snapshots)) if whole else None
        )
        with count_progress("backup: snapshots", total) as tick:
            summary = backup(
                archive,
                Path(args.directory),
                days=days,
                all_snapshots=args.all_snapshots,
                spread=spread(args, ctx, least=BACKUP_SPREAD_FROM),
                on_snapshot=lambda _snapshot_id: tick(1),
                part=part,
                parts=parts,
                restart=args.restart,
                on_resumed=tick,
            )
    except KeyboardInterrupt:
        if days.whole:
            again = "backup" + (f" --part {part}/{parts}" if parts > 1 else "")
            print(f"stopped: the same `{again}` goes on where it stopped (--restart begins again)")
        raise
    return _copied(
        summary,
        args.json,
        {"part": part, "parts": parts, "to": args.directory},
        f"{part_words(part, parts)}{summary.written} written, {summary.current} already "
        f"current, {summary.failed} failed; {human_bytes(summary.bytes_written)} written to "
        f"{args.directory}{went_on(summary.resumed)}",
    )


def _copied(
    summary: BackupSummary | ExportSummary, as_json: bool, to: dict[str, object], line: str
) -> int:
    """What a backup or an export did: its summary as JSON with ``to`` (where it went),
    else its failures and ``line``; its exit code."""
    if as_json:
        print_json({**summary.to_json(), **to})
    else:
        print_problems(failures=summary.failures)
        print(line)
    return _exit_code(summary.failed, summary.corrupt)


def _require_folder(root: Path, *, create: bool) -> None:
    """A backup folder that is not there is refused unless ``create``: it may be the mount
    point of a drive not mounted, and the backup would fill the disk under it."""
    if create or root.is_dir():
        return
    top = existing_ancestor(root)
    if root.exists() or not top.is_dir():
        raise ConfigError(f"{root if root.exists() else top}: Not a directory")
    raise ConfigError(
        f"backup folder {root} does not exist (a drive not mounted?): nothing written; "
        "give --create to make it"
    )


def cmd_export(args: argparse.Namespace, ctx: Context) -> int:
    target_settings = settings_for_store(ctx.settings, args.target)
    if same_store(ctx.settings, target_settings):
        raise ConfigError(f"export --to {args.target}: that is the store being exported")
    source = ctx.archive  # first: no target is created for a source that is not there
    with (
        open_archive(target_settings) as target,
        count_progress("export: snapshots", lambda: snapshot_total(source)) as tick,
    ):
        summary = export(source, target, on_snapshot=lambda _snapshot_id: tick(1))
    return _copied(
        summary,
        args.json,
        {"to": args.target},
        f"{summary.copied} copied, {summary.present} already there, {summary.failed} failed; "
        f"{human_bytes(summary.bytes_copied)} of attachments; {summary.holds} legal holds "
        f"placed, {summary.sync_records} sync records copied",
    )

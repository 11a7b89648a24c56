"""Commands that bring data back or out: backup to files, export to another store."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

from imixs_archive.archive.snapshots import Archive
from imixs_archive.cli.context import Context, store_options
from imixs_archive.cli.output import human_bytes
from imixs_archive.config import settings_for_store
from imixs_archive.services.backup import backup
from imixs_archive.services.export import export
from imixs_archive.storage.factory import open_backend


def _day(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text[:10])
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from None


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    common = store_options()
    p = sub.add_parser(
        "backup", parents=[common], help="write snapshots to files (the Java backup layout)"
    )
    p.add_argument("directory", type=Path, metavar="DIR")
    p.add_argument("--from", dest="from_day", type=_day, help="first $modified day (UTC)")
    p.add_argument("--to", dest="to_day", type=_day, help="last $modified day (UTC)")
    p.add_argument("--all-snapshots", action="store_true", help="every snapshot, not the newest")
    p.set_defaults(handler=cmd_backup)

    p = sub.add_parser("export", parents=[common], help="copy this archive into another store")
    p.add_argument(
        "--to",
        dest="target",
        required=True,
        help="a folder (embedded store) or cassandra://host[:port]/keyspace",
    )
    p.set_defaults(handler=cmd_export)


def cmd_backup(args: argparse.Namespace, ctx: Context) -> int:
    summary = backup(
        ctx.archive,
        args.directory,
        first=args.from_day,
        last=args.to_day,
        all_snapshots=args.all_snapshots,
    )
    for failure in summary.failures:
        print(f"failed: {failure}", file=sys.stderr)
    print(
        f"{summary.written} written, {summary.current} already current, {summary.failed} failed; "
        f"{human_bytes(summary.bytes_written)} written to {args.directory}"
    )
    return 1 if summary.failed else 0


def cmd_export(args: argparse.Namespace, ctx: Context) -> int:
    target_settings = settings_for_store(ctx.settings, args.target)
    with open_backend(target_settings) as backend, Archive(backend) as target:
        summary = export(ctx.archive, target)
    for failure in summary.failures:
        print(f"failed: {failure}", file=sys.stderr)
    print(
        f"{summary.copied} copied, {summary.present} already there, {summary.failed} failed; "
        f"{human_bytes(summary.bytes_copied)} of attachments"
    )
    return 1 if summary.failed else 0

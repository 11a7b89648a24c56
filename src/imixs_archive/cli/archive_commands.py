"""Commands over the archive itself: import, get, file, list, delete, verify, gc, stats."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from imixs_archive.archive.holds import no_snapshots_of
from imixs_archive.archive.rebuild import NOT_REBUILT
from imixs_archive.archive.snapshots import Archive
from imixs_archive.cli.context import (
    Context,
    add_jobs_option,
    check_range,
    count_arg,
    day_range_options,
    output,
    part_of,
    require_snapshots_in,
    resumable_options,
    spread,
    store_command,
)
from imixs_archive.cli.output import (
    count_progress,
    human_bytes,
    import_progress,
    print_json,
    print_problems,
    print_table,
)
from imixs_archive.cli.verify_commands import cmd_verify
from imixs_archive.document.conventions import iter_files, modified_time
from imixs_archive.document.json_codec import to_json
from imixs_archive.document.model import BinaryStream
from imixs_archive.document.xml_writer import iter_xml
from imixs_archive.errors import ConfigError, LegalHoldError, NotFoundError
from imixs_archive.runtime import open_archive
from imixs_archive.services.importer import import_in_workers, import_sources
from imixs_archive.services.sources import find_sources
from imixs_archive.timezones import day_span, zone, zone_label


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = store_command(sub, "import", help="archive snapshot files or folders")
    p.add_argument("paths", nargs="+", metavar="PATH", help="XML/JSON file, folder, or - (stdin)")
    add_jobs_option(p)
    p.add_argument("--json", action="store_true", help="the summary as JSON")
    p.set_defaults(handler=cmd_import)

    p = store_command(sub, "get", help="print one snapshot")
    p.add_argument("snapshot_id")
    p.add_argument("--no-files", action="store_true", help="leave file contents out")
    p.add_argument("--format", choices=["xml", "json"], default="xml")
    p.add_argument("-o", "--output", type=Path, help="write to this file instead of stdout")
    p.set_defaults(handler=cmd_get, reads_only=True)

    p = store_command(sub, "file", help="the bytes of one attachment")
    p.add_argument("ref", metavar="MD5|SNAPSHOT_ID")
    p.add_argument("name", nargs="?", help="file name (with a snapshot id)")
    p.add_argument("-o", "--output", type=Path, help="write to this file instead of stdout")
    p.set_defaults(handler=cmd_file, reads_only=True)

    p = store_command(sub, "list", help="list snapshots")
    p.add_argument("--uniqueid", help="snapshots of one process instance, newest first")
    day_range_options(p)
    p.add_argument(
        "--tz", type=_tz_arg, help="IANA time zone of days and times (default: ARCHIVE_TIMEZONE)"
    )
    p.add_argument("--limit", type=count_arg, default=100, help="at most this many (default 100)")
    p.add_argument("--after", help="continue after this snapshot id (paging)")
    p.add_argument("--json", action="store_true", help="JSON lines instead of a table")
    p.set_defaults(handler=cmd_list, reads_only=True)

    p = store_command(sub, "delete", help="delete snapshots and unused files")
    p.add_argument("snapshot_ids", nargs="+", metavar="SNAPSHOT_ID")
    p.add_argument("--json", action="store_true", help="the summary as JSON")
    p.set_defaults(handler=cmd_delete, reads_only=True)  # nothing to delete from no archive

    p = store_command(
        sub,
        "verify",
        help="check every piece, file and reference (goes on where a stopped verify ended)",
    )
    how = p.add_mutually_exclusive_group()
    how.add_argument(
        "--slice",
        action="store_true",
        help="check only the slice of the scrub's cycle due now (ARCHIVE_SCRUB_PERIOD)",
    )
    resumable_options(
        p,
        "check part K of N (the token ring on Cassandra): N processes share one verify",
        part_into=how,
    )
    p.add_argument(
        "--full",
        action="store_true",
        help="check the store's file thoroughly (SQLite's integrity_check, which also compares "
        "every index of the file with its table; quick_check without)",
    )
    p.add_argument("--json", action="store_true", help="the report as JSON")
    p.set_defaults(handler=cmd_verify, reads_only=True)

    p = store_command(
        sub,
        "copy-store",
        help="copy the embedded store, consistent, while the service goes on writing",
    )
    p.add_argument("directory", type=Path, metavar="DIR", help="a folder without an archive")
    p.add_argument("--verify", action="store_true", help="then verify the copy (reads it all)")
    p.add_argument("--json", action="store_true", help="the summary as JSON")
    p.set_defaults(handler=cmd_copy_store, reads_only=True)

    p = store_command(
        sub,
        "gc",
        help="remove files and pieces no snapshot uses (listed a grace period ago)",
        description="Removes what an earlier run listed at least ARCHIVE_GC_GRACE seconds ago "
        "and nothing uses still, then lists what nothing uses now. Safe while other "
        "processes archive. `serve` runs it every ARCHIVE_GC_INTERVAL seconds. A run "
        "stopped (Ctrl-C, a kill) goes on where it stopped.",
    )
    p.add_argument(
        "--dry-run", action="store_true", help="change nothing; report what a run would do"
    )
    resumable_options(
        p, "collect part K of N (the token ring on Cassandra): N processes share one gc"
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_gc, reads_only=True)

    p = store_command(
        sub,
        "compact",
        help="give the space of deleted data back to the disk (the embedded store)",
        description="SQLite keeps the pages of deleted rows (snapshots deleted, and the files "
        "and pieces gc removed) for new rows: the file never shrinks. This rewrites it "
        "without them, beside other processes (writers wait for it; readers go on). It "
        "needs free disk for a copy of what is stored, beside the store and in SQLite's "
        "temporary folder (SQLITE_TMPDIR). Run gc first. On Cassandra the nodes compact "
        "their own files (nodetool).",
    )
    p.add_argument("--json", action="store_true", help="what it did as JSON")
    p.set_defaults(handler=cmd_compact, reads_only=True)

    p = store_command(sub, "stats", help="what the archive holds")
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "--by",
        choices=tuple(STATS_PERIODS),
        default="month",
        help="snapshots per day, month (default) or year (--json: by_day, and by_month or "
        "by_year when asked for)",
    )
    p.add_argument(
        "--full",
        action="store_true",
        help="count the store's pieces and bytes now (reads every piece row; kept for later)",
    )
    p.add_argument(
        "--reconcile",
        action="store_true",
        help="rebuild every index and derived table from the snapshots, count everything "
        "again from them and repair figures that drifted (goes on where a stopped run ended)",
    )
    p.add_argument(
        "--restart", action="store_true", help="with --reconcile: start from the beginning"
    )
    p.set_defaults(handler=cmd_stats, reads_only=True)


# ---- commands ------------------------------------------------------------------------


SPREAD_FROM_BYTES = 32 * 1024 * 1024
"""Less input than this is imported in the process itself unless ``--jobs`` is given."""


COUNT_AFTER = 1000
"""An import that stored this many snapshots counts the days it changed before it ends
(from the snapshots' facts, no XML read), so that the first view after it reads kept
figures; after a smaller one the next view counts the few days itself."""


def cmd_import(args: argparse.Namespace, ctx: Context) -> int:
    sources = find_sources(args.paths)
    if not sources:  # folders without one input: a wrong path, not a success
        named = ", ".join(args.paths)
        raise NotFoundError(f"nothing to import: no .xml or .json files in {named}")
    archive = ctx.archive  # the store exists (created) before any worker opens it
    total = sum(source.size or 0 for source in sources)
    workers = spread(args, ctx, least=2)
    in_workers = (
        min(workers.jobs, len(sources)) > 1
        and all(source.path is not None for source in sources)  # not standard input
        and (args.jobs is not None or total >= SPREAD_FROM_BYTES)
    )
    with import_progress(total) as advance:
        if in_workers:
            summary = import_in_workers(workers, sources, advance, here=archive)
        else:
            summary = import_sources(archive, sources, advance)
    if summary.new >= COUNT_AFTER:  # its days counted now (from their facts), not at a view
        from imixs_archive.services.statistics import refresh_figures

        refresh_figures(archive)
    if args.json:
        print_json(summary.to_json())
        return summary.exit_code
    print_problems(summary.warnings, summary.failures)
    print(
        f"{summary.new} new, {summary.present} already present, {summary.failed} failed; "
        f"{human_bytes(summary.logical_bytes)} of attachments, "
        f"{human_bytes(summary.new_bytes)} newly stored"
    )
    return summary.exit_code


def cmd_get(args: argparse.Namespace, ctx: Context) -> int:
    archive = ctx.archive
    if args.format == "xml" and not args.no_files:
        pieces = archive.xml_with_files(args.snapshot_id).iter_bytes()
    else:
        doc = archive.load(args.snapshot_id, with_files=not args.no_files)
        pieces = iter([to_json(doc)]) if args.format == "json" else iter_xml(doc)
    with output(args.output) as out:
        for piece in pieces:
            out.write(piece)
    return 0


def cmd_file(args: argparse.Namespace, ctx: Context) -> int:
    archive = ctx.archive
    content: BinaryStream
    if args.name is None:
        content = archive.files.by_md5(args.ref)
    else:
        _entry, content = archive.file_of_snapshot(args.ref, args.name)
    if args.output is None and sys.stdout.isatty():
        raise ConfigError("not writing a file's bytes to a terminal: give -o FILE or pipe it")
    with output(args.output) as out:
        for piece in content.iter_bytes():
            out.write(piece)
    return 0


def cmd_list(args: argparse.Namespace, ctx: Context) -> int:
    archive = ctx.archive
    ids: Iterable[str]
    check_range(args.from_day, args.to_day)
    tz: ZoneInfo = args.tz or zone(ctx.settings.timezone)
    if args.uniqueid:
        ids = archive.list_instance(args.uniqueid, start_after=args.after, limit=args.limit)
        if not ids and (args.after is None or not archive.list_instance(args.uniqueid, limit=1)):
            raise NotFoundError(no_snapshots_of(args.uniqueid))  # a typo: not an empty table
    elif args.from_day or args.to_day:
        require_snapshots_in(archive, args.from_day, args.to_day, tz)
        days = archive.days.iter_local_days(*day_span(args.from_day, args.to_day, tz), tz)
        ids = _page((sid for _day, sid in days), args.after, args.limit)
    else:
        ids = _page(archive.index.iter_snapshot_ids(), args.after, args.limit)
    rows = summary_rows(archive, ids, tz)
    if args.json:
        for row in rows:
            print(json.dumps(row))
    else:
        header = ["snapshot", f"modified ({zone_label(tz)})", "type", "files"]
        print_table(header, [list(r.values()) for r in rows])
        if len(rows) == args.limit and rows:
            print(f"... more: add --after {rows[-1]['snapshot']}", file=sys.stderr)
    return 0


def _tz_arg(text: str) -> ZoneInfo:
    try:
        return zone(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _page(ids: Iterable[str], after: str | None, limit: int) -> list[str]:
    """At most ``limit`` ids from those that follow ``after``."""
    page: list[str] = []
    skipping = after is not None
    for snapshot_id in ids:
        if skipping:
            skipping = snapshot_id != after
            continue
        page.append(snapshot_id)
        if len(page) >= limit:
            break
    return page


def summary_rows(archive: Archive, ids: Iterable[str], tz: dt.tzinfo) -> list[dict[str, Any]]:
    """The listing's rows: a snapshot deleted by another process between the listing of
    its id and the read of its row is left out (a listing a moment later would not have
    it), not a failure of the whole listing."""
    rows = []
    for snapshot_id in ids:
        try:
            rows.append(_summary_row(archive, snapshot_id, tz))
        except NotFoundError:
            continue
    return rows


def _summary_row(archive: Archive, snapshot_id: str, tz: dt.tzinfo) -> dict[str, Any]:
    doc = archive.load(snapshot_id, with_files=False)
    modified = doc.get_first("$modified")
    return {
        "snapshot": snapshot_id,
        "modified": modified_time(doc).astimezone(tz).isoformat(timespec="milliseconds")
        if isinstance(modified, dt.datetime)
        else "",
        "type": str(doc.get_first("type", "")),
        "files": len(list(iter_files(doc))),
    }


def cmd_delete(args: argparse.Namespace, ctx: Context) -> int:
    archive = ctx.archive
    outcome: dict[str, list[Any]] = {"deleted": [], "missing": [], "refused": []}
    for snapshot_id in args.snapshot_ids:
        try:
            result = archive.delete(snapshot_id)
        except LegalHoldError as exc:  # nothing changed; the other ids go on
            outcome["refused"].append({"snapshot": snapshot_id, "why": str(exc)})
            if not args.json:
                print(exc, file=sys.stderr)
            continue
        said = "deleted (files no longer used go at the next gc)"
        if not result.existed:
            said = "not in the archive"
        outcome["deleted" if result.existed else "missing"].append(snapshot_id)
        if not args.json:
            print(f"{snapshot_id}: {said}", file=sys.stdout if result.existed else sys.stderr)
    if args.json:
        print_json(outcome)
    return 8 if outcome["refused"] else 4 if outcome["missing"] else 0


def cmd_gc(args: argparse.Namespace, ctx: Context) -> int:
    part, parts = part_of(args)
    try:
        with count_progress("gc: partitions walked") as tick:
            run = ctx.archive.gc_part(
                part,
                parts,
                grace=ctx.settings.gc_grace,
                dry_run=args.dry_run,
                restart=args.restart,
                progress=lambda _walk: tick(1),
            )
    except KeyboardInterrupt:
        again = "gc" + (" --dry-run" if args.dry_run else "")
        again += f" --part {part}/{parts}" if parts > 1 else ""
        print(f"stopped: `{again}` goes on where it stopped (--restart begins again)")
        raise
    report = run.report
    if args.json:
        print(json.dumps(run.to_json(), indent=2))
        return 1 if report.errors else 0
    if parts > 1:
        print(f"part {part} of {parts}:")
    if run.resumed:
        print(f"went on from {run.resumed}")
    for line in report.lines(ctx.settings.gc_grace, whole=parts == 1):
        print(line)
    for error in report.errors:
        print(f"error: {error}", file=sys.stderr)
    return 1 if report.errors else 0


def cmd_stats(args: argparse.Namespace, ctx: Context) -> int:
    # Here, not at the top: the analytics would load with every command of this module.
    from imixs_archive.services.statistics import archive_stats

    if args.restart and not args.reconcile:
        raise ConfigError("--restart only applies to --reconcile")
    if args.reconcile:
        return _reconcile(args, ctx)
    data = archive_stats(ctx.archive, ctx.settings.timezone, full=args.full)
    per = per_period(data["by_day"], args.by)
    if args.json:
        if args.by != "day":
            data[f"by_{args.by}"] = per
        print(json.dumps(data, indent=2))
        return 0
    for key in ("snapshots", "instances", "files"):
        print(f"{key:>17}: {data[key]}")
    for key in ("logical_bytes", "file_bytes"):
        print(f"{key:>17}: {human_bytes(data[key])}")
    if data["counted"] is None:
        print(f"{'store':>17}: pieces and stored bytes not counted yet (stats --full counts them)")
    else:
        print(f"{'store':>17}: as counted {data['counted']} (stats --full counts again)")
        for key in ("pieces", "unused_files", "unused_pieces"):
            print(f"{key:>17}: {data[key]}")
        for key in ("stored_bytes", "reclaimable_bytes"):
            print(f"{key:>17}: {human_bytes(data[key])}")
        print(f"{'dedup_ratio':>17}: {data['dedup_ratio']}")
    if per:
        print(f"snapshots per {args.by} ({data['tz']}):")
    for period, count in per.items():
        print(f"{period:>14}: {count}")
    return 0


STATS_PERIODS = {"day": 10, "month": 7, "year": 4}
"""``stats --by``: each period and the length of its ISO prefix of a day."""


def per_period(by_day: dict[str, int], by: str) -> dict[str, int]:
    """Snapshots per ISO day summed by ``by`` (``2024-03``, ``2024``), in order."""
    summed: dict[str, int] = {}
    for day, count in by_day.items():
        period = day[: STATS_PERIODS[by]]
        summed[period] = summed.get(period, 0) + count
    return summed


def _reconcile(args: argparse.Namespace, ctx: Context) -> int:
    from imixs_archive.services.reconcile import reconcile

    with count_progress("reconciling: partitions rebuilt and days counted") as advance:
        report = reconcile(
            ctx.archive,
            lambda _done, _days: advance(1),
            restart=args.restart,
            tick=lambda _walk: advance(1),
        )
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
        return 0
    if report.resumed_after:
        print(f"went on after {report.resumed_after}, where a stopped reconcile ended")
    for table, count in sorted(report.rebuilt.items()):
        if table == NOT_REBUILT:
            print(
                f"  {count} snapshot(s) could not be rebuilt (unreadable, or a file whose key "
                "is unknown): `imixs-archive verify` names them; archive them again"
            )
        else:
            print(f"  {table}: {count} row(s) rebuilt")
    if report.days_indexed:
        print(
            f"{len(report.days_indexed)} day(s) only another writer (the Java service) stored "
            "snapshots of added to the day index"
        )
    print(f"{report.days} days read, {report.facts_changed} snapshot figures rewritten")
    for name, (before, after) in report.drift.items():
        print(f"  {name}: {before} -> {after}")
    if not report.drift:
        print("no drift: the kept figures matched the whole count")
    return 0


def cmd_compact(args: argparse.Namespace, ctx: Context) -> int:
    done = ctx.archive.storage.compact(min_free=ctx.settings.min_free_mb * 2**20)
    if args.json:
        print(json.dumps(done.to_json(), indent=2))
        return 0
    if not done.free_bytes:
        size = human_bytes(done.before_bytes)
        print(f"nothing to compact: no free space in the store's file ({size})")
        return 0
    later = (
        ""
        if done.merged
        else " (a reader kept the log from being merged: the file shrinks at the next checkpoint)"
    )
    print(
        f"compacted: {human_bytes(done.before_bytes)} -> {human_bytes(done.after_bytes)}, "
        f"{human_bytes(done.free_bytes)} of free space given back{later}"
    )
    return 0


def cmd_copy_store(args: argparse.Namespace, ctx: Context) -> int:
    from imixs_archive.services.checks import verify_once  # the analytics: not at start

    archive = ctx.archive
    target = archive.storage.copy_to(args.directory)
    if not args.json:
        print(f"copied the store to {target}")
    if not args.verify:
        if args.json:
            print_json({"copy": str(target), "verified": None})
        return 0
    with open_archive(replace(ctx.settings, data_dir=target.parent), create=False) as copy:
        report = verify_once(copy)
    if args.json:
        verified = {"ok": report.ok, "snapshots": report.snapshots, "files": report.files}
        print_json({"copy": str(target), "verified": {**verified, "problems": report.problems}})
        return 0 if report.ok else 5
    for problem in report.problems:
        print(f"PROBLEM: {problem}")
    verdict = "clean" if report.ok else f"{len(report.problems)} problems"
    print(f"the copy: {report.snapshots} snapshots, {report.files} files: {verdict}")
    return 0 if report.ok else 5

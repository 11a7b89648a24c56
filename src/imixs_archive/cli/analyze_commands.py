"""Commands over the archived business data: ``analyze aggregates|history|leadtimes|eventlog``
and ``export-table``. Thin: parse, call ``imixs_archive.analytics``, print."""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from imixs_archive.analytics.aggregates import PERIODS, aggregate_days
from imixs_archive.analytics.columns import parse_items
from imixs_archive.analytics.day_store import DEFAULT_GRACE_DAYS
from imixs_archive.analytics.event_log import EventLogSpec, format_of, write_event_log
from imixs_archive.analytics.export_runs import check_parts, export_to_file, part_path
from imixs_archive.analytics.export_table import FORMATS, ExportSpec
from imixs_archive.analytics.figures import DIMENSIONS
from imixs_archive.analytics.history import instance_history
from imixs_archive.analytics.leadtimes import (
    DEFAULT_FINISHED_STATUSES,
    DEFAULT_FINISHED_TYPES,
    PERCENTILES,
    Finished,
    lead_times,
)
from imixs_archive.analytics.process_steps import check_groups
from imixs_archive.cli.context import (
    Context,
    check_range,
    count_arg,
    day_arg,
    day_range_options,
    output,
    part_of,
    require_snapshots_in,
    resumable_options,
    store_command,
    went_on,
)
from imixs_archive.cli.output import count_progress, human_bytes, human_duration, print_table
from imixs_archive.errors import ConfigError
from imixs_archive.timezones import zone, zone_label


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    formats = argparse.ArgumentParser(add_help=False)
    choice = formats.add_mutually_exclusive_group()
    choice.add_argument("--json", action="store_true", help="JSON instead of a table")
    choice.add_argument("--csv", action="store_true", help="CSV instead of a table")
    workers = argparse.ArgumentParser(add_help=False)
    workers.add_argument(
        "--workers", type=count_arg, default=8, help="concurrent reads (default 8)"
    )
    zoned = argparse.ArgumentParser(add_help=False)
    zoned.add_argument(
        "--tz",
        type=_tz_arg,
        help="IANA time zone of days, months, years and times (default: ARCHIVE_TIMEZONE)",
    )

    analyze = sub.add_parser("analyze", help="figures over the archived business data")
    what = analyze.add_subparsers(dest="analysis", required=True, metavar="ANALYSIS")
    for name, parents, text, options, handler in (  # each analysis reads only
        (
            "aggregates",
            [formats, workers, zoned],
            "snapshots, instances, new files and bytes per day",
            _aggregates_options,
            cmd_aggregates,
        ),
        ("history", [formats, zoned], "one process instance step by step", _uniqueid, cmd_history),
        (
            "leadtimes",
            [formats, workers, zoned],
            "first to last snapshot of finished instances, per workflow group",
            _leadtimes_options,
            cmd_leadtimes,
        ),
        (
            "eventlog",
            [workers, zoned],
            "an event log for process mining: XES (.xes, .xes.gz) or OCEL 2.0 (.jsonocel)",
            _eventlog_options,
            cmd_eventlog,
        ),
    ):
        p = store_command(what, name, *parents, help=text)
        options(p)
        p.set_defaults(handler=handler, reads_only=True)

    p = store_command(
        sub,
        "export-table",
        workers,
        zoned,
        help="chosen items of every snapshot as a Parquet or CSV table",
    )
    p.add_argument("out", type=Path, metavar="OUT", help="file to write")
    p.add_argument("--items", required=True, help="a,b:int,c:str[] (types optional)")
    day_range_options(p)
    p.add_argument("--newest", action="store_true", help="the newest snapshot of each instance")
    p.add_argument(
        "--format",
        choices=FORMATS,
        help="default: from OUT's extension (.csv, .parquet or .pq; another is refused)",
    )
    p.add_argument("--batch-rows", type=count_arg, default=10_000, help="rows per row group")
    resumable_options(
        p,
        "write part K of N of the instances (the token ring on Cassandra) to "
        "OUT's name with .part-K-of-N: N processes share one export",
    )
    p.set_defaults(handler=cmd_export_table, reads_only=True)


def _tz_arg(text: str) -> ZoneInfo:
    try:
        return zone(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _zone(args: argparse.Namespace, ctx: Context) -> ZoneInfo:
    """``--tz``, else the ``ARCHIVE_TIMEZONE`` setting."""
    given: ZoneInfo | None = getattr(args, "tz", None)
    return given if given is not None else zone(ctx.settings.timezone)


def _aggregates_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--from", dest="from_day", type=day_arg, required=True, help="first day (--tz)")
    p.add_argument(
        "--to",
        dest="to_day",
        type=day_arg,
        help="last day (--tz; default: the last day with snapshots)",
    )
    p.add_argument("--by", choices=list(DIMENSIONS), help="one line per value of this item")
    p.add_argument("--per", choices=PERIODS, default="day", help="period of a line (day)")
    p.add_argument("--recompute", action="store_true", help="recompute stored days")
    p.add_argument(
        "--grace-days",
        type=int,
        default=DEFAULT_GRACE_DAYS,
        help=f"store a day once it is this many days past (default {DEFAULT_GRACE_DAYS})",
    )


def _uniqueid(p: argparse.ArgumentParser) -> None:
    p.add_argument("uniqueid", metavar="UNIQUEID")


def _leadtimes_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--group", help="only this $workflowgroup")
    p.add_argument(
        "--finished-status",
        default=",".join(DEFAULT_FINISHED_STATUSES),
        help="$workflowstatus values of a finished instance, comma-separated (%(default)s)",
    )
    p.add_argument(
        "--finished-type",
        default=",".join(DEFAULT_FINISHED_TYPES),
        help="snapshot types of a finished instance, comma-separated (%(default)s)",
    )
    p.add_argument("--from", dest="from_day", type=day_arg, help="finished on or after (--tz)")
    p.add_argument("--to", dest="to_day", type=day_arg, help="finished on or before (--tz)")


def _emit(args: argparse.Namespace, headers: Sequence[str], rows: list[list[Any]]) -> None:
    """Rows as CSV when asked, else as a table (JSON is printed by each command)."""
    if args.csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(headers)
        writer.writerows(rows)
    else:
        print_table(headers, rows)


def _eventlog_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("out", type=Path, metavar="OUT", help="file to write: .xes, .xes.gz, .jsonocel")
    day_range_options(p)
    p.add_argument(
        "--group",
        action="append",
        default=[],
        help="only this $workflowgroup (repeat for several)",
    )
    p.add_argument("--items", default="", help="items written as event attributes: a,b")


# ---- commands ------------------------------------------------------------------------


def cmd_aggregates(args: argparse.Namespace, ctx: Context) -> int:
    tz = _zone(args, ctx)
    last = args.to_day or dt.datetime.now(tz).date()
    check_range(args.from_day, last)
    require_snapshots_in(ctx.archive, args.from_day, last, tz)
    only_days = None
    if args.to_day is None:  # the UTC days the index has: the others are empty, not read
        around = dt.timedelta(days=1)
        found = ctx.archive.days.with_snapshots(args.from_day - around, last + around)
        only_days = set(found)
    report = aggregate_days(
        ctx.archive,
        args.from_day,
        last,
        grace_days=args.grace_days,
        workers=args.workers,
        recompute=args.recompute,
        tz=tz,
        only_days=only_days,
    )
    if args.to_day is None:  # up to the last day with snapshots, not to today
        report.drop_empty_tail()
    if args.json:
        print(json.dumps(report.to_json(args.by, args.per), indent=2))
        return 0
    instances = "instances" if args.per == "day" else "instance_days"
    period = "period" if args.csv else f"period ({report.zone})"
    headers = [period, args.by or "", "snapshots", instances, "new_files", "new_bytes"]
    rows = [
        [
            row.period,
            "(all)" if row.value is None else row.value or "(none)",
            row.measures.snapshots,
            row.measures.instances,
            row.measures.new_files,
            row.measures.new_bytes if args.csv else human_bytes(row.measures.new_bytes),
        ]
        for row in report.rows(args.by, args.per)
    ]
    _emit(
        args, headers if args.by else [h for h in headers if h], [_drop(r, args.by) for r in rows]
    )
    if not args.csv:
        counts = ", ".join(f"{report.count(s)} {s}" for s in ("stored", "computed", "live"))
        print(f"days: {counts}", file=sys.stderr)
    return 0


def _drop(row: list[Any], by: str | None) -> list[Any]:
    return row if by else [row[0], *row[2:]]


def cmd_history(args: argparse.Namespace, ctx: Context) -> int:
    tz = _zone(args, ctx)
    history = instance_history(ctx.archive, args.uniqueid)
    if args.json:
        print(json.dumps(history.to_json(tz), indent=2))
        return 0
    rows = []
    for step in history.steps:
        files = ", ".join(f"{f.kind} {f.name}" for f in step.files)
        rows.append(
            [
                step.index,
                step.snapshot_id,
                step.time.astimezone(tz).isoformat(timespec="seconds"),
                "" if step.since_previous is None else human_duration(step.since_previous),
                step.task,
                step.status,
                ", ".join(change.name for change in step.items),
                files,
            ]
        )
    time = f"time ({zone_label(tz)})"
    headers = ["#", "snapshot", time, "after", "task", "status", "items changed", "files"]
    _emit(args, headers, rows)
    if not args.csv:
        print(
            f"{len(history.steps)} snapshots over {human_duration(history.duration)}",
            file=sys.stderr,
        )
    return 0


def cmd_leadtimes(args: argparse.Namespace, ctx: Context) -> int:
    check_range(args.from_day, args.to_day)
    require_snapshots_in(ctx.archive, args.from_day, args.to_day, _zone(args, ctx))
    finished = Finished.of(args.finished_status.split(","), args.finished_type.split(","))
    groups = lead_times(
        ctx.archive,
        group=args.group,
        finished=finished,
        finished_from=args.from_day,
        finished_to=args.to_day,
        workers=args.workers,
        tz=_zone(args, ctx),
    )
    data = [group.to_json() for group in groups]
    if args.json:
        print(json.dumps({"unit": "seconds", "groups": data}, indent=2))
        return 0
    keys = ["min", *(f"p{q}" for q in PERCENTILES), "max", "mean"]
    show = (lambda v: round(v, 3)) if args.csv else human_duration
    rows = [[g["group"] or "(none)", g["count"], *(show(g[k]) for k in keys)] for g in data]
    _emit(args, ["group", "instances", *keys], rows)
    return 0


def cmd_export_table(args: argparse.Namespace, ctx: Context) -> int:
    check_range(args.from_day, args.to_day)
    part, parts = part_of(args)
    spec = ExportSpec(
        items=parse_items(args.items),
        first=args.from_day,
        last=args.to_day,
        newest_only=args.newest,
        format=args.format or _table_format(args.out),
        batch_rows=args.batch_rows,
        workers=args.workers,
        tz=_zone(args, ctx),
    )
    check_parts(spec, parts)
    require_snapshots_in(ctx.archive, args.from_day, args.to_day, spec.tz)
    target = part_path(args.out, part, parts)
    try:
        with count_progress("export-table: instances read") as tick:
            summary = export_to_file(
                ctx.archive,
                spec,
                args.out,
                part=part,
                parts=parts,
                restart=args.restart,
                seen=lambda: tick(1),
            )
    except KeyboardInterrupt:
        again = "export-table" + (f" --part {part}/{parts}" if parts > 1 else "")
        print(f"stopped: the same `{again}` goes on where it stopped (--restart begins again)")
        raise
    for message, count in summary.warnings.items():
        print(f"warning: {message} ({count} times)", file=sys.stderr)
    columns = ", ".join(f"{c['name']} {c['type']}" for c in summary.to_json()["columns"])
    print(
        f"{summary.rows} rows in {summary.seconds:.1f} s to {target}{went_on(summary.resumed)}: "
        f"{columns}"
    )
    return 0


TABLE_SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


def _table_format(out: Path) -> str:
    """The format ``OUT``'s extension names; any other name needs ``--format`` (an
    ``.xlsx`` was written as Parquet under that name)."""
    found = TABLE_SUFFIXES.get(out.suffix.lower())
    if found is None:
        raise ConfigError(
            f"export-table {out}: the name tells no format this writes (.csv, .parquet): "
            "name it so, or give --format csv|parquet"
        )
    return found


def cmd_eventlog(args: argparse.Namespace, ctx: Context) -> int:
    check_range(args.from_day, args.to_day)
    tz = _zone(args, ctx)
    spec = EventLogSpec(
        format=format_of(args.out.name),
        first=args.from_day,
        last=args.to_day,
        tz=tz,
        groups=frozenset(g.strip() for g in args.group),
        items=[item.strip() for item in args.items.split(",") if item.strip()],
        workers=args.workers,
    )
    check_groups(ctx.archive, spec.groups, tz)  # a range without snapshots: 4 (its own check)
    with output(args.out) as out:
        summary = write_event_log(ctx.archive, spec, out)
    for message, count in summary.warnings.items():
        print(f"warning: {message} ({count} times)", file=sys.stderr)
    print(
        f"{summary.traces} traces, {summary.events} events in {summary.seconds:.1f} s "
        f"to {args.out} ({spec.format})"
    )
    return 0

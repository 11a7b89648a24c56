"""``retention`` (apply the retention policy, or ``--dry-run``) and ``legal-hold
place|release|list``. Thin: parse, call ``services/retention.py``, print."""

from __future__ import annotations

import argparse
import datetime as dt
import getpass
import json
import sys

from imixs_archive.cli.context import (
    Context,
    part_of,
    part_words,
    resumable_options,
    store_command,
    went_on,
)
from imixs_archive.cli.output import count_progress, human_bytes, print_table
from imixs_archive.errors import NotFoundError
from imixs_archive.services.retention import (
    Policy,
    groups_no_snapshot_has,
    instance_retention,
    retention_sentence,
    run_retention,
)
from imixs_archive.timezones import zone, zone_label


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = store_command(
        sub,
        "retention",
        help="delete the snapshots of instances whose retention period is over",
    )
    p.add_argument("--dry-run", action="store_true", help="report what would go; delete nothing")
    p.add_argument("--policy", help="rules instead of ARCHIVE_RETENTION (group:X=10y,*=30y)")
    p.add_argument("--json", action="store_true", help="the report as JSON")
    p.add_argument(
        "--uniqueid",
        help="only say what the policy decides for this process instance (deletes nothing)",
    )
    resumable_options(
        p,
        "apply it to part K of N of the instances (the token ring on Cassandra): "
        "N processes share one run",
    )
    p.set_defaults(handler=cmd_retention, reads_only=True)

    p = sub.add_parser("legal-hold", help="legal holds: instances retention never deletes")
    what = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    q = store_command(what, "place", help="hold a process instance")
    q.add_argument("uniqueid", metavar="UNIQUEID")
    q.add_argument("--reason", required=True, help="why (a case number, a court order)")
    q.add_argument(
        "--ahead",
        action="store_true",
        help="hold an instance the archive holds no snapshot of yet (ahead of its data)",
    )
    q.set_defaults(handler=cmd_hold_place)
    q = store_command(what, "release", help="release a hold")
    q.add_argument("uniqueid", metavar="UNIQUEID")
    q.add_argument(
        "--reason",
        help="the case to release (the reason it was placed with); needed when the "
        "instance is held for several",
    )
    q.set_defaults(handler=cmd_hold_release, reads_only=True)
    q = store_command(what, "list", help="every hold")
    q.add_argument("--json", action="store_true", help="as JSON")
    q.set_defaults(handler=cmd_hold_list, reads_only=True)


def cmd_retention(args: argparse.Namespace, ctx: Context) -> int:
    text = args.policy if args.policy is not None else ctx.settings.retention
    policy = Policy.parse(text)
    if args.uniqueid is not None:
        return _one_instance(args, ctx, policy)
    if policy.empty:
        print("no retention policy (ARCHIVE_RETENTION is empty): nothing to do", file=sys.stderr)
    for group in groups_no_snapshot_has(ctx.archive, policy):
        print(
            f"warning: group:{group}: no instance in the archive is of that workflow group "
            "(names compare case-insensitively): the rule deletes nothing",
            file=sys.stderr,
        )
    part, parts = part_of(args)
    try:
        with count_progress("retention: instances checked") as tick:
            report = run_retention(
                ctx.archive,
                policy,
                dry_run=args.dry_run,
                part=part,
                parts=parts,
                restart=args.restart,
                seen=lambda: tick(1),
            )
    except KeyboardInterrupt:
        again = "retention" + (" --dry-run" if args.dry_run else "")
        again += f" --part {part}/{parts}" if parts > 1 else ""
        print(f"stopped: `{again}` goes on where it stopped (--restart begins again)")
        raise
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
        return 0
    tz = zone(ctx.settings.timezone)
    rows = [
        [e.uniqueid, len(e.snapshots), e.group, e.type, e.rule, str(e.last.astimezone(tz).date())]
        for e in report.expired
    ]
    header = ["instance", "snapshots", "group", "type", "rule", f"last ({zone_label(tz)})"]
    print_table(header, rows)
    if report.expired_count > len(report.expired):
        print(f"... and {report.expired_count - len(report.expired)} instances more (--json)")
    verb = "would free" if args.dry_run else "freed"
    print(
        f"{part_words(part, parts)}{report.expired_count} instances "
        f"({report.expired_snapshots} snapshots) of {report.instances_seen} expired"
        f"{went_on(report.resumed)}; {report.held_count} more held; {verb} "
        f"{report.files} files, {human_bytes(report.bytes)}"
        + ("" if args.dry_run else f"; {report.snapshots_deleted} snapshots deleted")
        + (f"; {len(report.skipped)} changed meanwhile, left" if report.skipped else ""),
        file=sys.stderr,
    )
    for uniqueid in report.untimed:
        print(
            f"warning: {uniqueid}: its newest snapshot has no plausible time (before 2000 or "
            "in the future): never deleted by retention; look at it (imixs-archive list "
            f"--uniqueid {uniqueid})",
            file=sys.stderr,
        )
    return 0


def _one_instance(args: argparse.Namespace, ctx: Context, policy: Policy) -> int:
    found = instance_retention(ctx.archive, policy, args.uniqueid)
    if found is None:
        raise NotFoundError(f"the archive holds no snapshot of {args.uniqueid}")
    if args.json:
        print(json.dumps(found.to_json(), indent=2))
        return 0
    print(f"{found.uniqueid}: {retention_sentence(found, zone(ctx.settings.timezone))}")
    return 0


def cmd_hold_place(args: argparse.Namespace, ctx: Context) -> int:
    # An archive that is not there holds nothing: only a hold ahead of the data makes one.
    ctx.existing_store = not args.ahead
    holds = ctx.archive.holds
    now = dt.datetime.now(dt.UTC)
    try:
        hold = holds.place(args.uniqueid, args.reason, _who(), now, ahead=args.ahead)
    except NotFoundError as exc:
        raise NotFoundError(f"{exc} (to hold it ahead of its data: --ahead)") from None
    ahead = args.ahead and not holds.holds_snapshots_of(hold.uniqueid)
    note = "; ahead of its data: the archive holds no snapshot of it yet" if ahead else ""
    print(f"{hold.uniqueid}: held ({hold.reason}){note}")
    return 0


def cmd_hold_release(args: argparse.Namespace, ctx: Context) -> int:
    released = ctx.archive.holds.release(args.uniqueid, _who(), args.reason)
    if released is None:
        raise NotFoundError(f"{args.uniqueid.strip()}: no legal hold; nothing released")
    left = len(ctx.archive.holds.of(released.uniqueid))
    still = f"; still held for {left} other case(s)" if left else ""
    print(f"{released.uniqueid}: released ({released.reason}){still}")
    return 0


def cmd_hold_list(args: argparse.Namespace, ctx: Context) -> int:
    holds = ctx.archive.holds.list()
    if args.json:
        print(json.dumps([h.to_json() for h in holds], indent=2))
        return 0
    tz = zone(ctx.settings.timezone)
    rows = [
        [h.uniqueid, h.placed.astimezone(tz).strftime("%Y-%m-%d %H:%M:%S"), h.placed_by, h.reason]
        for h in holds
    ]
    print_table(["instance", f"placed ({zone_label(tz)})", "by", "reason"], rows)
    return 0


def _who() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return ""

"""``verify``: all of it (going on where a stopped one ended), a part of it (``--part K/N``),
or the slice of the scrub's cycle due now (``--slice``); see ``archive/verify_runs.py`` and
``archive/scrub.py``."""

from __future__ import annotations

import argparse
import datetime as dt
import json
from typing import Any

from imixs_archive.archive.store_damage import way_out
from imixs_archive.archive.verify_runs import VerifyRun
from imixs_archive.cli.context import Context, part_of
from imixs_archive.cli.output import (
    human_bytes,
    human_duration,
    labelled_progress,
    snapshot_total,
)
from imixs_archive.errors import ConfigError
from imixs_archive.humanize import human_period, unused_words


def cmd_verify(args: argparse.Namespace, ctx: Context) -> int:
    if args.slice:
        if args.full:
            raise ConfigError("--full checks the store's file in a whole verify, not a slice")
        return verify_slice(args, ctx)
    from imixs_archive.services.checks import verify_run  # the analytics: not at start

    part, parts = part_of(args)
    archive = ctx.archive
    totals = (lambda: {"snapshots": snapshot_total(archive)}) if parts == 1 else None
    try:
        with labelled_progress("verifying", totals) as ticks:
            run = verify_run(
                archive,
                part,
                parts,
                restart=args.restart,
                full=args.full,
                progress=ticks.tick,
                on_resumed=ticks.resumed,
            )
    except KeyboardInterrupt:
        again = f"verify --part {part}/{parts}" if parts > 1 else "verify"
        print(f"stopped: `{again}` goes on where it stopped (--restart begins again)")
        raise
    report = run.report
    if args.json:
        print(json.dumps(verify_json(run), indent=2))
        return 0 if report.ok else 5
    for warning in report.warnings:
        print(f"warning: {warning}")
    for problem in report.problems:
        print(f"PROBLEM: {problem}")
    more = report.unlisted_problems + report.unlisted_warnings
    if more:
        print(
            f"... and {report.unlisted_problems} problems, {report.unlisted_warnings} warnings more"
        )
    for line in table_words(report.disagreeing, report.damaged):
        print(line)
    verdict = "clean" if report.ok else f"{report.problem_count} problems"
    unverified = f" ({report.unverified} without a digest)" if report.unverified else ""
    which = f"part {part} of {parts}: " if parts > 1 else ""
    resumed = f" (went on from {run.resumed})" if run.resumed else ""
    unused = f"; {unused_words(report)}" if parts == 1 else ""
    print(
        f"{which}checked {report.snapshots} snapshots{unverified}, {report.files} files, "
        f"{report.pieces} pieces{resumed}: {verdict}{unused}"
    )
    return 0 if report.ok else 5


def verify_json(run: VerifyRun) -> dict[str, Any]:
    report = run.report
    return {
        "ok": report.ok,
        "part": run.part,
        "parts": run.parts,
        "resumed": run.resumed or None,
        "snapshots": report.snapshots,
        "files": report.files,
        "pieces": report.pieces,
        "unverified": report.unverified,
        "sealed": report.sealed,
        "problems": report.problems,
        "warnings": report.warnings,
        "problem_count": report.problem_count,
        "warning_count": len(report.warnings) + report.unlisted_warnings,
        "disagreeing": report.disagreeing,
        "damaged": report.damaged,
        "way_out": way_out(report.damaged, report.disagreeing),
        "seconds": round(run.seconds, 3),
    }


def verify_slice(args: argparse.Namespace, ctx: Context) -> int:
    from imixs_archive.services.checks import scrub_once

    settings = ctx.settings
    interval = settings.scrub_interval or settings.scrub_period / 30
    report = scrub_once(
        ctx.archive, period=settings.scrub_period, interval=interval, rate=settings.scrub_rate
    )
    if report.busy:
        print(f"no slice checked: {report.busy}")
        return 75
    status = ctx.archive.scrub_status(settings.scrub_period)
    if args.json:
        print(json.dumps({"slice": report.to_json(), "scrub": status}, indent=2))
        return 0 if not report.problem_count else 5
    for problem in report.problems:
        print(f"PROBLEM: {problem}")
    for line in table_words(report.disagreeing, report.damaged):
        print(line)
    verdict = "clean" if not report.problem_count else f"{report.problem_count} problems"
    print(
        f"cycle {report.cycle}: checked {report.share_from:.2%} to {report.share_to:.2%} of "
        f"the archive ({report.snapshots} snapshots, {report.files} files, {report.pieces} "
        f"pieces, {human_bytes(report.bytes_read)} in {human_duration(report.seconds)}): "
        f"{verdict}"
    )
    print(scrub_words(status))
    return 0 if not report.problem_count else 5


def table_words(disagreeing: dict[str, int], damaged: dict[str, int]) -> list[str]:
    """Each table that disagrees or is damaged with its count, and what to do about it."""
    lines = [
        f"{table}: {count} row(s) disagree with the snapshots they are derived from"
        for table, count in sorted(disagreeing.items())
    ]
    lines += [
        f"{table}: {count} problem(s) in the store's file"
        for table, count in sorted(damaged.items())
    ]
    return lines + [f"what to do: {line}" for line in way_out(damaged, disagreeing)]


def scrub_words(status: dict[str, Any]) -> str:
    """Where the scrub stands, in a line (``verify --slice``)."""
    last = status.get("last_cycle")
    ended = (
        dt.datetime.fromtimestamp(last["finished"] / 1000, dt.UTC).isoformat(timespec="seconds")
        if last
        else "none yet"
    )
    return (
        f"scrub: {status['covered_share']:.2%} checked within the last "
        f"{human_period(status['period_seconds'])}; the cycle is at "
        f"{status['cycle_share']:.2%} (due: {status['due_share']:.2%}); last full cycle "
        f"ended {ended}; {status['finding_count']} problems open"
    )

"""Commands of the sync from Imixs-Workflow: ``sync`` and ``resync`` (see docs/sync.md)."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from imixs_archive.cli.context import Context, in_zone, store_options
from imixs_archive.cli.output import human_bytes, print_problems, print_table
from imixs_archive.config import java_warnings
from imixs_archive.errors import ArchiveError, ConfigError
from imixs_archive.ledger.schedule import LedgerSchedule
from imixs_archive.logs import setup_logging
from imixs_archive.sync.jobs import new_resync, open_sync
from imixs_archive.sync.resync import request_cancel, resync_status
from imixs_archive.sync.service import Outcome, SyncService
from imixs_archive.sync.status import SyncStatus, retry_dead_letters, sync_status
from imixs_archive.timezones import epoch_ms, from_epoch_ms
from imixs_archive.workflow.client import WorkflowClient


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    common = store_options()
    p = sub.add_parser(
        "sync", parents=[common], help="pull snapshots from Imixs-Workflow (foreground loop)"
    )
    group = p.add_mutually_exclusive_group()
    group.add_argument("--once", action="store_true", help="run one round, then exit")
    group.add_argument(
        "--status", action="store_true", help="print counters, sync point and dead letters"
    )
    group.add_argument(
        "--retry",
        action="append",
        metavar="ID",
        help="re-queue a dead letter (event or snapshot id)",
    )
    group.add_argument("--retry-all", action="store_true", help="re-queue every dead letter")
    p.add_argument("--json", action="store_true", help="--status as JSON")
    p.add_argument("--workers", type=int, help="events archived at once (WORKFLOW_SYNC_WORKERS)")
    p.set_defaults(handler=cmd_sync)

    p = sub.add_parser(
        "resync",
        parents=[common],
        help="walk the workflow's syncpoint feed, archive what is missing",
    )
    p.add_argument(
        "--from",
        dest="start",
        type=_when,
        help="start here (ISO date/time, in ARCHIVE_TIMEZONE unless an offset is given, "
        "or epoch ms); "
        "default: go on from the saved sync point",
    )
    p.add_argument("--cancel", action="store_true", help="stop a running resync")
    p.set_defaults(handler=cmd_resync)


def _when(text: str) -> int | dt.datetime:
    """Epoch milliseconds, or a date/time (naive: read in ``ARCHIVE_TIMEZONE`` by the
    command, :func:`in_zone`)."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    try:
        return dt.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date/time: {text!r}") from None


@contextmanager
def _stop_on_signals(stop: Callable[[], None]) -> Iterator[None]:
    """SIGINT/SIGTERM: stop after the work in hand (a second Ctrl-C interrupts at once)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    asked = [False]

    def handler(signum: int, _frame: FrameType | None) -> None:
        if asked[0] and signum == signal.SIGINT:
            raise KeyboardInterrupt
        asked[0] = True
        print("imixs-archive: stopping after the events in hand ...", file=sys.stderr)
        stop()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _logging() -> None:
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s"
    )


def _require_endpoint(ctx: Context) -> None:
    if not ctx.settings.workflow_service_endpoint.strip():
        raise ConfigError("set WORKFLOW_SERVICE_ENDPOINT (the workflow's REST API) to sync")


def _client(ctx: Context) -> WorkflowClient:
    _require_endpoint(ctx)
    return WorkflowClient.from_settings(ctx.settings)


# ---- sync --------------------------------------------------------------------------------


def cmd_sync(args: argparse.Namespace, ctx: Context) -> int:
    # Status and dead letters are read from an archive that is there: none is created.
    ctx.existing_store = bool(args.status or args.retry or args.retry_all)
    if args.status:
        _print_status(sync_status(ctx.archive), as_json=args.json)
        return 0
    if args.retry or args.retry_all:
        with _client(ctx) as client:
            letters = retry_dead_letters(
                ctx.archive, client, None if args.retry_all else args.retry
            )
        for letter in letters:
            print(f"re-queued {letter.topic} {letter.ref} (was event {letter.event_id})")
        if args.retry and not letters:
            raise ArchiveError(f"no dead letter {', '.join(args.retry)}")
        return 0
    _require_endpoint(ctx)
    if not args.once:
        setup_logging(ctx.settings)  # a long run: its log as the settings say
        for line in java_warnings():  # as serve says them at its start (LOCAL_QUORUM ...)
            logging.getLogger("imixs_archive.config").warning("%s", line)
    service = open_sync(ctx.archive, ctx.settings, workers=args.workers)
    try:
        if args.once:
            return _once(service)
        _logging()
        ledger = LedgerSchedule(ctx.archive, ctx.settings)  # as serve: the ledger sequenced
        ledger.start()
        try:
            with _stop_on_signals(service.stop):
                service.run()
        finally:
            ledger.close()
    finally:
        service.close()
        service.client.close()
    return 0


def _once(service: SyncService) -> int:
    result = service.once()
    counts = ", ".join(f"{n} {o.value}" for o, n in sorted(result.outcomes.items()) if n)
    print(f"{result.read} events read{': ' + counts if counts else ''}")
    if result.pause:
        print(f"imixs-archive: paused: {result.pause}", file=sys.stderr)
        return 1
    return 1 if result.count(Outcome.FAILED) or result.count(Outcome.DEAD) else 0


def _ago(millis: int) -> str:
    seconds = max(0.0, time.time() - millis / 1000)
    return f"{seconds:.0f} s ago" if seconds < 120 else f"{seconds / 60:.0f} min ago"


def _point(millis: int | None) -> str:
    if not millis:
        return "none"
    when = from_epoch_ms(millis)
    return f"{when.isoformat(timespec='milliseconds')} ({millis})"


def _print_status(status: SyncStatus, *, as_json: bool) -> None:
    if as_json:
        print(json.dumps(status.as_dict(), default=str, indent=2))
        return
    print(f"sync point: {_point(status.point)}")
    print(f"sync count: {status.count}, size: {human_bytes(status.size)}")
    if status.resync:
        resync = ", ".join(f"{k} {v}" for k, v in sorted(status.resync.items()) if v != "")
        print(f"resync: {resync}")
    print(f"sync processes: {len(status.instances)}")
    if status.instances:
        rows: list[list[Any]] = [
            [
                row["instance"],
                row["state"],
                _ago(row["updated"]),
                row["events"],
                row["archived"],
                row["removed"],
                human_bytes(row["bytes"]),
                row["failures"],
                row["retries"],
                row["dead_letters"],
                f"{row['lag_ms'] / 1000:.1f} s",
            ]
            for row in status.instances
        ]
        headers = ["instance", "state", "updated", "events", "archived", "removed", "bytes"]
        print_table([*headers, "failures", "retries", "dead letters", "lag"], rows)
    print(f"catch-up point: {_point(status.catchup_point)}; events in hand: {status.claims}")
    for gap in status.catchup_skipped:
        print(
            f"catch-up could not read {_point(gap['from'])} .. {_point(gap['to'])}: {gap['note']}"
        )
    print(f"gone from the workflow (404): {status.gone_count}")
    if status.gone:
        print_table(
            ["snapshot", "topic", "event", "when"],
            [[g.ref, g.topic, g.event_id, _ago(g.gone_at)] for g in status.gone[:20]],
        )
    for title, failures in (("dead letters", status.dead_letters), ("retrying", status.retrying)):
        print(f"{title}: {len(failures)}")
        if failures:
            print_table(
                ["event", "topic", "snapshot", "attempts", "last failed", "error"],
                [
                    [f.event_id, f.topic, f.ref, f.attempts, _ago(f.last_failed), f.error]
                    for f in failures
                ],
            )
    if status.archived_since:
        print(
            f"failed once, archived since (forgotten in the sync's next round): "
            f"{', '.join(f.ref for f in status.archived_since)}"
        )


# ---- resync ------------------------------------------------------------------------------


def cmd_resync(args: argparse.Namespace, ctx: Context) -> int:
    if args.cancel:
        return _cancel(ctx)
    with _client(ctx) as client:
        resync = new_resync(ctx.archive, client, ctx.settings)
        _logging()
        with _stop_on_signals(resync.stopping.set):
            start = args.start
            if isinstance(start, dt.datetime):
                start = epoch_ms(in_zone(start, ctx.settings.timezone))
            result = resync.run(start)
    print_problems(result.warnings, result.failures)
    print(
        f"resync {result.status} at {_point(result.point)}: {result.walked} snapshots walked, "
        f"{result.new} newly archived, {human_bytes(result.bytes)} received"
    )
    return 0 if result.status in ("done", "cancelled") and not result.failures else 1


def _cancel(ctx: Context, wait: float = 30.0) -> int:
    """Set the cancel flag until the running resync has seen it."""
    deadline = time.monotonic() + wait
    asked = False
    while time.monotonic() < deadline:
        if not request_cancel(ctx.archive):
            print(
                "resync cancelled"
                if asked
                else f"no resync running ({resync_status(ctx.archive) or 'never run'})"
            )
            return 0
        asked = True
        time.sleep(0.2)
    print(
        "imixs-archive: the resync has not stopped yet (it stops before its next step)",
        file=sys.stderr,
    )
    return 1

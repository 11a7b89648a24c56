"""The Monitor's answer to "is my archive complete and current?", at a glance.

Every row comes from what is already at hand, so the page (drawn again every 15 s) stays
cheap: the counts from the Statistics' cached day figures (``dashboard.py``) and today's
from the listing counts (stored day figures, else the ids of a day, no snapshot read);
the newest snapshot from the ids of its day; the sync from its saved per-process rows
and this process's counters; backup and verify from the jobs of this process, or the
last run the store recorded (a command from cron, another process: ``job_runs.py``); the store's
size from its files (data and write-ahead log apart); the holds from their table.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from imixs_archive.document.conventions import is_snapshot_id, snapshot_millis
from imixs_archive.errors import ArchiveError
from imixs_archive.humanize import human_age, human_bytes, human_duration, human_period
from imixs_archive.recovery.ftps import FtpsLocation
from imixs_archive.services.job_runs import latest
from imixs_archive.services.listing_counts import count_modified
from imixs_archive.timezones import day_bounds, from_epoch_ms, zone
from imixs_archive.web.dependencies import Services

Local = Callable[[Any], str]


@dataclass
class Row:
    key: str
    label: str
    value: str
    bad: bool = False


def when(at: dt.datetime | None, local: Local, now: dt.datetime | None = None) -> str:
    """``2026-11-27 11:38:57 Europe/Berlin (3 min ago)``; ``–`` for none."""
    if at is None:
        return "–"
    now = now or dt.datetime.now(dt.UTC)
    return f"{local(at)} ({human_age((now - at).total_seconds())})"


def glance(
    svc: Services, sync: dict[str, Any], ledger: dict[str, Any], store: dict[str, Any], local: Local
) -> list[Row]:
    tz = zone(svc.settings.timezone)
    rows = [_snapshots(svc, tz), _newest(svc, tz, local), _lag(sync)]
    rows.append(_last_round(sync, local))
    rows.append(_backup(svc, local))
    rows.append(_verify(svc, ledger, local))
    rows.append(Row("size", "Store size", store_size(store)))
    rows.append(_holds(svc))
    return rows


def _snapshots(svc: Services, tz: dt.tzinfo) -> Row:
    try:
        total = int(svc.dashboard.get().stats["snapshots"])
        start, end = day_bounds(dt.datetime.now(tz).date(), tz)
        today = count_modified(svc.archive, start, end)
    except ArchiveError as exc:
        return Row("snapshots", "Snapshots archived", f"unknown: {exc}", bad=True)
    return Row("snapshots", "Snapshots archived", f"{total:,} in all, {today:,} today")


def newest_snapshot(svc: Services) -> tuple[str, dt.datetime] | None:
    """The newest snapshot (by the time it was taken) and that time: the ids filed under
    the UTC days around the newest day with snapshots, keys only."""
    board = svc.dashboard.get()
    if not board.growth:
        return None
    day = board.growth[-1].day
    found: tuple[int, str] | None = None
    for utc_day in svc.archive.days.with_snapshots(day - dt.timedelta(1), day + dt.timedelta(1)):
        for sid in svc.archive.days.snapshot_ids(utc_day):
            if is_snapshot_id(sid) and (found is None or snapshot_millis(sid) > found[0]):
                found = (snapshot_millis(sid), sid)
    return None if found is None else (found[1], from_epoch_ms(found[0]))


def _newest(svc: Services, tz: dt.tzinfo, local: Local) -> Row:
    try:
        newest = newest_snapshot(svc)
    except ArchiveError as exc:
        return Row("newest", "Newest snapshot", f"unknown: {exc}", bad=True)
    if newest is None:
        return Row("newest", "Newest snapshot", "none yet")
    return Row("newest", "Newest snapshot", f"{when(newest[1], local)} · {newest[0]}")


def _lag(sync: dict[str, Any]) -> Row:
    label = "Behind the workflow"
    if not sync.get("configured"):
        return Row("lag", label, "not known: sync is not configured (WORKFLOW_SERVICE_ENDPOINT)")
    if sync.get("off"):
        return Row("lag", label, "not known: the sync is off (BACKUP_ONLY)")
    lag = sync.get("lag_seconds")
    pending = sync.get("pending")
    if lag is None:
        return Row("lag", label, "not known yet: no round has read the event log")
    if pending in ("0", 0):
        return Row("lag", label, "nothing: no event pending")
    return Row("lag", label, f"{pending} events pending, the oldest {human_duration(lag)} old")


def _last_round(sync: dict[str, Any], local: Local) -> Row:
    rows = [row for row in sync.get("instances") or [] if row.get("updated")]
    if not rows:
        return Row("round", "Last sync round", "none recorded")
    row = max(rows, key=lambda r: int(r["updated"]))
    state = str(row.get("state") or "–")
    text = (
        f"{state} · {when(from_epoch_ms(int(row['updated'])), local)} · process "
        f"{row.get('instance')}: {row.get('archived', 0)} archived, "
        f"{row.get('failures', 0)} failures since it started"
    )
    return Row("round", "Last sync round", text, bad=state.startswith("paused"))


def _job(svc: Services, name: str, label: str, local: Local) -> Row:
    status = latest(svc.jobs, svc.archive, name)
    if status is None:
        return Row(name, label, "none recorded")
    if status.active:
        return Row(name, label, f"running since {when(status.started, local)}")
    outcome = status.error or status.message or str(status.state)
    text = f"{status.state}: {outcome} · {when(status.finished, local)}"
    return Row(name, label, text, bad=status.error is not None or status.state == "failed")


def _backup(svc: Services, local: Local) -> Row:
    """The last backup job, and the FTPS backup of events where it runs."""
    row = _job(svc, "backup", "Last backup", local)
    status = svc.workflow.backup if svc.workflow is not None else None
    if status is not None and status.last is not None:
        last = status.last
        outcome = "ok" if last.ok else f"{last.failures} failed"
        success = when(status.last_success, local)
        row.value += (
            f"; FTPS backup of events: last round {outcome}, {last.pending}"
            f"{' or more' if last.more else ''} left, last round without a failure {success}"
        )
        row.bad = row.bad or not last.ok
    return row


def _verify(svc: Services, ledger: dict[str, Any], local: Local) -> Row:
    row = _job(svc, "verify", "Last verification", local)
    status = latest(svc.jobs, svc.archive, "verify")
    if status is not None and not status.active and status.result:
        result = status.result
        board = svc.dashboard.peek()
        held = f" of {int(board.stats['snapshots']):,}" if board is not None else ""
        found = int(result.get("problem_count", 0))
        part = f"part {result['part']} of {result['parts']}: " if "part" in result else ""
        row.value = (
            f"{part}checked {result.get('snapshots', 0):,}{held} snapshots, "
            f"{result.get('files', 0):,} files, {result.get('pieces', 0):,} pieces: "
            f"{'no problems' if not found else f'{found} problems'} · "
            f"{when(status.finished, local)}"
        )
        row.bad = found > 0
    verify = ledger.get("last_verify")
    if verify:
        finished = from_epoch_ms(int(verify.get("finished", 0)))
        verdict = "everything holds" if verify.get("ok") else f"{verify.get('problems')} problems"
        row.value += (
            f"; ledger verify: {verify.get('checked', 0):,} entries, "
            f"{verify.get('snapshots', 0):,} snapshots, {verdict} · {when(finished, local)}"
        )
        row.bad = row.bad or not verify.get("ok")
    return row


def store_size(store: dict[str, Any]) -> str:
    if "data_bytes" in store:
        return (
            f"{human_bytes(store['data_bytes'])} data, "
            f"{human_bytes(store.get('log_bytes', 0))} write-ahead log"
        )
    if store.get("kind") == "cassandra":
        return "kept by the cluster's nodes (nodetool tablestats)"
    return "–"


def _holds(svc: Services) -> Row:
    try:
        holds = svc.archive.holds.list()
    except ArchiveError as exc:
        return Row("holds", "Legal holds", f"unknown: {exc}", bad=True)
    count = len({hold.uniqueid for hold in holds})
    held = f"{count} process instance{'s' if count > 1 else ''} held"
    if len(holds) > count:
        held += f" ({len(holds)} cases)"
    return Row("holds", "Legal holds", held if count else "none")


LABELS = {
    "kind": "Kind of store",
    "path": "Database file",
    "sqlite_version": "SQLite version",
    "page_size": "Page size",
    "journal_mode": "Journal mode",
    "synchronous": "Synchronous writes",
    "data_bytes": "Database file size",
    "log_bytes": "Write-ahead log size",
    "contact_points": "Contact points",
    "keyspace": "Keyspace",
    "replication": "Replication",
    "consistency": "Consistency",
    "cluster_name": "Cluster",
    "release_versions": "Cassandra versions",
    "local_dc": "Local data centre",
    "hosts": "Hosts",
    "zstd": "zstd compression",
}
HIDDEN = ("size_bytes",)
"""Shown apart (data and log) in the rows above."""


def store_details(store: dict[str, Any]) -> list[tuple[str, str]]:
    """What the store says of itself, with labels for people and sizes in units."""
    rows = []
    for key, value in store.items():
        if key in HIDDEN:
            continue
        label = LABELS.get(key, key.replace("_", " ").capitalize())
        rows.append((label, _text(key, value)))
    return rows


def _text(key: str, value: Any) -> str:
    if value is None or value == "":
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) and (key.endswith("_bytes") or key == "page_size"):
        return human_bytes(value)
    if key == "kind":
        return {"sqlite": "SQLite (embedded)", "cassandra": "Cassandra"}.get(str(value), str(value))
    if key == "journal_mode":
        return str(value).upper()
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "none"
    if isinstance(value, dict):
        return ", ".join(f"{k} {_text(str(k), v)}" for k, v in value.items()) or "none"
    return str(value)


FINDINGS_SHOWN = 20


def scrub_card(svc: Services, local: Local) -> tuple[list[Row], list[str], str]:
    """The Scrub card: its rows, the findings shown (the first 20), and an error (the
    store unavailable). From the scrub's book (any process's slices) and this process's
    last slice."""
    period = svc.settings.scrub_period
    try:
        status = svc.archive.scrub_status(period)
    except ArchiveError as exc:
        return [], [], f"scrub state unknown: {exc}"
    interval = svc.settings.scrub_interval
    every = f"every {human_period(interval)}" if interval > 0 else "not in this process"
    schedule = Row("schedule", "Slices", f"{every}; a cycle within {human_period(period)}")
    if not status["started"]:
        note = "no slice yet (imixs-archive verify --slice, or serve's scrub)"
        return [schedule, Row("coverage", "Checked within the period", note)], [], ""
    rows = [schedule, _coverage(status, period)]
    started = from_epoch_ms(int(status["cycle_started"]))
    behind = status["cycle_share"] + 0.02 < status["due_share"]
    rows.append(
        Row(
            "cycle",
            "This cycle",
            f"cycle {status['cycle']}, {status['cycle_share']:.1%} done (due by now: "
            f"{status['due_share']:.1%}), begun {when(started, local)}",
            bad=behind,
        )
    )
    rows.append(_last_cycle(status, local))
    last_run = status.get("last_run")
    if last_run:
        text = f"{when(from_epoch_ms(int(last_run['at'])), local)}: {last_run['problems']} problems"
        rows.append(Row("slice", "Last slice", text, bad=bool(last_run["problems"])))
    count = int(status["finding_count"])
    rows.append(Row("findings", "Problems found", f"{count}" if count else "none", bad=count > 0))
    shown = [
        f"{f['text']} (found {local(from_epoch_ms(int(f['found'])))})" for f in status["findings"]
    ]
    return rows, shown[:FINDINGS_SHOWN], ""


def _coverage(status: dict[str, Any], period: float) -> Row:
    share = float(status["covered_share"])
    text = f"{share:.1%} of the archive in the last {human_period(period)}"
    return Row("coverage", "Checked within the period", text, bad=share < 1 and _overdue(status))


def _overdue(status: dict[str, Any]) -> bool:
    """A whole period has passed since the scrub began and it has not covered it all."""
    last = status.get("last_cycle")
    return bool(last) or float(status["due_share"]) >= 1.0


def _last_cycle(status: dict[str, Any], local: Local) -> Row:
    last = status.get("last_cycle")
    if not last:
        return Row("last_cycle", "Last full cycle", "none finished yet")
    took = (int(last["finished"]) - int(last["started"])) / 1000
    text = (
        f"ended {when(from_epoch_ms(int(last['finished'])), local)}, took "
        f"{human_duration(took)}, {last['problems']} problems open at its end"
    )
    return Row("last_cycle", "Last full cycle", text, bad=bool(last["problems"]))


def ftps_target(svc: Services) -> str | None:
    """The FTPS backup target the settings name (``BACKUP_FTP_HOST``), for the pages."""
    if not svc.settings.backup_ftp_host.strip():
        return None
    return str(FtpsLocation.from_settings(svc.settings))


FAILURES_SHOWN = 10


def backup_card(svc: Services, local: Local) -> tuple[list[Row], list[str], str]:
    """The FTPS backup card: its rows, the last round's failures (the first 10), and why
    there is nothing to show (not configured)."""
    link = svc.workflow
    status = link.backup if link is not None else None
    if link is None or status is None:
        return [], [], "not configured: set BACKUP_FTP_HOST and WORKFLOW_SERVICE_ENDPOINT"
    source = (
        "every snapshot from the workflow (BACKUP_ONLY)"
        if status.source == "workflow"
        else "snapshots from the archive, from the workflow those it lacks"
    )
    rows = [Row("target", "Target", f"{status.target or ftps_target(svc)} · {status.topic}")]
    rows.append(Row("source", "Snapshots taken", source))
    every = f"a round every {human_period(status.interval)}"
    if link.backup_running:
        rows.append(Row("loop", "Event rounds", f"running, {every}"))
    elif link.backup_started:
        why = status.last_error or "stopped"
        rows.append(Row("loop", "Event rounds", f"not running: {why}", bad=True))
    else:
        rows.append(Row("loop", "Event rounds", "starting"))
    last = status.last
    if last is None:
        rows.append(Row("round", "Last round", "none yet"))
        return rows, [], ""
    finished = last.finished or last.started
    rows.append(
        Row("round", "Last round", f"{when(finished, local)}: {last.summary()}", not last.ok)
    )
    success = status.last_success
    rows.append(
        Row("success", "Last round without a failure", when(success, local), bad=success is None)
    )
    left = f"{last.pending}{' or more' if last.more else ''}"
    rows.append(Row("pending", "Events left after the last round", left))
    totals = status.totals
    rows.append(
        Row(
            "totals",
            "Since the service started",
            f"{status.rounds} rounds: {totals['written']} written, {totals['current']} already "
            f"current ({totals['pulled']} taken from the workflow), {totals['gone']} gone from "
            f"the workflow, {totals['given_up']} given up, {totals['failed']} failed, "
            f"{totals['released']} dead locks released",
            bad=bool(totals["given_up"]),
        )
    )
    return rows, last.failed[:FAILURES_SHOWN], ""

"""``/healthz`` (the process answers), ``/readyz`` (the store answers; sync not stalled)
and ``/metrics`` (Prometheus text format; readers only, unless the service is open).

``/health`` (with ``/health/live`` and ``/health/ready``) answers in the MicroProfile Health
format, as the Java service's ``imixs-archive`` liveness check does on WildFly, so probes
written for it keep working: ``{"status": "UP", "checks": [{"name": "imixs-archive",
"status": "UP", "data": {"archive.version": ...}}]}``, 503 with ``DOWN``."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import stat
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, Response

from imixs_archive import __version__
from imixs_archive.errors import ArchiveError
from imixs_archive.ledger.schedule import ledger_status
from imixs_archive.recovery.backup_events import OUTCOMES
from imixs_archive.services.job_runs import latest
from imixs_archive.services.jobs import JOB_NAMES, JobState
from imixs_archive.sync.counters import REPORTED
from imixs_archive.sync.status import dead_letters
from imixs_archive.web.api_models import Responses
from imixs_archive.web.dependencies import Reader, Services, Svc
from imixs_archive.web.descriptors import descriptors_in_use
from imixs_archive.web.integrations import WorkflowLink
from imixs_archive.web.limits import workers_free
from imixs_archive.web.problems import PROBLEM_RESPONSES

router = APIRouter(tags=["operations"])

PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


_STATUS = {
    "type": "object",
    "properties": {
        "status": {"type": "string", "enum": ["ok", "stuck"]},
        "message": {"type": "string"},
    },
    "required": ["status"],
}
_CHECK = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}, "message": {"type": "string"}},
    "required": ["ok", "message"],
}
_READY = {
    "type": "object",
    "properties": {
        "ready": {"type": "boolean"},
        "checks": {"type": "object", "additionalProperties": _CHECK},
    },
    "required": ["ready", "checks"],
}
_MP = {
    "type": "object",
    "properties": {
        "status": {"type": "string", "enum": ["UP", "DOWN"]},
        "checks": {"type": "array", "items": {"type": "object"}},
    },
    "required": ["status", "checks"],
}


def _probe(schema: dict[str, Any], up: str, down: str) -> Responses:
    """A probe's answers: 200 (``up``) and 503 (``down``), both JSON of ``schema``."""
    content = {"application/json": {"schema": schema}}
    return {
        200: {"description": up, "content": content},
        503: {"description": down, "content": content},
    }


MP_RESPONSES = _probe(_MP, "UP", "DOWN: a check failed")
"""The MicroProfile Health answers (as the Java service's WildFly probe)."""

LIVENESS_WAIT = 5.0
"""Seconds /healthz waits for a free worker thread before it says the service is stuck."""


@router.get(
    "/healthz",
    summary="The process is up and can still work",
    responses=_probe(_STATUS, "ok", "every worker thread has been busy for seconds"),
)
async def healthz() -> JSONResponse:
    waited = await workers_free(LIVENESS_WAIT)
    if waited is None:
        message = f"no worker thread freed up within {LIVENESS_WAIT:g} s: the service is stuck"
        return JSONResponse({"status": "stuck", "message": message}, status_code=503)
    return JSONResponse({"status": "ok"})


def _disk_check(svc: Services) -> str | None:
    """Why the embedded store's disk cannot take writes (None: it can)."""
    path = svc.archive.storage.describe().get("path")
    if not isinstance(path, str) or not path:
        return None  # Cassandra: the cluster reports its own disks
    try:
        free = shutil.disk_usage(Path(path).parent).free
    except OSError as exc:
        return f"cannot read the free space of {path}: {exc.strerror or exc}"
    needed = svc.settings.min_free_mb * 2**20
    if free < needed:
        return (
            f"the disk of the store has {free // 2**20} MiB free, less than "
            f"{svc.settings.min_free_mb} MiB (ARCHIVE_MIN_FREE_MB): writes would fail"
        )
    return None


def _mp_health(checks: list[dict[str, Any]]) -> JSONResponse:
    up = all(check["status"] == "UP" for check in checks)
    body = {"status": "UP" if up else "DOWN", "checks": checks}
    return JSONResponse(body, status_code=200 if up else 503)


def _liveness() -> dict[str, Any]:
    return {"name": "imixs-archive", "status": "UP", "data": {"archive.version": __version__}}


async def _readiness(svc: Services) -> dict[str, Any]:
    ok, message, _seconds = await run_in_threadpool(store_check, svc)
    sync_ok, sync_message = _sync_check(svc)
    backup_ok, backup_message = backup_check(svc)
    return {
        "name": "imixs-archive-ready",
        "status": "UP" if ok and sync_ok and backup_ok else "DOWN",
        "data": {"store": message, "sync": sync_message, "backup": backup_message},
    }


@router.get(
    "/health",
    summary="MicroProfile Health: liveness and readiness (Java's probe path)",
    responses=MP_RESPONSES,
)
async def health(svc: Svc) -> JSONResponse:
    return _mp_health([_liveness(), await _readiness(svc)])


@router.get(
    "/health/live", summary="MicroProfile Health liveness", responses={200: MP_RESPONSES[200]}
)
async def health_live() -> JSONResponse:
    return _mp_health([_liveness()])


@router.get("/health/ready", summary="MicroProfile Health readiness", responses=MP_RESPONSES)
async def health_ready(svc: Svc) -> JSONResponse:
    return _mp_health([await _readiness(svc)])


def _files_check(svc: Services) -> str | None:
    """Why a new connection to the store would fail where the open ones still read (None:
    it would not): no descriptor left to open, or the embedded store's file gone or not
    readable and writable by this process. The store's file itself is never opened here:
    closing a descriptor of it would drop SQLite's locks on it (POSIX locks are the
    process's, not the descriptor's)."""
    path = svc.archive.storage.describe().get("path")
    try:
        os.close(os.open(os.devnull, os.O_RDONLY))
    except OSError as exc:
        return (
            f"the process cannot open files: {exc.strerror or exc} ({descriptors_in_use()}); "
            "new connections to the store and requests fail"
        )
    if not isinstance(path, str) or not path:
        return None  # Cassandra: its session has the connections it needs
    try:
        found = os.stat(path)
    except OSError as exc:
        return f"the store's file {path} cannot be found: {exc.strerror or exc}"
    if not stat.S_ISREG(found.st_mode) or not os.access(path, os.R_OK | os.W_OK):
        return f"the store's file {path} cannot be read and written by this process"
    return None


def store_check(svc: Services) -> tuple[bool, str, float]:
    start = time.perf_counter()
    try:
        svc.archive.state.load()
        full = _files_check(svc) or _disk_check(svc)
        if full is not None:
            return False, full, time.perf_counter() - start
    except ArchiveError as exc:
        return False, str(exc), time.perf_counter() - start
    except Exception as exc:  # a driver error that escaped mapping still means not ready
        return False, f"{type(exc).__name__}: {exc}", time.perf_counter() - start
    return True, "reachable", time.perf_counter() - start


@router.get(
    "/readyz",
    summary="The store is reachable and sync is not stalled",
    responses=_probe(_READY, "ready", "not ready: the failing check says why (`ok`: false)"),
)
async def readyz(svc: Svc) -> JSONResponse:
    ok, message, seconds = await run_in_threadpool(store_check, svc)
    sync_ok, sync_message = _sync_check(svc)
    backup_ok, backup_message = backup_check(svc)
    checks: dict[str, Any] = {
        "store": {"ok": ok, "message": message, "seconds": round(seconds, 4)},
        "sync": {"ok": sync_ok, "message": sync_message},
        "backup": {"ok": backup_ok, "message": backup_message},
    }
    ready = ok and sync_ok and backup_ok
    return JSONResponse({"ready": ready, "checks": checks}, status_code=200 if ready else 503)


def _sync_check(svc: Services) -> tuple[bool, str]:
    """Stalled: the loop's thread has died. A loop paused because the workflow is down is
    reported but is no reason to stop serving the archive."""
    link = svc.workflow
    if link is None:
        return True, "not configured"
    if link.sync_off:
        return True, "off (BACKUP_ONLY)"
    state = str(link.sync.counters.as_dict()["state"])
    if not link.running and state != "starting":
        return False, f"the sync loop is not running (last state: {state})"
    return True, state


def backup_check(svc: Services) -> tuple[bool, str]:
    """The FTPS backup of snapshot.backup events: not ready when its loop has died (a
    setting it cannot use); rounds that fail (the FTPS server or the workflow down) are
    reported, as the sync's pauses are."""
    link = svc.workflow
    status = link.backup if link is not None else None
    if link is None or status is None:
        return True, "not configured"
    if not link.backup_started:
        return True, "starting"
    if not link.backup_running:
        why = status.last_error or "stopped"
        return False, f"the FTPS backup of events is not running: {why}"
    last = status.last
    if last is None:
        return True, "starting: no round yet"
    finished = last.finished or last.started
    success = status.last_success
    return True, (
        f"{'ok' if last.ok else 'failing'}: last round {finished:%Y-%m-%d %H:%M:%S} UTC, "
        f"{last.summary()}; last round without a failure: "
        f"{f'{success:%Y-%m-%d %H:%M:%S} UTC' if success else 'none yet'}"
    )


@router.get(
    "/metrics",
    summary="Prometheus metrics",
    response_class=Response,
    responses={
        200: {"description": "Prometheus text format", "content": {PROMETHEUS_TEXT: {}}},
        401: PROBLEM_RESPONSES[401],
        403: PROBLEM_RESPONSES[403],
    },
)
def metrics(svc: Svc, _who: Reader) -> Response:
    return Response(svc.metrics.render(), media_type=PROMETHEUS_TEXT)


Gauge = tuple[str, str, float, Mapping[str, str]]

SYNC_GAUGES = (
    ("sync.count", "sync_count", "The sync.count item of the service state."),
    ("sync.size", "sync_bytes", "The sync.size item of the service state."),
)
BYTES_HELP = (
    "Attachment bytes (last statistics): logical as carried by snapshots, distinct files, "
    "stored pieces."
)


def scrape_gauges(svc: Services) -> Iterator[Gauge]:
    """Gauges computed when /metrics is scraped: sync state, jobs, the last statistics."""
    link = svc.workflow
    configured = float(link is not None and not link.sync_off)
    running = float(link is not None and link.running)
    help_text = "1 when WORKFLOW_SERVICE_ENDPOINT is set (and BACKUP_ONLY is not)."
    yield ("sync_configured", help_text, configured, {})
    yield ("sync_running", "1 while this process runs the sync loop.", running, {})
    store_ok, _message, _seconds = store_check(svc)
    yield (
        "store_up",
        "1 when the store answers a read; 0: unavailable, the sync pauses.",
        float(store_ok),
        {},
    )
    yield from _sync_gauges(link)
    yield from _backup_gauges(link, svc.started)
    if store_ok:
        yield from _state_gauges(svc)
        yield from _store_gauges(svc)
    yield from _job_gauges(svc, store_ok)
    yield from _disk_gauges(svc)
    if store_ok:
        yield from _ledger_gauges(svc)
        yield from _scrub_gauges(svc)
    board = svc.dashboard.peek()
    if board is not None:
        stats = board.stats
        yield ("archive_snapshots", "Snapshots held (last statistics).", stats["snapshots"], {})
        for kind in ("logical", "file", "stored"):
            if stats[f"{kind}_bytes"] is not None:  # stored: once the store's census ran
                yield ("archive_bytes", BYTES_HELP, stats[f"{kind}_bytes"], {"kind": kind})
        ratio = stats["dedup_ratio"]
        if ratio is not None:
            help_text = "Logical over stored bytes (the store's last census)."
            yield ("archive_dedup_ratio", help_text, ratio, {})


def _sync_gauges(link: WorkflowLink | None) -> Iterator[Gauge]:
    """The sync loop's counters; all 0 where it does not run, and lag and pending 0 until
    its first round read the event log (nothing known to wait)."""
    counters = link.sync.counters.as_dict() if link is not None else {}
    for name in REPORTED:
        help_text = "Sync loop counters of this process since it started."
        yield ("sync_events", help_text, float(counters.get(name, 0)), {"counter": name})
    known = int(counters.get("pending", -1)) >= 0  # no lag to tell before the first round
    lag = int(counters["lag_ms"]) / 1000 if known else 0.0
    yield ("sync_event_lag_seconds", "Age of the oldest pending event (0: none known).", lag, {})
    pending = float(counters["pending"]) if known else 0.0
    yield ("sync_pending_events", "Events the last round left in the log.", pending, {})


def _job_gauges(svc: Services, store_ok: bool) -> Iterator[Gauge]:
    """Every job, 0 before its first run; ``verify`` and ``backup`` as the store recorded
    their last run, whichever process ran it (a command from cron: ``job_runs.py``)."""
    problems = 0.0
    for name in JOB_NAMES:
        status = latest(svc.jobs, svc.archive, name) if store_ok else svc.jobs.status(name)
        running = float(status is not None and status.active)
        yield ("job_running", "1 while the job runs.", running, {"job_name": name})
        failed = float(status is not None and status.state == JobState.FAILED)
        yield ("job_failed", "1 when the job's last run failed.", failed, {"job_name": name})
        if name == "verify" and status is not None:
            found = status.result.get("problem_count")
            problems = float(found) if isinstance(found, int) else 0.0
    help_text = "Problems the last verify found (0 before the first)."
    yield ("verify_problems", help_text, problems, {})


def _ledger_gauges(svc: Services) -> Iterator[Gauge]:
    """The ledger (docs/ledger.md): its size, its last checkpoint, its last verify."""
    try:
        status = ledger_status(svc.archive, svc.ledger)
    except ArchiveError:
        return
    yield ("ledger_entries", "Entries in the ledger's log.", float(status["size"]), {})
    at = (status["checkpoint_at"] or 0) / 1000
    help_text = "Unix time of the last signed checkpoint (0: none yet)."
    yield ("ledger_checkpoint_seconds", help_text, at, {})
    signed = float(status["checkpoint_size"] or 0) if status["checkpoint_at"] else 0.0
    yield ("ledger_checkpoint_entries", "Entries the last checkpoint signs.", signed, {})
    verify = status["last_verify"]
    problems = float(verify.get("problems", 0)) if verify else 0.0  # an altered snapshot: one
    help_text = "Problems the last ledger verify found (0 before the first)."
    yield ("ledger_verify_problems", help_text, problems, {})
    if verify:
        done = float(verify.get("finished", 0)) / 1000
        yield ("ledger_verify_seconds", "Unix time the last ledger verify finished.", done, {})
    if svc.ledger is not None:
        signs = float(bool(status.get("signs_here")))
        yield ("ledger_signs", "1 when this process holds the ledger's key.", signs, {})


def _scrub_gauges(svc: Services) -> Iterator[Gauge]:
    """The scrub (docs/operations.md): coverage, pace, findings; the same in every replica
    (its state is in the store)."""
    try:
        status = svc.archive.scrub_status(svc.settings.scrub_period)
    except ArchiveError:
        return
    started = bool(status["started"])
    covered = float(status["covered_share"]) if started else 0.0
    help_text = "Share of the archive the scrub checked within ARCHIVE_SCRUB_PERIOD."
    yield ("scrub_covered_ratio", help_text, covered, {})
    cycle = float(status["cycle_share"]) if started else 0.0
    yield ("scrub_cycle_ratio", "How far the scrub's current cycle is (0 to 1).", cycle, {})
    due = float(status["due_share"]) if started else 0.0
    help_text = "How far the scrub's current cycle should be by now to end within the period."
    yield ("scrub_due_ratio", help_text, due, {})
    findings = float(status["finding_count"]) if started else 0.0
    yield ("scrub_findings", "Problems the scrub found and has not seen mended.", findings, {})
    if started and status.get("last_run"):
        at = int(status["last_run"]["at"]) / 1000
        yield ("scrub_last_slice_seconds", "Unix time of the scrub's last slice.", at, {})
    if started and status.get("last_cycle"):
        at = int(status["last_cycle"]["finished"]) / 1000
        help_text = "Unix time the scrub's last full cycle ended."
        yield ("scrub_last_cycle_seconds", help_text, at, {})


def _backup_gauges(link: WorkflowLink | None, started: dt.datetime) -> Iterator[Gauge]:
    """The FTPS backup of snapshot.backup events (BACKUP_FTP_HOST); 0 where it is not
    configured, and before its first round."""
    status = link.backup if link is not None else None
    configured = float(status is not None)
    yield ("backup_configured", "1 when BACKUP_FTP_HOST is set.", configured, {})
    running = float(link is not None and status is not None and link.backup_running)
    yield ("backup_running", "1 while this process runs the FTPS backup of events.", running, {})
    help_text = "Outcomes of snapshot.backup events in this process since it started."
    totals = status.totals if status is not None else dict.fromkeys(OUTCOMES, 0)
    for outcome, count in totals.items():
        yield ("backup_events", help_text, float(count), {"outcome": outcome})
    rounds = float(status.rounds) if status is not None else 0.0
    yield ("backup_rounds", "FTPS backup rounds since the process started.", rounds, {})
    done = status.last if status is not None else None
    failures = float(done.failures) if done is not None else 0.0
    yield ("backup_round_failures", "Failures in the last FTPS backup round.", failures, {})
    pending = float(done.pending) if done is not None else 0.0
    help_text = "snapshot.backup events the last round left in the log (at least)."
    yield ("backup_pending_events", help_text, pending, {})
    if done is not None:
        at = (done.finished or done.started).timestamp()
        yield ("backup_last_round_seconds", "Unix time of the last FTPS backup round.", at, {})
    success = status.last_success if status is not None else None
    at = (success or started).timestamp()
    help_text = (
        "Unix time of the last FTPS backup round without a failure (before the first: the "
        "time the process started)."
    )
    yield ("backup_last_success_seconds", help_text, at, {})


JAVA_SCOPE = {"mp_scope": "application"}
"""The label MicroProfile Metrics 5 (the Java backup service's) puts on its counters."""


def java_counters(svc: Services) -> Iterator[Gauge]:
    """This process's counts under the Java services' metric names (docs/web.md): the
    backup service's ``backup_events_processed`` and ``backup_events_errors`` (as
    MicroProfile Metrics 5 writes them), the archive service's ``documents{method}`` (as
    its MetricService wrote them, ``application_`` first): snapshots archived and
    removed by the sync."""
    link = svc.workflow
    if link is None:
        return
    status = link.backup
    if status is not None:
        totals = status.totals
        done = totals["written"] + totals["current"] + totals["gone"]
        help_text = "Imixs-Backup Service - processed backup events"
        yield ("backup_events_processed", help_text, float(done), JAVA_SCOPE)
        failed = totals["failed"] + totals["given_up"]
        yield ("backup_events_errors", help_text, float(failed), JAVA_SCOPE)
    if not link.sync_off:
        counters = link.sync.counters.as_dict()
        archived = float(counters["archived"]) + float(counters["caught_up"])
        help_text = "Imixs-Workflow count documents"
        yield ("application_documents", help_text, archived, {"method": "archive"})
        yield ("application_documents", help_text, float(counters["removed"]), {"method": "delete"})


def _store_gauges(svc: Services) -> Iterator[Gauge]:
    findings = float(len(svc.archive.storage.findings()))
    help_text = "Damage the store found on its own (a lost log): see verify and the Monitor."
    yield ("store_findings", help_text, findings, {})
    letters = float(len(dead_letters(svc.archive)))
    yield ("sync_dead_letters", "Dead letters kept in the archive.", letters, {})


def _disk_gauges(svc: Services) -> Iterator[Gauge]:
    """The embedded store's disk (Cassandra's nodes report their own)."""
    path = svc.archive.storage.describe().get("path")
    if not isinstance(path, str) or not path:
        return
    try:
        free = shutil.disk_usage(Path(path).parent).free
    except OSError:
        return
    yield ("disk_free_bytes", "Free bytes on the embedded store's disk.", float(free), {})
    needed = float(svc.settings.min_free_mb * 2**20)
    yield ("disk_min_free_bytes", "ARCHIVE_MIN_FREE_MB, in bytes.", needed, {})


def _state_gauges(svc: Services) -> Iterator[Gauge]:
    try:
        state = svc.archive.state.load()
    except ArchiveError:
        return
    point = state.get_first("sync.point")
    if isinstance(point, int) and point > 0:
        seconds = point / 1000
        lag = dt.datetime.now(dt.UTC).timestamp() - seconds
        yield ("sync_point_seconds", "The sync point as a Unix time.", seconds, {})
        yield ("sync_point_age_seconds", "Now minus the sync point.", lag, {})
    for item, name, help_text in SYNC_GAUGES:
        value = state.get_first(item)
        if isinstance(value, int):
            yield (name, help_text, float(value), {})

"""The workflow side of the service: the sync loop, resync, dead letters and restore.

With ``WORKFLOW_SERVICE_ENDPOINT`` set, the app builds one :class:`WorkflowLink`: a
workflow client and the sync loop over it (``sync.jobs.open_sync``, as the
CLI's ``sync``; started with the app, stopped with it). The resync and restore jobs
(``sync.jobs``, ``recovery.restore_jobs``) run over its client, by the app's
job runner: one at a time, stoppable, progress shown live. Without it, every endpoint that
needs the workflow answers 503 "... is not configured: set WORKFLOW_SERVICE_ENDPOINT"; the
status endpoints still show what the store knows (the ``sync.*`` and ``restore.*`` items,
written by this or the Java service).
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from typing import Any

from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import Settings
from imixs_archive.document.plain import plain
from imixs_archive.errors import ArchiveError, ConfigError, NotFoundError
from imixs_archive.recovery.backup_events import BackupStatus, consume_backup_events
from imixs_archive.recovery.restore_jobs import RestoreRequest, run_restore
from imixs_archive.services.jobs import MAX_LISTED
from imixs_archive.sync.counters import Activity, activity, describe, pending_text
from imixs_archive.sync.jobs import open_sync
from imixs_archive.sync.status import sync_status

log = logging.getLogger(__name__)

RESTORE_ITEMS = (
    "restore.from",
    "restore.to",
    "restore.point",
    "restore.count",
    "restore.size",
    "restore.errors",
    "restore.status",
)


class WorkflowLink:
    """One workflow client and the sync loop over it, for the life of the app."""

    def __init__(self, settings: Settings, archive: Archive) -> None:
        self.endpoint = settings.workflow_service_endpoint.strip()
        self.settings = settings
        self.archive = archive
        self.sync = open_sync(archive, settings)
        self.config = self.sync.config
        self.client = self.sync.client
        self._thread: threading.Thread | None = None
        self.sync_off = settings.backup_only
        """``BACKUP_ONLY``: no sync in this process, only the FTPS backup of events."""
        self._backup_stop = threading.Event()
        self._backup_thread: threading.Thread | None = None
        self.backup: BackupStatus | None = None
        """The FTPS backup of snapshot.backup events (``BACKUP_FTP_HOST`` set): its rounds."""
        if settings.backup_ftp_host.strip():
            self.backup = BackupStatus(
                source="workflow" if settings.backup_only else "archive",
                interval=settings.workflow_sync_interval / 1000,
            )

    def start(self) -> None:
        if not self.sync_off:
            self._thread = self.sync.start()
        if self.backup is not None:
            self._backup_thread = threading.Thread(
                target=self._backup_events, name="backup-events", daemon=True
            )
            self._backup_thread.start()

    def _backup_events(self) -> None:
        """The Java backup service's work in this process: snapshot.backup events to FTPS."""
        try:
            consume_backup_events(
                self.settings, self.archive, stop=self._backup_stop, status=self.backup
            )
        except Exception as exc:  # a setting that cannot be used: /readyz says so
            if self.backup is not None:
                self.backup.last_error = f"{type(exc).__name__}: {exc}"
            log.error("backup: the FTPS backup of events cannot run: %s", exc)

    @property
    def backup_started(self) -> bool:
        return self._backup_thread is not None

    @property
    def backup_running(self) -> bool:
        thread = self._backup_thread
        return thread is not None and thread.is_alive()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def close(self, timeout: float = 10.0) -> None:
        self._backup_stop.set()
        if self._backup_thread is not None:
            self._backup_thread.join(timeout)
        self.sync.close(timeout)
        self.client.close()

    def live_snapshot_id(self, uniqueid: str) -> tuple[str | None, str | None]:
        """``(the $snapshotid the live workitem points to, why it is unknown)``: the Java
        Inspect page's marker. No workitem: ``(None, None)``; the workflow could not be
        asked: ``(None, the reason)``."""
        try:
            live = self.client.get_document(uniqueid, ["$snapshotid"])
        except NotFoundError:
            return None, None
        except ArchiveError as exc:
            return None, str(exc)
        snapshot_id = live.get_first("$snapshotid")
        return (str(snapshot_id) if snapshot_id else None), None

    def restore_snapshot(self, snapshot_id: str) -> bool:
        request = RestoreRequest(snapshot=snapshot_id)
        return run_restore(request, self.archive, self.client).sent


def not_configured(feature: str) -> ConfigError:
    return ConfigError(f"{feature} is not configured: set WORKFLOW_SERVICE_ENDPOINT")


def sync_overview(archive: Archive, link: WorkflowLink | None) -> dict[str, Any]:
    """Sync state from the store (point, counts, processes, dead letters) and this
    process's loop (running, counters, event lag)."""
    status = sync_status(archive)
    data = {
        key: plain(value) if not isinstance(value, list | dict) else value
        for key, value in status.as_dict().items()
    }
    point_age = None
    if status.point:
        point_age = round(dt.datetime.now(dt.UTC).timestamp() - status.point / 1000, 3)
    counters = link.sync.counters.as_dict() if link is not None else None
    loop = None
    if link is not None and counters is not None:
        loop = activity(counters, link.config.initial_delay_ms)
        if not link.running and counters["state"] != "stopped":
            loop = ("not running", None, "")
    message = (
        "sync is not configured: set WORKFLOW_SERVICE_ENDPOINT"
        if link is None
        else "the sync is off (BACKUP_ONLY): this process only backs up snapshot.backup "
        "events to FTPS"
        if link.sync_off
        else f"syncing from {link.endpoint}"
        if link.running
        else "the sync loop is not running"
    )
    return {
        "configured": link is not None,
        "off": link is not None and link.sync_off,
        "running": link is not None and link.running,
        "endpoint": link.endpoint if link is not None else None,
        "message": message,
        **data,
        "point_age_seconds": point_age,
        # the event sync counts per process; sync.point and sync.count are the resync's
        "archived_by_sync": sum(int(row.get("archived") or 0) for row in status.instances),
        "lag_seconds": _lag_seconds(counters),
        "counters": counters,
        "activity": _activity(loop),
        "pending": pending_text(counters) if counters is not None else None,
    }


def _lag_seconds(counters: dict[str, Any] | None) -> float | None:
    """Age of the oldest pending event at the last round; None before the first round
    read the event log (not a lag of 0)."""
    if counters is None or int(counters["pending"]) < 0:
        return None
    return int(counters["lag_ms"]) / 1000


def _activity(loop: Activity | None) -> dict[str, Any] | None:
    """What the loop is doing: in words, and the seconds to its next round apart (the
    Monitor counts them down)."""
    if loop is None:
        return None
    before, seconds, after = loop
    return {"text": describe(loop), "before": before, "seconds": seconds, "after": after}


def restore_overview(archive: Archive, link: WorkflowLink | None) -> dict[str, Any]:
    state = archive.state.load()
    return {
        "configured": link is not None,
        "message": "restore is not configured: set WORKFLOW_SERVICE_ENDPOINT"
        if link is None
        else f"restores into {link.endpoint}",
        "state": {name: plain(state.get_first(name)) for name in RESTORE_ITEMS},
        "failed": [str(v) for v in state.get_values("restore.failed")][:MAX_LISTED],
        "plan": {
            name: plain(state.get_first(f"restore.plan.{name}"))
            for name in ("key", "status", "restored", "total", "after")
        }
        | {"failed": [str(v) for v in state.get_values("restore.plan.failed")][:MAX_LISTED]},
    }

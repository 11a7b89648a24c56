"""Off-machine backup over FTPS, as the Java backup service does it, so it can be retired.

* :func:`backup_to_ftps`: the newest snapshot of each instance (or of a day range) from the
  archive to the FTPS tree, on demand (``backup ftps://...``).
* :class:`BackupEvents`: consumes the ``snapshot.backup`` events the sync emits (with
  ``BACKUP_SERVICE_ENDPOINT`` set; ``snapshot.backup.<BACKUP_MIRROR_ID>`` for a mirror):
  each event's snapshot goes from the archive to the FTPS tree, then the event is deleted.
  An FTPS failure leaves the event (unlocked) for the next round: nothing is lost.
* :func:`restore_from_ftps`: walks the ``yyyy/MM`` tree and posts each snapshot the
  workflow lacks, with ``$backuprestore`` set (``restore --source ftps://...``).
"""

from __future__ import annotations

import datetime as dt
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import Settings
from imixs_archive.errors import ArchiveError, NotFoundError, TargetUnavailableError
from imixs_archive.periodic import Periodic
from imixs_archive.recovery.backup import BackupSummary, backup_path, newest_per_instance
from imixs_archive.recovery.ftps import FtpsLocation, FtpsTarget
from imixs_archive.recovery.restore_files import TreeRestoreReport, restore_stream
from imixs_archive.workflow.client import WorkflowClient
from imixs_archive.workflow.errors import WorkflowError
from imixs_archive.workflow.events import TOPIC_BACKUP

SPOOL_IN_MEMORY = 4 * 1024 * 1024


def put_snapshot(
    archive: Archive, target: FtpsTarget, snapshot_id: str, *, overwrite: bool
) -> int | None:
    """Write one snapshot (files merged back) as its instance's backup file; the bytes
    sent, or None when the file already holds it or a newer one (and not ``overwrite``)."""
    xml = archive.xml_with_files(snapshot_id)
    relative = backup_path(Path(), xml.created, snapshot_id, False).as_posix()
    if not overwrite and not target.needs(relative, snapshot_id):
        return None
    return target.store(relative, xml.iter_bytes(), snapshot_id)


def backup_to_ftps(
    archive: Archive,
    target: FtpsTarget,
    *,
    first: dt.date | None = None,
    last: dt.date | None = None,
    tz: dt.tzinfo = dt.UTC,
    overwrite: bool = False,
) -> BackupSummary:
    """The newest snapshot of each instance to the FTPS tree. A target that cannot be
    reached stops the backup at once (``TargetUnavailableError``, saying what was done):
    every other instance would fail alike."""
    summary = BackupSummary()
    for snapshot_id in newest_per_instance(archive, first, last, tz):
        try:
            sent = put_snapshot(archive, target, snapshot_id, overwrite=overwrite)
        except TargetUnavailableError as exc:
            raise TargetUnavailableError(
                f"{exc} (backup stopped: {summary.written} written, {summary.current} already "
                f"current, {summary.failed} failed before it; run it again when the server "
                "answers)"
            ) from None
        except ArchiveError as exc:
            summary.failed += 1
            summary.failures.append(f"{snapshot_id}: {exc}")
            continue
        if sent is None:
            summary.current += 1
        else:
            summary.written += 1
            summary.bytes_written += sent
    return summary


@dataclass
class EventRound:
    written: int = 0
    current: int = 0
    failed: list[str] = field(default_factory=list)


class BackupEvents:
    """The consumer of ``snapshot.backup[.<mirror>]`` events."""

    def __init__(
        self,
        archive: Archive,
        client: WorkflowClient,
        target: FtpsTarget,
        *,
        mirror: str = "",
        overwrite: bool = False,
        batch: int = 100,
    ) -> None:
        self.archive, self.client, self.target = archive, client, target
        self.topic = f"{TOPIC_BACKUP}.{mirror}" if mirror else TOPIC_BACKUP
        self.overwrite = overwrite
        self.batch = batch

    def run_round(self) -> EventRound:
        """One pass over the waiting events. The FTPS server failing ends the round (the
        events stay); a snapshot the archive lacks is reported and its event stays too."""
        done = EventRound()
        for event in self.client.read_events([self.topic], max_count=self.batch):
            if not self.client.lock_event(event.id):
                continue
            try:
                sent = put_snapshot(self.archive, self.target, event.ref, overwrite=self.overwrite)
            except NotFoundError as exc:
                self.client.unlock_event(event.id)
                done.failed.append(f"{event.ref}: {exc}")
                continue
            except ArchiveError as exc:
                self.client.unlock_event(event.id)
                done.failed.append(f"{event.ref}: {exc}")
                break  # the target is failing: try again next round
            if sent is None:
                done.current += 1
            else:
                done.written += 1
            self.client.delete_event(event.id)
        return done

    def run(
        self, interval: float, stop: threading.Event, report: Callable[[EventRound], None]
    ) -> None:
        """Rounds until ``stop``, one every ``interval`` seconds (the first at once); a
        workflow or target that fails pauses until the next."""

        def one_round() -> None:
            try:
                done = self.run_round()
            except WorkflowError as exc:
                done = EventRound(failed=[f"workflow: {exc}"])
            except ArchiveError as exc:  # the store failing: the events wait
                done = EventRound(failed=[str(exc)])
            report(done)

        Periodic("backup-events", interval, one_round, at_once=True, stop=stop).run()


def restore_from_ftps(
    client: WorkflowClient,
    target: FtpsTarget,
    *,
    stop: threading.Event | None = None,
    on_progress: Callable[[TreeRestoreReport], None] | None = None,
    dry_run: bool = False,
) -> TreeRestoreReport:
    """Post every snapshot of the FTPS tree the workflow lacks (``dry_run``: list them).
    A file that cannot be read (the connection dropped) is reported and the walk goes on
    on a new connection; a new connection that cannot be had stops it
    (``TargetUnavailableError``)."""
    report = TreeRestoreReport()
    for relative in list(target.backup_files()):
        if stop is not None and stop.is_set():
            report.stopped = True
            break
        with tempfile.SpooledTemporaryFile(SPOOL_IN_MEMORY) as spool:
            try:
                target.retrieve(relative, spool)
                spool.seek(0)
                restore_stream(client, spool, report, dry_run=dry_run)
            except TargetUnavailableError as exc:  # every other file would fail alike
                raise TargetUnavailableError(
                    f"{exc} (restore stopped: {report.restored} restored before it)"
                ) from None
            except ArchiveError as exc:
                report.failed.append(f"{relative}: {exc}")
        if on_progress is not None:
            on_progress(report)
    return report


def consume_backup_events(
    settings: Settings,
    archive: Archive,
    *,
    once: bool = False,
    stop: threading.Event | None = None,
    on_round: Callable[[EventRound], None] | None = None,
) -> EventRound | None:
    """The FTPS backup of ``snapshot.backup`` events as the settings describe it (the
    workflow, the FTPS target, the mirror, overwrite, batch and interval), for the CLI's
    ``backup-events`` and for ``serve``: one round (``once``: its report), or rounds every
    ``WORKFLOW_SYNC_INTERVAL`` until ``stop``, each reported to ``on_round``."""
    with (
        WorkflowClient.from_settings(settings) as client,
        FtpsTarget(FtpsLocation.from_settings(settings)) as target,
    ):
        events = BackupEvents(
            archive,
            client,
            target,
            mirror=settings.backup_mirror_id.strip(),
            overwrite=settings.backup_ftp_overwrite,
            batch=settings.workflow_sync_batch,
        )
        if once:
            return events.run_round()
        report = on_round or (lambda _done: None)
        events.run(settings.workflow_sync_interval / 1000, stop or threading.Event(), report)
    return None

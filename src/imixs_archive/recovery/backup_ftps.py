"""Off-machine backup over FTPS, as the Java backup service does it, so it can be retired.

* :func:`backup_to_ftps`: the newest snapshot of each instance (or of a day range) from the
  archive to the FTPS tree, on demand (``backup ftps://...``).
* :func:`put_snapshot` and :func:`pull_snapshot`: one snapshot to the FTPS tree, from the
  archive or from the workflow; the consumer of ``snapshot.backup`` events
  (``backup_events.py``) writes with them.
* :func:`ftps_files`: the ``yyyy/MM`` tree's files, for ``restore_files`` to post each
  snapshot the workflow lacks, with ``$backuprestore`` set (``restore --source ftps://...``).
"""

from __future__ import annotations

import datetime as dt
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import IO, TypedDict, Unpack

from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.xml_reader import iter_xml_documents
from imixs_archive.document.xml_writer import iter_xml
from imixs_archive.errors import ArchiveError, DocumentError, TargetUnavailableError
from imixs_archive.recovery.backup import (
    ALL_DAYS,
    DayRange,
    backup_path,
    newest_per_instance,
    record_outcome,
)
from imixs_archive.recovery.backup_book import BackupSummary
from imixs_archive.recovery.ftps import FtpsLocation, FtpsTarget
from imixs_archive.recovery.restore_files import (
    BackupFile,
    spooled_files,
)
from imixs_archive.services.job_runs import recorded
from imixs_archive.workflow.client import WorkflowClient

SPOOL_IN_MEMORY = 4 * 1024 * 1024


def put_snapshot(
    archive: Archive, target: FtpsTarget, snapshot_id: str, *, overwrite: bool
) -> int | None:
    """Write one snapshot (files merged back) as its instance's backup file; the bytes
    sent, or None when the file already holds it or a newer one (and not ``overwrite``)."""
    xml = archive.xml_with_files(snapshot_id)
    when = target.location.month_time(xml.created)
    relative = backup_path(Path(), when, snapshot_id, False).as_posix()
    if not overwrite and not target.needs(relative, snapshot_id):
        return None
    return target.store(relative, xml.iter_bytes(), snapshot_id)


def pull_snapshot(
    client: WorkflowClient, target: FtpsTarget, snapshot_id: str, *, overwrite: bool
) -> int | None:
    """As :func:`put_snapshot`, the snapshot as the workflow holds it (``GET
    /documents/{id}``, attachments spooled, never whole in memory), as the Java backup
    service takes every snapshot. ``NotFoundError`` when the workflow has none (404)."""
    with spooled_files() as sink, client.stream_document(snapshot_id) as blocks:
        for doc in iter_xml_documents(blocks, file_sink=sink):
            if doc.get_first("$uniqueid") == snapshot_id:
                break
        else:
            raise DocumentError(f"the workflow's answer for {snapshot_id} holds no snapshot")
        created = doc.get_first("$created") or doc.get_first("$modified")
        when = created if isinstance(created, dt.datetime) else None
        month = target.location.month_time(when)
        relative = backup_path(Path(), month, snapshot_id, False).as_posix()
        if not overwrite and not target.needs(relative, snapshot_id):
            return None
        return target.store(relative, iter_xml(doc, collection=False), snapshot_id)


def backup_to_ftps(
    archive: Archive,
    target: FtpsTarget,
    *,
    days: DayRange = ALL_DAYS,
    overwrite: bool = False,
    on_snapshot: Callable[[str], None] | None = None,
) -> BackupSummary:
    """The newest snapshot of each instance to the FTPS tree (``on_snapshot`` is called
    with each id first: a job counts and stops there). A target that cannot be reached
    stops the backup at once (``TargetUnavailableError``, saying what was done): every
    other instance would fail alike."""
    summary = BackupSummary()
    for snapshot_id in newest_per_instance(archive, days):
        if on_snapshot is not None:
            on_snapshot(snapshot_id)
        try:
            sent = put_snapshot(archive, target, snapshot_id, overwrite=overwrite)
        except TargetUnavailableError as exc:
            raise TargetUnavailableError(
                f"{exc} (backup stopped: {summary.written} written, {summary.current} already "
                f"current, {summary.failed} failed before it; run it again when the server "
                "answers)"
            ) from None
        except ArchiveError as exc:
            summary.fail(snapshot_id, exc)
            continue
        if sent is None:
            summary.current += 1
        else:
            summary.written += 1
            summary.bytes_written += sent
    return summary


class FtpsAsked(TypedDict, total=False):
    """The keywords of :func:`backup_to_ftps`."""

    days: DayRange
    overwrite: bool
    on_snapshot: Callable[[str], None] | None


def backup_to_location(
    archive: Archive, location: FtpsLocation, **asked: Unpack[FtpsAsked]
) -> BackupSummary:
    """:func:`backup_to_ftps` into the FTPS target at ``location`` (``backup ftps://...``
    and the API's FTPS backup job), recorded as the last backup (``services/job_runs.py``)."""
    with recorded(archive, "backup") as outcome, FtpsTarget(location) as target:
        summary = backup_to_ftps(archive, target, **asked)
        record_outcome(outcome, summary, str(location))
    return summary


def ftps_files(target: FtpsTarget) -> Iterator[BackupFile]:
    """The backup files of the FTPS tree (``yyyy/MM``), each retrieved into a spool when it
    is opened: one that cannot be read (the connection dropped) fails alone and the next
    is read on a new connection; a new connection that cannot be had stops the restore
    (``TargetUnavailableError``)."""
    for relative in list(target.backup_files()):
        yield relative, partial(_retrieved, target, relative)


@contextmanager
def _retrieved(target: FtpsTarget, relative: str) -> Iterator[IO[bytes]]:
    with tempfile.SpooledTemporaryFile(SPOOL_IN_MEMORY) as spool:
        target.retrieve(relative, spool)
        spool.seek(0)
        yield spool

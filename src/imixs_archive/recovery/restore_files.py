"""Restore from a backup tree (files written by ``backup`` or the Java backup service)
into the workflow, posting only the snapshots the workflow does not have.

Each file is parsed as a stream; attachment bytes are spooled to temporary files (in
memory up to a few MB, on disk beyond), then streamed out again in the POST body.
"""

from __future__ import annotations

import datetime as dt
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import IO

from imixs_archive.document.model import BinaryStream, Document
from imixs_archive.document.xml_reader import iter_xml_documents
from imixs_archive.errors import ArchiveError, NotFoundError, TargetUnavailableError
from imixs_archive.services.sources import find_sources
from imixs_archive.workflow.client import WorkflowClient, refuse_non_snapshot

SPOOL_IN_MEMORY = 4 * 1024 * 1024


class SpooledContent(BinaryStream):
    """Attachment bytes kept in a temporary file until they are sent."""

    def __init__(self, spool: IO[bytes], size: int) -> None:
        self._spool = spool
        self._size = size

    @property
    def size(self) -> int:
        return self._size

    def iter_bytes(self) -> Iterator[bytes]:
        self._spool.seek(0)
        while piece := self._spool.read(1024 * 1024):
            yield piece

    def close(self) -> None:
        self._spool.close()


class _Spooler:
    def __init__(self, opened: list[SpooledContent]) -> None:
        # Closed by SpooledContent.close() once the snapshot is sent, or by abort().
        self._spool: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)  # noqa: SIM115
        self._size = 0
        self._opened = opened

    def write(self, piece: bytes) -> None:
        self._spool.write(piece)
        self._size += len(piece)

    def close(self) -> SpooledContent:
        content = SpooledContent(self._spool, self._size)
        self._opened.append(content)
        return content

    def abort(self) -> None:
        self._spool.close()


@contextmanager
def spooled_files() -> Iterator[Callable[[str], _Spooler]]:
    """A ``file_sink`` for ``iter_xml_documents``: each attachment spooled (in memory up to
    4 MiB, then a temporary file) until the block ends, which closes them all."""
    opened: list[SpooledContent] = []
    try:
        yield lambda _name: _Spooler(opened)
    finally:
        _close(opened)


@dataclass
class TreeRestoreReport:
    restored: int = 0
    present: int = 0
    failed: list[str] = field(default_factory=list)
    stopped: bool = False
    planned: list[str] = field(default_factory=list)
    """In a dry run: the snapshot ids that would be posted."""


BackupFile = tuple[str, Callable[[], AbstractContextManager[IO[bytes]]]]
"""A backup file to restore from: its name (as a failure names it) and how to open it."""


def tree_files(root: Path) -> Iterator[BackupFile]:
    """The ``.xml`` files of a backup tree."""
    for source in find_sources([str(root)]):
        path = source.path
        if path is not None and path.suffix == ".xml":
            yield source.name, partial(_read, path)


def _read(path: Path) -> IO[bytes]:
    return path.open("rb")


def restore_files(
    client: WorkflowClient,
    files: Iterable[BackupFile],
    *,
    stop: threading.Event | None = None,
    on_progress: Callable[[TreeRestoreReport], None] | None = None,
    dry_run: bool = False,
) -> TreeRestoreReport:
    """Post every snapshot of the backup files (:func:`tree_files`, ``backup_ftps.py``:
    ``ftps_files``) the workflow lacks. ``stop`` ends the walk before the next file;
    ``on_progress`` is called after each file; ``dry_run`` lists what would be posted in
    ``planned`` and posts nothing. A file that cannot be read is reported and the walk
    goes on; a target that cannot be reached stops it (``TargetUnavailableError``, saying
    how far it came): every other file would fail alike."""
    report = TreeRestoreReport()
    for name, opened in files:
        if stop is not None and stop.is_set():
            report.stopped = True
            break
        try:
            with opened() as stream:
                restore_stream(client, stream, report, dry_run=dry_run)
        except TargetUnavailableError as exc:
            raise TargetUnavailableError(
                f"{exc} (restore stopped: {report.restored} restored before it)"
            ) from None
        except ArchiveError as exc:
            report.failed.append(f"{name}: {exc}")
        if on_progress is not None:
            on_progress(report)
    return report


def restore_stream(
    client: WorkflowClient, stream: IO[bytes], report: TreeRestoreReport, *, dry_run: bool = False
) -> None:
    """Post the snapshots of one backup file that the workflow lacks, with
    ``$backuprestore`` set; attachments are spooled, never held in memory whole.
    ``dry_run``: only note them in ``report.planned``."""
    opened: list[SpooledContent] = []

    def sink(_name: str) -> _Spooler:
        return _Spooler(opened)

    try:
        for doc in iter_xml_documents(stream, file_sink=sink):
            snapshot_id = str(doc.get_first("$uniqueid", ""))
            if _workflow_has(client, snapshot_id):
                report.present += 1
            elif dry_run:
                refuse_non_snapshot(doc)  # as the real run's post would
                report.planned.append(snapshot_id)
            else:
                mark_backup_restore(doc)
                client.post_snapshot(doc)
                report.restored += 1
            _close(opened)
    finally:
        _close(opened)


def mark_backup_restore(doc: Document) -> None:
    """``$backuprestore`` = now, as the Java backup service's restore sets it: the archive's
    sync then emits no backup event for the snapshot (it came from a backup)."""
    doc["$backuprestore"] = [dt.datetime.now(dt.UTC).replace(microsecond=0)]


def _workflow_has(client: WorkflowClient, snapshot_id: str) -> bool:
    try:
        client.get_document(snapshot_id, ["$uniqueid"])
    except NotFoundError:
        return False
    return True


def _close(opened: list[SpooledContent]) -> None:
    while opened:
        opened.pop().close()

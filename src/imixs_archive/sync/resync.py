"""Resync: walk the workflow's syncpoint feed and archive what is missing (section 4).

From a chosen point ``p`` (epoch ms): ``GET /snapshot/syncpoint/{p}`` answers the snapshots
with the smallest ``$modified`` later than ``p`` (every one sharing that timestamp; when
more than 16 share it the workflow answers 500, and that range is located, recorded as
skipped and passed, as the sync's catch-up does: ``sync/syncpoint_gap.py``); each
is archived (an archived one changes nothing), then ``sync.point`` moves to that
``$modified`` and ``sync.point``, ``sync.count`` (snapshots walked) and ``sync.size``
(bytes received) are saved in the service state, the Java service's items.
An empty answer ends the walk.

* Resumable: the point is saved after every step, so after a crash ``resync`` without
  ``--from`` goes on from the saved point (a step cut short is simply walked again).
* Cancellable: Ctrl-C in the process running it, or ``resync --cancel`` from another
  (a ``resync-stop`` row of its own in ``archive_sync_progress``, checked before every
  step; an item in the state document could be lost to the walk's next save). A
  cancelled resync can be run again, to the end (the Java service's flag was never reset).
* A workflow or store that is unavailable, or an answer cut short, is retried with
  backoff (credentials the workflow refuses end it at once: retrying cannot help); after
  ``max_attempts`` failures in a row the walk stops as ``failed`` at the
  saved point.

The state document is shared with the restore service: each save re-reads it and sets
only the ``sync.*``/``resync.*`` items, so the window in which another writer's change
could be overwritten is a few milliseconds.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from imixs_archive.archive.snapshots import Archive, StoreResult
from imixs_archive.document.model import Long
from imixs_archive.document.xml_reader import discard_files, iter_xml_documents
from imixs_archive.errors import ArchiveError, DocumentError
from imixs_archive.sync.syncpoint_gap import GAP_NOTE, GapLocator, is_feed_failure
from imixs_archive.timezones import epoch_ms, epoch_ms_of
from imixs_archive.workflow.client import WorkflowClient
from imixs_archive.workflow.errors import WorkflowAuthError, WorkflowUnavailableError

log = logging.getLogger("imixs_archive.resync")

SYNCPOINT_LIMIT = 16
RUNNING, CANCELLED, DONE, FAILED = "running", "cancelled", "done", "failed"


@dataclass
class ResyncResult:
    status: str
    point: int
    walked: int = 0
    new: int = 0
    bytes: int = 0
    failures: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    skipped: list[tuple[int, int]] = field(default_factory=list)
    """``$modified`` ranges the feed could not answer (more than 16 share a timestamp)."""


@dataclass
class _Step:
    ids: list[str]
    point: int
    new: int
    bytes: int
    failures: list[str]


class Resync:
    """One syncpoint walk over one archive and one workflow."""

    def __init__(
        self,
        archive: Archive,
        client: WorkflowClient,
        *,
        max_attempts: int = 8,
        retry_delay_ms: int = 1000,
        pause_max_ms: int = 60000,
        stopping: threading.Event | None = None,
    ) -> None:
        self.archive = archive
        self.client = client
        self.max_attempts = max(1, max_attempts)
        self.retry_delay_ms = retry_delay_ms
        self.pause_max_ms = pause_max_ms
        self.stopping = stopping or threading.Event()
        self.gaps = GapLocator(client, stopping=self.stopping)

    def run(self, start: int | None = None) -> ResyncResult:
        """Walk from ``start`` (epoch ms), or on from the saved ``sync.point``."""
        self.archive.sync_records.progress.clear_resync_stop()  # asked of an earlier walk
        state = self.archive.state.load()
        if start is None:
            start = _int_item(state.get_first("sync.point"))
            result = ResyncResult(RUNNING, start)
            self._save(result, begin=True)
        else:
            result = ResyncResult(RUNNING, start)
            self._save(result, begin=True, fresh=True)
        log.info("resync from %d", start)
        errors = 0
        while True:
            if self.stopping.is_set() or self._cancel_requested():
                return self._end(result, CANCELLED)
            try:
                step = self._step(result.point)
            except WorkflowUnavailableError as exc:
                passed = is_feed_failure(exc) and self._pass_gap(result)
                errors = 0 if passed else self._failed(result, exc, errors)
                if result.status == FAILED:
                    return result
                continue
            except WorkflowAuthError as exc:  # asking again with the same credentials: no
                result.failures.append(f"at {result.point}: {exc}")
                return self._end(result, FAILED, error=str(exc))
            except ArchiveError as exc:
                errors = self._failed(result, exc, errors)
                if result.status == FAILED:
                    return result
                continue
            errors = 0
            if step is None:
                return self._end(result, DONE)
            self._advance(result, step)

    def _failed(self, result: ResyncResult, exc: ArchiveError, errors: int) -> int:
        """A failed step: waits with backoff, or ends the walk as failed after
        ``max_attempts`` in a row. Returns the failures in a row."""
        errors += 1
        if errors >= self.max_attempts:
            result.failures.append(f"at {result.point}: {exc}")
            self._end(result, FAILED, error=str(exc))
            return errors
        wait = min(self.retry_delay_ms * 2 ** (errors - 1), self.pause_max_ms)
        log.warning("resync at %d: %s (again in %.1f s)", result.point, exc, wait / 1000)
        self.stopping.wait(wait / 1000)
        return errors

    def _pass_gap(self, result: ResyncResult) -> bool:
        """After a 500: when the feed lastingly cannot answer this point (more than 16
        snapshots share the next ``$modified``), record the range as skipped, as the
        catch-up does, and move past it. False: a passing failure, retried as any."""
        try:
            if self.gaps.answers(result.point):
                return False
            past = self.gaps.locate(result.point)
        except WorkflowUnavailableError:
            return False
        self.archive.sync_records.progress.skip(result.point + 1, past, "resync", GAP_NOTE)
        log.warning("resync: cannot read (%d, %d]: %s", result.point, past, GAP_NOTE)
        result.skipped.append((result.point + 1, past))
        result.warnings.append(
            f"snapshots with $modified in ({result.point}, {past}] could not be read: "
            f"{GAP_NOTE} (the event sync delivers them)"
        )
        result.point = past
        self._save(result)
        return True

    def _advance(self, result: ResyncResult, step: _Step) -> None:
        if len(step.ids) + len(step.failures) >= SYNCPOINT_LIMIT:
            result.warnings.append(
                f"{SYNCPOINT_LIMIT} snapshots share $modified {step.point}: the syncpoint feed "
                "returns at most 16, so more with that timestamp may exist (the event sync "
                "delivers them)"
            )
        result.point = step.point
        result.walked += len(step.ids)
        result.new += step.new
        result.bytes += step.bytes
        result.failures.extend(step.failures)
        self._save(result, walked=len(step.ids), size=step.bytes)

    def _step(self, point: int) -> _Step | None:
        received = [0]
        with self.client.stream_syncpoint(point) as blocks:
            outcomes = list(self.archive.ingest(_counted(blocks, received), name=f"at {point}"))
        if not outcomes:
            return None
        step = _Step([], point, 0, received[0], [])
        for outcome in outcomes:
            if isinstance(outcome, StoreResult):
                step.ids.append(outcome.snapshot_id)
                step.new += int(outcome.new)
            else:
                step.failures.append(f"{outcome[0]}: {outcome[1]}")
        step.point = self._modified(point, step.ids)
        return step

    def _modified(self, point: int, ids: list[str]) -> int:
        """The ``$modified`` the snapshots of this step share (read from the archive; when
        none could be archived, from the workflow's answer read again, attachments
        streamed past)."""
        found: list[int] = []
        for snapshot_id in ids:
            doc = self.archive.load(snapshot_id, with_files=False)
            found.extend(m for m in [epoch_ms_of(doc.get_first("$modified"))] if m is not None)
        if not found:
            with self.client.stream_syncpoint(point) as blocks:
                docs = iter_xml_documents(blocks, file_sink=discard_files)
                found = [
                    m for d in docs if (m := epoch_ms_of(d.get_first("$modified"))) is not None
                ]
        later = [m for m in found if m > point]
        if not later:
            raise DocumentError(f"the syncpoint answer after {point} has no later $modified")
        return max(later)

    # ---- state --------------------------------------------------------------------------

    def _cancel_requested(self) -> bool:
        return self.archive.sync_records.progress.resync_stop_asked()

    def _save(
        self,
        result: ResyncResult,
        *,
        begin: bool = False,
        fresh: bool = False,
        walked: int = 0,
        size: int = 0,
        error: str = "",
    ) -> None:
        state = self.archive.state.load()
        count = 0 if fresh else _int_item(state.get_first("sync.count"))
        total = 0 if fresh else _int_item(state.get_first("sync.size"))
        state["sync.point"] = Long(result.point)
        state["sync.count"] = Long(count + walked)
        state["sync.size"] = Long(total + size)
        state["resync.status"] = result.status
        state["resync.updated"] = dt.datetime.now(dt.UTC)
        state.pop("resync.cancel", None)  # where the stop was asked before its own row
        if begin:
            state["resync.started"] = dt.datetime.now(dt.UTC)
        if error or begin:
            state["resync.error"] = error
        self.archive.state.save(state)

    def _end(self, result: ResyncResult, status: str, error: str = "") -> ResyncResult:
        result.status = status
        self._save(result, error=error)
        self.archive.sync_records.progress.clear_resync_stop()
        log.info(
            "resync %s at %d: %d walked, %d new", status, result.point, result.walked, result.new
        )
        return result


def request_cancel(archive: Archive, owner: str = "") -> bool:
    """Ask a running resync to stop (it checks before every step). False when none runs."""
    if resync_status(archive) != RUNNING:
        return False
    archive.sync_records.progress.ask_resync_stop(owner)
    return True


def stop_asked(archive: Archive) -> bool:
    """Whether a stop was asked of the running resync and it has not seen it yet."""
    return resync_status(archive) == RUNNING and archive.sync_records.progress.resync_stop_asked()


def resync_status(archive: Archive) -> str:
    return str(archive.state.load().get_first("resync.status") or "")


def _int_item(value: Any) -> int:
    if isinstance(value, bool) or value is None:
        return 0
    if isinstance(value, dt.datetime):
        return epoch_ms(value)
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _counted(blocks: Iterator[bytes], total: list[int]) -> Iterator[bytes]:
    for block in blocks:
        total[0] += len(block)
        yield block

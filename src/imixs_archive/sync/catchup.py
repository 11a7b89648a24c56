"""The catch-up: a continuous walk over ``/snapshot/syncpoint`` behind the event log.

The event log alone cannot guarantee that every snapshot arrives: the workflow's
``release`` deletes locked events (a Java archive beside calls it every few seconds), and
a Java archive beside consumes events itself. So the sync also walks the workflow's own
list of snapshots in ``$modified`` order, from a point before which every snapshot the
workflow holds is known to be archived, and archives whatever is missing (an archived
snapshot changes nothing). The point (``archive_sync_progress`` row ``catchup``) only moves
to a ``$modified`` at least ``lag`` ms in the past, so that a snapshot whose transaction
commits after a later one's (or whose clock runs behind) is not passed by.

``GET /snapshot/syncpoint/{p}`` answers **500** when more than 16 snapshots share the
next ``$modified``. A 500 that persists is located (``sync/syncpoint_gap.py``); the
range is recorded as skipped (``sync --status``, the monitor) and the walk goes on after
it. Those snapshots still come through the event log. A workflow that answers 500 for
every ``q`` up to now is unavailable, not overflowing: nothing is skipped.

When a process starts with no point recorded, the point is the present minus the lag
(``resync --from`` walks older history once).
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from xml.parsers import expat

from imixs_archive.archive.snapshots import Archive, StoreResult
from imixs_archive.document.xml_reader import discard_files, iter_xml_documents
from imixs_archive.document.xml_scan import DoctypeRefused, scanner
from imixs_archive.errors import ArchiveError, DocumentError
from imixs_archive.sync.failures import record_failure
from imixs_archive.sync.syncpoint_gap import GAP_NOTE, GapLocator, is_feed_failure
from imixs_archive.timezones import epoch_ms, epoch_ms_of, now_ms
from imixs_archive.workflow.client import WorkflowClient
from imixs_archive.workflow.errors import WorkflowUnavailableError
from imixs_archive.workflow.events import TOPIC_ADD

log = logging.getLogger("imixs_archive.sync.catchup")
SAVE_EVERY_S = 1.0


@dataclass
class CatchUpResult:
    steps: int = 0
    walked: int = 0
    new: int = 0
    more: bool = False
    """Stopped by its time budget with more to walk."""
    point: int = 0
    skipped: list[tuple[int, int]] = field(default_factory=list)


def _scan(blocks: Iterable[bytes]) -> list[tuple[str, int | None]] | None:
    """($uniqueid, $modified in epoch ms) of each document of an Imixs XML answer, read
    with a parser that looks at nothing else (the full reader costs several times more per
    snapshot). None when a value is not the plain kind expected: read it properly then.

    Text the scan does not need (an attachment's base64 above all) goes around expat:
    when expat has taken every byte given and stands in character data outside the two
    items, the bytes up to the next ``<`` are passed over unparsed. An answer's bytes are
    mostly such text, which expat reads at a fifth of the rate of this skip."""
    found: list[tuple[str, int | None]] = []
    state: dict[str, Any] = {"depth": 0, "item": None, "text": [], "doc": {}, "cdata": False}

    def start(tag: str, attrs: dict[str, str]) -> None:
        local = tag.rpartition(" ")[2]
        state["depth"] += 1
        if local == "document" and state["depth"] <= 2:
            state["doc"] = {}
        elif local == "item" and state["depth"] == 3:
            name = attrs.get("name")
            state["item"] = name if name in ("$uniqueid", "$modified") else None
        state["text"] = []

    def end(tag: str) -> None:
        local = tag.rpartition(" ")[2]
        depth = state["depth"]
        state["depth"] -= 1
        if local == "value" and depth == 4 and state["item"] is not None:
            state["doc"].setdefault(state["item"], "".join(state["text"]).strip())
        elif local == "item" and depth == 3:
            state["item"] = None
        elif local == "document" and depth <= 2:
            doc = state["doc"]
            found.append((doc.get("$uniqueid", ""), _iso_millis(doc.get("$modified", ""))))

    def text(data: str) -> None:
        if state["item"] is not None:
            state["text"].append(data)

    def cdata(inside: bool) -> None:
        state["cdata"] = inside

    parser = scanner(start, end, text, namespaces=True)
    parser.StartCdataSectionHandler = lambda: cdata(True)
    parser.EndCdataSectionHandler = lambda: cdata(False)
    given = 0  # bytes expat was given
    try:
        for block in blocks:
            if state["item"] is None and not state["cdata"] and parser.CurrentByteIndex == given:
                markup = block.find(b"<")
                block = block[markup:] if markup >= 0 else b""
            if block:
                parser.Parse(block, False)
                given += len(block)
        parser.Parse(b"", True)
    except expat.ExpatError as exc:
        raise DocumentError(f"malformed XML in the syncpoint answer: {exc}") from None
    except DoctypeRefused:  # the full reader, which refuses it, says why
        return None
    if any(not sid or millis is None for sid, millis in found):
        return None
    return found


def _iso_millis(text: str) -> int | None:
    try:
        return epoch_ms(dt.datetime.fromisoformat(text))
    except ValueError:
        return None


class InFlight:
    """The snapshots one sync process is downloading now, by its workers or its walk: the
    other leaves them alone rather than download them a second time (both walk the same
    backlog after an outage)."""

    def __init__(self) -> None:
        self._refs: set[str] = set()
        self._lock = threading.Lock()

    def take(self, refs: list[str]) -> bool:
        """Take all of them, or none when one is taken already."""
        with self._lock:
            if any(ref in self._refs for ref in refs):
                return False
            self._refs.update(refs)
            return True

    def release(self, refs: list[str]) -> None:
        with self._lock:
            self._refs.difference_update(refs)


class _Overflow(Exception):
    """The syncpoint answer for this point is a lasting 500."""


class CatchUp:
    """The walk of one sync process; :meth:`run` does as much as a time budget allows."""

    def __init__(
        self,
        archive: Archive,
        client: WorkflowClient,
        *,
        lag_ms: int,
        instance: str,
        start: int | None = None,
        confirm: int = 6,
        stopping: threading.Event | None = None,
        in_flight: InFlight | None = None,
    ) -> None:
        self.archive = archive
        self.client = client
        self.lag_ms = max(0, lag_ms)
        self.instance = instance
        self.start = start
        self.stopping = stopping or threading.Event()
        self.in_flight = in_flight or InFlight()
        self.gaps = GapLocator(client, confirm, self.stopping)
        self.progress = archive.sync_records.progress
        self.failures = archive.sync_records.failures

    def current_point(self) -> int:
        known = self.progress.point()
        if known is not None:
            return known.point
        first = self.start if self.start is not None else now_ms() - self.lag_ms
        return self.progress.advance(first, self.instance)

    def run(self, budget_s: float) -> CatchUpResult:
        """Walk until the present minus the lag, or until ``budget_s`` is spent.
        Raises ``WorkflowUnavailableError`` (pause) and ``StoreError``. The point is saved
        about once a second and at the end (after a crash, a little is walked again)."""
        deadline = time.monotonic() + budget_s
        result = CatchUpResult(point=self.current_point())
        saved, saved_at = result.point, time.monotonic()
        try:
            while not self.stopping.is_set():
                if time.monotonic() >= deadline:
                    result.more = True
                    break
                limit = now_ms() - self.lag_ms
                if result.point >= limit or not self._walk(result, limit):
                    break
                if result.point != saved and time.monotonic() - saved_at >= SAVE_EVERY_S:
                    result.point = saved = self.progress.advance(result.point, self.instance)
                    saved_at = time.monotonic()
        finally:
            if result.point != saved:
                result.point = self.progress.advance(result.point, self.instance)
        return result

    def _walk(self, result: CatchUpResult, limit: int) -> bool:
        """One step from ``result.point``; False when the walk ends here for now."""
        try:
            step = self._step(result.point, limit)
        except _Overflow:
            past = self.gaps.locate(result.point)
            if past > limit:
                return False
            self.progress.skip(result.point + 1, past, self.instance, GAP_NOTE)
            log.warning("catch-up: cannot read (%d, %d]: %s", result.point, past, GAP_NOTE)
            result.skipped.append((result.point + 1, past))
            result.point = past
            return True
        if step is None:
            return False
        modified, walked, new = step
        result.steps += 1
        result.walked += walked
        result.new += new
        if modified > limit:
            return False  # too recent to be sure nothing earlier is still to come
        result.point = modified
        return True

    def _step(self, point: int, limit: int, again: bool = True) -> tuple[int, int, int] | None:
        """The answer for ``point``: ($modified, snapshots, newly archived). Read first
        with attachments streamed past; only when a snapshot is missing is the answer
        read again into the archive, and only when it is not later than ``limit`` (the
        event log is still bringing those)."""
        try:
            with self.client.stream_syncpoint(point) as blocks:
                found = _scan(blocks)
        except WorkflowUnavailableError as exc:
            if not is_feed_failure(exc):
                raise
            if not self.gaps.answers(point):
                raise _Overflow() from exc
            if not again:
                raise
            return self._step(point, limit, again=False)
        if found is None:  # something the quick scan does not know: read it properly
            with self.client.stream_syncpoint(point) as blocks:
                docs = list(iter_xml_documents(blocks, file_sink=discard_files))
            found = [
                (str(doc.get_first("$uniqueid", "")), epoch_ms_of(doc.get_first("$modified")))
                for doc in docs
            ]
        if not found:
            return None
        modified = [m for _, m in found if m is not None]
        if not modified or max(modified) <= point:
            raise DocumentError(f"catch-up at {point}: the answer has no later $modified")
        if max(modified) > limit:
            return max(modified), 0, 0
        missing = [sid for sid, _ in found if not sid or not self.archive.exists(sid)]
        self._note_days(found, missing)
        new = 0
        if missing:
            if not self.in_flight.take(missing):
                return None  # the event path is on it: confirmed at the next walk
            try:
                new = self._store(point)
            finally:
                self.in_flight.release(missing)
        return max(modified), len(found), new

    def _note_days(self, found: list[tuple[str, int | None]], missing: list[str]) -> None:
        """The days of the snapshots archived already go into the day index if it lacks
        them: the Java service sharing the keyspace stores snapshots and never that
        index (once per day and process, ``Archive.days.note``)."""
        held = {m for sid, m in found if sid and m is not None and sid not in missing}
        for day in {dt.datetime.fromtimestamp(m / 1000, dt.UTC).date() for m in held}:
            self.archive.days.note(day)

    def _store(self, point: int) -> int:
        """Archive the answer for ``point``; how many snapshots were new."""
        with self.client.stream_syncpoint(point) as blocks:
            outcomes = list(self.archive.ingest(blocks, name=f"syncpoint {point}"))
        new = 0
        for outcome in outcomes:
            if isinstance(outcome, StoreResult):
                new += int(outcome.new)
            else:
                self._refused(point, *outcome)
        return new

    def _refused(self, point: int, where: str, error: ArchiveError) -> None:
        """A snapshot the archive refuses is a dead letter at once (the event path would
        fail on it the same way); the walk goes on."""
        ref = where.rsplit(", ", 1)[-1].rstrip(")") if ", " in where else f"at {point}"
        log.error("catch-up at %d: %s: %s", point, where, error)
        record_failure(
            self.failures,
            f"catchup:{ref}",
            TOPIC_ADD,
            ref,
            f"{where}: {error}",
            max_attempts=1,
            base_delay_ms=0,
        )

"""Import snapshot files (XML ``<document>``/``<data>``, or Imixs JSON) into the archive.

One bad file, or one bad document inside a good file, is reported and skipped; the rest
goes in. An unreachable store ends the import with its error (nothing is skipped then:
run it again). Files are streamed: attachment bytes never sit whole in memory (XML
input). :func:`import_sources` (the CLI's import) stores each snapshot on a thread of its
own while the next is parsed; :func:`archive_stream` (the HTTP push, ``web/push.py``) one
after the other.
"""

from __future__ import annotations

import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from types import TracebackType
from typing import IO, Any

from imixs_archive.archive.snapshots import Archive, Failure, Readable, StoreResult
from imixs_archive.document.json_stream import iter_json_stream
from imixs_archive.document.model import Document
from imixs_archive.errors import ArchiveError, StoreError, StoreUnavailableError
from imixs_archive.jsonable import Jsonable
from imixs_archive.services.sources import Source
from imixs_archive.services.workers import Send, Spread, run_in_workers
from imixs_archive.tallies import Failures, add_up


@dataclass
class ImportSummary(Failures, Jsonable):
    JSON_SKIP = ("exit_codes",)
    JSON_EXTRA = ("exit_code",)

    new: int = 0
    present: int = 0
    failed: int = 0
    logical_bytes: int = 0
    new_bytes: int = 0
    failures: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    exit_codes: set[int] = field(default_factory=set)
    """The exit codes of the errors met (3: bad input, ...)."""

    @property
    def exit_code(self) -> int:
        """0 if nothing failed; the code of the failures when they share one; else 1."""
        if not self.failed:
            return 0
        return next(iter(self.exit_codes)) if len(self.exit_codes) == 1 else 1

    def add(self, result: StoreResult) -> None:
        if result.new:
            self.new += 1
        else:
            self.present += 1
        self.logical_bytes += result.logical_bytes
        self.new_bytes += result.new_bytes
        self.warnings.extend(f"{result.snapshot_id}: {w}" for w in result.warnings)

    def merge(self, other: ImportSummary) -> None:
        add_up(self, other)

    def fail(self, where: str, error: object) -> None:
        super().fail(where, error)
        self.exit_codes.add(error.exit_code if isinstance(error, ArchiveError) else 1)


BytesRead = Callable[[int], None]


def import_sources(
    archive: Archive, sources: Iterable[Source], on_bytes: BytesRead | None = None
) -> ImportSummary:
    """Import the sources one after the other, each snapshot in input order: parsed in
    the caller's thread and, where every store request is a round trip (Cassandra),
    stored one behind it (:class:`_StoreBehind`). What it returns is
    durable: the input stays where it is, so its writes are made durable together at the
    end (``Archive.storage.durable_at_end``); a crash before leaves a prefix the next run
    completes."""
    summary = ImportSummary()
    with archive.storage.durable_at_end(), _StoreBehind(archive, summary) as behind:
        for source in sources:
            _import_one(archive, source, on_bytes, behind)
    return summary


def _import_one(
    archive: Archive, source: Source, on_bytes: BytesRead | None, behind: _StoreBehind
) -> None:
    try:
        with _open(source) as stream:
            counted = _Counted(stream, on_bytes)
            documents, read_ahead = _documents(archive, source, counted)
            for where, doc in documents:
                behind.store(where, doc, wait=not read_ahead)
    except StoreError:
        raise
    except ArchiveError as exc:
        behind.fail(source.name, exc)
    except OSError as exc:
        behind.fail(source.name, ArchiveError(exc.strerror or str(exc)))


STORED_BEHIND = 1
"""Parsed snapshots waiting for the store thread at most, besides the one it stores
(where the store's reads cross the network; else none, see :class:`_StoreBehind`)."""


def _depth(archive: Archive) -> int:
    """Snapshots stored behind the parser in this archive (see :class:`_StoreBehind`)."""
    return 0 if archive.storage.reads_are_local else STORED_BEHIND


class _StoreBehind:
    """Stores parsed snapshots on a thread of its own, one after the other in the order
    given, while the caller's thread reads and parses the next: a snapshot's store waits
    for its last pieces, then writes its file and index rows, round trips in a row on
    Cassandra, and the next snapshot's bytes are cut and hashed meanwhile. One thread, so
    snapshots are stored in input order as without it (a crash leaves a prefix). A file
    carried on to the next snapshot is found stored piece by piece, or its pieces' writes
    still under way are waited for, not sent again (``PieceStore.writing``). Outcomes
    reach the summary in input order, on the caller's thread; a ``StoreError`` ends the
    import there, after the snapshot being stored settles.

    Not on a local store (``Archive.storage.reads_are_local``: SQLite): there the parser compares a
    file with its stored twin, found by the files registered before, and a snapshot
    stored behind would not have registered the file the next one carries on (that
    import took 1.3x the CPU); nor are its round trips worth hiding."""

    def __init__(self, archive: Archive, summary: ImportSummary) -> None:
        self._archive = archive
        self._summary = summary
        self._behind = _depth(archive)
        self._stop = threading.Event()
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="store")
        self._waiting: deque[tuple[str, Future[StoreResult] | ArchiveError]] = deque()

    def store(self, where: str, doc: Document, *, wait: bool = False) -> None:
        """``wait``: until it is stored (its files are streams still to be read from the
        input, which the caller must not read further meanwhile)."""
        self._waiting.append((where, self._pool.submit(self._store, doc)))
        self._settle(0 if wait else self._behind)

    def _store(self, doc: Document) -> StoreResult:
        """On the store thread. After a ``StoreError``, or once the import stops (an error,
        Ctrl-C), nothing more is stored: the import ends where it would in one thread."""
        if self._stop.is_set():
            raise StoreUnavailableError("not stored: the import stopped before it")
        try:
            return self._archive.store(doc)
        except StoreError:
            self._stop.set()
            raise

    def fail(self, where: str, error: ArchiveError) -> None:
        self._waiting.append((where, error))
        self._settle(self._behind)

    def _settle(self, keep: int) -> None:
        """Outcomes into the summary, in order: those done, and more until ``keep`` wait."""
        while self._waiting:
            where, outcome = self._waiting[0]
            waits = isinstance(outcome, Future) and not outcome.done()
            if waits and len(self._waiting) <= keep:
                return
            self._waiting.popleft()
            if not isinstance(outcome, Future):
                self._summary.fail(where, outcome)
                continue
            try:
                self._summary.add(outcome.result())
            except StoreError:
                raise
            except ArchiveError as exc:
                self._summary.fail(where, exc)

    def __enter__(self) -> _StoreBehind:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        try:
            if kind is None:
                self._settle(0)
        finally:
            # After an error (or Ctrl-C): what has not started is dropped (the next run
            # imports it), the snapshot being stored finishes, nothing writes afterwards.
            self._stop.set()
            for _where, outcome in self._waiting:
                if isinstance(outcome, Future):
                    outcome.cancel()
            self._pool.shutdown(wait=True)
            self._waiting.clear()


def import_in_workers(
    spread: Spread,
    sources: list[Source],
    on_bytes: BytesRead | None = None,
    here: Archive | None = None,
) -> ImportSummary:
    """``import_sources`` over worker processes (see ``workers``), for files; ``here``:
    this process's archive, and this process imports too.

    Files go in contiguous batches (snapshots of one instance usually sit side by side,
    and a file carried from snapshot to snapshot is found stored when its neighbour went
    first). What is reported comes out in the order of the sources, as in one process."""
    by_batch: dict[int, ImportSummary] = {}

    def on_message(message: tuple[str, int, Any]) -> None:
        kind, number, value = message
        if kind == "bytes":
            if on_bytes is not None:
                on_bytes(value)
        else:
            by_batch.setdefault(number, ImportSummary()).merge(value)

    run_in_workers(spread, _ImportTask(), _batches(sources, spread.jobs), on_message, here)
    summary = ImportSummary()
    for number in sorted(by_batch):
        summary.merge(by_batch[number])
    return summary


PROGRESS_EVERY = 4 * 1024 * 1024
"""A worker reports the bytes it read at least this often (for the progress bar)."""
SHARE = 2
"""A batch takes 1/(SHARE * jobs) of the bytes not yet handed out ..."""
LEAST_BATCH_BYTES = 16 * 1024 * 1024
"""... and at least this many."""


def _batches(sources: list[Source], jobs: int) -> Iterator[tuple[int, list[Source]]]:
    """Numbered runs of neighbouring files, large first and smaller towards the end (of
    1/(SHARE * jobs) of the bytes left each), so that the processes finish together:
    the last batches are small, and the one a process is still busy with at the end is."""
    left = sum(source.size or 0 for source in sources)
    target = max(LEAST_BATCH_BYTES, left // (SHARE * jobs))
    batch: list[Source] = []
    size, number = 0, 0
    for source in sources:
        batch.append(source)
        size += source.size or 0
        if size >= target:
            yield number, batch
            left -= size
            target = max(LEAST_BATCH_BYTES, left // (SHARE * jobs))
            batch, size, number = [], 0, number + 1
    if batch:
        yield number, batch


class _ImportTask:
    """A worker's part of :func:`import_in_workers`."""

    def run(self, archive: Archive, batch: tuple[int, list[Source]], send: Send) -> None:
        number, sources = batch
        unsent = 0

        def on_bytes(count: int) -> None:
            nonlocal unsent
            unsent += count
            if unsent >= PROGRESS_EVERY:
                send(("bytes", number, unsent))
                unsent = 0

        summary = import_sources(archive, sources, on_bytes)
        send(("bytes", number, unsent))
        send(("summary", number, summary))

    def finish(self, send: Send) -> None:
        pass

    def session(self, archive: Archive) -> AbstractContextManager[None]:
        """One sync per process at its end: each batch's ``import_sources`` block nests in
        it. The run's summary is made once every worker has left its session."""
        return archive.storage.durable_at_end()


def _open(source: Source) -> AbstractContextManager[IO[bytes]]:
    if source.path is None:
        return nullcontext(sys.stdin.buffer)
    return source.path.open("rb")


def _documents(
    archive: Archive, source: Source, stream: _Counted
) -> tuple[Iterator[tuple[str, Document]], bool]:
    """The snapshots of one source, parsed, each with where it is (for an error); and
    whether the input may be read on while one is stored. XML: yes, its files' bytes
    went to the piece threads as they were parsed. JSON: no, a file's content is a
    stream over the input, read when the snapshot is stored."""
    first = b""
    if source.path is None:  # standard input: JSON when it starts like JSON
        first = stream.read(READ_FIRST)
    body = _Prefixed(first, stream)
    if _is_json(source, first):
        return _json_documents(body, source.name), False
    return archive.documents(body, name=source.name), True


def _json_documents(stream: Readable, name: str) -> Iterator[tuple[str, Document]]:
    for index, doc in enumerate(iter_json_stream(stream), 1):
        yield f"{name} (document {index})", doc


def archive_stream(
    archive: Archive, stream: Readable, *, name: str, is_json: bool
) -> Iterator[StoreResult | Failure]:
    """Archive every snapshot of one input, XML or Imixs JSON, each stored before the
    next is read (the HTTP push: ``web/push.py``).

    A document that cannot be archived is yielded as a failure (``name (document n)``)
    and the next one goes on; input that stops being readable ends the stream with its
    ``ArchiveError`` (what came before stays); an unreachable store raises
    ``StoreError`` (nothing is skipped then)."""
    if not is_json:
        yield from archive.ingest(stream, name=name)
        return
    for where, doc in _json_documents(stream, name):
        try:
            yield archive.store(doc)
        except StoreError:
            raise
        except ArchiveError as exc:
            yield where, exc


READ_FIRST = 64 * 1024


def _is_json(source: Source, first: bytes) -> bool:
    if source.path is not None:
        return source.path.suffix == ".json"
    return first.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] in (b"{", b"[")


class _Prefixed:
    """``first`` (already read), then the rest of ``stream``."""

    def __init__(self, first: bytes, stream: _Counted) -> None:
        self._first = first
        self._stream = stream

    def read(self, size: int = -1) -> bytes:
        if self._first:
            first, self._first = self._first, b""
            return first
        return self._stream.read(size)


class _Counted:
    """A read-only stream wrapper reporting bytes read (for a progress bar)."""

    def __init__(self, stream: IO[bytes], on_bytes: BytesRead | None) -> None:
        self._stream = stream
        self._on_bytes = on_bytes

    def read(self, size: int = -1) -> bytes:
        data = self._stream.read(size)
        if self._on_bytes is not None and data:
            self._on_bytes(len(data))
        return data

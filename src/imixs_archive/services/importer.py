"""Import snapshot files (XML ``<document>``/``<data>``, or Imixs JSON) into the archive.

One bad file, or one bad document inside a good file, is reported and skipped; the rest
goes in. An unreachable store ends the import with its error (nothing is skipped then:
run it again). Files are streamed: attachment bytes never sit whole in memory (XML
input). :func:`archive_stream` is the one way an input goes in, for the CLI's import and
the HTTP push (``web/push.py``) alike.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import IO, Any

from imixs_archive.archive.snapshots import Archive, Failure, Readable, StoreResult
from imixs_archive.document.json_stream import iter_json_stream
from imixs_archive.errors import ArchiveError, StoreError
from imixs_archive.services.sources import Source
from imixs_archive.services.workers import Send, Spread, run_in_workers


@dataclass
class ImportSummary:
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
        self.new += other.new
        self.present += other.present
        self.failed += other.failed
        self.logical_bytes += other.logical_bytes
        self.new_bytes += other.new_bytes
        self.failures.extend(other.failures)
        self.warnings.extend(other.warnings)
        self.exit_codes |= other.exit_codes

    def fail(self, where: str, error: Exception) -> None:
        self.failed += 1
        self.failures.append(f"{where}: {error}")
        self.exit_codes.add(error.exit_code if isinstance(error, ArchiveError) else 1)


BytesRead = Callable[[int], None]


def import_sources(
    archive: Archive, sources: Iterable[Source], on_bytes: BytesRead | None = None
) -> ImportSummary:
    """Import the sources one after the other. What it returns is durable: the input
    stays where it is, so its writes are made durable together at the end
    (``Archive.durable_at_end``); a crash before leaves a prefix the next run completes."""
    summary = ImportSummary()
    with archive.durable_at_end():
        for source in sources:
            _import_one(archive, source, on_bytes, summary)
    return summary


def _import_one(
    archive: Archive, source: Source, on_bytes: BytesRead | None, summary: ImportSummary
) -> None:
    try:
        with _open(source) as stream:
            counted = _Counted(stream, on_bytes)
            for outcome in _store_all(archive, source, counted):
                if isinstance(outcome, StoreResult):
                    summary.add(outcome)
                else:
                    summary.fail(*outcome)
    except StoreError:
        raise
    except ArchiveError as exc:
        summary.fail(source.name, exc)
    except OSError as exc:
        summary.fail(source.name, ArchiveError(exc.strerror or str(exc)))


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
        return archive.durable_at_end()


def _open(source: Source) -> AbstractContextManager[IO[bytes]]:
    if source.path is None:
        return nullcontext(sys.stdin.buffer)
    return source.path.open("rb")


def _store_all(
    archive: Archive, source: Source, stream: _Counted
) -> Iterator[StoreResult | Failure]:
    first = b""
    if source.path is None:  # standard input: JSON when it starts like JSON
        first = stream.read(READ_FIRST)
    body = _Prefixed(first, stream)
    yield from archive_stream(archive, body, name=source.name, is_json=_is_json(source, first))


def archive_stream(
    archive: Archive, stream: Readable, *, name: str, is_json: bool
) -> Iterator[StoreResult | Failure]:
    """Archive every snapshot of one input, XML or Imixs JSON.

    A document that cannot be archived is yielded as a failure (``name (document n)``)
    and the next one goes on; input that stops being readable ends the stream with its
    ``ArchiveError`` (what came before stays); an unreachable store raises
    ``StoreError`` (nothing is skipped then)."""
    if not is_json:
        yield from archive.ingest(stream, name=name)
        return
    for index, doc in enumerate(iter_json_stream(stream), 1):
        try:
            yield archive.store(doc)
        except StoreError:
            raise
        except ArchiveError as exc:
            yield f"{name} (document {index})", exc


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

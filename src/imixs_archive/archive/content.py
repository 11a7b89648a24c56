"""Attachment bytes in and out of the store, as streams of pieces.

In: :class:`PieceWriter` is the XML reader's sink for a ``$file`` content. Decoded bytes
flow through the content-defined chunker on the parsing thread; each finished piece goes
to the file's MD5 (on a thread of its own) and to a small pool of :class:`PieceStore`
threads that key it by its SHA-256, skip it when the store already holds it, and write
the rest in batches. Hashing and
SQLite/Cassandra writes release the GIL, so parsing, MD5 and piece hashing run side by
side. Memory is bounded by the chunker window plus ``MAX_IN_FLIGHT`` pieces plus one write
batch, whatever the file's size.

A file's identity (besides the MD5 the Java service keys it by) is its *digest*: the
SHA-256 over its ordered piece ids. Piece ids are SHA-256s of the pieces, so the digest
identifies the content as strongly as a SHA-256 of the whole file, at no extra pass over
the bytes.

Known content: an attachment is usually carried from snapshot to snapshot unchanged. The
writer holds back a file's first ``HEAD_BYTES`` and looks their SHA-256 up in
``archive_file_heads``; when a stored file starts the same (its *twin*), the arriving bytes
are compared with the twin's stored pieces (read ahead on a thread of their own) instead of
being cut, hashed twice and looked up piece by piece. Equal to its end: the file is the
twin (same bytes, so same MD5 and pieces). A difference anywhere: the bytes matched so far
are read again from the twin and go through the normal path, followed by the rest. The
comparison is of bytes, never of hashes, so an MD5 collision cannot make two contents one.
Only on a backend whose reads are local (``Backend.local_reads``): on Cassandra reading
the twin back costs the node and the client more than hashing the bytes does.

Out: ``reading.py``.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from imixs_archive.archive.chunking import DEFAULT_PARAMS, ChunkerParams, StreamChunker
from imixs_archive.archive.garbage import PIECE, take_off_list
from imixs_archive.archive.reading import pieces_digest, read_piece
from imixs_archive.document.model import BinaryStream
from imixs_archive.errors import IntegrityError
from imixs_archive.storage.base import Backend, Row
from imixs_archive.storage.model import (
    ARCHIVE_FILE_HEADS,
    ARCHIVE_FILES,
    DOCUMENTS,
    DOCUMENTS_DATA,
)

WRITE_BATCH_BYTES = 8 * 1024 * 1024
"""New pieces are handed to the backend in batches of about this many bytes."""
MAX_IN_FLIGHT = 8
"""Pieces handed to the hashing threads and not yet done (at most 1 MiB each)."""
RECENT_CLAIMS = 65_536
"""New piece ids remembered for the count of bytes newly stored (about 6 MB)."""
HEAD_BYTES = 32 * 1024
"""A file's head, looked up to find a stored twin: the chunker's smallest piece, so a file
cut by this project holds its head in its first piece."""
TWIN_CANDIDATES = 4
"""Stored files with the same head tried at most (the first complete one is compared)."""
READ_AHEAD = 2
"""Pieces of a twin read ahead of the comparison."""


def head_digest(head: bytes) -> str:
    """The key of ``archive_file_heads``: SHA-256 of a file's first ``HEAD_BYTES``."""
    return hashlib.sha256(head[:HEAD_BYTES]).hexdigest()


@dataclass
class IngestCounters:
    """What one ingest wrote: logical bytes seen and bytes newly stored, and when it
    started (``time.monotonic``)."""

    logical_bytes: int = 0
    new_bytes: int = 0
    started: float = field(default_factory=time.monotonic)


@dataclass(frozen=True)
class Piece:
    data_id: str
    size: int


class IngestedContent(BinaryStream):
    """A file whose pieces are in the store but that is not registered yet."""

    def __init__(
        self,
        backend: Backend,
        md5: str,
        size: int,
        pieces: list[Piece],
        head: str | None = None,
    ):
        self.backend = backend
        self.md5 = md5
        self._size = size
        self.pieces = pieces
        self.digest = pieces_digest(piece.data_id for piece in pieces)
        self.head = head
        """``head_digest`` of the content (None: shorter than ``HEAD_BYTES``)."""

    @property
    def size(self) -> int:
        return self._size

    def iter_bytes(self) -> Iterator[bytes]:
        for piece in self.pieces:
            yield read_piece(self.backend, piece.data_id)


class PieceStore:
    """Hashes pieces and writes the new ones, on a few long-lived threads.

    Long-lived, so that a backend keeping a connection per thread keeps a few, not one
    per file. Shared by every ingest of one :class:`Archive`."""

    def __init__(self, backend: Backend, threads: int = 2) -> None:
        self.backend = backend
        self._threads = threads
        self._pool: ThreadPoolExecutor | None = None
        # MD5 runs on one thread of its own: FIFO keeps each file's updates in order.
        self._md5_pool: ThreadPoolExecutor | None = None
        self._read_pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._claimed: OrderedDict[str, None] = OrderedDict()

    def first_claim(self, data_id: str) -> bool:
        """Whether no other file of this store wrote this new piece lately. Only for the
        count of bytes newly stored: a reader ahead of the archive meets a piece again
        before it is written, and every writer still writes it (idempotent), so that no
        file depends on another file's write."""
        with self._lock:
            if data_id in self._claimed:
                return False
            self._claimed[data_id] = None
            if len(self._claimed) > RECENT_CLAIMS:
                self._claimed.popitem(last=False)
            return True

    def update_md5(self, md5: Any, chunk: bytes) -> Future[None]:
        with self._lock:
            if self._md5_pool is None:
                self._md5_pool = ThreadPoolExecutor(1, thread_name_prefix="md5")
            return self._md5_pool.submit(md5.update, chunk)

    def submit(self, chunk: bytes) -> Future[tuple[str, bool]]:
        """Future of (piece id, already stored)."""
        return self._executor().submit(self._hash, chunk)

    def write(self, rows: list[Row]) -> Future[int]:
        return self._executor().submit(self.backend.put, DOCUMENTS_DATA, rows)

    def read(self, data_id: str) -> Future[bytes]:
        """A stored piece, read on a thread of its own (not behind the hashing). Not
        hashed: a twin's pieces are compared byte by byte with the arriving ones."""
        with self._lock:
            if self._read_pool is None:
                self._read_pool = ThreadPoolExecutor(1, thread_name_prefix="reads")
            return self._read_pool.submit(read_piece, self.backend, data_id, check=False)

    def _hash(self, chunk: bytes) -> tuple[str, bool]:
        """A stored piece on the collector's list is taken off it and written again
        (``garbage.py``): the collector may be removing it right now. One that is not on
        the list is looked for once more: the collector removes a piece before its list
        row, so a piece still there after its row was found gone is not being removed."""
        data_id = hashlib.sha256(chunk).hexdigest()
        if not self._stored(data_id):
            return data_id, False
        if take_off_list(self.backend, PIECE, data_id):
            return data_id, False
        return data_id, self._stored(data_id)

    def _stored(self, data_id: str) -> bool:
        return self.backend.get(DOCUMENTS_DATA, {"data_id": data_id}, ["data_id"]) is not None

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix="pieces")
            return self._pool

    def close(self) -> None:
        with self._lock:
            for pool in (self._pool, self._md5_pool, self._read_pool):
                if pool is not None:
                    pool.shutdown(wait=True)
            self._pool = self._md5_pool = self._read_pool = None


class PieceWriter:
    """The reader's sink for one attachment: hashes, chunks and stores its bytes."""

    def __init__(
        self,
        pieces: PieceStore,
        counters: IngestCounters | None = None,
        params: ChunkerParams = DEFAULT_PARAMS,
    ) -> None:
        self.store = pieces
        self.counters = counters if counters is not None else IngestCounters()
        self._md5 = hashlib.md5()
        self._chunker = StreamChunker(params)
        self._in_flight: deque[tuple[bytes, Future[tuple[str, bool]]]] = deque()
        self._md5_updates: deque[Future[None]] = deque()
        self._pieces: list[Piece] = []
        self._seen: set[str] = set()
        self._pending: list[Row] = []
        self._pending_bytes = 0
        self._writes: list[Future[int]] = []
        self._size = 0
        self._head: bytearray | None = bytearray()  # None once the head is looked up
        self._head_digest: str | None = None
        self._twin: _Twin | None = None

    def write(self, data: bytes) -> None:
        if self._head is not None:
            self._head += data
            if len(self._head) < HEAD_BYTES:
                return
            data, self._head = bytes(self._head), None
            self._head_digest = head_digest(data)
            if self.store.backend.local_reads:
                self._twin = _Twin.find(self.store, self._head_digest)
        if self._twin is not None:
            if self._twin.match(data):
                return
            self._leave_twin()
        self._feed(data)

    def _feed(self, data: bytes) -> None:
        self._size += len(data)
        for chunk in self._chunker.feed(data):
            self._submit(chunk)

    def _leave_twin(self) -> None:
        """The content differs from its twin: the bytes matched so far go the normal way."""
        twin, self._twin = self._twin, None
        assert twin is not None
        twin.cancel()
        for block in twin.prefix():
            self._feed(block)

    def close(self) -> IngestedContent:
        self.end_input()
        return self.settle()

    def end_input(self) -> None:
        """No more bytes: the last pieces go to the threads (not waited for)."""
        if self._head is not None:  # shorter than a head: no twin looked for
            head, self._head = bytes(self._head), None
            if head:
                self._feed(head)
        if self._twin is not None:
            if self._twin.complete():
                return
            self._leave_twin()
        for chunk in self._chunker.finish():
            self._submit(chunk)

    def settle(self) -> IngestedContent:
        """After :meth:`end_input`: wait until every piece is hashed and written."""
        if self._twin is not None:
            self.counters.logical_bytes += self._twin.matched
            return self._twin.content(self._head_digest)
        while self._in_flight:
            self._settle_one()
        while self._md5_updates:
            self._md5_updates.popleft().result()
        self._flush()
        for write in self._writes:
            write.result()  # raises what the backend raised
        self.counters.logical_bytes += self._size
        return IngestedContent(
            self.store.backend,
            self._md5.hexdigest().upper(),
            self._size,
            self._pieces,
            self._head_digest,
        )

    def abort(self) -> None:
        if self._twin is not None:
            self._twin.cancel()
        # Pieces already written stay as unreferenced pieces: `verify` reports them and a
        # later ingest of the same bytes reuses them. Nothing refers to them, so no harm.
        for _chunk, future in self._in_flight:
            future.cancel()
        for update in self._md5_updates:
            update.cancel()
        for write in self._writes:
            write.exception()  # wait, so nothing writes after the abort returns
        self._in_flight.clear()
        self._pending.clear()

    def _submit(self, chunk: bytes) -> None:
        self._md5_updates.append(self.store.update_md5(self._md5, chunk))
        self._in_flight.append((chunk, self.store.submit(chunk)))
        while self._md5_updates and self._md5_updates[0].done():
            self._md5_updates.popleft().result()
        if len(self._md5_updates) >= 4 * MAX_IN_FLIGHT:
            self._md5_updates.popleft().result()  # bounds the pieces it still holds
        if len(self._in_flight) >= MAX_IN_FLIGHT:
            self._settle_one()

    def _settle_one(self) -> None:
        chunk, future = self._in_flight.popleft()
        data_id, known = future.result()
        self._pieces.append(Piece(data_id, len(chunk)))
        if known or data_id in self._seen:
            return
        self._seen.add(data_id)
        self._pending.append({"data_id": data_id, "data": chunk})
        self._pending_bytes += len(chunk)
        if self.store.first_claim(data_id):
            self.counters.new_bytes += len(chunk)
        if self._pending_bytes >= WRITE_BATCH_BYTES:
            self._flush()

    def _flush(self) -> None:
        if self._pending:
            self._writes.append(self.store.write(self._pending))
            # Keep writes still running, and failed ones: close() raises what they raised.
            self._writes = [w for w in self._writes if not w.done() or w.exception()]
        self._pending = []
        self._pending_bytes = 0


class _Twin:
    """A stored file that the content being written may be a copy of, compared with it as
    the bytes arrive."""

    def __init__(self, store: PieceStore, key: str, data_ids: list[str]) -> None:
        self._store = store
        self.key = key
        self._ids = data_ids
        self._sizes: list[int] = []
        self._reads: deque[Future[bytes]] = deque()
        self._requested = 0
        self._piece = b""
        self._at = 0
        self.matched = 0
        """Bytes of the content found equal so far."""

    @classmethod
    def find(cls, store: PieceStore, head: str) -> _Twin | None:
        """A complete stored file with this head, or None."""
        backend = store.backend
        rows = backend.scan(ARCHIVE_FILE_HEADS, {"head": head}, limit=TWIN_CANDIDATES)
        for row in list(rows):
            key = row["md5"]
            if backend.get(ARCHIVE_FILES, {"md5": key}, ["md5"]) is None:
                continue  # deleted since, or not complete yet
            data_ids = [
                r["data_id"] for r in backend.scan(DOCUMENTS, {"md5": key}, columns=["data_id"])
            ]
            if data_ids:
                return cls(store, key, data_ids)
        return None

    def match(self, data: bytes) -> bool:
        """Whether ``data`` continues the twin's bytes (False: it does not, or the twin
        could not be read; ``matched`` stays at the bytes before ``data``)."""
        view = memoryview(data)
        at, piece = self._at, self._piece
        while view:
            if at == len(piece):
                next_piece = self._next_piece()
                if next_piece is None:
                    return False
                self._piece, piece, at = next_piece, next_piece, 0
            size = min(len(view), len(piece) - at)
            if not piece.startswith(view[:size], at):
                return False
            at += size
            view = view[size:]
        self._at = at
        self.matched += len(data)
        return True

    def complete(self) -> bool:
        """Whether every byte of the twin was matched (the content ends where it does)."""
        if self._at < len(self._piece):
            return False
        while (piece := self._next_piece()) is not None:
            if piece:
                return False
        return len(self._sizes) == len(self._ids)

    def content(self, head: str | None) -> IngestedContent:
        md5 = self.key.split("-", 1)[0]
        pieces = [
            Piece(data_id, size) for data_id, size in zip(self._ids, self._sizes, strict=True)
        ]
        return IngestedContent(self._store.backend, md5, self.matched, pieces, head)

    def prefix(self) -> Iterator[bytes]:
        """The twin's first ``matched`` bytes, read again from the store."""
        left = self.matched
        for data_id in self._ids:
            if left <= 0:
                return
            piece = read_piece(self._store.backend, data_id, check=False)  # matched already
            yield piece[:left]
            left -= len(piece)

    def cancel(self) -> None:
        for read in self._reads:
            read.cancel()
        self._reads.clear()

    def _next_piece(self) -> bytes | None:
        """The twin's next piece (None after the last, or when it cannot be read)."""
        while self._requested < len(self._ids) and len(self._reads) < READ_AHEAD:
            self._reads.append(self._store.read(self._ids[self._requested]))
            self._requested += 1
        if not self._reads:
            return None
        try:
            piece = self._reads.popleft().result()
        except IntegrityError:
            return None  # a piece is missing: compare no further (verify reports it)
        self._sizes.append(len(piece))
        return piece


class DeferredWriter:
    """The reader's sink of :meth:`Archive.ingest`: a :class:`PieceWriter` whose
    ``close`` does not wait for the file's last pieces, so the reader goes on with the
    rest of the document while they are hashed and written; the archive waits for them
    (:meth:`PendingContent.result`) before it registers the file."""

    def __init__(self, writer: PieceWriter) -> None:
        self._writer = writer

    def write(self, data: bytes) -> None:
        self._writer.write(data)

    def close(self) -> PendingContent:
        self._writer.end_input()
        return PendingContent(self._writer)

    def abort(self) -> None:
        self._writer.abort()


class PendingContent(BinaryStream):
    """A file whose input ended; :meth:`result` waits for its pieces."""

    def __init__(self, writer: PieceWriter) -> None:
        self._writer = writer
        self._result: IngestedContent | None = None

    def result(self) -> IngestedContent:
        if self._result is None:
            self._result = self._writer.settle()
        return self._result

    @property
    def counters(self) -> IngestCounters:
        """What this file's writer counted (complete once :meth:`result` returned)."""
        return self._writer.counters

    @property
    def size(self) -> int | None:
        return self.result().size

    def iter_bytes(self) -> Iterator[bytes]:
        return self.result().iter_bytes()


def ingest_stream(
    pieces: PieceStore, chunks: Iterable[bytes], counters: IngestCounters
) -> IngestedContent:
    """Store a content given as pieces of bytes (in memory, or from another store)."""
    writer = PieceWriter(pieces, counters)
    try:
        for chunk in chunks:
            writer.write(chunk)
    except BaseException:
        writer.abort()
        raise
    return writer.close()


def same_bytes(left: Iterable[bytes], right: Iterable[bytes]) -> bool:
    """Whether two streams of pieces carry the same bytes (cut anywhere), streaming."""
    a, b = _nonempty(left), _nonempty(right)
    buf_a, buf_b = b"", b""
    while True:
        if not buf_a:
            buf_a = next(a, b"")
        if not buf_b:
            buf_b = next(b, b"")
        if not buf_a or not buf_b:
            return not buf_a and not buf_b
        size = min(len(buf_a), len(buf_b))
        if buf_a[:size] != buf_b[:size]:
            return False
        buf_a, buf_b = buf_a[size:], buf_b[size:]


def _nonempty(pieces: Iterable[bytes]) -> Iterator[bytes]:
    return (piece for piece in pieces if piece)

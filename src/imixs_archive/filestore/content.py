"""Attachment bytes into the store, as streams of pieces.

One file's bytes, from :meth:`PieceWriter.write` (the XML reader's sink for a ``$file``
content) to the stored pieces:

1. *Known?* The first ``HEAD_BYTES`` are held back and looked up (``twin.py``). A content
   that is already stored is compared with its twin byte by byte and goes no further;
   every other byte goes on.
2. *Cut*: the content-defined chunker (``chunking.py``), on the calling thread; where the
   store keeps the Java service's cuts (``PieceStore.cuts``), pieces are cut every 1 MiB
   and the content-defined cuts are only hashed, for the file's ledger digest.
3. *Hash*: each finished piece goes to the file's MD5 (the Java service's key; one
   update at a time, in order) and to the piece threads (:class:`PieceStore`), which key
   it by its SHA-256 and look whether the store holds it already.
4. *Write new*: the writer takes the answers in order, lists each piece, and hands the
   new ones to the piece threads in batches of ``WRITE_BATCH_BYTES`` (on a local store; one
   by one where each write is a request of its own), taking each answer as soon as it is in.

:meth:`PieceWriter.close` does not wait for the last pieces: the reader goes on with the
rest of the document while they are hashed and written, and the archive waits for them
(:meth:`PendingContent.result`) before it registers the file (``files.py``), whose rows
are written after its pieces. A piece is written again whenever the writer did not find
it stored (writes are idempotent), so no file depends on another file's write.

Hashing and SQLite/Cassandra writes release the GIL, so parsing, MD5 and piece hashing run
side by side. Memory is bounded by the chunker window plus ``MAX_IN_FLIGHT`` pieces
hashing, up to ``MD5_BACKLOG`` pieces in the file's running MD5 update and as many waiting
for the next, and the write batch being filled plus those being written (the piece
threads take tasks in order), whatever the file's size.

A file's identity (besides the MD5 the Java service keys it by) is its *digest*: the
SHA-256 over its ordered piece ids. Piece ids are SHA-256s of the pieces, so the digest
identifies the content as strongly as a SHA-256 of the whole file, at no extra pass over
the bytes.

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

from imixs_archive.document.model import BinaryStream
from imixs_archive.errors import IntegrityError
from imixs_archive.filestore.chunking import (
    CONTENT,
    DEFAULT_PARAMS,
    JAVA,
    ChunkerParams,
    FixedChunker,
    StreamChunker,
)
from imixs_archive.filestore.confirmed import RecentlyConfirmed
from imixs_archive.filestore.garbage import PIECE, take_off_list
from imixs_archive.filestore.reading import RecentPieces, pieces_digest, read_piece
from imixs_archive.filestore.twin import KnownContent
from imixs_archive.storage.base import Backend, Row
from imixs_archive.storage.model import DOCUMENTS_DATA

WRITE_BATCH_BYTES = 8 * 1024 * 1024
"""New pieces are handed to the backend in batches of about this many bytes."""
MAX_IN_FLIGHT = 8
"""Pieces handed to the hashing threads and not yet done (at most 1 MiB each)."""
MD5_BACKLOG = 4 * MAX_IN_FLIGHT
"""Pieces waiting for a file's next MD5 update at most (as many may be in the one running)."""
RECENT_CLAIMS = 65_536
"""New piece ids remembered for the count of bytes newly stored (about 6 MB)."""
TWIN_PIECES_BYTES = 32 * 1024 * 1024
"""Bytes of pieces kept for the twin comparison: those written or read for it lately."""
CONFIRMED_PIECES = 65_536
"""Piece ids remembered as confirmed stored (see :class:`PieceStore`; about 6 MB)."""


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
        ledger_digest: str | None = None,
    ):
        self.backend = backend
        self.md5 = md5
        self._size = size
        self.pieces = pieces
        self.digest = pieces_digest(piece.data_id for piece in pieces)
        """Over the ids of the pieces the file is stored in (``archive_files.digest``)."""
        self.head = head
        """``head_digest`` of the content (None: shorter than ``HEAD_BYTES``)."""
        self.ledger_digest = ledger_digest or self.digest
        """Over the SHA-256s of the content-defined cuts (what the ledger logs): the
        ``digest`` itself unless the pieces are stored in other cuts (Java's)."""

    @property
    def size(self) -> int:
        return self._size

    def iter_bytes(self) -> Iterator[bytes]:
        for piece in self.pieces:
            yield read_piece(self.backend, piece.data_id)


class PieceStore:
    """The piece threads: hash pieces, look them up, write the new ones, update MD5s and
    read twins. Every task is short and waits for no other, so one pool serves them all.

    Long-lived, so that a backend keeping a connection per thread keeps a few, not one
    per file. Shared by every ingest of one :class:`Archive`. ``threads``: by default
    the backend's concurrency plus two (a file's MD5 and a twin's reads).

    ``confirmed_for`` (seconds; 0: never): where every look-up crosses the network
    (``Backend.local_reads`` False, Cassandra), a piece this store wrote, or found stored
    and not on the collector's list, is taken as stored without a look-up for that long
    afterwards (an attachment carried from snapshot to snapshot costs three round trips a
    piece otherwise). Safe while it is well under the collector's grace period (the
    archive passes a quarter of it): a piece not listed at a moment is removed no sooner
    than a grace period later, since it must be listed first; a listing from before
    (a collector that stopped between removing the piece and its list row) removes only
    what was written before it (``USING TIMESTAMP``), not this store's rewrite. An ingest
    that takes more than half the grace period checks every piece it reused anyway
    (:meth:`FileStore.check_reused`), so no reference outlives the guarantee."""

    def __init__(
        self,
        backend: Backend,
        threads: int | None = None,
        *,
        confirmed_for: float = 0.0,
        cuts: str = CONTENT,
    ) -> None:
        self.backend = backend
        self.cuts = cuts
        """Where files are cut into the pieces stored: ``content`` (content-defined) or
        ``java`` (every 1 MiB, as the Java service cuts; ``chunking.py``)."""
        self.batch_bytes = WRITE_BATCH_BYTES if backend.local_reads else 1
        """New pieces are handed to the backend once this many bytes wait: one commit for
        several on a local store; each piece at once where each is a request of its own
        (Cassandra), so that its write overlaps the cutting of the next."""
        self._threads = threads or backend.concurrency + 2
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._claimed: OrderedDict[str, None] = OrderedDict()
        self._writing: dict[str, Future[int]] = {}
        """Piece id -> the write of it under way."""
        self._recent = RecentPieces(TWIN_PIECES_BYTES)
        self._confirmed = RecentlyConfirmed[bool](
            0.0 if backend.local_reads else confirmed_for, CONFIRMED_PIECES
        )
        """The pieces confirmed stored lately."""

    def hash(self, chunk: bytes) -> Future[tuple[str, bool]]:
        """Future of (piece id, already stored)."""
        return self._executor().submit(self._hash, chunk)

    def sha256(self, chunk: bytes) -> Future[str]:
        """Future of the chunk's SHA-256 (hex): a content-defined cut hashed only."""
        return self._executor().submit(_sha256, chunk)

    def write(self, rows: list[Row]) -> Future[int]:
        future = self._executor().submit(self._write, rows)
        data_ids = [row["data_id"] for row in rows]
        with self._lock:
            for data_id in data_ids:
                self._writing[data_id] = future
        future.add_done_callback(lambda done: self._written(data_ids, done))
        return future

    def _written(self, data_ids: list[str], done: Future[int]) -> None:
        with self._lock:
            for data_id in data_ids:
                if self._writing.get(data_id) is done:
                    del self._writing[data_id]

    def writing(self, data_id: str) -> Future[int] | None:
        """The write of this piece under way in this store (another file's), done when
        the piece was confirmed stored since it was looked up; else None. A file that
        found the piece missing waits for that write instead of writing it again: the
        next snapshot carrying a file on is read while the one before is still being
        written (``services/importer.py``), and its look-ups may come first."""
        with self._lock:
            pending = self._writing.get(data_id)
        if pending is not None:
            return pending
        return _WRITTEN if self._is_confirmed(data_id) else None

    def _write(self, rows: list[Row]) -> int:
        started = time.monotonic()
        written = self.backend.put(DOCUMENTS_DATA, rows)
        self._confirm([row["data_id"] for row in rows], started)
        return written

    def _confirm(self, data_ids: list[str], since: float) -> None:
        """These pieces were stored, and not listed, at ``since`` (or later)."""
        self._confirmed.keep(((data_id, True) for data_id in data_ids), since)

    def _is_confirmed(self, data_id: str) -> bool:
        return self._confirmed.get(data_id) is not None

    def update_md5(self, md5: Any, chunks: list[bytes]) -> Future[None]:
        return self._executor().submit(_update, md5, chunks)

    def read(self, data_id: str) -> Future[bytes]:
        """A stored piece, not hashed: a twin's pieces are compared byte by byte. An
        attachment is carried from snapshot to snapshot, so its pieces are met again and
        again: those this store wrote or read lately are kept (``TWIN_PIECES_BYTES``) and
        only looked up, not read and unpacked again (the piece must still be stored)."""
        known = self._recent.get(data_id)
        if known is not None:
            return self._executor().submit(self._still_stored, data_id, known)
        return self._executor().submit(self._read, data_id)

    def remember(self, data_id: str, data: bytes) -> None:
        """A piece this store is writing or found stored (its bytes hashed to its id), for
        a twin that may come next (only where twins are looked for: ``local_reads``)."""
        if self.backend.local_reads:
            self._recent.add(data_id, data)

    def _read(self, data_id: str) -> bytes:
        data = read_piece(self.backend, data_id, check=False)
        self._recent.add(data_id, data)
        return data

    def _still_stored(self, data_id: str, data: bytes) -> bytes:
        if not self._stored(data_id):
            raise IntegrityError(f"piece {data_id} is missing from the store")
        return data

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

    def _hash(self, chunk: bytes) -> tuple[str, bool]:
        """A stored piece on the collector's list is taken off it and written again
        (``garbage.py``): the collector may be removing it right now. One that is not on
        the list is looked for once more: the collector removes a piece before its list
        row, so a piece still there after its row was found gone is not being removed."""
        data_id = hashlib.sha256(chunk).hexdigest()
        if self._is_confirmed(data_id):
            return data_id, True
        if not self._stored(data_id):
            return data_id, False
        looked = time.monotonic()
        if take_off_list(self.backend, PIECE, data_id):
            return data_id, False
        if not self._stored(data_id):
            return data_id, False
        self._confirm([data_id], looked)
        return data_id, True

    def _stored(self, data_id: str) -> bool:
        return self.backend.get(DOCUMENTS_DATA, {"data_id": data_id}, ["data_id"]) is not None

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._threads, thread_name_prefix="pieces")
            return self._pool

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)


def _sha256(chunk: bytes) -> str:
    return hashlib.sha256(chunk).hexdigest()


def _update(md5: Any, chunks: list[bytes]) -> None:
    for chunk in chunks:
        md5.update(chunk)


_DONE: Future[None] = Future()
_DONE.set_result(None)
_WRITTEN: Future[int] = Future()
_WRITTEN.set_result(0)


class PieceWriter:
    """The reader's sink for one attachment: its bytes through steps 1-4 above."""

    def __init__(
        self,
        store: PieceStore,
        counters: IngestCounters | None = None,
        params: ChunkerParams = DEFAULT_PARAMS,
    ) -> None:
        self.store = store
        self.counters = counters if counters is not None else IngestCounters()
        java = store.cuts == JAVA
        # A twin is found by content-defined pieces; in Java's cuts every file is cut anew.
        self._known = KnownContent(store.backend, store.read, find_twins=not java)
        self._chunker: StreamChunker | FixedChunker = (
            FixedChunker() if java else StreamChunker(params)
        )
        self._ledger_cuts = StreamChunker(params) if java else None
        """Java's cuts: the content-defined cuts, hashed for the ledger digest only."""
        self._ledger_pending: deque[Future[str]] = deque()
        self._ledger_ids: list[str] = []
        self._size = 0  # bytes cut
        self._md5 = hashlib.md5()
        self._md5_job = _DONE  # the update running; the pieces after it wait in:
        self._md5_later: list[bytes] = []
        self._in_flight: deque[tuple[bytes, Future[tuple[str, bool]]]] = deque()
        self._pieces: list[Piece] = []
        self._seen: set[str] = set()
        self._batch: list[Row] = []
        self._batch_bytes = 0
        self._writes: list[Future[int]] = []

    def write(self, data: bytes) -> None:
        for block in self._known.feed(data):  # 1. known content stops here
            self._cut(block)

    def close(self) -> PendingContent:
        """No more bytes: the last pieces go to the threads (not waited for)."""
        for block in self._known.end():
            self._cut(block)
        if not self._known.is_twin:
            for chunk in self._chunker.finish():
                self._hash(chunk)
            if self._ledger_cuts is not None:
                self._hash_for_ledger(self._ledger_cuts.finish())
        return PendingContent(self)

    def _cut(self, data: bytes) -> None:  # 2.
        self._size += len(data)
        for chunk in self._chunker.feed(data):
            self._hash(chunk)
        while self._in_flight and self._in_flight[0][1].done():  # 4. as soon as known
            self._take_answer()
        if self._ledger_cuts is not None:
            self._hash_for_ledger(self._ledger_cuts.feed(data))

    def _hash_for_ledger(self, chunks: list[bytes]) -> None:
        for chunk in chunks:
            self._ledger_pending.append(self.store.sha256(chunk))
            if len(self._ledger_pending) >= MAX_IN_FLIGHT:
                self._ledger_ids.append(self._ledger_pending.popleft().result())

    def _hash(self, chunk: bytes) -> None:  # 3.
        self._md5_later.append(chunk)
        if self._md5_job.done() or len(self._md5_later) >= MD5_BACKLOG:
            self._update_md5()
        self._in_flight.append((chunk, self.store.hash(chunk)))
        if len(self._in_flight) >= MAX_IN_FLIGHT:
            self._take_answer()

    def _update_md5(self) -> None:
        """The pieces waiting for the MD5 go to the threads once the update before them
        is done: one update at a time keeps them in order."""
        self._md5_job.result()
        if self._md5_later:
            self._md5_job = self.store.update_md5(self._md5, self._md5_later)
            self._md5_later = []

    def _take_answer(self) -> None:  # 4.
        chunk, future = self._in_flight.popleft()
        data_id, stored = future.result()
        self._pieces.append(Piece(data_id, len(chunk)))
        self.store.remember(data_id, chunk)  # its SHA-256: these are the piece's bytes
        if stored or data_id in self._seen:
            return
        self._seen.add(data_id)
        other = self.store.writing(data_id)
        if other is not None:  # written for another file: this one waits for that
            if not other.done():
                self._writes.append(other)
            return
        self._batch.append({"data_id": data_id, "data": chunk})
        self._batch_bytes += len(chunk)
        if self.store.first_claim(data_id):
            self.counters.new_bytes += len(chunk)
        if self._batch_bytes >= self.store.batch_bytes:
            self._write_batch()

    def _write_batch(self) -> None:
        if self._batch:
            self._writes.append(self.store.write(self._batch))
            # Keep writes still running, and failed ones: settle() raises what they raised.
            self._writes = [w for w in self._writes if not w.done() or w.exception()]
        self._batch = []
        self._batch_bytes = 0

    def settle(self) -> IngestedContent:
        """After :meth:`close`: wait until every piece is hashed and written."""
        known = self._known
        if known.is_twin:
            self.counters.logical_bytes += known.matched
            pieces = [Piece(data_id, size) for data_id, size in known.pieces()]
            md5 = known.key.split("-", 1)[0]
            return IngestedContent(self.store.backend, md5, known.matched, pieces, known.head)
        while self._in_flight:
            self._take_answer()
        self._update_md5()
        self._md5_job.result()
        self._write_batch()
        for write in self._writes:
            write.result()  # raises what the backend raised
        self.counters.logical_bytes += self._size
        md5 = self._md5.hexdigest().upper()
        ledger: str | None = None
        if self._ledger_cuts is not None:
            self._ledger_ids += [future.result() for future in self._ledger_pending]
            self._ledger_pending.clear()
            ledger = pieces_digest(self._ledger_ids)
        return IngestedContent(
            self.store.backend, md5, self._size, self._pieces, known.head, ledger
        )

    def abort(self) -> None:
        self._known.cancel()
        # Pieces already written stay as unreferenced pieces: `verify` reports them and a
        # later ingest of the same bytes reuses them. Nothing refers to them, so no harm.
        for _chunk, future in self._in_flight:
            future.cancel()
        self._md5_job.cancel()
        for hashing in self._ledger_pending:
            hashing.cancel()
        self._ledger_pending.clear()
        for write in self._writes:
            write.exception()  # wait, so nothing writes after the abort returns
        self._in_flight.clear()
        self._md5_later.clear()
        self._batch.clear()


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
    return writer.close().result()


def cut_digest(data: Iterable[bytes]) -> str:
    """The digest over the SHA-256s of the content-defined cuts of these bytes (what the
    ledger logs of a file; ``IngestedContent.ledger_digest``), whatever pieces they come in."""
    chunker = StreamChunker()
    hashes: list[str] = []
    for block in data:
        hashes += [_sha256(chunk) for chunk in chunker.feed(block)]
    hashes += [_sha256(chunk) for chunk in chunker.finish()]
    return pieces_digest(hashes)


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

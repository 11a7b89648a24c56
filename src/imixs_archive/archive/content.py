"""Attachment bytes in and out of the store, as streams of pieces.

In: :class:`PieceWriter` is the XML reader's sink for a ``$file`` content. Decoded bytes
flow through MD5 and SHA-256 (whole file) and the content-defined chunker; each finished
piece is keyed by its SHA-256 and written unless the store already holds it. Memory is
bounded by the chunker window plus one write batch, whatever the file's size.

Out: :class:`StoredContent` streams a stored file piece by piece, by its documents key.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field

from imixs_archive.archive.chunking import DEFAULT_PARAMS, ChunkerParams, StreamChunker
from imixs_archive.document.model import BinaryStream
from imixs_archive.errors import IntegrityError, NotFoundError
from imixs_archive.storage.base import Backend, Row
from imixs_archive.storage.model import ARCHIVE_FILES, DOCUMENTS, DOCUMENTS_DATA

WRITE_BATCH_BYTES = 8 * 1024 * 1024
"""New pieces are handed to the backend in batches of about this many bytes."""


@dataclass
class IngestCounters:
    """What one ingest wrote: logical bytes seen and bytes newly stored."""

    logical_bytes: int = 0
    new_bytes: int = 0
    new_pieces: int = 0


@dataclass(frozen=True)
class Piece:
    data_id: str
    size: int


class IngestedContent(BinaryStream):
    """A file whose pieces are in the store but that is not registered yet."""

    def __init__(self, backend: Backend, md5: str, sha256: str, size: int, pieces: list[Piece]):
        self.backend = backend
        self.md5 = md5
        self.sha256 = sha256
        self._size = size
        self.pieces = pieces

    @property
    def size(self) -> int:
        return self._size

    def iter_bytes(self) -> Iterator[bytes]:
        for piece in self.pieces:
            yield read_piece(self.backend, piece.data_id)


class StoredContent(BinaryStream):
    """A registered file, streamed from its ``documents`` rows by key."""

    def __init__(self, backend: Backend, key: str, size: int | None = None):
        self.backend = backend
        self.key = key
        self._size = size

    @property
    def size(self) -> int | None:
        if self._size is None:
            info = self.backend.get(ARCHIVE_FILES, {"md5": self.key}, ["size"])
            self._size = int(info["size"]) if info else None
        return self._size

    def iter_bytes(self) -> Iterator[bytes]:
        found = False
        for row in self.backend.scan(DOCUMENTS, {"md5": self.key}, columns=["data_id"]):
            found = True
            yield read_piece(self.backend, row["data_id"])
        if not found and self.key != EMPTY_MD5:
            raise NotFoundError(f"no file with MD5 {self.key} in the archive")


EMPTY_MD5 = hashlib.md5(b"").hexdigest().upper()


def read_piece(backend: Backend, data_id: str) -> bytes:
    row = backend.get(DOCUMENTS_DATA, {"data_id": data_id})
    if row is None:
        raise IntegrityError(f"piece {data_id} is missing from the store")
    data: bytes = row["data"]
    return data


@dataclass
class PieceWriter:
    """The reader's sink for one attachment: hashes, chunks and stores its bytes."""

    backend: Backend
    counters: IngestCounters = field(default_factory=IngestCounters)
    params: ChunkerParams = DEFAULT_PARAMS

    def __post_init__(self) -> None:
        self._md5 = hashlib.md5()
        self._sha256 = hashlib.sha256()
        self._chunker = StreamChunker(self.params)
        self._pieces: list[Piece] = []
        self._known: set[str] = set()
        self._pending: list[Row] = []
        self._pending_bytes = 0
        self._size = 0

    def write(self, data: bytes) -> None:
        self._md5.update(data)
        self._sha256.update(data)
        self._size += len(data)
        for chunk in self._chunker.feed(data):
            self._add(chunk)

    def close(self) -> IngestedContent:
        for chunk in self._chunker.finish():
            self._add(chunk)
        self._flush()
        self.counters.logical_bytes += self._size
        return IngestedContent(
            self.backend,
            self._md5.hexdigest().upper(),
            self._sha256.hexdigest(),
            self._size,
            self._pieces,
        )

    def abort(self) -> None:
        # Pieces already written stay as unreferenced pieces: `verify` reports them and a
        # later ingest of the same bytes reuses them. Nothing refers to them, so no harm.
        self._pending.clear()

    def _add(self, chunk: bytes) -> None:
        data_id = hashlib.sha256(chunk).hexdigest()
        self._pieces.append(Piece(data_id, len(chunk)))
        if data_id in self._known:
            return
        self._known.add(data_id)
        if self.backend.get(DOCUMENTS_DATA, {"data_id": data_id}, ["data_id"]) is not None:
            return
        self._pending.append({"data_id": data_id, "data": chunk})
        self._pending_bytes += len(chunk)
        self.counters.new_bytes += len(chunk)
        self.counters.new_pieces += 1
        if self._pending_bytes >= WRITE_BATCH_BYTES:
            self._flush()

    def _flush(self) -> None:
        if self._pending:
            self.backend.put(DOCUMENTS_DATA, self._pending)
        self._pending = []
        self._pending_bytes = 0


def ingest_bytes(backend: Backend, data: bytes, counters: IngestCounters) -> IngestedContent:
    """Store an in-memory content (documents built in memory, JSON input)."""
    writer = PieceWriter(backend, counters)
    for start in range(0, len(data), WRITE_BATCH_BYTES):
        writer.write(data[start : start + WRITE_BATCH_BYTES])
    return writer.close()

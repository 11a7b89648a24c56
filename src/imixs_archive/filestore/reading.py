"""Stored files read back, every piece checked as it is read.

A piece written by this project is keyed by the SHA-256 of its bytes: each one is hashed
again when read, on a small pool of reader threads that also fetch a few pieces ahead, so
the thread that writes the bytes out (an HTTP response, a file, the XML encoder) neither
waits for the store nor hashes. A piece that is missing or does not match stops the read
with an :class:`IntegrityError` naming the snapshot and file.

What a piece cannot tell, the file can: its last piece is held back until the file's
record in ``archive_files`` agrees (piece count, size, and the digest over the piece ids),
so a file that lost pieces at its end, or whose piece list was changed, never reads as
complete. Pieces cut by the Java service carry random ids (no hash of their own): a file
with any of them (the Java service's file, or one both services wrote at once, whose rows
mix) is checked against its MD5 (its documents key) when read whole. A range of such a file
cannot be checked without reading all of it, and is not.

Pieces read again: an attachment carried from snapshot to snapshot is read once per
snapshot that holds it (a backup of every snapshot, a page listing them). The last
``VERIFIED_BYTES`` of pieces whose hash checked out are remembered; a piece read again
is compared byte by byte with what was remembered for its id (memcmp, ~20x faster than
SHA-256 here) and hashed only when it differs. Still every byte read is checked: equal
bytes hash the same, and bytes changed in the store since differ, are hashed, and fail.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

from imixs_archive.document.model import BinaryStream
from imixs_archive.errors import IntegrityError
from imixs_archive.recent import Recent
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import ARCHIVE_FILES, ARCHIVE_PIECE_REFS, DOCUMENTS, DOCUMENTS_DATA

EMPTY_MD5 = hashlib.md5(b"").hexdigest().upper()
SHA256_ID = re.compile(r"^[0-9a-f]{64}$")
MD5_KEY = re.compile(r"^[0-9A-F]{32}")
READERS = 8
"""Threads (shared by every read of the process) that fetch and hash pieces (hashing
releases the interpreter lock; on Cassandra most of them wait for a round trip)."""
READ_AHEAD = 4
"""Pieces of one file fetched ahead of the one being written out (at most 1 MiB each);
more where the store asks for more requests in flight (``Backend.concurrency``)."""

VERIFIED_BYTES = 32 * 1024 * 1024
"""Bytes of recently checked pieces remembered by id (per process)."""

_pool_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def pieces_digest(data_ids: Iterable[str]) -> str:
    """The digest of a file made of these pieces (SHA-256 over the ordered piece ids)."""
    digest = hashlib.sha256()
    for data_id in data_ids:
        digest.update(data_id.encode("ascii"))
    return digest.hexdigest()


def is_hashed(data_id: str) -> bool:
    """Whether a piece id is the SHA-256 of its bytes (else a random id from Java)."""
    return SHA256_ID.match(data_id) is not None


class RecentPieces(Recent[str, bytes]):
    """Pieces by id, most recently used last, bounded by bytes (thread-safe)."""

    def __init__(self, limit: int) -> None:
        super().__init__(limit, len)

    def holds(self, data_id: str, data: bytes) -> bool:
        """Whether ``data`` are the bytes remembered for ``data_id`` (the same object,
        as an unpacked frame read again is, or equal byte for byte)."""
        known = self.get(data_id)
        return known is not None and (known is data or known == data)


_verified = RecentPieces(VERIFIED_BYTES)
"""Pieces whose SHA-256 matched their id."""


def read_piece(backend: Backend, data_id: str, where: str = "", *, check: bool = True) -> bytes:
    """A stored piece, checked against its id when the id is its SHA-256 (``check``:
    false only where the bytes are compared with others anyway, as a twin's are)."""
    prefix = f"{where}: " if where else ""
    try:
        row = backend.get(DOCUMENTS_DATA, {"data_id": data_id})
    except IntegrityError as exc:  # a cell the store cannot unpack: name the file too
        raise IntegrityError(f"{prefix}{exc.message}") from None
    if row is None:
        raise IntegrityError(f"{prefix}piece {data_id} is missing from the store")
    data = row["data"]
    if not isinstance(data, bytes):  # a cell overwritten with text or NULL
        kind = "NULL" if data is None else type(data).__name__
        raise IntegrityError(f"{prefix}piece {data_id} is corrupt (it holds {kind}, not bytes)")
    if check and is_hashed(data_id) and not _verified.holds(data_id, data):
        if hashlib.sha256(data).hexdigest() != data_id:
            raise IntegrityError(f"{prefix}piece {data_id} is corrupt (its SHA-256 differs)")
        _verified.add(data_id, data)
    return data


def _readers() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(READERS, thread_name_prefix="piece-reads")
        return _pool


def read_ahead(
    backend: Backend, data_ids: Iterable[str], where: str, ahead: int | None = None
) -> Iterator[tuple[str, bytes]]:
    """(id, checked bytes) of each piece in order, fetched and hashed on the reader
    threads up to ``ahead`` pieces before they are asked for."""
    ahead = ahead or max(READ_AHEAD, backend.concurrency)
    pool = _readers()
    pending: deque[tuple[str, Future[bytes]]] = deque()
    try:
        for data_id in data_ids:
            pending.append((data_id, pool.submit(read_piece, backend, data_id, where)))
            if len(pending) >= ahead:
                done_id, future = pending.popleft()
                yield done_id, future.result()
        while pending:
            done_id, future = pending.popleft()
            yield done_id, future.result()
    finally:
        # A read given up part-way: nothing may touch the store after it returns (the
        # caller may close the store next).
        for _data_id, future in pending:
            if not future.cancel():
                wait([future])


class _FileCheck:
    """What a whole file read must add up to, checked before its last piece goes out."""

    def __init__(self, backend: Backend, key: str, where: str, listed: list[str]) -> None:
        """``listed``: the ids of the pieces about to be read, in order."""
        self.key = key
        self.where = where
        self.info = backend.get(ARCHIVE_FILES, {"md5": key}, ["digest", "size", "pieces"])
        self.ids: list[str] = []
        self.size = 0
        self._md5: Any = None
        if not all(map(is_hashed, listed)) and MD5_KEY.match(key):
            self._md5 = hashlib.md5()  # pieces cut by Java: the file's MD5 is their check

    def add(self, data_id: str, piece: bytes) -> None:
        self.ids.append(data_id)
        self.size += len(piece)
        if self._md5 is not None:
            self._md5.update(piece)

    def finish(self) -> None:
        if not self.ids and self.key != EMPTY_MD5:
            raise IntegrityError(f"{self.where}: its content is missing from the store")
        info = self.info
        if info is not None:
            if len(self.ids) != info["pieces"] or self.size != info["size"]:
                raise IntegrityError(
                    f"{self.where}: {len(self.ids)} pieces of {self.size} bytes were read, "
                    f"the file has {info['pieces']} of {info['size']} bytes"
                )
            hashed = all(is_hashed(data_id) for data_id in self.ids)
            if hashed and pieces_digest(self.ids) != info["digest"]:
                raise IntegrityError(f"{self.where}: its piece list does not match its digest")
        if self._md5 is not None and self._md5.hexdigest().upper() != self.key[:32]:
            raise IntegrityError(f"{self.where}: its content does not match its MD5")


class StoredContent(BinaryStream):
    """A registered file, streamed from its ``documents`` rows by key, checked as read.

    ``where`` names the file in errors (``snapshot X, file 'a.pdf'``)."""

    def __init__(self, backend: Backend, key: str, size: int | None = None, where: str = ""):
        self.backend = backend
        self.key = key
        self._size = size
        self.where = where or f"file {key}"

    @property
    def size(self) -> int | None:
        if self._size is None:
            info = self.backend.get(ARCHIVE_FILES, {"md5": self.key}, ["size"])
            self._size = int(info["size"]) if info else None
        return self._size

    def _ids(self) -> Iterator[str]:
        for row in self.backend.scan(DOCUMENTS, {"md5": self.key}, columns=["data_id"]):
            yield row["data_id"]

    def iter_bytes(self) -> Iterator[bytes]:
        ids = list(self._ids())  # a row per piece of at least 32 KiB: a few per MiB
        check = _FileCheck(self.backend, self.key, self.where, ids)
        held: bytes | None = None
        for data_id, piece in read_ahead(self.backend, ids, self.where):
            check.add(data_id, piece)
            if held is not None:
                yield held
            held = piece
        check.finish()
        if held is not None:
            yield held

    def iter_range(self, first: int, last: int) -> Iterator[bytes]:
        """Pieces before ``first`` are skipped by the sizes ``archive_piece_refs`` records
        (a piece without that record, as the Java service writes them, is read); each
        piece read is checked."""
        skipped = [0]

        def wanted() -> Iterator[str]:
            skipping = True
            for data_id in self._ids():
                if skipping:
                    ref = self.backend.get(
                        ARCHIVE_PIECE_REFS, {"data_id": data_id, "md5": self.key}, ["size"]
                    )
                    if ref is not None and skipped[0] + int(ref["size"]) <= first:
                        skipped[0] += int(ref["size"])
                        continue
                    skipping = False
                yield data_id

        position = -1
        for _data_id, piece in read_ahead(self.backend, wanted(), self.where, ahead=2):
            if position < 0:
                position = skipped[0]
            if position + len(piece) > first:
                yield piece[max(0, first - position) : last + 1 - position]
            position += len(piece)
            if position > last:
                return

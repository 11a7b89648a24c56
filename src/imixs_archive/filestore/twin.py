"""Known content: a file that arrives again is compared with its stored twin, not hashed.

An attachment is usually carried from snapshot to snapshot unchanged. :class:`KnownContent`
holds back a file's first ``HEAD_BYTES`` and looks their SHA-256 up in
``archive_file_heads``; when a complete stored file starts the same (its *twin*), the
arriving bytes are compared with the twin's stored pieces (read ahead on the piece
threads) and go no further. Equal to its end: the file is the twin (same bytes, so the
same MD5 and pieces). A difference anywhere: the bytes matched so far are read again from
the twin and handed on to the normal path (``content.py``), followed by the rest. The
comparison is of bytes, never of hashes, so an MD5 collision cannot make two contents one.

Only on a backend whose reads are local (``Backend.local_reads``): on Cassandra reading the
twin back costs the node and the client more than hashing the bytes does. There the head
is held back only for its digest, which ``files.py`` registers with the file.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from itertools import chain

from imixs_archive.errors import IntegrityError
from imixs_archive.filestore.reading import read_piece
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import ARCHIVE_FILE_HEADS, ARCHIVE_FILES, DOCUMENTS

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


class KnownContent:
    """One file's head, and the stored twin it leads to, compared as the bytes arrive.

    :meth:`feed` and :meth:`end` return the bytes the normal path takes: none while the
    head is held back or the bytes match the twin; on a difference, the matched bytes read
    again from the twin and then the new ones. After :meth:`end`, :attr:`is_twin` tells
    whether the content was its twin to the last byte."""

    def __init__(
        self, backend: Backend, read: Callable[[str], Future[bytes]], *, find_twins: bool = True
    ) -> None:
        """``read``: a stored piece, unchecked (it is compared byte by byte anyway).
        ``find_twins`` False: the head is only hashed (files stored in Java's cuts)."""
        self._backend = backend
        self._read = read
        self._find_twins = find_twins
        self._held: bytearray | None = bytearray()  # None once the head is looked up
        self.head: str | None = None
        """``head_digest`` of the content (None: shorter than ``HEAD_BYTES``)."""
        self.key = ""
        """The twin's documents key (while it is being compared, and once it matched)."""
        self._ids: list[str] | None = None  # the twin's pieces (None: no twin, or left)
        self._sizes: list[int] = []  # of the twin's pieces compared so far
        self._reads: deque[Future[bytes]] = deque()
        self._requested = 0
        self._piece = b""  # the twin's piece being compared ...
        self._at = 0  # ... up to here
        self.matched = 0
        """Bytes of the content found equal to the twin's so far."""
        self.is_twin = False

    def feed(self, data: bytes) -> Iterable[bytes]:
        if self._held is not None:
            self._held += data
            if len(self._held) < HEAD_BYTES:
                return ()
            data, self._held = bytes(self._held), None
            self.head = head_digest(data)
            if self._backend.local_reads and self._find_twins:
                self._find(self.head)
        if self._ids is None:
            return (data,)
        if self._match(data):
            return ()
        return chain(self._leave(), (data,))

    def end(self) -> Iterable[bytes]:
        """No more bytes: those still held back, or matched with a twin that goes on."""
        if self._held is not None:  # shorter than a head: no twin looked for
            held, self._held = bytes(self._held), None
            return (held,) if held else ()
        if self._ids is None:
            return ()
        if self._complete():
            self.is_twin = True
            return ()
        return self._leave()

    def pieces(self) -> list[tuple[str, int]]:
        """(id, size) of the twin's pieces, once :attr:`is_twin`."""
        assert self.is_twin and self._ids is not None
        return list(zip(self._ids, self._sizes, strict=True))

    def cancel(self) -> None:
        for read in self._reads:
            read.cancel()
        self._reads.clear()

    def _find(self, head: str) -> None:
        """Take the first complete stored file with this head as the twin."""
        backend = self._backend
        rows = backend.scan(ARCHIVE_FILE_HEADS, {"head": head}, limit=TWIN_CANDIDATES)
        for row in list(rows):
            key = row["md5"]
            if backend.get(ARCHIVE_FILES, {"md5": key}, ["md5"]) is None:
                continue  # deleted since, or not complete yet
            data_ids = [
                r["data_id"] for r in backend.scan(DOCUMENTS, {"md5": key}, columns=["data_id"])
            ]
            if data_ids:
                self.key, self._ids = key, data_ids
                return

    def _match(self, data: bytes) -> bool:
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

    def _complete(self) -> bool:
        """Whether every byte of the twin was matched (the content ends where it does)."""
        if self._at < len(self._piece):
            return False
        while (piece := self._next_piece()) is not None:
            if piece:
                return False
        return self._ids is not None and len(self._sizes) == len(self._ids)

    def _leave(self) -> Iterator[bytes]:
        """The content differs from its twin: compare no more; the twin's first
        ``matched`` bytes, read again from the store, go the normal way."""
        assert self._ids is not None
        self.cancel()
        data_ids, left, self._ids = self._ids, self.matched, None
        return _prefix(self._backend, data_ids, left)

    def _next_piece(self) -> bytes | None:
        """The twin's next piece (None after the last, or when it cannot be read)."""
        assert self._ids is not None
        while self._requested < len(self._ids) and len(self._reads) < READ_AHEAD:
            self._reads.append(self._read(self._ids[self._requested]))
            self._requested += 1
        if not self._reads:
            return None
        try:
            piece = self._reads.popleft().result()
        except IntegrityError:
            return None  # a piece is missing: compare no further (verify reports it)
        self._sizes.append(len(piece))
        return piece


def _prefix(backend: Backend, data_ids: list[str], size: int) -> Iterator[bytes]:
    """The first ``size`` bytes of a stored file, piece by piece."""
    for data_id in data_ids:
        if size <= 0:
            return
        piece = read_piece(backend, data_id, check=False)  # matched already
        yield piece[:size]
        size -= len(piece)

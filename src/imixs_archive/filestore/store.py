"""``FileStore``: the one door to the piece store.

What the snapshot index (``archive/snapshots.py``) and everyone above it ask of files: take
an attachment's bytes in (cut, hashed, each piece stored once: ``content.py``, ``twin.py``),
register the file under its key (``files.py``), hand a stored file back as a stream checked
as it is read (``reading.py``), say what is stored, and collect what nothing refers to any
more (``garbage.py``, ``gc.py``). The modules behind it stay free functions over a backend;
only this class is used from outside the package.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from imixs_archive.errors import IntegrityError, NotFoundError, StoreUnavailableError
from imixs_archive.filestore.chunking import CONTENT, JAVA
from imixs_archive.filestore.confirmed import RecentlyConfirmed
from imixs_archive.filestore.content import (
    IngestCounters,
    IngestedContent,
    PieceStore,
    PieceWriter,
    cut_digest,
    ingest_stream,
)
from imixs_archive.filestore.files import ledger_digest_of, link_stored, register_file
from imixs_archive.filestore.garbage import CUT, PIECE, listed
from imixs_archive.filestore.gc import GcReport, collect
from imixs_archive.filestore.reading import (
    EMPTY_MD5,
    StoredContent,
    is_hashed,
    pieces_digest,
    read_piece,
)
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import ARCHIVE_FILES, DOCUMENTS, DOCUMENTS_DATA

REGISTERED_FILES = 16_384
"""Files remembered as registered lately (see :meth:`FileStore.register`; about 3 MB)."""


def store_cuts(backend: Backend) -> str:
    """The pieces new files are stored in by default: Java's cuts in a Cassandra keyspace,
    which the Java service may share (``chunking.py``), content-defined ones elsewhere."""
    return JAVA if backend.name == "cassandra" else CONTENT


class FileStore:
    """Files and their pieces in one store; the piece threads are this object's."""

    def __init__(
        self, backend: Backend, *, confirmed_for: float = 0.0, cuts: str = CONTENT
    ) -> None:
        """``confirmed_for``: how long a piece or file confirmed stored is taken as stored
        without a look-up, where look-ups cross the network (see ``PieceStore``).
        ``cuts``: the pieces new files are stored in (``chunking.py``: ``content`` or
        ``java``)."""
        self._backend = backend
        self._pieces = PieceStore(backend, confirmed_for=confirmed_for, cuts=cuts)
        self._registered = RecentlyConfirmed[str](
            0.0 if backend.local_reads else confirmed_for, REGISTERED_FILES
        )
        """File digest -> its documents key, of the files registered lately."""

    def close(self) -> None:
        """Stop the piece threads (the backend stays open: it is the caller's)."""
        self._pieces.close()

    # ---- in ---------------------------------------------------------------------------

    def sink(self) -> PieceWriter:
        """Where a reader streams one attachment's bytes as it parses them: pieces are cut,
        hashed and written while the reader goes on (``PieceWriter``). Its counters are its
        own: the bytes count for the snapshot once the file is registered."""
        return PieceWriter(self._pieces, IngestCounters())

    def ingest(self, chunks: Iterable[bytes], counters: IngestCounters) -> IngestedContent:
        """An attachment's bytes, cut and stored piece by piece."""
        return ingest_stream(self._pieces, chunks, counters)

    def register(self, content: IngestedContent) -> str:
        """The file's rows, once its pieces are stored; its key (``documents``).

        A file this store registered lately (within ``confirmed_for``) is not registered
        again: an attachment carried from snapshot to snapshot costs three round trips in
        a row otherwise (its pin, the collector's list, its record). Safe for the reason a
        confirmed piece is (``PieceStore``): the registration wrote its pin and found it
        off the collector's list and complete; it can be removed only a grace period after
        a later listing. An empty file gets no rows: it has no bytes to keep, and the
        Java service stores none for it either."""
        if content.md5 == EMPTY_MD5 and not content.pieces:
            return EMPTY_MD5  # no bytes: nothing to store or keep (as the Java service)
        key = self._registered.get(content.digest)
        if key is not None:
            return key
        looked = time.monotonic()
        key = register_file(self._backend, content)
        self._registered.keep([(content.digest, key)], looked)
        return key

    def link_stored(self, claimed_md5: str) -> bool:
        """Whether a file a snapshot names by its MD5 alone (its content left out) is stored,
        by this archive or the Java service; it is then kept from collection."""
        return link_stored(self._backend, claimed_md5)

    def check_reused(self, contents: Iterable[IngestedContent]) -> None:
        """After an ingest longer than half the grace period: the collector may have listed
        (and removed) a piece the ingest found stored and did not write again."""
        for content in contents:
            for piece in content.pieces:
                key = {"data_id": piece.data_id}
                gone = self._backend.get(DOCUMENTS_DATA, key, ["data_id"]) is None
                kind = PIECE if is_hashed(piece.data_id) else CUT  # CUT: cut as Java cuts
                if gone or listed(self._backend, kind, piece.data_id) is not None:
                    raise StoreUnavailableError(
                        "the ingest took longer than half the collector's grace period and a "
                        f"piece it reused ({piece.data_id}) is being collected: archive it again"
                    )

    # ---- out --------------------------------------------------------------------------

    def exists(self, key: str) -> bool:
        """Whether a file is stored whole under this key by this archive."""
        return self._backend.get(ARCHIVE_FILES, {"md5": key}, ["md5"]) is not None

    def has_rows(self, key: str) -> bool:
        """Whether any piece is listed under this key (files the Java service stored)."""
        return next(self._backend.scan(DOCUMENTS, {"md5": key}, limit=1), None) is not None

    def size(self, key: str) -> int | None:
        """A stored file's size, or None when it is not (or not yet) stored."""
        row = self._backend.get(ARCHIVE_FILES, {"md5": key}, ["size"])
        return int(row["size"]) if row is not None else None

    def digest(self, key: str) -> str | None:
        """The digest over a file's piece ids, when this archive recorded one."""
        row = self._backend.get(ARCHIVE_FILES, {"md5": key}, ["digest"])
        return row["digest"] if row is not None else None

    def content_digest(self, key: str) -> str | None:
        """The digest over a file's content-defined cuts (what the ledger logs) as this
        archive recorded it, whatever pieces it is stored in; None when none is recorded.
        Two stores holding the same file agree on it, in any cuts."""
        digest = self.digest(key)
        return None if digest is None else ledger_digest_of(self._backend, key, digest)

    def ledger_digest(self, key: str, *, read_all: bool = False, where: str = "") -> str:
        """The file's content digest as the ledger records it: the SHA-256 over the
        SHA-256s (hex) of its bytes as this archive's chunker cuts them (``chunking.py``),
        the ingest's ``IngestedContent.ledger_digest``: the digest ``archive_files``
        records for a file stored in those cuts, else the one its ``archive_file_cuts``
        row records (stored in Java's cuts). Checked against what is stored: pieces with
        content addresses must make the recorded digest (their bytes are checked on every
        read; ``read_all`` reads them here too); a file stored in other cuts (Java's, or
        the Java service's random ids) is cut again from its bytes with ``read_all``, and
        always when only the Java service stored it. IntegrityError when a piece read is
        missing or corrupt, or a piece list does not make its digest."""
        info = self._backend.get(ARCHIVE_FILES, {"md5": key}, ["digest"])
        rows = self._backend.scan(DOCUMENTS, {"md5": key}, columns=["data_id"])
        ids = [row["data_id"] for row in rows]
        recorded = None if info is None else str(info["digest"])
        ledger = None if recorded is None else ledger_digest_of(self._backend, key, recorded)
        if recorded is not None and all(is_hashed(data_id) for data_id in ids):
            if pieces_digest(ids) != recorded:
                raise IntegrityError(f"{where}: its piece list does not match its digest")
            if ledger == recorded:
                for data_id in ids if read_all else ():
                    read_piece(self._backend, data_id, where)
                return recorded
        if ledger is not None and not read_all:
            return ledger
        return cut_digest(read_piece(self._backend, data_id, where) for data_id in ids)

    def content(self, key: str, where: str = "") -> StoredContent:
        """A stored file's bytes, read piece by piece and checked as they come
        (``where`` names it in an error)."""
        return StoredContent(self._backend, key, where=where)

    def by_md5(self, md5: str) -> StoredContent:
        """A stored file by its MD5 (hex, either case); NotFoundError when none is."""
        key = md5.strip().upper()
        if key != EMPTY_MD5 and not self.exists(key) and not self.has_rows(key):
            raise NotFoundError(f"no file with MD5 {key} in the archive")
        return self.content(key)

    # ---- collection -------------------------------------------------------------------

    def collect(self, *, grace: float, dry_run: bool = False) -> GcReport:
        """One collection (``gc.py``): remove what was listed ``grace`` seconds ago and is
        still unreferenced, list what is unreferenced now."""
        return collect(self._backend, grace=grace, dry_run=dry_run)

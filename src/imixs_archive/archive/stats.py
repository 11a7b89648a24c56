"""``stats``: what the archive holds, counted from the store itself (never from counters
that a crash could have left wrong). Every count is one streaming pass over a table. The
figures per day are the analytics' (``services/statistics.py`` adds them).

``stats``, ``verify`` and ``gc`` count the same things: ``files`` and ``pieces`` are what
the store holds, in use or not (``verify`` checks each of them); of them ``unused_files``
and ``unused_pieces`` are what collections free, and ``reclaimable_bytes`` their bytes
(``filestore/gc.py``: :func:`unused_now`). ``stored_bytes`` are the bytes of every stored
piece, reclaimable ones included; a delete changes none of these but the unused ones,
a collection that removes them lowers them all."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from imixs_archive.budget import checkpoint
from imixs_archive.document.conventions import METADATA_ID
from imixs_archive.filestore.gc import unused_now
from imixs_archive.filestore.reading import is_hashed
from imixs_archive.jsonable import Jsonable
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import (
    ARCHIVE_FILES,
    ARCHIVE_PIECE_REFS,
    ARCHIVE_SNAPSHOT_FILES,
    DOCUMENTS_DATA,
    SNAPSHOTS,
    SNAPSHOTS_BY_UNIQUEID,
)


@dataclass
class Stats(Jsonable):
    snapshots: int = 0
    instances: int = 0
    files: int = 0
    """Files stored (in use or not)."""
    pieces: int = 0
    """Pieces stored (in use or not)."""
    unused_files: int = 0
    """Of the files: those no snapshot uses (collections remove them)."""
    unused_pieces: int = 0
    """Of the pieces: those only unused files use, or no file uses."""
    logical_bytes: int = 0
    """Attachment bytes as the snapshots carry them (a file in 10 snapshots counts 10 times)."""
    file_bytes: int = 0
    """Bytes of the distinct files."""
    stored_bytes: int = 0
    """Bytes of the stored pieces: what attachments really take (reclaimable included)."""
    reclaimable_bytes: int = 0
    """Bytes of the unused pieces: what collections free (as ``verify`` and ``gc`` say)."""

    @property
    def dedup_ratio(self) -> float:
        return self.logical_bytes / self.stored_bytes if self.stored_bytes else 1.0

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "dedup_ratio": round(self.dedup_ratio, 3)}


def collect_stats(backend: Backend) -> Stats:
    """One pass over each table (``budget.checkpoint`` between rows: a census ``serve``
    runs stops when it does)."""
    stats = Stats()
    for row in backend.scan(SNAPSHOTS, columns=["snapshot"]):
        checkpoint()
        stats.snapshots += row["snapshot"] != METADATA_ID
    stats.instances = _count_partitions(backend.scan(SNAPSHOTS_BY_UNIQUEID), "uniqueid")
    sizes = _FileSizes(backend)
    for row in backend.scan(ARCHIVE_FILES, columns=["md5", "size"]):
        checkpoint()
        stats.files += 1
        stats.file_bytes += row["size"]
        sizes.offer(row["md5"], row["size"])
    for row in backend.scan(ARCHIVE_SNAPSHOT_FILES, columns=["md5"]):
        checkpoint()
        stats.logical_bytes += sizes.of(row["md5"])
    last, referenced = None, 0
    for row in backend.scan(ARCHIVE_PIECE_REFS):
        checkpoint()
        if row["data_id"] != last:
            referenced += 1
            stats.stored_bytes += row["size"]
            last = row["data_id"]
    hashed = 0
    for row in backend.scan(DOCUMENTS_DATA, columns=["data_id"]):
        checkpoint()
        stats.pieces += 1
        hashed += is_hashed(row["data_id"])
    unused = unused_now(backend, orphans=max(hashed - referenced, 0))
    stats.unused_files, stats.unused_pieces = unused.files, unused.pieces
    stats.reclaimable_bytes = unused.bytes
    stats.stored_bytes += unused.loose_bytes  # pieces no file refers to: not in the refs
    return stats


SIZES_KEPT = 32_768
"""Files whose sizes the census keeps at once (a few MB): all of them in a smaller archive."""


class _FileSizes:
    """Files' sizes for the sum of what the snapshots carry, in memory that does not grow
    with the archive: those of the first ``SIZES_KEPT`` files, then the ones used last
    (a snapshot's files are mostly its instance's, whose snapshots come together on the
    embedded store); any other is looked up (0: no such file, as a damaged or Java-only
    one counts)."""

    def __init__(self, backend: Backend, kept: int | None = None) -> None:
        self._backend = backend
        self._kept = SIZES_KEPT if kept is None else kept
        self._sizes: OrderedDict[str, int] = OrderedDict()

    def offer(self, key: str, size: int) -> None:
        if len(self._sizes) < self._kept:
            self._sizes[key] = size

    def of(self, key: str) -> int:
        size = self._sizes.get(key)
        if size is not None:
            self._sizes.move_to_end(key)
            return size
        row = self._backend.get(ARCHIVE_FILES, {"md5": key}, ["size"])
        size = int(row["size"]) if row is not None else 0
        self._sizes[key] = size
        if len(self._sizes) > self._kept:
            self._sizes.popitem(last=False)
        return size


def _count_partitions(rows: Any, column: str) -> int:
    count, last = 0, None
    for row in rows:
        if row[column] != last:
            count, last = count + 1, row[column]
    return count

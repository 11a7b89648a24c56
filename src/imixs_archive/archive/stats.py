"""``stats``: what the archive holds, counted from the store itself (never from counters
that a crash could have left wrong). Every count is one streaming pass over a table. The
figures per day are the analytics' (``services/statistics.py`` adds them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from imixs_archive.document.conventions import METADATA_ID
from imixs_archive.filestore.gc import listed_bytes
from imixs_archive.jsonable import Jsonable
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import (
    ARCHIVE_FILES,
    ARCHIVE_PIECE_REFS,
    ARCHIVE_SNAPSHOT_FILES,
    SNAPSHOTS,
    SNAPSHOTS_BY_UNIQUEID,
)


@dataclass
class Stats(Jsonable):
    snapshots: int = 0
    instances: int = 0
    files: int = 0
    pieces: int = 0
    logical_bytes: int = 0
    """Attachment bytes as the snapshots carry them (a file in 10 snapshots counts 10 times)."""
    file_bytes: int = 0
    """Bytes of the distinct files."""
    stored_bytes: int = 0
    """Bytes of the distinct pieces: what attachments really take."""
    reclaimable_bytes: int = 0
    """Bytes the collector has listed as unused (as of its last run; ``verify`` counts
    everything unused now)."""

    @property
    def dedup_ratio(self) -> float:
        return self.logical_bytes / self.stored_bytes if self.stored_bytes else 1.0

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "dedup_ratio": round(self.dedup_ratio, 3)}


def collect_stats(backend: Backend) -> Stats:
    stats = Stats()
    for row in backend.scan(SNAPSHOTS, columns=["snapshot"]):
        stats.snapshots += row["snapshot"] != METADATA_ID
    stats.instances = _count_partitions(backend.scan(SNAPSHOTS_BY_UNIQUEID), "uniqueid")
    sizes: dict[str, int] = {}
    for row in backend.scan(ARCHIVE_FILES, columns=["md5", "size"]):
        sizes[row["md5"]] = row["size"]
    stats.files = len(sizes)
    stats.file_bytes = sum(sizes.values())
    for row in backend.scan(ARCHIVE_SNAPSHOT_FILES, columns=["md5"]):
        stats.logical_bytes += sizes.get(row["md5"], 0)
    last = None
    for row in backend.scan(ARCHIVE_PIECE_REFS):
        if row["data_id"] != last:
            stats.pieces += 1
            stats.stored_bytes += row["size"]
            last = row["data_id"]
    stats.reclaimable_bytes = listed_bytes(backend)
    return stats


def _count_partitions(rows: Any, column: str) -> int:
    count, last = 0, None
    for row in rows:
        if row[column] != last:
            count, last = count + 1, row[column]
    return count

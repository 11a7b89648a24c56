"""The archive's typed reads for walkers (``Archive.index``): the snapshot ids of each
process instance, of the whole store, of a file; the stored keys of a snapshot's files.
Over ``snapshot_reads.py`` and ``instance_runs.py``, so no layer above reads table rows."""

from __future__ import annotations

from collections.abc import Iterator

from imixs_archive.archive import snapshot_reads as reads
from imixs_archive.archive.instance_runs import instances_in_range
from imixs_archive.document.conventions import METADATA_ID
from imixs_archive.document.model import Document
from imixs_archive.storage.base import Backend, Position
from imixs_archive.storage.model import SNAPSHOTS


class SnapshotIndex:
    """Walks over the snapshots of one archive, by instance, by file, in store order."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    def iter_instances(self) -> Iterator[list[str]]:
        """The snapshot ids of each process instance, oldest first, one instance at a
        time (complete ones and any being written or deleted: ``Archive.exists`` tells)."""
        return reads.iter_instances(self._backend)

    def instance_ids(self, uniqueid: str) -> list[str]:
        """The snapshot ids of one process instance, oldest first, as
        :meth:`iter_instances` gives them (complete ones and any being written or deleted)."""
        return reads.instance_ids(self._backend, uniqueid)

    def instances_in_range(
        self, after: Position | None = None, upto: Position | None = None
    ) -> Iterator[tuple[Position, list[str]]]:
        """(position, snapshot ids oldest first) of each instance after ``after`` up to
        ``upto`` in the store's range order (``instance_runs.py``)."""
        return instances_in_range(self._backend, after, upto)

    def iter_complete(self) -> Iterator[tuple[str, Document]]:
        """(id, snapshot without file contents) of every complete snapshot."""
        return reads.iter_complete(self._backend)

    def iter_snapshot_ids(self) -> Iterator[str]:
        """Every complete snapshot id, in the store's order."""
        for row in self._backend.scan(SNAPSHOTS, columns=["snapshot"]):
            if row["snapshot"] != METADATA_ID:
                yield row["snapshot"]

    def file_keys(self, snapshot_id: str, doc: Document) -> dict[str, str]:
        """File name -> stored key of a snapshot's files."""
        return reads.snapshot_file_keys(self._backend, snapshot_id, doc)

    def previous_file_keys(self, snapshot_id: str) -> set[str]:
        """The file keys of the instance's snapshot before this one."""
        return reads.previous_file_keys(self._backend, snapshot_id)

    def snapshots_with_file(self, key: str) -> Iterator[str]:
        """The ids of the snapshots that refer to a stored file."""
        return reads.snapshots_with_file(self._backend, key)

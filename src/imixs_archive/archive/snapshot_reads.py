"""Reads for those that walk many snapshots (the archive itself, retention, backup, the
analytics), typed, so no layer above the archive reads table rows: one snapshot without
its file contents, the stored keys and sizes of files, the snapshot ids of every process
instance or of one day, the snapshots that refer to a file. ``Archive`` offers each as a
method over its backend."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator

from imixs_archive.archive.snapshot_xml import load_row
from imixs_archive.document.conventions import (
    METADATA_ID,
    is_snapshot_id,
    iter_files,
    origin_id,
    snapshot_order,
)
from imixs_archive.document.model import Document
from imixs_archive.storage.base import Backend, Row
from imixs_archive.storage.model import (
    ARCHIVE_FILES,
    ARCHIVE_SNAPSHOT_FILES,
    SNAPSHOTS,
    SNAPSHOTS_BY_DOCUMENT,
    SNAPSHOTS_BY_MODIFIED,
    SNAPSHOTS_BY_UNIQUEID,
)


def load_complete(backend: Backend, snapshot_id: str) -> Document | None:
    """The snapshot without file contents, or None when it is not complete (being
    written, or being deleted): one read, where ``Archive.exists`` + ``load`` take two."""
    row = backend.get(SNAPSHOTS, {"snapshot": snapshot_id})
    return None if row is None else load_row(backend, row)


def is_archived(backend: Backend, snapshot_id: str) -> bool:
    """Whether the snapshot is archived, complete (its ``snapshots`` row is there)."""
    return backend.get(SNAPSHOTS, {"snapshot": snapshot_id}, ["snapshot"]) is not None


def snapshot_file_keys(backend: Backend, snapshot_id: str, doc: Document) -> dict[str, str]:
    """File name -> stored key (``documents``) of a snapshot's files: this archive's
    record in ``archive_snapshot_files``, else the upper-case ``md5checksum`` (snapshots
    the Java service wrote)."""
    rows = backend.scan(ARCHIVE_SNAPSHOT_FILES, {"snapshot": snapshot_id})
    return keys_of(doc, rows)


def keys_of(doc: Document, rows: Iterable[Row]) -> dict[str, str]:
    """File name -> stored key of a snapshot's files from its ``archive_snapshot_files``
    rows (:func:`snapshot_file_keys`)."""
    keys = {row["name"]: row["md5"] for row in rows}
    for entry in iter_files(doc):
        if entry.name not in keys and entry.md5checksum:
            keys[entry.name] = entry.md5checksum.upper()
    return keys


def iter_instances(backend: Backend) -> Iterator[list[str]]:
    """The snapshot ids of each process instance, oldest first, one instance at a time:
    a paged pass over ``snapshots_by_uniqueid``, whose rows of one instance come together.
    Ids of snapshots being written or deleted are among them (``load_complete`` tells).
    Memory: the ids of one instance."""
    current: str | None = None
    ids: list[str] = []
    for row in backend.scan(SNAPSHOTS_BY_UNIQUEID):
        if row["uniqueid"] != current:
            if ids:
                yield sorted(ids, key=snapshot_order)
            current, ids = row["uniqueid"], []
        if is_snapshot_id(row["snapshot"]):
            ids.append(row["snapshot"])
    if ids:
        yield sorted(ids, key=snapshot_order)


def iter_complete(backend: Backend) -> Iterator[tuple[str, Document]]:
    """(id, snapshot without file contents) of every complete snapshot, in the store's
    order (one pass over ``snapshots``)."""
    for row in backend.scan(SNAPSHOTS):
        if row["snapshot"] != METADATA_ID:
            yield row["snapshot"], load_row(backend, row)


def instance_ids(backend: Backend, uniqueid: str) -> list[str]:
    """The snapshot ids of one process instance, oldest first (complete ones and any
    being written or deleted, as :func:`iter_instances` gives them): one partition."""
    rows = backend.scan(SNAPSHOTS_BY_UNIQUEID, {"uniqueid": uniqueid}, columns=["snapshot"])
    return sorted(
        (r["snapshot"] for r in rows if is_snapshot_id(r["snapshot"])), key=snapshot_order
    )


def day_snapshot_ids(backend: Backend, day: dt.date) -> list[str]:
    """The ids filed under one UTC day of ``$modified`` (complete ones and any being
    written or deleted: ``load_complete`` tells)."""
    rows = backend.scan(SNAPSHOTS_BY_MODIFIED, {"modified": day}, columns=["snapshot"])
    return [row["snapshot"] for row in rows]


def stored_file_size(backend: Backend, key: str) -> int | None:
    """The size of a stored file by its key, or None when it is not (or not yet) stored."""
    row = backend.get(ARCHIVE_FILES, {"md5": key}, ["size"])
    return int(row["size"]) if row is not None else None


def previous_file_keys(backend: Backend, snapshot_id: str) -> set[str]:
    """The file keys this archive recorded for the instance's snapshot before this one
    (two small reads)."""
    previous = next(
        backend.scan(
            SNAPSHOTS_BY_UNIQUEID,
            {"uniqueid": origin_id(snapshot_id)},
            start_after={"snapshot": snapshot_id},
            descending=True,
            limit=1,
        ),
        None,
    )
    if previous is None:
        return set()
    rows = backend.scan(ARCHIVE_SNAPSHOT_FILES, {"snapshot": previous["snapshot"]})
    return {row["md5"] for row in rows}


def snapshots_with_file(backend: Backend, key: str) -> Iterator[str]:
    """The ids of the snapshots that refer to a stored file (its ``snapshots_by_document``
    partition; the pin and other non-ids among them)."""
    for row in backend.scan(SNAPSHOTS_BY_DOCUMENT, {"md5": key}, columns=["snapshot"]):
        yield row["snapshot"]

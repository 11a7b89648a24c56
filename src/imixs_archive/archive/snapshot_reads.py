"""Reads of complete snapshots for those that walk many (the archive itself, retention,
backup, the analytics): one snapshot without its file contents, the stored keys of its
files, and the snapshot ids of every process instance, one instance at a time."""

from __future__ import annotations

from collections.abc import Iterator

from imixs_archive.archive.snapshot_xml import snapshot_xml
from imixs_archive.document.conventions import is_snapshot_id, iter_files, snapshot_order
from imixs_archive.document.model import Document
from imixs_archive.document.xml_reader import read_xml_document
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import ARCHIVE_SNAPSHOT_FILES, SNAPSHOTS, SNAPSHOTS_BY_UNIQUEID


def load_complete(backend: Backend, snapshot_id: str) -> Document | None:
    """The snapshot without file contents, or None when it is not complete (being
    written, or being deleted): one read, where ``Archive.exists`` + ``load`` take two."""
    row = backend.get(SNAPSHOTS, {"snapshot": snapshot_id})
    return None if row is None else read_xml_document(snapshot_xml(backend, row))


def snapshot_file_keys(backend: Backend, snapshot_id: str, doc: Document) -> dict[str, str]:
    """File name -> stored key (``documents``) of a snapshot's files: this archive's
    record in ``archive_snapshot_files``, else the upper-case ``md5checksum`` (snapshots
    the Java service wrote)."""
    keys = {
        row["name"]: row["md5"]
        for row in backend.scan(ARCHIVE_SNAPSHOT_FILES, {"snapshot": snapshot_id})
    }
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

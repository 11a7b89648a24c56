"""Rows as the Java Imixs-Archive service writes them (imixs-archive 3.1.x ``DataService``),
statement by statement: for tests of this archive beside it on one keyspace."""

from __future__ import annotations

import hashlib
import uuid

from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.conventions import iter_files, modified_day, origin_id
from imixs_archive.document.model import Document
from imixs_archive.document.xml_writer import to_xml
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import (
    DOCUMENTS,
    DOCUMENTS_DATA,
    SNAPSHOTS,
    SNAPSHOTS_BY_DOCUMENT,
    SNAPSHOTS_BY_MODIFIED,
    SNAPSHOTS_BY_UNIQUEID,
)


def java_store_file(backend: Backend, content: bytes) -> str:
    """A file as the Java service stores it: 1 MiB pieces under random ids."""
    md5 = hashlib.md5(content).hexdigest().upper()
    for index in range(0, max(1, -(-len(content) // 2**20))):
        data_id = str(uuid.uuid4())
        piece = content[index * 2**20 : (index + 1) * 2**20]
        backend.put(DOCUMENTS_DATA, [{"data_id": data_id, "data": piece}])
        backend.put(DOCUMENTS, [{"md5": md5, "sort_id": index, "data_id": data_id}])
    return md5


def java_load_file(backend: Backend, md5: str) -> bytes:
    """``DataService.loadFileData``: the pieces the file's ``documents`` rows list, in
    ``sort_id`` order, joined; no check of any kind (the Java service makes none)."""
    rows = backend.scan(DOCUMENTS, {"md5": md5}, columns=["data_id"])
    pieces = [backend.get(DOCUMENTS_DATA, {"data_id": row["data_id"]}) for row in rows]
    return b"".join(piece["data"] for piece in pieces if piece is not None)


def java_store_snapshot(backend: Backend, doc: Document) -> str:
    """``DataService.saveSnapshot``: the files (``extractDocuments``: pieces, then the
    ``snapshots_by_document`` row), the ``snapshots`` row (its XML, contents emptied, no
    seal), then the two index rows; none of this archive's own rows."""
    snapshot_id = str(doc.get_first("$uniqueid"))
    stored = doc.copy()
    if "$file" in doc:
        emptied = {}
        for entry in iter_files(doc):
            content = entry.content
            if isinstance(content, bytes) and content:
                md5 = java_store_file(backend, content)
                backend.put(SNAPSHOTS_BY_DOCUMENT, [{"md5": md5, "snapshot": snapshot_id}])
            emptied[entry.name] = [entry.content_type, b"", entry.attributes]
        stored["$file"] = [emptied]
    backend.put(SNAPSHOTS, [{"snapshot": snapshot_id, "data": to_xml(stored)}])
    backend.put(
        SNAPSHOTS_BY_UNIQUEID, [{"uniqueid": origin_id(snapshot_id), "snapshot": snapshot_id}]
    )
    backend.put(SNAPSHOTS_BY_MODIFIED, [{"modified": modified_day(doc), "snapshot": snapshot_id}])
    return snapshot_id


def java_delete_snapshot(backend: Backend, archive: Archive, snapshot_id: str) -> None:
    """``DataService.deleteSnapshot`` of the Java service (imixs-archive 3.1.x), statement by
    statement: the snapshot's rows, then ``deleteDocuments`` over the snapshot loaded
    with its files merged (the MD5 of each file's bytes)."""
    doc = archive.load(snapshot_id)
    backend.delete(SNAPSHOTS, {"snapshot": snapshot_id})
    backend.delete(
        SNAPSHOTS_BY_UNIQUEID, {"uniqueid": origin_id(snapshot_id), "snapshot": snapshot_id}
    )
    backend.delete(SNAPSHOTS_BY_MODIFIED, {"modified": modified_day(doc), "snapshot": snapshot_id})
    for entry in iter_files(doc):
        content = entry.content
        data = content if isinstance(content, bytes) else content.read_all()  # type: ignore[union-attr]
        if not data:
            continue
        md5 = hashlib.md5(data).hexdigest().upper()
        backend.delete(SNAPSHOTS_BY_DOCUMENT, {"md5": md5, "snapshot": snapshot_id})
        if next(backend.scan(SNAPSHOTS_BY_DOCUMENT, {"md5": md5}), None) is not None:
            return  # "other snapshots refer to this document": Java stops here
        rows = list(backend.scan(DOCUMENTS, {"md5": md5}))
        for row in rows:
            backend.delete(DOCUMENTS_DATA, {"data_id": row["data_id"]})
        for row in rows:
            backend.delete(DOCUMENTS, {"md5": md5, "sort_id": row["sort_id"]})

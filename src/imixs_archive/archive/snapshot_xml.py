"""A snapshot's XML in the ``snapshots`` row, or, when it is large, in parts.

The ``snapshots`` row is one cell, and a Cassandra mutation has a size limit (half the
commit log segment: 16 MiB by default), so a snapshot whose items alone (files emptied)
make more XML than :data:`INLINE_LIMIT` is written as 1 MiB parts into
``archive_snapshot_parts`` first; its ``snapshots`` row then holds a small marker naming
the number of parts, their total size and SHA-256. The marker starts with a NUL byte, so
it can never be taken for XML. Up to the limit the XML stays inline, where the Java
service reads it (it cannot write larger snapshots itself).

Parts are written before the row and deleted after it, so the row's presence still means
"complete", and every read of parts is checked against the marker.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

from imixs_archive.errors import IntegrityError
from imixs_archive.storage.base import Backend, Row
from imixs_archive.storage.model import ARCHIVE_SNAPSHOT_PARTS, SNAPSHOTS

MiB = 1024 * 1024
INLINE_LIMIT = 8 * MiB
"""The largest XML kept in the ``snapshots`` cell (under Cassandra's default 16 MiB
mutation and frame limits, with room to spare)."""
PART_SIZE = 1 * MiB
BATCH_PARTS = 8
"""Parts buffered before they are written (memory: at most this many MiB)."""
MARKER = b"\x00imixs-archive:parts "


class _Parts:
    """Numbers, hashes and writes the parts of one snapshot's XML."""

    def __init__(self, backend: Backend, snapshot_id: str) -> None:
        self.backend = backend
        self.snapshot_id = snapshot_id
        self.digest = hashlib.sha256()
        self.count = 0
        self.size = 0

    def write(self, parts: list[bytes]) -> None:
        rows = []
        for part in parts:
            self.digest.update(part)
            rows.append({"snapshot": self.snapshot_id, "part": self.count, "data": part})
            self.count += 1
            self.size += len(part)
        self.backend.put(ARCHIVE_SNAPSHOT_PARTS, rows)
        parts.clear()

    def marker(self) -> bytes:
        fields = {"parts": self.count, "size": self.size, "sha256": self.digest.hexdigest()}
        return MARKER + json.dumps(fields, sort_keys=True).encode()


def put_snapshot_xml(backend: Backend, snapshot_id: str, xml: Iterable[bytes]) -> int:
    """Write the ``snapshots`` row of ``snapshot_id`` (after its parts, when the XML is
    larger than :data:`INLINE_LIMIT`). Returns the XML's size in bytes."""
    buffer = bytearray()
    pending: list[bytes] = []
    parts: _Parts | None = None
    for piece in xml:
        buffer += piece
        if parts is None and len(buffer) <= INLINE_LIMIT:
            continue
        parts = parts or _Parts(backend, snapshot_id)
        while len(buffer) >= PART_SIZE:
            pending.append(bytes(buffer[:PART_SIZE]))
            del buffer[:PART_SIZE]
            if len(pending) >= BATCH_PARTS:
                parts.write(pending)
    if parts is None:
        backend.put(SNAPSHOTS, [{"snapshot": snapshot_id, "data": bytes(buffer)}])
        return len(buffer)
    if buffer:
        pending.append(bytes(buffer))
    parts.write(pending)
    backend.put(SNAPSHOTS, [{"snapshot": snapshot_id, "data": parts.marker()}])
    return parts.size


def xml_size(row: Row) -> int:
    """The size of a ``snapshots`` row's XML, inline or in parts (from the marker)."""
    data: bytes = row["data"]
    if data.startswith(MARKER):
        try:
            return int(json.loads(data[len(MARKER) :])["size"])
        except (ValueError, KeyError, TypeError):
            return len(data)
    return len(data)


def is_in_parts(row: Row) -> bool:
    data: bytes = row["data"]
    return data.startswith(MARKER)


def snapshot_xml(backend: Backend, row: Row) -> bytes:
    """The XML of a ``snapshots`` row: the cell itself, or its parts joined and checked
    against the marker (IntegrityError naming the snapshot when they do not match)."""
    data: bytes = row["data"]
    if not data.startswith(MARKER):
        return data
    snapshot_id = row["snapshot"]
    try:
        expected = json.loads(data[len(MARKER) :])
        count, size, sha256 = int(expected["parts"]), int(expected["size"]), expected["sha256"]
    except (ValueError, KeyError, TypeError):
        raise IntegrityError(f"snapshot {snapshot_id}: unreadable parts marker") from None
    joined = bytearray()
    numbers = []
    for part in backend.scan(ARCHIVE_SNAPSHOT_PARTS, {"snapshot": snapshot_id}):
        numbers.append(part["part"])
        joined += part["data"]
    if numbers != list(range(count)):
        raise IntegrityError(
            f"snapshot {snapshot_id}: its XML has {count} parts, the store holds {len(numbers)}"
        )
    if len(joined) != size or hashlib.sha256(joined).hexdigest() != sha256:
        raise IntegrityError(f"snapshot {snapshot_id}: the parts of its XML do not match")
    return bytes(joined)


def delete_snapshot_xml(backend: Backend, snapshot_id: str, row: Row | None) -> None:
    """Delete the ``snapshots`` row, then its parts (when it had any, or when the row is
    already gone: a re-run of an interrupted delete)."""
    backend.delete(SNAPSHOTS, {"snapshot": snapshot_id})
    if row is None or is_in_parts(row):
        backend.delete(ARCHIVE_SNAPSHOT_PARTS, {"snapshot": snapshot_id})

"""A snapshot's XML in the ``snapshots`` row, or, when it is large, in parts.

The ``snapshots`` row is one cell, and a Cassandra mutation has a size limit (half the
commit log segment: 16 MiB by default), so a snapshot whose items alone (files emptied)
make more XML than the store's ``Backend.inline_limit`` (that limit, less 64 KiB; the
Java service writes inline up to it and fails beyond) is written as 1 MiB parts into
``archive_snapshot_parts`` first; its ``snapshots`` row then holds a small marker naming
the number of parts, their total size and SHA-256. The marker starts with a NUL byte, so
it can never be taken for XML. Up to the limit the XML stays inline, where the Java
service reads it (it cannot write larger snapshots itself).

Parts are written before the row and deleted after it, so the row's presence still means
"complete", and every read of parts is checked against the marker.

Every read is checked. Inline XML carries its own SHA-256 in a comment after the root
element, the *seal*: ``<!--imixs-archive sha256:<64 hex>-->``, over every byte before it.
A comment there is plain XML, so the Java service reads the row as before (checked with
the real Imixs classes in ``tests/document/test_java_compat.py``); and the row is one cell,
so the seal and the XML it covers are always written together, even when the Java service
writes the same snapshot at the same moment (its row, without a seal, then simply wins
whole). A row in parts is checked against its marker's SHA-256. A row without either
(written by the Java service, or by this archive before seals existed) is *unverified*:
it is only parsed, and ``verify`` seals it (:func:`seal_row`). Reads answer
:class:`StoredXml`: the XML without its seal, and whether it was verified; a seal that
does not match, a damaged seal or marker, or a row that is not XML at all is an
``IntegrityError`` naming the snapshot (:func:`parse_stored`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from imixs_archive.document.model import Document
from imixs_archive.document.xml_reader import read_xml_document
from imixs_archive.errors import DocumentError, IntegrityError
from imixs_archive.storage.base import Backend, Row
from imixs_archive.storage.model import ARCHIVE_SNAPSHOT_PARTS, SNAPSHOTS

MiB = 1024 * 1024
PART_SIZE = 1 * MiB
BATCH_PARTS = 8
"""Parts buffered before they are written (memory: at most this many MiB)."""
MARKER = b"\x00imixs-archive:parts "
SEAL_HEAD = b"<!--imixs-archive sha256:"
SEAL_TAIL = b"-->"
SEAL_SIZE = len(SEAL_HEAD) + 64 + len(SEAL_TAIL)
ROOT_END = b"</document>"
_SEAL = re.compile(rb"<!--imixs-archive sha256:([0-9a-f]{64})-->\Z")


@dataclass(frozen=True)
class StoredXml:
    """A ``snapshots`` row's XML, read and checked."""

    xml: bytes
    """The XML as written, without its seal."""
    verified: bool
    """Checked against a digest (its seal, or its parts' marker); False: a row without
    one (the Java service's, or an earlier version's), only parsed."""


def digest(xml: bytes) -> str:
    """The SHA-256 (hex) a seal carries for ``xml``."""
    return hashlib.sha256(xml).hexdigest()


def seal(xml: bytes) -> bytes:
    """``xml`` followed by its seal (see the module's text)."""
    return _sealed(xml, digest(xml))


def _sealed(xml: bytes, xml_digest: str) -> bytes:
    return xml + SEAL_HEAD + xml_digest.encode() + SEAL_TAIL


def unseal(snapshot_id: str, data: bytes) -> StoredXml:
    """Inline ``data`` checked against its seal and without it; unverified when it has
    none. IntegrityError when the seal does not match, or when anything but white space
    follows the document without being a seal (a seal damaged in place: no writer puts
    anything else there)."""
    found = _SEAL.search(data, max(0, len(data) - SEAL_SIZE))
    if found is not None:
        xml = data[: found.start()]
        if digest(xml) != found.group(1).decode():
            raise IntegrityError(
                f"snapshot {snapshot_id}: its stored XML does not match its SHA-256 (the row "
                "was changed or damaged in the store)"
            )
        return StoredXml(xml, verified=True)
    end = data.rfind(ROOT_END)
    if end >= 0 and data[end + len(ROOT_END) :].strip():
        raise IntegrityError(f"snapshot {snapshot_id}: the SHA-256 seal of its XML is damaged")
    return StoredXml(data, verified=False)


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


def render_inline(xml: Iterable[bytes], limit: int) -> tuple[bytes | None, Iterator[bytes]]:
    """The XML whole when it stays inline (up to ``limit``: the store's inline limit), so
    its digest is known before anything is written; else None. Either way the bytes to
    write, from the start (what was read ahead, then the rest)."""
    pieces = iter(xml)
    ahead: list[bytes] = []
    size = 0
    for piece in pieces:
        ahead.append(piece)
        size += len(piece)
        if size > limit:
            return None, itertools.chain(ahead, pieces)
    whole = b"".join(ahead)
    return whole, iter((whole,))


def put_snapshot_xml(
    backend: Backend,
    snapshot_id: str,
    xml: Iterable[bytes],
    *,
    replace: bool = False,
    before_row: Callable[[str], None] | None = None,
    known_digest: str | None = None,
) -> bool:
    """Write the ``snapshots`` row of ``snapshot_id`` (after its parts, when the XML is
    larger than the store's ``inline_limit``) unless another process wrote it meanwhile
    (``replace``: write it all the same, over a damaged one). True when this call wrote
    it (``Backend.put_new``). ``before_row`` is given the XML's SHA-256 (hex) right
    before the row is written (the ledger's entry goes first); ``known_digest``: that
    SHA-256, when the caller has it already (the XML rendered whole first)."""
    buffer = bytearray()
    pending: list[bytes] = []
    parts: _Parts | None = None
    for piece in xml:
        buffer += piece
        if parts is None and len(buffer) <= backend.inline_limit:
            continue
        parts = parts or _Parts(backend, snapshot_id)
        while len(buffer) >= PART_SIZE:
            pending.append(bytes(buffer[:PART_SIZE]))
            del buffer[:PART_SIZE]
            if len(pending) >= BATCH_PARTS:
                parts.write(pending)
    if parts is None:
        whole = bytes(buffer)
        xml_digest = known_digest or digest(whole)
        row = {"snapshot": snapshot_id, "data": _sealed(whole, xml_digest)}
    else:
        if buffer:
            pending.append(bytes(buffer))
        parts.write(pending)
        xml_digest = parts.digest.hexdigest()
        row = {"snapshot": snapshot_id, "data": parts.marker()}
    with backend.grouped():  # on the embedded store, the entry commits with the row
        if before_row is not None:
            before_row(xml_digest)
        if replace:
            backend.put(SNAPSHOTS, [row])
            return True
        return backend.put_new(SNAPSHOTS, row)


def xml_size(row: Row) -> int:
    """The size of a ``snapshots`` row's XML, inline (its seal counted) or in parts (from
    the marker)."""
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


def read_stored(backend: Backend, row: Row) -> StoredXml:
    """The XML of a ``snapshots`` row, checked: the cell against its seal, or its parts
    joined and checked against the marker (IntegrityError naming the snapshot when they
    do not match)."""
    data: bytes = row["data"]
    snapshot_id = row["snapshot"]
    if not data.startswith(MARKER):
        return unseal(snapshot_id, data)
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
    return StoredXml(bytes(joined), verified=True)


def snapshot_xml(backend: Backend, row: Row) -> bytes:
    """The XML of a ``snapshots`` row, checked (:func:`read_stored`), without its seal."""
    return read_stored(backend, row).xml


def parse_stored(snapshot_id: str, stored: StoredXml) -> Document:
    """The snapshot a row's checked XML holds. XML that does not parse is damage in the
    store, not bad input: an IntegrityError naming the snapshot."""
    try:
        return read_xml_document(stored.xml)
    except (DocumentError, ValueError, OverflowError, MemoryError) as exc:
        why = exc.reason if isinstance(exc, DocumentError) else f"{type(exc).__name__}: {exc}"
        unverified = "" if stored.verified else " (a row without a digest)"
        raise IntegrityError(
            f"snapshot {snapshot_id}: its stored XML cannot be read{unverified}: {why}"
        ) from None


def load_row(backend: Backend, row: Row) -> Document:
    """The snapshot of a ``snapshots`` row (without file contents), every byte checked."""
    return parse_stored(row["snapshot"], read_stored(backend, row))


def seal_row(backend: Backend, row: Row, stored: StoredXml) -> bool:
    """Give an unverified inline row its seal, when the row still holds what was read
    (never a row deleted or written meanwhile). True when it was sealed."""
    if stored.verified or row["data"].startswith(MARKER):
        return False
    key = {"snapshot": row["snapshot"]}
    return backend.replace(SNAPSHOTS, key, "data", row["data"], seal(stored.xml))


def delete_snapshot_xml(backend: Backend, snapshot_id: str, row: Row | None) -> None:
    """Delete the ``snapshots`` row, then its parts (when it had any, or when the row is
    already gone: a re-run of an interrupted delete)."""
    backend.delete(SNAPSHOTS, {"snapshot": snapshot_id})
    if row is None or is_in_parts(row):
        backend.delete(ARCHIVE_SNAPSHOT_PARTS, {"snapshot": snapshot_id})

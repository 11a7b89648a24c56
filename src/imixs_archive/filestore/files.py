"""Files in the store: registering an ingested file under its MD5, and releasing it.

A file is stored under a *documents key*: its MD5 (upper-case hex), as the Java service
reads it. Its ``documents`` rows list its pieces in order. ``archive_files`` is written
after them and marks the file complete, with its digest (SHA-256 over its piece ids, see
``content.py``) and size.

The MD5 is never trusted as identity: when the key is taken by different bytes (an MD5
collision), the file goes under ``<MD5>-SHA256:<digest>`` instead, so both contents stay
retrievable and no snapshot ever gets the other's bytes. Where digests cannot tell (pieces
cut by the Java service, or by other chunker parameters), the bytes are compared.

Write order for one file (each step idempotent): pieces (already written while
streaming), its pin in ``snapshots_by_document`` (see ``garbage.py``),
``archive_piece_refs``, ``documents`` rows (one mutation for the whole list, up to
``Backend.partition_rows`` rows: a reader of any replica sees all of them or none),
``archive_file_heads`` (a hint for finding the file when it arrives again),
``archive_file_cuts`` (a file stored in Java's cuts: the digest the ledger logs of it),
``archive_files``.

Beside the Java service (``PieceStore.cuts`` ``java``): the pieces are cut where the Java
service cuts, so the ``documents`` rows both write for one new file (each checks for rows
first, and both may find none) list the same bytes at every ``sort_id``, and any mix of
them is the file.
Release (by the collector only, ``gc.py``): ``archive_files`` (the file is incomplete
from here on), its head, each piece's ref, the ``documents`` rows, the pin. A crash
part-way leaves a file that the next collection finishes (or, at worst, a head row
without its file, which the lookup skips). Pieces are not deleted with their file: the
collector lists them once nothing refers to them and removes them after its grace period.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

from imixs_archive.errors import IntegrityError, NotFoundError
from imixs_archive.filestore.content import IngestedContent, Piece, cut_digest, same_bytes
from imixs_archive.filestore.garbage import FILE, pin_row, take_off_list
from imixs_archive.filestore.reading import StoredContent, is_hashed, read_piece
from imixs_archive.filestore.twin import HEAD_BYTES, head_digest
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import (
    ARCHIVE_FILE_CUTS,
    ARCHIVE_FILE_HEADS,
    ARCHIVE_FILES,
    ARCHIVE_PIECE_REFS,
    DOCUMENTS,
    DOCUMENTS_DATA,
    SNAPSHOTS_BY_DOCUMENT,
)


def collision_key(md5: str, digest: str) -> str:
    return f"{md5}-SHA256:{digest}"


def register_file(backend: Backend, content: IngestedContent) -> str:
    """Make an ingested file complete in the store; return its documents key.

    The key's pin comes first, so the Java service leaves the file alone from then on. A
    stored file that is on the collector's list is taken off it and its rows written
    again (with what this ingest knows of its pieces), so a collector that is removing it
    right now cannot leave it incomplete."""
    for key in (content.md5, collision_key(content.md5, content.digest)):
        backend.put(SNAPSHOTS_BY_DOCUMENT, [pin_row(key)])
        revived = take_off_list(backend, FILE, key)
        info = backend.get(ARCHIVE_FILES, {"md5": key}, ["digest"])
        if info is not None:
            if info["digest"] == content.digest or _same_content(backend, key, content):
                if revived:
                    _rewrite(backend, key, content)
                return key
            continue  # another content owns this key: an MD5 collision
        listed = {row["sort_id"]: row["data_id"] for row in _piece_rows(backend, key)}
        existing = list(listed.values())
        ours = [piece.data_id for piece in content.pieces]
        if existing and existing != ours[: len(existing)]:
            # Written by someone else (the Java service, with random piece ids): adopt it
            # if it holds the same bytes; write ours beside rows being written that hold
            # our pieces' bytes at the same places (the same file, in the same cuts, on
            # its way in); else it is a collision.
            if _same_content(backend, key, content):
                _adopt(backend, key, existing, content)
                return key
            if not _agrees(backend, listed, ours):
                continue
        _write_file(backend, key, content)
        return key
    raise IntegrityError(
        f"cannot store file with MD5 {content.md5}: both its keys hold other contents"
    )


def _rewrite(backend: Backend, key: str, content: IngestedContent) -> None:
    """Write a listed file's rows again, so a removal already under way (on Cassandra,
    deleting only what was written before it listed the file) leaves them in place."""
    ids = [piece.data_id for piece in content.pieces]
    if [row["data_id"] for row in _piece_rows(backend, key)] != ids:
        backend.delete(DOCUMENTS, {"md5": key})  # Java's piece list: ours replaces it
    for data_id in ids:
        if not is_hashed(data_id):  # cut by Java: the collector removes these with the file
            data = read_piece(backend, data_id)
            backend.put(DOCUMENTS_DATA, [{"data_id": data_id, "data": data}])
    _write_file(backend, key, content)


def link_stored(backend: Backend, key: str) -> bool:
    """Whether a snapshot may refer to the stored file ``key`` without its content (the
    workflow left it out): this archive's complete file, or one the Java service stored.
    A file on the collector's list is taken off it and written again first."""
    revived = take_off_list(backend, FILE, key)  # first: see PieceStore._hash
    info = backend.get(ARCHIVE_FILES, {"md5": key}, ["size", "pieces"])
    ids = [row["data_id"] for row in _piece_rows(backend, key)]
    if info is None and not ids:
        return False
    if not revived:
        return True
    pieces: list[Piece] = []

    def pieces_read() -> Iterator[bytes]:
        for data_id in ids:
            data = read_piece(backend, data_id)
            pieces.append(Piece(data_id, len(data)))
            yield data

    try:
        ledger = cut_digest(pieces_read())  # its record, cut row included, may be gone
    except IntegrityError:
        return False  # removed part-way already: not there
    size = sum(piece.size for piece in pieces)
    if not pieces or (info is not None and (len(pieces), size) != (info["pieces"], info["size"])):
        return False
    _rewrite(backend, key, IngestedContent(backend, key[:32], size, pieces, None, ledger))
    return True


def _agrees(backend: Backend, listed: dict[int, str], ours: list[str]) -> bool:
    """Whether every piece listed holds the bytes of our piece at its place (ours are
    keyed by their SHA-256): then any mix of both lists is the file."""
    for sort_id, data_id in listed.items():
        if not 0 <= sort_id < len(ours):
            return False
        if data_id == ours[sort_id]:
            continue
        if is_hashed(data_id):
            return False  # its id is its SHA-256, and not ours: other bytes
        try:
            piece = read_piece(backend, data_id)
        except IntegrityError:
            return False
        if hashlib.sha256(piece).hexdigest() != ours[sort_id]:
            return False
    return True


def _same_content(backend: Backend, key: str, content: IngestedContent) -> bool:
    try:
        return same_bytes(StoredContent(backend, key).iter_bytes(), content.iter_bytes())
    except IntegrityError:
        return False  # the stored one is incomplete: not the same


def _write_file(backend: Backend, key: str, content: IngestedContent) -> None:
    _write_refs(backend, key, content.pieces)
    backend.put_partition(
        DOCUMENTS,
        [
            {"md5": key, "sort_id": index, "data_id": piece.data_id}
            for index, piece in enumerate(content.pieces)
        ],
    )
    _mark_complete(backend, key, content)


def _adopt(backend: Backend, key: str, data_ids: list[str], content: IngestedContent) -> None:
    pieces = [Piece(data_id, len(read_piece(backend, data_id))) for data_id in data_ids]
    _write_refs(backend, key, pieces)
    _mark_complete(backend, key, content, len(pieces))


def _write_refs(backend: Backend, key: str, pieces: list[Piece]) -> None:
    # The pin again: a collector may have removed the file, pin included, since
    # register_file wrote it first.
    backend.put(SNAPSHOTS_BY_DOCUMENT, [pin_row(key)])
    unique = {piece.data_id: piece.size for piece in pieces}
    backend.put(
        ARCHIVE_PIECE_REFS,
        ({"data_id": data_id, "md5": key, "size": size} for data_id, size in unique.items()),
    )


def _mark_complete(
    backend: Backend, key: str, content: IngestedContent, pieces: int | None = None
) -> None:
    if content.head is not None:
        backend.put(ARCHIVE_FILE_HEADS, [{"head": content.head, "md5": key}])
    if content.ledger_digest != content.digest:
        cut = {"md5": key, "digest": content.digest, "ledger_digest": content.ledger_digest}
        backend.put(ARCHIVE_FILE_CUTS, [cut])
    backend.put(
        ARCHIVE_FILES,
        [
            {
                "md5": key,
                "digest": content.digest,
                "size": content.size,
                "pieces": len(content.pieces) if pieces is None else pieces,
            }
        ],
    )


def _stored_size(backend: Backend, data_id: str) -> int:
    """A piece's bytes, read (its reference went in a removal cut short)."""
    piece = backend.get(DOCUMENTS_DATA, {"data_id": data_id})
    return 0 if piece is None else len(piece["data"])


def _piece_rows(backend: Backend, key: str) -> Iterator[dict[str, Any]]:
    return backend.scan(DOCUMENTS, {"md5": key}, columns=["sort_id", "data_id"])


def release_file(
    backend: Backend, key: str, written_before: int | None = None
) -> list[tuple[str, int]]:
    """Remove an unused file's rows (the collector's work, see ``gc.py``): its record,
    head, piece references, piece list and pin. Pieces cut by the Java service (random
    ids, used by this file alone) go with it; content-addressed pieces stay for the
    collector to list once nothing refers to them. Returns those pieces (id, size)."""
    stamp = {"written_before": written_before}
    backend.delete(ARCHIVE_FILES, {"md5": key}, **stamp)
    head = _head_of(backend, key)
    if head is not None:
        backend.delete(ARCHIVE_FILE_HEADS, {"head": head, "md5": key}, **stamp)
    hashed: list[tuple[str, int]] = []
    for row in list(_piece_rows(backend, key)):
        data_id = row["data_id"]
        ref = backend.get(ARCHIVE_PIECE_REFS, {"data_id": data_id, "md5": key}, ["size"])
        backend.delete(ARCHIVE_PIECE_REFS, {"data_id": data_id, "md5": key}, **stamp)
        if is_hashed(data_id):
            hashed.append((data_id, int(ref["size"]) if ref else _stored_size(backend, data_id)))
        else:
            backend.delete(DOCUMENTS_DATA, {"data_id": data_id}, **stamp)
    backend.delete(DOCUMENTS, {"md5": key}, **stamp)
    backend.delete(ARCHIVE_FILE_CUTS, {"md5": key}, **stamp)
    backend.delete(SNAPSHOTS_BY_DOCUMENT, pin_row(key), **stamp)
    return hashed


def ledger_digest_of(backend: Backend, key: str, digest: str) -> str:
    """The digest the ledger logs of the file ``key`` whose record holds ``digest``: the
    one its ``archive_file_cuts`` row gives when the file is stored in other cuts, else
    ``digest`` (a row left from an earlier file under the key holds another digest)."""
    row = backend.get(ARCHIVE_FILE_CUTS, {"md5": key})
    if row is not None and row["digest"] == digest:
        return str(row["ledger_digest"])
    return digest


def piece_used(backend: Backend, data_id: str) -> bool:
    return next(backend.scan(ARCHIVE_PIECE_REFS, {"data_id": data_id}, limit=1), None) is not None


def _head_of(backend: Backend, key: str) -> str | None:
    """``head_digest`` of a stored file (None: shorter than a head, or unreadable)."""
    head = b""
    try:
        for piece in StoredContent(backend, key).iter_bytes():
            head += piece[: HEAD_BYTES - len(head)]
            if len(head) >= HEAD_BYTES:
                return head_digest(head)
    except (IntegrityError, NotFoundError):
        pass
    return None

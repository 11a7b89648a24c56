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
streaming), ``archive_piece_refs``, ``documents`` rows, ``archive_file_heads`` (a hint for
finding the file when it arrives again), ``archive_files``.
Release order: ``archive_files`` (the file is incomplete from here on), its head, then for
each piece its ref and, when no file uses it any more, the piece itself, then the
``documents`` rows. A crash part-way leaves a file that a re-run of the release finishes
(or, at worst, a head row without its file, which the lookup skips).
"""

from __future__ import annotations

from collections.abc import Iterator

from imixs_archive.archive.content import (
    HEAD_BYTES,
    IngestedContent,
    Piece,
    head_digest,
    same_bytes,
)
from imixs_archive.archive.reading import StoredContent, read_piece
from imixs_archive.errors import IntegrityError, NotFoundError
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import (
    ARCHIVE_FILE_HEADS,
    ARCHIVE_FILES,
    ARCHIVE_PIECE_REFS,
    DOCUMENTS,
    DOCUMENTS_DATA,
)


def collision_key(md5: str, digest: str) -> str:
    return f"{md5}-SHA256:{digest}"


def register_file(backend: Backend, content: IngestedContent) -> str:
    """Make an ingested file complete in the store; return its documents key."""
    for key in (content.md5, collision_key(content.md5, content.digest)):
        info = backend.get(ARCHIVE_FILES, {"md5": key}, ["digest"])
        if info is not None:
            if info["digest"] == content.digest or _same_content(backend, key, content):
                return key
            continue  # another content owns this key: an MD5 collision
        existing = [row["data_id"] for row in _piece_rows(backend, key)]
        ours = [piece.data_id for piece in content.pieces]
        if existing and existing != ours[: len(existing)]:
            # Written by someone else (the Java service, with random piece ids): adopt it
            # if it holds the same bytes, else it is a collision.
            if _same_content(backend, key, content):
                _adopt(backend, key, existing, content)
                return key
            continue
        _write_file(backend, key, content)
        return key
    raise IntegrityError(
        f"cannot store file with MD5 {content.md5}: both its keys hold other contents"
    )


def _same_content(backend: Backend, key: str, content: IngestedContent) -> bool:
    try:
        return same_bytes(StoredContent(backend, key).iter_bytes(), content.iter_bytes())
    except IntegrityError:
        return False  # the stored one is incomplete: not the same


def _write_file(backend: Backend, key: str, content: IngestedContent) -> None:
    _write_refs(backend, key, content.pieces)
    backend.put(
        DOCUMENTS,
        (
            {"md5": key, "sort_id": index, "data_id": piece.data_id}
            for index, piece in enumerate(content.pieces)
        ),
    )
    _mark_complete(backend, key, content)


def _adopt(backend: Backend, key: str, data_ids: list[str], content: IngestedContent) -> None:
    pieces = [Piece(data_id, len(read_piece(backend, data_id))) for data_id in data_ids]
    _write_refs(backend, key, pieces)
    _mark_complete(backend, key, content, len(pieces))


def _write_refs(backend: Backend, key: str, pieces: list[Piece]) -> None:
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


def _piece_rows(backend: Backend, key: str) -> Iterator[dict[str, str]]:
    return backend.scan(DOCUMENTS, {"md5": key}, columns=["data_id"])


def release_file(backend: Backend, key: str) -> int:
    """Delete a file that no snapshot uses any more, with every piece no other file uses.

    Returns the bytes of pieces deleted."""
    backend.delete(ARCHIVE_FILES, {"md5": key})
    head = _head_of(backend, key)
    if head is not None:
        backend.delete(ARCHIVE_FILE_HEADS, {"head": head, "md5": key})
    freed = 0
    for row in list(_piece_rows(backend, key)):
        freed += _release_piece(backend, row["data_id"], key)
    backend.delete(DOCUMENTS, {"md5": key})
    return freed


def _release_piece(backend: Backend, data_id: str, key: str) -> int:
    ref = backend.get(ARCHIVE_PIECE_REFS, {"data_id": data_id, "md5": key}, ["size"])
    backend.delete(ARCHIVE_PIECE_REFS, {"data_id": data_id, "md5": key})
    if next(backend.scan(ARCHIVE_PIECE_REFS, {"data_id": data_id}, limit=1), None) is not None:
        return 0  # another file still uses this piece
    backend.delete(DOCUMENTS_DATA, {"data_id": data_id})
    return int(ref["size"]) if ref else 0


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

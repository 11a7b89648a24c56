"""A snapshot's content digest (``ledger/entries.snapshot_digest``) from what the store holds
now, every byte read checked: what the ledger logs of a snapshot found in the store, and
what ledger verify compares with the entry that logged it."""

from __future__ import annotations

from dataclasses import dataclass

from imixs_archive.archive.snapshot_reads import snapshot_file_keys
from imixs_archive.archive.snapshot_xml import digest, parse_stored, read_stored
from imixs_archive.filestore.store import FileStore
from imixs_archive.ledger.entries import snapshot_digest
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import SNAPSHOTS


@dataclass(frozen=True)
class StoredDigest:
    digest: str
    sealed: bool
    """The row carries a digest of its own (a seal, or a parts marker): this archive wrote
    it. False: a row without one (the Java service's, or an archive before seals)."""


def stored_digest(
    backend: Backend, files: FileStore, snapshot_id: str, *, read_all: bool = False
) -> StoredDigest | None:
    """The content digest of a complete snapshot as stored, or None when it is not
    complete. IntegrityError when its row or a piece read fails its check (``read_all``:
    every piece is read and checked, not only those the Java service cut)."""
    row = backend.get(SNAPSHOTS, {"snapshot": snapshot_id})
    if row is None:
        return None
    stored = read_stored(backend, row)
    doc = parse_stored(snapshot_id, stored)
    files_of = snapshot_file_keys(backend, snapshot_id, doc).items()
    where = f"snapshot {snapshot_id}, file"
    file_digests = [
        (name, files.ledger_digest(key, read_all=read_all, where=f"{where} {name!r}"))
        for name, key in files_of
    ]
    return StoredDigest(
        snapshot_digest(snapshot_id, digest(stored.xml), file_digests), stored.verified
    )

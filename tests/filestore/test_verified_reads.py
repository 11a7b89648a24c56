"""A piece read again is compared with the bytes remembered from its checked read, not
hashed again; bytes changed in the store since still fail the read."""

from __future__ import annotations

import hashlib
import random
import types
from typing import Any

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.errors import IntegrityError
from imixs_archive.filestore import reading
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import DOCUMENTS, DOCUMENTS_DATA
from support.snapshots import make_snapshot

DATA = random.Random(23).randbytes(2_500_000)


def _stored(archive: Archive) -> Any:
    snapshot_id = archive.store(make_snapshot(files={"a.bin": DATA})).snapshot_id
    return archive.file_of_snapshot(snapshot_id, "a.bin")[1]


def _counting_hashlib(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Sizes of the bytes ``reading`` hashes with SHA-256 from now on."""
    hashed: list[int] = []

    def sha256(data: bytes = b"") -> Any:
        if data:
            hashed.append(len(data))
        return hashlib.sha256(data)

    fake = types.SimpleNamespace(sha256=sha256, md5=hashlib.md5)
    monkeypatch.setattr(reading, "hashlib", fake)
    return hashed


def test_a_piece_read_again_is_compared_not_hashed(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reading, "_verified", reading.RecentPieces(reading.VERIFIED_BYTES))
    file = _stored(archive)
    hashed = _counting_hashlib(monkeypatch)
    assert b"".join(file.iter_bytes()) == DATA
    assert sum(hashed) == len(DATA)  # every piece hashed once
    hashed.clear()
    assert b"".join(file.iter_bytes()) == DATA
    assert hashed == []


def test_a_piece_changed_after_a_checked_read_still_fails(
    archive: Archive, backend: Backend
) -> None:
    file = _stored(archive)
    assert b"".join(file.iter_bytes()) == DATA  # checked, and remembered
    victim = next(iter(backend.scan(DOCUMENTS, {"md5": file.key})))["data_id"]
    row = backend.get(DOCUMENTS_DATA, {"data_id": victim})
    assert row is not None
    flipped = bytearray(row["data"])
    flipped[7] ^= 0x10
    backend.put(DOCUMENTS_DATA, [{"data_id": victim, "data": bytes(flipped)}])
    with pytest.raises(IntegrityError, match=f"{victim} is corrupt"):
        b"".join(file.iter_bytes())


def test_the_memory_of_checked_pieces_is_bounded_and_keeps_the_recent() -> None:
    verified = reading.RecentPieces(limit=1000)
    for n in range(10):
        verified.add(f"p{n}", bytes([n]) * 100)
    verified.add("big", b"x" * 126)  # over limit // 8: not remembered
    assert not verified.holds("big", b"x" * 126)
    assert verified.holds("p9", bytes([9]) * 100)
    assert verified.holds("p0", bytes([0]) * 100)
    assert not verified.holds("p0", bytes([1]) * 100)  # other bytes under that id
    verified.add("p10", b"z" * 100)  # p1 is now the least recently used
    assert not verified.holds("p1", bytes([1]) * 100)
    assert verified.holds("p0", bytes([0]) * 100)
    assert verified.size <= 1000

"""Known content (``twin.py``) on its own: what it hands on to the normal path.

Whatever the twin and the arriving bytes, the normal path gets every byte that is not the
twin's exactly once and in order, and nothing at all when the content is the twin."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from imixs_archive.filestore.content import IngestCounters, PieceStore, ingest_stream
from imixs_archive.filestore.files import register_file
from imixs_archive.filestore.twin import HEAD_BYTES, KnownContent, head_digest
from imixs_archive.storage.base import Backend, Row
from imixs_archive.storage.delegating import DelegatingBackend
from imixs_archive.storage.model import DOCUMENTS, DOCUMENTS_DATA, Table

BASE = random.Random(7).randbytes(700_000)


@pytest.fixture
def store(backend: Backend) -> Iterator[PieceStore]:
    local = DelegatingBackend(backend)
    local.local_reads = True  # the twin is looked for on Cassandra too, to test it there
    pieces = PieceStore(local)
    key = register_file(local, ingest_stream(pieces, [BASE], IngestCounters()))
    assert key == _md5_key(BASE)
    yield pieces
    pieces.close()


def _md5_key(data: bytes) -> str:
    return hashlib.md5(data).hexdigest().upper()


def _pass(known: KnownContent, data: bytes, block: int) -> bytes:
    """The bytes ``known`` hands on, fed ``data`` in blocks of ``block``."""
    out = [b"".join(known.feed(data[at : at + block])) for at in range(0, len(data), block)]
    return b"".join(out) + b"".join(known.end())


@pytest.mark.parametrize("block", [1_000, 65_536, 1_000_000])
def test_the_stored_content_hands_on_nothing(store: PieceStore, block: int) -> None:
    known = KnownContent(store.backend, store.read)
    assert _pass(known, BASE, block) == b""
    assert known.is_twin and known.matched == len(BASE)
    assert known.key == _md5_key(BASE) and known.head == head_digest(BASE)
    stored = [r["data_id"] for r in store.backend.scan(DOCUMENTS, {"md5": known.key})]
    assert [data_id for data_id, _size in known.pieces()] == stored
    assert sum(size for _id, size in known.pieces()) == len(BASE)


@pytest.mark.parametrize(
    "variant",
    [
        BASE[:HEAD_BYTES] + b"x" + BASE[HEAD_BYTES + 1 :],
        BASE[:400_000] + b"\0" + BASE[400_001:],
        BASE[:-1],
        BASE + b"!",
        BASE[: HEAD_BYTES - 1],
        b"",
    ],
    ids=["after-head", "middle", "shorter", "longer", "shorter-than-a-head", "empty"],
)
@pytest.mark.parametrize("block", [1_000, 65_536])
def test_any_other_content_is_handed_on_whole(
    store: PieceStore, variant: bytes, block: int
) -> None:
    known = KnownContent(store.backend, store.read)
    assert _pass(known, variant, block) == variant
    assert not known.is_twin
    assert known.head == (head_digest(variant) if len(variant) >= HEAD_BYTES else None)


def test_without_local_reads_no_twin_is_looked_for(store: PieceStore) -> None:
    remote = DelegatingBackend(store.backend)
    remote.local_reads = False
    known = KnownContent(remote, store.read)
    assert list(known.feed(BASE[:1_000])) == []  # the head is held back ...
    assert b"".join(known.feed(BASE[1_000:])) == BASE  # ... for its digest only
    assert list(known.end()) == [] and not known.is_twin
    assert known.head == head_digest(BASE)


class _CountingReads(DelegatingBackend):
    """Counts the reads of pieces' bytes (an existence check asks for the id only)."""

    def __init__(self, inner: Backend) -> None:
        super().__init__(inner)
        self.local_reads = True
        self.piece_reads = 0

    def get(
        self, table: Table, key: Mapping[str, Any], columns: Sequence[str] | None = None
    ) -> Row | None:
        if table == DOCUMENTS_DATA and (columns is None or "data" in columns):
            self.piece_reads += 1
        return super().get(table, key, columns)


def test_pieces_written_or_read_lately_are_compared_without_reading_them_again(
    backend: Backend,
) -> None:
    counting = _CountingReads(backend)
    pieces = PieceStore(counting)
    try:
        register_file(counting, ingest_stream(pieces, [BASE], IngestCounters()))
        known = KnownContent(counting, pieces.read)
        assert _pass(known, BASE, 65_536) == b"" and known.is_twin
        assert counting.piece_reads == 0  # remembered as they were written
        fresh = PieceStore(counting)  # another process, say: reads them once
        for _ in range(2):
            known = KnownContent(counting, fresh.read)
            assert _pass(known, BASE, 65_536) == b"" and known.is_twin
        assert counting.piece_reads == len(known.pieces())
        fresh.close()
    finally:
        pieces.close()


def test_a_remembered_piece_gone_from_the_store_is_not_taken_as_the_twins(
    store: PieceStore,
) -> None:
    """The bytes kept for the comparison do not stand in for the store: a piece removed
    since (by the collector, say) ends the match, and the content goes the normal way."""
    key = _md5_key(BASE)
    ids = [r["data_id"] for r in store.backend.scan(DOCUMENTS, {"md5": key})]
    assert store._recent.get(ids[1]) is not None  # remembered when it was written
    store.backend.delete(DOCUMENTS_DATA, {"data_id": ids[1]})
    known = KnownContent(store.backend, store.read)
    assert _pass(known, BASE, 65_536) == BASE
    assert not known.is_twin


def test_where_no_twin_is_looked_for_no_piece_is_kept_for_one(backend: Backend) -> None:
    remote = DelegatingBackend(backend)
    remote.local_reads = False
    pieces = PieceStore(remote)
    try:
        content = ingest_stream(pieces, [BASE], IngestCounters())
        assert content.pieces and all(pieces._recent.get(p.data_id) is None for p in content.pieces)
    finally:
        pieces.close()

"""Attachment bytes into the store: a content arriving again is compared with its stored
twin instead of hashed and cut, and every variant of it still stores its own bytes."""

from __future__ import annotations

import hashlib
import random
import threading
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from imixs_archive.archive.verify import verify
from imixs_archive.filestore.chunking import JAVA, JAVA_BLOCK
from imixs_archive.filestore.content import (
    IngestCounters,
    IngestedContent,
    PieceStore,
    PieceWriter,
)
from imixs_archive.filestore.files import register_file, release_file
from imixs_archive.filestore.reading import StoredContent
from imixs_archive.filestore.twin import HEAD_BYTES, head_digest
from imixs_archive.storage.base import Backend, Row
from imixs_archive.storage.delegating import DelegatingBackend
from imixs_archive.storage.model import (
    ARCHIVE_FILE_HEADS,
    ARCHIVE_PIECE_REFS,
    DOCUMENTS,
    DOCUMENTS_DATA,
    Table,
)

BASE = random.Random(5).randbytes(3_000_000)


class CountingStore(PieceStore):
    """Counts the pieces handed to hashing (none, when a twin is matched)."""

    hashed = 0

    def hash(self, chunk: bytes) -> Future[tuple[str, bool]]:
        self.hashed += 1
        return super().hash(chunk)


@pytest.fixture
def pieces(backend: Backend) -> Iterator[CountingStore]:
    store = CountingStore(backend)
    yield store
    store.close()


def _write(pieces: PieceStore, data: bytes, block: int = 65_536) -> IngestedContent:
    writer = PieceWriter(pieces, IngestCounters())
    for start in range(0, len(data), block):
        writer.write(data[start : start + block])
    return writer.close().result()


def _archive(pieces: PieceStore, data: bytes, block: int = 65_536) -> str:
    content = _write(pieces, data, block)
    assert content.md5 == hashlib.md5(data).hexdigest().upper()
    key = register_file(pieces.backend, content)
    assert b"".join(StoredContent(pieces.backend, key).iter_bytes()) == data
    return key


def test_a_content_arriving_again_is_compared_not_hashed(pieces: CountingStore) -> None:
    key = _archive(pieces, BASE)
    first = pieces.hashed
    assert first > 0
    writer = PieceWriter(pieces, counters := IngestCounters())
    for start in range(0, len(BASE), 50_000):  # cut elsewhere than the first time
        writer.write(BASE[start : start + 50_000])
    again = writer.close().result()
    if pieces.backend.local_reads:
        assert pieces.hashed == first  # compared with its stored twin: none hashed again
    else:  # Cassandra: hashed and looked up, not read back from the node
        assert pieces.hashed == 2 * first
    assert (again.md5, again.size, counters.new_bytes) == (key, len(BASE), 0)
    assert counters.logical_bytes == len(BASE)
    assert again.head == head_digest(BASE)
    assert register_file(pieces.backend, again) == key


@pytest.mark.parametrize(
    "variant",
    [
        BASE[:HEAD_BYTES] + b"x" + BASE[HEAD_BYTES + 1 :],  # differs right after the head
        BASE[:1_500_000] + b"\0" + BASE[1_500_001:],  # in the middle
        BASE[:-1] + bytes([BASE[-1] ^ 1]),  # in the last byte
        BASE + b"more",  # longer
        BASE[:2_000_000],  # shorter
        BASE[:HEAD_BYTES],  # just the head
    ],
    ids=["after-head", "middle", "last-byte", "longer", "shorter", "head-only"],
)
def test_variants_of_a_stored_content_store_their_own_bytes(
    pieces: CountingStore, backend: Backend, variant: bytes
) -> None:
    key = _archive(pieces, BASE)
    other = _archive(pieces, variant)
    assert other != key
    assert b"".join(StoredContent(backend, key).iter_bytes()) == BASE
    assert verify(backend).ok


def test_a_damaged_twin_does_not_stop_a_healthy_copy(
    pieces: CountingStore, backend: Backend
) -> None:
    key = _archive(pieces, BASE)
    rows = list(backend.scan(DOCUMENTS, {"md5": key}))
    backend.delete(DOCUMENTS_DATA, {"data_id": rows[len(rows) // 2]["data_id"]})
    assert not verify(backend).ok
    assert _archive(pieces, BASE) == key  # compared until the gap, then hashed: healed
    assert verify(backend).ok


def test_release_forgets_the_head(pieces: CountingStore, backend: Backend) -> None:
    key = _archive(pieces, BASE)
    head = head_digest(BASE)
    assert [r["md5"] for r in backend.scan(ARCHIVE_FILE_HEADS, {"head": head})] == [key]
    release_file(backend, key)
    assert list(backend.scan(ARCHIVE_FILE_HEADS, {"head": head})) == []
    hashed = pieces.hashed
    assert _archive(pieces, BASE) == key  # stored anew, the normal way
    assert pieces.hashed > hashed


def test_a_head_row_without_its_file_is_skipped(pieces: CountingStore, backend: Backend) -> None:
    backend.put(ARCHIVE_FILE_HEADS, [{"head": head_digest(BASE), "md5": "0" * 32}])
    assert _archive(pieces, BASE) == hashlib.md5(BASE).hexdigest().upper()


_SMALL_BASE = random.Random(6).randbytes(200_000)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    cut=st.integers(0, len(_SMALL_BASE)),
    insert=st.binary(max_size=64),
    drop=st.integers(0, 3000),
    tail=st.binary(max_size=2000),
    block=st.integers(1_000, 70_000),
)
def test_any_edit_of_a_stored_content_reads_back_exactly(
    pieces: CountingStore, cut: int, insert: bytes, drop: int, tail: bytes, block: int
) -> None:
    _archive(pieces, _SMALL_BASE)
    edited = _SMALL_BASE[:cut] + insert + _SMALL_BASE[cut + drop :] + tail
    _archive(pieces, edited, block)


class PieceReads(DelegatingBackend):
    """Counts the pieces read."""

    reads = 0

    def get(self, table: Table, key: Mapping[str, Any], columns: Any = None) -> Row | None:
        if table is DOCUMENTS_DATA:
            self.reads += 1
        return super().get(table, key, columns)


def test_a_range_reads_only_the_pieces_it_overlaps(pieces: CountingStore, backend: Backend) -> None:
    key = _archive(pieces, BASE)
    counted = PieceReads(backend)
    stored = StoredContent(counted, key)
    sizes = [int(r["size"]) for r in _refs(backend, key)]
    assert len(sizes) > 5
    first, last = len(BASE) - 100_000, len(BASE) - 50_001
    assert b"".join(stored.iter_range(first, last)) == BASE[first : last + 1]
    assert counted.reads <= 2  # the piece(s) holding those 50,000 bytes, no others
    for first, last in [(0, 0), (0, len(BASE) - 1), (123_456, 1_234_567), (len(BASE) - 1,) * 2]:
        assert b"".join(stored.iter_range(first, last)) == BASE[first : last + 1]
    # Pieces without a size record (written by the Java service) are read to be skipped.
    for row in list(backend.scan(ARCHIVE_PIECE_REFS)):
        backend.delete(ARCHIVE_PIECE_REFS, {"data_id": row["data_id"], "md5": row["md5"]})
    assert b"".join(stored.iter_range(first, last)) == BASE[first : last + 1]


def _refs(backend: Backend, key: str) -> list[Row]:
    ids = [r["data_id"] for r in backend.scan(DOCUMENTS, {"md5": key})]
    found = [backend.get(ARCHIVE_PIECE_REFS, {"data_id": i, "md5": key}) for i in ids]
    return [row for row in found if row is not None]


class PieceWrites(DelegatingBackend):
    """Records how many rows each write of pieces carries; ``local`` as the store says
    (``local_reads``)."""

    def __init__(self, inner: Backend, *, local: bool) -> None:
        super().__init__(inner)
        self.local_reads = local
        self.writes: list[int] = []

    def put(self, table: Table, rows: Any) -> int:
        rows = list(rows)
        if table is DOCUMENTS_DATA:
            self.writes.append(len(rows))
        return self.inner.put(table, rows)


@pytest.mark.parametrize("local", [False, True], ids=["remote", "local"])
def test_new_pieces_are_written_as_soon_as_known_one_by_one_where_each_is_a_request(
    backend: Backend, local: bool
) -> None:
    """Where every write is a request of its own (Cassandra) a new piece is written once
    its look-up answers, while the file is still being read, not in batches at its end;
    a local store gathers them into one commit."""
    recorded = PieceWrites(backend, local=local)
    store = PieceStore(recorded, cuts=JAVA)
    data = random.Random(11).randbytes(3 * JAVA_BLOCK + 5)
    try:
        writer = PieceWriter(store, IngestCounters())
        writer.write(data[:JAVA_BLOCK])  # the first piece: cut at once, looked up
        deadline = time.monotonic() + (0 if local else 60)
        at = JAVA_BLOCK
        while not recorded.writes and time.monotonic() < deadline and at < len(data) - 1:
            writer.write(data[at : at + 1])  # a byte at a time: the file still goes on
            at += 1
            time.sleep(0.001)
        written_while_reading = bool(recorded.writes)
        writer.write(data[at:])
        content = writer.close().result()
    finally:
        store.close()
    assert written_while_reading is not local
    assert recorded.writes == ([1, 1, 1, 1] if not local else [4])
    key = register_file(backend, content)
    assert b"".join(StoredContent(backend, key).iter_bytes()) == data


class HeldWrites(DelegatingBackend):
    """A write of pieces waits for ``gate``; look-ups of pieces are counted once answered."""

    def __init__(self, inner: Backend) -> None:
        super().__init__(inner)
        self.local_reads = False
        self.gate = threading.Event()
        self.writes: list[list[str]] = []
        self.lookups = 0

    def put(self, table: Table, rows: Any) -> int:
        rows = list(rows)
        if table is DOCUMENTS_DATA:
            self.writes.append([row["data_id"] for row in rows])
            assert self.gate.wait(60), "the test never let the write go"
        return self.inner.put(table, rows)

    def get(self, table: Table, key: Mapping[str, Any], columns: Any = None) -> Row | None:
        found = self.inner.get(table, key, columns)
        if table is DOCUMENTS_DATA:
            self.lookups += 1
        return found


def test_a_piece_being_written_for_one_file_is_not_written_again_for_the_next(
    backend: Backend,
) -> None:
    """The next snapshot carrying a file on is read while the one before is still being
    written (the import stores one snapshot behind the parser): its look-up finds the
    piece missing, and it waits for the write under way instead of sending it again."""
    held = HeldWrites(backend)
    store = PieceStore(held, cuts=JAVA, confirmed_for=3600.0)
    data = random.Random(13).randbytes(JAVA_BLOCK // 2)
    with ThreadPoolExecutor(2) as settling:
        try:
            first = PieceWriter(store, IngestCounters())
            first.write(data)
            first_done = settling.submit(first.close().result)
            deadline = time.monotonic() + 60
            while not held.writes and time.monotonic() < deadline:
                time.sleep(0.005)
            second = PieceWriter(store, IngestCounters())
            second.write(data)
            second_pending = second.close()
            while held.lookups < 2 and time.monotonic() < deadline:
                time.sleep(0.005)  # its look-up answered: missing, the write is held
            assert held.lookups == 2
            held.gate.set()
            second_done = settling.submit(second_pending.result)
            contents = [first_done.result(60), second_done.result(60)]
        finally:
            held.gate.set()
            store.close()
    assert len(held.writes) == 1
    assert contents[0].pieces == contents[1].pieces
    assert second_pending.counters.new_bytes == 0

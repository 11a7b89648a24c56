"""Pieces on the embedded store are kept compressed where that pays; no reader can tell,
and on Cassandra they stay the raw bytes the Java service reads (``storage/packing.py``)."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.archive.verify import verify
from imixs_archive.errors import IntegrityError
from imixs_archive.storage import packing
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import DOCUMENTS, DOCUMENTS_DATA
from imixs_archive.storage.packing import pack, unpack
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from support import raw_sqlite
from support.snapshots import content_of, make_snapshot

TEXT = b"".join(b"%07d;invoice;approved;%s\n" % (n, b"x" * (n % 40)) for n in range(120_000))
NOISE = random.Random(8).randbytes(2_500_000)


def _piece_ids(backend: Backend, data: bytes) -> list[str]:
    md5 = hashlib.md5(data).hexdigest().upper()
    return [row["data_id"] for row in backend.scan(DOCUMENTS, {"md5": md5})]


def test_pieces_read_back_exactly_and_stay_raw_where_java_reads_them(
    archive: Archive, backend: Backend
) -> None:
    snapshot = make_snapshot(0, files={"a.txt": TEXT, "b.pdf": NOISE})
    archive.store(snapshot)
    loaded = archive.load(snapshot["$uniqueid"][0], with_files=True)
    assert content_of(loaded, "a.txt") == TEXT
    assert content_of(loaded, "b.pdf") == NOISE
    for data in (TEXT, NOISE):
        ids = _piece_ids(backend, data)
        assert len(ids) > 1
        rows = [backend.get(DOCUMENTS_DATA, {"data_id": data_id}) for data_id in ids]
        # What the backend returns (on Cassandra: the cell as stored, which the Java
        # service concatenates) is each piece's own bytes, in order.
        assert all(row is not None for row in rows)
        assert b"".join(row["data"] for row in rows if row) == data
        for data_id, row in zip(ids, rows, strict=True):
            assert row is not None and hashlib.sha256(row["data"]).hexdigest() == data_id
    assert verify(backend).problems == []


def _cells(store: SQLiteBackend) -> dict[str, tuple[int, int | None]]:
    connection = raw_sqlite.connect(store.path)
    try:
        found = connection.execute("SELECT data_id, length(data), raw_size FROM documents_data")
        return {data_id: (length, marker) for data_id, length, marker in found}
    finally:
        connection.close()


def test_the_embedded_store_keeps_text_compressed_and_noise_raw(tmp_path: Path) -> None:
    with SQLiteBackend(tmp_path) as backend, Archive(backend) as archive:
        archive.store(make_snapshot(0, files={"a.txt": TEXT, "b.pdf": NOISE}))
        cells = _cells(backend)
        text_ids, noise_ids = _piece_ids(backend, TEXT), _piece_ids(backend, NOISE)
    stored_text = sum(cells[data_id][0] for data_id in text_ids)
    assert all(cells[data_id][1] is not None for data_id in text_ids)
    assert sum(cells[data_id][1] or 0 for data_id in text_ids) == len(TEXT)
    assert stored_text < len(TEXT) / 4
    assert all(cells[data_id] == (cells[data_id][0], None) for data_id in noise_ids)
    assert sum(cells[data_id][0] for data_id in noise_ids) == len(NOISE)


def test_a_damaged_packed_piece_stops_the_read_and_verify_names_it(tmp_path: Path) -> None:
    snapshot = make_snapshot(0, files={"a.txt": TEXT})
    with SQLiteBackend(tmp_path) as backend, Archive(backend) as archive:
        archive.store(snapshot)
        victim = _piece_ids(backend, TEXT)[1]
        connection = raw_sqlite.connect(backend.path)
        connection.execute(
            "UPDATE documents_data SET data = substr(data, 1, length(data) - 5) WHERE data_id = ?",
            (victim,),
        )
        connection.close()
        loaded = archive.load(snapshot["$uniqueid"][0], with_files=True)
        with pytest.raises(IntegrityError, match=victim):
            content_of(loaded, "a.txt")
        problems = verify(backend).problems
    assert any(victim in problem and "unpack" in problem for problem in problems)
    assert any(f"piece {victim} is damaged" in problem for problem in problems)


def test_the_embedded_store_keeps_snapshot_xml_compressed(tmp_path: Path) -> None:
    items = {f"field{n}": f"value {n} of a workitem, approved" for n in range(300)}
    snapshot = make_snapshot(0, **items)
    with SQLiteBackend(tmp_path) as backend, Archive(backend) as archive:
        snapshot_id = archive.store(snapshot).snapshot_id
        assert archive.load(snapshot_id) == snapshot
        connection = raw_sqlite.connect(backend.path)
        length, marker = connection.execute(
            "SELECT length(data), raw_size FROM snapshots WHERE snapshot = ?", (snapshot_id,)
        ).fetchone()
        connection.close()
    assert marker is not None and length < marker / 4


def test_pieces_packed_by_pyarrows_zstd_before_read_back_the_same(tmp_path: Path) -> None:
    """Stores written while pieces were packed with pyarrow's zstd read as they did."""
    import pyarrow

    snapshot = make_snapshot(0, files={"a.txt": TEXT})
    with SQLiteBackend(tmp_path) as backend, Archive(backend) as archive:
        archive.store(snapshot)
        codec = pyarrow.Codec("zstd", compression_level=3)
        connection = raw_sqlite.connect(backend.path)
        rows = connection.execute("SELECT data_id, data, raw_size FROM documents_data").fetchall()

        for data_id, data, raw_size in rows:
            if raw_size is not None:
                old = codec.compress(unpack(data, raw_size), asbytes=True)
                connection.execute(
                    "UPDATE documents_data SET data = ? WHERE data_id = ?", (old, data_id)
                )
        connection.close()
        assert any(raw_size is not None for _id, _data, raw_size in rows)
        loaded = archive.load(snapshot["$uniqueid"][0], with_files=True)
        assert content_of(loaded, "a.txt") == TEXT
        assert not verify(backend).problems


def _counting_unpacks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Sizes of the frames unpacked from now on, with nothing kept from before."""
    unpacked: list[int] = []
    decompress = packing._decompress

    def counted(cell: bytes, marker: int) -> bytes:
        unpacked.append(len(cell))
        return decompress(cell, marker)

    monkeypatch.setattr(packing, "_decompress", counted)
    monkeypatch.setattr(
        packing, "_unpacked", packing.Recent(packing.UNPACKED_BYTES, packing.kept_size)
    )
    return unpacked


def test_a_piece_read_again_is_compared_with_its_kept_frame_not_unpacked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    snapshot = make_snapshot(0, files={"a.txt": TEXT})
    with SQLiteBackend(tmp_path) as backend, Archive(backend) as archive:
        archive.store(snapshot)
        unpacked = _counting_unpacks(monkeypatch)
        uniqueid = snapshot["$uniqueid"][0]
        assert content_of(archive.load(uniqueid, with_files=True), "a.txt") == TEXT
        first = len(unpacked)
        assert first >= len(_piece_ids(backend, TEXT))  # every piece, and the XML
        assert content_of(archive.load(uniqueid, with_files=True), "a.txt") == TEXT
    assert len(unpacked) - first == 1  # the snapshot's XML only: it is read once


def test_a_frame_like_a_kept_one_but_changed_inside_is_unpacked_not_taken_for_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    unpacked = _counting_unpacks(monkeypatch)
    frame, marker = pack(TEXT[:200_000])
    assert marker == 200_000
    assert unpack(frame, marker, again=True) == TEXT[:200_000]
    changed = bytearray(frame)
    changed[len(frame) // 2] ^= 0x01  # the same size, head and tail: the same key
    try:
        other = unpack(bytes(changed), marker, again=True)
    except packing.UnpackError:
        other = None
    assert other != TEXT[:200_000]
    assert len(unpacked) == 2
    assert unpack(frame, marker, again=True) == TEXT[:200_000]

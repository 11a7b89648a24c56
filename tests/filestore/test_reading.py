"""Every read checks what it reads: a flipped byte, a missing piece or a shortened piece
list stops the read with an IntegrityError naming snapshot and file, before the bytes
could pass for the whole file."""

from __future__ import annotations

import hashlib
import random
import uuid

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.document.conventions import iter_files
from imixs_archive.document.xml_writer import iter_xml, to_xml
from imixs_archive.errors import IntegrityError
from imixs_archive.filestore.reading import StoredContent
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import DOCUMENTS, DOCUMENTS_DATA, SNAPSHOTS
from support.snapshots import make_snapshot

BIG = random.Random(11).randbytes(3_000_000)  # several pieces


def stored(archive: Archive, content: bytes = BIG) -> tuple[str, StoredContent]:
    snapshot_id = archive.store(make_snapshot(files={"big.bin": content})).snapshot_id
    _entry, file = archive.file_of_snapshot(snapshot_id, "big.bin")
    return snapshot_id, file


def piece_ids(backend: Backend, key: str) -> list[str]:
    return [r["data_id"] for r in backend.scan(DOCUMENTS, {"md5": key}, columns=["data_id"])]


def flip(backend: Backend, data_id: str, at: int = 100) -> None:
    data = bytearray(backend.get(DOCUMENTS_DATA, {"data_id": data_id})["data"])
    data[at] ^= 0x01
    backend.put(DOCUMENTS_DATA, [{"data_id": data_id, "data": bytes(data)}])


def read_until_error(pieces: object) -> tuple[bytes, IntegrityError]:
    got = bytearray()
    with pytest.raises(IntegrityError) as caught:
        for piece in pieces:  # type: ignore[attr-defined]
            got += piece
    return bytes(got), caught.value


@pytest.mark.parametrize("which", [0, 1, -1])
def test_a_flipped_byte_stops_the_read(archive: Archive, backend: Backend, which: int) -> None:
    snapshot_id, file = stored(archive)
    ids = piece_ids(backend, file.key)
    assert len(ids) >= 3
    flip(backend, ids[which])
    got, error = read_until_error(file.iter_bytes())
    assert snapshot_id in str(error) and "'big.bin'" in str(error) and "corrupt" in str(error)
    assert len(got) < len(BIG) and BIG.startswith(got)
    assert error.exit_code == 5


def test_the_snapshot_xml_stops_too(archive: Archive, backend: Backend) -> None:
    snapshot_id, file = stored(archive)
    flip(backend, piece_ids(backend, file.key)[-1])
    doc = archive.load(snapshot_id)
    _got, error = read_until_error(iter_xml(doc))
    assert snapshot_id in str(error)


def test_a_missing_piece_stops_the_read(archive: Archive, backend: Backend) -> None:
    snapshot_id, file = stored(archive)
    backend.delete(DOCUMENTS_DATA, {"data_id": piece_ids(backend, file.key)[1]})
    _got, error = read_until_error(file.iter_bytes())
    assert "missing" in str(error) and snapshot_id in str(error)


def test_a_lost_last_piece_row_is_noticed_before_the_end(
    archive: Archive, backend: Backend
) -> None:
    """The piece list lost its tail (as a foreign delete of documents rows would do):
    every remaining piece checks out, but the file does not add up, and the read fails
    before handing out what would look like a complete, shorter file."""
    _snapshot_id, file = stored(archive)
    ids = piece_ids(backend, file.key)
    backend.delete(DOCUMENTS, {"md5": file.key, "sort_id": len(ids) - 1})
    got, error = read_until_error(file.iter_bytes())
    assert "pieces" in str(error)
    # Nothing of the last remaining piece was handed out either.
    sizes = [len(backend.get(DOCUMENTS_DATA, {"data_id": i})["data"]) for i in ids]
    assert got == BIG[: sum(sizes[:-2])]


def test_a_range_checks_the_pieces_it_reads(archive: Archive, backend: Backend) -> None:
    _snapshot_id, file = stored(archive)
    ids = piece_ids(backend, file.key)
    flip(backend, ids[1])
    assert b"".join(file.iter_range(0, 1000)) == BIG[:1001]  # piece 0 only: fine
    _got, error = read_until_error(file.iter_range(0, len(BIG) - 1))
    assert "corrupt" in str(error)


def test_a_file_cut_by_java_is_checked_by_its_md5(archive: Archive, backend: Backend) -> None:
    md5 = hashlib.md5(BIG).hexdigest().upper()
    doc = make_snapshot(files={"scan.tif": BIG})
    snapshot_id = doc["$uniqueid"][0]
    kept = doc.copy()
    kept["$file"] = [{"scan.tif": ["image/tiff", b"", doc["$file"][0]["scan.tif"][2]]}]
    ids = [str(uuid.uuid4()) for _ in range(3)]
    for index, data_id in enumerate(ids):
        piece = BIG[index * 2**20 : (index + 1) * 2**20]
        backend.put(DOCUMENTS_DATA, [{"data_id": data_id, "data": piece}])
        backend.put(DOCUMENTS, [{"md5": md5, "sort_id": index, "data_id": data_id}])
    backend.put(SNAPSHOTS, [{"snapshot": snapshot_id, "data": to_xml(kept)}])
    (entry,) = iter_files(archive.load(snapshot_id))
    assert isinstance(entry.content, StoredContent)
    assert entry.content.read_all() == BIG
    flip(backend, ids[2])
    got, error = read_until_error(entry.content.iter_bytes())
    assert "MD5" in str(error) and snapshot_id in str(error)
    assert len(got) == 2 * 2**20  # the last piece was held back

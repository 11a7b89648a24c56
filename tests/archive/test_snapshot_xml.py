"""Snapshots whose XML (files emptied) is larger than one cell may hold: written in parts,
read back whole and checked, deleted with their parts; small ones stay inline where the
Java service reads them."""

from __future__ import annotations

import pytest

from imixs_archive.archive.snapshot_xml import MARKER, is_in_parts
from imixs_archive.archive.snapshots import Archive
from imixs_archive.archive.verify import verify
from imixs_archive.document.xml_reader import read_xml_document
from imixs_archive.errors import IntegrityError
from imixs_archive.storage.model import ARCHIVE_SNAPSHOT_PARTS, SNAPSHOTS
from support.snapshots import make_snapshot

MiB = 1024 * 1024


def _large(step: int, megabytes: int) -> object:
    # Ordinary items: a text list per MiB, the way long comment histories and tables grow.
    items = {
        f"txtnote{n:03d}": ["x" * 1000 + f" line {n}.{i}" for i in range(1000)]
        for n in range(megabytes)
    }
    return make_snapshot(step, **items)


@pytest.mark.slow
def test_a_snapshot_with_40_mb_of_items_archives_and_reads_back(archive: Archive) -> None:
    doc = _large(0, 40)
    snapshot_id = doc["$uniqueid"][0]  # type: ignore[index]
    archive.store(doc)  # type: ignore[arg-type]
    row = archive.backend.get(SNAPSHOTS, {"snapshot": snapshot_id})
    assert row is not None and is_in_parts(row) and len(row["data"]) < 200
    parts = list(archive.backend.scan(ARCHIVE_SNAPSHOT_PARTS, {"snapshot": snapshot_id}))
    assert len(parts) >= 40 and all(len(p["data"]) <= MiB for p in parts)
    assert archive.load(snapshot_id) == doc
    assert verify(archive.backend).problems == []
    archive.delete(snapshot_id)
    assert not archive.exists(snapshot_id)
    assert list(archive.backend.scan(ARCHIVE_SNAPSHOT_PARTS, {"snapshot": snapshot_id})) == []


def test_a_snapshot_under_the_limit_stays_readable_xml_in_its_cell(archive: Archive) -> None:
    """Up to the store's mutation limit (less room for the key), as the Java service writes
    and reads it: 12 MiB of items is one cell (it went to parts over 8 MiB once)."""
    limit = archive.backend.inline_limit
    assert 15 * MiB < limit < 16 * MiB  # the default limit, and the test node's own
    doc = _large(1, 12)
    snapshot_id = doc["$uniqueid"][0]  # type: ignore[index]
    archive.store(doc)  # type: ignore[arg-type]
    row = archive.backend.get(SNAPSHOTS, {"snapshot": snapshot_id})
    assert row is not None and not row["data"].startswith(MARKER)
    assert 12 * MiB < len(row["data"]) <= limit
    assert read_xml_document(row["data"]) == doc  # what the Java service reads
    assert list(archive.backend.scan(ARCHIVE_SNAPSHOT_PARTS, {"snapshot": snapshot_id})) == []
    assert archive.load(snapshot_id) == doc


def test_a_snapshot_just_over_the_limit_goes_in_parts(archive: Archive) -> None:
    doc = _large(3, archive.backend.inline_limit // MiB + 1)
    snapshot_id = doc["$uniqueid"][0]  # type: ignore[index]
    archive.store(doc)  # type: ignore[arg-type]
    row = archive.backend.get(SNAPSHOTS, {"snapshot": snapshot_id})
    assert row is not None and is_in_parts(row)
    assert archive.load(snapshot_id) == doc


def test_a_missing_or_changed_part_is_an_integrity_error(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(archive.backend, "inline_limit", 2 * MiB)  # parts, without 16 MiB
    doc = _large(2, 5)
    snapshot_id = doc["$uniqueid"][0]  # type: ignore[index]
    archive.store(doc)  # type: ignore[arg-type]
    key = {"snapshot": snapshot_id, "part": 3}
    part = archive.backend.get(ARCHIVE_SNAPSHOT_PARTS, key)
    assert part is not None
    archive.backend.put(ARCHIVE_SNAPSHOT_PARTS, [{**part, "data": b"y" + part["data"][1:]}])
    with pytest.raises(IntegrityError, match=f"snapshot {snapshot_id}: the parts"):
        archive.load(snapshot_id)
    archive.backend.delete(ARCHIVE_SNAPSHOT_PARTS, key)
    with pytest.raises(IntegrityError, match=f"snapshot {snapshot_id}: its XML has"):
        archive.load(snapshot_id)
    assert any(snapshot_id in p for p in verify(archive.backend).problems)

"""Snapshot rows are checked on every read: a row changed in the store (one bit flipped in
every row of a generated archive, on each backend) is never served as a snapshot; every read
raises the integrity error naming it, ``verify`` names each such row, and a row without a
digest (the Java service's) is read as XML, reported, and sealed by ``verify``."""

from __future__ import annotations

import datetime as dt
import random

import pytest

from imixs_archive.archive.service_state import load_state, save_state
from imixs_archive.archive.snapshot_xml import (
    SEAL_HEAD,
    SEAL_SIZE,
    StoredXml,
    is_in_parts,
    parse_stored,
    seal,
    unseal,
)
from imixs_archive.archive.snapshots import Archive
from imixs_archive.archive.verify import verify
from imixs_archive.document.model import Document
from imixs_archive.document.xml_writer import to_xml
from imixs_archive.errors import IntegrityError
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import ARCHIVE_SNAPSHOT_PARTS, SNAPSHOTS
from support.damage import flip_bit, flip_stored_bit
from support.snapshots import make_snapshot

CET = dt.timezone(dt.timedelta(hours=1))
PARTS_FROM = 2 * 1024 * 1024
"""The tests' inline limit (the store's is ~16 MiB): large snapshots in parts, quickly."""


def generated(archive: Archive, seed: int = 5) -> dict[str, Document]:
    """Snapshots of eight process instances: items of every kind of size, files on some,
    one snapshot whose XML is stored in parts (9 MiB of items, over ``PARTS_FROM``)."""
    rng = random.Random(seed)
    docs = {}
    for instance in range(8):
        origin = f"{instance:08x}-aaaa-4bbb-8ccc-{rng.getrandbits(48):012x}"
        for step in range(5):
            files = {f"f{step}.txt": rng.randbytes(rng.randrange(1, 3000))} if step % 2 else None
            doc = make_snapshot(
                step + 10 * instance,
                origin=origin,
                files=files,
                txtnote=[rng.choice("abcdefgh ü€") * rng.randrange(1, 4000)],
                _amount=rng.randrange(10**6) / 100,
                dollar_workflowstatus=rng.choice(["Open", "Approved", "Paid"]),
            )
            docs[doc["$uniqueid"][0]] = doc
    large = make_snapshot(99, txtlines=["x" * 1000 + f" {n}" for n in range(9000)])
    docs[large["$uniqueid"][0]] = large
    for doc in docs.values():
        archive.store(doc)
    return docs


def reads(archive: Archive, snapshot_id: str) -> list[object]:
    """What each read path of the archive gives for one snapshot, or the error it raises."""
    outcomes: list[object] = []
    for read in (
        lambda: archive.load(snapshot_id, with_files=False),
        lambda: archive.load_complete(snapshot_id),
        lambda: b"".join(archive.xml_with_files(snapshot_id).iter_bytes()),
        lambda: archive.file_digests(snapshot_id),
    ):
        try:
            outcomes.append(read())
        except IntegrityError as exc:
            assert snapshot_id in str(exc)
            outcomes.append(IntegrityError)
    return outcomes


def test_a_bit_flipped_in_any_snapshot_row_is_never_served(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(backend, "inline_limit", PARTS_FROM)
    archive = Archive(backend)
    docs = generated(archive)
    before = {sid: reads(archive, sid) for sid in docs}
    assert all(IntegrityError not in outcome for outcome in before.values())
    rng = random.Random(11)
    for snapshot_id in docs:
        flip_stored_bit(backend, SNAPSHOTS, {"snapshot": snapshot_id}, rng)

    damaged = set()
    for snapshot_id in docs:
        after = reads(archive, snapshot_id)
        if after != before[snapshot_id]:
            # every read path refuses it: none serves a changed copy
            assert after == [IntegrityError] * len(after), snapshot_id
            damaged.add(snapshot_id)
    # A flip in a packed cell may, rarely, unpack to the very same bytes (nothing changed):
    # those read as before. Everything else is refused.
    undamaged = len(docs) - len(damaged)
    assert undamaged <= (0 if backend.name == "cassandra" else 2)
    with pytest.raises(IntegrityError):
        list(archive.index.iter_complete())

    report = verify(backend)
    named = {sid for sid in docs if any(f"snapshot {sid}:" in p for p in report.problems)}
    assert named == damaged
    assert report.snapshots == len(docs)


def test_a_bit_flipped_in_a_part_of_a_large_snapshot_is_refused(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(backend, "inline_limit", PARTS_FROM)
    archive = Archive(backend)
    doc = make_snapshot(1, txtlines=["y" * 1000 + f" {n}" for n in range(9000)])
    snapshot_id = archive.store(doc).snapshot_id
    row = backend.get(SNAPSHOTS, {"snapshot": snapshot_id})
    assert row is not None and is_in_parts(row)
    flip_stored_bit(
        backend, ARCHIVE_SNAPSHOT_PARTS, {"snapshot": snapshot_id, "part": 4}, random.Random(3)
    )
    assert reads(archive, snapshot_id) == [IntegrityError] * 4
    assert any(snapshot_id in p for p in verify(backend).problems)


def test_every_single_bit_flip_of_a_sealed_row_is_caught() -> None:
    """Known answer, exhaustively: each bit of a sealed row (the XML and the seal) flipped
    in turn is refused by the check and the parse every read goes through."""
    doc = make_snapshot(3, subject=["a b"], _amount=1.5)
    sealed = seal(to_xml(doc))
    for bit in range(len(sealed) * 8):
        with pytest.raises(IntegrityError):
            parse_stored("x-1", unseal("x-1", flip_bit(sealed, bit)))
    assert parse_stored("x-1", unseal("x-1", sealed)) == doc


def test_the_seal_is_a_comment_after_the_document() -> None:
    xml = to_xml(make_snapshot(4))
    sealed = seal(xml)
    assert sealed.startswith(xml) and len(sealed) == len(xml) + SEAL_SIZE
    assert sealed[len(xml) :].startswith(SEAL_HEAD)
    assert unseal("x-1", sealed) == StoredXml(xml, verified=True)
    assert unseal("x-1", xml) == StoredXml(xml, verified=False)


def test_a_row_without_a_digest_is_read_reported_and_sealed_by_verify(backend: Backend) -> None:
    """Rows the Java service (or an earlier version) wrote carry no seal: they are parsed,
    counted as unverified by ``verify``, and sealed there, so later reads check them."""
    archive = Archive(backend)
    docs = [make_snapshot(n, subject=f"java {n}") for n in range(3)]
    for doc in docs:
        archive.store(doc)
    ids = [doc["$uniqueid"][0] for doc in docs]
    for doc, snapshot_id in zip(docs, ids, strict=True):  # as the Java service writes it
        backend.put(SNAPSHOTS, [{"snapshot": snapshot_id, "data": to_xml(doc)}])
        assert archive.load(snapshot_id) == doc
    broken = make_snapshot(7)
    archive.store(broken)
    broken_id = broken["$uniqueid"][0]
    backend.put(SNAPSHOTS, [{"snapshot": broken_id, "data": to_xml(broken)[:-40]}])
    with pytest.raises(IntegrityError, match=f"snapshot {broken_id}: its stored XML cannot"):
        archive.load(broken_id)

    report = verify(backend)
    assert report.unverified == 3 and report.sealed == 3
    assert any("3 snapshot row(s) had no digest" in w for w in report.warnings)
    assert [p for p in report.problems if broken_id in p]
    assert not [p for p in report.problems if any(sid in p for sid in ids)]
    for doc, snapshot_id in zip(docs, ids, strict=True):
        row = backend.get(SNAPSHOTS, {"snapshot": snapshot_id})
        assert row is not None and row["data"] == seal(to_xml(doc))
    again = verify(backend)
    assert again.unverified == 0

    flip_stored_bit(backend, SNAPSHOTS, {"snapshot": ids[0]}, random.Random(1))
    assert reads(archive, ids[0]) == [IntegrityError] * 4


def test_a_damaged_copy_is_replaced_by_importing_it_again(backend: Backend) -> None:
    archive = Archive(backend)
    doc = make_snapshot(2, files={"a.txt": b"hello " * 100})
    snapshot_id = archive.store(doc).snapshot_id
    flip_stored_bit(backend, SNAPSHOTS, {"snapshot": snapshot_id}, random.Random(2))
    with pytest.raises(IntegrityError):
        archive.load(snapshot_id)
    result = archive.store(make_snapshot(2, files={"a.txt": b"hello " * 100}))
    assert not result.new and any("damaged" in w and "written again" in w for w in result.warnings)
    assert archive.load(snapshot_id, with_files=False) == archive.load_complete(snapshot_id)
    assert verify(backend).ok


def test_a_damaged_snapshot_can_be_deleted(backend: Backend) -> None:
    archive = Archive(backend)
    doc = make_snapshot(5, files={"a.txt": b"bytes " * 50})
    snapshot_id = archive.store(doc).snapshot_id
    backend.put(SNAPSHOTS, [{"snapshot": snapshot_id, "data": b"\x00\x01 not xml"}])
    assert archive.delete(snapshot_id).existed
    assert not archive.exists(snapshot_id)
    assert archive.list_instance(doc["$uniqueid"][0].rsplit("-", 1)[0]) == []
    day = doc["$modified"][0].astimezone(dt.UTC).date()
    assert snapshot_id not in archive.days.snapshot_ids(day)
    assert verify(backend).ok


def test_the_service_state_is_sealed_and_checked(backend: Backend) -> None:
    state = Document({"sync.point": [1_700_000_000_000]})
    save_state(backend, state)
    assert load_state(backend)["sync.point"] == [1_700_000_000_000]
    flip_stored_bit(backend, SNAPSHOTS, {"snapshot": "0"}, random.Random(4))
    try:
        changed = load_state(backend)
    except IntegrityError:
        assert any("the service state" in p for p in verify(backend).problems)
    else:
        assert changed["sync.point"] == [1_700_000_000_000]  # unpacked to the same bytes

"""Archive operations over every backend: store, read back, dedup, delete, history."""

from __future__ import annotations

import datetime as dt
import hashlib
import random
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.archive.verify import verify
from imixs_archive.document.conventions import origin_id, snapshot_order
from imixs_archive.document.model import Document
from imixs_archive.document.xml_reader import read_xml, read_xml_document
from imixs_archive.document.xml_writer import to_xml
from imixs_archive.errors import DocumentError, NotFoundError
from imixs_archive.filestore.garbage import now_us
from imixs_archive.filestore.gc import CLOCK_SKEW_US, collect
from imixs_archive.storage.base import Backend, Row
from imixs_archive.storage.delegating import DelegatingBackend
from imixs_archive.storage.model import (
    ARCHIVE_FILES,
    DOCUMENTS,
    DOCUMENTS_DATA,
    SNAPSHOTS,
    SNAPSHOTS_BY_DOCUMENT,
    SNAPSHOTS_BY_MODIFIED,
    SNAPSHOTS_BY_UNIQUEID,
    TABLES,
    Table,
)
from support.snapshots import ORIGIN, content_of, file_values, make_snapshot

PDF = random.Random(1).randbytes(900_000)
TXT = b"hello imixs\n" * 1000

# A real MD5 collision (Wang et al., 2004): two different 128-byte blocks, one MD5.
COLLISION_A = bytes.fromhex(
    "d131dd02c5e6eec4693d9a0698aff95c2fcab58712467eab4004583eb8fb7f89"
    "55ad340609f4b30283e488832571415a085125e8f7cdc99fd91dbdf280373c5b"
    "d8823e3156348f5bae6dacd436c919c6dd53e2b487da03fd02396306d248cda0"
    "e99f33420f577ee8ce54b67080a80d1ec69821bcb6a8839396f9652b6ff72a70"
)
COLLISION_B = bytes.fromhex(
    "d131dd02c5e6eec4693d9a0698aff95c2fcab50712467eab4004583eb8fb7f89"
    "55ad340609f4b30283e4888325f1415a085125e8f7cdc99fd91dbd7280373c5b"
    "d8823e3156348f5bae6dacd436c919c6dd53e23487da03fd02396306d248cda0"
    "e99f33420f577ee8ce54b67080280d1ec69821bcb6a8839396f965ab6ff72a70"
)


def count(backend: Backend, table_name: str) -> int:
    table = next(t for t in TABLES if t.name == table_name)
    return sum(1 for _ in backend.scan(table))


def table_counts(backend: Backend) -> dict[str, int]:
    return {table.name: count(backend, table.name) for table in TABLES}


def test_snapshot_reads_back_equal_with_files(archive: Archive) -> None:
    doc = make_snapshot(files={"Invoice.PDF": PDF, "notes.txt": TXT})
    result = archive.store(doc)
    assert result.new and result.files == 2 and not result.warnings
    loaded = archive.load(doc["$uniqueid"][0])
    assert loaded == doc
    assert content_of(loaded, "Invoice.PDF") == PDF  # file names keep their case


def test_stored_row_has_file_contents_emptied(archive: Archive, backend: Backend) -> None:
    doc = make_snapshot(files={"a.pdf": PDF})
    archive.store(doc)
    row = backend.get(SNAPSHOTS, {"snapshot": doc["$uniqueid"][0]})
    assert row is not None
    stored = read_xml_document(row["data"])
    values = stored["$file"][0]["a.pdf"]
    assert values[1] == b"" and values[0] == "application/pdf"
    assert values[2]["md5checksum"] == [hashlib.md5(PDF).hexdigest().upper()]
    assert len(row["data"]) < 10_000


def test_load_without_files_leaves_contents_empty(archive: Archive) -> None:
    doc = make_snapshot(files={"a.pdf": PDF})
    archive.store(doc)
    loaded = archive.load(doc["$uniqueid"][0], with_files=False)
    assert loaded["$file"][0]["a.pdf"][1] == b""


# A snapshot the engine writes of its own jobs (type snapshot-adminp, Imixs-Workflow 6.1.0):
# ``$file`` is there with a nil value only.
NIL_FILE_ITEM = (
    '<document><item name="$file"><value xsi:nil="true"/></item>'
    '<item name="$modified"><value xsi:type="xs:dateTime">2024-11-29T02:14:42.877Z</value></item>'
    '<item name="$uniqueid"><value xsi:type="xs:string">'
    f"{ORIGIN}-1732846482868</value></item>"
    '<item name="job"><value xsi:type="xs:string">JOB_REBUILD_INDEX</value></item>'
    '<item name="type"><value xsi:type="xs:string">snapshot-adminp</value></item></document>'
)


def test_a_file_item_without_a_value_is_archived_as_it_is(archive: Archive) -> None:
    """The engine's ``<item name="$file"><value xsi:nil="true"/></item>``: archived (it
    stopped the sync's catch-up with an IndexError), read back equal with and without
    files, and the archive verifies."""
    xml = (
        '<data xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"'
        f' xmlns:xs="http://www.w3.org/2001/XMLSchema">{NIL_FILE_ITEM}</data>'
    ).encode()
    [result] = list(archive.ingest([xml]))
    assert not isinstance(result, tuple), result
    sid = f"{ORIGIN}-1732846482868"
    [expected] = read_xml(xml)
    assert archive.load(sid) == archive.load(sid, with_files=False) == expected
    assert "$file" in expected and expected.get_values("$file") == []
    assert verify(archive.backend).ok


def test_archiving_twice_changes_nothing(archive: Archive, backend: Backend) -> None:
    doc = make_snapshot(files={"a.pdf": PDF})
    archive.store(doc)
    before = table_counts(backend)
    again = archive.store(doc)
    assert not again.new
    assert table_counts(backend) == before


def test_unchanged_file_in_next_snapshot_stores_no_bytes(
    archive: Archive, backend: Backend
) -> None:
    first = archive.store(make_snapshot(0, files={"a.pdf": PDF}))
    second = archive.store(make_snapshot(1, files={"a.pdf": PDF, "b.txt": TXT}))
    assert first.new_bytes >= len(PDF)
    assert second.new_bytes == len(TXT)
    assert count(backend, "archive_files") == 2


def test_identical_pieces_across_files_are_stored_once(backend: Backend) -> None:
    """Content-defined pieces (the embedded store's default): an edit costs its pieces."""
    with Archive(backend, file_cuts="content") as archive:
        archive.store(make_snapshot(0, files={"a.bin": PDF}))
        pieces = count(backend, "documents_data")
        result = archive.store(make_snapshot(1, files={"b.bin": PDF + b"tail"}))
        assert result.new_bytes < 300_000  # only the last piece(s) differ
        assert count(backend, "documents_data") <= pieces + 2


def test_in_javas_cuts_only_whole_mib_are_shared(backend: Backend) -> None:
    """Java's cuts (Cassandra's default): an appended file shares its whole MiB before the
    end; a byte inserted at the start shares nothing."""
    content = random.Random(7).randbytes(2_500_000)
    with Archive(backend, file_cuts="java") as archive:
        archive.store(make_snapshot(0, files={"a.bin": content}))
        pieces = count(backend, "documents_data")
        appended = archive.store(make_snapshot(1, files={"b.bin": content + b"tail"}))
        assert appended.new_bytes == len(content) + 4 - 2 * 2**20  # the last piece
        assert count(backend, "documents_data") == pieces + 1
        inserted = archive.store(make_snapshot(2, files={"c.bin": b"!" + content}))
        assert inserted.new_bytes == len(content) + 1


def test_wrong_md5checksum_is_reported_and_not_trusted(archive: Archive) -> None:
    values = file_values(PDF)
    values[2]["md5checksum"] = ["0" * 32]
    doc = make_snapshot(files={"a.pdf": values})
    result = archive.store(doc)
    assert any("does not match" in warning for warning in result.warnings)
    assert content_of(archive.load(doc["$uniqueid"][0]), "a.pdf") == PDF
    report = verify(archive.backend)
    assert report.ok
    assert any("claimed md5checksum" in warning for warning in report.warnings)


def test_md5_collision_keeps_both_contents(archive: Archive) -> None:
    assert hashlib.md5(COLLISION_A).digest() == hashlib.md5(COLLISION_B).digest()
    first = make_snapshot(0, files={"a.bin": COLLISION_A})
    second = make_snapshot(1, files={"b.bin": COLLISION_B})
    archive.store(first)
    archive.store(second)
    assert content_of(archive.load(first["$uniqueid"][0]), "a.bin") == COLLISION_A
    assert content_of(archive.load(second["$uniqueid"][0]), "b.bin") == COLLISION_B
    md5 = hashlib.md5(COLLISION_A).hexdigest().upper()
    assert archive.files.by_md5(md5).read_all() == COLLISION_A  # the first keeps the key
    assert verify(archive.backend).ok


def test_file_by_md5_and_by_name(archive: Archive) -> None:
    doc = make_snapshot(files={"a.pdf": PDF})
    archive.store(doc)
    md5 = hashlib.md5(PDF).hexdigest()
    assert archive.files.by_md5(md5.lower()).read_all() == PDF
    entry, content = archive.file_of_snapshot(doc["$uniqueid"][0], "a.pdf")
    assert entry.content_type == "application/pdf" and content.read_all() == PDF
    with pytest.raises(NotFoundError):
        archive.files.by_md5("F" * 32)
    with pytest.raises(NotFoundError):
        archive.file_of_snapshot(doc["$uniqueid"][0], "A.PDF")


def test_missing_snapshot_and_bad_ids(archive: Archive) -> None:
    with pytest.raises(NotFoundError):
        archive.load(f"{ORIGIN}-1700000000000")
    with pytest.raises(DocumentError):
        archive.store(Document({"$uniqueid": "not-a-snapshot", "$modified": dt.datetime.now()}))
    with pytest.raises(DocumentError, match=r"\$modified"):
        archive.store(Document({"$uniqueid": f"{ORIGIN}-1700000000000"}))


def test_modified_day_is_the_utc_day(archive: Archive, backend: Backend) -> None:
    local = dt.datetime(2024, 3, 1, 0, 30, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    doc = make_snapshot(modified=local)
    archive.store(doc)
    sid = doc["$uniqueid"][0]
    assert backend.get(SNAPSHOTS_BY_MODIFIED, {"modified": dt.date(2024, 2, 29), "snapshot": sid})
    assert list(archive.days.iter_days(dt.date(2024, 2, 29), dt.date(2024, 2, 29))) == [
        (dt.date(2024, 2, 29), sid)
    ]
    assert list(archive.days.iter_days(dt.date(2024, 3, 1), dt.date(2024, 3, 2))) == []


def test_instance_listing_newest_first_and_paged(archive: Archive) -> None:
    ids = [archive.store(make_snapshot(step)).snapshot_id for step in range(5)]
    assert archive.list_instance(ORIGIN) == ids[::-1]
    assert archive.list_instance(ORIGIN, limit=2) == ids[:2:-1][:2]
    assert archive.list_instance(ORIGIN, start_after=ids[3], limit=2) == [ids[2], ids[1]]
    assert archive.list_instance(ORIGIN, newest_first=False) == ids


def test_delete_drops_references_and_gc_removes_every_unused_file_and_piece(
    archive: Archive, backend: Backend
) -> None:
    empty = table_counts(backend)
    shared, own = PDF, random.Random(2).randbytes(500_000)
    first = make_snapshot(0, files={"shared.pdf": shared, "own.bin": own, "t.txt": TXT})
    second = make_snapshot(1, files={"shared.pdf": shared})
    archive.store(first)
    archive.store(second)
    stored = table_counts(backend)
    assert archive.delete(first["$uniqueid"][0]).existed
    # The delete dropped references only: every file and piece is still there.
    assert count(backend, "documents_data") == stored["documents_data"]
    assert content_of(archive.load(second["$uniqueid"][0]), "shared.pdf") == shared
    assert verify(backend).ok
    archive.delete(second["$uniqueid"][0])
    clock = [now_us() + 2 * CLOCK_SKEW_US]  # writes of the last minute count as "later"
    for _ in range(3):  # list the files; remove them and list their pieces; remove those
        collect(backend, grace=10, clock=lambda: clock[0])
        clock[0] += 11_000_000
    # The day index is a hint that outlives its snapshots, and so does the day's change
    # stamp of this process (archive/days.py), with the row saying the index is whole
    # (the verify above built it, looking for days only another writer stored); the
    # ledger's entries (two stored, two deleted, not yet sequenced) are a record kept for
    # ever.
    assert table_counts(backend) == {
        **empty,
        "archive_modified_days": 2,
        "archive_day_changes": 1,
        "archive_ledger_queue": 4,
    }
    assert not archive.delete(second["$uniqueid"][0]).existed


def test_delete_keeps_pieces_shared_with_other_files(archive: Archive, backend: Backend) -> None:
    first = make_snapshot(0, files={"a.bin": PDF})
    second = make_snapshot(1, files={"b.bin": PDF + b"tail"})
    archive.store(first)
    archive.store(second)
    archive.delete(first["$uniqueid"][0])
    assert content_of(archive.load(second["$uniqueid"][0]), "b.bin") == PDF + b"tail"
    assert verify(backend).ok


@pytest.mark.parametrize("history", [1, 2, 3])
def test_snapshot_history_keeps_the_newest(archive: Archive, history: int) -> None:
    ids = []
    for step in range(5):
        doc = make_snapshot(step, files={"a.pdf": PDF}, dollar_snapshot__history=history)
        ids.append(archive.store(doc).snapshot_id)
    assert archive.list_instance(ORIGIN) == ids[::-1][:history]
    assert verify(archive.backend).ok


@pytest.mark.parametrize("history", ["2", " 2 ", 2.0, 2.9, "2.5", Decimal("2")])
def test_snapshot_history_as_text_or_double(archive: Archive, history: object) -> None:
    """Java's getItemValueInteger: new Double(value.toString()).intValue()."""
    ids = []
    for step in range(4):
        doc = make_snapshot(step, dollar_snapshot__history=history)
        ids.append(archive.store(doc).snapshot_id)
    assert archive.list_instance(ORIGIN) == ids[::-1][:2]


@pytest.mark.parametrize("history", ["two", True, "", 0, -1, "NaN"])
def test_snapshot_history_not_a_positive_number_keeps_all(
    archive: Archive, history: object
) -> None:
    ids = [
        archive.store(make_snapshot(s, dollar_snapshot__history=history)).snapshot_id
        for s in range(3)
    ]
    assert archive.list_instance(ORIGIN) == ids[::-1]


def test_old_format_snapshot_ids_without_millis(archive: Archive, backend: Backend) -> None:
    """Java's DataService.isSnapshotID accepts ([0-9a-f]{8}-.*|[0-9a-f]{11}-.*) and indexes
    by the part before the last dash: such rows of an old keyspace are read and listed."""
    legacy = make_snapshot(0)
    legacy["$uniqueid"] = "14ad1d2e7ff-2f6e5fa5"
    newer = make_snapshot(1, origin="14ad1d2e7ff")
    assert archive.store(legacy).snapshot_id == "14ad1d2e7ff-2f6e5fa5"
    archive.store(newer)
    assert archive.load("14ad1d2e7ff-2f6e5fa5") == legacy
    assert archive.list_instance("14ad1d2e7ff") == [newer["$uniqueid"][0], "14ad1d2e7ff-2f6e5fa5"]
    row = next(backend.scan(SNAPSHOTS_BY_UNIQUEID, {"uniqueid": "14ad1d2e7ff"}))
    assert row["uniqueid"] == "14ad1d2e7ff"


def test_history_never_deletes_the_snapshot_just_written(archive: Archive) -> None:
    """Out of order (concurrent workers): the late older snapshot deletes nothing newer."""
    oldest = archive.store(make_snapshot(0)).snapshot_id
    newer = archive.store(make_snapshot(5)).snapshot_id
    late = archive.store(make_snapshot(1, dollar_snapshot__history=1))
    assert late.deleted == [oldest]
    assert archive.list_instance(ORIGIN) == [newer, late.snapshot_id]
    newest = archive.store(make_snapshot(6, dollar_snapshot__history=1))
    assert sorted(newest.deleted) == sorted([newer, late.snapshot_id])
    assert archive.list_instance(ORIGIN) == [newest.snapshot_id]


def test_reads_a_keyspace_written_by_the_java_service(archive: Archive, backend: Backend) -> None:
    """Java stores 1 MiB pieces under random UUIDs and no archive_* rows."""
    content = random.Random(5).randbytes(2_500_000)
    md5 = hashlib.md5(content).hexdigest().upper()
    doc = make_snapshot(files={"scan.tif": content})
    stored = doc.copy()
    stored["$file"] = [{"scan.tif": ["image/tiff", b"", doc["$file"][0]["scan.tif"][2]]}]
    sid = doc["$uniqueid"][0]
    piece_ids = [str(uuid.uuid4()) for _ in range(3)]
    for index, data_id in enumerate(piece_ids):
        piece = content[index * 2**20 : (index + 1) * 2**20]
        backend.put(DOCUMENTS_DATA, [{"data_id": data_id, "data": piece}])
        backend.put(DOCUMENTS, [{"md5": md5, "sort_id": index, "data_id": data_id}])
    backend.put(SNAPSHOTS_BY_DOCUMENT, [{"md5": md5, "snapshot": sid}])
    backend.put(SNAPSHOTS, [{"snapshot": sid, "data": to_xml(stored)}])
    loaded = archive.load(sid)
    assert content_of(loaded, "scan.tif") == content
    assert archive.files.by_md5(md5).read_all() == content
    # The same file arriving again is recognised by its bytes, not duplicated.
    again = archive.store(make_snapshot(1, files={"scan.tif": content}))
    # Its MD5 is known only at its end: the first time, its bytes are cut and stored
    # once more, then found equal to the Java rows, which the file keeps ("adopted").
    assert again.new_bytes == len(content)
    assert [r["data_id"] for r in backend.scan(DOCUMENTS, {"md5": md5})] == piece_ids
    assert archive.backend.get(ARCHIVE_FILES, {"md5": md5}) is not None
    # The copy is referred to by nothing: the collector removes it, no second copy stays.
    clock = [now_us() + 2 * CLOCK_SKEW_US]  # writes of the last minute count as "later"
    for _ in range(2):
        collect(backend, grace=10, clock=lambda: clock[0])
        clock[0] += 11_000_000
    assert sorted(r["data_id"] for r in backend.scan(DOCUMENTS_DATA)) == sorted(piece_ids)
    # From now on it is known by its head: arriving again, nothing new is stored.
    third = archive.store(make_snapshot(2, files={"scan.tif": content}))
    assert third.new_bytes == 0
    archive.delete(sid)
    assert content_of(archive.load(again.snapshot_id), "scan.tif") == content
    assert content_of(archive.load(third.snapshot_id), "scan.tif") == content


def test_ingest_streams_a_data_collection(archive: Archive) -> None:
    docs = [make_snapshot(step, files={"a.pdf": PDF}) for step in range(3)]
    xml = to_xml(docs)
    results = list(archive.ingest([xml[i : i + 5000] for i in range(0, len(xml), 5000)]))
    assert [getattr(r, "new", None) for r in results] == [True, True, True]
    for doc in docs:
        assert archive.load(doc["$uniqueid"][0]) == doc


def test_ingest_reports_a_bad_document_and_goes_on(archive: Archive) -> None:
    good = make_snapshot(1)
    bad = Document({"$uniqueid": "ticket-1519000000000", "$modified": good["$modified"]})
    results = list(archive.ingest([to_xml([bad, good])]))
    assert isinstance(results[0], tuple) and "not a snapshot id" in str(results[0][1])
    assert archive.exists(good["$uniqueid"][0])


def test_a_multi_document_file_counts_every_documents_attachments(
    archive: Archive, backend: Backend
) -> None:
    """The reader parses ahead of the archive: each snapshot still counts its own files'
    bytes, and the bytes newly stored add up to what the store holds."""
    sizes = {"a.pdf": 40_000, "b.txt": 9_000}
    docs, expected = [], []
    carried: dict[str, bytes] = {}
    for step, name in enumerate(["a.pdf", "b.txt", None]):
        if name is not None:
            carried[name] = random.Random(step).randbytes(sizes[name])
        docs.append(make_snapshot(step, files=dict(carried)))
        expected.append(sum(len(data) for data in carried.values()))
    body = b"<data>" + b"".join(to_xml(d).split(b"?>", 1)[-1] for d in docs) + b"</data>"
    results = [r for r in archive.ingest([body]) if not isinstance(r, tuple)]
    assert [r.logical_bytes for r in results] == expected  # 40 000, 49 000, 49 000
    stored = sum(len(row["data"]) for row in backend.scan(DOCUMENTS_DATA))
    assert sum(r.new_bytes for r in results) == stored == sum(sizes.values())


def test_iter_instances_gives_each_instances_ids_oldest_first(archive: Archive) -> None:
    origins = [str(uuid.UUID(int=n)) for n in (3, 1, 2)]
    for step in (2, 0, 1):
        for origin in origins:
            archive.store(make_snapshot(step, origin=origin))
    instances = list(archive.index.iter_instances())
    assert len(instances) == 3
    for ids in instances:
        assert len({origin_id(sid) for sid in ids}) == 1
        assert ids == sorted(ids, key=snapshot_order) and len(ids) == 3
    assert sorted(origin_id(ids[0]) for ids in instances) == sorted(origins)


class _StoredMeanwhile(DelegatingBackend):
    """Right after this process finds a snapshot not archived, another stores it whole (on
    a thread of its own: the store's other connection), as a second process would."""

    def __init__(self, inner: Backend, other: Callable[[], None]) -> None:
        super().__init__(inner)
        self.other: Callable[[], None] | None = other

    def get(
        self, table: Table, key: Mapping[str, Any], columns: Sequence[str] | None = None
    ) -> Row | None:
        row = super().get(table, key, columns)
        if table == SNAPSHOTS and columns == ["snapshot"] and self.other is not None:
            other, self.other = self.other, None
            thread = threading.Thread(target=other)
            thread.start()
            thread.join()
        return row


def test_of_two_processes_storing_one_snapshot_at_once_one_counts_it_new(
    backend: Backend,
) -> None:
    doc = make_snapshot(3, files={"a.txt": b"both at once " * 100})
    results = []
    with Archive(backend) as other:
        racing = _StoredMeanwhile(backend, lambda: results.append(other.store(doc)))
        with Archive(racing) as first:
            results.append(first.store(make_snapshot(3, files={"a.txt": b"both at once " * 100})))
    assert results[0].new is True  # the other one, which wrote first
    # The embedded store tells which write landed; on Cassandra both count it (put_new).
    assert results[1].new is (backend.name == "cassandra")
    assert verify(backend).ok

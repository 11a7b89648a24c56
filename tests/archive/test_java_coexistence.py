"""Beside a Java Imixs-Archive service on the same keyspace: its delete, replayed row by
row as ``DataService.deleteSnapshot``/``deleteDocuments`` issue them (the Inspect page's
delete, and its ``$snapshot.history`` cleanup), never makes a file of this archive
unreadable; a snapshot naming a file only Java stored links to its bytes; a Java-stored
file arriving again leaves no second copy once collected."""

from __future__ import annotations

import random
import time

from imixs_archive.archive.snapshots import Archive
from imixs_archive.archive.verify import verify
from imixs_archive.document.xml_reader import read_xml_document
from imixs_archive.document.xml_writer import to_xml
from imixs_archive.filestore.gc import collect
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import (
    DOCUMENTS,
    DOCUMENTS_DATA,
    SNAPSHOTS,
    SNAPSHOTS_BY_DOCUMENT,
)
from support.java_rows import java_delete_snapshot, java_store_file
from support.snapshots import content_of, file_values, make_snapshot

V1 = random.Random(31).randbytes(3_000_000)
V2 = V1[:1_000_000] + b"edited" + V1[1_000_000:]  # shares all pieces but one or two


def collected(backend: Backend) -> None:
    for _ in range(3):
        time.sleep(0.25)
        assert not collect(backend, grace=0.2, clock_skew_us=0).errors


def test_a_java_delete_never_breaks_a_file_of_this_archive(
    archive: Archive, backend: Backend
) -> None:
    first = archive.store(make_snapshot(0, files={"report.pdf": V1})).snapshot_id
    second = archive.store(make_snapshot(1, files={"report.pdf": V2})).snapshot_id
    java_delete_snapshot(backend, archive, first)  # Inspect's delete of the older one
    assert content_of(archive.load(second), "report.pdf") == V2
    assert verify(backend).ok
    # The same bytes archived again later are whole too (no stale record trusted).
    again = archive.store(make_snapshot(2, files={"report.pdf": V1})).snapshot_id
    assert content_of(archive.load(again), "report.pdf") == V1
    # Java deleting the last snapshot of each file: still nothing of ours goes.
    java_delete_snapshot(backend, archive, second)
    assert content_of(archive.load(again), "report.pdf") == V1
    # This archive's collector removes what no snapshot uses any more.
    collected(backend)
    assert content_of(archive.load(again), "report.pdf") == V1
    report = verify(backend)
    assert report.ok, report.problems
    assert not [w for w in report.warnings if "no file uses it" in w]


def test_a_content_less_file_links_to_the_bytes_java_stored(
    archive: Archive, backend: Backend
) -> None:
    """The workflow leaves a file's content out when the archive has it (its compactor):
    the snapshot carries only the md5checksum of a file the Java service stored."""
    content = random.Random(32).randbytes(2_500_000)
    md5 = java_store_file(backend, content)
    doc = make_snapshot(3, files={"scan.tif": file_values(content, "image/tiff")})
    doc["$file"][0]["scan.tif"][1] = b""
    result = archive.store(doc)
    assert not result.warnings
    assert content_of(archive.load(result.snapshot_id), "scan.tif") == content
    assert archive.files.by_md5(md5).read_all() == content
    stored = read_xml_document(backend.get(SNAPSHOTS, {"snapshot": result.snapshot_id})["data"])
    assert stored["$file"][0]["scan.tif"][1] == b""  # as Java keeps it: content emptied


def test_a_content_less_file_revives_a_listed_file(archive: Archive, backend: Backend) -> None:
    first = make_snapshot(0, files={"x.bin": V1})
    archive.store(first)
    archive.delete(first["$uniqueid"][0])
    assert collect(backend, grace=0.2, clock_skew_us=0).listed_files == 1
    doc = make_snapshot(1, files={"x.bin": file_values(V1)})
    doc["$file"][0]["x.bin"][1] = b""
    later = archive.store(doc).snapshot_id
    collected(backend)
    assert content_of(archive.load(later), "x.bin") == V1


def test_a_java_stored_file_arriving_again_leaves_no_second_copy(
    archive: Archive, backend: Backend
) -> None:
    content = random.Random(33).randbytes(2_200_000)
    md5 = java_store_file(backend, content)
    java_ids = sorted(r["data_id"] for r in backend.scan(DOCUMENTS, {"md5": md5}))
    sid = make_snapshot(0)["$uniqueid"][0]
    kept = make_snapshot(0, files={"a.bin": file_values(content)})
    kept["$file"][0]["a.bin"][1] = b""
    backend.put(SNAPSHOTS_BY_DOCUMENT, [{"md5": md5, "snapshot": sid}])
    backend.put(SNAPSHOTS, [{"snapshot": sid, "data": to_xml(kept)}])
    again = archive.store(make_snapshot(1, files={"a.bin": content}))
    collected(backend)
    assert sorted(r["data_id"] for r in backend.scan(DOCUMENTS_DATA)) == java_ids
    assert content_of(archive.load(again.snapshot_id), "a.bin") == content
    assert archive.store(make_snapshot(2, files={"a.bin": content})).new_bytes == 0

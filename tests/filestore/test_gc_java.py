"""The collector beside the Java service (``filestore/gc_java.py``): the pieces Java cut
that no file lists, the references Java's delete leaves behind, and the empty file's
references; each also while a write is under way. Real time, a short grace period."""

from __future__ import annotations

import hashlib
import random
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.archive.verify import verify
from imixs_archive.errors import StoreUnavailableError
from imixs_archive.filestore.content import IngestedContent, Piece
from imixs_archive.filestore.garbage import CUT, REF, pin_row
from imixs_archive.filestore.gc import GcReport, collect
from imixs_archive.filestore.reading import EMPTY_MD5, is_hashed, pieces_digest
from imixs_archive.storage.base import Backend, Row
from imixs_archive.storage.delegating import DelegatingBackend
from imixs_archive.storage.model import (
    ARCHIVE_FILES,
    ARCHIVE_GARBAGE,
    ARCHIVE_PIECE_REFS,
    ARCHIVE_SNAPSHOT_FILES,
    DOCUMENTS,
    DOCUMENTS_DATA,
    SNAPSHOTS_BY_DOCUMENT,
    SNAPSHOTS_BY_UNIQUEID,
    Table,
)
from support.gc_hooks import OnceHook, collect_due
from support.java_rows import java_delete_snapshot, java_store_file, java_store_snapshot
from support.snapshots import content_of, make_snapshot

GRACE = 0.4
MIB = 2**20
A = bytes(range(256)) * 4 * 700  # 700 KiB
B = b"second file " * 90_000  # ~1 MiB
C = b"java, three pieces " * 150_000  # ~2.7 MiB: three pieces either way
R = random.Random(5).randbytes(2_500_000)  # three Java pieces, fourteen of this archive


gc = partial(collect_due, grace=GRACE)


def settled(backend: Backend) -> None:
    """Three more collections: a dangling reference, then its file, then its pieces go."""
    for _ in range(3):
        gc(backend)
    report = verify(backend)
    assert report.ok, report.problems
    assert not [w for w in report.warnings if "no file uses it" in w]


def refs(backend: Backend, key: str) -> list[str]:
    return [row["snapshot"] for row in backend.scan(SNAPSHOTS_BY_DOCUMENT, {"md5": key})]


def listed_kinds(backend: Backend) -> list[str]:
    return sorted(row["kind"] for row in backend.scan(ARCHIVE_GARBAGE))


class BeforeWrite(OnceHook):
    """Runs ``hook`` once, on another thread (its own store connection) and to its end,
    right before the first write of ``table``: the write then goes on."""

    def put(self, table: Table, rows: Any) -> int:
        self.fire(table)
        return super().put(table, rows)

    def put_soon(self, table: Table, rows: Sequence[Mapping[str, Any]]) -> Callable[[], None]:
        self.fire(table)
        return super().put_soon(table, rows)

    def put_partition(self, table: Table, rows: Sequence[Mapping[str, Any]]) -> int:
        self.fire(table)
        return super().put_partition(table, rows)


class AfterScan(DelegatingBackend):
    """Runs ``hook`` once, to its end, right after the first whole scan of ``table``."""

    def __init__(self, inner: Backend, table: Table, hook: Callable[[], None]) -> None:
        super().__init__(inner)
        self.table = table
        self.hook: Callable[[], None] | None = hook

    def scan(self, table: Table, *args: Any, **kwargs: Any) -> Iterator[Row]:
        rows = list(super().scan(table, *args, **kwargs))
        if table == self.table and self.hook is not None and not args:
            hook, self.hook = self.hook, None
            hook()
        return iter(rows)


# ---- pieces the Java service cut that no file lists ---------------------------------------


def java_pieces_only(backend: Backend, content: bytes) -> list[str]:
    """A Java write cut short: its ``documents_data`` rows, no ``documents`` row."""
    ids = []
    for start in range(0, len(content), MIB):
        ids.append(str(uuid.uuid4()))
        backend.put(DOCUMENTS_DATA, [{"data_id": ids[-1], "data": content[start : start + MIB]}])
    return ids


def test_java_pieces_no_file_lists_are_collected(archive: Archive, backend: Backend) -> None:
    java_store_snapshot(backend, make_snapshot(5, files={"c.bin": C}))  # stays
    kept = hashlib.md5(C).hexdigest().upper()
    lost = java_pieces_only(backend, B + A)  # two pieces nobody lists
    ours = archive.store(make_snapshot(0, files={"a.bin": A})).snapshot_id  # hashed pieces
    would = gc(backend, wait=False, dry_run=True)
    assert (would.java_pieces_found, would.java_pieces_listed) == (2, 2)
    assert next(backend.scan(ARCHIVE_GARBAGE), None) is None
    first = gc(backend, wait=False)
    assert (first.java_pieces_found, first.java_pieces_listed) == (2, 2)
    assert first.listed_bytes == len(B + A) and first.unused_bytes >= len(B + A)
    assert "java_pieces_found" in first.to_json()
    assert listed_kinds(backend) == [CUT, CUT]
    waiting = gc(backend, wait=False)
    assert (waiting.java_pieces_found, waiting.java_pieces_listed, waiting.waiting) == (2, 0, 2)
    second = gc(backend)
    assert (second.java_pieces_removed, second.java_bytes_freed) == (2, len(B + A))
    assert second.removed_pieces == 2 and second.bytes_freed == len(B + A)
    assert all(backend.get(DOCUMENTS_DATA, {"data_id": i}) is None for i in lost)
    assert archive.files.by_md5(kept).read_all() == C
    assert content_of(archive.load(ours), "a.bin") == A
    assert gc(backend).java_pieces_found == 0
    assert verify(backend).ok


def java_refer(backend: Backend, key: str, step: int) -> None:
    """The rest of a Java ``saveSnapshot`` after a file's pieces: a snapshot naming it."""
    snapshot_id = java_store_snapshot(backend, make_snapshot(step))
    backend.put(SNAPSHOTS_BY_DOCUMENT, [{"md5": key, "snapshot": snapshot_id}])


def test_a_java_write_under_way_keeps_its_pieces(archive: Archive, backend: Backend) -> None:
    """Java writes a file's pieces before its documents rows: a collection in between
    lists them; the documents rows come; a grace period later they are in use: kept."""
    ids = java_pieces_only(backend, C)
    assert gc(backend, wait=False).java_pieces_listed == 3
    key = hashlib.md5(C).hexdigest().upper()
    backend.put(DOCUMENTS, [{"md5": key, "sort_id": n, "data_id": i} for n, i in enumerate(ids)])
    java_refer(backend, key, 0)
    report = gc(backend)
    assert (report.java_pieces_removed, report.kept) == (0, 3)
    assert next(backend.scan(ARCHIVE_GARBAGE), None) is None
    settled(backend)
    assert archive.files.by_md5(key).read_all() == C


def test_a_java_file_written_while_the_collector_runs(archive: Archive, backend: Backend) -> None:
    """Java stores a whole file after the collector's pass over documents and before its
    pass over documents_data: its pieces are listed, and kept a grace period later."""
    doc = make_snapshot(0, files={"c.bin": C})
    hooked = AfterScan(backend, DOCUMENTS, lambda: java_store_snapshot(backend, doc) and None)
    report = collect(hooked, grace=GRACE, clock_skew_us=0)
    assert hooked.hook is None and report.java_pieces_listed == 3
    again = gc(backend)
    assert (again.java_pieces_removed, again.kept, again.java_pieces_found) == (0, 3, 0)
    settled(backend)
    assert content_of(archive.load(str(doc.get_first("$uniqueid"))), "c.bin") == C


def test_java_pieces_this_archives_rows_overwrote_are_collected(
    archive: Archive, backend: Backend
) -> None:
    """N1: both services store one new file at once; Java writes its three rows after
    this archive looked and before it writes its fourteen: Java's pieces are then listed
    by no file, and collected; the file stays whole."""
    hooked = BeforeWrite(backend, DOCUMENTS, lambda: java_store_file(backend, R) and None)
    hooked.same_thread = True  # SQLite: inside the store's transaction, as if just before
    with Archive(hooked) as storing:
        stored = storing.store(make_snapshot(0, files={"r.bin": R})).snapshot_id
    assert not hooked.errors and hooked.hook is None
    found = gc(backend, wait=False)
    assert (found.java_pieces_found, found.java_pieces_listed) == (3, 3)
    assert gc(backend).java_pieces_removed == 3
    settled(backend)
    assert content_of(archive.load(stored), "r.bin") == R
    assert all(is_hashed(row["data_id"]) for row in backend.scan(DOCUMENTS_DATA))


# ---- references from snapshots that are gone ----------------------------------------------


def test_a_java_delete_leaves_no_file_behind(archive: Archive, backend: Backend) -> None:
    """N4: Java's delete stops at the first file that still has a reference (this
    archive's pin): the other file's reference stays; the collector removes it, then the
    files and their pieces."""
    doc = make_snapshot(0, files={"a.bin": A, "b.bin": B})
    gone = archive.store(doc).snapshot_id
    stays = archive.store(make_snapshot(1, files={"c.bin": C})).snapshot_id
    java_delete_snapshot(backend, archive, gone)
    left = [row for row in backend.scan(SNAPSHOTS_BY_DOCUMENT) if row["snapshot"] == gone]
    assert len(left) == 1  # the second file's reference
    first = gc(backend, wait=False)
    assert (first.dangling_refs_found, first.dangling_refs_listed) == (1, 1)
    assert first.listed_files == 1  # the file Java took its reference from
    assert REF in listed_kinds(backend)
    second = gc(backend)
    assert second.dangling_refs_removed == 1 and second.removed_files == 1
    assert not [row for row in backend.scan(SNAPSHOTS_BY_DOCUMENT) if row["snapshot"] == gone]
    settled(backend)
    assert {row["md5"] for row in backend.scan(ARCHIVE_FILES)} == set(refs_of(archive, stays))
    assert content_of(archive.load(stays), "c.bin") == C


def refs_of(archive: Archive, snapshot_id: str) -> list[str]:
    return [
        row["md5"]
        for row in archive.backend.scan(ARCHIVE_SNAPSHOT_FILES, {"snapshot": snapshot_id})
    ]


def test_a_java_snapshot_deleted_by_java_goes_whole(archive: Archive, backend: Backend) -> None:
    """A snapshot Java stored, whose first file this archive then took in too (it adopts
    Java's rows and pins them): Java's delete stops at that file, and leaves the second
    file's reference; the collector takes it, then the second file, Java's pieces too."""
    doc = make_snapshot(0, files={"a.bin": A, "b.bin": B})
    java_id = java_store_snapshot(backend, doc)
    kept = archive.store(make_snapshot(1, files={"a.bin": A})).snapshot_id  # adopts, pins
    java_delete_snapshot(backend, archive, java_id)
    b_key = hashlib.md5(B).hexdigest().upper()
    assert refs(backend, b_key) == [java_id]
    assert gc(backend, wait=False).dangling_refs_listed == 1
    settled(backend)
    assert refs(backend, b_key) == []
    assert next(backend.scan(DOCUMENTS, {"md5": b_key}), None) is None
    assert len(list(backend.scan(DOCUMENTS_DATA))) == 1  # A's one Java piece
    assert content_of(archive.load(kept), "a.bin") == A


def test_the_pins_are_no_dangling_references(archive: Archive, backend: Backend) -> None:
    stored = archive.store(make_snapshot(0, files={"a.bin": A})).snapshot_id
    archive.delete(stored)
    report = gc(backend, wait=False)
    assert report.dangling_refs_found == 0 and report.listed_files == 1


def test_a_snapshot_being_stored_keeps_its_references(archive: Archive, backend: Backend) -> None:
    """A collection while a store has written the snapshot's references but not its row:
    on Cassandra it sees them and lists them; the store ends; a grace period later the
    references are in use again and kept. On SQLite the store's rows are one transaction:
    a collection sees none of them."""
    doc = make_snapshot(0, files={"a.bin": A, "b.bin": B})
    seen: list[GcReport] = []
    cassandra = backend.name == "cassandra"

    def collect_now() -> None:  # SQLite: the store holds the write lock, a dry run looks
        seen.append(collect(backend, grace=GRACE, clock_skew_us=0, dry_run=not cassandra))

    hooked = BeforeWrite(backend, SNAPSHOTS_BY_UNIQUEID, collect_now)
    with Archive(hooked) as storing:
        stored = storing.store(doc).snapshot_id
    assert not hooked.errors and seen
    assert seen[0].dangling_refs_found == (2 if cassandra else 0)
    report = gc(backend)
    assert report.dangling_refs_removed == 0 and report.kept == (2 if cassandra else 0)
    settled(backend)
    assert len(refs(backend, refs_of(archive, stored)[0])) == 2  # its reference and the pin
    loaded = archive.load(stored)
    assert (content_of(loaded, "a.bin"), content_of(loaded, "b.bin")) == (A, B)


def test_a_store_run_again_after_the_listing_keeps_its_reference(
    archive: Archive, backend: Backend
) -> None:
    """Cassandra: a store that died after writing its references (listed by a collection)
    runs again; while it has written them again and not yet its row, the grace period
    ends: the collector's stamped delete spares the rows written after the listing."""
    if backend.name != "cassandra":
        pytest.skip("SQLite writes a snapshot's rows in one transaction: never half")
    doc = make_snapshot(0, files={"a.bin": A})
    snapshot_id = str(doc.get_first("$uniqueid"))
    key = archive.store(make_snapshot(1, files={"a.bin": A})).snapshot_id  # the file exists
    key = refs_of(archive, key)[0]
    backend.put(SNAPSHOTS_BY_DOCUMENT, [{"md5": key, "snapshot": snapshot_id}])  # died here
    assert gc(backend, wait=False).dangling_refs_listed == 1
    time.sleep(GRACE + 0.05)

    def collect_now() -> None:
        assert collect(backend, grace=GRACE, clock_skew_us=0).dangling_refs_removed == 1

    hooked = BeforeWrite(backend, SNAPSHOTS_BY_UNIQUEID, collect_now)
    with Archive(hooked) as storing:
        storing.store(doc)
    assert not hooked.errors and hooked.hook is None
    assert snapshot_id in refs(backend, key)
    assert content_of(archive.load(snapshot_id), "a.bin") == A
    settled(backend)
    assert snapshot_id in refs(backend, key)


# ---- the empty file ---------------------------------------------------------------------


def test_an_empty_file_has_no_rows(archive: Archive, backend: Backend) -> None:
    first = archive.store(make_snapshot(0, files={"empty.txt": b"", "a.bin": A})).snapshot_id
    second = archive.store(make_snapshot(1, files={"empty.txt": b""})).snapshot_id
    assert refs(backend, EMPTY_MD5) == []
    assert backend.get(ARCHIVE_FILES, {"md5": EMPTY_MD5}) is None
    for snapshot_id in (first, second):
        assert content_of(archive.load(snapshot_id), "empty.txt") == b""
        assert archive.stored_digest(snapshot_id, read_all=True) is not None
        assert b"".join(archive.xml_with_files(snapshot_id).iter_bytes())
    assert archive.files.by_md5(EMPTY_MD5).read_all() == b""
    assert archive.index.file_keys(second, archive.load(second)) == {"empty.txt": EMPTY_MD5}
    archive.delete(first)
    settled(backend)
    assert refs(backend, EMPTY_MD5) == []
    assert content_of(archive.load(second), "empty.txt") == b""
    report = verify(backend)
    assert report.ok and not report.warnings, (report.problems, report.warnings)


def old_empty_rows(backend: Backend, snapshot_ids: list[str]) -> None:
    """What older versions wrote for an empty file: its record, its pin, a reference per
    snapshot."""
    backend.put(
        ARCHIVE_FILES,
        [{"md5": EMPTY_MD5, "digest": pieces_digest([]), "size": 0, "pieces": 0}],
    )
    backend.put(SNAPSHOTS_BY_DOCUMENT, [pin_row(EMPTY_MD5)])
    backend.put(SNAPSHOTS_BY_DOCUMENT, [{"md5": EMPTY_MD5, "snapshot": s} for s in snapshot_ids])


def test_the_empty_files_old_references_are_removed(archive: Archive, backend: Backend) -> None:
    ids = [
        archive.store(make_snapshot(step, files={"empty.txt": b""})).snapshot_id
        for step in range(3)
    ]
    old_empty_rows(backend, ids)
    assert gc(backend, wait=False, dry_run=True).empty_refs_removed == 3
    assert len(refs(backend, EMPTY_MD5)) == 4
    report = gc(backend, wait=False)
    assert report.empty_refs_removed == 3 and report.dangling_refs_found == 0
    assert refs(backend, EMPTY_MD5) == []
    settled(backend)
    assert backend.get(ARCHIVE_FILES, {"md5": EMPTY_MD5}) is None
    for snapshot_id in ids:
        assert content_of(archive.load(snapshot_id), "empty.txt") == b""
    assert archive.files.by_md5(EMPTY_MD5).read_all() == b""


def test_a_store_of_an_empty_file_while_the_collector_drops_its_rows(
    archive: Archive, backend: Backend
) -> None:
    earlier = archive.store(make_snapshot(0, files={"empty.txt": b""})).snapshot_id
    old_empty_rows(backend, [earlier])
    reports: list[GcReport] = []
    # While the new snapshot's other file is being written (outside its rows' group):
    hooked = BeforeWrite(backend, DOCUMENTS_DATA, lambda: reports.append(gc(backend, wait=False)))
    with Archive(hooked) as storing:
        later = storing.store(make_snapshot(1, files={"empty.txt": b"", "a.bin": A}))
    assert not hooked.errors and reports[0].empty_refs_removed == 1
    assert refs(backend, EMPTY_MD5) == []
    settled(backend)
    for snapshot_id in (earlier, later.snapshot_id):
        assert content_of(archive.load(snapshot_id), "empty.txt") == b""
    assert content_of(archive.load(later.snapshot_id), "a.bin") == A


def test_an_ingest_too_long_notices_a_listed_java_piece(archive: Archive, backend: Backend) -> None:
    """A long ingest re-checks the pieces it relies on (``FileStore.check_reused``): one cut
    as Java cuts them counts as being collected when listed as such, as a hashed one does."""
    (data_id,) = java_pieces_only(backend, A)
    content = IngestedContent(
        backend, hashlib.md5(A).hexdigest().upper(), len(A), [Piece(data_id, len(A))]
    )
    archive.files.check_reused([content])  # not listed: nothing to say
    assert gc(backend, wait=False).java_pieces_listed == 1
    with pytest.raises(StoreUnavailableError, match="being collected"):
        archive.files.check_reused([content])


# ---- references of pieces their file no longer lists ---------------------------------------


def test_pieces_javas_rows_replaced_go_their_file_stays(backend: Backend) -> None:
    """N1, in Java's cuts: this archive stores a new file, then the Java service (which
    found no rows a moment before) writes its three rows over this archive's three. The
    file reads right (the same bytes at every place); the references of this archive's
    pieces, which no row lists any more, are listed, removed a grace period later, and
    then the pieces themselves go as any unused piece."""
    with Archive(backend, file_cuts="java") as archive:
        stored = archive.store(make_snapshot(0, files={"r.bin": R})).snapshot_id
        key = hashlib.md5(R).hexdigest().upper()
        ours = [row["data_id"] for row in backend.scan(DOCUMENTS, {"md5": key})]
        assert len(ours) == 3 and all(map(is_hashed, ours))
        java_store_file(backend, R)  # its rows over ours: Java's pieces listed now
        found = gc(backend, wait=False)
        assert (found.stale_piece_refs_found, found.stale_piece_refs_listed) == (3, 3)
        assert gc(backend).stale_piece_refs_removed == 3
        assert not [r for r in backend.scan(ARCHIVE_PIECE_REFS) if r["data_id"] in ours]
        gc(backend)  # our pieces listed ...
        gc(backend)  # ... and removed
        left = {row["data_id"] for row in backend.scan(DOCUMENTS_DATA)}
        assert left.isdisjoint(ours) and len(left) == 3
        assert content_of(archive.load(stored), "r.bin") == R
        report = verify(backend)
        assert report.ok, report.problems


def test_a_reference_written_before_its_files_rows_is_kept(backend: Backend) -> None:
    """This archive writes a file's piece references before its documents rows: found
    then, a reference is listed; its rows written within the grace period, it stays."""
    with Archive(backend, file_cuts="java") as archive:
        archive.store(make_snapshot(0, files={"a.bin": A}))
    key = hashlib.md5(A).hexdigest().upper()
    (row,) = list(backend.scan(DOCUMENTS, {"md5": key}))
    backend.delete(DOCUMENTS, {"md5": key})  # as if its rows were not written yet
    found = gc(backend, wait=False)
    assert found.stale_piece_refs_listed == 1
    backend.put(DOCUMENTS, [row])  # the ingest goes on
    later = gc(backend)
    assert later.stale_piece_refs_removed == 0 and later.kept >= 1
    assert backend.get(ARCHIVE_PIECE_REFS, {"data_id": row["data_id"], "md5": key}) is not None
    assert "piece-reference" not in listed_kinds(backend)

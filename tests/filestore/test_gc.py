"""The collector beside ingests, forced into the interleavings that broke files before:
a collection (or a delete) lands while an ingest relies on stored bytes it found; two
processes ingest and collect at once. Real time throughout (a short grace period and
sleeps), so Cassandra's write times are the ones the collector reasons about."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from imixs_archive.archive.snapshots import Archive, StoreResult
from imixs_archive.archive.verify import verify
from imixs_archive.config import Settings
from imixs_archive.errors import StoreUnavailableError
from imixs_archive.filestore.content import PieceStore
from imixs_archive.filestore.garbage import now_us
from imixs_archive.filestore.gc import collect
from imixs_archive.storage.base import Backend, Row
from imixs_archive.storage.model import (
    ARCHIVE_GARBAGE,
    DOCUMENTS,
    DOCUMENTS_DATA,
    SNAPSHOTS,
    Table,
)
from support.backends import CASSANDRA_ENV, CASSANDRA_SKIP
from support.gc_hooks import OnceHook, collect_due
from support.kills import process_env
from support.snapshots import content_of, make_snapshot

GRACE = 0.4
X = random.Random(21).randbytes(1_500_000)
X_OTHER_HEAD = random.Random(22).randbytes(40_000) + X[40_000:]  # no twin, shares pieces


gc = partial(collect_due, grace=GRACE)


class Interleave(OnceHook):
    """Runs ``hook`` once, on another thread (its own store connection) and to its end,
    right after the ingest's first look-up of ``table``: the ingest then goes on."""

    def __init__(
        self, inner: Backend, table: Table, hook: Callable[[], None], *, found: bool = False
    ) -> None:
        """``found``: only after a look-up that found its row."""
        super().__init__(inner, table, hook)
        self.found = found

    def get(
        self, table: Table, key: Mapping[str, Any], columns: Sequence[str] | None = None
    ) -> Row | None:
        row = super().get(table, key, columns)
        if row is not None or not self.found:
            self.fire(table)
        return row

    def scan(self, table: Table, *args: Any, **kwargs: Any) -> Iterator[Row]:
        rows = list(super().scan(table, *args, **kwargs))
        self.fire(table)
        return iter(rows)


def stored_then_deleted(archive: Archive, content: bytes = X) -> None:
    doc = make_snapshot(0, files={"x.bin": content})
    archive.store(doc)
    archive.delete(doc["$uniqueid"][0])


def settled(backend: Backend) -> None:
    """Two more collections: everything unreferenced is gone, nothing in use is."""
    gc(backend)
    gc(backend)
    report = verify(backend)
    assert report.ok, report.problems
    assert not [w for w in report.warnings if "no file uses it" in w]


def ingest_beside(
    backend: Backend, hooked: Interleave, content: bytes, *, one_lookup: bool = False
) -> StoreResult:
    """``content`` archived (snapshot 1's ``x.bin``) through ``hooked``, which runs its
    hook on the way, to its end and without an error; then, the store settled, read back
    whole. ``one_lookup``: the pieces looked up one at a time."""
    with Archive(hooked) as archive:
        if one_lookup:
            archive.pieces = PieceStore(hooked, threads=1)
        later = archive.store(make_snapshot(1, files={"x.bin": content}))
        assert not hooked.errors and hooked.hook is None
        settled(backend)
        assert content_of(archive.load(later.snapshot_id), "x.bin") == content
    return later


def pieces_listed(backend: Backend) -> None:
    """A file stored, deleted, listed and removed by the collector: its pieces listed."""
    with Archive(backend) as archive:
        stored_then_deleted(archive)
    gc(backend, wait=False)  # lists the file
    assert gc(backend).removed_files == 1  # removes it, lists its pieces


def test_a_collection_during_an_ingest_that_found_a_twin(backend: Backend) -> None:
    """The file was listed before the ingest began; while the ingest compares its bytes
    with it, the collector removes the file and lists its pieces. The ingest then writes
    the file anew, the pieces are in use again, and nothing is lost."""
    with Archive(backend) as archive:
        stored_then_deleted(archive)
    assert gc(backend, wait=False).listed_files == 1
    # After the twin's piece list is read (its head, record and list were found):
    later = ingest_beside(backend, Interleave(backend, DOCUMENTS, lambda: gc(backend)), X)
    assert later.new_bytes == 0  # found as a twin: nothing written


def test_a_collection_during_an_ingest_that_reuses_listed_pieces(backend: Backend) -> None:
    """The pieces were listed before the ingest; the ingest takes those it finds off the
    list; a collection after its first look-up removes the others, which it then writes."""
    pieces_listed(backend)
    ingest_beside(backend, Interleave(backend, DOCUMENTS_DATA, lambda: gc(backend)), X_OTHER_HEAD)


def test_a_collection_between_finding_a_piece_and_looking_at_the_list(
    backend: Backend,
) -> None:
    """The ingest found a listed piece stored; before it looks at the list, the collector
    removes the piece and its list row. The ingest looks for the piece once more, finds
    it gone and writes it (it used to rely on it: a file with a missing piece)."""
    pieces_listed(backend)
    time.sleep(GRACE + 0.05)  # the pieces are due
    hooked = Interleave(backend, DOCUMENTS_DATA, lambda: gc(backend, wait=False), found=True)
    ingest_beside(backend, hooked, X_OTHER_HEAD, one_lookup=True)


def test_a_delete_and_a_collection_during_an_ingest_of_the_same_bytes(
    backend: Backend,
) -> None:
    """The race of the issue: the last other user of the bytes is deleted (and the
    collector lists them) after the ingest found them stored. The collector removes
    nothing before its grace period, by which time the ingest refers to them."""
    with Archive(backend) as archive:
        first = archive.store(make_snapshot(0, files={"x.bin": X})).snapshot_id

        def delete_and_list() -> None:
            with Archive(backend) as other:
                other.delete(first)
            assert gc(backend, wait=False).listed_files == 1

        ingest_beside(backend, Interleave(backend, DOCUMENTS_DATA, delete_and_list), X_OTHER_HEAD)
        assert not archive.exists(first)


def test_an_ingest_longer_than_half_the_grace_checks_what_it_reused(backend: Backend) -> None:
    with Archive(backend) as archive:
        stored_then_deleted(archive)
    gc(backend, wait=False)
    hooked = Interleave(backend, DOCUMENTS_DATA, lambda: gc(backend))
    with Archive(hooked, gc_grace=0.0) as archive, pytest.raises(StoreUnavailableError):
        # Its first piece was found stored and not listed; then the collector removed the
        # file and listed that piece: the ingest, "too long", notices before referring.
        archive.store(make_snapshot(1, files={"x.bin": X}))
    with Archive(backend) as archive:  # archived again: complete
        again = archive.store(make_snapshot(1, files={"x.bin": X}))
        settled(backend)
        assert content_of(archive.load(again.snapshot_id), "x.bin") == X


def test_a_dry_run_changes_nothing(backend: Backend) -> None:
    with Archive(backend) as archive:
        stored_then_deleted(archive)
    report = collect(backend, grace=GRACE, dry_run=True, clock_skew_us=0)
    assert report.listed_files == 1 and report.reclaimable_bytes >= len(X)
    assert next(backend.scan(ARCHIVE_GARBAGE), None) is None
    gc(backend, wait=False)
    time.sleep(GRACE + 0.05)
    report = collect(backend, grace=GRACE, dry_run=True, clock_skew_us=0)
    assert report.removed_files == 1
    assert len(list(backend.scan(ARCHIVE_GARBAGE))) == 1  # still listed, nothing removed


def test_the_pieces_a_removed_file_leaves_are_counted_as_still_to_free(backend: Backend) -> None:
    """A file removed after its grace period leaves its pieces listed in its stead: the
    report says so (before, '0 pieces listed, reclaimable 0 B' with them pending)."""
    with Archive(backend) as archive:
        stored_then_deleted(archive)
    first = gc(backend, wait=False)
    assert first.listed_files == 1 and first.reclaimable_bytes >= len(X)
    time.sleep(GRACE + 0.05)
    would = collect(backend, grace=GRACE, dry_run=True, clock_skew_us=0)
    second = gc(backend, wait=False)
    assert second.removed_files == 1 and second.listed_pieces > 1
    assert second.reclaimable_bytes == first.reclaimable_bytes
    assert (would.listed_pieces, would.reclaimable_bytes) == (
        second.listed_pieces,
        second.reclaimable_bytes,
    )
    third = gc(backend)
    assert third.removed_pieces == second.listed_pieces
    assert third.bytes_freed == second.reclaimable_bytes and third.reclaimable_bytes == 0


INGESTER = """
import os, random, sys, time
from imixs_archive.filestore.content import PieceStore
from imixs_archive.archive.snapshots import Archive, StoreResult
from imixs_archive.config import load_settings
from imixs_archive.errors import StoreUnavailableError
from imixs_archive.storage.factory import open_backend
from support.snapshots import make_snapshot
settings = load_settings(dict(os.environ))
shared = random.Random(21).randbytes(600_000)
with open_backend(settings) as backend, Archive(backend, gc_grace=float(sys.argv[1])) as archive:
    for step in range(24):
        own = random.Random(step % 3).randbytes(200_000)  # comes and goes
        doc = make_snapshot(
            step, files={"shared.bin": shared, "own.bin": own}, dollar_snapshot__history=1
        )
        while True:
            try:
                archive.store(doc)
                break
            except StoreUnavailableError:
                time.sleep(0.05)
print("done")
"""


def test_two_processes_ingest_and_collect_at_once(
    backend: Backend, store_settings: Settings, tmp_path: Path
) -> None:
    """Another process archives snapshots whose attachments come and go (history 1, so
    each store deletes the one before); this one collects all the while."""
    grace = 3.0
    script = tmp_path / "ingest.py"
    script.write_text(INGESTER)
    other = subprocess.Popen(
        [sys.executable, str(script), str(grace)],
        env=process_env(store_settings),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    removed = 0
    try:
        while other.poll() is None:
            report = collect(backend, grace=grace, clock_skew_us=0)
            assert not report.errors
            removed += report.removed_files + report.removed_pieces
            time.sleep(0.2)
        out, err = other.communicate(timeout=60)
    finally:
        if other.poll() is None:
            other.kill()
    assert other.returncode == 0, err
    assert "done" in out
    time.sleep(grace + 0.1)
    for _ in range(2):
        report = collect(backend, grace=grace, clock_skew_us=0)
        removed += report.removed_files + report.removed_pieces
        time.sleep(grace + 0.1)
    with Archive(backend) as archive:
        ids = list(archive.index.iter_snapshot_ids())
        assert len(ids) == 1
        doc = archive.load(ids[0])
        assert content_of(doc, "shared.bin") == random.Random(21).randbytes(600_000)
    report = verify(backend)
    assert report.ok, report.problems
    assert removed > 0
    assert next(backend.scan(SNAPSHOTS), None) is not None


def test_a_stamped_delete_spares_a_later_write(backend: Backend) -> None:
    """Cassandra: the collector's delete takes only what was written before the listing."""
    if backend.name != "cassandra":
        pytest.skip("SQLite orders writes by transactions; the collector re-checks in one")
    key = {"data_id": "piece-a"}
    backend.put(DOCUMENTS_DATA, [{**key, "data": b"old"}])
    time.sleep(0.01)
    listed_at = now_us()
    time.sleep(0.01)
    backend.put(DOCUMENTS_DATA, [{**key, "data": b"rewritten"}])
    backend.delete(DOCUMENTS_DATA, key, written_before=listed_at)
    assert backend.get(DOCUMENTS_DATA, key) == {**key, "data": b"rewritten"}
    backend.delete(DOCUMENTS_DATA, key, written_before=now_us())
    assert backend.get(DOCUMENTS_DATA, key) is None


def test_no_keyspace_is_created_by_a_command_that_only_reads(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    target = os.environ.get(CASSANDRA_ENV, "").strip()
    if not target:
        pytest.skip(CASSANDRA_SKIP)
    from imixs_archive.cli import main

    keyspace = "archive_test_missing_" + "".join(random.choices("abcdefghij", k=8))
    monkeypatch.setenv("ARCHIVE_CLUSTER_CONTACTPOINTS", target)
    monkeypatch.setenv("ARCHIVE_CLUSTER_KEYSPACE", keyspace)
    for _ in range(2):  # had the first created it, the second would find it
        assert main(["stats"]) == 4
        assert f"no archive in Cassandra keyspace {keyspace!r}" in capsys.readouterr().err

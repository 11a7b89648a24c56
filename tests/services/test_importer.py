"""The importer's one way in (``archive_stream``), used by the CLI's import and the HTTP
push alike: a bad document is reported and the rest goes in; a failing store ends it."""

from __future__ import annotations

import itertools
import random
import re
import subprocess
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import Settings, load_settings
from imixs_archive.document.json_codec import to_json
from imixs_archive.document.model import Document
from imixs_archive.document.xml_writer import to_xml
from imixs_archive.errors import StoreUnavailableError
from imixs_archive.services import importer
from imixs_archive.services.importer import (
    LEAST_BATCH_BYTES,
    _batches,
    import_in_workers,
    import_sources,
)
from imixs_archive.services.sources import Source, find_sources
from imixs_archive.services.workers import Spread
from imixs_archive.storage.base import Backend
from imixs_archive.storage.delegating import DelegatingBackend
from imixs_archive.storage.factory import open_backend
from imixs_archive.storage.model import Table
from imixs_archive.storage.sqlite.backend import SQLiteBackend, Tuning
from support import sync_recorder
from support.snapshots import make_snapshot


class WritesFail(DelegatingBackend):
    """Every write fails as unavailable once ``down`` is set."""

    def __init__(self, inner: Backend) -> None:
        super().__init__(inner)
        self.down = False

    def put(self, table: Table, rows: Iterable[Mapping[str, Any]]) -> int:
        if self.down:
            raise StoreUnavailableError("the store is unavailable (test)")
        return self.inner.put(table, rows)

    def put_partition(self, table: Table, rows: Sequence[Mapping[str, Any]]) -> int:
        if self.down:
            raise StoreUnavailableError("the store is unavailable (test)")
        return self.inner.put_partition(table, rows)

    def put_new(self, table: Table, row: Mapping[str, Any]) -> bool:
        if self.down:
            raise StoreUnavailableError("the store is unavailable (test)")
        return self.inner.put_new(table, row)


@pytest.mark.parametrize("suffix", [".json", ".xml"])
def test_a_failing_store_ends_the_import_instead_of_failing_each_document(
    tmp_path: Path, suffix: str
) -> None:
    # Before, a JSON document whose write failed was counted as one failed document and
    # the import went on to the next (the HTTP push stopped instead), and an XML file
    # whose store failed was one failed file, the next file tried against the same store.
    docs = [make_snapshot(n) for n in range(3)]
    for name in ("a", "b"):
        body = to_json(docs) if suffix == ".json" else to_xml(docs, collection=True)
        (tmp_path / f"{name}{suffix}").write_bytes(body)
    with WritesFail(SQLiteBackend(tmp_path / "store.db")) as backend, Archive(backend) as archive:
        backend.down = True
        with pytest.raises(StoreUnavailableError):
            import_sources(archive, find_sources([str(tmp_path)]))
        backend.down = False
        summary = import_sources(archive, find_sources([str(tmp_path)]))
        assert (summary.new, summary.failed) == (3, 0)


def test_a_bad_json_document_is_reported_and_the_rest_goes_in(tmp_path: Path) -> None:
    docs = [make_snapshot(0), Document({"txtname": ["no $uniqueid"]}), make_snapshot(1)]
    (tmp_path / "in.json").write_bytes(to_json(docs))
    with SQLiteBackend(tmp_path / "store.db") as backend, Archive(backend) as archive:
        summary = import_sources(archive, find_sources([str(tmp_path / "in.json")]))
    assert (summary.new, summary.failed) == (2, 1), summary.failures
    assert summary.failures[0].startswith(f"{tmp_path / 'in.json'} (document 2)")


class Deferring(DelegatingBackend):
    """Records whether each write was made inside ``durable_at_end`` and when the outermost
    block ended (the one that syncs; a nested block's end does not)."""

    def __init__(self, inner: Backend) -> None:
        super().__init__(inner)
        self.open_blocks = 0
        self.events: list[str] = []

    def durable_at_end(self) -> AbstractContextManager[None]:
        @contextmanager
        def block() -> Iterator[None]:
            self.open_blocks += 1
            with self.inner.durable_at_end():
                yield
            self.open_blocks -= 1
            if not self.open_blocks:
                self.events.append("durable")

        return block()

    def put(self, table: Table, rows: Iterable[Mapping[str, Any]]) -> int:
        self.events.append("deferred" if self.open_blocks else "synced")
        return self.inner.put(table, rows)

    def put_new(self, table: Table, row: Mapping[str, Any]) -> bool:
        self.events.append("deferred" if self.open_blocks else "synced")
        return self.inner.put_new(table, row)


def test_an_import_is_durable_when_it_returns_and_not_at_each_write(tmp_path: Path) -> None:
    """Its input stays where it is, so its writes skip their fsync until it ends."""
    files = {"scan.pdf": random.Random(1).randbytes(300_000)}  # pieces: on the piece threads
    (tmp_path / "in.xml").write_bytes(to_xml([make_snapshot(n, files=files) for n in range(3)]))
    with Deferring(SQLiteBackend(tmp_path / "store")) as backend, Archive(backend) as archive:
        summary = import_sources(archive, find_sources([str(tmp_path / "in.xml")]))
    assert summary.new == 3
    assert backend.events[-1] == "durable"
    assert set(backend.events[:-1]) == {"deferred"}


def _six_files_a_batch_each(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Source]:
    monkeypatch.setattr(importer, "LEAST_BATCH_BYTES", 1)
    folder = tmp_path / "in"
    folder.mkdir()
    for number in range(6):
        (folder / f"{number}.xml").write_bytes(to_xml([make_snapshot(number)]))
    return find_sources([str(folder)])


def test_an_import_over_workers_syncs_once_per_process_not_per_batch(
    store_settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sources = _six_files_a_batch_each(tmp_path, monkeypatch)
    backend = Deferring(open_backend(store_settings, create=False))
    with backend, Archive(backend) as archive:  # one job: this process takes every batch
        summary = import_in_workers(Spread(store_settings, 1), sources, here=archive)
    assert summary.new == 6
    assert backend.events.count("durable") == 1 and backend.events[-1] == "durable"
    assert set(backend.events[:-1]) == {"deferred"}


def test_import_in_worker_processes_stores_and_reports_what_one_process_does(
    archive: Archive, store_settings: Settings, tmp_path: Path
) -> None:
    pdf = random.Random(3).randbytes(300_000)
    folder = tmp_path / "in"
    folder.mkdir()
    for number in range(8):
        origin = f"{number:08d}-2222-4333-8444-555555555555"
        docs = [
            make_snapshot(step, origin=origin, files={"a.pdf": pdf[: 100_000 * (step + 1)]})
            for step in range(2)
        ]
        (folder / f"{number}.xml").write_bytes(to_xml(docs, collection=True))
    (folder / "3b.xml").write_bytes(b"<document><item name='x'>")  # cut off
    sources = find_sources([str(folder)])
    with SQLiteBackend(tmp_path / "alone") as backend, Archive(backend) as alone:
        expected = import_sources(alone, sources)
        read: list[int] = []
        summary = import_in_workers(Spread(store_settings, 3), sources, read.append, archive)
        assert (summary.new, summary.present, summary.failed) == (16, 0, 1)
        assert summary.failures == expected.failures and "3b.xml" in summary.failures[0]
        assert summary.exit_code == expected.exit_code == 3
        assert summary.logical_bytes == expected.logical_bytes
        assert sum(read) == sum(source.size or 0 for source in sources)
        ids = sorted(alone.index.iter_snapshot_ids())
        assert sorted(archive.index.iter_snapshot_ids()) == ids and len(ids) == 16
        for snapshot_id in ids:
            assert archive.load(snapshot_id) == alone.load(snapshot_id)
    again = import_in_workers(Spread(store_settings, 2), sources)
    assert (again.new, again.present, again.failed) == (0, 16, 1)


def test_batches_shrink_towards_the_end_and_keep_every_file_once_in_order() -> None:
    mib = 1024 * 1024
    sources = [Source(f"{n}.xml", Path(f"{n}.xml"), 4 * mib + n) for n in range(200)]
    batches = list(_batches(sources, 2))
    assert [number for number, _batch in batches] == list(range(len(batches)))
    assert [s for _number, batch in batches for s in batch] == sources
    sizes = [sum(s.size or 0 for s in batch) for _number, batch in batches]
    assert sizes[0] >= sum(sizes) // 4  # a quarter of all first (two jobs) ...
    assert all(a + mib > b for a, b in itertools.pairwise(sizes[:-1]))  # ... then less
    assert all(size >= LEAST_BATCH_BYTES for size in sizes[:-1])
    assert sizes[-2] < 2 * LEAST_BATCH_BYTES  # small ones at the end


def test_an_import_over_workers_fsyncs_the_store_once_in_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the real store: the batches' blocks nest in the process's session, so SQLite syncs
    the WAL when the session ends, not at each commit (recorded by a layer to the files of
    the test's)."""
    sources = _six_files_a_batch_each(tmp_path, monkeypatch)
    SQLiteBackend(tmp_path / "store").close()  # made before (a new store syncs its folder)
    settings = load_settings({"ARCHIVE_DATA_DIR": str(tmp_path / "store")})
    with sync_recorder.recording() as recorder:
        tuning = Tuning(vfs=recorder.name)
        with SQLiteBackend(tmp_path / "store", tuning) as backend, Archive(backend) as archive:
            summary = import_in_workers(Spread(settings, 1), sources, here=archive)
            assert summary.new == 6
            assert len(list(_batches(sources, 1))) > 1
            # One sync at the end; SQLite may also sync a new log's header, once: not one
            # per commit (each of the six snapshots commits several times).
            wal = str(tmp_path / "store" / "archive.db-wal")
            assert recorder.synced in ([wal], [wal, wal])


def test_two_imports_of_the_same_snapshots_at_once_count_each_new_once(tmp_path: Path) -> None:
    """Each process archives every snapshot it does not find; when both write one at once,
    only the one whose row landed counts it as new (on the embedded store; on Cassandra
    both may, see ``Backend.put_new``)."""
    docs = [make_snapshot(n, subject=f"overlap {n}") for n in range(300)]
    body = b"".join(to_xml(doc).split(b"?>", 1)[1] for doc in docs)
    source = tmp_path / "all.xml"
    source.write_bytes(b"<data>" + body + b"</data>")
    store = tmp_path / "store"
    SQLiteBackend(store).close()
    command = [sys.executable, "-m", "imixs_archive", "import", str(source), "--jobs", "1"]
    runs = [
        subprocess.Popen([*command, "--data-dir", str(store)], stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    said = [run.communicate(timeout=120)[0] for run in runs]
    assert [run.returncode for run in runs] == [0] * 4, said
    new = [int(re.search(r"(\d+) new, (\d+) already present", text)[1]) for text in said]
    present = [int(re.search(r"(\d+) new, (\d+) already present", text)[2]) for text in said]
    assert sum(new) == len(docs), said
    assert [a + b for a, b in zip(new, present, strict=True)] == [len(docs)] * 4

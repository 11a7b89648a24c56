"""The import stores each snapshot behind the parser (``importer._StoreBehind``): the next
snapshot is read while one is stored, and what comes out is what one thread would give:
outcomes in input order, a failing store ends the import at its snapshot, Ctrl-C lets the
snapshot being stored finish and stores nothing after.

On Cassandra the import does this by itself; on the embedded store it stores each snapshot
before reading on (``_depth``), so these tests ask for one behind there too."""

from __future__ import annotations

import datetime as dt
import random
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from imixs_archive.archive.snapshots import Archive, StoreResult
from imixs_archive.document.json_codec import to_json
from imixs_archive.document.model import Document
from imixs_archive.document.xml_writer import to_xml
from imixs_archive.errors import StoreUnavailableError
from imixs_archive.services import importer
from imixs_archive.services.importer import import_sources
from imixs_archive.services.sources import Source, find_sources
from support.snapshots import content_of, make_snapshot

pytestmark = pytest.mark.both_stores  # store-facing: a store that falls behind its writers

WAIT_S = 30.0
"""Long enough for any machine; a test that waits this long has failed."""


@pytest.fixture(autouse=True)
def one_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importer, "_depth", lambda _archive: 1)


def _uid(doc: Document) -> str:
    return str(doc.get_first("$uniqueid"))


def _sources(tmp_path: Path, files: dict[str, bytes]) -> list[Source]:
    folder = tmp_path / "in"
    folder.mkdir()
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return find_sources([str(folder / name) for name in files])


def _one_a_file(tmp_path: Path, count: int) -> tuple[list[Document], list[Source]]:
    """``count`` snapshots of one instance, a file each."""
    docs = [make_snapshot(step) for step in range(count)]
    return docs, _sources(tmp_path, {f"{n}.xml": to_xml([d]) for n, d in enumerate(docs)})


def _store_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("store")]


def _wrap_store(archive: Archive, monkeypatch: pytest.MonkeyPatch, before: Any) -> None:
    """``before(doc)`` runs on the store thread before each snapshot is stored."""
    real = archive.store

    def store(doc: Document, *args: Any, **kwargs: Any) -> StoreResult:
        before(doc)
        return real(doc, *args, **kwargs)

    monkeypatch.setattr(archive, "store", store)


def _watch_reading(archive: Archive, monkeypatch: pytest.MonkeyPatch, on_read: Any) -> None:
    """``on_read(doc)`` runs on the parser's thread as each snapshot has been read."""
    real = archive.documents

    def documents(*args: Any, **kwargs: Any) -> Iterator[tuple[str, Document]]:
        for where, doc in real(*args, **kwargs):
            on_read(doc)
            yield where, doc

    monkeypatch.setattr(archive, "documents", documents)


def test_the_next_snapshot_is_read_while_one_is_stored(
    archive: Archive, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs, sources = _one_a_file(tmp_path, 3)
    second_read = threading.Event()

    def on_read(doc: Document) -> None:
        if _uid(doc) == _uid(docs[1]):
            second_read.set()

    seen: list[bool] = []

    def before(doc: Document) -> None:
        if _uid(doc) == _uid(docs[0]):  # stored only once the next one has been read
            seen.append(second_read.wait(WAIT_S))

    _watch_reading(archive, monkeypatch, on_read)
    _wrap_store(archive, monkeypatch, before)
    summary = import_sources(archive, sources)
    assert seen == [True]
    assert (summary.new, summary.failed) == (3, 0)
    assert all(archive.exists(_uid(doc)) for doc in docs)
    assert not _store_threads()


def test_outcomes_come_in_input_order_with_the_failures_among_them(
    archive: Archive, tmp_path: Path
) -> None:
    pdf = random.Random(7).randbytes(300_000)
    first = make_snapshot(0, files={"a.pdf": pdf})
    too_old = make_snapshot(1, modified=dt.datetime(1990, 1, 1, tzinfo=dt.UTC))
    too_old["$uniqueid"] = "11111111-2222-4333-8444-555555555555-631152000000"  # 1990
    after_it = make_snapshot(2, files={"a.pdf": pdf, "b.pdf": pdf[:1000]})
    in_json = make_snapshot(3, files={"c.pdf": pdf[::-1]})
    sources = _sources(
        tmp_path,
        {
            "1.xml": to_xml([first]),
            "2.xml": b"<document><item name='x'>",  # cut off
            "3.xml": to_xml([too_old, after_it], collection=True),
            "4.json": to_json(in_json),
        },
    )
    summary = import_sources(archive, sources)
    assert (summary.new, summary.failed) == (3, 2)
    folder = tmp_path / "in"
    assert summary.failures[0].startswith(f"{folder / '2.xml'}: malformed XML")
    assert summary.failures[1].startswith(f"{folder / '3.xml'} (document 1, {_uid(too_old)}): ")
    for doc, name in ((first, "a.pdf"), (after_it, "b.pdf"), (in_json, "c.pdf")):
        stored = archive.load(_uid(doc))
        assert content_of(stored, name) == content_of(doc, name)
    assert not archive.exists(_uid(too_old))


def test_a_failing_store_ends_the_import_at_its_snapshot(
    archive: Archive, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs, sources = _one_a_file(tmp_path, 4)

    def before(doc: Document) -> None:
        if _uid(doc) == _uid(docs[1]):
            raise StoreUnavailableError("the store is unavailable (test)")

    _wrap_store(archive, monkeypatch, before)
    with pytest.raises(StoreUnavailableError):
        import_sources(archive, sources)
    assert [archive.exists(_uid(doc)) for doc in docs] == [True, False, False, False]
    assert not _store_threads()


def test_ctrl_c_lets_the_snapshot_being_stored_finish_and_stores_nothing_after(
    archive: Archive, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs, sources = _one_a_file(tmp_path, 4)
    storing = threading.Event()
    interrupted = threading.Event()
    waited: list[bool] = []

    def before(doc: Document) -> None:
        if _uid(doc) == _uid(docs[1]):  # still being stored when Ctrl-C comes
            storing.set()
            waited.append(interrupted.wait(WAIT_S))

    def on_read(doc: Document) -> None:
        if _uid(doc) == _uid(docs[2]):  # read while docs[1] is stored
            # (the parser may read it before the store thread took docs[1] up: a loaded
            # machine; the Ctrl-C is meant for while docs[1] is being stored)
            assert storing.wait(WAIT_S)
            interrupted.set()
            raise KeyboardInterrupt

    _watch_reading(archive, monkeypatch, on_read)
    _wrap_store(archive, monkeypatch, before)
    with pytest.raises(KeyboardInterrupt):
        import_sources(archive, sources)
    assert waited == [True]
    # The one being stored finished; nothing was stored after.
    assert [archive.exists(_uid(doc)) for doc in docs] == [True, True, False, False]
    assert not _store_threads()
    monkeypatch.undo()
    assert import_sources(archive, sources).new == 2  # the next run completes it
    assert all(archive.exists(_uid(doc)) for doc in docs)

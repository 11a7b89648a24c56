"""One new attachment stored by both services at once (issue 31, item 1).

The Java service checks ``documents`` for the file's MD5, finds nothing, and writes its
rows: 1 MiB pieces under random ids, ``sort_id`` 0..n-1, one row at a time. This archive may
do the same for the same file at the same moment (the sync takes no event lock, and the
workflow's lock is not exclusive). In Java's cuts (``ARCHIVE_FILE_CUTS=java``, the default
on Cassandra) every ``sort_id`` of either side lists the same bytes, so each mix of the two
sides' rows is the file, for the Java service's reader and for this archive's; in
content-defined cuts the same mix is another file (the case the audit replayed: 5,479,215
bytes served for a 3,000,000-byte file).
"""

from __future__ import annotations

import hashlib
import itertools
import random
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import load_settings
from imixs_archive.errors import ConfigError, IntegrityError
from imixs_archive.filestore.chunking import JAVA_BLOCK, FixedChunker, chunk_bytes
from imixs_archive.filestore.content import cut_digest
from imixs_archive.filestore.reading import pieces_digest
from imixs_archive.ledger.sequencer import Sequencer
from imixs_archive.ledger.verify import verify_ledger
from imixs_archive.storage.base import Backend
from imixs_archive.storage.model import (
    ARCHIVE_FILE_CUTS,
    ARCHIVE_FILES,
    DOCUMENTS,
    DOCUMENTS_DATA,
)
from support.java_rows import java_load_file
from support.snapshots import make_snapshot

SIZE = 3_000_000  # the audit's file: three of Java's pieces


def _content(seed: int, size: int = SIZE) -> bytes:
    return random.Random(seed).randbytes(size)


def _md5(content: bytes) -> str:
    return hashlib.md5(content).hexdigest().upper()


@pytest.fixture
def java_cut(backend: Backend) -> Iterator[Archive]:
    with Archive(backend, file_cuts="java") as opened:
        yield opened


def _store(archive: Archive, content: bytes, step: int = 0) -> str:
    snapshot = make_snapshot(step, files={"scan.pdf": content})
    return archive.store(snapshot).snapshot_id


def _sid(step: int) -> str:
    return str(make_snapshot(step).get_first("$uniqueid"))


def _ids(backend: Backend, key: str) -> list[str]:
    return [r["data_id"] for r in backend.scan(DOCUMENTS, {"md5": key}, columns=["data_id"])]


class JavaWrite:
    """The Java service storing one file, statement by statement (``DataService``): its
    pieces first, then its ``documents`` rows one at a time."""

    def __init__(self, backend: Backend, content: bytes) -> None:
        self.backend = backend
        self.md5 = _md5(content)
        self.pieces = [
            (str(uuid.uuid4()), content[at : at + JAVA_BLOCK])
            for at in range(0, len(content), JAVA_BLOCK)
        ]

    def write_pieces(self) -> None:
        for data_id, data in self.pieces:
            self.backend.put(DOCUMENTS_DATA, [{"data_id": data_id, "data": data}])

    def write_row(self, sort_id: int) -> None:
        row = {"md5": self.md5, "sort_id": sort_id, "data_id": self.pieces[sort_id][0]}
        self.backend.put(DOCUMENTS, [row])


def test_fixed_cuts_are_the_java_services() -> None:
    data = _content(1, 2 * JAVA_BLOCK + 5)
    chunker = FixedChunker()
    cut = [
        c
        for part in (data[:100], data[100 : JAVA_BLOCK + 7], data[JAVA_BLOCK + 7 :])
        for c in chunker.feed(part)
    ] + chunker.finish()
    assert [len(c) for c in cut] == [JAVA_BLOCK, JAVA_BLOCK, 5]
    assert b"".join(cut) == data
    assert FixedChunker().finish() == []


def test_a_file_is_stored_in_javas_cuts_and_logged_by_its_content_defined_digest(
    java_cut: Archive, backend: Backend
) -> None:
    content = _content(2)
    key = _md5(content)
    sid = _store(java_cut, content)
    ids = _ids(backend, key)
    assert len(ids) == 3
    sizes = [len(backend.get(DOCUMENTS_DATA, {"data_id": i})["data"]) for i in ids]  # type: ignore[index]
    assert sizes == [JAVA_BLOCK, JAVA_BLOCK, SIZE - 2 * JAVA_BLOCK]
    assert ids == [
        hashlib.sha256(content[a : a + JAVA_BLOCK]).hexdigest()
        for a in (0, JAVA_BLOCK, 2 * JAVA_BLOCK)
    ]
    # The file's record: the digest over the pieces it is stored in; the ledger's digest
    # (over the content-defined cuts, as in an archive cut by content) apart.
    info = backend.get(ARCHIVE_FILES, {"md5": key})
    assert info is not None and info["digest"] == pieces_digest(ids) and info["pieces"] == 3
    ledger = pieces_digest(hashlib.sha256(c).hexdigest() for c in chunk_bytes(content))
    assert ledger != info["digest"]
    assert backend.get(ARCHIVE_FILE_CUTS, {"md5": key}) == {
        "md5": key,
        "digest": info["digest"],
        "ledger_digest": ledger,
    }
    assert java_cut.files.ledger_digest(key) == ledger
    assert java_cut.files.ledger_digest(key, read_all=True) == ledger
    assert cut_digest([content]) == ledger
    # Read back by this archive and by the Java service's steps; verify finds nothing.
    _entry, stored = java_cut.file_of_snapshot(sid, "scan.pdf")
    assert b"".join(stored.iter_bytes()) == content
    assert java_load_file(backend, key) == content
    assert java_cut.verify().ok


def test_the_same_file_in_either_cut_is_one_file(backend: Backend, tmp_path: Path) -> None:
    """An archive that changes its cuts keeps one file per content: the file arriving
    again in the other cut is found by its bytes, and its ledger digest is the same."""
    content = _content(3)
    key = _md5(content)
    with Archive(backend, file_cuts="content") as by_content:
        first = _store(by_content, content, 0)
        ledger = by_content.files.ledger_digest(key)
        content_ids = _ids(backend, key)
    with Archive(backend, file_cuts="java") as java:
        second = _store(java, content, 1)
        assert _ids(backend, key) == content_ids  # kept as stored
        assert java.files.ledger_digest(key) == ledger
        for sid in (first, second):
            _entry, stored = java.file_of_snapshot(sid, "scan.pdf")
            assert b"".join(stored.iter_bytes()) == content


def _java_mix_reads(
    backend: Backend, archive: Archive, content: bytes, order: tuple[str, ...], step: int = 0
) -> bytes:
    """Both services store ``content`` with their writes in ``order`` ('ours' is this
    archive's whole store; 'j<n>' the Java service's row n, after its pieces); what the
    Java service then reads."""
    java = JavaWrite(backend, content)
    java.write_pieces()
    for write in order:
        if write == "ours":
            _store(archive, content, step)
        else:
            java.write_row(int(write[1:]))
    return java_load_file(backend, java.md5)


JAVA_ROWS = ("j0", "j1", "j2")
ORDERS = sorted({(*JAVA_ROWS[:at], "ours", *JAVA_ROWS[at:]) for at in range(4)})


@pytest.mark.parametrize("order", ORDERS, ids=["-".join(o) for o in ORDERS])
def test_every_interleaving_of_both_services_reads_right(
    backend: Backend, order: tuple[str, ...]
) -> None:
    """This archive's rows go as one mutation (a reader sees all or none of them); the
    Java service's one by one: each place of ours among Java's rows."""
    content = _content(10 + ORDERS.index(order))
    with Archive(backend, file_cuts="java") as archive:
        assert _java_mix_reads(backend, archive, content, order) == content
        # This archive reads the mix too (the Java pieces checked by the file's MD5), and
        # verify finds it whole.
        sid = _store(archive, content, 1)
        _entry, stored = archive.file_of_snapshot(sid, "scan.pdf")
        assert b"".join(stored.iter_bytes()) == content
        # One file, under its MD5: rows being written beside ours are not a collision.
        keys = {archive.file_digests(s)["scan.pdf"][0] for s in (sid, _sid(0))}
        assert keys == {_md5(content)}
        report = archive.verify()
        assert report.ok, report.problems


def test_any_mix_of_rows_per_sort_id_is_the_file(backend: Backend) -> None:
    """Whatever row lands last for each sort_id (replicas that saw the writes in other
    orders, repaired): every one of the 2^3 mixes is the file."""
    content = _content(20)
    key = _md5(content)
    with Archive(backend, file_cuts="java") as archive:
        _store(archive, content)
    ours = _ids(backend, key)
    java = JavaWrite(backend, content)
    java.write_pieces()
    for mix in itertools.product((0, 1), repeat=3):
        rows = [
            {"md5": key, "sort_id": n, "data_id": java.pieces[n][0] if side else ours[n]}
            for n, side in enumerate(mix)
        ]
        backend.put(DOCUMENTS, rows)
        assert java_load_file(backend, key) == content, mix


def test_in_content_defined_cuts_the_same_interleaving_is_another_file(
    backend: Backend,
) -> None:
    """The audit's replay, which the Java cuts exist for: Java checks (nothing), this
    archive writes its pieces, Java writes its three rows over the first three of ours."""
    content = _content(30)
    with Archive(backend, file_cuts="content") as archive:
        read = _java_mix_reads(backend, archive, content, ("ours", *JAVA_ROWS))
    assert len(_ids(backend, _md5(content))) > 3
    assert read != content and len(read) > len(content)


def test_a_wrong_java_piece_in_a_mix_is_refused(backend: Backend) -> None:
    """A mix whose first piece is this archive's (checked by its SHA-256) and whose last is
    a Java piece with other bytes: the file's MD5 catches it before the last bytes go out."""
    content = _content(40)
    key = _md5(content)
    with Archive(backend, file_cuts="java") as archive:
        sid = _store(archive, content)
        bad = str(uuid.uuid4())
        last = bytearray(content[2 * JAVA_BLOCK :])
        last[7] ^= 0xFF
        backend.put(DOCUMENTS_DATA, [{"data_id": bad, "data": bytes(last)}])
        backend.put(DOCUMENTS, [{"md5": key, "sort_id": 2, "data_id": bad}])
        _entry, stored = archive.file_of_snapshot(sid, "scan.pdf")
        with pytest.raises(IntegrityError, match="does not match its MD5"):
            b"".join(stored.iter_bytes())


def test_the_ledger_holds_for_files_in_javas_cuts(
    java_cut: Archive, backend: Backend, tmp_path: Path
) -> None:
    settings = load_settings(
        {
            "ARCHIVE_DATA_DIR": str(tmp_path / "keys"),
            "ARCHIVE_LEDGER_CHECKPOINT_DIR": str(tmp_path / "witness"),
        }
    )
    contents = [_content(50 + n, size) for n, size in enumerate((5_000, 1_500_000, 4_200_000))]
    for step, content in enumerate(contents):
        _store(java_cut, content, step)
    # And one that both services stored, mixed.
    mixed = _content(60)
    _java_mix_reads(backend, java_cut, mixed, ("ours", "j0", "j2"), step=3)
    with Sequencer(java_cut, settings) as sequencer:
        sequencer.drain(checkpoint=True)
    report = verify_ledger(java_cut, settings, read_all=True)
    assert report.ok, report.problems
    assert report.snapshots == 4


def test_setting_and_default_by_store(backend: Backend) -> None:
    with Archive(backend) as archive:
        assert archive.file_cuts == ("java" if backend.name == "cassandra" else "content")
    assert load_settings({"ARCHIVE_FILE_CUTS": "Java"}).file_cuts == "java"
    with pytest.raises(ConfigError, match="ARCHIVE_FILE_CUTS: expected one of auto, java, content"):
        load_settings({"ARCHIVE_FILE_CUTS": "1MiB"})


def test_a_long_piece_list_is_written_in_mutations_the_node_takes(backend: Backend) -> None:
    """A 12 GB file in Java's cuts: ``Backend.partition_rows`` rows per mutation (the
    node takes a batch into one partition whatever its row count, up to its mutation
    size), every row there, in order."""
    key = "F" * 32
    count = 12_000
    rows = [
        {"md5": key, "sort_id": n, "data_id": hashlib.sha256(str(n).encode()).hexdigest()}
        for n in range(count)
    ]
    assert 1_000 <= backend.partition_rows < count
    assert backend.put_partition(DOCUMENTS, rows) == count
    assert list(backend.scan(DOCUMENTS, {"md5": key})) == rows

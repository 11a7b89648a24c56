"""What only the SQLite backend does: its SQL, WAL readers, writers in threads and in two
processes, and its errors. The behaviour every backend shares is in ``test_contract.py``."""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
import textwrap
import threading
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

from imixs_archive.config import Settings, load_settings
from imixs_archive.errors import (
    ConfigError,
    DamagedRowError,
    IntegrityError,
    StoreError,
    StoreUnavailableError,
)
from imixs_archive.storage.base import Row, key_of
from imixs_archive.storage.factory import open_backend
from imixs_archive.storage.model import (
    ARCHIVE_FILES,
    ARCHIVE_LEDGER_QUEUE,
    ARCHIVE_VERSIONS,
    DOCUMENTS,
    DOCUMENTS_DATA,
    SNAPSHOTS,
    SNAPSHOTS_BY_MODIFIED,
    SNAPSHOTS_BY_UNIQUEID,
    ColumnType,
    Table,
    _cols,
)
from imixs_archive.storage.sqlite import engine
from imixs_archive.storage.sqlite import statements as sql
from imixs_archive.storage.sqlite.backend import SQLiteBackend, Tuning
from support import raw_sqlite, sync_recorder

# --- SQL derived from the model ---------------------------------------------------------


def test_ddl_is_derived_from_the_declarations() -> None:
    assert sql.create_table(DOCUMENTS) == (
        'CREATE TABLE IF NOT EXISTS "documents" ("md5" TEXT NOT NULL,'
        ' "sort_id" INTEGER NOT NULL, "data_id" TEXT, PRIMARY KEY ("md5", "sort_id"))'
        " WITHOUT ROWID"
    )
    assert sql.create_table(DOCUMENTS_DATA) == (
        'CREATE TABLE IF NOT EXISTS "documents_data" ("data_id" TEXT NOT NULL,'
        ' "data" BLOB, "raw_size" INTEGER, PRIMARY KEY ("data_id"))'
    )
    assert sql.create_table(ARCHIVE_FILES) == (
        'CREATE TABLE IF NOT EXISTS "archive_files" ("md5" TEXT NOT NULL, "digest" TEXT,'
        ' "size" INTEGER, "pieces" INTEGER, PRIMARY KEY ("md5")) WITHOUT ROWID'
    )


def test_statements_are_derived_from_the_declarations() -> None:
    assert sql.upsert(DOCUMENTS) == (
        'INSERT OR REPLACE INTO "documents" ("md5", "sort_id", "data_id") VALUES (?, ?, ?)'
    )
    assert sql.delete(DOCUMENTS, ("md5",)) == 'DELETE FROM "documents" WHERE "md5" = ?'
    assert sql.select(DOCUMENTS, ("data_id",), ("md5", "sort_id")) == (
        'SELECT "data_id" FROM "documents" WHERE "md5" = ? AND "sort_id" = ?'
    )
    assert sql.select_page(
        DOCUMENTS, ("sort_id", "data_id"), ("md5",), ("sort_id",), after=True, descending=True
    ) == (
        'SELECT "sort_id", "data_id" FROM "documents" WHERE "md5" = ? AND "sort_id" < ?'
        ' ORDER BY "sort_id" DESC LIMIT ?'
    )
    assert sql.select_page(DOCUMENTS, ("md5", "sort_id"), (), ("md5", "sort_id"), after=True) == (
        'SELECT "md5", "sort_id" FROM "documents" WHERE ("md5", "sort_id") > (?, ?)'
        ' ORDER BY "md5" ASC, "sort_id" ASC LIMIT ?'
    )
    assert sql.select_page(DOCUMENTS_DATA, ("data_id",), (), ("data_id",), after=False) == (
        'SELECT "data_id" FROM "documents_data" ORDER BY "data_id" ASC LIMIT ?'
    )


# --- packed pieces ----------------------------------------------------------------------

TEXT = b"".join(b"%06d the quick brown fox jumps over the lazy dog\n" % n for n in range(20_000))


def _cells(path: Path) -> dict[str, tuple[bytes, int | None]]:
    """What the file holds for each piece: (cell, marker), read past the backend."""
    connection = raw_sqlite.connect(path / "archive.db")
    try:
        found = connection.execute('SELECT data_id, data, raw_size FROM "documents_data"')
        return {data_id: (data, marker) for data_id, data, marker in found}
    finally:
        connection.close()


def test_compressible_pieces_are_kept_compressed_and_the_choice_recorded(tmp_path: Path) -> None:
    noise = os.urandom(512 * 1024)
    with SQLiteBackend(tmp_path) as store:
        store.put(DOCUMENTS_DATA, [{"data_id": "t", "data": TEXT}, {"data_id": "n", "data": noise}])
    cells = _cells(tmp_path)
    text_cell, text_marker = cells["t"]
    assert text_marker == len(TEXT)
    assert len(text_cell) < len(TEXT) / 5
    assert text_cell[:4] == b"\x28\xb5\x2f\xfd"  # a zstd frame
    assert cells["n"] == (noise, None)  # does not compress: stored as given


def test_packing_can_be_turned_off_and_reads_either_kind(tmp_path: Path) -> None:
    with SQLiteBackend(tmp_path, Tuning(pack_level=None)) as store:
        store.put(DOCUMENTS_DATA, [{"data_id": "raw", "data": TEXT}])
    assert _cells(tmp_path)["raw"] == (TEXT, None)
    with SQLiteBackend(tmp_path, Tuning(pack_level=1)) as store:
        store.put(DOCUMENTS_DATA, [{"data_id": "packed", "data": TEXT}])
        assert [row["data"] for row in store.scan(DOCUMENTS_DATA)] == [TEXT, TEXT]
    assert _cells(tmp_path)["packed"][1] == len(TEXT)
    with pytest.raises(ValueError, match="pack_level"):
        Tuning(pack_level=0)


def test_a_store_written_before_packing_reads_and_is_upgraded(tmp_path: Path) -> None:
    """Schema 1 (no marker column) as the previous version wrote it: its raw pieces,
    even one starting like a zstd frame, read as they are; new pieces are packed."""
    connection = raw_sqlite.connect(tmp_path / "archive.db")
    old_ddl = (
        'CREATE TABLE "documents_data" ("data_id" TEXT NOT NULL, "data" BLOB,'
        ' PRIMARY KEY ("data_id"))'
    )
    connection.execute(old_ddl)
    looks_packed = b"\x28\xb5\x2f\xfd" + TEXT[:5000]
    connection.executemany(
        'INSERT INTO "documents_data" VALUES (?, ?)', [("old", TEXT), ("magic", looks_packed)]
    )
    connection.execute("PRAGMA user_version = 1")
    connection.close()
    with SQLiteBackend(tmp_path) as store:
        assert store.get(DOCUMENTS_DATA, {"data_id": "old"}) == {"data_id": "old", "data": TEXT}
        assert store.get(DOCUMENTS_DATA, {"data_id": "magic"}, ["data"]) == {"data": looks_packed}
        store.put(DOCUMENTS_DATA, [{"data_id": "new", "data": TEXT}])
        assert [row["data"] for row in store.scan(DOCUMENTS_DATA)] == [
            looks_packed,
            TEXT,
            TEXT,
        ]  # by id
    cells = _cells(tmp_path)
    assert cells["old"] == (TEXT, None)
    assert cells["new"][1] == len(TEXT)
    connection = raw_sqlite.connect(tmp_path / "archive.db")
    assert connection.execute("PRAGMA user_version").fetchone()[0] == 2
    connection.close()


@pytest.mark.parametrize(
    "damage",
    [
        'UPDATE "documents_data" SET data = substr(data, 1, length(data) - 9)',
        'UPDATE "documents_data" SET raw_size = raw_size + 1',
        'UPDATE "documents_data" SET raw_size = raw_size - 1',
        "UPDATE \"documents_data\" SET data = x'00112233445566778899'",
    ],
    ids=["truncated", "size-too-big", "size-too-small", "not-zstd"],
)
def test_a_damaged_packed_piece_is_an_integrity_error(tmp_path: Path, damage: str) -> None:
    with SQLiteBackend(tmp_path) as store:
        store.put(DOCUMENTS_DATA, [{"data_id": "t", "data": TEXT}])
    connection = raw_sqlite.connect(tmp_path / "archive.db")
    connection.execute(damage)
    connection.close()
    with SQLiteBackend(tmp_path) as store:
        with pytest.raises(IntegrityError, match=r"documents_data \(data_id t\)"):
            store.get(DOCUMENTS_DATA, {"data_id": "t"})
        with pytest.raises(IntegrityError, match=r"documents_data \(data_id t\)"):
            list(store.scan(DOCUMENTS_DATA))
        assert store.get(DOCUMENTS_DATA, {"data_id": "t"}, ["data_id"]) == {"data_id": "t"}


def test_identifiers_must_be_plain_names() -> None:
    with pytest.raises(ValueError, match="identifier"):
        sql.quote('x" OR 1=1 --')


def test_scans_use_the_primary_key(tmp_path: Path) -> None:
    with SQLiteBackend(tmp_path) as store:
        connection = raw_sqlite.connect(store.path)
        for statement, params in (
            (
                sql.select_page(DOCUMENTS, ("md5", "sort_id"), (), ("md5", "sort_id"), after=True),
                ("A", 1, 10),
            ),
            (
                sql.select_page(DOCUMENTS, ("sort_id",), ("md5",), ("sort_id",), after=True),
                ("A", 1, 10),
            ),
        ):
            plan = connection.execute(f"EXPLAIN QUERY PLAN {statement}", params).fetchall()
            assert "USING PRIMARY KEY" in plan[0][-1], plan
        connection.close()


# --- a table with composite keys (none in the model yet) --------------------------------

EVENTS = Table(
    "events",
    _cols(
        ("stream", ColumnType.TEXT),
        ("shard", ColumnType.INT),
        ("day", ColumnType.DATE),
        ("seq", ColumnType.BIGINT),
        ("body", ColumnType.BLOB),
    ),
    partition_key=("stream", "shard"),
    clustering_key=("day", "seq"),
)
DAY = datetime.date(2024, 5, 1)


def _event(stream: str, shard: int, day: int, seq: int) -> Row:
    return {
        "stream": stream,
        "shard": shard,
        "day": DAY + datetime.timedelta(days=day),
        "seq": 2**40 + seq,
        "body": f"{stream}/{shard}/{day}/{seq}".encode(),
    }


def test_multi_column_keys_compare_as_tuples(tmp_path: Path) -> None:
    tuning = Tuning(page_rows=7, blob_page_rows=3)
    with SQLiteBackend(tmp_path, tuning, tables=(EVENTS,)) as store:
        ours = [_event("s", 1, day, seq) for day in range(3) for seq in range(5)]
        others = [_event("s", 2, 0, seq) for seq in range(4)] + [_event("t", 1, 0, 0)]
        store.put(EVENTS, reversed(ours + others))
        partition = {"stream": "s", "shard": 1}
        assert list(store.scan(EVENTS, partition)) == ours
        after = {"day": DAY + datetime.timedelta(days=1), "seq": 2**40 + 2}
        assert list(store.scan(EVENTS, partition, start_after=after)) == ours[8:]
        assert (
            list(store.scan(EVENTS, partition, start_after=after, descending=True))
            == (ours[:7][::-1])
        )
        found = list(store.scan(EVENTS, columns=["seq"]))
        assert len(found) == len(ours) + len(others)
        assert sorted(
            store.scan(EVENTS), key=lambda r: (r["stream"], r["shard"], r["day"], r["seq"])
        ) == sorted(ours + others, key=lambda r: (r["stream"], r["shard"], r["day"], r["seq"]))
        store.delete(EVENTS, partition)
        assert list(store.scan(EVENTS)) == others


def test_a_table_added_to_the_model_is_created_on_open(tmp_path: Path) -> None:
    with SQLiteBackend(tmp_path, tables=(DOCUMENTS,)) as store:
        store.put(DOCUMENTS, [{"md5": "A", "sort_id": 0, "data_id": "a"}])
    with SQLiteBackend(tmp_path, tables=(DOCUMENTS, EVENTS)) as store:
        store.put(EVENTS, [_event("s", 1, 0, 0)])
        assert list(store.scan(EVENTS)) == [_event("s", 1, 0, 0)]
        assert store.get(DOCUMENTS, {"md5": "A", "sort_id": 0}) is not None


# --- concurrency ------------------------------------------------------------------------


def test_wal_reader_sees_committed_data_while_a_writer_holds_a_transaction(
    tmp_path: Path,
) -> None:
    with SQLiteBackend(tmp_path) as store:
        store.put(SNAPSHOTS, [{"snapshot": "old", "data": b"1"}])
        writer = raw_sqlite.connect(store.path)
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("INSERT INTO snapshots (snapshot, data) VALUES ('new', x'02')")
        try:
            # A reader that waited for the lock would wait out its busy_timeout and fail:
            # 1 s, which opening and three reads take on a busy machine too (0.3 s did not)
            started = time.monotonic()
            with SQLiteBackend(tmp_path, Tuning(busy_timeout=1.0)) as reader:
                assert reader.get(SNAPSHOTS, {"snapshot": "old"}) == {
                    "snapshot": "old",
                    "data": b"1",
                }
                assert reader.get(SNAPSHOTS, {"snapshot": "new"}) is None
                assert [row["snapshot"] for row in reader.scan(SNAPSHOTS)] == ["old"]
                assert time.monotonic() - started < 1.0  # the reader did not wait
                with pytest.raises(StoreUnavailableError, match="locked by another writer"):
                    reader.put(SNAPSHOTS, [{"snapshot": "third", "data": b"3"}])
                assert time.monotonic() - started >= 1.0  # ... the writer did
            writer.execute("COMMIT")
            assert store.get(SNAPSHOTS, {"snapshot": "new"}) == {"snapshot": "new", "data": b"\2"}
        finally:
            writer.close()


def test_a_writer_waits_for_another_process_lock_and_then_writes(tmp_path: Path) -> None:
    with SQLiteBackend(tmp_path, Tuning(busy_timeout=5)) as store:
        other = raw_sqlite.connect(store.path)
        other.execute("BEGIN IMMEDIATE")
        other.execute("INSERT INTO snapshots (snapshot, data) VALUES ('first', x'01')")
        threading.Timer(0.2, lambda: other.execute("COMMIT")).start()
        try:
            store.put(SNAPSHOTS, [{"snapshot": "second", "data": b"2"}])
        finally:
            other.close()
        assert [row["snapshot"] for row in store.scan(SNAPSHOTS)] == ["first", "second"]
        with store.grouped():  # the connection's busy timeout is back after the polling
            store.put(SNAPSHOTS, [{"snapshot": "third", "data": b"3"}])
        timeout = store._connection().execute("PRAGMA busy_timeout").fetchone()[0]
        assert timeout == 5000


def test_threads_share_one_backend(tmp_path: Path) -> None:
    errors: list[BaseException] = []
    with SQLiteBackend(tmp_path, Tuning(commit_rows=25)) as store:

        def work(who: int) -> None:
            try:
                md5 = f"T{who}"
                for start in range(0, 400, 100):
                    rows = (
                        {"md5": md5, "sort_id": n, "data_id": f"{who}-{n}"}
                        for n in range(start, start + 100)
                    )
                    store.put(DOCUMENTS, rows)
                    assert len(list(store.scan(DOCUMENTS, {"md5": md5}))) == start + 100
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(who,)) for who in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert len(list(store.scan(DOCUMENTS))) == 8 * 400


_WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from imixs_archive.storage.model import DOCUMENTS, DOCUMENTS_DATA
    from imixs_archive.storage.sqlite.backend import SQLiteBackend, Tuning

    store, who = Path(sys.argv[1]), sys.argv[2]
    with SQLiteBackend(store, Tuning(commit_rows=40, busy_timeout=60)) as backend:
        for turn in range(20):
            rows = (
                {"md5": who, "sort_id": turn * 100 + n, "data_id": f"{who}-{n}"}
                for n in range(100)
            )
            backend.put(DOCUMENTS, rows)
            backend.put(DOCUMENTS, [{"md5": "shared", "sort_id": turn, "data_id": who}])
            piece = {"data_id": f"{who}-{turn}", "data": bytes([turn]) * 262144}
            backend.put(DOCUMENTS_DATA, [piece])
    """
)


def test_two_processes_write_one_store(tmp_path: Path) -> None:
    store = tmp_path / "store"  # not there yet: both processes race to create it
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(store), who],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for who in ("P1", "P2")
    ]
    for writer in writers:
        _out, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err
        assert err == ""
    with SQLiteBackend(store) as backend:
        for who in ("P1", "P2"):
            found = [row["sort_id"] for row in backend.scan(DOCUMENTS, {"md5": who})]
            assert found == list(range(2000))
        shared = list(backend.scan(DOCUMENTS, {"md5": "shared"}))
        assert [row["sort_id"] for row in shared] == list(range(20))
        assert {row["data_id"] for row in shared} <= {"P1", "P2"}
        pieces = list(backend.scan(DOCUMENTS_DATA, columns=["data_id"]))
        assert len(pieces) == 40


def test_processes_opening_a_new_store_at_once_all_open(tmp_path: Path) -> None:
    # Seen in CI: two processes creating one store, one failed at once with "locked by
    # another writer (waited 60 s)": switching a new file to WAL answers busy without
    # SQLite's busy handler. Threads with a connection each race the same way (and raced
    # on one shared name of the directory's write probe).
    def open_store(store: Path, start: threading.Barrier, errors: list[BaseException]) -> None:
        start.wait()
        try:
            with SQLiteBackend(store, Tuning(busy_timeout=30)):
                pass
        except BaseException as exc:
            errors.append(exc)

    for round_ in range(40):
        store = tmp_path / f"store-{round_}"
        start = threading.Barrier(6)
        errors: list[BaseException] = []
        openers = [
            threading.Thread(target=open_store, args=(store, start, errors)) for _ in range(6)
        ]
        for opener in openers:
            opener.start()
        for opener in openers:
            opener.join()
        assert errors == [], f"round {round_}: {errors[0]}"
        with SQLiteBackend(store) as backend:
            assert backend.put(DOCUMENTS, [{"md5": "m", "sort_id": 0, "data_id": "d"}]) == 1


# --- large puts -------------------------------------------------------------------------


def test_a_failing_row_iterator_keeps_committed_batches(tmp_path: Path) -> None:
    def rows() -> Iterator[Row]:
        for n in range(25):
            yield {"md5": "X", "sort_id": n, "data_id": str(n)}
        raise RuntimeError("source broke")

    with SQLiteBackend(tmp_path, Tuning(commit_rows=10)) as store:
        with pytest.raises(RuntimeError, match="source broke"):
            store.put(DOCUMENTS, rows())
        found = [row["sort_id"] for row in store.scan(DOCUMENTS, {"md5": "X"})]
        assert found == list(range(20))
        assert store.put(DOCUMENTS, [{"md5": "X", "sort_id": 99, "data_id": "y"}]) == 1


def test_put_commits_in_byte_bounded_transactions(tmp_path: Path) -> None:
    commits: list[int] = []
    with SQLiteBackend(tmp_path, Tuning(commit_bytes=1000, commit_rows=10_000)) as store:
        original = store._write_batch

        def spy(table: Table, statement: str, batch: list[tuple[Any, ...]]) -> int:
            commits.append(len(batch))
            return original(table, statement, batch)

        store._write_batch = spy  # type: ignore[method-assign]
        rows = ({"data_id": str(n), "data": os.urandom(300)} for n in range(10))
        assert store.put(DOCUMENTS_DATA, rows) == 10
        packed = ({"data_id": str(n), "data": b"x" * 3000} for n in range(10))
        assert store.put(DOCUMENTS_DATA, packed) == 10
    # A row counts its stored bytes + its id + 16 of overhead: 300 random bytes (kept as
    # given) 317, so a batch is committed with the row that reaches 1000 bytes, the 4th;
    # 3000 repeated bytes are packed to a few dozen, so the ten fit in one batch.
    assert commits == [4, 4, 2, 10]


# --- errors -----------------------------------------------------------------------------


def test_data_directory_that_cannot_be_created(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(ConfigError, match="cannot create the data directory"):
        SQLiteBackend(blocker / "store")
    with pytest.raises(ConfigError, match="cannot create the data directory"):
        SQLiteBackend(blocker)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only directories")
def test_data_directory_that_is_not_writable(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    store.chmod(0o500)
    try:
        with pytest.raises(ConfigError, match="is not writable"):
            SQLiteBackend(store)
    finally:
        store.chmod(0o700)


def test_a_packed_piece_whose_frame_claims_gigabytes_is_refused_before_unpacking(
    tmp_path: Path,
) -> None:
    """A flipped bit in the frame header's content size asked the decompressor for
    gigabytes at once (a MemoryError reached the user): the claim is compared first."""
    with SQLiteBackend(tmp_path) as store:
        store.put(DOCUMENTS_DATA, [{"data_id": "t", "data": TEXT}])
    connection = raw_sqlite.connect(tmp_path / "archive.db")
    (frame,) = connection.execute('SELECT data FROM "documents_data"').fetchone()
    assert frame[4] >> 6 == 2 and (frame[4] >> 5) & 1  # a 4-byte content size at 5..8
    claims = frame[:8] + b"\x7f" + frame[9:]  # 2 GB and more
    connection.execute('UPDATE "documents_data" SET data = ?', (claims,))
    connection.close()
    with SQLiteBackend(tmp_path) as store, pytest.raises(IntegrityError, match="says it holds"):
        store.get(DOCUMENTS_DATA, {"data_id": "t"})


def test_file_that_is_not_a_database(tmp_path: Path) -> None:
    (tmp_path / "archive.db").write_bytes(b"this is no database " * 1000)
    with pytest.raises(StoreError, match="not an SQLite database") as caught:
        SQLiteBackend(tmp_path)
    assert str(tmp_path / "archive.db") in str(caught.value)


def test_corrupt_database_file(tmp_path: Path) -> None:
    with SQLiteBackend(tmp_path, Tuning(page_size=4096)) as store:
        store.put(DOCUMENTS, ({"md5": "C", "sort_id": n, "data_id": "x" * 50} for n in range(500)))
    with (tmp_path / "archive.db").open("r+b") as file:
        file.seek(4096)
        file.write(b"\xa5" * 4096 * 8)
    with pytest.raises(StoreError, match="corrupt"), SQLiteBackend(tmp_path) as store:
        list(store.scan(DOCUMENTS))


def test_store_of_a_newer_version_is_refused(tmp_path: Path) -> None:
    SQLiteBackend(tmp_path).close()
    connection = raw_sqlite.connect(tmp_path / "archive.db")
    connection.execute("PRAGMA user_version = 99")
    connection.close()
    with pytest.raises(StoreError, match="newer version"):
        SQLiteBackend(tmp_path)


def test_closed_backend(tmp_path: Path) -> None:
    store = SQLiteBackend(tmp_path)
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.get(SNAPSHOTS, {"snapshot": "a"})


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda s: s.get(DOCUMENTS, {"md5": "a"}), ValueError),
        (lambda s: s.delete(DOCUMENTS, {"sort_id": 1}), ValueError),
        (lambda s: s.scan(DOCUMENTS, start_after={"sort_id": 1}), ValueError),
        (lambda s: s.scan(SNAPSHOTS, {"snapshot": "a"}, start_after={"snapshot": "b"}), ValueError),
        (lambda s: s.scan(DOCUMENTS, {"md5": "a"}, limit=-1), ValueError),
        (lambda s: s.get(DOCUMENTS, {"md5": "a", "sort_id": 1}, ["nope"]), ValueError),
        (lambda s: s.put(DOCUMENTS, [{"md5": "a", "sort_id": 1}]), ValueError),
        (lambda s: s.put(DOCUMENTS, [{"md5": "a", "sort_id": "1", "data_id": ""}]), TypeError),
        (lambda s: s.put(DOCUMENTS, [{"md5": "a", "sort_id": 2**31, "data_id": ""}]), ValueError),
        (lambda s: s.put(DOCUMENTS, [{"md5": None, "sort_id": 1, "data_id": ""}]), ValueError),
        (lambda s: s.put(SNAPSHOTS, [{"snapshot": "a", "data": "text"}]), TypeError),
        (lambda s: s.get(EVENTS, {"stream": "a"}), KeyError),
    ],
)
def test_misuse_is_refused(tmp_path: Path, call: Any, error: type[Exception]) -> None:
    with SQLiteBackend(tmp_path) as store, pytest.raises(error):
        call(store)


def test_value_columns_may_be_null(tmp_path: Path) -> None:
    row = {"md5": "A", "digest": None, "size": None, "pieces": None}
    with SQLiteBackend(tmp_path) as store:
        store.put(ARCHIVE_FILES, [row])
        assert store.get(ARCHIVE_FILES, {"md5": "A"}) == row


def test_describe(tmp_path: Path) -> None:
    with SQLiteBackend(tmp_path) as store:
        store.put(SNAPSHOTS, [{"snapshot": "a", "data": b"x" * 100_000}])
        info = store.describe()
    assert info["kind"] == "sqlite"
    assert info["path"] == str(tmp_path / "archive.db")
    assert info["sqlite_version"] == apsw.sqlite_lib_version()
    assert info["page_size"] == Tuning().page_size
    assert info["journal_mode"] == "wal"
    assert info["synchronous"] == "FULL"
    assert info["size_bytes"] >= 100_000


# --- durable at the end of a bulk load ---------------------------------------------------


def _fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths the backend fsyncs itself (SQLite's own syncs are not seen here)."""
    synced: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return synced


def test_writes_in_a_durable_at_end_block_skip_the_fsync_until_it_ends(tmp_path: Path) -> None:
    """Commits inside run with synchronous=NORMAL, in every thread; the block's end makes
    them durable through SQLite, one synced commit (a block nested in another of its thread
    leaves that to the outer one; a block of another thread syncs at its own end);
    afterwards commits sync again. What SQLite syncs is recorded by a layer to the files of
    the test's own (counted once the store exists and has written once)."""
    seen: dict[str, str] = {}
    with (
        sync_recorder.recording() as recorder,
        SQLiteBackend(tmp_path, Tuning(vfs=recorder.name)) as store,
    ):
        store.put(SNAPSHOTS, [{"snapshot": "first", "data": b"x"}])
        synced = recorder.synced
        synced.clear()

        def write(name: str) -> None:
            store.put(SNAPSHOTS, [{"snapshot": name, "data": b"x" * 1000}])
            seen[name] = store.describe()["synchronous"]

        def write_durably(name: str) -> None:
            with store.durable_at_end():
                write(name)

        with store.durable_at_end():
            with store.durable_at_end():  # nested: the outer end syncs
                write("main")
            assert synced == []
            thread = threading.Thread(target=write, args=("thread",))
            thread.start()
            thread.join()
            assert synced == []
            thread = threading.Thread(target=write_durably, args=("own block",))
            thread.start()
            thread.join()
            assert synced == [str(tmp_path / "archive.db-wal")]
        assert synced == [str(tmp_path / "archive.db-wal")] * 2
        write("after")
        assert seen == {
            "main": "NORMAL",
            "thread": "NORMAL",
            "own block": "NORMAL",
            "after": "FULL",
        }
        assert synced == [str(tmp_path / "archive.db-wal")] * 3
        assert store.get(SNAPSHOTS, {"snapshot": "thread"}) is not None


def test_an_error_in_a_durable_at_end_block_is_not_hidden_by_a_failing_sync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fsync(_fd: int) -> None:
        raise OSError(5, "Input/output error")

    with SQLiteBackend(tmp_path) as store:
        with pytest.raises(RuntimeError, match="the import's own error"), store.durable_at_end():
            store.put(SNAPSHOTS, [{"snapshot": "a", "data": b"x"}])
            monkeypatch.setattr(os, "fsync", fsync)
            raise RuntimeError("the import's own error")
        failing = pytest.raises(StoreError, match="cannot make the writes durable")
        with failing, store.durable_at_end():
            store.put(SNAPSHOTS, [{"snapshot": "b", "data": b"x"}])


def test_a_rollback_journal_keeps_its_fsync_at_every_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without WAL a commit that skips its fsync may corrupt the file on a power loss."""
    SQLiteBackend(tmp_path, Tuning(journal_mode="DELETE")).close()  # made (its folder synced)
    synced = _fsyncs(monkeypatch)
    with SQLiteBackend(tmp_path, Tuning(journal_mode="DELETE")) as store, store.durable_at_end():
        store.put(SNAPSHOTS, [{"snapshot": "a", "data": b"x"}])
        assert store.describe()["synchronous"] == "FULL"
    assert synced == []


def _locks_held(path: Path) -> list[str]:
    """This process's POSIX locks on the file at ``path`` (Linux: /proc/locks)."""
    inode = path.stat().st_ino
    held = []
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        ours = fields[1] == "POSIX" and int(fields[4]) == os.getpid()
        if ours and int(fields[5].rsplit(":", 1)[1]) == inode:
            held.append(" ".join(fields[3:4] + fields[6:]))
    return held


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="reads Linux's /proc/locks")
def test_making_writes_durable_keeps_the_locks_sqlite_holds(tmp_path: Path) -> None:
    """Nothing beside SQLite opens and closes the store's file: closing any descriptor of it
    drops every POSIX lock the process holds there (SQLite's "How To Corrupt", 2.2), and
    the end of a durable block once did so (issue 48)."""
    with SQLiteBackend(tmp_path) as store:
        store.put(SNAPSHOTS, [{"snapshot": "a", "data": b"x"}])
        before = _locks_held(store.path)
        with store.durable_at_end():
            store.put(SNAPSHOTS, [{"snapshot": "b", "data": b"x"}])
        assert before  # a connection in WAL mode holds a shared lock while open
        assert _locks_held(store.path) == before
        store.copy_to(tmp_path / "copy")
        store.describe()
        assert store.file_problems(full=True) == []
        assert _locks_held(store.path) == before


_BLOCK_WRITER = """
import sys, time
from pathlib import Path
from imixs_archive.storage.model import SNAPSHOTS
from imixs_archive.storage.sqlite.backend import SQLiteBackend
with SQLiteBackend(Path(sys.argv[1])) as store:
    for block in range(int(sys.argv[2])):
        with store.durable_at_end():
            for n in range(20):
                name = f"b{block:03}-{n:02}"
                store.put(SNAPSHOTS, [{"snapshot": name, "data": bytes(3000)}])
        print(block, flush=True)  # every row of the block acknowledged
        time.sleep(0.02)  # the others open and close meanwhile
    sys.stdin.readline()  # open (until killed) while the test reads what it acknowledged
"""
_OPENER = """
import sys, time
from pathlib import Path
from imixs_archive.storage.model import SNAPSHOTS
from imixs_archive.storage.sqlite.backend import SQLiteBackend
for round in range(10**9):  # what stats, a cron verify or a probe do: open, read, close
    with SQLiteBackend(Path(sys.argv[1])) as store:
        next(store.scan(SNAPSHOTS, limit=1, columns=["snapshot"]), None)
    if round == 0:
        print("running", flush=True)
"""


@pytest.mark.parametrize("openers", [1, 3])
def test_processes_opening_and_closing_the_store_beside_durable_blocks_lose_nothing(
    tmp_path: Path, openers: int
) -> None:
    """One process writes in ``durable_at_end`` blocks while others open the store, read a
    row and close it, over and over. The end of a block once opened and closed the store's
    files beside SQLite, which dropped the writer's locks: a closing process then took
    itself for the last, merged and deleted the log the writer still wrote into, and the
    writer's commits were lost and the file left malformed (issue 48)."""
    SQLiteBackend(tmp_path).close()
    command = [sys.executable, "-c", _OPENER, str(tmp_path)]
    others = [subprocess.Popen(command, stdout=subprocess.PIPE) for _ in range(openers)]
    expected = {f"b{block:03}-{n:02}" for block in range(60) for n in range(20)}
    writer = None
    try:
        for other in others:
            assert other.stdout is not None and other.stdout.readline()  # it runs
        writer = subprocess.Popen(
            [sys.executable, "-c", _BLOCK_WRITER, str(tmp_path), "60"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert writer.stdout is not None
        acknowledged = [writer.stdout.readline() for _ in range(60)]
        assert acknowledged[-1] == "59\n", acknowledged
        # What the writer committed is there for every other process, while it still runs.
        with SQLiteBackend(tmp_path) as store:
            assert store.file_problems(full=True) == []
            assert _names(store) == expected
    finally:
        for process in (*others, *([writer] if writer else [])):
            process.kill()  # the writer too, as it waits to be told to close
            process.communicate()
    with SQLiteBackend(tmp_path) as store:
        assert store.file_problems(full=True) == []
        assert _names(store) == expected


def _names(store: SQLiteBackend) -> set[str]:
    return {row["snapshot"] for row in store.scan(SNAPSHOTS, columns=["snapshot"])}


def test_a_process_killed_inside_a_durable_at_end_block_leaves_whole_commits(
    tmp_path: Path,
) -> None:
    """What a crash leaves is a prefix of the commits, each whole (here a process crash;
    SQLite's WAL gives the same after a power loss without the per-commit fsync)."""
    script = textwrap.dedent(
        f"""
        import os, sys
        from pathlib import Path
        from imixs_archive.storage.model import SNAPSHOTS
        from imixs_archive.storage.sqlite.backend import SQLiteBackend
        store = SQLiteBackend(Path({str(tmp_path)!r}))
        with store.durable_at_end():
            for n in range(200):
                store.put(SNAPSHOTS, [{{"snapshot": f"s{{n:03}}-{{k}}", "data": bytes(2000)}}
                                      for k in range(5)])
                if n == 150:
                    os.kill(os.getpid(), 9)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], check=False)
    assert done.returncode == -9
    with SQLiteBackend(tmp_path) as store:
        names = sorted(row["snapshot"] for row in store.scan(SNAPSHOTS, columns=["snapshot"]))
    assert names == sorted(f"s{n:03}-{k}" for n in range(151) for k in range(5))


# --- the factory ------------------------------------------------------------------------


def test_factory_opens_sqlite_in_the_data_dir(tmp_path: Path) -> None:
    settings = load_settings({"ARCHIVE_DATA_DIR": str(tmp_path / "data")})
    with open_backend(settings) as backend:
        assert isinstance(backend, SQLiteBackend)
        assert backend.path == tmp_path / "data" / "archive.db"


def test_factory_opens_cassandra_when_a_contact_point_is_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    opened: list[Settings] = []

    class FakeCassandra:
        @classmethod
        def from_settings(cls, settings: Settings) -> str:
            opened.append(settings)
            return "cassandra backend"

    module = types.ModuleType("imixs_archive.storage.cassandra.backend")
    module.CassandraBackend = FakeCassandra  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "imixs_archive.storage.cassandra.backend", module)
    settings = load_settings({"ARCHIVE_CLUSTER_CONTACTPOINTS": "db1:9042"})
    assert open_backend(settings) == "cassandra backend"  # type: ignore[comparison-overlap]
    assert opened == [settings]


def test_a_group_of_writes_commits_once_and_atomically(tmp_path: Path) -> None:
    """grouped(): the thread's writes inside become visible together, or not at all."""
    with SQLiteBackend(tmp_path / "store") as backend, SQLiteBackend(tmp_path / "store") as reader:
        with backend.grouped():
            backend.put(SNAPSHOTS_BY_UNIQUEID, [{"uniqueid": "u", "snapshot": "u-1"}])
            backend.put(SNAPSHOTS, [{"snapshot": "u-1", "data": b"x"}])
            with backend.grouped():  # nested: part of the same group
                backend.delete(SNAPSHOTS, {"snapshot": "u-1"})
                backend.put(SNAPSHOTS, [{"snapshot": "u-1", "data": b"y"}])
            assert reader.get(SNAPSHOTS, {"snapshot": "u-1"}) is None
        assert reader.get(SNAPSHOTS, {"snapshot": "u-1"}) == {"snapshot": "u-1", "data": b"y"}
        with pytest.raises(RuntimeError), backend.grouped():
            backend.put(SNAPSHOTS, [{"snapshot": "u-2", "data": b"z"}])
            raise RuntimeError("the process dies here")
        assert backend.get(SNAPSHOTS, {"snapshot": "u-2"}) is None
        backend.put(SNAPSHOTS, [{"snapshot": "u-3", "data": b"after"}])  # back to normal
        assert reader.get(SNAPSHOTS, {"snapshot": "u-3"}) is not None


def test_a_write_started_soon_lands_in_the_group_it_is_waited_in(tmp_path: Path) -> None:
    """put_soon on the embedded store writes when waited for: inside a group, in the
    group's one commit (the ledger's entry with its snapshot's row), or not at all."""
    row = {"slot": 1, "subject": "u-1", "entry_key": "k", "entry": "e"}
    with SQLiteBackend(tmp_path / "store") as backend, SQLiteBackend(tmp_path / "store") as reader:
        wait = backend.put_soon(ARCHIVE_LEDGER_QUEUE, [row])
        with pytest.raises(RuntimeError), backend.grouped():
            wait()
            backend.put(SNAPSHOTS, [{"snapshot": "u-1", "data": b"x"}])
            assert reader.get(ARCHIVE_LEDGER_QUEUE, key_of(ARCHIVE_LEDGER_QUEUE, row)) is None
            raise RuntimeError("the process dies before the commit")
        assert backend.get(ARCHIVE_LEDGER_QUEUE, key_of(ARCHIVE_LEDGER_QUEUE, row)) is None
        with backend.grouped():
            wait()
            backend.put(SNAPSHOTS, [{"snapshot": "u-1", "data": b"x"}])
        assert reader.get(ARCHIVE_LEDGER_QUEUE, key_of(ARCHIVE_LEDGER_QUEUE, row)) == row


def test_the_store_runs_on_a_sqlite_without_the_wal_reset_bug(tmp_path: Path) -> None:
    """SQLite 3.7.0 to 3.51.2 can corrupt a WAL store when a checkpoint races another
    connection's commit (https://sqlite.org/wal.html#walresetbug); the system's SQLite is
    often one of them (Debian 12: 3.40.1), APSW's is not."""
    assert engine.has_wal_reset_bug("3.40.1")
    assert engine.has_wal_reset_bug("3.51.2")
    assert not engine.has_wal_reset_bug("3.51.3")
    assert not engine.has_wal_reset_bug()
    with SQLiteBackend(tmp_path) as store:
        assert store.describe()["sqlite_version"] == engine.version()


def test_a_cell_a_damaged_page_left_unreadable_is_an_integrity_error(tmp_path: Path) -> None:
    """What damage leaves in a cell its column cannot hold is named as damage (exit 5), not a
    ValueError of the code that reads it."""
    with SQLiteBackend(tmp_path) as store:
        row = {"modified": datetime.date(2024, 3, 5), "snapshot": "s1"}
        store.put(SNAPSHOTS_BY_MODIFIED, [row])
        with raw_sqlite.opened(store.path) as raw:
            raw.execute("UPDATE snapshots_by_modified SET modified = 'x7\x01'")
        with pytest.raises(DamagedRowError, match="the row is damaged"):
            list(store.scan(SNAPSHOTS_BY_MODIFIED))


def test_the_write_ahead_log_stays_near_its_bound_under_small_commits(tmp_path: Path) -> None:
    """Small commits, each writing a whole 32 KiB page, grew the log to SQLite's 1000
    pages (32 MB) beside a store of a few KiB before it was merged and begun again (issue
    46): it is merged at ``wal_bytes`` and stays near that size."""
    backend = SQLiteBackend(tmp_path)
    wal = Path(f"{backend.path}-wal")
    largest = 0
    for n in range(1500):  # 1500 commits of a page or two: 48 MB of log unmerged
        backend.put(SNAPSHOTS_BY_UNIQUEID, [{"uniqueid": f"u{n % 7}", "snapshot": f"s{n}"}])
        largest = max(largest, wal.stat().st_size)
    backend.close()
    assert largest <= Tuning().wal_bytes + 3 * Tuning().page_size, largest


def test_a_store_file_gone_is_no_new_empty_store_for_the_next_thread(tmp_path: Path) -> None:
    """A thread's connection opens the file the store has: when the file was moved away
    (or deleted) beside the store, a new thread's read fails, and no empty database is
    made in its place (one was: ``/readyz`` then found a file there and said ready, and a
    schedule read "no such table")."""
    with SQLiteBackend(tmp_path / "store") as backend:
        backend.put(ARCHIVE_VERSIONS, [{"name": "x", "version": 1, "written_by": "test"}])
        path = Path(backend.describe()["path"])
        path.rename(tmp_path / "moved.db")
        failed: list[BaseException] = []

        def read() -> None:
            try:
                backend.get(ARCHIVE_VERSIONS, {"name": "x"})
            except StoreError as exc:
                failed.append(exc)

        thread = threading.Thread(target=read)
        thread.start()
        thread.join()
        assert not path.exists()
        assert len(failed) == 1 and "unable to open" in str(failed[0])
        (tmp_path / "moved.db").rename(path)

"""The embedded store's files (``storage/sqlite/store_file.py``): a file named
``archive.db`` that holds no archive is refused by every command and left as it is; a new
store appears whole; the write-ahead log is merged when a process ends, and a log lost with
commits in it is found and reported until the operator deals with it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import apsw
import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.cli import main
from imixs_archive.config import load_settings
from imixs_archive.document.xml_writer import to_xml
from imixs_archive.errors import StoreError
from imixs_archive.storage.model import SNAPSHOTS
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from imixs_archive.storage.sqlite.store_file import APPLICATION_ID, LOST_SUFFIX, MARK_SUFFIX
from imixs_archive.web.app import create_app
from support import raw_sqlite
from support.snapshots import make_snapshot
from web.live import start_server

# --- not an archive ---------------------------------------------------------------------


def _foreign(path: Path) -> None:
    connection = raw_sqlite.connect(path)
    connection.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    connection.execute("INSERT INTO customers VALUES (1, 'Anna')")
    connection.close()


def _empty_database(path: Path) -> None:
    connection = raw_sqlite.connect(path)
    connection.execute("PRAGMA user_version = 0")
    connection.execute("VACUUM")
    connection.close()


@pytest.mark.parametrize(
    "make, said",
    [
        (lambda path: path.write_bytes(b""), "it is empty (0 bytes)"),
        (_empty_database, "empty"),
        (_foreign, "another program's database"),
    ],
    ids=["zero-bytes", "empty-database", "foreign"],
)
@pytest.mark.parametrize(
    "command",
    [["verify"], ["stats"], ["list", "--from", "2024-01-01"], ["gc"], ["import", "{samples}"]],
    ids=["verify", "stats", "list", "gc", "import"],
)
def test_a_file_that_holds_no_archive_is_refused_and_left_as_it_is(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    make: object,
    said: str,
    command: list[str],
) -> None:
    store = tmp_path / "store"
    store.mkdir()
    database = store / "archive.db"
    make(database)  # type: ignore[operator]
    before = database.read_bytes()
    samples = tmp_path / "one.xml"
    samples.write_bytes(to_xml(make_snapshot(1)))
    code = main([*(a.format(samples=samples) for a in command), "--data-dir", str(store)])
    err = capsys.readouterr().err
    assert code == 6, err
    assert said in err and str(database) in err and "not an archive" in err
    assert database.read_bytes() == before
    assert sorted(p.name for p in store.iterdir()) == ["archive.db"]


def test_a_new_store_is_marked_as_this_archive_and_leaves_nothing_else(tmp_path: Path) -> None:
    SQLiteBackend(tmp_path).close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["archive.db"]
    connection = raw_sqlite.connect(tmp_path / "archive.db")
    assert connection.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    connection.close()


def test_a_store_from_before_the_mark_still_opens(tmp_path: Path) -> None:
    with SQLiteBackend(tmp_path) as store:
        store.put(SNAPSHOTS, [{"snapshot": "a", "data": b"x"}])
    connection = raw_sqlite.connect(tmp_path / "archive.db")
    connection.execute("PRAGMA application_id = 0")
    connection.close()
    with SQLiteBackend(tmp_path) as store:
        assert store.get(SNAPSHOTS, {"snapshot": "a"}) == {"snapshot": "a", "data": b"x"}


def test_processes_creating_one_store_at_once_share_it(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from imixs_archive.storage.model import SNAPSHOTS
        from imixs_archive.storage.sqlite.backend import SQLiteBackend
        with SQLiteBackend(Path({str(tmp_path / "new")!r})) as store:
            store.put(SNAPSHOTS, [{{"snapshot": sys.argv[1], "data": b"x"}}])
        """
    )
    runs = [subprocess.Popen([sys.executable, "-c", script, f"p{n}"]) for n in range(6)]
    assert [run.wait(60) for run in runs] == [0] * 6
    with SQLiteBackend(tmp_path / "new") as store:
        names = {row["snapshot"] for row in store.scan(SNAPSHOTS, columns=["snapshot"])}
    assert names == {f"p{n}" for n in range(6)}
    assert sorted(p.name for p in (tmp_path / "new").iterdir()) == ["archive.db"]


# --- the write-ahead log ----------------------------------------------------------------


def _serve_beside(store: Path) -> apsw.Connection:
    """A reader that keeps the store open, as a running ``serve`` does: SQLite then never
    merges and removes the log when the writers close."""
    reader = raw_sqlite.connect(store / "archive.db")
    reader.execute("SELECT count(*) FROM snapshots").fetchone()
    return reader


def _lose_the_log(store: Path) -> None:
    for name in ("archive.db-wal", "archive.db-shm"):
        (store / name).unlink(missing_ok=True)


def _import(tmp_path: Path, store: Path, count: int, first: int = 0) -> list[str]:
    docs = [make_snapshot(first + n, subject=f"n {n}") for n in range(count)]
    source = tmp_path / f"in-{first}.xml"
    body = b"".join(to_xml(doc).split(b"?>", 1)[1] for doc in docs)
    source.write_bytes(b"<data>" + body + b"</data>")
    assert main(["import", str(source), "--data-dir", str(store)]) == 0
    return [str(doc["$uniqueid"][0]) for doc in docs]


def test_an_import_beside_serve_leaves_nothing_only_in_the_log(tmp_path: Path) -> None:
    store = tmp_path / "store"
    SQLiteBackend(store).close()
    reader = _serve_beside(store)
    try:
        ids = _import(tmp_path, store, 15)
        assert (store / "archive.db-wal").stat().st_size == 0  # merged when the import ended
        assert not (store / f"archive.db{MARK_SUFFIX}").exists()
    finally:
        reader.close()
    _lose_the_log(store)  # the operator's mistake, after a crash of anything
    with SQLiteBackend(store) as backend:
        assert all(Archive(backend).exists(sid) for sid in ids)
        assert backend.findings() == []


def test_a_log_lost_with_commits_in_it_is_reported_until_dealt_with(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    kept = _import(tmp_path, store, 3)
    reader = _serve_beside(store)
    script = textwrap.dedent(
        f"""
        import os, sys
        sys.path.insert(0, {str(Path(__file__).parents[1])!r})
        from pathlib import Path
        from imixs_archive.archive.snapshots import Archive
        from imixs_archive.storage.sqlite.backend import SQLiteBackend
        from support.snapshots import make_snapshot
        backend = SQLiteBackend(Path({str(store)!r}))
        archive = Archive(backend)
        for n in range(15):
            archive.store(make_snapshot(100 + n))
        print("archived", flush=True)
        os.kill(os.getpid(), 9)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == -9 and "archived" in done.stdout, done.stderr
    reader.close()  # serve killed too: nothing merges the log
    assert (store / f"archive.db{MARK_SUFFIX}").exists()
    _lose_the_log(store)

    assert main(["verify", "--data-dir", str(store)]) == 5
    said = capsys.readouterr()
    assert "write-ahead log (archive.db-wal) went missing" in said.out + said.err
    assert "snapshots archived since then may be lost" in said.out + said.err
    lost = store / f"archive.db{LOST_SUFFIX}"
    assert lost.exists()
    assert main(["verify", "--data-dir", str(store)]) == 5  # until the operator deals with it
    capsys.readouterr()
    with SQLiteBackend(store) as backend:
        assert all(Archive(backend).exists(sid) for sid in kept)
    lost.unlink()
    assert main(["verify", "--data-dir", str(store)]) == 0


def test_no_loss_is_reported_when_the_log_was_merged(tmp_path: Path) -> None:
    """The mark without a log is a loss only when nothing merged the log: a writer killed,
    then a reader that closes last (SQLite merges and removes the log), then anyone."""
    store = tmp_path / "store"
    script = textwrap.dedent(
        f"""
        import os
        from pathlib import Path
        from imixs_archive.storage.model import SNAPSHOTS
        from imixs_archive.storage.sqlite.backend import SQLiteBackend
        backend = SQLiteBackend(Path({str(store)!r}))
        backend.put(SNAPSHOTS, [{{"snapshot": "w", "data": b"x" * 5000}}])
        os.kill(os.getpid(), 9)
        """
    )
    for _round in range(3):
        assert subprocess.run([sys.executable, "-c", script]).returncode == -9
        assert (store / f"archive.db{MARK_SUFFIX}").exists()
        with SQLiteBackend(store) as reader:  # reads only
            assert reader.get(SNAPSHOTS, {"snapshot": "w"}) is not None
        assert not (store / "archive.db-wal").exists()
        assert not (store / f"archive.db{MARK_SUFFIX}").exists()
        with SQLiteBackend(store) as backend:
            assert backend.findings() == []
        for _ in range(5):
            with SQLiteBackend(store) as backend:
                backend.put(SNAPSHOTS, [{"snapshot": "again", "data": b"y"}])
    assert not (store / f"archive.db{LOST_SUFFIX}").exists()


def test_a_program_that_ends_without_closing_the_store_leaves_no_false_loss(
    tmp_path: Path,
) -> None:
    """A script that writes and ends without closing: as the interpreter goes, SQLite would
    merge and delete the log behind the archive's back and leave the mark, read as a lost
    log at the next open. The store is closed at exit instead."""
    store = tmp_path / "store"
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from imixs_archive.storage.model import SNAPSHOTS
        from imixs_archive.storage.sqlite.backend import SQLiteBackend
        backend = SQLiteBackend(Path({str(store)!r}))
        backend.put(SNAPSHOTS, [{{"snapshot": "w", "data": b"x" * 5000}}])
        """
    )
    assert subprocess.run([sys.executable, "-c", script]).returncode == 0
    assert not (store / "archive.db-wal").exists()
    assert not (store / f"archive.db{MARK_SUFFIX}").exists()
    with SQLiteBackend(store) as backend:
        assert backend.findings() == []
        assert backend.get(SNAPSHOTS, {"snapshot": "w"}) is not None


def test_a_store_that_cannot_be_opened_says_so_before_anything_else(tmp_path: Path) -> None:
    (tmp_path / "archive.db").write_bytes(b"")
    with pytest.raises(StoreError, match="not an archive"):
        SQLiteBackend(tmp_path)


def test_the_monitor_shows_a_lost_log(tmp_path: Path) -> None:
    SQLiteBackend(tmp_path).close()
    (tmp_path / f"archive.db{LOST_SUFFIX}").write_text("SQLite store X: its write-ahead log went")
    backend = SQLiteBackend(tmp_path)
    settings = load_settings({})
    app = create_app(settings, backend)
    live = start_server(app, settings, app.state.services.archive)
    try:
        with live.client() as client:
            page = client.get("/ui/monitor")
        assert page.status_code == 200
        assert "data-finding>SQLite store X: its write-ahead log went" in page.text
    finally:
        live.stop()
        backend.close()


# --- a copy of the store while it is written ----------------------------------------------


def test_a_copy_taken_while_another_process_writes_is_whole_and_verifies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``copy-store`` copies the store at one moment (SQLite's online backup) while an import
    goes on writing in another process: each copy opens, holds every snapshot whole, and
    verifies clean."""
    store = tmp_path / "store"
    _import(tmp_path, store, 20)
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parents[1])!r})
        from pathlib import Path
        from imixs_archive.archive.snapshots import Archive
        from imixs_archive.storage.sqlite.backend import SQLiteBackend
        from support.snapshots import make_snapshot
        with SQLiteBackend(Path({str(store)!r})) as backend, Archive(backend) as archive:
            print("writing", flush=True)
            for n in range(400):
                archive.store(make_snapshot(1000 + n, files={{"f.bin": bytes([n % 250]) * 40_000}}))
        """
    )
    writer = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert writer.stdout is not None and writer.stdout.readline() == "writing\n"
    counts = []
    try:
        for n in range(3):
            target = tmp_path / f"copy-{n}"
            assert main(["copy-store", str(target), "--verify", "--data-dir", str(store)]) == 0
            said = capsys.readouterr().out
            assert f"copied the store to {target / 'archive.db'}" in said and ": clean" in said
            with SQLiteBackend(target) as copy:
                counts.append(sum(1 for _ in Archive(copy).index.iter_snapshot_ids()))
                assert copy.findings() == []
    finally:
        writer.communicate(timeout=120)
    assert writer.returncode == 0
    assert 20 <= counts[0] <= counts[1] <= counts[2] <= 420
    assert counts[0] < 420  # taken while the writer was at work
    assert sorted(p.name for p in (tmp_path / "copy-0").iterdir()) == ["archive.db"]


def test_a_copy_never_overwrites_a_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    _import(tmp_path, store, 2)
    target = tmp_path / "copy"
    assert main(["copy-store", str(target), "--data-dir", str(store)]) == 0
    before = (target / "archive.db").read_bytes()
    assert main(["copy-store", str(target), "--data-dir", str(store)]) == 6
    assert "exists" in capsys.readouterr().err
    assert (target / "archive.db").read_bytes() == before

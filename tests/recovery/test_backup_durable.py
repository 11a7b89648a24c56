"""A backup that returned is durable; a file is never renamed into place before its bytes
are; a file that cannot be put in place fails alone."""

from __future__ import annotations

import datetime as dt
import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.archive.stored_xml import StoredXml
from imixs_archive.document.xml_reader import read_xml
from imixs_archive.errors import BusyError
from imixs_archive.recovery import backup as backup_module
from imixs_archive.recovery.backup import MANIFEST, STALE_PART_S, DayRange, backup
from support.snapshots import make_snapshot

PDF = random.Random(9).randbytes(300_000)
OTHER = "11111111-2222-4333-8444-555555555555"

Event = tuple[str, str, str]


def _record_syncs(monkeypatch: pytest.MonkeyPatch) -> list[Event]:
    """The fsyncs (by the path their descriptor names) and renames, in the order made."""
    events: list[Event] = []
    real_fsync: Callable[[int], None] = os.fsync
    real_replace: Callable[..., Any] = os.replace

    def fsync(fd: int) -> None:
        real_fsync(fd)
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}"), ""))

    def replace(src: Any, dst: Any, **kwargs: Any) -> None:
        real_replace(src, dst, **kwargs)
        events.append(("rename", os.fspath(src), os.fspath(dst)))

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    return events


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc/self/fd")
def test_each_file_is_durable_before_its_rename_and_the_folders_before_return(
    archive: Archive, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for step in range(3):
        archive.store(make_snapshot(step, files={"a.pdf": PDF}))
    archive.store(make_snapshot(0, origin=OTHER, files={"b.bin": PDF[:999]}))
    events = _record_syncs(monkeypatch)
    root = tmp_path / "new" / "bk"  # two folders made by the backup itself
    summary = backup(archive, root, all_snapshots=True)
    assert (summary.written, summary.failed) == (4, 0)
    files = sorted(str(p) for p in root.rglob("*.xml"))
    assert len(files) == 4 and not list(root.rglob("*.part"))
    renames = {dst: (at, src) for at, (kind, src, dst) in enumerate(events) if kind == "rename"}
    synced = [(at, path) for at, (kind, path, _) in enumerate(events) if kind == "fsync"]
    for path in files:
        renamed, part = renames[path]
        assert Path(part).parent == Path(path).parent and part.endswith(".part"), part
        assert any(p == part and at < renamed for at, p in synced), path
        assert any(p == str(Path(path).parent) and at > renamed for at, p in synced), path
    folders = {p for _at, p in synced}
    month = Path(files[0]).parent
    assert {str(month.parent), str(root), str(root.parent), str(tmp_path)} <= folders
    assert str(root / MANIFEST) in folders


def test_a_file_that_cannot_be_put_in_place_fails_alone(archive: Archive, tmp_path: Path) -> None:
    archive.store(make_snapshot(0, files={"a.pdf": PDF}))
    archive.store(make_snapshot(0, origin=OTHER, files={"b.bin": PDF[:999]}))
    root = tmp_path / "bk"
    first = backup(archive, root)
    assert (first.written, first.failed) == (2, 0)
    [blocked, other] = sorted(root.rglob("*.xml"), key=lambda p: p.name != f"{OTHER}.xml")
    blocked.unlink()
    blocked.mkdir()  # a folder under the name: the rename into place fails
    (blocked / "keep").write_text("x")
    (root / MANIFEST).unlink()
    other.unlink()
    second = backup(archive, root)
    assert (second.written, second.failed) == (1, 1)
    assert str(blocked) in second.failures[0] and OTHER in second.failures[0]
    assert other.is_file() and blocked.is_dir()
    assert not list(root.rglob("*.part"))
    manifest = (root / MANIFEST).read_text()
    assert str(other.relative_to(root)) in manifest
    assert str(blocked.relative_to(root)) not in manifest


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_fails_the_file_alone(
    archive: Archive, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writes to /dev/full fail with ENOSPC, and so does the close that flushes them."""
    archive.store(make_snapshot(0, files={"a.pdf": PDF}))
    archive.store(make_snapshot(0, origin=OTHER, files={"b.bin": PDF[:999]}))
    root = tmp_path / "bk"
    backup(archive, root)
    [full, other] = sorted(root.rglob("*.xml"), key=lambda p: p.name != f"{OTHER}.xml")
    for path in (full, other):
        path.unlink()
    (root / MANIFEST).unlink()
    sink = full.with_name(".full.part")
    sink.symlink_to("/dev/full")
    real = backup_module._partial
    monkeypatch.setattr(
        backup_module, "_partial", lambda path: sink if path == full else real(path)
    )
    summary = backup(archive, root)
    assert (summary.written, summary.failed) == (1, 1)
    assert "No space left" in summary.failures[0]
    assert other.is_file() and not full.exists()
    assert not list(root.rglob("*.part"))
    assert summary.bytes_written == other.stat().st_size  # what is there, not what was tried


def test_two_backups_into_one_folder_at_once_write_whole_files(
    archive: Archive, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scheduled backup and a manual one may meet in one folder: each writes a part
    of its own (a shared one was cut by the other writer, then renamed with zeros)."""
    snapshots = [make_snapshot(step, files={"a.pdf": PDF}) for step in range(2)]
    for snapshot in snapshots:
        archive.store(snapshot)
    expected = archive.load(str(snapshots[-1].get_first("$uniqueid")))  # the newest
    both_writing = threading.Barrier(2, timeout=10)
    real = archive.xml_with_files
    first_piece: set[int] = set()

    def xml_with_files(snapshot_id: str) -> StoredXml:
        found = real(snapshot_id)

        def pieces() -> Any:
            for piece in found.iter_bytes():
                yield piece
                if threading.get_ident() not in first_piece:  # both are inside their file
                    first_piece.add(threading.get_ident())
                    both_writing.wait()

        return StoredXml(found.created, [pieces()])

    monkeypatch.setattr(archive, "xml_with_files", xml_with_files)
    root = tmp_path / "bk"
    summaries: list[Any] = []
    # Backups of days (a backup of everything holds its folder's lease: one at a time).
    days = DayRange(dt.date(2000, 1, 1), dt.date(2099, 12, 31))
    writers = [
        threading.Thread(target=lambda: summaries.append(backup(archive, root, days=days)))
        for _ in range(2)
    ]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    assert [(s.written, s.failed) for s in summaries] == [(1, 0), (1, 0)]
    [written] = root.rglob("*.xml")
    assert read_xml(written.read_bytes()) == [expected]
    assert not list(root.rglob("*.part"))


def test_two_backups_of_everything_into_one_folder_at_once_one_is_refused(
    archive: Archive, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two backups of everything into one folder share a book: of two started at once in
    one process (the scheduled one and one asked from the API), one runs, the other is
    refused at once; none waits, and the folder holds the backup whole."""
    archive.store(make_snapshot(0, files={"a.pdf": PDF}))
    inside = threading.Event()
    release = threading.Event()
    real = archive.xml_with_files

    def slow(snapshot_id: str) -> StoredXml:
        inside.set()
        release.wait(10)
        return real(snapshot_id)

    monkeypatch.setattr(archive, "xml_with_files", slow)
    root = tmp_path / "bk"
    summaries: list[Any] = []
    first = threading.Thread(target=lambda: summaries.append(backup(archive, root)))
    first.start()
    assert inside.wait(10)
    with pytest.raises(BusyError, match="runs in another process"):
        backup(archive, root)
    release.set()
    first.join()
    assert [(s.written, s.failed) for s in summaries] == [(1, 0)]
    assert len(list(root.rglob("*.xml"))) == 1


def test_parts_left_by_a_writer_that_died_go_when_stale(archive: Archive, tmp_path: Path) -> None:
    archive.store(make_snapshot(0, files={"a.pdf": PDF}))
    root = tmp_path / "bk"
    backup(archive, root)
    [written] = root.rglob("*.xml")
    stale = written.with_name(f".{written.name}.99-dead.part")
    fresh = written.with_name(f".{written.name}.98-alive.part")
    foreign = written.with_name(".notes.part")  # not a name the backup gives: kept
    for part in (stale, fresh, foreign):
        part.write_bytes(b"<data>")
    old = time.time() - STALE_PART_S - 60
    for part in (stale, foreign):
        os.utime(part, (old, old))
    written.unlink()
    (root / MANIFEST).unlink()
    backup(archive, root)
    assert written.is_file() and fresh.exists() and foreign.exists() and not stale.exists()


def test_a_backup_run_again_removes_the_parts_a_killed_one_left(
    archive: Archive, tmp_path: Path
) -> None:
    """Parts this host's writers left when they were killed go at the next run, whether it
    writes into their folder or finds it current; a part whose writer still runs stays."""
    archive.store(make_snapshot(0, files={"a.pdf": PDF}))
    root = tmp_path / "bk"
    backup(archive, root)
    [written] = root.rglob("*.xml")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        killed = backup_module._partial(written).name.split(".")[-2]  # host-pid-token
        host = killed.split("-")[0]
        left = written.with_name(f".{written.name}.{host}-{dead.pid}-0badc0de.part")
        running = written.with_name(f".{written.name}.{host}-{alive.pid}-00c0ffee.part")
        elsewhere = written.with_name(f".{written.name}.0000beef-{dead.pid}-0000abcd.part")
        for part in (left, running, elsewhere):
            part.write_bytes(b"<data>")
        summary = backup(archive, root)  # everything current: nothing written
        assert summary.current == 1 and summary.written == 0
        assert not left.exists()
        assert running.exists() and elsewhere.exists()  # another host's: only when stale
    finally:
        alive.kill()
        alive.wait()

"""``compact``: the space of deleted data goes back to the disk (SQLite keeps free pages in
its file for ever), nothing else changes, beside a process reading all the while; a store
whose nodes compact their own files says so (issue 46, item 6)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.cli import main
from imixs_archive.errors import ConfigError
from imixs_archive.storage.base import Backend
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from support.snapshots import make_snapshot

SNAPSHOTS = 24
ATTACHMENT = 300_000


def _fill(store: Path) -> dict[str, bytes]:
    """Snapshots with an attachment of random bytes each (nothing to deduplicate), half of
    them deleted and their files and pieces collected: the XML of those kept, by id."""
    with Archive(SQLiteBackend(store)) as archive:
        ids = []
        for n in range(SNAPSHOTS):
            origin = f"c0ac0000-0000-4000-8000-{n:012d}"
            doc = make_snapshot(n, origin=origin, files={"a.bin": os.urandom(ATTACHMENT)})
            ids.append(archive.store(doc).snapshot_id)
        for snapshot_id in ids[::2]:
            archive.delete(snapshot_id)
        for _round in range(3):  # the files listed, removed; then their pieces (no grace)
            archive.gc_part(grace=0)
        return {sid: b"".join(archive.xml_with_files(sid).iter_bytes()) for sid in ids[1::2]}


def _size(store: Path) -> int:
    return (store / "archive.db").stat().st_size


def test_compact_gives_back_the_space_of_deleted_data_and_keeps_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "store"
    kept = _fill(store)
    before = _size(store)
    assert main(["compact", "--data-dir", str(store)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("compacted: "), out
    after = _size(store)
    deleted = SNAPSHOTS // 2 * ATTACHMENT
    assert before - after > 0.8 * deleted, (before, after)
    with Archive(SQLiteBackend(store)) as archive:
        assert {sid: b"".join(archive.xml_with_files(sid).iter_bytes()) for sid in kept} == kept
        assert sorted(archive.index.iter_snapshot_ids()) == sorted(kept)
    assert main(["verify", "--data-dir", str(store)]) == 0
    capsys.readouterr()
    # once more: no free page left, nothing written
    assert main(["compact", "--data-dir", str(store)]) == 0
    assert capsys.readouterr().out.startswith("nothing to compact")
    assert _size(store) == after


READER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from imixs_archive.archive.snapshots import Archive
    from imixs_archive.storage.sqlite.backend import SQLiteBackend

    store, expected = Path(sys.argv[1]), Path(sys.argv[2])
    kept = {}
    for line in expected.read_text().splitlines():
        sid, size = line.split()
        kept[sid] = int(size)
    rounds = 0
    with Archive(SQLiteBackend(store)) as archive:
        print("reading", flush=True)
        while not (store.parent / "stop").exists() or rounds < 3:
            found = {sid: len(b"".join(archive.xml_with_files(sid).iter_bytes())) for sid in kept}
            assert found == kept, "a snapshot read differently"
            assert sorted(archive.index.iter_snapshot_ids()) == sorted(kept)
            rounds += 1
    print(rounds, flush=True)
    """
)


def test_compact_beside_a_process_reading_all_the_while(tmp_path: Path) -> None:
    store = tmp_path / "store"
    kept = _fill(store)
    before = _size(store)
    listed = tmp_path / "kept.txt"
    listed.write_text("".join(f"{sid} {len(xml)}\n" for sid, xml in kept.items()))
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(store), str(listed)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert reader.stdout is not None
        assert reader.stdout.readline().strip() == "reading"
        assert main(["compact", "--data-dir", str(store)]) == 0
    finally:
        (tmp_path / "stop").touch()
        out, err = reader.communicate(timeout=120)
    assert reader.returncode == 0, err[-2000:]
    assert int(out.split()[-1]) >= 3
    with Archive(SQLiteBackend(store)) as archive:  # the log merged at the latest at close
        assert {sid: b"".join(archive.xml_with_files(sid).iter_bytes()) for sid in kept} == kept
    assert _size(store) < before - 0.8 * SNAPSHOTS // 2 * ATTACHMENT


def test_a_store_that_compacts_itself_says_so(backend: Backend) -> None:
    if backend.name == "sqlite":
        assert backend.compact().free_bytes == 0  # a new store: nothing to give back
        return
    with pytest.raises(ConfigError, match="nodetool compact"):
        backend.compact()


def test_compact_refuses_without_room_for_a_copy_and_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    _fill(store)
    before = _size(store)
    real = shutil.disk_usage

    def little_room(path: os.PathLike[str] | str) -> Any:
        found = real(path)
        return type(found)(found.total, found.used, 1_000_000)  # a disk nearly full

    monkeypatch.setattr("imixs_archive.storage.sqlite.compact.shutil.disk_usage", little_room)
    assert main(["compact", "--data-dir", str(store)]) == 6
    err = capsys.readouterr().err
    assert "compacting needs" in err and "SQLITE_TMPDIR" in err and len(err.splitlines()) == 1
    assert _size(store) == before

"""``gc``, ``stats``/``verify`` reporting reclaimable bytes, the collection ``serve`` runs
on a schedule, and commands that only read refusing a folder that holds no archive."""

from __future__ import annotations

import hashlib
import json
import random
import time
import uuid
from pathlib import Path

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.cli import main
from imixs_archive.cli.output import human_bytes
from imixs_archive.config import load_settings
from imixs_archive.filestore import garbage
from imixs_archive.filestore.reading import EMPTY_MD5
from imixs_archive.storage.model import DOCUMENTS_DATA, SNAPSHOTS_BY_DOCUMENT
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from imixs_archive.web.app import create_app
from support.java_rows import java_delete_snapshot
from support.snapshots import make_snapshot
from web.live import start_server

DATA = random.Random(41).randbytes(700_000)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """An archive with one snapshot deleted: its file is no longer used."""
    folder = tmp_path / "store"
    with SQLiteBackend(folder) as backend, Archive(backend) as archive:
        doc = make_snapshot(files={"a.bin": DATA})
        archive.store(doc)
        archive.store(make_snapshot(1))
        archive.delete(doc["$uniqueid"][0])
    return folder


class _Clock:
    """The wall clock the garbage list stamps and compares with, moved on by the test
    (a real grace period of 0.5 s ran out between two runs on a loaded machine)."""

    def __init__(self) -> None:
        self.ns = time.time_ns()

    def time_ns(self) -> int:
        return self.ns

    def wait(self, seconds: float) -> None:
        self.ns += int(seconds * 1e9)


def test_gc_lists_then_removes_after_the_grace_period(
    capsys: pytest.CaptureFixture[str], store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARCHIVE_GC_GRACE", "60")
    clock = _Clock()
    monkeypatch.setattr(garbage, "time", clock)
    code, out, _ = run(capsys, "verify", "--data-dir", str(store))
    assert code == 0 and f"{human_bytes(len(DATA))} reclaimable by gc" in out
    code, out, _ = run(capsys, "gc", "--dry-run", "--json", "--data-dir", str(store))
    dry = json.loads(out)
    assert code == 0 and dry["dry_run"] and dry["listed_files"] == 1
    assert dry["reclaimable_bytes"] == len(DATA)
    code, out, _ = run(capsys, "stats", "--full", "--json", "--data-dir", str(store))
    assert json.loads(out)["reclaimable_bytes"] == len(DATA)  # unused, listed or not
    code, out, _ = run(capsys, "gc", "--data-dir", str(store))
    assert code == 0 and "listed 1 files" in out
    code, out, _ = run(capsys, "stats", "--full", "--json", "--data-dir", str(store))
    assert json.loads(out)["reclaimable_bytes"] == len(DATA)
    code, out, _ = run(capsys, "gc", "--data-dir", str(store))
    assert "removed 0 files" in out and "1 listed earlier still waiting" in out
    clock.wait(59)
    code, out, _ = run(capsys, "gc", "--json", "--data-dir", str(store))
    assert json.loads(out)["removed_files"] == 0  # not yet
    clock.wait(2)
    code, out, _ = run(capsys, "gc", "--json", "--data-dir", str(store))
    assert json.loads(out)["removed_files"] == 1
    clock.wait(61)
    code, out, _ = run(capsys, "gc", "--json", "--data-dir", str(store))
    assert json.loads(out)["bytes_freed"] == len(DATA)
    with SQLiteBackend(store) as backend:
        assert next(backend.scan(DOCUMENTS_DATA), None) is None
    code, out, _ = run(capsys, "verify", "--data-dir", str(store))
    assert code == 0 and f"{human_bytes(0)} reclaimable" in out


def test_gc_stats_and_verify_agree_after_a_delete(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Snapshots stored, one deleted: at every step of the collection (listed, its file
    removed, its pieces removed) the three name the same files, pieces and bytes."""
    folder = tmp_path / "store"
    shared, own = random.Random(5).randbytes(300_000), random.Random(6).randbytes(200_000)
    with SQLiteBackend(folder) as backend, Archive(backend) as archive:
        doomed = make_snapshot(0, files={"a.bin": own, "b.bin": shared})
        archive.store(doomed)
        archive.store(make_snapshot(1, files={"b.bin": shared}))
        archive.store(make_snapshot(2, origin="0abcdef0-0000-4000-8000-000000000009"))
        archive.delete(doomed["$uniqueid"][0])
    monkeypatch.setenv("ARCHIVE_GC_GRACE", "60")
    clock = _Clock()
    monkeypatch.setattr(garbage, "time", clock)
    data = ["--data-dir", str(folder)]
    seen = []
    for step in ("deleted", "listed", "file removed", "pieces removed"):
        if step != "deleted":
            clock.wait(61)
            code, out, _ = run(capsys, "gc", "--json", *data)
            gc = json.loads(out)
            assert code == 0
        code, out, _ = run(capsys, "stats", "--full", "--json", *data)
        stats = json.loads(out)
        code, out, _ = run(capsys, "verify", *data)
        assert code == 0
        unused = (stats["unused_files"], stats["unused_pieces"], stats["reclaimable_bytes"])
        assert out.splitlines()[-1] == (
            f"checked {stats['snapshots']} snapshots, {stats['stored_files']} files, "
            f"{stats['pieces']} pieces: clean; {unused[0]} files and {unused[1]} pieces "
            f"unused, {human_bytes(unused[2])} reclaimable by gc"
        ), step
        if step == "deleted":
            code, out, _ = run(capsys, "gc", "--dry-run", "--json", *data)
            gc = json.loads(out)
        assert (gc["unused_files"], gc["unused_pieces"], gc["reclaimable_bytes"]) == unused
        seen.append((stats["stored_files"], stats["pieces"], *unused))
        assert stats["stored_bytes"] >= stats["reclaimable_bytes"]
    pieces, own_pieces = seen[0][1], seen[0][3]
    assert 0 < own_pieces < pieces
    assert seen == [
        (2, pieces, 1, own_pieces, len(own)),  # a.bin: only the deleted snapshot had it
        (2, pieces, 1, own_pieces, len(own)),
        (1, pieces, 0, own_pieces, len(own)),  # its pieces wait, listed in its stead
        (1, pieces - own_pieces, 0, 0, 0),  # b.bin and its pieces stay
    ]


def test_stats_and_verify_count_a_piece_an_aborted_write_left(
    capsys: pytest.CaptureFixture[str], store: Path
) -> None:
    """A piece no file refers to and the collector has not listed yet is stored and
    reclaimable for both."""
    loose = random.Random(8).randbytes(5_000)
    with SQLiteBackend(store) as backend:
        backend.put(DOCUMENTS_DATA, [{"data_id": hashlib.sha256(loose).hexdigest(), "data": loose}])
    code, out, _ = run(capsys, "stats", "--full", "--json", "--data-dir", str(store))
    stats = json.loads(out)
    assert stats["reclaimable_bytes"] == len(DATA) + len(loose)
    assert stats["unused_files"] == 1 and stats["unused_pieces"] >= 2
    code, out, _ = run(capsys, "verify", "--data-dir", str(store))
    assert code == 0
    assert out.splitlines()[-1].endswith(
        f"{stats['pieces']} pieces: clean; 1 files and {stats['unused_pieces']} pieces unused, "
        f"{human_bytes(len(DATA) + len(loose))} reclaimable by gc"
    )


def test_serve_collects_on_a_schedule(store: Path) -> None:
    settings = load_settings({"ARCHIVE_GC_INTERVAL": "0.2", "ARCHIVE_GC_GRACE": "0.3"})
    with SQLiteBackend(store) as backend:
        app = create_app(settings, backend, run_sync=False)
        live = start_server(app, settings, app.state.services.archive)  # runs its lifespan
        try:
            deadline = time.monotonic() + 60
            while next(backend.scan(DOCUMENTS_DATA), None) is not None:
                assert time.monotonic() < deadline, "serve did not collect"
                time.sleep(0.1)
        finally:
            live.stop()
        assert app.state.gc.runs >= 3


READERS = [
    ["list"],
    ["get", "270e3a6d-a0e4-4875-89f1-3b418859abe5-1700000000000"],
    ["file", "D41D8CD98F00B204E9800998ECF8427E"],
    ["stats"],
    ["verify"],
    ["gc"],
    ["compact"],
    ["backup", "{tmp}/backup"],
    ["restore", "--snapshot", "270e3a6d-a0e4-4875-89f1-3b418859abe5-1700000000000"],
    ["export", "--to", "{tmp}/copy"],
    ["analyze", "history", "270e3a6d-a0e4-4875-89f1-3b418859abe5"],
    ["analyze", "aggregates", "--from", "2024-01-01"],
    ["export-table", "{tmp}/t.parquet", "--items", "$taskid"],
]


@pytest.mark.parametrize("args", READERS, ids=[" ".join(a[:2]) for a in READERS])
def test_commands_that_only_read_refuse_a_folder_without_an_archive(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
) -> None:
    monkeypatch.setenv("WORKFLOW_SERVICE_ENDPOINT", "http://127.0.0.1:9/api")
    missing = tmp_path / "nothing-here"
    argv = [a.format(tmp=tmp_path) for a in args]
    code, _out, err = run(capsys, *argv, "--data-dir", str(missing))
    assert code == 4
    assert "no archive in" in err and str(missing) in err
    assert not any(tmp_path.iterdir())  # nothing created: no store, no output


def test_gc_reports_what_it_collects_beside_java(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A piece Java cut that no file lists, a reference Java's delete left, the empty
    file's references of older versions: each counted, in words and in JSON."""
    folder = tmp_path / "store"
    piece = random.Random(7).randbytes(300_000)
    with SQLiteBackend(folder) as backend, Archive(backend) as archive:
        doc = make_snapshot(0, files={"a.bin": DATA, "b.bin": piece})
        archive.store(doc)
        java_delete_snapshot(backend, archive, doc["$uniqueid"][0])
        backend.put(DOCUMENTS_DATA, [{"data_id": str(uuid.uuid4()), "data": piece}])
        kept = archive.store(make_snapshot(1, files={"empty.txt": b""})).snapshot_id
        backend.put(SNAPSHOTS_BY_DOCUMENT, [{"md5": EMPTY_MD5, "snapshot": kept}])
    monkeypatch.setenv("ARCHIVE_GC_GRACE", "60")
    clock = _Clock()
    monkeypatch.setattr(garbage, "time", clock)
    code, out, _ = run(capsys, "gc", "--data-dir", str(folder))
    assert code == 0
    assert "pieces the Java service cut that no file lists: found 1, listed 1, removed 0" in out
    assert "references from snapshots that are gone: found 1, listed 1, removed 0" in out
    assert "references to the empty file (none needed): removed 1" in out
    clock.wait(61)
    code, out, _ = run(capsys, "gc", "--json", "--data-dir", str(folder))
    report = json.loads(out)
    assert code == 0
    assert (report["java_pieces_removed"], report["java_bytes_freed"]) == (1, len(piece))
    assert (report["dangling_refs_found"], report["dangling_refs_removed"]) == (0, 1)
    assert report["empty_refs_removed"] == 0

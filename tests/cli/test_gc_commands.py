"""``gc``, ``stats``/``verify`` reporting reclaimable bytes, the collection ``serve`` runs
on a schedule, and commands that only read refusing a folder that holds no archive."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.cli import main
from imixs_archive.cli.output import human_bytes
from imixs_archive.config import load_settings
from imixs_archive.filestore import garbage
from imixs_archive.storage.model import DOCUMENTS_DATA
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from imixs_archive.web.app import create_app
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
    code, out, _ = run(capsys, "stats", "--json", "--data-dir", str(store))
    assert json.loads(out)["reclaimable_bytes"] == 0  # a dry run lists nothing
    code, out, _ = run(capsys, "gc", "--data-dir", str(store))
    assert code == 0 and "listed 1 files" in out
    code, out, _ = run(capsys, "stats", "--json", "--data-dir", str(store))
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


def test_serve_collects_on_a_schedule(store: Path) -> None:
    settings = load_settings({"ARCHIVE_GC_INTERVAL": "0.2", "ARCHIVE_GC_GRACE": "0.3"})
    with SQLiteBackend(store) as backend:
        app = create_app(settings, backend, run_sync=False)
        live = start_server(app, settings, app.state.services.archive)  # runs its lifespan
        try:
            deadline = time.monotonic() + 20
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

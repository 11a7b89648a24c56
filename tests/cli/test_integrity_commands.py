"""A stored piece with one flipped byte, or a snapshot row with one flipped bit: every command
that reads it stops with exit 5 and says which snapshot (and file); nothing it wrote looks
complete."""

from __future__ import annotations

import hashlib
import os
import random
from pathlib import Path

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.cli import main
from imixs_archive.document.xml_writer import to_xml
from imixs_archive.errors import IntegrityError
from imixs_archive.storage.model import DOCUMENTS, DOCUMENTS_DATA, SNAPSHOTS
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from support.damage import flip_stored_bit
from support.snapshots import make_snapshot
from support.workflow_double import WorkflowDouble

BIG = random.Random(12).randbytes(2_500_000)
MD5 = hashlib.md5(BIG).hexdigest().upper()


@pytest.fixture
def corrupt_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, str]:
    store = tmp_path / "store"
    doc = make_snapshot(files={"big.bin": BIG})
    source = tmp_path / "snap.xml"
    source.write_bytes(to_xml(doc))
    assert main(["import", str(source), "--data-dir", str(store)]) == 0
    capsys.readouterr()
    with SQLiteBackend(store) as backend:
        ids = [r["data_id"] for r in backend.scan(DOCUMENTS, {"md5": MD5})]
        row = backend.get(DOCUMENTS_DATA, {"data_id": ids[1]})
        data = bytearray(row["data"])
        data[7] ^= 0x40
        backend.put(DOCUMENTS_DATA, [{"data_id": ids[1], "data": bytes(data)}])
    return store, str(doc["$uniqueid"][0])


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().err


@pytest.mark.parametrize("command", ["get", "file", "file-md5"])
def test_reads_stop_with_exit_5(
    capsys: pytest.CaptureFixture[str],
    corrupt_store: tuple[Path, str],
    tmp_path: Path,
    command: str,
) -> None:
    store, snapshot_id = corrupt_store
    out = tmp_path / "out.bin"
    args = {
        "get": ["get", snapshot_id],
        "file": ["file", snapshot_id, "big.bin"],
        "file-md5": ["file", MD5],
    }[command]
    code, err = run(capsys, *args, "-o", str(out), "--data-dir", str(store))
    assert code == 5
    assert "corrupt" in err
    assert (snapshot_id in err and "'big.bin'" in err) if command != "file-md5" else MD5 in err
    assert not out.exists()  # a partial file never appears under its name


def test_backup_and_export_exit_5(
    capsys: pytest.CaptureFixture[str], corrupt_store: tuple[Path, str], tmp_path: Path
) -> None:
    store, snapshot_id = corrupt_store
    code, _err = run(capsys, "backup", str(tmp_path / "bk"), "--create", "--data-dir", str(store))
    out = capsys.readouterr()
    assert code == 5
    code, err = run(capsys, "export", "--to", str(tmp_path / "copy"), "--data-dir", str(store))
    assert code == 5 and snapshot_id in capsys.readouterr().out + err
    assert not list((tmp_path / "bk").rglob("*.xml"))
    with SQLiteBackend(tmp_path / "copy") as copy:
        assert not list(copy.scan(DOCUMENTS))  # no half-copied file registered
    del out, err


@pytest.mark.parametrize("damage", ["corrupt_store", "damaged_row"])
def test_restore_exits_5_and_the_workflow_gets_nothing(
    capsys: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
    damage: str,
    double: WorkflowDouble,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, snapshot_id = request.getfixturevalue(damage)
    monkeypatch.setitem(os.environ, "WORKFLOW_SERVICE_ENDPOINT", double.url)
    code, err = run(capsys, "restore", "--snapshot", snapshot_id, "--data-dir", str(store))
    assert code == 5 and snapshot_id in err
    assert not double.workitems  # the cut-off body was not taken as a snapshot


# --- a damaged snapshot row -------------------------------------------------------------


@pytest.fixture
def damaged_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, str]:
    """An archive of two instances, one snapshot of which has a bit flipped in its row."""
    store = tmp_path / "store"
    docs = [make_snapshot(n, files={"a.txt": b"abc" * n} if n else None) for n in range(3)]
    docs.append(make_snapshot(5, origin="11111111-2222-4333-8444-555555555555"))
    source = tmp_path / "snaps.xml"
    source.write_bytes(
        b"<data>" + b"".join(to_xml(d).split(b"?>", 1)[1] for d in docs) + b"</data>"
    )
    assert main(["import", str(source), "--data-dir", str(store)]) == 0
    capsys.readouterr()
    snapshot_id = str(docs[1]["$uniqueid"][0])
    with SQLiteBackend(store) as backend:
        flip_stored_bit(backend, SNAPSHOTS, {"snapshot": snapshot_id}, random.Random(7))
        with pytest.raises(IntegrityError):
            Archive(backend).load(snapshot_id)
    return store, snapshot_id


@pytest.mark.parametrize(
    "args",
    [
        ["get", "{sid}"],
        ["get", "{sid}", "--format", "json"],
        ["get", "{sid}", "--no-files"],
        ["file", "{sid}", "a.txt"],
        ["verify"],
        ["backup", "{tmp}/bk", "--create", "--all-snapshots"],
        ["export", "--to", "{tmp}/copy"],
        ["export-table", "{tmp}/table.csv", "--items", "subject"],
        ["analyze", "history", "{uid}"],
    ],
    ids=lambda args: "-".join(a for a in args if not a.startswith("{")),
)
def test_a_damaged_row_stops_every_read_with_exit_5(
    capsys: pytest.CaptureFixture[str],
    damaged_row: tuple[Path, str],
    tmp_path: Path,
    args: list[str],
) -> None:
    store, snapshot_id = damaged_row
    uid = snapshot_id.rsplit("-", 1)[0]
    given = [a.format(sid=snapshot_id, tmp=tmp_path, uid=uid) for a in args]
    code = main([*given, "--data-dir", str(store)])
    captured = capsys.readouterr()
    assert code == 5, captured.err
    assert snapshot_id in captured.err + captured.out
    assert "Traceback" not in captured.err
    assert "malformed" not in captured.err


def test_verify_names_the_damaged_row_and_a_new_import_repairs_it(
    capsys: pytest.CaptureFixture[str], damaged_row: tuple[Path, str], tmp_path: Path
) -> None:
    store, snapshot_id = damaged_row
    code = main(["verify", "--data-dir", str(store)])
    said = capsys.readouterr()
    assert code == 5 and f"snapshot {snapshot_id}" in said.out + said.err
    again = tmp_path / "again.xml"
    again.write_bytes(to_xml(make_snapshot(1, files={"a.txt": b"abc"})))
    assert main(["import", str(again), "--data-dir", str(store)]) == 0
    out = capsys.readouterr()
    assert "written again" in out.out + out.err
    assert main(["verify", "--data-dir", str(store)]) == 0
    assert main(["get", snapshot_id, "--data-dir", str(store), "-o", str(tmp_path / "x")]) == 0

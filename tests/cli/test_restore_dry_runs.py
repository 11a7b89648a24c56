"""A dry run tells the truth: it asks the workflow what the real run would ask, ends with
exit 7 within a bounded time when the workflow cannot be reached, and never promises a
document the workflow would refuse (a ``type`` that is not ``snapshot-...``)."""

from __future__ import annotations

import datetime as dt
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.cli import main
from imixs_archive.document.model import Document
from imixs_archive.document.xml_writer import to_xml
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from support.restore_data import archived_instances
from support.workflow_double import WorkflowDouble

UID = "00000000-1111-4222-8333-444444444444"
NOT_A_SNAPSHOT = "000000ff-1111-4222-8333-444444444444"


@pytest.fixture
def store(double: WorkflowDouble, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two archived instances (3 snapshots each) the workflow then lost."""
    path = tmp_path / "store"
    with SQLiteBackend(path) as backend, Archive(backend) as archive:
        archived_instances(double, archive, instances=2)
    double.wipe()
    monkeypatch.setenv("WORKFLOW_SERVICE_ENDPOINT", double.url)
    monkeypatch.setenv("ARCHIVE_DATA_DIR", str(path))
    return path


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _newest(store: Path) -> str:
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        return archive.list_instance(UID)[0]


@pytest.mark.parametrize(
    "mode",
    [["--from", "2023-11-01", "--to", "2023-12-01"], ["--all"], ["--uniqueid", UID], ["snapshot"]],
)
def test_a_dry_run_with_the_workflow_unreachable_ends_with_exit_7(
    store: Path, mode: list[str]
) -> None:
    """It waited for the workflow for ever (printing nothing) before: a subprocess, so that
    a wait fails the test by its timeout instead of hanging it."""
    if mode == ["snapshot"]:
        mode = ["--snapshot", _newest(store)]
    env = {
        **os.environ,
        "WORKFLOW_SERVICE_ENDPOINT": f"http://127.0.0.1:{_closed_port()}/api",
        "ARCHIVE_DATA_DIR": str(store),
    }
    command = [sys.executable, "-m", "imixs_archive", "restore", *mode, "--dry-run"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 7, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "the workflow cannot be reached" in lines[0], done.stderr
    assert "nothing was sent" in lines[0] and "Traceback" not in done.stderr
    assert "would" not in done.stdout


def test_the_dry_run_of_all_asks_the_workflow_what_it_holds(
    double: WorkflowDouble, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["restore", "--all", "--dry-run"]) == 0
    assert "2 instances would be restored" in capsys.readouterr().out
    assert main(["restore", "--all"]) == 0
    posts = double.stats.posts
    capsys.readouterr()
    assert main(["restore", "--all", "--dry-run"]) == 0  # after the full restore: nothing
    out = capsys.readouterr().out
    assert "0 instances would be restored" in out and "2 already current" in out
    assert double.stats.posts == posts


@pytest.fixture
def odd_store(store: Path) -> str:
    """Beside the two instances, one whose snapshot's type is ``workitem``: the import
    archives it, with a warning. Returns the import's standard error."""
    doc = Document(
        {
            "$uniqueid": f"{NOT_A_SNAPSHOT}-1700000000000",
            "type": "workitem",
            "$modified": dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=dt.UTC),
        }
    )
    path = store.parent / "odd.xml"
    path.write_bytes(to_xml(doc))
    return str(path)


def test_import_warns_of_a_document_whose_type_is_not_a_snapshots(
    odd_store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import", odd_store]) == 0
    out, err = capsys.readouterr()
    assert "1 new" in out
    assert f"warning: {NOT_A_SNAPSHOT}-1700000000000: archived, but it is not a snapshot" in err
    assert "(its type 'workitem' does not begin with 'snapshot-')" in err
    assert "the workflow does not take it back (a restore leaves it out)" in err


@pytest.mark.parametrize(
    "mode",
    [["--from", "2023-11-01", "--to", "2023-12-01"], ["--all"], ["--uniqueid", NOT_A_SNAPSHOT]],
)
def test_a_dry_run_does_not_promise_what_the_workflow_refuses(
    double: WorkflowDouble, odd_store: str, capsys: pytest.CaptureFixture[str], mode: list[str]
) -> None:
    """The real run fails it (the client refuses to send it); the dry run says the same."""
    assert main(["import", odd_store]) == 0
    capsys.readouterr()
    assert main(["restore", *mode, "--dry-run"]) == 1
    dry_out, dry_err = capsys.readouterr()
    assert NOT_A_SNAPSHOT not in dry_out.replace(f"--uniqueid {NOT_A_SNAPSHOT}", "")
    assert (
        f"failed: {NOT_A_SNAPSHOT}" in dry_err and "the workflow does not take it back" in dry_err
    )
    assert main(["restore", *mode]) == 1
    _out, err = capsys.readouterr()
    assert f"failed: {NOT_A_SNAPSHOT}" in err
    assert NOT_A_SNAPSHOT not in double.workitems


def test_a_dry_run_of_the_snapshot_the_workflow_refuses_fails_as_the_real_run(
    double: WorkflowDouble, odd_store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import", odd_store]) == 0
    capsys.readouterr()
    sid = f"{NOT_A_SNAPSHOT}-1700000000000"
    for dry_run in (["--dry-run"], []):
        assert main(["restore", "--snapshot", sid, *dry_run]) == 7
        out, err = capsys.readouterr()
        assert out == "" and "the workflow does not take it back" in err
    assert double.stats.posts == 0


def test_the_as_of_dry_run_does_not_promise_what_the_workflow_refuses(
    double: WorkflowDouble, odd_store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The instance goes back to a snapshot of type ``workitem``: the run fails it."""
    assert main(["import", odd_store]) == 0
    newer = Document(
        {
            "$uniqueid": f"{NOT_A_SNAPSHOT}-1700600000000",
            "type": "snapshot-workitem",
            "$modified": dt.datetime(2023, 11, 21, 21, 0, tzinfo=dt.UTC),
        }
    )
    (tmp_path / "newer.xml").write_bytes(to_xml(newer))
    assert main(["import", str(tmp_path / "newer.xml")]) == 0
    capsys.readouterr()
    point = "2023-11-20T00:00:00+00:00"
    assert main(["restore", "--as-of", point, "--dry-run"]) == 1
    out, err = capsys.readouterr()
    assert f"back {NOT_A_SNAPSHOT}" not in out and "0 would go back" in out
    assert "1 would fail" in out
    assert f"failed: {NOT_A_SNAPSHOT}: {NOT_A_SNAPSHOT}-1700000000000: it is not a snapshot" in err
    assert main(["restore", "--as-of", point]) == 1
    assert f"failed: {NOT_A_SNAPSHOT}" in capsys.readouterr().err

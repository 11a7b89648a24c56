"""``restore`` on the command line: a dry run sends nothing in any mode (counted as the
POSTs the workflow double received), and options that do not apply to a mode are refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.cli import main
from imixs_archive.recovery.backup import backup
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from support.restore_data import archived_instances
from support.workflow_double import WorkflowDouble


@pytest.fixture
def store(double: WorkflowDouble, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two archived instances (3 snapshots each) the workflow then lost; a backup tree
    of them in ``tmp_path / "tree"``."""
    path = tmp_path / "store"
    with SQLiteBackend(path) as backend, Archive(backend) as archive:
        archived_instances(double, archive, instances=2)
        backup(archive, tmp_path / "tree")
    double.wipe()
    monkeypatch.setenv("WORKFLOW_SERVICE_ENDPOINT", double.url)
    monkeypatch.setenv("ARCHIVE_DATA_DIR", str(path))
    return path


UID = "00000000-1111-4222-8333-444444444444"


def _newest(store: Path) -> str:
    with SQLiteBackend(store) as backend, Archive(backend) as archive:
        return archive.list_instance(UID)[0]


def _dry_run(
    double: WorkflowDouble, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str]:
    before = double.stats.posts
    assert main(["restore", *args, "--dry-run"]) == 0
    return double.stats.posts - before, capsys.readouterr().out


def test_dry_run_of_a_range_sends_nothing(
    double: WorkflowDouble, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    posts, out = _dry_run(double, capsys, "--from", "2023-11-01", "--to", "2023-12-01")
    assert posts == 0 and not double.workitems
    assert "2 would be restored" in out


def test_dry_run_of_one_snapshot_sends_nothing(
    double: WorkflowDouble, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshot_id = _newest(store)
    posts, out = _dry_run(double, capsys, "--snapshot", snapshot_id)
    assert posts == 0 and not double.workitems
    assert f"{snapshot_id}: would be restored" in out


def test_dry_run_of_one_instance_sends_nothing(
    double: WorkflowDouble, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    posts, out = _dry_run(double, capsys, "--uniqueid", UID)
    assert posts == 0 and not double.workitems
    assert "3 would be restored" in out and out.count("would restore") == 3


def test_dry_run_of_a_backup_folder_sends_nothing(
    double: WorkflowDouble, store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    posts, out = _dry_run(double, capsys, "--source", str(tmp_path / "tree"))
    assert posts == 0 and not double.workitems
    assert "2 would be restored, 0 already in the workflow" in out


def test_the_real_run_after_a_dry_run_sends(
    double: WorkflowDouble, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The counting sees POSTs: the same command without --dry-run sends three."""
    assert main(["restore", "--uniqueid", UID]) == 0
    assert double.stats.posts == 3 and UID in double.workitems


@pytest.mark.parametrize(
    "extra",
    [
        ["--to", "2023-12-01"],
        ["--filter", "subject=A"],
        ["--strict-filters"],
        ["--workers", "2"],
    ],
)
@pytest.mark.parametrize("mode", ["--snapshot", "--uniqueid", "--source"])
def test_options_of_a_range_are_refused_elsewhere(
    double: WorkflowDouble,
    store: Path,
    capsys: pytest.CaptureFixture[str],
    mode: str,
    extra: list[str],
) -> None:
    assert main(["restore", mode, "x", *extra]) == 2
    assert "only apply to a range restore (--from)" in capsys.readouterr().err
    assert double.stats.requests == 0

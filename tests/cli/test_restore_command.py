"""``restore`` on the command line: a dry run sends nothing in any mode (counted as the
POSTs the workflow double received), and options that do not apply to a mode are refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.cli import main
from imixs_archive.cli.output import human_bytes
from imixs_archive.document.conventions import iter_files
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


def test_dry_run_totals_the_sizes_it_lists(
    double: WorkflowDouble, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The last line's attachment bytes are the sum of the sizes each line shows."""
    for args in (["--uniqueid", UID], ["--from", "2023-11-01", "--to", "2023-12-01"]):
        _posts, out = _dry_run(double, capsys, *args)
        lines = out.strip().splitlines()
        sizes = [line.rsplit("(", 1)[1].rstrip(")") for line in lines[:-1]]
        assert sizes and all(size != "0 B" for size in sizes)
        with SQLiteBackend(store) as backend, Archive(backend) as archive:
            expected = sum(
                entry.size or 0
                for sid in archive.list_instance(UID)
                for entry in iter_files(archive.load(sid, with_files=False))
            )
        total = lines[-1].rsplit("; ", 1)[1]
        assert total != "0 B of attachments"
        if args[0] == "--uniqueid":
            assert total == f"{human_bytes(expected)} of attachments"


def test_restore_of_an_instance_the_archive_does_not_hold_is_not_found(
    double: WorkflowDouble, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for dry_run in (["--dry-run"], []):
        assert main(["restore", "--uniqueid", "nope", *dry_run]) == 4
        out, err = capsys.readouterr()
        assert out == "" and len(err.strip().splitlines()) == 1
        assert "nope: the archive holds no snapshot of this process instance" in err
    assert double.stats.posts == 0

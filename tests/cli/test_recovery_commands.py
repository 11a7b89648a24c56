import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from imixs_archive.archive.snapshots import Archive
from imixs_archive.cli import main, recovery_commands
from imixs_archive.recovery.backup import backup
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from support.kills import stops_at

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def test_backup_and_export_commands(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    store, other, tree = tmp_path / "store", tmp_path / "other", tmp_path / "tree"
    assert main(["import", str(SAMPLES), "--data-dir", str(store)]) == 0
    assert main(["backup", str(tree), "--create", "--data-dir", str(store)]) == 0
    assert "3 written, 0 already current, 0 failed" in capsys.readouterr().out
    assert len(list(tree.rglob("*.xml"))) == 3 and all(
        p.parent.parent.name == "2024" for p in tree.rglob("*.xml")
    )
    assert main(["backup", str(tree), "--data-dir", str(store)]) == 0
    assert "0 written, 3 already current" in capsys.readouterr().out
    assert main(["export", "--to", str(other), "--data-dir", str(store)]) == 0
    assert "9 copied, 0 already there, 0 failed" in capsys.readouterr().out
    assert main(["verify", "--data-dir", str(other)]) == 0
    assert main(["export", "--to", "cassandra://", "--data-dir", str(store)]) == 2
    assert "cassandra://host" in capsys.readouterr().err


def test_import_and_backup_with_worker_processes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store, one, two = tmp_path / "store", tmp_path / "one", tmp_path / "two"
    assert main(["import", str(SAMPLES), "--data-dir", str(store), "--jobs", "3"]) == 0
    assert "9 new, 0 already present, 0 failed" in capsys.readouterr().out
    assert main(["import", str(SAMPLES), "--data-dir", str(store), "--jobs", "2"]) == 0
    assert "0 new, 9 already present, 0 failed" in capsys.readouterr().out
    assert main(["backup", str(one), "--create", "--all-snapshots", "--data-dir", str(store)]) == 0
    args = [
        "backup",
        str(two),
        "--create",
        "--all-snapshots",
        "--data-dir",
        str(store),
        "--jobs",
        "2",
    ]
    assert main(args) == 0
    assert "9 written, 0 already current, 0 failed" in capsys.readouterr().out.splitlines()[-1]
    files = sorted(path.relative_to(one) for path in one.rglob("*.xml"))
    assert files == sorted(path.relative_to(two) for path in two.rglob("*.xml"))
    assert all((one / name).read_bytes() == (two / name).read_bytes() for name in files)
    with pytest.raises(SystemExit, match="2"):
        main([*args[:-1], "0"])
    assert "--jobs: must be at least 1" in capsys.readouterr().err


@pytest.mark.parametrize("target", ["cassandra:/oops", "cassandra:oops", "casandra://db/ks"])
def test_export_refuses_a_target_that_is_not_a_valid_url(
    target: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One slash missing is not a folder named ``cassandra:``: exit 2, nothing created."""
    store = tmp_path / "store"
    assert main(["import", str(SAMPLES), "--data-dir", str(store)]) == 0
    capsys.readouterr()
    monkeypatch.chdir(tmp_path)
    assert main(["export", "--to", target, "--data-dir", str(store)]) == 2
    err = capsys.readouterr().err
    assert "expected a folder or cassandra://host[:port]/keyspace" in err
    assert len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store"]


def test_backup_refuses_a_folder_that_is_not_there_unless_told_to_create_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``/mnt/usb/backups`` with the drive not mounted: the backup made the path under the
    empty mount point and filled the disk beneath it."""
    store, mount = tmp_path / "store", tmp_path / "mnt-usb"
    assert main(["import", str(SAMPLES), "--data-dir", str(store)]) == 0
    mount.mkdir()  # the mount point, nothing mounted
    capsys.readouterr()
    target = mount / "backups"
    assert main(["backup", str(target), "--data-dir", str(store)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert f"backup folder {target} does not exist" in err and "--create" in err
    assert list(mount.iterdir()) == []
    assert main(["backup", str(target), "--create", "--data-dir", str(store)]) == 0
    assert "3 written" in capsys.readouterr().out
    assert main(["backup", str(target), "--data-dir", str(store)]) == 0  # there now


def test_export_refuses_its_own_source(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It was accepted: every snapshot found "already there", a success that copied
    nothing (and on Cassandra, the same keyspace)."""
    store = tmp_path / "store"
    assert main(["import", str(SAMPLES), "--data-dir", str(store)]) == 0
    monkeypatch.chdir(tmp_path)
    for spelled in (str(store), "store", "./store/../store/"):
        capsys.readouterr()
        assert main(["export", "--to", spelled, "--data-dir", str(store)]) == 2
        out, err = capsys.readouterr()
        assert out == "" and len(err.strip().splitlines()) == 1
        assert "that is the store being exported" in err
    monkeypatch.setenv("ARCHIVE_CLUSTER_CONTACTPOINTS", "db1,db2:9142")
    monkeypatch.setenv("ARCHIVE_CLUSTER_KEYSPACE", "archive")
    from imixs_archive.config import load_settings, same_store, settings_for_store

    settings = load_settings()
    assert same_store(settings, settings_for_store(settings, "cassandra://DB1:9042/archive"))
    assert same_store(settings, settings_for_store(settings, "cassandra://db2:9142/archive"))
    assert not same_store(settings, settings_for_store(settings, "cassandra://db1/other"))
    assert not same_store(settings, settings_for_store(settings, "cassandra://db3/archive"))
    assert not same_store(settings, settings_for_store(settings, str(store)))


class _Bars:
    """Stands in for ``count_progress`` on a terminal: the totals asked, the ticks given."""

    def __init__(self) -> None:
        self.bars: list[tuple[str, int | None, list[int]]] = []

    @contextlib.contextmanager
    def __call__(self, what: str, total: Any = None) -> Iterator[Callable[[int], None]]:
        ticks: list[int] = []
        self.bars.append((what, total() if callable(total) else total, ticks))
        yield ticks.append

    def only(self) -> tuple[str, int | None, int]:
        [(what, total, ticks)] = self.bars
        self.bars.clear()
        return what, total, sum(ticks)


def test_backup_and_export_show_a_bar_with_its_total(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A counter without a total (backup), none at all (export); a backup that goes on
    where a stopped one stood starts its bar where that one ended."""
    store = tmp_path / "store"
    assert main(["import", str(SAMPLES), "--data-dir", str(store)]) == 0
    bars = _Bars()
    monkeypatch.setattr(recovery_commands, "count_progress", bars)
    base = ["--create", "--data-dir", str(store)]
    assert main(["backup", str(tmp_path / "a"), *base]) == 0
    assert bars.only() == ("backup: snapshots", 3, 3)  # the newest of each instance
    assert main(["backup", str(tmp_path / "b"), "--all-snapshots", *base]) == 0
    assert bars.only() == ("backup: snapshots", 9, 9)
    assert main(["backup", str(tmp_path / "c"), "--from", "2024-01-01", *base]) == 0
    assert bars.only()[1] is None  # a range: not counted ahead
    assert main(["export", "--to", str(tmp_path / "copy"), "--data-dir", str(store)]) == 0
    assert bars.only() == ("export: snapshots", 9, 9)

    with (
        SQLiteBackend(store) as backend,
        Archive(backend) as archive,
        pytest.raises(KeyboardInterrupt),
    ):
        backup(archive, tmp_path / "d", all_snapshots=True, on_snapshot=stops_at(4))
    assert main(["backup", str(tmp_path / "d"), "--all-snapshots", *base]) == 0
    assert "(went on after" in capsys.readouterr().out
    what, total, ticks = bars.only()
    assert what == "backup: snapshots"
    assert total == ticks == 9

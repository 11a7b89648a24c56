"""A backup of everything over a large archive (``recovery/backup_book.py``): parts
(``--part K/N``) write every file once, a backup stopped by Ctrl-C or killed goes on after
the last instance it had finished and ends with the whole tree. On both backends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from imixs_archive.archive import part_runs
from imixs_archive.archive.check_books import CheckBooks
from imixs_archive.archive.snapshots import Archive
from imixs_archive.config import Settings
from imixs_archive.errors import BusyError
from imixs_archive.recovery.backup import MANIFEST, backup
from imixs_archive.services.jobs import JobStoppedError
from imixs_archive.services.workers import Spread
from support.kills import (
    process_env,
    refused_in_one_line,
    run_command,
    run_killed,
    stops_at,
)
from support.snapshots import fill_instances, make_snapshot

pytestmark = pytest.mark.both_stores  # store-facing: a backup stopped, killed and resumed

INSTANCES = 20


def fill(archive: Archive) -> int:
    """INSTANCES instances of 1 to 3 snapshots, each with a file; the snapshots stored."""
    return fill_instances(archive, INSTANCES, _with_a_file)


def _with_a_file(k: int, step: int) -> dict[str, Any]:
    return {"files": {"a.pdf": f"instance {k} step {step} ".encode() * 200}}


def tree(root: Path) -> dict[str, bytes]:
    """The backup files by path (the manifest and hidden parts left out)."""
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*.xml"))
        if not path.name.startswith(".")
    }


def manifest_lines(root: Path) -> int:
    return len((root / MANIFEST).read_text().splitlines())


def books_left(archive: Archive) -> list[str]:
    return [n for n in CheckBooks(archive.backend).names("backup.") if "-lease/" not in n]


@pytest.mark.parametrize("all_snapshots", [False, True])
def test_parts_write_every_file_once(archive: Archive, tmp_path: Path, all_snapshots: bool) -> None:
    stored = fill(archive)
    whole = backup(archive, tmp_path / "whole", all_snapshots=all_snapshots)
    files = stored if all_snapshots else INSTANCES
    assert (whole.written, whole.current, whole.failed) == (files, 0, 0)
    parted = tmp_path / "parted"
    summaries = [
        backup(archive, parted, all_snapshots=all_snapshots, part=k, parts=3) for k in (3, 1, 2)
    ]
    assert all(0 < s.written < files for s in summaries)  # each a share
    assert sum(s.written for s in summaries) == files and manifest_lines(parted) == files
    assert tree(parted) == tree(tmp_path / "whole")
    assert books_left(archive) == []


def test_parts_in_worker_processes(
    archive: Archive, store_settings: Settings, tmp_path: Path
) -> None:
    fill(archive)
    backup(archive, tmp_path / "whole")
    spread = Spread(store_settings, 2)
    summaries = [backup(archive, tmp_path / "p", spread=spread, part=k, parts=2) for k in (1, 2)]
    assert sum(s.written for s in summaries) == INSTANCES
    assert tree(tmp_path / "p") == tree(tmp_path / "whole")


def test_a_stopped_backup_goes_on_after_the_instances_done(
    archive: Archive, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C after some files: the same backup goes on after the last instance done,
    writes each file once, and its summary counts the whole backup."""
    fill(archive)
    backup(archive, tmp_path / "whole")
    monkeypatch.setattr(part_runs, "SAVE_MS", 10_000_000)  # saved only when stopping
    root = tmp_path / "bk"
    interrupt = stops_at(7, 12)
    for _ in range(2):
        with pytest.raises(KeyboardInterrupt):
            backup(archive, root, on_snapshot=interrupt)
    done = backup(archive, root, on_snapshot=interrupt)
    assert done.resumed == "after 12 instances"  # the one at hand each time done too
    assert (done.written, done.current, done.failed) == (INSTANCES, 0, 0)
    assert tree(root) == tree(tmp_path / "whole") and manifest_lines(root) == INSTANCES
    again = backup(archive, root)  # finished: the next one begins again, all current
    assert again.resumed == "" and (again.written, again.current) == (0, INSTANCES)
    assert books_left(archive) == []


def test_a_job_stopped_goes_on_at_the_next(
    archive: Archive, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The API's backup job stopped (``Job.check_stop`` raising in ``on_snapshot``): the
    next backup of everything into that folder goes on where it stood."""
    fill(archive)
    monkeypatch.setattr(part_runs, "SAVE_MS", 10_000_000)
    stop_at_five = stops_at(5, error=lambda: JobStoppedError("stopped"))
    with pytest.raises(JobStoppedError):
        backup(archive, tmp_path / "bk", on_snapshot=stop_at_five)
    done = backup(archive, tmp_path / "bk")
    assert done.resumed == "after 5 instances" and done.written == INSTANCES


def test_restart_and_another_folder_begin_again(
    archive: Archive, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(archive)
    monkeypatch.setattr(part_runs, "SAVE_MS", 0)
    with pytest.raises(KeyboardInterrupt):
        backup(archive, tmp_path / "bk", on_snapshot=stops_at())
    assert backup(archive, tmp_path / "other").resumed == ""
    restarted = backup(archive, tmp_path / "bk", restart=True)
    assert restarted.resumed == "" and (restarted.written, restarted.current) == (
        INSTANCES - 1,
        1,
    )


def test_one_process_per_part(archive: Archive, tmp_path: Path) -> None:
    fill(archive)
    root = tmp_path / "bk"
    backup(archive, root, part=1, parts=2)
    holder = "someone@else:1:x"
    books = CheckBooks(archive.backend)
    [lease] = [n for n in books.names("backup.") if n.endswith("-lease/1/2")]
    assert books.take_lease(lease, holder, 60_000) == ""
    with pytest.raises(BusyError, match="another process"):
        backup(archive, root, part=1, parts=2)
    assert backup(archive, root, part=2, parts=2).written > 0


KILLED = """
from pathlib import Path
from imixs_archive.recovery.backup import backup
with open_archive(load_settings(dict(os.environ))) as archive:
    backup(archive, Path(sys.argv[1]), on_snapshot=step)
"""


def test_a_killed_backup_goes_on_where_it_stood(
    archive: Archive, store_settings: Settings, tmp_path: Path
) -> None:
    """A kill: the command (in worker processes) goes on after the last instance saved
    done and the tree ends whole; the files written before are not written again."""
    fill(archive)
    backup(archive, tmp_path / "whole")
    root = tmp_path / "bk"
    env = process_env(store_settings)
    run_killed(KILLED, str(root), env=env, at=11)
    before = manifest_lines(root)
    assert 0 < before < INSTANCES
    resumed = run_command("backup", str(root), "--jobs", "2", env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert "(went on after " in resumed.stdout, resumed.stdout
    assert tree(root) == tree(tmp_path / "whole")
    assert manifest_lines(root) <= INSTANCES + 1  # the file at hand at most, twice
    assert books_left(archive) == []


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--part", "3/2"], "--part: expected K/N with 1 <= K <= N"),
        (["--part", "x"], "--part: expected K/N (part K of N"),
        (["--part", "1/2", "--from", "2024-01-01"], "--part splits a backup of everything"),
    ],
)
def test_bad_parts_are_one_line(
    archive: Archive,
    store_settings: Settings,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    arguments: list[str],
    message: str,
) -> None:
    archive.store(make_snapshot(0))
    args = ["backup", str(tmp_path / "bk"), "--create", *arguments]
    assert message in refused_in_one_line(store_settings, capsys, *args)

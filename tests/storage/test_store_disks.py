"""The embedded store on the disks an operator meets: a full one says so, a read-only mount
is read (SQLite cannot make the files it writes beside the database there)."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from imixs_archive.storage.model import SNAPSHOTS
from imixs_archive.storage.sqlite.backend import SQLiteBackend
from support.mounts import run_mounted

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def _cli(data: Path) -> str:
    return f"{shlex.quote(sys.executable)} -m imixs_archive --data-dir {shlex.quote(str(data))}"


def test_a_full_disk_is_told_as_a_full_disk_by_writes_and_reads(tmp_path: Path) -> None:
    """It said "disk I/O error", reads included: SQLite reports a write that found no room
    (the log, its index) as an I/O error as often as SQLITE_FULL."""
    disk, data = tmp_path / "disk", tmp_path / "disk" / "data"
    disk.mkdir()
    cli = _cli(data)
    found = run_mounted(
        f"""
        mount -t tmpfs -o size=8m tmpfs {disk} || exit 99
        {cli} import {SAMPLES} >/dev/null || exit 98
        dd if=/dev/zero of={disk}/fill bs=4k 2>/dev/null
        {cli} import {SAMPLES}/*; echo "import $?"
        {cli} stats; echo "stats $?"
        {cli} list --from 2024-03-01 --to 2024-03-31; echo "list $?"
        """
    )
    assert found.returncode == 0, found.stderr
    assert found.stdout.split()[-6:] == ["import", "6", "stats", "6", "list", "6"], found.stdout
    lines = found.stderr.strip().splitlines()
    assert len(lines) == 3, found.stderr  # one line each, no traceback
    assert all("the disk is full (" in line and "bytes free in" in line for line in lines)


def _store_of_samples(data: Path) -> str:
    """A store holding the samples; one snapshot id of it."""
    done = subprocess.run(
        [sys.executable, "-m", "imixs_archive", "--data-dir", str(data), "import", str(SAMPLES)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert " new" in done.stdout + done.stderr
    with SQLiteBackend(data) as store:
        return str(next(iter(store.scan(SNAPSHOTS, limit=1, columns=["snapshot"])))["snapshot"])


def test_a_store_on_a_read_only_mount_is_read_by_every_reading_command(tmp_path: Path) -> None:
    """It could not be read at all (get and backup exit 2: the data folder not writable).
    What reading commands keep for themselves (job books, figures) lasts the process; a
    write is refused as a folder that cannot be written, in one line."""
    data = tmp_path / "disk" / "data"
    sid = _store_of_samples(data)
    cli = _cli(data)
    out = tmp_path / "out"
    out.mkdir()
    reads = [
        f"get {sid} --no-files",
        "list --from 2000-01-01 --to 2030-12-31",
        "stats",
        "verify",
        f"backup {out}/backup --create",
        "analyze aggregates --from 2000-01-01",
        f"export-table {out}/table.csv --items subject",
        "doctor",
    ]
    writes = [f"delete {sid}", f"legal-hold place {sid.rsplit('-', 1)[0]} --reason x"]
    lines = "\n".join(f'{cli} {shlex.quote(c)} >/dev/null; echo "$?"' for c in reads + writes)
    lines = lines.replace("'", "")  # each command's words, unquoted (none has spaces)
    found = run_mounted(f"mount --bind -o ro {data.parent} {data.parent} || exit 99\n{lines}")
    codes = found.stdout.split()
    assert codes == ["0"] * len(reads) + ["2"] * len(writes), (codes, found.stderr)
    refusals = [line for line in found.stderr.splitlines() if line.startswith("imixs-archive")]
    assert len(refusals) == 2 and all("read-only file system" in line for line in refusals)
    assert (out / "backup").is_dir() and (out / "table.csv").is_file()
    assert sorted(p.name for p in data.iterdir()) == ["archive.db"]  # nothing left beside it


_KILLED_WRITER = """
import os, sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from support.snapshots import make_snapshot
from imixs_archive.archive.snapshots import Archive
from imixs_archive.storage.sqlite.backend import SQLiteBackend
archive = Archive(SQLiteBackend(Path(sys.argv[1])))
print(archive.store(make_snapshot(7)).snapshot_id, flush=True)
os.kill(os.getpid(), 9)  # the log keeps the commit, with its index beside it
"""


@pytest.mark.parametrize("index", [True, False], ids=["with its index", "without"])
def test_a_log_with_commits_on_a_read_only_mount(tmp_path: Path, index: bool) -> None:
    """Commits only in the log are part of the store: read with the log's index, and
    without it (a copy of archive.db and -wal alone) refused with what to do, never read
    as if they were not there."""
    data = tmp_path / "disk" / "data"
    _store_of_samples(data)
    tests = str(Path(__file__).resolve().parents[1])
    written = subprocess.run(
        [sys.executable, "-c", _KILLED_WRITER, str(data), tests],
        capture_output=True,
        text=True,
        check=False,
    )
    logged = written.stdout.strip()
    assert written.returncode == -9 and logged, written.stderr
    assert (data / "archive.db-wal").stat().st_size > 0
    if not index:
        (data / "archive.db-shm").unlink()
    found = run_mounted(
        f"mount --bind -o ro {data.parent} {data.parent} || exit 99\n"
        f'{_cli(data)} get {logged} --no-files; echo "exit $?"'
    )
    if index:
        assert found.stdout.split()[-2:] == ["exit", "0"], found.stderr
    else:
        assert found.stdout.split()[-2:] == ["exit", "6"], found.stdout
        assert "copy the folder to a writable place" in found.stderr
        assert found.stderr.count("\n") == 1

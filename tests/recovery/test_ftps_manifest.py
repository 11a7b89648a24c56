"""The record of what each FTPS backup file holds, compacted: a process killed before any
FTP command of the compaction loses no line, the next one completes it, and a writer or a
second compaction at the same time loses none either (the pyftpdlib server on loopback)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from imixs_archive.config import load_settings
from imixs_archive.recovery import ftps_manifest
from imixs_archive.recovery.ftps import FtpsLocation, FtpsTarget
from imixs_archive.recovery.ftps_manifest import MANIFEST, RECORD
from support.ftps_server import FtpsServer
from support.kills import ROOT

ORIGINS = [f"{n:08x}-1111-4222-8333-444444444444" for n in range(4)]


def path_of(n: int) -> str:
    return f"2024/03/{ORIGINS[n]}.xml"


def snapshot(n: int, millis: int) -> str:
    return f"{ORIGINS[n]}-{1_700_000_000_000 + millis}"


def lay_out(root: Path) -> dict[str, str]:
    """A long record: an earlier merge, a rotated log a killed compaction left, and the live
    log; one path rewritten with an older snapshot last (``overwrite``): the last line wins,
    not the newest snapshot. Returns what it records."""
    (root / RECORD).mkdir()
    older = [(0, 1), (1, 1), (2, 1)]
    rotated = [(0, m) for m in range(2, 40)] + [(3, 5)]
    live = [(1, m) for m in range(2, 40)] + [(0, 7), (2, 3)]  # (0, 7): older than (0, 39)
    for name, lines in (
        ("20240101T000000000000Z-aaaaaaaa+", older),
        ("20240102T000000000000Z-bbbbbbbb", rotated),
    ):
        (root / RECORD / name).write_text(
            "".join(f"{path_of(n)}\t{snapshot(n, m)}\n" for n, m in lines)
        )
    text = "".join(f"{path_of(n)}\t{snapshot(n, m)}\n" for n, m in live)
    (root / MANIFEST).write_text(text + "2024/03/cut-off-by-a-kill")  # an append cut short
    expected: dict[str, str] = {}
    for n, m in older + rotated + live:
        expected[path_of(n)] = snapshot(n, m)
    return expected


def recorded(ftps: FtpsServer, compact_at: int = 10**9) -> dict[str, str]:
    settings = load_settings(ftps.env())
    with FtpsTarget(FtpsLocation.from_settings(settings), compact_at=compact_at) as target:
        return target.held()


def record_files(root: Path) -> list[str]:
    found = [p.name for p in sorted((root / RECORD).iterdir())]
    return found + ([MANIFEST] if (root / MANIFEST).exists() else [])


KILLED_COMPACTION = """
import ftplib, os, signal
from imixs_archive.config import load_settings
from imixs_archive.recovery.ftps import FtpsLocation, FtpsTarget
kill_at, steps = int(os.environ["TEST_KILL_AT"]), [0]
send = ftplib.FTP.putcmd
def counted(self, line):
    steps[0] += 1
    if steps[0] == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)
    send(self, line)
ftplib.FTP.putcmd = counted
with FtpsTarget(FtpsLocation.from_settings(load_settings()), compact_at=1) as target:
    target.held()
print(steps[0])
"""
"""Reads the record, which compacts it, killed before its ``TEST_KILL_AT``-th FTP command
(0: never); prints the commands sent."""


def compaction(ftps: FtpsServer, kill_at: int) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])
    env = {**os.environ, **ftps.env(), "PYTHONPATH": path, "TEST_KILL_AT": str(kill_at)}
    return subprocess.run(
        [sys.executable, "-c", KILLED_COMPACTION],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def reset(root: Path) -> dict[str, str]:
    for path in sorted(root.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    return lay_out(root)


def test_a_kill_before_any_command_of_a_compaction_loses_nothing(ftps: FtpsServer) -> None:
    root = ftps.root / "backup"
    expected = reset(root)
    whole = compaction(ftps, 0)
    assert whole.returncode == 0, whole.stderr
    assert recorded(ftps) == expected
    files = record_files(root)
    assert len(files) == 1 and files[0].endswith("+"), files  # the rotated live log's merge
    assert len((root / RECORD / files[0]).read_text().splitlines()) == len(expected)
    steps = int(whole.stdout)
    for kill_at in range(1, steps + 1):
        expected = reset(root)
        killed = compaction(ftps, kill_at)
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        assert recorded(ftps) == expected, (kill_at, record_files(root))
        done = compaction(ftps, 0)  # the next run completes it
        assert done.returncode == 0, done.stderr
        assert recorded(ftps) == expected, (kill_at, record_files(root))
        assert not (root / MANIFEST).exists() and len(record_files(root)) == 1, kill_at
        assert not list((root / RECORD).glob("*.part")), kill_at


def _after(
    monkeypatch: pytest.MonkeyPatch, name: str, then: Callable[[], object], *, before: bool
) -> None:
    """``ftps_manifest.<name>`` runs ``then`` before or after itself, once."""
    real = getattr(ftps_manifest, name)
    done: list[bool] = []

    def wrapped(*args: object, **kwargs: object) -> object:
        if before and not done:
            done.append(True)
            then()
        result = real(*args, **kwargs)
        if not before and not done:
            done.append(True)
            then()
        return result

    monkeypatch.setattr(ftps_manifest, name, wrapped)


def test_a_file_written_while_the_record_is_compacted_stays_recorded(
    ftps: FtpsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process stores a file right after the live log was rotated: its line starts
    a new live log, read after the merge."""
    root = ftps.root / "backup"
    expected = lay_out(root)
    location = FtpsLocation.from_settings(load_settings(ftps.env()))
    fresh = snapshot(3, 99)

    def other_writer() -> None:
        with FtpsTarget(location) as other:
            other.store(path_of(3), [b"<document/>"], fresh)

    _after(monkeypatch, "_rotate", other_writer, before=False)
    with FtpsTarget(location, compact_at=1) as compacting:
        compacting.held()
    monkeypatch.undo()
    assert recorded(ftps) == {**expected, path_of(3): fresh}
    assert (root / MANIFEST).read_text() == f"{path_of(3)}\t{fresh}\n"


def test_two_compactions_at_once_lose_nothing(
    ftps: FtpsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second runs to its end between the first's listing and its reading: the first
    finds an input gone and stops, deleting nothing."""
    root = ftps.root / "backup"
    expected = lay_out(root)
    location = FtpsLocation.from_settings(load_settings(ftps.env()))

    def other_compaction() -> None:
        with FtpsTarget(location, compact_at=1) as other:
            assert other.held() == expected

    _after(monkeypatch, "_read_inputs", other_compaction, before=True)
    with FtpsTarget(location, compact_at=1) as first:
        assert first.held() == expected
    monkeypatch.undo()
    assert recorded(ftps) == expected
    assert len(record_files(root)) <= 2  # the other's merge, and the first's rotated log
    assert recorded(ftps, compact_at=1) == expected
    assert len(record_files(root)) == 1


def test_a_long_record_is_compacted_by_the_writer_that_makes_it_long(
    ftps: FtpsServer,
) -> None:
    """Not only when a session reads it: a consumer that runs for months compacts it too."""
    root = ftps.root / "backup"
    location = FtpsLocation.from_settings(load_settings(ftps.env()))
    with FtpsTarget(location, compact_at=8) as target:
        for millis in range(30):
            target.store(path_of(millis % 2), [b"<document/>"], snapshot(millis % 2, millis))
        assert target.held() == {path_of(0): snapshot(0, 28), path_of(1): snapshot(1, 29)}
    live = (root / MANIFEST).read_text().splitlines() if (root / MANIFEST).exists() else []
    merged = [line for p in (root / RECORD).iterdir() for line in p.read_text().splitlines()]
    assert len(live) + len(merged) <= 8 + 2
    assert recorded(ftps) == {path_of(0): snapshot(0, 28), path_of(1): snapshot(1, 29)}


def test_a_compaction_that_does_not_happen_is_not_tried_at_every_file(
    ftps: FtpsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A compaction another process is doing (or that failed) leaves the record as it is;
    the writer tries again once the record has doubled, not at each file it writes."""
    from imixs_archive.recovery import ftps as ftps_module

    tried: list[int] = []

    def declined(*_args: object) -> None:
        tried.append(1)

    monkeypatch.setattr(ftps_module, "compact", declined)
    location = FtpsLocation.from_settings(load_settings(ftps.env()))
    with FtpsTarget(location, compact_at=8) as target:
        for millis in range(40):
            target.store(path_of(millis % 2), [b"<document/>"], snapshot(millis % 2, millis))
    assert len(tried) == 3  # past 8 lines, then 18 and 38: the record doubled each time
    assert recorded(ftps) == {path_of(0): snapshot(0, 38), path_of(1): snapshot(1, 39)}


def test_after_a_compaction_that_did_not_happen_the_next_that_does_brings_the_limit_back(
    ftps: FtpsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wait for a doubled record holds until a compaction succeeds, not for the life
    of the writer (``serve`` keeps one target open: each passing failure would double
    the record it lets grow)."""
    from imixs_archive.recovery import ftps as ftps_module

    real = ftps_module.compact
    tried: list[int] = []

    def once_declined(*args: object) -> object:
        tried.append(1)
        return None if len(tried) == 1 else real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(ftps_module, "compact", once_declined)
    location = FtpsLocation.from_settings(load_settings(ftps.env()))
    with FtpsTarget(location, compact_at=8) as target:
        for millis in range(60):
            target.store(path_of(millis % 2), [b"<document/>"], snapshot(millis % 2, millis))
    # past 8 lines (declined), past 18 (done: 2 lines left), then each time past 8 lines
    # again (every 7 files): 8 tries; with the raised limit kept, 4
    assert len(tried) == 8, tried
    assert recorded(ftps) == {path_of(0): snapshot(0, 58), path_of(1): snapshot(1, 59)}
